"""What a predicate known at export does, symbolic output sizes, and the graph's structure
seen by fx tools, torch.compile and re-export."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.control_flow.programs import Basic, Layers, Nested
from tests.helpers import assert_close, matches_eager, rejects


def _hops(ep):
    return [n for n in ep.graph.nodes if n.op == "call_function" and
            getattr(n.target, "namespace", None) == "higher_order"]


class PyPred(torch.nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.flag = flag

    def forward(self, x):
        return torch.cond(self.flag, lambda x: x + 1, lambda x: x - 1, (x,))


def test_python_bool_predicate_traces_one_branch():
    for flag in (True, False):
        ep = st.export(PyPred(flag), (torch.randn(3),))
        assert not _hops(ep)
        matches_eager(ep, PyPred(flag), (torch.randn(3),))


def test_decidable_shape_predicate_traces_one_branch():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.shape[0] > 2, lambda x: x * 2, lambda x: x + 1, (x,))
    ep = st.export(M(), (torch.randn(4),), dynamic_shapes={"x": {0: st.Dim("n", min=3)}})
    assert not _hops(ep)
    matches_eager(ep, M(), (torch.randn(7),))
    rejects(ep, (torch.randn(2),))


def test_undecided_shape_predicate_keeps_both_branches():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.shape[0] > 4, lambda x: x * 2, lambda x: x + 1, (x,))
    ep = st.export(M(), (torch.randn(6),), dynamic_shapes={"x": {0: st.Dim("n")}})
    assert len(_hops(ep)) == 1
    for n in (0, 1, 4, 5, 9):
        matches_eager(ep, M(), (torch.randn(n),))
    assert not ep.range_constraints or all(
        r.lower <= 0 for r in ep.range_constraints.values())


def test_st_cond_is_torch_cond():
    class M(torch.nn.Module):
        def forward(self, x):
            return st.cond(x.sum() > 0, lambda x: x.exp(), lambda x: -x, (x,))
    ep = st.export(M(), (torch.randn(3),))
    assert len(_hops(ep)) == 1
    for x in (torch.ones(3), -torch.ones(3)):
        matches_eager(ep, M(), (x,))
    # outside export it is eager torch.cond
    out = st.cond(torch.tensor(True), lambda x: x + 1, lambda x: x * 1, (torch.ones(2),))
    assert torch.equal(out,
                       torch.full((2,), 2.0))


def test_nested_cond_makes_nested_submodules():
    ep = st.export(Nested(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    outer = _hops(ep)[0]
    true_gm = getattr(ep.graph_module, outer.args[1].target)
    inner = [n for n in true_gm.graph.nodes if n.op == "call_function" and
             getattr(n.target, "namespace", None) == "higher_order"]
    assert len(inner) == 1
    text = ep.graph_module.print_readable(print_output=False)
    assert text.count("class true_graph_0") == 2  # the outer one and the nested one


def test_cond_over_layers_lifts_each_layers_parameters():
    ep = st.export(Layers(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    hops = _hops(ep)
    assert len(hops) == 3
    for i, node in enumerate(hops):
        names = [a.name for a in node.args[3]]
        assert f"p_layers_{i}_weight" in names and f"p_layers_{i}_bias" in names


def test_differing_branch_sizes_become_an_unbacked_size():
    class M(torch.nn.Module):
        def forward(self, x):
            y = torch.cond(x.sum() > 0, lambda x: torch.cat([x, x]), lambda x: x * 2, (x,))
            return y.sum(0), y.shape[0]
    ep = st.export(M(), (torch.randn(3, 2),), dynamic_shapes={"x": {0: st.Dim("n")}})
    cond_out = next(n for n in ep.graph.nodes if n.op == "call_function" and
                    n.target is __import__("operator").getitem and
                    n.args[0].target is torch.ops.higher_order.cond)
    size = cond_out.meta["val"].shape[0]
    assert str(size).startswith("u")
    for n in (0, 1, 4):
        for s in (1, -1):
            matches_eager(ep, M(), (torch.rand(n, 2) * s + 0.1 * s,))


def test_export_does_not_change_the_model_or_inputs():
    m = Layers()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.randn(3, 4)
    x0 = x.clone()
    st.export(m, (x,))
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    assert torch.equal(x, x0)


def test_graph_works_with_fx_interpreter_and_reexport():
    ep = st.export(Basic(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    gm = ep.graph_module
    x = torch.randn(2, 4)
    out = torch.fx.Interpreter(gm).run(x)
    torch.testing.assert_close(out[0], Basic()(x))
    # the program's module exports again: the operators reach safetrace's handlers
    ep2 = st.export(ep.module(), (torch.randn(3, 4),),
                    dynamic_shapes={"x": {0: st.Dim("n")}})  # (its argument names)
    assert len(_hops(ep2)) == 1
    for s in (1, -1):
        matches_eager(ep2, Basic(), (torch.rand(5, 4) * s,))


def test_torch_compile_runs_the_program():
    ep = st.export(Basic(), (torch.randn(3, 4),))
    compiled = torch.compile(ep.module(), backend="eager", fullgraph=False)
    for s in (1, -1):
        x = torch.rand(3, 4) * s
        torch.testing.assert_close(compiled(x), Basic()(x))


class CheckInBranch(torch.nn.Module):
    """A branch holding a check on a data-dependent size; the parameters require grad, so
    eager torch.cond traces both branches (make_fx, fake tensors) for its autograd."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        def true_fn(x):
            n = x[:, 0].nonzero().shape[0]
            torch._check(n <= 3)
            return self.lin(x).sum(0) * n

        def false_fn(x):
            return self.lin(x).sum(0) - 1

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


