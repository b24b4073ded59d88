"""The guards torch's ``module()`` of a converted program checks first: each tensor input's
dtype and each specialized constant's type, named by the input (``Guard failed:
x.dtype == torch.int32``).

The graph's ``_assert_tensor_metadata`` checks a dtype too, but its message names no input,
and it stays where torch drops these (``run_decompositions``, re-export, a saved file).
torch's own guard compares a constant by ``==`` only (3.0 == 3, 0 == False), hence the type.
The guards are held in the program object (torch.export.save drops them).  They are a
function of the contract and the input structure: made once per pair, kept on the contract.

torch's ExportedProgram computes ``_guards_code`` in its constructor from the graph's
ShapeEnv, so the program its ``run_decompositions`` builds would drop ours: a derived dim
or relation checked only here would no longer be checked (``-1 + 2*z == y`` after
``run_decompositions({})``: torch's keeps it on its placeholders' sizes).  ``with_guards``
adds them to the converted program and to every program its ``run_decompositions`` returns
(the same inputs, the same sources).
"""

from __future__ import annotations

from typing import Any

import types

import torch
from torch.utils import _pytree

from safetrace.exporter.contract import ConstInput, TensorInput
from safetrace.interop.hierarchy import arg_names, sizes_held_through_decomposition
from safetrace.interop.quoted_guards import with_quoted_module
from safetrace.interop.relation_guards import relation_guards
from safetrace.interop.retrace_pins import general_forms, guard_count, guard_pins, oblivious
from safetrace.interop.retrace_refusals import refuse_cond_from_ours
from safetrace.interop.subclass_values import refuse_decomposed_boundaries


def input_guards(ep: Any, tep: Any) -> list[str]:
    """The guard texts of `ep`'s inputs, `tep` its conversion (its stand-in examples have
    the structure torch's guards read)."""
    made = ep.contract.derived("torch input guards", lambda c: [])
    for spec, guards in made:
        if spec is ep.in_spec:
            return list(guards)
    guards = _guards(ep, tep)
    made.append((ep.in_spec, tuple(guards)))
    return guards


def _guards(ep: Any, tep: Any) -> list[str]:
    inputs = ep.contract.inputs
    if not inputs:
        return []
    args, kwargs = tep.example_inputs
    ctx = dict(zip(arg_names(ep), args))
    ctx.update(kwargs)
    if any(isinstance(v, torch.nn.Module) for v in _pytree.tree_leaves(
            ctx, is_leaf=lambda v: isinstance(v, torch.nn.Module))):
        return []  # (a module given as an input: torch's guards see it as one leaf)
    leaves = _pytree.tree_leaves_with_path(ctx)
    if len(leaves) != len(inputs):
        return []
    out = []
    for (path, leaf), inp in zip(leaves, inputs):
        if isinstance(inp, TensorInput) and not (inp.scalar or inp.subclass) and \
                type(leaf) is torch.Tensor:
            out.append(f"L{_pytree.keystr(path)}.dtype == {inp.dtype}")
        elif isinstance(inp, ConstInput) and inp.value is None:
            # torch's guard leaves a None input unchecked (a tensor passed there runs the
            # branch traced for None): ours refuses anything but None
            out.append(f"L{_pytree.keystr(path)} is None or "
                       f"torch._guards.TracingContext.try_get() is not None")
        elif isinstance(inp, ConstInput) and type(inp.value) in (int, float, bool, str):
            # while torch traces the program (run_decompositions, re-export) the value is
            # torch's stand-in (a symbol, or 0/1 for a bool): the check is for calls
            out.append(f"type(L{_pytree.keystr(path)}) is {type(inp.value).__name__} or "
                       f"torch._guards.TracingContext.try_get() is not None")
    return out + relation_guards(ep.contract, leaves, ctx,
                                 bool(getattr(ep, "defers_checks", False)))


def with_guards(tep: Any, guards: list[str], quoted: bool = False) -> None:
    """`guards` appended to torch program `tep`'s ``_guards_code``, and to that of each
    program its ``run_decompositions`` makes (torch's constructor recomputes the list);
    `quoted`: an input path holds a double quote, and these programs' ``module()`` writes
    its guard code escaped (``quoted_guards``)."""
    tep._guards_code.extend(g for g in guards if g not in tep._guards_code)
    tep._st_guards = guards  # (a copy's method is bound to `tep`: rebind(copy) reads them)
    if quoted:
        tep._st_quoted = True
        with_quoted_module(tep)

    def run_decompositions(self: Any, *args: Any, **kwargs: Any) -> Any:
        refuse_decomposed_boundaries(self)
        since = guard_count(self)
        try:
            with sizes_held_through_decomposition(self) as restore, oblivious():
                args, kwargs = general_forms(args, kwargs)
                out = type(self).run_decompositions(self, *args, **kwargs)
                restore(out)
        except Exception as exc:
            # a cond whose value the conversion made from ours: torch's cond stopped on it
            # (GuardOnDataDependentSymNode): the catalogue's refusal instead of torch's error
            refuse_cond_from_ours(self, "run_decompositions", exc)
            raise
        if "_st_names" in vars(self):
            out._st_names = self._st_names
        # (the sizes torch's retrace pinned at the example: checked, or refused)
        with_guards(out, guards + guard_pins(self, out, since), quoted)
        return out

    tep.run_decompositions = types.MethodType(run_decompositions, tep)


def rebind(tep: Any) -> None:
    """`tep`, a shallow copy of a program `with_guards` gave guards (its class changed),
    with its ``run_decompositions`` bound to itself: the copied one ran the original's."""
    if "run_decompositions" in vars(tep):
        with_guards(tep, tep._st_guards, vars(tep).get("_st_quoted", False))
