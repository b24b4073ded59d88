"""``int()``, ``float()``, ``math.sqrt/log`` and ``**`` of sizes stay symbolic (issue 14):
the size computed from a float expression is exact as Python computes it, at export, in the
input checks and in the graph, with no guard narrowing the declared range; ``torch.arange``
of a float end computes torch's length; the user's functions are restored afterwards."""

from __future__ import annotations

import math

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

SIZES = [0, 1, 2, 3, 4, 5, 7, 10, 11, 13, 20, 29, 31, 49, 50, 64, 97, 100, 128]


def _sweep(model, make, ep, sizes=SIZES) -> int:
    """Every size eager handles matches eager (none is rejected); returns how many ran."""
    ran = 0
    for n in sizes:
        args = make(n)
        try:
            want = model(*args)
        except (RuntimeError, ValueError, ZeroDivisionError):  # eager refuses this size
            continue
        assert_close(want, ep.module()(*args))
        ran += 1
    return ran


# each: (x of size n) -> outputs whose sizes are int()/round()/... of a float of sizes
FORMS = {
    "int_mul": lambda x: torch.ones(int(x.shape[0] * 0.7)),
    "int_numel": lambda x: x.reshape(-1)[:int(x.numel() * 0.7)],
    "int_sqrt_pow": lambda x: torch.zeros(int((x.shape[0] * x.shape[0]) ** 0.5), 2),
    "int_div": lambda x: torch.ones(int(x.shape[0] / 3), int(x.shape[1] / 2)),
    "int_one_minus": lambda x: x[:int(x.shape[0] * (1 - 0.75))],
    "int_log": lambda x: torch.ones(int(2 * math.log(x.shape[0] + 1))),
    "round_div": lambda x: x[:round(x.shape[0] / 3)] * 2,
    "floor_ceil": lambda x: (torch.ones(math.floor(x.shape[0] * 1.1)),
                             torch.ones(math.ceil(x.shape[0] / 7), math.trunc(x.shape[1] * 0.5))),
    "sqrt": lambda x: torch.ones(int(math.sqrt(x.shape[0]))),
    "float_mul": lambda x: torch.ones(int(float(x.shape[0]) * 0.3) + 1),
    "view": lambda x: x.reshape(-1)[:2 * int(x.shape[0] * 0.5)].view(int(x.shape[0] * 0.5), 2),
    "compare": lambda x: x + 1 if int(x.shape[0] * 0.7) > 3 else x - 1,
}


class Form(torch.nn.Module):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, x):
        return FORMS[self.name](x)


@pytest.mark.parametrize("spec", ["auto", "named"])
@pytest.mark.parametrize("name", sorted(FORMS))
def test_int_of_a_float_of_sizes_keeps_the_whole_range(name: str, spec: str) -> None:
    m = Form(name)
    dim = st.Dim.AUTO if spec == "auto" else st.Dim("n", max=200)
    if name == "compare" and spec == "named":  # the branch holds for n >= 6: the fix says so
        with pytest.raises(st.ConstraintViolationError, match=r"Dim\('n', min=6, max=200\)"):
            st.export(m, (torch.randn(10, 4),), dynamic_shapes={"x": {0: dim}},
                      max_splits=0)  # (by default: a size split, exporter/splits.py)
        dim = st.Dim("n", min=6, max=200)
    ep = st.export(m, (torch.randn(10, 4),), dynamic_shapes={"x": {0: dim}})
    (r,) = [r for s, r in ep.range_constraints.items() if str(s).startswith("s")]
    if name != "compare":  # a branch on the value is a guard, exactly as Python decides it
        assert r.lower == 0 and r.upper >= 200, ep.range_constraints
    else:
        assert r.lower == 6
    ran = _sweep(m, lambda n: (torch.randn(n, 4),), ep,
                 [n for n in SIZES if name != "compare" or (int(n * 0.7) > 3)])
    assert ran >= 10
    if spec == "named":
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(201, 4))


def test_saved_program_computes_the_same_sizes(tmp_path) -> None:
    names = ["int_mul", "int_sqrt_pow", "int_log", "sqrt", "round_div", "int_div"]

    class All(torch.nn.Module):
        def forward(self, x):
            return tuple(FORMS[k](x) for k in names)

    m = All()
    ep = st.export(m, (torch.randn(10, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=300)}})
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    assert _sweep(m, lambda n: (torch.randn(n, 4),), loaded) >= 15
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(301, 4))


