"""Python code on symbolic sizes never bakes an example value in silently: every way a
size can leave the symbolic world (str, round, bit ops, torch.sym_*) is either symbolic or
a recorded guard, and the program matches eager wherever it accepts an input."""

from __future__ import annotations

import math

import pytest
import torch

import safetrace as st
from safetrace import Dim

CASES = {
    "abs": lambda x: x * abs(x.shape[0] - 10),
    "divmod": lambda x: x * divmod(x.shape[0], 3)[1],
    "round": lambda x: x * round(x.shape[0] / 3),
    "ceil": lambda x: x * math.ceil(x.shape[0] / 4),
    "str_len": lambda x: x * len(str(x.shape[0])),
    "fstring": lambda x: x * len(f"{x.shape[0]}"),
    "truediv": lambda x: x * (x.shape[0] / 4),
    "neg_floordiv": lambda x: x * (-x.shape[0] // 4),
    "mod_neg": lambda x: x * (x.shape[0] % -3),
    "lshift": lambda x: x * (1 << (x.shape[0] % 3)),
    "bitand": lambda x: x * (x.shape[0] & 1),
    "pow_float": lambda x: x * x.shape[0] ** 0.5,
    "sqrt": lambda x: x * math.sqrt(x.shape[0]),
    "sym_max": lambda x: x * torch.sym_max(x.shape[0], 3),
    "sym_float": lambda x: x * torch.sym_float(x.shape[0]),
    "sym_not": lambda x: x * torch.sym_not(x.shape[0] == 2),
    "min_max": lambda x: x * min(x.shape[0], 4) + max(x.shape[0], 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_on_sizes_is_sound(name):
    f = CASES[name]
    ep = st.export(f, (torch.ones(5),), dynamic_shapes={"x": (Dim.AUTO,)})
    accepted = 0
    for n in (0, 1, 2, 3, 4, 5, 7, 12):
        x = torch.rand(n)
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            continue
        accepted += 1
        torch.testing.assert_close(got, f(x))
    assert accepted >= 1


def _window_partition(x, ws=7):
    B, H, W, C = x.shape
    pad_r, pad_b = (ws - W % ws) % ws, (ws - H % ws) % ws
    x = torch.nn.functional.pad(x, (0, 0, 0, pad_r, 0, pad_b))
    Hp, Wp = x.shape[1], x.shape[2]
    x = x.view(B, Hp // ws, ws, Wp // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, C)


def test_padding_to_a_multiple_needs_no_runtime_check():
    """Swin's pad-to-window: the padded size is provably a multiple of the window, so the
    view needs no residual condition and every size runs."""
    ep = st.export(_window_partition, (torch.randn(2, 10, 12, 3),),
                   dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO}})
    assert ep.contract.conditions == ()
    assert "requires" not in str(ep)
    for h, w in ((1, 1), (7, 14), (13, 29), (30, 8)):
        x = torch.randn(3, h, w, 3)
        torch.testing.assert_close(ep.module()(x), _window_partition(x))


def test_index_put_values_with_their_own_symbol_unify_without_size_one_guard():
    """gpt-fast's cache update `k_cache[:, :, pos] = k`: the one-token step must run."""
    def g(x, idx, v):
        x = x.clone()
        x[:, idx] = v
        return x

    ep = st.export(g, (torch.zeros(2, 32, 8), torch.arange(5), torch.randn(2, 5, 8)),
                   dynamic_shapes=(None, {0: Dim.DYNAMIC}, {1: Dim.DYNAMIC}))
    assert ep.contract.conditions == ()
    for n in (1, 3, 9):
        args = (torch.zeros(2, 32, 8), torch.randperm(32)[:n], torch.randn(2, n, 8))
        torch.testing.assert_close(ep.module()(*args), g(*args))


def test_view_as_with_a_named_dim():
    def f(x, y):
        return x.view_as(y) * 2

    n = Dim("n")
    ep = st.export(f, (torch.randn(6, 4), torch.randn(6, 4)), dynamic_shapes=({0: n}, {0: n}))
    a, b = torch.randn(9, 4), torch.randn(9, 4)
    torch.testing.assert_close(ep.module()(a, b), f(a, b))


def test_torch_helpers_reaching_a_size_node():
    """torch.broadcast_shapes (torch's Python) asks sizes for .node.guard_bool; F.binary_
    cross_entropy with a weight calls it on dynamic sizes."""
    import torch.nn.functional as F

    def f(x, y):
        return x.sum() * torch.broadcast_shapes(x.shape, y.shape)[0]

    ep = st.export(f, (torch.randn(3, 5), torch.randn(5)),
                   dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO}, {0: Dim.AUTO}))
    a = (torch.ones(4, 6), torch.ones(6))
    torch.testing.assert_close(ep.module()(*a), f(*a))

    def g(x, t, w):
        return F.binary_cross_entropy(x.sigmoid(), t, weight=w)

    # torch._C._infer_size compares b with 1 (a guard b != 1): a named Dim needs min=2
    b = Dim("b", min=2)
    ep = st.export(g, (torch.randn(4, 3), torch.rand(4, 3), torch.rand(4, 3)),
                   dynamic_shapes=({0: b}, {0: b}, {0: b}))
    a = (torch.randn(7, 3), torch.rand(7, 3), torch.rand(7, 3))
    torch.testing.assert_close(ep.module()(*a), g(*a))


