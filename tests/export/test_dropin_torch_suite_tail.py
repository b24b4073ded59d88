"""More behaviours pinned by torch's own export tests (the last part of test_export.py and
the second half of test_unflatten.py), met by a user who replaces
``torch.export.export(...)`` with ``st.export(...).to_torch()`` (issue 21).  Each case runs
the same model through torch.export in the same test.  Our own cases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


# -- torch.fx's is_fx_tracing() is True under export (torch's test_is_fx_tracing) ----------
class AsksFxTracing(nn.Module):
    def forward(self, x, y):
        if torch.fx._symbolic_trace.is_fx_tracing():
            return x + y
        return x * y


class AsksFxSymbolicTracing(nn.Module):
    def forward(self, x, y):
        if torch.fx._symbolic_trace.is_fx_symbolic_tracing():
            return x + y
        return x * y


@pytest.mark.parametrize("model, traced", [(AsksFxTracing, torch.add),
                                           (AsksFxSymbolicTracing, torch.mul)],
                         ids=["is_fx_tracing", "is_fx_symbolic_tracing"])
def test_fx_tracing_flags_read_as_under_torch_export(model, traced) -> None:
    args = (torch.randn(3), torch.randn(3))
    spec = ({0: Dim("n")}, {0: Dim("n")})
    ref = torch.export.export(model(), args, dynamic_shapes=spec)
    ours = st.export(model(), args, dynamic_shapes=spec)
    for prog in (ours, ours.to_torch(), ref):
        for n in (0, 1, 5):
            x, y = torch.randn(n), torch.randn(n)
            same(prog.module()(x, y), traced(x, y))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(2), torch.randn(3))
    # outside an export, the flags are torch's own (eager runs the other branch)
    assert not torch.fx._symbolic_trace.is_fx_tracing()
    x, y = torch.randn(2), torch.randn(2)
    same(model()(x, y), x * y)


# -- a preserved call whose inputs carry a size only as a derived dim (test_dedup_sym_size)
class FirstHalf(nn.Module):
    def forward(self, x, y):
        return y[: x.size(0) // 2]


class HalvesTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m1, self.m2 = FirstHalf(), FirstHalf()

    def forward(self, x, y):
        d = x.size(0) // 2
        return y[:d] * 3 + self.m1(x, y) + self.m2(x, y)


@pytest.mark.parametrize("offset", [0, 1], ids=["2*d", "2*d+1"])
def test_preserved_call_recovers_a_root_from_a_derived_size(offset: int) -> None:
    d = Dim("d", min=1, max=64)
    spec = ((2 * d + offset,), (2 * d + offset,))
    args = (torch.ones(10 + offset), torch.ones(10 + offset))
    keep = ("m1",)
    ref = torch.export.export(HalvesTwice(), args, dynamic_shapes=spec,
                              preserve_module_call_signature=keep)
    ours = st.export(HalvesTwice(), args, dynamic_shapes=spec,
                     preserve_module_call_signature=keep)
    conv = ours.to_torch()
    model = HalvesTwice()
    for prog, sizes in ((conv, (1, 2, 7, 64)), (ref, (2, 7, 64))):  # (torch's: d >= 2)
        flat = torch.export.unflatten(prog)
        for n in sizes:
            inp = (torch.randn(2 * n + offset), torch.randn(2 * n + offset))
            same(flat(*inp), model(*inp))
            same(prog.module()(*inp), model(*inp))
            same(flat.m1(*inp), model.m1(*inp))  # the preserved module runs on its own
    bad = (torch.randn(5 - offset), torch.randn(5 - offset))  # not of the form 2*d + offset
    with pytest.raises(st.InputMismatchError):
        ours.module()(*bad)
    with pytest.raises(Exception):
        torch.export.unflatten(conv)(*bad)


# -- torch.fx.traceback.annotate regions land in node.meta["custom"] (test_preserve_annotation)
class Annotated(nn.Module):
    def forward(self, x):
        import torch.fx.traceback as fx_traceback

        with fx_traceback.annotate({"pp_stage": 0}):
            with fx_traceback.annotate({"bucket": 0}):
                x = x + 1
            x = x - 2
            with fx_traceback.annotate({"stream": 2, "bucket": 1}):
                x = x * 2
        return x / 3


def test_annotate_regions_reach_node_custom_meta() -> None:
    import torch.fx.traceback as fx_traceback

    want = {torch.ops.aten.add.Tensor: {"pp_stage": 0, "bucket": 0},
            torch.ops.aten.sub.Tensor: {"pp_stage": 0},
            torch.ops.aten.mul.Tensor: {"pp_stage": 0, "stream": 2, "bucket": 1}}
    x = torch.randn(10)
    spec = ({0: Dim("n")},)
    with fx_traceback.preserve_node_meta():
        ref = torch.export.export(Annotated(), (x,), dynamic_shapes=spec)
        ours = st.export(Annotated(), (x,), dynamic_shapes=spec)
    conv = ours.to_torch()
    for prog in (ours, conv, conv.run_decompositions({}), ref):
        seen = {}
        for node in prog.graph.nodes:
            if node.target in want:
                custom = node.meta["custom"]  # (torch adds keys of its own)
                seen[node.target] = {k: custom[k] for k in want[node.target]}
            elif node.target is torch.ops.aten.div.Tensor and prog is not ref:
                assert "custom" not in node.meta  # outside every region
        assert seen == want
        for n in (0, 1, 7):
            y = torch.randn(n)
            same(prog.module()(y), Annotated()(y))
    assert "custom" not in fx_traceback.current_meta  # the regions closed


# -- a GraphModule exported again keeps each node's recorded metadata ---------------------
# (torch's test_nested_retrace, test_nonstrict_retrace_preserves_metadata,
# test_stack_trace_make_fx)
class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        y = self.inner(x)
        y *= 2.0
        return y + x


def _op_meta(prog: Any) -> list:
    """(target, stack_trace, nn_module_stack values) of each op of the model's code."""
    ops = (torch.ops.aten.linear.default, torch.ops.aten.mul_.Tensor, torch.ops.aten.add.Tensor)
    return [(n.target, n.meta.get("stack_trace"),
             list((n.meta.get("nn_module_stack") or {}).values()))
            for n in prog.graph.nodes if n.target in ops]


