"""``torch.export.unflatten(ep.to_torch())``: the submodule tree comes back, runs as eager
does and rejects what ``ep.module()`` rejects; ``preserve_module_call_signature`` keeps a
submodule's call signature (torch.export's for the same model) so it can be swapped."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

from benchmarks.zoo import by_name, fast_entries

FAST = fast_entries()


def _convert(ep: st.ExportedProgram):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch()


def _submodules(m: torch.nn.Module) -> set[str]:
    return {n for n, _ in m.named_modules() if n}


@pytest.mark.parametrize("entry", FAST, ids=[e.name for e in FAST])
def test_unflatten_rebuilds_the_tree_of_every_fast_zoo_model(entry):
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        tree = torch.export.unflatten(_convert(ep))
        assert _submodules(tree) == _submodules(case.model)
        for args, kwargs in [(case.args, case.kwargs)] + case.others:
            got = tree(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            assert_close(got, case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        if case.outside is not None:
            args, kwargs = case.outside
            with pytest.raises(Exception):  # noqa: B017 - torch's words or ours
                tree(*args, **kwargs)


def test_nodes_recorded_without_a_module_keep_their_call_whole():
    """getitem of a multi-output op (split) and size nodes have no module of their own;
    they must not cut their module's call in two (GPT-2's attention did)."""

    class Attn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = torch.nn.Linear(8, 24)

        def forward(self, x):
            q, k, v = self.qkv(x).split(8, dim=-1)
            return (q * k).view(x.shape[0], -1, 8) + v

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList([Attn(), Attn()])

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x

    model = Net().eval()
    ep = st.export(model, (torch.randn(3, 5, 8),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=1, max=16), 1: st.Dim("t")}})
    linears = [n for n in ep.graph.nodes if "linear" in str(n.target)]
    assert [list(n.meta["nn_module_stack"].values())[-1][0] for n in linears] == \
        ["blocks.0.qkv", "blocks.1.qkv"]
    tree = torch.export.unflatten(_convert(ep))
    assert _submodules(tree) == _submodules(model)
    for shape in [(1, 1, 8), (4, 7, 8)]:
        x = torch.randn(shape)
        assert_close(tree(x), model(x))


# -- preserve_module_call_signature -----------------------------------------------------------
class Block(torch.nn.Module):
    def __init__(self, reshape: bool) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.reshape = reshape

    def forward(self, x, scale=2.0):
        y = self.lin(x)
        if self.reshape:  # a size of the input read inside the module
            y = y.reshape(x.shape[0], 2, 4).sum(-1).repeat(1, 4)
        return torch.tanh(y) * scale


class Net(torch.nn.Module):
    def __init__(self, reshape: bool = False) -> None:
        super().__init__()
        self.l0 = torch.nn.Linear(8, 8)
        self.layer1 = Block(reshape)
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(self.layer1(torch.relu(self.l0(x))))


SPEC = {"x": {0: st.Dim("b", min=1, max=64)}}


def _torch_spec():
    return {"x": {0: torch.export.Dim("b", min=1, max=64)}}


def _swap_and_check(tree, model, name="layer1"):
    replacement = copy.deepcopy(getattr(model, name))
    setattr(tree, name, replacement)
    for b in (1, 3, 9):
        x = torch.randn(b, 8)
        assert_close(tree(x), model(x))


def test_preserved_signature_is_torch_exports():
    model = Net().eval()
    x = torch.randn(5, 8)
    ep = st.export(model, (x,), dynamic_shapes=SPEC,
                   preserve_module_call_signature=("layer1",))
    tep = _convert(ep)
    tep.validate()
    ref = torch.export.export(model, (x,), dynamic_shapes=_torch_spec(),
                              preserve_module_call_signature=("layer1",))
    ours = {e.fqn: e.signature for e in tep.module_call_graph}
    theirs = {e.fqn: e.signature for e in ref.module_call_graph}
    assert list(ours) == list(theirs)  # every submodule, in the model's order
    assert [f for f, s in ours.items() if s is not None] == ["", "layer1"]
    sig, want = ours["layer1"], theirs["layer1"]
    assert sig.in_spec == want.in_spec and sig.out_spec == want.out_spec
    assert [type(a) for a in sig.inputs] == [type(a) for a in want.inputs]
    assert [type(a) for a in sig.outputs] == [type(a) for a in want.outputs]
    names = {n.name for n in tep.graph.nodes}
    assert all(a.name in names for a in sig.inputs + sig.outputs)
    tree = torch.export.unflatten(tep)
    assert _submodules(tree) == _submodules(model)
    _swap_and_check(tree, model)
    _swap_and_check(torch.export.unflatten(ref), model)  # torch's own, the same way


def test_preserved_module_that_reads_its_input_size_can_be_swapped():
    """Our size nodes read the program's inputs; inside a preserved module they are
    read again from the module's own input, so its signature is its whole interface."""
    model = Net(reshape=True).eval()
    ep = st.export(model, (torch.randn(5, 8),), dynamic_shapes=SPEC,
                   preserve_module_call_signature=("layer1",))
    tree = torch.export.unflatten(_convert(ep))
    inner = tree.layer1.graph
    assert [n.name for n in inner.nodes if n.op == "placeholder"] == ["_positional_arg_0"]
    for b in (1, 4):
        x = torch.randn(b, 8)
        assert_close(tree(x), model(x))
    _swap_and_check(tree, model)
    with pytest.raises(Exception, match="<= 64"):
        tree(torch.randn(65, 8))


