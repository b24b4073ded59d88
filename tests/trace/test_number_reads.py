"""``int(t)``, ``float(t)`` and a tensor used as an index or slice bound (issue 15 item 10):
the error names the read and, where the value is a size or an index, the ``.item()``
spelling that exports; that spelling does export and match eager."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.helpers import matches_eager


def size(t):
    n = t.item()
    st.check(n >= 0)
    return n


def index(x, t):
    n = t.item()
    st.check(n >= 0)
    st.check(n < x.shape[0])
    return n


def _count(m):
    return m.sum()


# (name, program reading data as a Python number, the spelling the message suggests)
CASES = [
    ("int_slice_end", lambda x, m: x[: int(_count(m))], lambda x, m: x[: size(_count(m))]),
    ("int_factory", lambda x, m: x.new_zeros(int(_count(m))),
     lambda x, m: x.new_zeros(size(_count(m)))),
    ("int_arange", lambda x, m: torch.arange(int(_count(m))),
     lambda x, m: torch.arange(size(_count(m)))),
    ("int_one_element", lambda x, m: x[: int(_count(m).reshape(1))],
     lambda x, m: x[: size(_count(m).reshape(1))]),
    ("int_of_int32", lambda x, m: x[: int(_count(m).int())],
     lambda x, m: x[: size(_count(m).int())]),
    ("int_of_float", lambda x, m: x[: int(m.float().sum())],
     lambda x, m: x[: size(m.float().sum().long())]),
    ("int_as_index", lambda x, m: x[int(_count(m))], lambda x, m: x[index(x, _count(m))]),
]
MASKS = [torch.tensor([1, 0, 1]), torch.tensor([0, 0, 0]), torch.tensor([1, 1, 1]),
         torch.tensor([0, 1, 0])]


@pytest.mark.parametrize("name,bad,fixed", CASES, ids=[c[0] for c in CASES])
def test_number_read_suggests_item_and_the_suggestion_exports(name, bad, fixed):
    x, m = torch.randn(5), torch.tensor([1, 0, 1])
    with pytest.raises(st.DataDependentError) as info:
        st.export(bad, (x, m))
    msg = str(info.value)
    assert "reads tensor data" in msg and "test_number_reads.py" in msg
    assert ".item()" in msg and "st.check(n >= 0)" in msg, msg
    if name == "int_of_float":
        assert "m.float().sum().long().item()" in msg  # the user's own expression
    ep = st.export(fixed, (x, m))
    for mask in MASKS:
        matches_eager(ep, fixed, (torch.randn(5), mask))


@pytest.mark.parametrize("fn", [lambda x, m: x.new_zeros(_count(m)),
                                lambda x, m: x[: _count(m)]], ids=["factory", "slice_bound"])
def test_a_tensor_read_through_index_is_an_unbacked_size(fn):
    """``__index__`` (a size or a slice bound given as a one-element integer tensor) reads
    the value at run time as ``.item()`` does: it exports, with eager's numbers."""
    ep = st.export(fn, (torch.randn(5), torch.tensor([1, 0, 1])))
    for mask in MASKS:
        matches_eager(ep, fn, (torch.randn(5), mask))


def test_float_of_a_float_tensor_suggests_keeping_a_tensor():
    with pytest.raises(st.DataDependentError) as info:
        st.export(lambda x: x * float(x.sum()), (torch.randn(4),))
    msg = str(info.value)
    assert "float() of a tensor f32[]" in msg and "0-d tensor broadcasts" in msg
    assert ".item()" not in msg


def test_bool_and_many_element_reads_keep_the_general_advice():
    for f in (lambda x: x if x.sum() > 0 else -x, lambda x: x[: int(x[:2].long())]):
        with pytest.raises((st.DataDependentError, RuntimeError)) as info:
            st.export(f, (torch.randn(4),))
        assert ".item()" not in str(info.value)