@pytest.mark.parametrize("spec", [None, ({0: Dim("n", max=32)},)], ids=["static", "dim"])
def test_re_exported_program_module_keeps_recorded_metadata(spec) -> None:
    x = torch.randn(5, 4)
    model = Outer()
    first = st.export(model, (x,), dynamic_shapes=spec).to_torch()
    again = {"ours": st.export(first.module(), (x,), dynamic_shapes=spec).to_torch(),
             "torch": torch.export.export(first.module(), (x,), dynamic_shapes=spec)}
    want = _op_meta(first)
    assert any("y *= 2.0" in (trace or "") for _, trace, _ in want)
    assert ("inner.linear", "torch.nn.modules.linear.Linear") in want[0][2]
    for name, prog in again.items():
        assert _op_meta(prog) == want, name
        # one rank check (ours: the first program's is decided while tracing, not copied
        # next to the new one; torch's: the first program's, replayed)
        ranks = [n for n in prog.graph.nodes if n.target is torch.ops.aten.expand.default]
        assert len(ranks) == 1 and ranks[0].args[1] == [-1, -1], prog.graph
        for n in (1, 3, 5) if spec else (5,):
            y = torch.randn(n, 4)
            same(prog.module()(y), model(y))
    with pytest.raises(st.InputMismatchError):
        st.export(first.module(), (x,), dynamic_shapes=spec).module()(torch.randn(5, 4, 1))


def test_make_fx_graph_exports_with_its_recorded_stack_traces() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    model = Outer()
    gm = make_fx(model, record_stack_traces=True)(torch.randn(4, 4))
    for prog in (st.export(gm, (torch.randn(4, 4),)).to_torch(),
                 torch.export.export(gm, (torch.randn(4, 4),))):
        muls = [n for n in prog.run_decompositions({}).graph.nodes
                if n.target is torch.ops.aten.mul.Tensor]
        assert len(muls) == 1 and "y *= 2.0" in muls[0].meta["stack_trace"]
        x = torch.randn(4, 4)
        same(prog.module()(x), model(x))


# -- placeholders keep the example inputs' requires_grad (test_preserve_requires_grad_placeholders)
class AddsParam(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.randn(3))

    def forward(self, x, y):
        return self.p + x + y


