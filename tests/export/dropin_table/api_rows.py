"""Rows for the issue's last three bullets: torch's state semantics, inputs bound as torch
binds them, and the API a switching user touches (torch's spec objects, the
ExportedProgram attributes, torch's tools handed our program, ``mod=``)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch
from torch import nn

import safetrace as st
from safetrace.errors import SpecExampleError

from tests.export.dropin_table.runner import Refuses, Row, call, same

D = torch.export.Dim
R = torch.randn


class Counter(nn.Module):
    """One buffer written in place, one reassigned, one only read."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("total", torch.zeros(3))
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x):
        self.count.add_(1)
        self.total = self.total + x.sum(0)
        return x * self.scale + self.count + self.total


def _both(model_of, example: tuple, dim_max: int = 16):
    """(ours, torch's) programs of two fresh models with the same state, and the models."""
    ours_model, torch_model = model_of(), model_of()
    torch_model.load_state_dict(ours_model.state_dict())
    spec = {"x": {0: D("b", min=0, max=dim_max)}}
    return (st.export(ours_model, example, dynamic_shapes=spec),
            torch.export.export(torch_model, example, dynamic_shapes=spec),
            ours_model, torch_model)


def _fresh_module_per_step(tmp: Path) -> None:
    """A fresh ep.module() per step sees the previous step's writes, as in torch (a
    counter reads 2.0 at the second step, not 1.0); our model is never written."""
    xs = [R(n, 3) for n in (4, 0, 1, 5)]
    ep, ref, model, torch_model = _both(Counter, (xs[0],))
    for x in xs:
        same(ep.module()(x), ref.module()(x))
    assert ep.state_dict["count"].item() == ref.state_dict["count"].item() == 4.0
    m, tm = ep.module(), ref.module()
    same(m(xs[0]), tm(xs[0]))
    assert m.count is ep.state_dict["count"]
    assert model.count.item() == 0.0 and torch_model.count.item() == 5.0  # torch's: written
    with pytest.raises(st.InputMismatchError):
        ep.module()(R(17, 3))
    with pytest.raises(Exception):
        ref.module()(R(17, 3))
    assert ep.state_dict["count"].item() == 5.0  # refused before any write


class Core(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 2))
        self.proj = nn.Linear(2, 2)

    def write(self, pos, x):
        self.cache.index_copy_(0, pos, self.proj(x))
        return self.cache.sum(0)

    def read(self, x):
        return x + self.cache.sum(0)


class Prefill(nn.Module):
    def __init__(self, core: Core) -> None:
        super().__init__()
        self.core = core

    def forward(self, pos, x):
        return self.core.write(pos, x)


class Decode(nn.Module):
    def __init__(self, core: Core) -> None:
        super().__init__()
        self.core = core

    def forward(self, x):
        return self.core.read(x)


def _two_methods(tmp: Path) -> None:
    """Two methods of one module exported separately share its buffer: the read sees the
    write, as in torch (a KV cache between prefill and decode)."""
    progs = []
    core = Core()
    for export in (st.export, torch.export.export):
        c = Core()
        c.load_state_dict(core.state_dict())
        n = D("n", min=1, max=8)
        progs.append((export(Prefill(c), (torch.tensor([0, 1, 2]), R(3, 2)),
                             dynamic_shapes={"pos": {0: n}, "x": {0: n}}),
                      export(Decode(c), (R(1, 2),))))
    (w, r), (tw, tr) = progs
    pos, x, y = torch.tensor([3, 4, 5, 6, 7]), R(5, 2), R(1, 2)
    same(w.module()(pos, x), tw.module()(pos, x))
    same(r.module()(y), tr.module()(y))
    assert not torch.equal(r.module()(y), y)  # the read saw the write
    with pytest.raises(st.InputMismatchError):
        w.module()(torch.tensor([0] * 9), R(9, 2))


def _converted_and_loaded(tmp: Path) -> None:
    """to_torch(), st.load and load_state_dict: one program, one state, in every module of
    it, as torch's run_decompositions() and load_state_dict share theirs."""
    x = R(2, 3)
    ep, ref, _, _ = _both(Counter, (x,))
    ep.module()(x)
    ep.to_torch().module()(x)
    ref.module()(x)
    ref.run_decompositions().module()(x)
    assert ep.state_dict["count"].item() == ref.state_dict["count"].item() == 2.0
    st.save(ep, tmp / "p.st")
    loaded = st.load(tmp / "p.st")
    loaded.module()(x)
    loaded.module()(x)
    assert loaded.state_dict["count"].item() == 4.0
    for prog in (ep, ref):
        prog.module().load_state_dict({"count": torch.full((1,), 10.0),
                                       "total": torch.zeros(3), "scale": torch.ones(3)})
    same(ep.module()(x), ref.module()(x))
    assert ep.state_dict["count"].item() == 11.0


