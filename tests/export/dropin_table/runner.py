"""Row types of issue 21's table and the check every row runs.

A program row exports its model with ``st.export`` and ``torch.export.export`` (same
inputs, ``dynamic_shapes`` and options), then runs every program it names — ours
(``ep.module()``), the converted one (``ep.to_torch().module()``), and where the row is
about them torch's tools on the converted program (``run_decompositions``,
``torch.export.save``/``load``, ``unflatten``), applied to torch's own program too — on
the example and the other inputs against eager.  Inputs outside the declared space are
refused by each; ``stricter`` inputs are refused by ours where torch's program runs them
(torch unsound there: the row says why).  A refusal row checks that ours raises an
export error naming the construct and the fix, and what torch.export does with the case.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close


@dataclass(frozen=True)
class Call:
    """The positional and keyword inputs of one call."""

    args: tuple
    kwargs: dict = field(default_factory=dict)


def call(*args: Any, **kwargs: Any) -> Call:
    return Call(args, kwargs)


def as_call(inp: Any) -> Call:
    return inp if isinstance(inp, Call) else Call(tuple(inp))


class Fn(torch.nn.Module):
    """A module around a function of its positional inputs."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


SAME = "same"  # torch.export exports the case; its program's values are compared


@dataclass(frozen=True)
class NoValues:
    """torch.export exports the case but its program cannot be compared (the reason)."""

    why: str


@dataclass(frozen=True)
class Refuses:
    """torch.export refuses the case: its error class and a text of its message."""

    kind: type
    match: str | None = None


@dataclass(frozen=True)
class Stricter:
    """torch.export exports a case ours refuses by design (why torch is unsound there)."""

    why: str


@dataclass(frozen=True)
class Row:
    id: str
    item: str                               # the bullet item the row shows
    model: Callable[[], Any] | None = None
    example: Any = ()                       # a tuple of positional inputs, or a Call
    spec: Any = None                        # dynamic_shapes, given to both exporters
    others: Sequence[Any] = ()              # more inputs, compared with eager
    bad: Sequence[Any] = ()                 # outside the space: every program refuses
    stricter: Sequence[Any] = ()            # ours refuses, torch's program runs them
    #                                         (an input of another rank: torch 2.13's
    #                                         module does not check the rank)
    theirs: Any = SAME                      # SAME, NoValues, Refuses or Stricter
    torch_runs: Callable[[Call], bool] = lambda c: True  # inputs torch's program takes
    paths: tuple = ()                       # "decompose", "unflatten", "torch_save",
    #                     "st_save", "ours_decompose", "unflatten_decomposed"
    options: dict = field(default_factory=dict)  # export options, for both exporters
    seed: bool = False                      # reseed before each run (random ops)
    check: Callable | None = None           # check(ep, ref, tmp_path): more assertions
    refused: tuple | None = None            # ours refuses: (error class, construct, fix)
    custom: Callable | None = None          # the whole check: custom(tmp_path)
    marks: tuple = ()


def same(got: Any, want: Any) -> None:
    """Equal values and structure: named results keep their type, ints stay ints, a
    traceable tensor subclass keeps its class and inner tensors."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), (type(got), type(want))
        if hasattr(type(want), "__tensor_flatten__"):
            assert type(got) is type(want), (type(got), type(want))
            names, _ = want.__tensor_flatten__()
            for n in names:
                same(getattr(got, n), getattr(want, n))
            return
        assert_close(want, got)  # (shape, dtype and values)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), (got, want)
        if type(want) not in (tuple, list):  # torch.return_types, namedtuples
            assert type(got) is type(want), (type(got), type(want))
        else:
            assert type(got) in (tuple, list), type(got)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            same(got[k], want[k])
    else:
        assert got == want and type(got) is type(want), (got, want)


def _run(fn: Callable, inp: Call, seed: bool) -> Any:
    if seed:
        torch.manual_seed(0)
    return fn(*copy.deepcopy(inp.args), **copy.deepcopy(inp.kwargs))


def _tools(prog: Any, paths: tuple, tmp: Path, tag: str) -> dict:
    """torch's tools applied to a torch ExportedProgram: name -> a callable program."""
    out: dict = {}
    if "decompose" in paths:
        out["decompose"] = prog.run_decompositions().module()
    if "unflatten" in paths:
        out["unflatten"] = torch.export.unflatten(prog)
    if "unflatten_decomposed" in paths:
        out["unflatten_decomposed"] = torch.export.unflatten(prog.run_decompositions())
    if "torch_save" in paths:
        torch.export.save(prog, tmp / f"{tag}.pt2")
        out["torch_save"] = torch.export.load(tmp / f"{tag}.pt2").module()
    return out