def test_placeholders_keep_requires_grad_of_the_examples() -> None:
    args = (torch.randn(3, 3), torch.randn(3, 3, requires_grad=True))
    spec = ({0: Dim("n")}, {0: Dim("n")})
    conv = st.export(AddsParam(), args, dynamic_shapes=spec).to_torch()
    ref = torch.export.export(AddsParam(), args, dynamic_shapes=spec)
    for prog in (conv, conv.run_decompositions(), ref):
        flags = [n.meta["val"].requires_grad for n in prog.graph.nodes if n.op == "placeholder"]
        assert flags == [True, False, True]
        model = AddsParam()
        module = prog.module()
        module.load_state_dict(model.state_dict())
        for n in (2, 3, 7) if prog is ref else (0, 1, 3, 7):  # (torch's: n >= 2)
            x, y = torch.randn(n, 3), torch.randn(n, 3, requires_grad=True)
            same(module(x, y), model(x, y))
        with pytest.raises(Exception):
            module(torch.randn(2, 3), torch.randn(3, 3))


# -- a cond called inside a submodule belongs to that submodule (test_cond_with_module_stack)
class Branches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cond(x.sum() > 4, lambda x: self.linear(x).cos(),
                          lambda x: self.linear(x).sin(), [x])


class CallsBranches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bar = Branches()

    def forward(self, x):
        return x.cos() + self.bar(x)


def test_cond_node_and_its_subgraphs_sit_in_the_calling_module() -> None:
    x = torch.randn(4, 4)
    spec = ({0: Dim("n", max=16)},)
    conv = st.export(CallsBranches(), (x,), dynamic_shapes=spec).to_torch()
    ref = torch.export.export(CallsBranches(), (x,), dynamic_shapes=spec)
    model = CallsBranches()
    for prog in (conv, ref):
        stacks = {n.name: [fqn for fqn, _ in n.meta["nn_module_stack"].values()]
                  for n in prog.graph.nodes if n.name in ("true_graph_0", "false_graph_0",
                                                          "cond", "getitem")}
        assert stacks == {k: ["", "bar"] for k in ("true_graph_0", "false_graph_0", "cond",
                                                   "getitem")}
        flat = torch.export.unflatten(prog)
        flat.load_state_dict(model.state_dict())
        assert any(n.name == "cond" for n in flat.bar.graph.nodes)
        for y in (torch.ones(3, 4), -torch.ones(2, 4), torch.randn(7, 4) * 3):
            same(flat(y), model(y))