def test_exact_at_the_rounding_edges() -> None:
    """5 * 0.7 == 3.5 and 10 * 0.7 == 7.0 in Python; 3 * 0.1 * 10 is 3.0000000000000004."""
    def f(x):
        n = x.shape[0]
        return torch.ones(int(n * 0.7)), torch.ones(int(n * 0.1 * 10)), torch.ones(round(n * 0.5))

    ep = st.export(f, (torch.randn(6),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    for n in range(0, 120):
        x = torch.randn(n)
        assert [t.shape for t in ep.module()(x)] == [t.shape for t in f(x)], n


class Helpers(torch.nn.Module):
    """int() next to isinstance(.., int), type(..) is int and dtype=int in one function."""

    def forward(self, x):
        k = int(x.shape[0] * 0.5)
        kind = isinstance(k, int), type(3) is int, int.__name__
        ids = torch.arange(3, dtype=torch.int64).to(int)
        return torch.ones(k) * len(kind), ids, torch.tensor([int("7"), int(2.9), int()])


def test_other_uses_of_int_are_untouched() -> None:
    m = Helpers()
    code = Helpers.forward.__code__
    ep = st.export(m, (torch.randn(8),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    assert Helpers.forward.__code__ is code  # restored
    for n in (0, 1, 5, 9):
        assert_close(m(torch.randn(n)), ep.module()(torch.randn(n)))


def test_functions_are_restored_when_the_export_fails() -> None:
    def f(x):
        n = int(x.shape[0] * 0.5)
        return torch.ones(n) @ x  # a shape error

    code = f.__code__
    with pytest.raises(st.ExportError):
        st.export(f, (torch.randn(6, 2),), dynamic_shapes={"x": (st.Dim.AUTO, None)})
    assert f.__code__ is code
    assert f(torch.randn(0, 3)).shape == (3,)  # and it still runs as before


@pytest.mark.parametrize("spec", ["auto", "named"])
def test_arange_of_a_float_end_has_torchs_length(spec: str) -> None:
    def f(x):
        n = x.shape[0]
        return (torch.arange(n * 0.7), torch.arange(0, n / 2, 0.5), torch.arange(1.5, n + 0.25),
                torch.linspace(0, n * 0.5, 5), torch.arange(n * 0.3, n * 1.1, 0.7))

    dim = st.Dim.AUTO if spec == "auto" else st.Dim("n", min=2, max=500)
    ep = st.export(f, (torch.randn(10),), dynamic_shapes={"x": (dim,)})
    ran = _sweep(f, lambda n: (torch.randn(n),), ep, [n for n in SIZES if n >= 2] + [333, 500])
    assert ran >= 15


def test_float_of_a_size_is_symbolic() -> None:
    def f(x):
        scale = float(x.shape[0]) / 4  # DETR-style: float() then arithmetic
        return x * scale, torch.ones(int(scale))

    ep = st.export(f, (torch.randn(8),), dynamic_shapes={"x": (st.Dim("n", max=64),)})
    assert _sweep(f, lambda n: (torch.randn(n),), ep, [n for n in SIZES if n <= 64]) >= 10


def test_len_of_a_tensor_is_its_symbolic_size() -> None:
    class M(torch.nn.Module):
        def forward(self, x):
            v = torch.ones(int(x.numel() * 0.7))
            w = torch.stack([v, v * 2], 0)
            return v * 2 if len(v) == w.size(-1) else v.flip(0), torch.ones(len(x) + 1)

    m = M()
    ep = st.export(m, (torch.randn(7, 6),), dynamic_shapes={"x": {0: st.Dim.AUTO,
                                                                  1: st.Dim("d", max=16)}})
    for a, b in ((7, 7), (0, 3), (1, 1), (9, 16)):
        assert_close(m(torch.randn(a, b)), ep.module()(torch.randn(a, b)))


def test_a_module_level_int_of_its_own_is_respected() -> None:
    scope: dict = {"torch": torch}
    exec("def int(v):\n    return 3\n"  # noqa: S102  (a module that shadows int)
         "def f(x):\n    return torch.ones(int(x.shape[0] * 0.5))\n", scope)
    ep = st.export(scope["f"], (torch.randn(8),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    for n in (0, 1, 8, 20):
        assert ep.module()(torch.randn(n)).shape == (3,)
