"""Behaviours pinned by the last part of torch's test_export.py (read by the suite15
helper), met by a user who replaces ``torch.export.export(...)`` with
``st.export(...).to_torch()`` (issue 21).  Each case runs the same model through
torch.export in the same test where torch exports it.  Our own cases."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import same


# -- a grad-mode region inside a cond branch (torch's test_predispatch_cond): the branch's
#    region becomes torch's wrap_with_set_grad_enabled, and the caller's grad mode is the
#    same after a call as before (the converted branch ended with a raw
#    _set_grad_enabled(<the export's mode>), leaving grad off after every call) ---------------
class BranchWithGradRegion(nn.Module):
    def __init__(self, pred: bool) -> None:
        super().__init__()
        self.pred = nn.Buffer(torch.tensor(pred))

    def forward(self, x, y):
        def with_grad(x, y):
            with torch.enable_grad():
                return x * 2.0 + y

        return torch.cond(self.pred, with_grad, lambda x, y: x - y, [x, y])


@pytest.mark.parametrize("pred", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_grad_region_in_a_cond_branch_leaves_the_callers_mode(pred: bool) -> None:
    args = (torch.randn(3), torch.randn(3))
    with torch.no_grad():
        ref = torch.export.export(BranchWithGradRegion(pred), args)
        ours = st.export(BranchWithGradRegion(pred), args)
    conv = ours.to_torch()
    model = BranchWithGradRegion(pred)
    wraps = [n for n in conv.graph_module.true_graph_0.graph.nodes
             if n.target is torch.ops.higher_order.wrap_with_set_grad_enabled]
    assert len(wraps) == 1  # as torch's own program has it
    for prog in (ours, conv, ref):
        for grad in (True, False):
            with torch.set_grad_enabled(grad):
                x = torch.randn(3, requires_grad=True)
                y = torch.randn(3)
                out = prog.module()(x, y)
                assert torch.is_grad_enabled() is grad  # the caller's mode is untouched
                want = model(x, y)
                same(out, want)
                if prog is not ours:  # (eager's cond under no_grad gives no gradient even
                    # for a branch under enable_grad; safetrace's own module gives one)
                    assert out.requires_grad == want.requires_grad


# -- a user input named like a lifted constant (torch's test_placeholder_naming_collisions):
#    forward(self, c_gamma) reading self.gamma; before, the constant's placeholder was
#    renamed by fx while its signature entry kept the name, and to_torch() raised KeyError --
class InputNamedLikeAConstant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gamma = torch.randn(4)

    def forward(self, x, c_gamma):
        return x * self.gamma + c_gamma


def test_user_input_named_like_a_constant_converts() -> None:
    model = InputNamedLikeAConstant()
    args = (torch.randn(4), torch.randn(4))
    ref = torch.export.export(model, args)
    ours = st.export(model, args)
    conv = ours.to_torch()
    assert set(conv.constants) == set(ref.constants) == {"gamma"}
    kinds = [(s.kind.name, s.target) for s in conv.graph_signature.input_specs]
    assert kinds == [("CONSTANT_TENSOR", "gamma"), ("USER_INPUT", None), ("USER_INPUT", None)]
    for prog in (ours, conv, ref):
        x, c = torch.randn(4), torch.randn(4)
        same(prog.module()(x, c), model(x, c))


# -- a data-read int passed as a Scalar to a custom op with a composite kernel and no fake
#    (torch's test_unbacked_deferred_runtime_retrace): torch traces the kernel with its own
#    symbolic int; ours cannot hand its symbol through the dispatcher, so it is a
#    MissingFake with the fix (before: a RuntimeError 'Expected a value of type number'
#    escaped st.export) ------------------------------------------------------------------
_LIB = torch.library.Library("st_suite_end", "FRAGMENT")
_LIB.define("ones_if(Scalar n) -> Tensor")


def _ones_if(n):
    return torch.ones(2, 2) if n > 2 else torch.zeros(2, 2)


_LIB.impl("ones_if", _ones_if, "CompositeImplicitAutograd")


class ScalarFromData(nn.Module):
    def forward(self, x):
        n = x.item()
        torch._check(n > 2)
        return torch.ops.st_suite_end.ones_if(n)


def test_data_read_scalar_to_a_composite_custom_op_is_an_export_error() -> None:
    with pytest.raises(st.UnsupportedOpError, match="st_suite_end::ones_if") as info:
        st.export(ScalarFromData(), (torch.tensor(4),))
    assert info.value.kind == "missing-fake" and "register_fake" in info.value.fix


# -- node.meta["torch_fn"]: the user's torch call each op came from and its call count, as
#    torch.export records it (torch's test_torch_fn,
#    test_export_cond_preserve_torch_fn_for_subgraphs) ------------------------------------
class FunctionalCalls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, w):
        x = self.lin(x)
        x = torch.nn.functional.linear(x, w)
        x = torch.nn.functional.relu(x)
        return torch.add(x, x) + x


class BranchMethods(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() <= 2, lambda x: x.cos(), lambda x: x.sin() * 2, [x])


def _torch_fns(ep) -> list:
    """(op, torch_fn) of every op of the program and its subgraphs, our input checks left
    out (torch's program has none)."""
    out = []
    for gm in ep.graph_module.modules():
        for n in getattr(gm, "graph", torch.fx.Graph()).nodes:
            if n.op == "call_function" and n.target not in (
                    torch.ops.aten.expand.default, torch.ops.aten._assert_tensor_metadata.default):
                out.append((str(n.target), n.meta.get("torch_fn")))
    return out


@pytest.mark.parametrize("model, args", [
    (FunctionalCalls, (torch.randn(2, 3), torch.randn(3, 3))),
    pytest.param(BranchMethods, (torch.randn(2, 3),), marks=pytest.mark.slow)],
    ids=["functional", "cond"])
def test_ops_record_the_torch_function_they_came_from(model, args) -> None:
    ref = torch.export.export(model(), args)
    ours = st.export(model(), args)
    want = _torch_fns(ref)
    assert all(fn is not None for _, fn in want)
    assert _torch_fns(ours.to_torch()) == want


@pytest.mark.slow  # (~2 s: two run_decompositions)
def test_decomposed_ops_keep_the_torch_function_they_came_from() -> None:
    args = (torch.randn(2, 3), torch.randn(3, 3))
    ref = torch.export.export(FunctionalCalls(), args).run_decompositions()
    ours = st.export(FunctionalCalls(), args).to_torch().run_decompositions()
    want = _torch_fns(ref)
    assert ("aten.addmm.default", ("linear_1", "builtin_function_or_method.linear")) in want
    assert _torch_fns(ours) == want


# -- a derived dim whose root may be 1 (torch's test_derived_dim_1_2): dx in [1, 2] and
#    dx + 1 for y.  torch.export 2.13's program guards `y.size()[0] - 1 != 1` and refuses
#    dx = 1, which eager and torch's own test accept; ours runs it, with torch's ranges -------
class PlusShifted(nn.Module):
    def forward(self, x, y):
        return x + y[1:]


@pytest.mark.slow  # (a behaviour pin: no fix behind it)
def test_derived_dim_with_root_one_runs_as_eager() -> None:
    dx = st.Dim("dx", min=1, max=2)
    ours = st.export(PlusShifted(), (torch.randn(2, 2), torch.randn(3, 2)),
                     dynamic_shapes=({0: dx, 1: None}, {0: dx + 1, 1: None}))
    conv = ours.to_torch()
    assert sorted((int(v.lower), int(v.upper)) for v in conv.range_constraints.values()) == \
        [(1, 2), (2, 3)]
    for prog in (ours, conv):
        for n in (1, 2):
            x, y = torch.randn(n, 2), torch.randn(n + 1, 2)
            same(prog.module()(x, y), x + y[1:])
        with pytest.raises(st.InputMismatchError if prog is ours else Exception):
            prog.module()(torch.randn(3, 2), torch.randn(4, 2))  # dx = 3: past the range


# -- an autocast region around ops autocast does not change (torch's
#    test_export_with_autocast): exported as eager runs them; an op autocast runs in another
#    dtype (mm, linear: an autocast kernel of its own) is still refused, naming the op -------
class AutocastAroundPointwise(nn.Module):
    def forward(self, x):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            y = x.sin().sum()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            z = (y.cos() * x + 1).amax(dim=0)
        return z


class AutocastAroundMatmul(nn.Module):
    def forward(self, x):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return torch.mm(x, x.t()).sin()


def test_autocast_region_of_ops_it_leaves_alone_exports() -> None:
    model = AutocastAroundPointwise()
    args = (torch.randn(4, 3),)
    spec = ({0: torch.export.Dim("n")},)
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec)
    for prog in (ours, ours.to_torch(), ref):
        for n in (1, 5):
            x = torch.randn(n, 3)
            out = prog.module()(x)
            same(out, model(x))
            assert out.dtype == torch.float32
    with pytest.raises(st.UnsupportedOpError, match="autocast.*aten.mm"):
        st.export(AutocastAroundMatmul(), (torch.randn(4, 3),))
    assert not torch.is_autocast_enabled("cpu")