# -- a module a container holds twice: each call under the place it ran from --------------
# (torch's test_shared_submodule_nn_module_stack, test_unflatten_shared_submodule)
class SharedInSequential(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        norm = nn.LayerNorm(10)
        self.sub_net = nn.Sequential(norm, nn.ReLU(), norm, nn.ReLU())

    def forward(self, x):
        return self.sub_net(x)


def test_shared_module_in_a_container_named_by_each_place() -> None:
    x = torch.rand(3, 10)
    spec = ({0: Dim("n")},)
    conv = st.export(SharedInSequential(), (x,), dynamic_shapes=spec).to_torch()
    ref = torch.export.export(SharedInSequential(), (x,), dynamic_shapes=spec)
    model = SharedInSequential()
    paths = []
    for prog in (conv, ref):
        paths.append([list(n.meta["nn_module_stack"].values())[-1][0]
                      for n in prog.graph.nodes if n.target is torch.ops.aten.layer_norm.default])
        flat = torch.export.unflatten(prog)
        flat.load_state_dict(model.state_dict())
        for n in (0, 1, 5):
            y = torch.rand(n, 10)
            same(flat(y), model(y))
    assert paths[0] == paths[1] == ["sub_net.0", "sub_net.2"]


def test_shared_module_in_a_container_unflattens_to_one_module() -> None:
    """Both places hold one module after unflatten (torch's test_unflatten_shared_submodule,
    strict: torch.export keys the module's calls by the object, so unflatten shares it)."""
    x = torch.rand(10)
    model = SharedInSequential()
    conv = st.export(model, (x,)).to_torch()
    ref = torch.export.export(model, (x,), strict=True)
    for prog in (conv, ref):
        flat = torch.export.unflatten(prog)
        assert getattr(flat.sub_net, "0") is getattr(flat.sub_net, "2")
        assert getattr(flat.sub_net, "1") is not getattr(flat.sub_net, "3")
        y = torch.rand(10)
        same(flat(y), model(y))


# -- a tensor constant held under two attribute paths (torch's test_constant_aliasing) ------
class HoldsConstant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.foo = torch.full((3,), 0.5)

    def forward(self, x):
        return x + self.foo


class SharesConstant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m2 = HoldsConstant()
        self.foo = self.m2.foo

    def forward(self, x):
        return x * self.foo + self.m2(x)


def test_constant_under_two_paths_listed_under_both() -> None:
    x = torch.randn(4, 3)
    spec = ({0: Dim("n")},)
    conv = st.export(SharesConstant(), (x,), dynamic_shapes=spec).to_torch()
    ref = torch.export.export(SharesConstant(), (x,), dynamic_shapes=spec)
    model = SharesConstant()
    for prog in (conv, ref):
        assert sorted(prog.constants) == ["foo", "m2.foo"]
        assert prog.constants["foo"] is prog.constants["m2.foo"]
        assert len(prog.graph_signature.lifted_tensor_constants) == 1
        for run in (prog.module(), torch.export.unflatten(prog)):
            for n in (0, 1, 5):
                y = torch.randn(n, 3)
                same(run(y), model(y))
            with pytest.raises(Exception):
                run(torch.randn(4, 2))


# -- preserve_module_call_signature naming a second path of a shared module -----------------
# (torch's test_unflatten_multiple_graphs_shared_submodule)
class Step(nn.Module):
    def forward(self, x, up: bool):
        return x + 1 if up else x * 2


class CallsAliases(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n = Step()
        self.p = self.n

    def forward(self, x):
        x = self.n(x + 3, True)
        x = self.n(x + 4, False)
        x = self.p(x + 5, True)
        return self.p(x + 6, False) + 7


@pytest.mark.parametrize("keep", [("n", "p"), ("p",)], ids=["both", "second"])
def test_preserved_signature_under_a_second_path_of_a_shared_module(keep) -> None:
    x = torch.randn(4)
    spec = ({0: Dim("n")},)
    model = CallsAliases()
    ours = st.export(model, (x,), dynamic_shapes=spec, preserve_module_call_signature=keep)
    progs = [ours.to_torch()]
    if keep == ("p",):  # torch's export stops on it (KeyError 'n'); ours runs
        with pytest.raises(KeyError):
            torch.export.export(model, (x,), dynamic_shapes=spec,
                                preserve_module_call_signature=keep)
    else:
        progs.append(torch.export.export(model, (x,), dynamic_shapes=spec,
                                         preserve_module_call_signature=keep))
    for prog in progs:
        for run in (prog.module(), torch.export.unflatten(prog)):
            for n in (2, 5):
                y = torch.randn(n)
                same(run(y), model(y))
    for n in (0, 1, 5):
        y = torch.randn(n)
        same(ours.module()(y), model(y))
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(2, 2))


# -- exporting inside the user's FakeTensorMode (test_trace_under_fake,
# test_export_with_fake_tensor_inputs)
class FakeLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 3)

    def forward(self, x):
        return self.linear(x).relu()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_export_inside_a_fake_tensor_mode(device: str) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    spec = ({0: Dim("n", max=64)},)
    for exporter in ("ours", "torch"):
        mode = FakeTensorMode()
        with mode, torch.device(device):
            x, model = torch.rand(5, 2), FakeLinear()
            if exporter == "ours":
                prog = st.export(model, (x,), dynamic_shapes=spec).to_torch()
            else:
                prog = torch.export.export(model, (x,), dynamic_shapes=spec)
            vals = [n.meta["val"] for n in prog.graph.nodes
                    if isinstance(n.meta.get("val"), torch.Tensor)]
            assert len({id(v.fake_mode) for v in vals}) == 1
            assert all(v.device == x.device for v in vals)
            for run in (prog.module(), prog.run_decompositions().module()):
                for n in (1, 7):
                    y = torch.rand(n, 2)
                    out = run(y)
                    assert out.shape == model(y).shape == (n, 3)
                    assert out.fake_mode is mode
            with pytest.raises(Exception):
                prog.module()(torch.rand(5, 3))
    # static sizes: torch's test reads every node that has a value as a tensor (the
    # conversion's rank check, which returns nothing, has none)
    with FakeTensorMode(), torch.device(device):
        x, model = torch.rand(5, 2), FakeLinear()
        prog = st.export(model, (x,)).to_torch()
        vals = [n.meta["val"] for n in prog.graph.nodes if "val" in n.meta]
        assert all(v.device == x.device and v.fake_mode is vals[0].fake_mode for v in vals)
    # the model and the mode are left as they were: a real model exports as before
    model = FakeLinear()
    got = st.export(model, (torch.rand(5, 2),), dynamic_shapes=spec).to_torch().module()
    y = torch.rand(4, 2)
    same(got(y), model(y))