def test_every_call_of_a_preserved_module_keeps_its_own_signature():
    class Twice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer1 = Block(reshape=True)

        def forward(self, x):
            return self.layer1(x) + self.layer1(x * 2, scale=3.0)

    model = Twice().eval()
    ep = st.export(model, (torch.randn(5, 8),), dynamic_shapes=SPEC,
                   preserve_module_call_signature=("layer1",))
    tep = _convert(ep)
    sigs = {e.fqn: e.signature for e in tep.module_call_graph}
    assert sigs["layer1"].in_spec != sigs["layer1@1"].in_spec  # the keyword `scale`
    assert [type(a).__name__ for a in sigs["layer1@1"].inputs] == ["TensorArgument",
                                                                   "ConstantArgument"]
    tree = torch.export.unflatten(tep)
    for b in (1, 6):
        x = torch.randn(b, 8)
        assert_close(tree(x), model(x))
    _swap_and_check(tree, model)


def test_preserve_names_are_checked():
    model = Net().eval()
    x = torch.randn(5, 8)
    with pytest.raises(st.UnsupportedInputError, match="'layer9'.*not a submodule"):
        st.export(model, (x,), preserve_module_call_signature=("layer9",))
    with pytest.raises(st.UnsupportedInputError, match="function, not an nn.Module"):
        st.export(lambda x: x + 1, (x,), preserve_module_call_signature=("layer1",))

    class Skips(Net):
        def forward(self, x):
            return self.l2(self.l0(x))

    # a preserved module the forward never calls keeps no signature, as in torch.export
    skips = Skips().eval()
    ep = st.export(skips, (x,), preserve_module_call_signature=("layer1",)).to_torch()
    ref = torch.export.export(skips, (x,), preserve_module_call_signature=("layer1",))
    for prog in (ep, ref):
        entry = [e for e in prog.module_call_graph if e.fqn == "layer1"]
        assert len(entry) == 1 and entry[0].signature is None
        assert_close(torch.export.unflatten(prog)(x), skips(x))
    assert not skips.layer1._forward_hooks and not skips.layer1._forward_pre_hooks