# -- a model built under a FakeTensorMode (torch's test_fake_weights): exported outside the
#    mode under the mode of its state, as torch.export does (with or without a ShapeEnv:
#    torch asks for one); the state of a model torch.export is tracing on another thread
#    (its fake modes are made with export=True) stays refused, with the fix --------------
class FakeBuilt(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.b = nn.Buffer(torch.randn(4), persistent=False)

    def forward(self, x):
        return x @ self.w + self.b


def test_model_built_under_fake_mode_exports_outside_it_as_torch() -> None:
    from torch._subclasses import FakeTensorMode  # (test code: torch internals allowed)
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    for mode in (FakeTensorMode(), FakeTensorMode(shape_env=ShapeEnv(tracked_fakes=[]))):
        _exports_as_torch(mode)
    with FakeTensorMode(shape_env=ShapeEnv(), export=True):  # (as torch.export's own mode)
        other = FakeBuilt()
    with pytest.raises(st.UnsupportedOpError, match="FakeTensorMode") as info:
        st.export(other, (torch.randn(2, 4),))
    assert "with fake_mode: st.export(model, args)" in info.value.fix


def _exports_as_torch(mode) -> None:
    with mode:
        model = FakeBuilt()
    ref = torch.export.export(model, (torch.randn(2, 4),))
    ours = st.export(model, (torch.randn(2, 4),))
    assert torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is None
    conv = ours.to_torch()
    assert [(s.kind.name, s.target) for s in conv.graph_signature.input_specs] == \
        [(s.kind.name, s.target) for s in ref.graph_signature.input_specs]
    out = [n.meta["val"] for n in conv.graph.find_nodes(op="output")[0].args[0]]
    want = [n.meta["val"] for n in ref.graph.find_nodes(op="output")[0].args[0]]
    assert [(v.shape, v.dtype) for v in out] == [(v.shape, v.dtype) for v in want]
    assert all(type(v).__name__ == "FakeTensor" for v in conv.state_dict.values())