def test_fake_inputs_given_a_cuda_fake_device_convert_on_any_build() -> None:
    """Fake inputs and state made on meta and given ``fake_device`` cuda (torch's
    test_export_with_fake_tensor_inputs_on_cuda_devices): the conversion's stand-in
    example inputs are fake tensors of that mode where the build holds no CUDA data
    (before: ConversionError "Torch not compiled with CUDA enabled")."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    for exporter in ("ours", "torch"):
        mode = FakeTensorMode()
        with mode, torch.device("meta"):
            x, model = torch.rand(5, 2), FakeLinear()
        x.fake_device = torch.device("cuda:0")
        for p in model.parameters():
            p.fake_device = torch.device("cuda:0")
            p.requires_grad = False
        prog = st.export(model, (x,)).to_torch() if exporter == "ours" else \
            torch.export.export(model, (x,))
        out = prog.module()(x)
        assert out.shape == model(x).shape == (5, 3) and out.device == x.device
        vals = [n.meta["val"] for n in prog.graph.nodes if "val" in n.meta]
        assert all(v.device == x.device and v.fake_mode is vals[0].fake_mode for v in vals)


# -- one value read twice is one size (torch's test_unflatten_asserts) -----------------------
class Below(nn.Module):
    def forward(self, x, y):
        b = x.item()
        torch._check_is_size(b)
        torch._check(b < y.size(0))
        return y[:b]


class BelowTwice(nn.Module):
    def forward(self, x, y):
        b = x.item()  # read again: the check above holds for it too
        torch._check_is_size(b)
        torch._check(b < y.size(0) * 2)
        return y[:b]


class ReadsTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m1, self.m3 = Below(), BelowTwice()

    def forward(self, x, y):
        return self.m1(x, y) + self.m3(x, y)


class ReadWriteRead(nn.Module):
    def forward(self, x, y):
        a = x.item()
        x.add_(1)  # written in place: the next read is a new value
        b = x.item()
        return y[:a].sum() + y[:b].sum()


def test_a_tensor_read_twice_before_a_write_is_one_value() -> None:
    args = (torch.tensor(3), torch.randn(10))
    spec = {"x": None, "y": (Dim("moo", max=64),)}
    ours = st.export(ReadsTwice(), args, dynamic_shapes=spec)
    ref = torch.export.export(ReadsTwice(), args, dynamic_shapes=spec)
    model = ReadsTwice()
    for prog in (ours, ours.to_torch(), ref):
        for k, n in ((3, 10), (0, 4), (1, 2), (7, 8)):
            inp = (torch.tensor(k), torch.randn(n))
            same(prog.module()(*inp), model(*inp))
            if prog is not ours:
                same(torch.export.unflatten(prog)(*inp), model(*inp))
        with pytest.raises(Exception):
            prog.module()(torch.tensor(5), torch.randn(5))  # b < y.size(0) fails
    with pytest.raises(st.RuntimeAssertionError):
        ours.module()(torch.tensor(5), torch.randn(5))
    # a write in between: two values (eager reads 3, then 4)
    rwr = st.export(ReadWriteRead(), (torch.tensor(3), torch.randn(10)))
    for k in (0, 3, 8):
        x1, x2, y = torch.tensor(k), torch.tensor(k), torch.randn(10)
        same(rwr.module()(x1, y), ReadWriteRead()(x2, y))
        same(x1, x2)


# -- an nn.Module passed as an input: its parameters and buffers are inputs (torch's
#    test_module_input) ------------------------------------------------------------------
class ScaledLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.register_buffer("scale", torch.rand(3) + 1)

    def forward(self, x):
        return self.linear(x) * self.scale


class OtherState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))


class CallsItsInput(nn.Module):
    def forward(self, x, m):
        return m(x) + x


def test_module_input_flattens_to_its_parameters_and_buffers() -> None:
    args = (torch.randn(2, 3), ScaledLinear())
    ref = torch.export.export(CallsItsInput(), args)  # (torch takes no spec for it)
    ours = st.export(CallsItsInput(), args, dynamic_shapes=({0: Dim("b")}, None))
    names = ["x", "m_linear_weight", "m_linear_bias", "m_scale"]
    for prog in (ours, ours.to_torch(), ref):
        assert list(prog.graph_signature.user_inputs) == names
        for n in ((0, 1, 4) if prog is not ref else (2,)):
            x, m = torch.randn(n, 3), ScaledLinear()  # another module of the class
            same(prog.module()(x, m), CallsItsInput()(x, m))
    before = {k: v.clone() for k, v in args[1].state_dict().items()}
    ours.module()(torch.randn(2, 3), args[1])
    for k, v in args[1].state_dict().items():
        same(v, before[k])  # the module passed is never changed
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(2, 3), OtherState())  # another structure
    # a module stays a leaf for the user's own pytree code outside an export
    assert torch.utils._pytree.tree_leaves([OtherState()])[0].__class__ is OtherState


# -- a slice whose start and end are both read from data, negative ones included (torch's
#    test_unbacked_slice_forward) ---------------------------------------------------------
class SliceByData(nn.Module):
    def forward(self, x, xs):
        u0, u1 = xs.tolist()
        return x[u0:u1]


@pytest.mark.slow  # (~1.5 s: three programs, several sizes and bounds)
def test_slice_between_two_values_read_from_data_takes_negative_bounds() -> None:
    args = (torch.randn(10), torch.tensor([3, 6]))
    spec = ({0: Dim("n", max=64)}, None)
    ours = st.export(SliceByData(), args, dynamic_shapes=spec)
    ref = torch.export.export(SliceByData(), args, dynamic_shapes=spec)
    bounds = [(3, 6), (-9, -1), (-10000, 10000), (0, -10), (-3, 8)]
    for prog in (ours, ours.to_torch(), ref):
        for n in (0, 10):
            x = torch.randn(n)
            for b in bounds:
                xs = torch.tensor(b)
                same(prog.module()(x, xs), SliceByData()(x, xs))


# -- AdditionalInputs: every example must pass the exported program's checks, and examples
#    that cannot make a spec are a ValueError (torch's test_dynamic_shapes_inferred_basic,
#    test_additional_inputs_constants) ----------------------------------------------------
class FirstThreeTimes(nn.Module):
    def forward(self, x, y, z):
        return (x + y[0])[:3] * z["k"]


def _additional(make, *examples):
    ai = make()
    for e in examples:
        ai.add(e)
    return ai


@pytest.mark.parametrize("make", [pytest.param(st.AdditionalInputs, marks=pytest.mark.slow),
                                  torch.export.AdditionalInputs], ids=["ours", "torch's"])
def test_additional_inputs_are_checked_against_the_program(make) -> None:
    args = (torch.randn(4), [torch.randn(4)], {"k": torch.randn(3)})
    good = (torch.randn(5), [torch.randn(5)], {"k": torch.randn(3)})
    ep = st.export(FirstThreeTimes(), args, dynamic_shapes=_additional(make, good))
    ref = torch.export.export(FirstThreeTimes(), args,
                              dynamic_shapes=_additional(torch.export.AdditionalInputs, good))
    for prog in (ep, ep.to_torch(), ref):
        for n in (3, 4, 9):
            inp = (torch.randn(n), [torch.randn(n)], {"k": torch.randn(3)})
            same(prog.module()(*inp), FirstThreeTimes()(*inp))
    for bad in [(torch.randn(2), [torch.randn(2)], {"k": torch.randn(3)}),   # needs >= 3
                (torch.randn(6), [torch.randn(7)], {"k": torch.randn(3)})]:  # x, y[0] equal
        with pytest.raises(st.InputMismatchError):
            ep.module()(*bad)
        with pytest.raises(RuntimeError):
            torch.export.export(FirstThreeTimes(), args, dynamic_shapes=_additional(
                torch.export.AdditionalInputs, bad))
        with pytest.raises(RuntimeError, match="example 1 is refused"):
            st.export(FirstThreeTimes(), args, dynamic_shapes=_additional(make, bad))


@dataclass
class Mixed:
    b: bool
    i: int
    f: float
    t: torch.Tensor


torch.utils._pytree.register_dataclass(Mixed)


class UsesMixed(nn.Module):
    def forward(self, d: Mixed):
        return d.i + d.f + d.t


def test_additional_inputs_whose_floats_differ_are_a_value_error() -> None:
    first, other = (Mixed(True, 3, 3.0, torch.ones(3)),), (Mixed(True, 3, 4.0, torch.ones(3)),)
    for make in (st.AdditionalInputs, torch.export.AdditionalInputs):
        with pytest.raises(ValueError, match="4.0"):
            st.export(UsesMixed(), first, dynamic_shapes=_additional(make, first, other))
    with pytest.raises(ValueError, match="4.0"):
        torch.export.export(UsesMixed(), first, dynamic_shapes=_additional(
            torch.export.AdditionalInputs, first, other))


# -- a custom op returning several ints: each is read from its own item of the op's result
#    (torch's test_more_multidimensional_slicing; before, the program compared the whole
#    tuple with 0 and raised TypeError when run) --------------------------------------------
@torch.library.custom_op("suite13::indices3d", mutates_args=())
def indices3d(t: torch.Tensor, x: torch.Tensor) -> tuple[int, int, int]:
    return tuple(int(x[i].item()) for i in range(3))


@torch.library.register_fake("suite13::indices3d")
def _indices3d_fake(t, x):
    sizes = tuple(torch.library.get_ctx().new_dynamic_size() for _ in range(3))
    for i, size in enumerate(sizes):
        torch._check(size <= t.shape[i])
    return sizes


class PicksByIndices(nn.Module):
    def forward(self, t, x):
        i, j, k = indices3d(t, x)
        return t[i, j, k], t[:i, None, :j, None, :k], t[None, ..., None, j]


@pytest.mark.slow  # (~1 s)
def test_custom_op_returning_several_ints_reads_each() -> None:
    t = torch.randn(4, 5, 6)
    args = (t, torch.tensor([2, 3, 4]))
    ours = st.export(PicksByIndices(), args)
    ref = torch.export.export(PicksByIndices(), args)
    for prog in (ours, ours.to_torch(), ref):
        for idx in ([2, 3, 4], [0, 0, 0], [3, 4, 5], [1, 2, 0]):
            x = torch.tensor(idx)
            same(prog.module()(t, x), PicksByIndices()(t, x))
    with pytest.raises(st.RuntimeAssertionError):
        ours.module()(t, torch.tensor([4, 0, 0]))  # select's index out of range, as eager


class NestedSubclassState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from torch.testing._internal.custom_tensor import CustomTensorPlainOut as Plain
        self.p1 = nn.Parameter(torch.ones(2, 2))
        self.p2 = nn.Parameter(Plain(Plain(torch.eye(2), torch.rand(2, 2)),
                                     Plain(torch.rand(2, 2), torch.ones(2, 2))))

    def forward(self, x):
        return x + (x + 2 * self.p1 + self.p2).sum().sum()


class CallsItsOneArgInput(nn.Module):
    def forward(self, x, m):
        return m(x)


def test_module_input_holding_a_subclass_parameter_converts() -> None:
    """torch's test_module_input_subclasses_parameterization_nested: the converted program
    runs the subclass input through its own dispatch (no input check node runs it)."""
    args = (torch.randn(2, 2), NestedSubclassState())
    ref = torch.export.export(CallsItsOneArgInput(), args)
    ours = st.export(CallsItsOneArgInput(), args)
    for prog in (ours, ours.to_torch(), ref):
        x, m = torch.randn(2, 2), NestedSubclassState()
        same(prog.module()(x, m), CallsItsOneArgInput()(x, m))


# -- the converted program's input checks add no op a decomposed program's own tests count
# (torch's test_export_decomps_simple / _dynamic: one permute, a Linear's)
class OneLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(10, 1)

    def forward(self, x):
        return self.lin(x)


def test_decomposed_linear_has_torchs_one_permute() -> None:
    x, spec = torch.randn(5, 10), {"x": {0: Dim("batch")}}  # (the static case: the same)
    model = OneLinear()
    ours = st.export(model, (x,), dynamic_shapes=spec)
    for prog in (ours.to_torch(), torch.export.export(model, (x,), dynamic_shapes=spec)):
        core = prog.run_decompositions()
        code = core.graph_module.code
        assert code.count("torch.ops.aten.permute.default") == 1, code
        assert "torch.ops.aten.t.default" not in code
        for n in (5, 1, 3):
            y = torch.randn(n, 10)
            same(core.module()(y), model(y))
    for bad in (torch.randn(5, 10, 1), torch.randn(5, 10, dtype=torch.float64)):
        with pytest.raises(Exception):  # refused still, decomposed too (torch's accepts)
            ours.to_torch().run_decompositions().module()(bad)
    with pytest.raises(st.InputMismatchError):
        ours.module()(torch.randn(5, 10, 1))