def test_a_data_dependent_check_in_a_branch_runs_under_eager_cond():
    """The run-time assertion of a check inside a cond branch is traceable: eager
    torch.cond (its autograd traces the branches with fake tensors), ep.module() and the
    converted program run it (torch.compile: the slow test below), and each refuses data that breaks it
    (was GuardOnDataDependentSymNode on every input)."""
    model = CheckInBranch()
    spec = {"x": {0: st.Dim("n")}}
    ep = st.export(model, (torch.ones(3, 4),), dynamic_shapes=spec)
    ref = torch.export.export(model, (torch.ones(3, 4),),
                              dynamic_shapes={"x": {0: torch.export.Dim("n")}})
    tep = ep.to_torch()
    good = [torch.ones(2, 4), torch.ones(1, 4), torch.zeros(0, 4), -torch.ones(6, 4),
            torch.tensor([[1.0, 2, 3, 4], [0, 1, 1, 1], [2, 0, 0, 0], [0, 0, 0, 1]])]
    for x in good:
        expected = model(x)
        assert_close(expected, ep.module()(x))
        assert_close(expected, tep.module()(x))
        assert_close(expected, ref.module()(x))
    bad = torch.ones(5, 4)  # 5 nonzero rows in the branch taken
    with pytest.raises(st.RuntimeAssertionError, match="u0 <= 3"):
        ep.module()(bad)
    with pytest.raises(RuntimeError, match="u0 <= 3"):
        tep.module()(bad)
    with pytest.raises(RuntimeError, match="u0 <= 3"):
        ref.module()(bad)