def test_infer_size_called_as_older_torch_calls_it(monkeypatch):
    """torch 2.11's F.binary_cross_entropy broadcasts its weight with
    ``torch._C._infer_size(target.size(), weight.size())``, which takes only a torch.Size:
    while exporting it answers from the broadcasting rule (here torch 2.13's functional
    module is given the older helper)."""
    import torch.nn.functional as F

    monkeypatch.setattr(F, "_infer_size", torch._C._infer_size, raising=False)

    def g(t, w):
        new_size = F._infer_size(t.size(), w.size())
        return t * w.expand(new_size)

    b = Dim("b")
    ep = st.export(g, (torch.rand(4, 3), torch.rand(1, 3)), dynamic_shapes=({0: b}, None))
    for n in (0, 1, 6):
        a = (torch.rand(n, 3), torch.rand(1, 3))
        torch.testing.assert_close(ep.module()(*a), g(*a))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.rand(2, 4), torch.rand(1, 3))
    assert F._infer_size is torch._C._infer_size  # restored after the export


def test_float_powers_of_sizes_stay_symbolic(tmp_path):
    """n ** -0.5 (attention scales, sqrt-length pooling) and 10000.0 ** (2*i/d) (rotary
    frequencies) are computed by the graph, not baked in; save/load keeps them."""
    def f(x):
        scale = x.shape[1] ** -0.5
        freq = 10000.0 ** (2 * x.shape[0] / x.shape[1])
        return x.sum(1) * scale * freq, x.shape[1] ** 0.5

    ep = st.export(f, (torch.randn(2, 9),), dynamic_shapes=({0: Dim.AUTO, 1: Dim("n", min=1)},))
    assert "dynamic" in ep.dims_report["x.shape[1]"]
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for shape in ((3, 4), (1, 25), (5, 1)):
        x = torch.randn(*shape)
        for prog in (ep.module(), loaded.module()):
            got, want = prog(x), f(x)
            torch.testing.assert_close(got[0], want[0])
            assert got[1] == pytest.approx(want[1])


def test_comparing_a_float_power_specializes_soundly():
    def f(x):
        return x * 2 if x.shape[0] ** 0.5 > 2 else x * 3

    ep = st.export(f, (torch.randn(9),), dynamic_shapes=({0: Dim.AUTO},))
    x = torch.randn(9)
    torch.testing.assert_close(ep.module()(x), f(x))
    for n in (2, 4, 16):
        x = torch.randn(n)
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            continue
        torch.testing.assert_close(got, f(x))


def test_a_dynamic_size_is_an_int_to_isinstance() -> None:
    """``isinstance(n, int)`` of a dynamic size was False while tracing (True in eager),
    so ``if isinstance(size, int): size = (size, size)`` took the other branch and the
    exported program computed something else, silently; numbers.Integral too."""
    import numbers

    def f(x):
        n = x.shape[0]
        k = 2 if isinstance(n, int) and isinstance(n, numbers.Integral) else 3
        return x * k

    ep = st.export(f, (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    for n in (0, 1, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), f(x))
