"""Rows for the ExportedProgram attributes a switching user reads (issue 21): each one
compared with torch.export's program of the same model in the same test — ``constants``
(keys, order, values, what a module's write leaves there), ``state_dict``,
``named_buffers``/``buffers``, ``named_parameters``/``parameters``, the signature's maps
(``inputs_to_buffers``, ``inputs_to_lifted_tensor_constants``, ``buffers_to_mutate``),
``example_inputs`` and ``range_constraints``; every program also runs against eager on
other sizes (0 and 1 included) and refuses an input outside the declared space."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_table.runner import Row, same

D = torch.export.Dim
R = torch.randn


class Table(nn.Module):
    """A nested submodule: a tensor attribute, a non-persistent and a persistent buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.arange(3.0)
        self.register_buffer("nb", torch.ones(3), persistent=False)
        self.register_buffer("pb", torch.full((3,), 0.5))

    def forward(self, x):
        return x + self.table + self.nb + self.pb


class Holds(nn.Module):
    """Every kind of state torch.export lifts: parameters, a buffer written in place, a
    non-persistent buffer written in place, a tensor attribute, one in a submodule, a
    parameter held in a dict (a constant), two tensors made in ``forward``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.sub = Table()
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("mask", torch.ones(3), persistent=False)
        self.const = torch.tensor([1.0, 2.0, 3.0])
        self.held = {"p": nn.Parameter(torch.full((3,), 0.25))}

    def forward(self, x, scale):
        self.steps.add_(1)
        self.mask.add_(1)
        made = torch.tensor([5.0, 6.0, 7.0])
        return (self.sub(self.lin(x)) * self.mask * scale + self.steps + self.const + made
                + torch.tensor([0.5]) + self.held["p"])


class WritesInPlace(nn.Module):
    """A parameter and the input written in place."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(3), requires_grad=False)

    def forward(self, x):
        self.w.add_(1)
        x.mul_(2)
        return x + self.w


_SPEC = ({0: D("b", max=64)}, None)


def _programs():
    """(ours, torch's) of two fresh models with the same state, and the two models."""
    ours_model, torch_model = Holds(), Holds()
    torch_model.load_state_dict(ours_model.state_dict())
    torch_model.held["p"].data.copy_(ours_model.held["p"])
    x, s = R(4, 3), R(3)
    ep = st.export(ours_model, (x,), {"scale": s}, dynamic_shapes=_SPEC)
    ref = torch.export.export(torch_model, (x,), {"scale": s}, dynamic_shapes=_SPEC)
    return ep, ref, ours_model, torch_model


def _runs(ep, ref) -> None:
    """Both programs against eager (a fresh model per call: the buffers are written) on
    other sizes; ours refuses an input outside the declared space."""
    for n in (0, 1, 5, 64):
        x, s = R(n, 3), R(3)
        eager = Holds()
        eager.load_state_dict(ep.state_dict, strict=False)
        for name, t in ep.constants.items():  # (the program's own state, as it stands)
            if name in ("mask", "const"):
                getattr(eager, name).copy_(t)
        eager.sub.nb.copy_(ep.constants["sub.nb"])
        want = eager(x, scale=s)
        same(ep.module()(x, scale=s), want)
        ref.module()(x, scale=s)  # (torch's: the same writes, so the states stay equal)
    with pytest.raises(st.InputMismatchError):
        ep.module()(R(65, 3), scale=R(3))


def _same_tables(ours: dict, theirs: dict) -> None:
    assert list(ours) == list(theirs)
    for k in ours:
        same(ours[k], theirs[k])


