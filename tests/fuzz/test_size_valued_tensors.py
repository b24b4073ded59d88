"""0-d integer tensors made from sizes (``torch.tensor(n // 2 + 1)``) carry their value as
a size expression (trace/values.py).  Two findings of session 31's fuzzing:

- ``int(torch.tensor(n // 2 + 1))`` as a count (``x.chunk(int(k))``) was refused for every
  such program (TooManySplits): ``Tensor.__int__`` must return a real int, so the size was
  specialized once per count; the user's ``int()`` (rewritten, trace/pycalls.py) now gives
  the known value as ``.item()`` does (and ``torch.tensor(n) % 4`` has one: ``n % 4``).
- the value ignored the tensor's integer width: ``torch.tensor(n).to(torch.uint8)`` holds
  ``n % 256``, but the program used ``n`` (a WRONG result at n >= 256: ``x[:t]`` kept every
  row; ``torch.ones(t.item())`` computed where eager raises on a negative int8).  A value
  that a narrower dtype may not hold at an admitted size is now read as data at run time.
"""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


def _same(ep, f, sizes, trailing=(3,)):
    for n in sizes:
        x = torch.randn(n, *trailing)
        try:
            want = f(x)
        except RuntimeError:
            with pytest.raises(Exception):   # (eager raises: the program never computes)
                ep.module()(x)
            continue
        got = ep.module()(x)
        assert got.shape == want.shape, n
        torch.testing.assert_close(got, want)


def test_int_of_a_size_valued_tensor_is_that_size():
    def chunked(x):
        return x.chunk(int(torch.tensor(x.shape[0] // 2 + 1)))[0]

    def repeated(x):
        return x.repeat(int(torch.tensor(x.shape[0] // 2 + 1)), 1)

    def remainder(x):   # (torch.remainder by a positive constant keeps the value too)
        return torch.full((int(torch.tensor(x.shape[0]) % 4),), 2.0) + x.sum()

    for f in (chunked, repeated, remainder):
        ep = st.export(f, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=40)},))
        _same(ep, f, (0, 1, 2, 5, 6, 7, 20, 40))
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(41, 3))


@pytest.mark.parametrize("name", ["index", "item", "add"])
def test_a_narrow_integer_tensor_of_a_size_wraps_as_in_eager(name):
    f = {
        "index": lambda x: x[:torch.tensor(x.shape[0]).to(torch.uint8)],
        "item": lambda x: torch.ones(torch.tensor(x.shape[0] * 100).to(torch.int8).item()),
        "add": lambda x: x[:torch.tensor(x.shape[0], dtype=torch.uint8) + 200],
    }[name]
    ep = st.export(f, (torch.randn(1, 3),), dynamic_shapes=({0: Dim("n", max=400)},))
    _same(ep, f, (0, 1, 5, 55, 254, 255, 256, 300, 400))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(401, 3))


def test_a_size_valued_tensor_given_for_a_size_is_that_size():
    """``torch.arange(t)``, ``torch.ones(t, 2)`` with ``t = torch.tensor(n // 2 + 1)``:
    torch's parser reads ``t`` where an int is expected; the known value is given (it was
    specialized through ``__index__``: TooManySplits)."""
    fs = [lambda x: torch.arange(torch.tensor(x.shape[0])) + x.sum(),
          lambda x: torch.ones(torch.tensor(x.shape[0] // 2 + 1), 2),
          lambda x: torch.arange(torch.tensor(x.shape[0] * 37).to(torch.uint8)).float()]
    for f in fs:
        ep = st.export(f, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=20)},))
        _same(ep, f, (0, 1, 5, 7, 20))
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(21, 3))


def test_a_value_the_dtype_holds_stays_a_size():
    """Where every admitted size fits (int16 of n <= 400), the value is still the size:
    the result's rows are ``n`` (no data read), as before."""
    def f(x):
        return torch.arange(x.shape[0])[:torch.tensor(x.shape[0], dtype=torch.int16)] + 1

    ep = st.export(f, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("n", max=400)},))
    assert "item" not in str(ep.graph)
    _same(ep, f, (0, 1, 6, 400))