def export_both(row: Row, model: Any, ex: Call) -> tuple[st.ExportedProgram, Any]:
    ep = st.export(model, ex.args, ex.kwargs, dynamic_shapes=row.spec, **row.options)
    return ep, torch_side(row, model, ex)


def torch_side(row: Row, model: Any, ex: Call) -> Any:
    """torch.export on the same case: its program, or None where the row says it refuses
    (asserted here, with its error class)."""
    if isinstance(row.theirs, Refuses):
        with pytest.raises(row.theirs.kind, match=row.theirs.match):
            torch.export.export(model, ex.args, ex.kwargs, dynamic_shapes=row.spec,
                                **row.options)
        return None
    return torch.export.export(model, ex.args, ex.kwargs, dynamic_shapes=row.spec,
                               **row.options)


def run_row(row: Row, tmp: Path) -> None:
    if row.custom is not None:
        row.custom(tmp)
        return
    model, ex = row.model(), as_call(row.example)
    if row.refused is not None:
        kind, construct, fix = row.refused
        with pytest.raises(kind) as info:
            st.export(model, ex.args, ex.kwargs, dynamic_shapes=row.spec, **row.options)
        assert isinstance(info.value, st.ExportError)
        assert re.search(construct, str(info.value)), str(info.value)
        assert re.search(fix, info.value.fix), info.value.fix
        assert str(info.value).count("got 'ExportedProgram'") == 0
        # torch refuses it too, or exports it where it is unsound (the row says why; its
        # check shows it on torch's program)
        assert isinstance(row.theirs, (Refuses, Stricter)), row.theirs
        ref = torch_side(row, model, ex)
        if row.check is not None:
            row.check(None, ref, tmp)
        return
    ep, ref = export_both(row, model, ex)
    tep = ep.to_torch()
    ours = {"ours": ep.module(), "to_torch": tep.module(), **_tools(tep, row.paths, tmp, "ours")}
    if "st_save" in row.paths:
        st.save(ep, tmp / "ours.st")
        ours["st_save"] = st.load(tmp / "ours.st").module()
    if "ours_decompose" in row.paths:
        ours["ours_decompose"] = ep.run_decompositions().module()
    theirs = {}
    if ref is not None and row.theirs == SAME:
        theirs = {"torch": ref.module(), **_tools(ref, row.paths, tmp, "torch")}
    for inp in [ex, *map(as_call, row.others)]:
        want = _run(model, inp, row.seed)
        for name, prog in ours.items():
            try:
                same(_run(prog, inp, row.seed), want)
            except AssertionError as exc:
                raise AssertionError(f"{name} on {_sizes(inp)}: {exc}") from exc
        if row.torch_runs(inp):
            for name, prog in theirs.items():
                try:
                    same(_run(prog, inp, row.seed), want)
                except AssertionError as exc:
                    raise AssertionError(f"{name} on {_sizes(inp)}: {exc}") from exc
    for inp in map(as_call, row.bad):
        with pytest.raises(st.InputMismatchError):
            _run(ours["ours"], inp, row.seed)
        for name, prog in [*ours.items(), *theirs.items()]:
            if name == "ours":
                continue
            try:
                _run(prog, inp, row.seed)
            except Exception:  # noqa: BLE001 - refused, as it must be (any error class)
                continue
            pytest.fail(f"{name} ran {_sizes(inp)}, outside the declared space")
    for inp in map(as_call, row.stricter):
        with pytest.raises(st.InputMismatchError):
            _run(ours["ours"], inp, row.seed)
        if "torch" in theirs:
            _run(theirs["torch"], inp, row.seed)  # runs: torch's program does not refuse it
    if row.check is not None:
        row.check(ep, ref, tmp)


def _sizes(inp: Call) -> str:
    def one(v: Any) -> str:
        return str(tuple(v.shape)) if isinstance(v, torch.Tensor) else repr(v)
    return ", ".join([one(a) for a in inp.args] + [f"{k}={one(v)}"
                                                   for k, v in inp.kwargs.items()])