@pytest.mark.slow  # a dynamo compile of the cond: ~15 s
def test_a_data_dependent_check_in_a_branch_runs_under_torch_compile():
    model = CheckInBranch()
    ep = st.export(model, (torch.ones(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    good, bad = torch.ones(2, 4), torch.ones(5, 4)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(ep.module(), backend="eager")
        assert_close(model(good), compiled(good))
        with pytest.raises(RuntimeError, match="u0 <= 3"):
            compiled(bad)


@st.custom_op("sttest_cf::keep_positive")
def keep_positive(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0]


@st.register_fake(keep_positive)
def _(x):
    return x.new_empty((st.new_dynamic_size(max=x.numel()),))


def _python_if(pred, true_fn, false_fn, operands):
    return true_fn(*operands) if pred else false_fn(*operands)


class SafetraceOnlyOpInBranches(torch.nn.Module):
    """Branches (one nested) calling a custom op whose fake only safetrace knows (eager
    torch.cond itself cannot run it: `cond=_python_if` is the eager reference)."""

    def __init__(self, cond=torch.cond):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(3, 3)
        self.cond = cond

    def forward(self, x):
        def inner_true(y):
            return y[:2] * keep_positive(y.detach()).sum()

        def inner_false(y):
            return y[:2] - 1

        def true_fn(x):
            y = self.lin(x).flatten()
            return self.cond(y.sum() > 0, inner_true, inner_false, (y,))

        def false_fn(x):
            return self.lin(x).flatten()[1:3] * keep_positive(-x.detach()).sum()

        return self.cond(x.mean() > 0, true_fn, false_fn, (x,))


def test_branches_with_a_safetrace_only_fake_run_with_autograd():
    """Eager torch.cond under autograd traces its branches with torch's fake tensors, which
    know no st.register_fake: ep.module() runs the branch the predicate picks, as the dense
    kernel does, with the same outputs and gradients as eager."""
    ep = st.export(SafetraceOnlyOpInBranches(), (torch.rand(4, 3),),
                   dynamic_shapes={"x": {0: st.Dim("n")}})
    model = SafetraceOnlyOpInBranches(cond=_python_if)
    assert len(_hops(ep)) == 1
    inputs = [torch.rand(4, 3), -torch.rand(5, 3), torch.rand(1, 3) * 3,
              torch.tensor([[5.0, -1, 0], [-3, 2, -8]]), torch.tensor([[0.5, -1, 9]])]
    for x in inputs:
        model.zero_grad()
        expected = model(x)
        expected.sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        mod = ep.module()
        got = mod(x)
        assert_close(expected, got)
        got.sum().backward()
        assert_close(grads, [p.grad for p in mod.parameters()])
    with torch.no_grad():
        assert_close(model(inputs[1]), ep.module()(inputs[1]))
    rejects(ep, (torch.rand(4, 2),))


def _python_while(cond_fn, body_fn, carried):
    while cond_fn(*carried):
        carried = body_fn(*carried)
    return tuple(carried)


class _LoopOverLayer(torch.nn.Module):
    def __init__(self, loop=torch._higher_order_ops.while_loop) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.loop = loop

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        def c(i, h):
            return i < steps

        def b(i, h):
            return i + 1, torch.tanh(self.lin(h))

        return self.loop(c, b, (torch.zeros((), dtype=torch.long), x.clone()))[1]


def test_a_while_loop_runs_with_autograd_like_eager():
    """ep.module() runs a while_loop node as torch's dense kernel does (some torch releases'
    eager entry reads the subgraphs' metadata for autograd): the values of eager and the
    gradients of the same loop written in Python, at other sizes and trip counts, 0 trips
    included (torch 2.13's eager while_loop gives the body's gradients even when it never
    ran; the Python loop is the reference for gradients)."""
    ep = st.export(_LoopOverLayer(), (torch.randn(2, 4), torch.tensor(3)),
                   dynamic_shapes={"x": {0: st.Dim("n")}, "steps": None})
    for n, steps in ((0, 2), (1, 0), (5, 4), (3, 1)):
        x = torch.randn(n, 4, requires_grad=True)
        with torch.no_grad():
            assert_close(_LoopOverLayer()(x, torch.tensor(steps)),
                         ep.module()(x, torch.tensor(steps)))
        model = _LoopOverLayer(loop=_python_while)
        expected = model(x, torch.tensor(steps))
        expected.sum().backward()
        want = [_grad(p) for p in (*model.parameters(), x)]
        x.grad = None
        mod = ep.module()
        got = mod(x, torch.tensor(steps))
        assert_close(expected, got)
        assert got is not x
        got.sum().backward()
        assert_close(want, [_grad(p) for p in (*mod.parameters(), x)])
    rejects(ep, (torch.randn(3, 5), torch.tensor(1)))


def _grad(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(t) if t.grad is None else t.grad.clone()
