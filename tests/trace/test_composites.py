"""Python composites (``F.layer_norm``, ``F.normalize``, ``Tensor.unflatten``): one node when
the ATen namesake accepts the call, else traced through, re-entering the tracer; nested
composites; boolean dispatchers; composites of numbers only run as they are."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from tests.trace.common import check, targets


def _x(n):
    return (torch.randn(n, 4),)


def _image(n):
    return (torch.randn(n, 3, 8, 8),)


def test_composite_with_an_aten_namesake_is_one_node():
    ep = check(lambda x: F.layer_norm(x, (4,)), _x)
    assert targets(ep) == ["aten.layer_norm.default"]


def test_composite_without_one_is_traced_through():
    ep = check(lambda x: F.normalize(x, dim=-1), _x)
    assert not any("normalize" in t for t in targets(ep))
    assert len(targets(ep)) > 1  # its body's ops


def test_nested_composites_re_enter_the_tracer():
    """F.normalize -> Tensor.norm -> torch.norm, each a Python function."""
    def f(x):
        return F.normalize(x, p=1.0, dim=0) + F.softsign(x) + F.hardtanh(x) * x.norm()

    check(f, _x)


def test_composite_inside_a_module_with_state():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.GELU())
    check(m, _x)


def test_boolean_dispatcher_picks_the_branch_the_call_asks_for():
    def with_indices(x):
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        return values + indices.float()

    ep = check(with_indices, _image)
    assert "aten.max_pool2d_with_indices.default" in targets(ep)
    check(lambda x: F.max_pool2d(x, 2), _image)
    check(lambda x: F.adaptive_max_pool2d(x, 2), _image)


def test_method_composites():
    check(lambda x: x.unflatten(1, (2, 2)).flatten(1) + x.split([1, 3], 1)[1].sum(), _x)
    check(lambda x: x.norm(dim=1) + x.norm(p=1, dim=1, keepdim=True).squeeze(1), _x)


def test_composite_of_sizes_only_runs_on_the_symbolic_values():
    def f(x):
        shape = torch.broadcast_shapes(x.shape, (4,))
        return x.new_zeros(shape) + x

    # torch's body asks `size == 1` of every size; the shape rule does not need to: n = 1
    # broadcasts like any other size, without a guard
    check(f, _x, sizes=(0, 1, 2, 5))


def test_reflected_python_operators_are_composites_too():
    """``Tensor.__rsub__`` / ``__rdiv__`` / ``__rpow__`` are Python functions in torch."""
    check(lambda x: (1 - x) + 2 / (x.abs() + 1) + 2 ** x, _x)


def test_tracing_through_leaves_the_model_unchanged():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.0))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    st.export(m, (torch.randn(2, 4),))
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())


def _runs_of(code, fn):
    """How many frames of `code` ran during ``fn()``."""
    runs = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is code:
            runs.append(frame)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return len(runs)


def test_dropout_binds_by_parameter_name_without_its_body():
    """``F.dropout(x, p, training)`` is ``aten.dropout(input, p, train)``: bound by name
    (training -> train), its Python body is not traced (F.dropout's frame runs once per
    call: torch's own hand-off to the tracer)."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.25)).eval()

    def f(x):
        return F.dropout(m(x), 0.1, training=False) + F.alpha_dropout(x, 0.2, False)

    for _ in range(2):  # (the second export replays the calls, trace/memo.py)
        runs = _runs_of(F.dropout.__code__, lambda: check(f, _x, sizes=(0, 2)))
        assert runs == 2 + 2 * 2  # the export's two calls, and two per eager comparison
    assert targets(st.export(f, _x(3))).count("aten.dropout.default") == 2


def test_dropout_keeps_its_own_checks_and_in_place_form():
    """A probability outside [0, 1] raises eager's ValueError (the body's own check, which
    aten's rule does not make); ``inplace=True`` is traced through to ``dropout_``."""
    with pytest.raises(ValueError, match="between 0 and 1"):
        st.export(lambda x: F.dropout(x, 1.5, training=False), _x(3))

    def in_place(x):
        y = x * 2
        F.dropout(y, 0.5, training=False, inplace=True)
        return y

    ep = check(in_place, _x)
    assert "aten.dropout_.default" in targets(ep)