def _constants(tmp: Path) -> None:
    """ep.constants: torch's keys (attribute paths, lifted_tensor_<n>, the non-persistent
    buffers last) in torch's order, torch's values; a read-only tensor attribute is the
    model's own tensor in both; a written non-persistent buffer is the program's (torch's
    aliases the model, which torch's program writes; ours never writes the model)."""
    ep, ref, model, ref_model = _programs()
    assert list(ep.constants) == list(ref.constants) == [
        "lifted_tensor_0", "sub.table", "const", "lifted_tensor_1", "lifted_tensor_2", "mask",
        "sub.nb"]  # (the parameter held in a dict is a lifted_tensor_<n> in both)
    _same_tables(ep.constants, {k: ref.constants[k] for k in ep.constants})
    assert sorted(ep.to_torch().constants) == sorted(ref.constants)
    assert ep.constants["const"] is model.const and ref.constants["const"] is ref_model.const
    assert ep.constants["sub.table"] is model.sub.table
    assert ref.constants["mask"] is ref_model.mask and ep.constants["mask"] is not model.mask
    assert [type(t) for t in ep.constants.values()] == [type(t) for t in ref.constants.values()
                                                         ] == [torch.Tensor] * 7
    _runs(ep, ref)  # the modules' writes: in ep.constants as in torch's
    _same_tables(ep.constants, {k: ref.constants[k] for k in ep.constants})
    assert ep.constants["mask"].tolist() == [5.0] * 3 and model.mask.tolist() == [1.0] * 3
    assert ep.constants["mask"] is ep.to_torch().constants["mask"]
    for prog in (ep, ref):  # torch's other name, and its refusal to replace the table
        assert list(prog.tensor_constants) == list(prog.constants)
        with pytest.raises(RuntimeError, match="Unable to set ExportedProgram's constants"):
            prog.constants = {}


def _state_dict(tmp: Path) -> None:
    """state_dict: the parameters and persistent buffers only, torch's keys and values."""
    ep, ref, _, _ = _programs()
    assert list(ep.state_dict) == list(ref.state_dict) == [
        "lin.weight", "lin.bias", "steps", "sub.pb"]
    _same_tables(ep.state_dict, ref.state_dict)
    _runs(ep, ref)
    _same_tables(ep.state_dict, ref.state_dict)


def _buffers(tmp: Path) -> None:
    """named_buffers / buffers: the non-persistent buffers included, torch's order."""
    ep, ref, _, _ = _programs()
    _runs(ep, ref)
    _same_tables(dict(ep.named_buffers()), dict(ref.named_buffers()))
    assert [n for n, _ in ep.named_buffers()] == ["steps", "mask", "sub.nb", "sub.pb"]
    for a, b in zip(ep.buffers(), ref.buffers(), strict=True):
        same(a, b)


def _parameters(tmp: Path) -> None:
    """named_parameters / parameters: the registered ones (not one held in a dict)."""
    ep, ref, _, _ = _programs()
    _same_tables(dict(ep.named_parameters()), dict(ref.named_parameters()))
    assert [type(p) for p in ep.parameters()] == [type(p) for p in ref.parameters()] == [
        nn.Parameter] * 2
    _runs(ep, ref)


def _signature(tmp: Path) -> None:
    """The signature's maps: inputs_to_parameters / _buffers / _lifted_tensor_constants,
    lifted_tensor_constants, non_persistent_buffers, user_inputs as torch's; no custom
    objects."""
    ep, ref, _, _ = _programs()
    ours, theirs = ep.graph_signature, ref.graph_signature
    for attr in ("inputs_to_parameters", "inputs_to_buffers",
                 "inputs_to_lifted_tensor_constants", "inputs_to_lifted_custom_objs"):
        assert dict(getattr(ours, attr)) == dict(getattr(theirs, attr)), attr
    for attr in ("parameters", "buffers", "non_persistent_buffers", "lifted_tensor_constants",
                 "lifted_custom_objs", "user_inputs"):
        assert list(getattr(ours, attr)) == list(getattr(theirs, attr)), attr
    _runs(ep, ref)


