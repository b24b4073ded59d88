"""Control flow that cannot be exported is refused with the user's line and a fix."""

from __future__ import annotations

import builtins

import pytest
import torch
from torch._higher_order_ops import while_loop

import safetrace as st

X = torch.randn(3, 4)


def _export(fn, *args, **kw):
    class M(torch.nn.Module):
        def forward(self, *a):
            return fn(*a)
    return st.export(M(), args or (X,), **kw)


def test_branches_returning_different_dtypes_name_both_lines():
    def f(x):
        return torch.cond(x.sum() > 0, lambda x: x * 2,
                          lambda x: x.to(torch.float64), (x,))
    with pytest.raises(st.OpShapeError) as info:
        _export(f)
    msg = str(info.value)
    assert "dtype" in msg and "true branch" in msg and "false branch" in msg
    assert "test_errors.py" in msg and "x.to(torch.float64)" in msg and "x * 2" in msg


def test_branches_returning_different_ranks_are_refused():
    def f(x):
        return torch.cond(x.sum() > 0, lambda x: x, lambda x: x.sum(0), (x,))
    with pytest.raises(st.OpShapeError, match="number of dims"):
        _export(f)


def test_branches_returning_different_structures_are_refused():
    def f(x):
        return torch.cond(x.sum() > 0, lambda x: (x, x), lambda x: x * 2, (x,))
    with pytest.raises(st.OpShapeError, match="different structures") as info:
        _export(f)
    assert "f32[3, 4]" in str(info.value)


def test_in_place_write_to_a_branch_input_is_refused_with_the_line():
    def t(x):
        x.add_(1)
        return x * 2

    def f(x):
        return torch.cond(x.sum() > 0, t, lambda x: x * 3, (x,))
    with pytest.raises(st.UnsupportedOpError, match="writes in place") as info:
        _export(f)
    assert "x.add_(1)" in str(info.value) and "x = x + 1" in str(info.value)


def test_write_to_a_buffer_inside_a_branch_is_refused():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(4))

        def forward(self, x):
            def t(x):
                self.count.add_(1)
                return x + 1
            return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))
    m = M()
    with pytest.raises(st.UnsupportedOpError, match="module state") as info:
        st.export(m, (X,))
    assert "self.count.add_(1)" in str(info.value)
    assert torch.equal(m.count, torch.zeros(4))


def test_in_place_write_to_a_closed_over_tensor_is_refused():
    def f(x, y):
        def t(x):
            y.mul_(2)
            return x + 1
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))
    with pytest.raises(st.UnsupportedOpError, match="from outside"):
        _export(f, X, torch.randn(4))


def test_in_place_ops_on_branch_intermediates_are_allowed():
    def t(x):
        y = x * 2
        y.add_(1)
        return y

    def f(x):
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))
    ep = _export(f)
    for x in (X.abs(), -X.abs()):
        torch.testing.assert_close(ep.module()(x), t(x) if x.sum() > 0 else x - 1)


def test_print_inside_a_branch_is_refused_and_print_is_restored():
    def t(x):
        print("taking the true branch", x.shape)
        return x + 1

    def f(x):
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))
    before = builtins.print
    with pytest.raises(st.UnsupportedOpError, match="print") as info:
        _export(f)
    assert "print(\"taking the true branch\"" in str(info.value)
    assert builtins.print is before


def test_data_read_inside_a_branch_names_the_branch_line():
    def t(x):
        if x.max() > 1:
            return x
        return x + 1

    def f(x):
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))
    with pytest.raises(st.DataDependentError) as info:
        _export(f)
    assert "if x.max() > 1:" in str(info.value)


def test_a_predicate_with_several_elements_is_refused():
    def f(x):
        return torch.cond(x > 0, lambda x: x, lambda x: x - 1, (x,))
    with pytest.raises(st.UnsupportedOpError, match="one element"):
        _export(f)


def test_a_non_bool_predicate_is_refused():
    def f(x):
        return torch.cond(x.sum(), lambda x: x + 1, lambda x: x - 1, (x,))
    with pytest.raises(st.UnsupportedOpError, match="bool tensor"):
        _export(f)


def test_a_while_loop_body_changing_dtype_is_refused():
    def f(x):
        return while_loop(lambda x: x.sum() < 10, lambda x: (x.double() + 1,), (x,))
    with pytest.raises(st.OpShapeError, match="changes carried value 0"):
        _export(f)


def test_a_while_loop_cond_fn_must_return_a_bool_tensor():
    def f(x):
        return while_loop(lambda x: x.sum(), lambda x: (x + 1,), (x,))
    with pytest.raises(st.OpShapeError, match="cond_fn"):
        _export(f)


def test_entry_points_are_restored_after_a_failed_export():
    import torch._higher_order_ops as hops
    import torch._higher_order_ops.utils as utils

    def entries():  # (torch 2.11 has no _hop_compile_and_call)
        return (torch.cond, torch.compile, hops.while_loop, hops.map, hops.scan,
                getattr(utils, "_hop_compile_and_call", None))

    before = entries()

    def f(x):
        return torch.cond(x.sum() > 0, lambda x: x, lambda x: x.sum(0), (x,))
    with pytest.raises(st.OpShapeError):
        _export(f)
    assert entries() == before