class Three(nn.Module):
    def forward(self, x, y=None, z=None):
        return x.sum(0) + 2 * y.sum(0) + 3 * z.sum(0)


def _in3(a: int, b: int, c: int) -> tuple:
    return R(a, 2), R(b, 2), R(c, 2)


def _kw(a: int, b: int, c: int):
    x, y, z = _in3(a, b, c)
    return call(x, z=z, y=y)  # keywords written in another order than the signature's


Inputs = collections.namedtuple("Inputs", "x y z")
_X, _Y, _Z = _in3(3, 4, 5)


def _shapes_collection() -> torch.export.ShapesCollection:
    sc = torch.export.ShapesCollection()
    sc[_X] = {0: D("a", max=16)}
    sc[_Z] = {0: D.AUTO}
    return sc


def _additional() -> torch.export.AdditionalInputs:
    ai = torch.export.AdditionalInputs()
    ai.add(_in3(3, 4, 5))
    ai.add(_in3(6, 4, 8))
    return ai


class Scale(nn.Module):
    def forward(self, x, s):
        return x * s


def _differing_floats() -> torch.export.AdditionalInputs:
    ai = torch.export.AdditionalInputs()
    ai.add((R(3), 2.0))
    ai.add((R(4), 3.0))
    return ai


class WithParams(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("mask", torch.ones(3), persistent=False)
        self.const = torch.tensor([1.0, 2.0, 3.0])  # a constant (not registered)

    def forward(self, x, scale):
        self.steps.add_(1)
        return self.lin(x) * self.mask * scale + self.steps + self.const


def _attributes(tmp: Path) -> None:
    """named_buffers / buffers / named_parameters / parameters / constants /
    example_inputs / module_call_graph: what torch's program gives."""
    x, s = R(2, 3), R(3)
    model = WithParams()
    ep, ref = (export(model, (x,), {"scale": s}) for export in (st.export,
                                                                torch.export.export))
    for attr in ("named_parameters", "named_buffers"):
        assert [n for n, _ in getattr(ep, attr)()] == [n for n, _ in getattr(ref, attr)()]
    assert len(list(ep.parameters())) == len(list(ref.parameters())) == 2
    assert len(list(ep.buffers())) == len(list(ref.buffers())) == 2
    assert len(ep.constants) >= 1 and len(ref.constants) >= 1  # keys: the next row
    (args, kwargs), (targs, tkwargs) = ep.example_inputs, ref.example_inputs
    assert args[0] is x and kwargs["scale"] is s and len(targs) == 1 and set(tkwargs) == {
        "scale"}
    assert [e.fqn for e in ep.module_call_graph] == [e.fqn for e in ref.module_call_graph]
    sig, tsig = ep.module_call_graph[0].signature, ref.module_call_graph[0].signature
    assert (sig.in_spec, sig.out_spec) == (tsig.in_spec, tsig.out_spec)
    same(ep.module()(x, scale=s), ref.module()(x, scale=s))


def _constants_keys(tmp: Path) -> None:
    """ep.constants keyed as torch keys them: by attribute path, with the non-persistent
    buffers (torch 2.13: ['const', 'mask'])."""
    x, s = R(2, 3), R(3)
    ep, ref = (export(WithParams(), (x,), {"scale": s}) for export in (st.export,
                                                                      torch.export.export))
    assert sorted(ep.to_torch().constants) == sorted(ref.constants)  # converted: torch's
    assert list(ep.constants) == list(ref.constants) == ["const", "mask"]


def _torch_apis_on_ours(tmp: Path) -> None:
    """torch.export.save / unflatten handed our program: an export error naming the API
    and the fix ep.to_torch() (never "got 'ExportedProgram'"); the fix works."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    ep = st.export(model, (R(5, 3),), dynamic_shapes=({0: D("b", max=64)},))
    for api, use in (("torch.export.save", lambda p: torch.export.save(p, tmp / "p.pt2")),
                     ("torch.export.unflatten", torch.export.unflatten)):
        with pytest.raises(st.UnsupportedInputError, match=api) as info:
            use(ep)
        assert "ep.to_torch()" in info.value.fix
        assert "got 'ExportedProgram'" not in str(info.value)
        use(ep.to_torch())
    loaded = torch.export.load(tmp / "p.pt2")
    for n in (0, 1, 64):
        x = R(n, 3)
        same(loaded.module()(x), model(x))
        same(torch.export.unflatten(ep.to_torch())(x), model(x))
    with pytest.raises(Exception):
        loaded.module()(R(65, 3))


def _mod_keyword(tmp: Path) -> None:
    x, y, z = _in3(3, 4, 5)
    ep = st.export(mod=Three(), args=(x, y, z))
    ref = torch.export.export(mod=Three(), args=(x, y, z))
    same(ep.module()(x, y, z), ref.module()(x, y, z))
    with pytest.raises(TypeError, match="both model and mod="):
        st.export(Three(), (x, y, z), mod=Three())


def _our_api_handed_torchs(tmp: Path) -> None:
    """st.export / st.save handed torch's program: a ValueError as torch.export raises for
    it, naming the call meant, and no message naming one class twice."""
    theirs = torch.export.export(nn.Linear(3, 2), (R(5, 3),))
    with pytest.raises(ValueError):
        torch.export.export(theirs, (R(5, 3),))
    with pytest.raises(st.UnsupportedInputError) as exported:
        st.export(theirs, (R(5, 3),))
    assert isinstance(exported.value, ValueError) and "ep.module()" in exported.value.fix
    with pytest.raises(st.UnsupportedInputError) as saved:
        st.save(theirs, tmp / "m.st")
    assert "torch.export.save(ep, path)" in saved.value.fix
    for err in (exported.value, saved.value):
        assert "got 'ExportedProgram'" not in str(err)


_A, _C = D("a", max=16), D("c", max=16)
ROWS = [
    Row("state-fresh-module-per-step", "state: a fresh ep.module() per step sees the "
        "previous step's buffer writes", custom=_fresh_module_per_step),
    Row("state-two-methods", "state: two methods exported separately share buffer writes",
        custom=_two_methods),
    Row("state-converted-loaded", "state: to_torch, load_state_dict, loaded programs",
        custom=_converted_and_loaded),
    Row("bind-kwargs-signature-order", "binding: a tuple dynamic_shapes with kwargs "
        "written in another order", Three, _kw(3, 4, 5), ({0: _A}, None, {0: _C}),
        [_kw(6, 4, 7), _kw(1, 4, 1), _kw(0, 4, 16)], [_kw(3, 5, 5), _kw(17, 4, 5)]),
    Row("bind-namedtuple-args", "binding: a namedtuple as args", Three,
        call(*Inputs(*_in3(3, 4, 5))), None, [_in3(3, 4, 5)], [_in3(2, 4, 5)]),
    Row("api-shapes-collection", "API: torch's ShapesCollection and Dim", Three,
        (_X, _Y, _Z), _shapes_collection(), [_in3(1, 4, 1), _in3(16, 4, 9)],
        [_in3(17, 4, 5), _in3(3, 5, 5)]),
    Row("api-additional-inputs", "API: torch's AdditionalInputs", Three, _in3(3, 4, 5),
        _additional(), [_in3(9, 4, 2), _in3(1, 4, 1), _in3(0, 4, 0)], [_in3(3, 5, 5)]),
    Row("api-additional-inputs-refused", "API: AdditionalInputs torch cannot make dynamic",
        Scale, (R(3), 2.0), _differing_floats(),
        refused=(SpecExampleError, "differing values", "."),
        theirs=Refuses(ValueError)),
    Row("api-program-attributes", "API: named_buffers/buffers/named_parameters/parameters/"
        "constants/example_inputs/module_call_graph", custom=_attributes),
    Row("api-constants-keys", "API: ep.constants keyed as torch's", custom=_constants_keys),
    Row("api-torch-tools-on-ours", "API: torch.export.save / unflatten handed our program",
        custom=_torch_apis_on_ours),
    Row("api-mod-keyword", "API: the mod= keyword", custom=_mod_keyword),
    Row("api-messages-one-class", "messages: our API never names the same class twice",
        custom=_our_api_handed_torchs),
]