def _buffers_to_mutate(tmp: Path) -> None:
    """buffers_to_mutate: torch 2.13's program keeps the in-place writes in its graph and
    lists none (its run_decompositions lists them, by output); ours lists the written
    buffers (our graph returns them), its to_torch() none, as torch's."""
    ep, ref, _, _ = _programs()
    assert dict(ref.graph_signature.buffers_to_mutate) == {} == dict(
        ep.to_torch().graph_signature.buffers_to_mutate)
    functional = ref.run_decompositions().graph_signature.buffers_to_mutate
    assert sorted(ep.graph_signature.buffers_to_mutate.values()) == sorted(
        functional.values()) == ["mask", "steps"]
    _runs(ep, ref)
    # a parameter and an input written in place: in the graph, listed by neither
    model, x = WritesInPlace(), R(2, 3)
    ours, theirs = (export(model, (x.clone(),), dynamic_shapes=({0: D("n", max=16)},))
                    for export in (st.export, torch.export.export))
    for attr in ("parameters_to_mutate", "user_inputs_to_mutate", "buffers_to_mutate"):
        assert dict(getattr(ours.graph_signature, attr)) == dict(
            getattr(theirs.graph_signature, attr)) == {}, attr
    decomposed = theirs.run_decompositions().graph_signature
    assert list(decomposed.parameters_to_mutate.values()) == ["w"]
    assert list(decomposed.user_inputs_to_mutate.values()) == ["x"]
    for n in (0, 1, 5):
        x, w = R(n, 3), ours.state_dict["w"].detach().clone()  # (the program's)
        want_x, got_x = x.clone(), x.clone()
        want = (want_x * 2 + (w + 1))
        same(ours.module()(got_x), want)
        same(got_x, want_x * 2)  # the input written, as eager writes it
    with pytest.raises(st.InputMismatchError):
        ours.module()(R(17, 3))


def _example_inputs(tmp: Path) -> None:
    """example_inputs: (args, kwargs), the very tensors passed, as torch's."""
    ep, ref, _, _ = _programs()
    (args, kwargs), (targs, tkwargs) = ep.example_inputs, ref.example_inputs
    assert type(args) is type(targs) is tuple and list(kwargs) == list(tkwargs) == ["scale"]
    same(args[0], targs[0])
    same(kwargs["scale"], tkwargs["scale"])
    same(ep.module()(*args, **kwargs), ref.module()(*targs, **tkwargs))
    _runs(ep, ref)


def _range_constraints(tmp: Path) -> None:
    """range_constraints: one symbol per dynamic dim, the symbol the input's size is, with
    torch's range (the names differ: torch's are its own)."""
    ep, ref, _, _ = _programs()

    def by_input(prog) -> dict:
        ph = next(n for n in prog.graph.nodes if n.op == "placeholder" and n.name == "x")
        ranges = {str(k): str(v) for k, v in prog.range_constraints.items()}
        sym = str(ph.meta["val"].shape[0])
        return {"x.0": (sym in ranges, ranges.get(sym))}

    assert len(ep.range_constraints) == len(ref.range_constraints) == 1
    assert by_input(ep) == by_input(ref) == {"x.0": (True, "VR[0, 64]")}
    _runs(ep, ref)


ROWS = [
    Row("attr-constants", "API: ep.constants keyed, ordered and valued as torch's",
        custom=_constants),
    Row("attr-state-dict", "API: ep.state_dict (persistent state only) as torch's",
        custom=_state_dict),
    Row("attr-buffers", "API: named_buffers / buffers as torch's", custom=_buffers),
    Row("attr-parameters", "API: named_parameters / parameters as torch's",
        custom=_parameters),
    Row("attr-signature", "API: the signature's input maps as torch's", custom=_signature),
    Row("attr-buffers-to-mutate", "API: buffers_to_mutate (torch's in-place IR lists none)",
        custom=_buffers_to_mutate),
    Row("attr-example-inputs", "API: example_inputs as torch's", custom=_example_inputs),
    Row("attr-range-constraints", "API: range_constraints as torch's",
        custom=_range_constraints),
]