def test_a_value_crossing_a_preserved_boundary_is_refused_with_the_module_named():
    class Leaky(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            self.saved = self.lin(x)  # read by the parent: not an output
            return torch.relu(self.saved)

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer1 = Leaky()

        def forward(self, x):
            y = self.layer1(x)
            return y + self.layer1.saved

    model = Outer().eval()
    x = torch.randn(3, 8)
    ep = st.export(model, (x,), preserve_module_call_signature=("layer1",))
    assert_close(ep.module()(x), model(x))
    with pytest.raises(st.ConversionError, match="preserved module 'layer1'.*not one of "
                                                 "its outputs"):
        ep.to_torch()
    plain = st.export(model, (x,))  # without preserving, unflatten wires it through
    tree = torch.export.unflatten(_convert(plain))
    assert_close(tree(x), model(x))


@pytest.mark.parametrize("rnn", [torch.nn.GRU, torch.nn.RNN])
def test_recurrent_ops_keep_the_sequence_dim_dynamic(rnn):
    """torch's fake GRU/RNN kernels loop over time steps and would pin the sequence length
    (unflatten's input checks and compilers read those sizes): ours are used instead."""

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = rnn(4, 6, batch_first=True)
            self.out = torch.nn.Linear(6, 3)

        def forward(self, x):
            return self.out(self.rnn(x)[0])

    model = Tagger().eval()
    spec = {"x": {0: st.Dim("b", min=1, max=8), 1: st.Dim("t", min=1, max=32)}}
    ep = st.export(model, (torch.randn(2, 5, 4),), dynamic_shapes=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error", st.ConversionWarning)  # nothing assumed
        tep = ep.to_torch()
    x_val = [n for n in tep.graph.nodes if n.op == "placeholder"][-1].meta["val"]
    assert all(isinstance(d, torch.SymInt) for d in x_val.shape[:2])
    tree = torch.export.unflatten(tep)
    for shape in [(1, 1, 4), (3, 9, 4)]:
        x = torch.randn(shape)
        with torch.no_grad():
            assert_close(tree(x), model(x))
            assert_close(tep.module()(x), model(x))


class _SizeAndDouble(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.shape[0]


class _ReturnsASize(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _SizeAndDouble()

    def forward(self, x):
        y, n = self.inner(x + 1)
        return y + n, n


class _ReturnsASizeUnderNoGrad(_ReturnsASize):
    def forward(self, x):
        with torch.no_grad():  # (a grad region: torch's pass rebuilds the graph)
            x = x * 3
        y, n = self.inner(x + 1)
        return y + n, n


@pytest.mark.parametrize("make", [_ReturnsASize, _ReturnsASizeUnderNoGrad])
def test_preserved_module_returning_its_input_size_unflattens(make):
    """A preserved module returning ``x.shape[0]``: our size node read the program's input
    outside the module, and unflatten stopped at 'Could not find output node
    sym_size_int_1' (issue 21 audit).  The size is read again inside the module and the
    caller reads the module's output; torch's run_decompositions (whose retrace hoists
    the size onto the input) still accepts the program.  (torch.export refuses to export
    this model: a size output of a preserved call.)"""
    model = make()
    ep = st.export(model, (torch.randn(3),), dynamic_shapes=({0: torch.export.Dim("b")},),
                   preserve_module_call_signature=("inner",))
    tep = _convert(ep)
    tree = torch.export.unflatten(tep)
    assert any(n.target is torch.ops.aten.sym_size.int for n in tree.inner.graph.nodes)
    out = [n for n in tep.graph.nodes if n.op == "output"][0].args[0]
    assert [s.arg.name for s in tep.graph_signature.output_specs] == [a.name for a in out]
    decomposed = tep.run_decompositions()
    names = {n.name for n in decomposed.graph.nodes}
    inner = {e.fqn: e for e in decomposed.module_call_graph}["inner"].signature
    assert all(a.name in names for a in inner.outputs)
    for b in (0, 1, 5):
        x = torch.randn(b)
        want = model(x)
        for got in (tree(x), tep.module()(x), ep.module()(x), decomposed.module()(x)):
            assert_close(got[0], want[0])
            assert got[1] == want[1]
    with pytest.raises(Exception):
        tree(torch.randn(2, 2))


@pytest.mark.parametrize("make", [_ReturnsASize, _ReturnsASizeUnderNoGrad])
def test_decomposed_program_with_a_preserved_size_output_unflattens(make):
    """``torch.export.unflatten(ep.to_torch().run_decompositions())``: torch's retrace
    reads the returned size from the program's input, before the preserved call, and
    unflatten stopped at 'Could not find output node sym_size_int_1' (session 38).  The
    size is read again inside the call and the nodes after it read the call's output."""
    model = make()
    ep = st.export(model, (torch.randn(3),), dynamic_shapes=({0: torch.export.Dim("b")},),
                   preserve_module_call_signature=("inner",))
    decomposed = _convert(ep).run_decompositions()
    for program in (decomposed, decomposed.run_decompositions()):
        tree = torch.export.unflatten(program)
        # (the call reads its own input only: it can be swapped)
        assert len([n for n in tree.inner.graph.nodes if n.op == "placeholder"]) == 1
        for b in (0, 1, 2, 5, 9):
            x = torch.randn(b)
            want = model(x)
            for got in (tree(x), program.module()(x)):
                assert_close(got[0], want[0])
                assert got[1] == want[1]
        with pytest.raises(Exception):
            tree(torch.randn(2, 2))   # another rank: out of the declared space
        with pytest.raises(Exception):
            program.module()(torch.randn(2, 2))


class _SizeOfAProduct(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1) * 2, x.shape[0] * x.shape[1]


class _ReturnsAProductSize(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _SizeOfAProduct()

    def forward(self, x):
        y, n = self.inner(x + 1)
        return y + n, n


def test_decomposed_program_with_a_derived_size_output_unflattens_or_is_refused():
    # (a size that no input dim of the call holds: read inside, or the catalogue's error)
    model = _ReturnsAProductSize()
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes=({0: torch.export.Dim("b"), 1: torch.export.Dim("c")},),
                   preserve_module_call_signature=("inner",))
    try:
        decomposed = _convert(ep).run_decompositions()
    except st.ConversionError as e:
        assert "preserved module 'inner'" in str(e), e
        return
    tree = torch.export.unflatten(decomposed)
    assert len([n for n in tree.inner.graph.nodes if n.op == "placeholder"]) == 1
    for shape in ((0, 3), (1, 1), (2, 5), (4, 0)):
        x = torch.randn(*shape)
        got, want = tree(x), model(x)
        assert_close(got[0], want[0])
        assert got[1] == want[1]


class _SubWithConstants(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.foo = torch.ones(3)  # (a plain tensor attribute: a lifted constant, c_foo)

    def forward(self, x):
        return x + self.foo + torch.tensor([1.0, 2.0, 3.0])  # (and one made in forward)


class _ConstantsInAndOut(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sub = _SubWithConstants()
        self.foo = torch.ones(3) * 2

    def forward(self, x):
        return self.sub(x) * self.foo + torch.tensor(5.0)


@pytest.mark.parametrize("preserve", [(), ("sub",)])
def test_constants_of_a_preserved_call_survive_torchs_tools_as_torchs(preserve):
    """Tensor constants read inside and outside a (preserved) submodule: torch's
    run_decompositions, ``.module()`` and unflatten of the converted program (issue 21:
    "Output c_foo does not exist", a lifted constant passed to the call as an extra
    argument) run as on torch.export's own program of the model."""
    model, spec = _ConstantsInAndOut(), ({0: torch.export.Dim("b")},)
    ref = torch.export.export(model, (torch.randn(2, 3),), dynamic_shapes=spec,
                              preserve_module_call_signature=preserve)
    tep = _convert(st.export(model, (torch.randn(2, 3),), dynamic_shapes=spec,
                             preserve_module_call_signature=preserve))
    for prog in (tep, ref):
        decomposed = prog.run_decompositions()
        runs = (prog.module(), decomposed.module(), torch.export.unflatten(prog),
                torch.export.unflatten(decomposed))
        for b in (0, 1, 4):
            x = torch.randn(b, 3)
            for run in runs:
                assert_close(run(x), model(x))
        with pytest.raises(Exception):
            runs[0](torch.randn(2, 4))
    if preserve:
        sig = {e.fqn: e.signature for e in tep.module_call_graph}["sub"]
        want = {e.fqn: e.signature for e in ref.module_call_graph}["sub"]
        assert len(sig.inputs) == len(want.inputs) == 1
