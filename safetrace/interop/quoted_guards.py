"""``module()`` of a converted program whose input path holds a double quote.

torch's ``ExportedProgram.module()`` writes its input guards as Python source
(``torch.export._unlift._convert_guards_code_to_fn``): each check is
``torch._assert(args[0].size()[0] == 3, "Guard failed: d['k'].size()[0] == 3")``, the
input's path copied between double quotes as it is.  A dict key holding ``"``
(``{'a"b': x}``) ends that literal early, and ``module()`` fails with a SyntaxError in
torch's generated code, torch's own programs of the same model included (torch 2.13:
``torch.export.export`` accepts the key, its ``module()`` does not).

A converted program with such a key gets a ``module`` of its own (bound to the program,
as ``input_guards.with_guards`` binds ``run_decompositions``): torch's unlifting, run as
it is but for that one helper, replaced by `_guards_fn`, which writes the same checks
with the same messages (the path as the user writes it, torch's normalization of the
text) as Python literals.  Programs without such a key keep torch's ``module`` untouched.
"""

from __future__ import annotations

import ast
import functools
import math
import types
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.interop.rebind import rebound


def quoted_paths(ep: Any) -> bool:
    """Whether a path of `ep`'s inputs, as torch writes it (``L['d']['a"b']``), holds a
    double quote (made once per contract and input structure)."""
    made = ep.contract.derived("quoted input paths", lambda c: [])
    for spec, found in made:
        if spec is ep.in_spec:
            return found
    leaves = _pytree.tree_leaves_with_path(_pytree.tree_unflatten(
        [None] * ep.in_spec.num_leaves, ep.in_spec), is_leaf=lambda v: v is None)
    found = any('"' in _pytree.keystr(path) for path, _ in leaves)
    made.append((ep.in_spec, found))
    return found


def with_quoted_module(tep: Any) -> None:
    """`tep`'s ``module`` as torch's, its guard code written by `_guards_fn`."""
    tep.module = types.MethodType(_module, tep)


def _module(self: Any, check_guards: bool = True) -> torch.fx.GraphModule:
    unlift = _unlift()
    if unlift is None:  # (torch's unlifting changed: its own module(), as for torch's)
        return type(self).module(self, check_guards=check_guards)
    module = unlift(self, check_guards=check_guards)
    # (as torch's module(): the unlifted module is neither trained nor switched to eval)
    module.train = types.MethodType(_no_train, module)
    module.eval = types.MethodType(_no_eval, module)
    return module


def _no_train(self: Any, mode: bool = True) -> None:
    raise NotImplementedError("Calling train() is not supported yet.")


def _no_eval(self: Any, mode: bool = True) -> None:
    raise NotImplementedError("Calling eval() is not supported yet.")


@functools.cache
def _unlift() -> Any:
    """torch's ``_unlift_exported_program_lifted_states`` writing its guard code with
    `_guards_fn` (None where that function no longer calls the helper by name)."""
    import torch.export._unlift as unlift

    return rebound(unlift._unlift_exported_program_lifted_states,
                   {"_convert_guards_code_to_fn": _guards_fn})


def _guards_fn(guards_code: list[str], paths: list) -> Any:
    """torch's guard module for `guards_code` over the placeholders' `paths`: each guard
    a ``torch._assert`` of the guard with every input's path read as ``args[i]``, its
    message ``Guard failed: `` and the guard with each path written from the argument's
    name, here a Python string literal of any text."""
    import torch.export._unlift as unlift
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

    lines = ["def _(*args):"]
    for code in guards_code:
        actual, shown = code, code
        for i, path in enumerate(paths):
            source = "L" + _pytree.keystr(path)
            actual = actual.replace(source, f"args[{i}]")
            shown = shown.replace(source, path[0].key + _pytree.keystr(path[1:]))
        shown = ast.unparse(ast.parse(shown.replace("\n", ""), mode="eval"))
        lines.append(f"  torch._assert({actual}, {'Guard failed: ' + shown!r})")
    lines.append("  return")
    namespace = {**SYMPY_INTERP, "math": math, "inf": float("inf")}
    exec("\n".join(lines) + "\n", namespace)  # noqa: S102 - torch's own way, escaped
    fn = unlift.GuardsFn()
    fn.forward = torch._dynamo.dont_skip_tracing(namespace["_"])
    fn._is_impure = True  # (a call with no users: kept by dead-code elimination)
    return fn
