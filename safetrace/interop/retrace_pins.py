"""Sizes torch's retrace of a converted program pins to their example value.

``ep.to_torch()``'s symbols take the export example's sizes as their hints, 1 included
(safetrace exports a Dim(min=1) at an example of 1; torch.export specializes such a size).
torch's retrace (``run_decompositions``, hence ExecuTorch and torch.onnx's own path) runs
its meta kernels at those hints, and some of them guard on a size being 1 (``expand``'s
``broadcast_in_dim``: ``guard_or_false(a.shape[i] == 1)``, a view's strides): the guard
replaces the symbol by 1 in the shared ShapeEnv, the decomposed graph bakes 1 in
(``view(x, [1, -1])`` for ``x.reshape(x.shape[0] * x.shape[1], -1)``) and drops the guard,
so other sizes got a wrong result or torch's internal error (``Sizes of tensors must
match``; test_cond_merge's merge_pins_no_size: 2.14 off at (2, 1, 4)); an example of 2 on
the `<= 2` side of a size split pinned the size to 2 and kept ``cond(True, ...)``.

After each retrace (``input_guards.with_guards`` wraps ``run_decompositions``) the input
symbols torch replaced by a number, or whose range it narrowed, are found here: the
decomposed program then checks those sizes first (a guard of its ``module()``: it refuses
the inputs where it would be wrong) and a ``ConversionWarning`` says so.  The deploy
helpers refuse instead (``refuse_pins``): st.to_onnx where its retrace pinned a size to one
value (written into the model as a number), st.to_executorch where ExecuTorch's passes then
stopped (a pinned size the .pte keeps is checked by it: ``executorch.specialized``)."""

from __future__ import annotations

import warnings
from typing import Any

import sympy
import torch
from torch.utils import _pytree

from safetrace.errors import ConversionWarning
from safetrace.errors import interop as EI
from safetrace.interop.hops import shape_env_of
from safetrace.interop.lazy import value_ranges


def oblivious() -> Any:
    """Around torch's retrace of a converted program: torch's ``backed_size_oblivious``
    (what torch.onnx's own capture sets), under which ``guard_or_false`` / ``guard_or_true``
    (contiguity, broadcast, a size split's branch slice) take their general answer instead
    of deciding a size at the example.  (Patching ``guard_or_*`` alone, the config left
    off, kept more guards and crashed more at size 0 on fuzz seed 3701: 67 over-rejections
    and 11 crashes against 50 and 0.)"""
    return torch.fx.experimental._config.patch(backed_size_oblivious=True)


def general_forms(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of torch's ``run_decompositions`` with, where the caller gave no
    table, torch's default one and a Python form of the composite operators whose C++
    kernel reads a symbolic size as an int (``take_along_dim``'s broadcast, ``max_pool1d``'s
    output length: the size was pinned to the example's value)."""
    if args or kwargs.get("decomp_table") is not None:
        return args, kwargs
    from torch.export import default_decompositions

    table = default_decompositions()
    table[torch.ops.aten.take_along_dim.default] = _take_along_dim
    table[torch.ops.aten.max_pool1d.default] = _max_pool1d
    return (), {**kwargs, "decomp_table": table}


def _take_along_dim(a: Any, indices: Any, dim: Any = None) -> Any:
    """``take_along_dim`` as torch's reference writes it (``torch._refs``), broadcast with
    ``expand`` (the reference's ``prims.broadcast_in_dim`` returns an alias, which torch's
    functionalization refuses)."""
    from torch._refs import _broadcast_shapes

    gather = torch.ops.aten.gather.default
    if dim is None:
        return gather(a.reshape(-1), 0, indices.reshape(-1))
    dim = dim % max(a.dim(), 1)
    sizes = list(a.shape)
    sizes[dim] = indices.shape[dim]
    idx = indices.expand(_broadcast_shapes(sizes, list(indices.shape)))
    sizes = list(indices.shape)
    sizes[dim] = a.shape[dim]
    src = a.expand(_broadcast_shapes(sizes, list(a.shape)))
    return gather(src, dim, idx % src.shape[dim])


def _max_pool1d(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """``max_pool1d`` as a 2-d pool of height 1 (as ATen's composite computes it)."""
    def one(v: Any) -> Any:
        return v[0] if isinstance(v, (list, tuple)) else v

    k = one(kernel_size)
    s = one(stride) if stride not in ((), []) else k
    out = torch.ops.aten.max_pool2d_with_indices.default(
        x.unsqueeze(-2), [1, k], [1, s], [0, one(padding)], [1, one(dilation)], ceil_mode)[0]
    return out.squeeze(-2)


def leaf_paths(names: list[str], tep: Any) -> list[str] | None:
    """Each user input leaf's guard path (``L['x']``), in placeholder order; None where the
    structure is not one torch's guards name that way."""
    examples = tep.example_inputs
    if not examples or len(names) < len(examples[0]):
        return None  # (then a pin is refused rather than checked: guard_pins)
    args, kwargs = examples
    ctx = dict(zip(names, args))
    ctx.update(kwargs)
    return [f"L{_pytree.keystr(p)}" for p, _ in _pytree.tree_leaves_with_path(ctx)]


def input_sizes(tep: Any) -> list[tuple[int, int, Any]]:
    """(user input index, dim, torch's raw symbol) of each symbolic input size."""
    user = set(tep.graph_signature.user_inputs)
    out, k = [], 0
    for node in tep.graph.nodes:
        if node.op != "placeholder" or node.name not in user:
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            for d, s in enumerate(val.shape):
                # (the raw symbol: ``node.expr`` applies the ShapeEnv's replacements)
                raw = getattr(s.node, "_expr", None) if isinstance(s, torch.SymInt) else None
                if raw is not None and raw.is_symbol:
                    out.append((k, d, raw))
        k += 1
    return out


def input_ints(tep: Any) -> list[tuple[int, Any]]:
    """(user input index, torch's raw symbol) of each symbolic int input."""
    user = set(tep.graph_signature.user_inputs)
    out, k = [], 0
    for node in tep.graph.nodes:
        if node.op != "placeholder" or node.name not in user:
            continue
        val = node.meta.get("val")
        raw = getattr(val.node, "_expr", None) if isinstance(val, torch.SymInt) else None
        if raw is not None and raw.is_symbol:
            out.append((k, raw))
        k += 1
    return out


def _env(tep: Any) -> Any:
    return shape_env_of([n.meta.get("val") for n in tep.graph.find_nodes(op="placeholder")])


def guard_count(tep: Any) -> int:
    """How many guards `tep`'s ShapeEnv holds (before a retrace: ``new_guards``' start)."""
    env = _env(tep)
    return len(env.guards) if env is not None else 0


def new_guards(tep: Any, since: int) -> list[Any]:
    """The guards torch's retrace added to `tep`'s ShapeEnv after the first `since` that
    the declared ranges do not imply (sizes 0 and 1 set apart, as ``pins`` does): a
    decision its meta kernels or decompositions took on the example's sizes and baked into
    the graph (``roll`` of a slice empty at the example: ``Eq(s0//2 - 1, 0)``, kept as a
    ``clone``), which holds nowhere else (never a replacement of a symbol by a number, nor
    a range narrowed: ``pins`` does not see it)."""
    ValueRanges, bound_sympy = value_ranges().ValueRanges, value_ranges().bound_sympy
    env = _env(tep)
    if env is None or len(env.guards) <= since:
        return []
    ranges = {s: ValueRanges(sympy.Max(r.lower, sympy.Min(2, r.upper)), r.upper)
              for s, r in tep.range_constraints.items()}
    # (a symbol of no declared size is one torch's retrace made for an int / float / bool
    # input the program specialized, and checks by value: its guards hold at that value)
    known = {s for k in tep.range_constraints for s in getattr(k, "free_symbols", ())}
    known.update(s for _, _, s in input_sizes(tep))
    out = []
    for g in env.guards[since:]:
        expr = g.expr
        fixed = {s: env.var_to_val[s] for s in expr.free_symbols - known
                 if s in env.var_to_val}
        if fixed:
            expr = expr.xreplace(fixed)
            if expr is sympy.true:
                continue
        if _general(expr):
            continue
        if _implied(expr, ranges, bound_sympy):
            continue  # (true over the declared space: no decision)
        if expr not in out:
            out.append(expr)
    return out


def _implied(expr: Any, ranges: dict, bound_sympy: Any) -> bool:
    """Whether guard `expr` holds at every size of `ranges`: bounded true as it is, or a
    ``Ne(l, r)`` whose difference factors into terms none of which can be 0 there
    (``Ne(a*b, a)``, b's retrace decision at the example, is ``a*(b - 1) != 0``)."""
    try:
        held = bound_sympy(expr, ranges)
        if held.lower == held.upper and bool(held.lower):
            return True
        if not isinstance(expr, sympy.Ne):
            return False
        diff = sympy.factor(expr.args[0] - expr.args[1])
        terms = diff.args if isinstance(diff, sympy.Mul) else (diff,)
        for t in terms:
            r = bound_sympy(t, ranges)
            if not (r.lower > 0 or r.upper < 0):
                return False
        return True
    except Exception:  # noqa: BLE001 - not bounded: checked at call time
        return False


def _general(expr: Any) -> bool:
    """Whether guard `expr` only says that a size expression is not 0 or 1 (``Ne(e, 1)``,
    ``e >= 2``: a contiguity or broadcast check of torch's kernels that took the general
    path at the example), which torch's size-oblivious kernels take for 0 and 1 too; its
    special path (``Eq(e, 0)``: ``roll`` of an empty tensor made a ``clone``) is checked."""
    rel = type(expr)
    if rel not in (sympy.Ne, sympy.Ge, sympy.Gt):
        return False
    lhs, rhs = expr.args
    if not (rhs.is_number and lhs.free_symbols):
        return False
    # (not a size's 0: under backed_size_oblivious the retrace asks its contiguity and
    # broadcast questions without a guard, so `Ne(e, 0)` is a decision of a kernel with a
    # path of its own at 0, logsumexp's `numel() == 0`, whose general path fails there)
    return {sympy.Ne: (1,), sympy.Ge: (2,), sympy.Gt: (1,)}[rel].count(rhs) > 0


def pins(tep: Any) -> list[tuple[int, int, Any, Any, Any]]:
    """(input, dim, symbol, lo, hi) of each input size whose range in `tep`'s ShapeEnv is
    now narrower than the program's declared one (lo == hi: pinned to that value), other
    than by excluding 0 and 1 only."""
    sizes = input_sizes(tep)
    if not sizes:
        return []
    env = _env(tep)
    out = []
    for k, d, s in sizes:
        declared = tep.range_constraints.get(s)
        if declared is None:
            continue
        now = env.replacements.get(s) if env is not None else None
        if now is not None and getattr(now, "is_number", False):
            lo = hi = int(now)
        else:
            r = env.var_to_range.get(s) if env is not None else None
            if r is None:
                continue
            lo, hi = r.lower, r.upper
        lo, hi = max(lo, declared.lower), min(hi, declared.upper)
        if lo == hi and declared.lower != declared.upper or hi != declared.upper or \
                lo > max(declared.lower, 2):
            # (a range raised to 2 only is torch's own assumption that a size is not 0 or
            # 1, which its programs make too, written generically: not counted here)
            out.append((k, d, s, lo, hi))
    return out


def refuse_pins(tep: Any, tool: str, exc: BaseException | None = None,
                exact: bool = False) -> None:
    """Raise where a retrace (`tool`'s lowering, its passes that run torch's meta kernels
    again, or an earlier ``run_decompositions``) pinned one of `tep`'s input sizes in the
    ShapeEnv its programs share; `exact`: only a size pinned to one value (torch.onnx keeps
    a cond on a size whose range its trace narrowed to the example's side as an ``If``)."""
    found = [p for p in pins(tep) if not exact or p[3] == p[4]]
    if found:
        raise EI.retrace_pins(_told(tep, found), tool) from exc


def _told(tep: Any, found: list) -> str:
    labels = tep.graph_module.meta.get("safetrace_dim_labels") or {}
    return ", ".join(f"{labels.get(str(s), str(s))} to {_range(lo, hi)}"
                     for _, _, s, lo, hi in found)


def guard_pins(tep: Any, out: Any, since: int = 0) -> list[str]:
    """After `out = tep.run_decompositions(...)`, `since` the ShapeEnv's guard count before
    it: the guards that make `out.module()` refuse the sizes torch's retrace pinned, or
    where a decision it took on them (``new_guards``) fails."""
    found, exprs = pins(tep), new_guards(tep, since)
    if not found and not exprs:
        return []
    told = ", ".join(filter(None, [_told(tep, found), _told_exprs(tep, exprs)]))
    names = vars(tep).get("_st_names")  # (the paths made here, not in every conversion)
    paths = leaf_paths(names, tep) if names is not None else None
    if paths is None or any(k >= len(paths) for k, *_ in found):  # (no path to check
        # them by: refused, never a silent narrowing)
        raise EI.retrace_pins(told, "run_decompositions")
    guards = _expr_guards(tep, exprs, paths, told)
    for k, d, _, lo, hi in found:
        size = f"{paths[k]}.size()[{d}]"
        if lo == hi:
            guards.append(f"{size} == {int(lo)}")
            continue
        if lo > -int(1e18):
            guards.append(f"{size} >= {int(lo)}")
        if hi < int(1e18):
            guards.append(f"{size} <= {int(hi)}")
    ints = {s for _, s in input_ints(tep)}
    if not found and all(e.free_symbols <= ints for e in exprs):  # (on int inputs only)
        warnings.warn(f"run_decompositions: torch's retrace took {told} on an int "
                      f"input's value (as torch.export's own program of the model does): "
                      f"the decomposed program refuses the other values",
                      ConversionWarning, stacklevel=4)
        return guards
    warnings.warn(f"run_decompositions: torch's retrace specialized {told} (its meta kernels "
                  f"ran at the export example's sizes and guarded on them, a guard torch "
                  f"drops): the decomposed program refuses other sizes there. Export with "
                  f"an example size other than 0 or 1 on that Dim to keep it dynamic",
                  ConversionWarning, stacklevel=4)
    return guards


def _told_exprs(tep: Any, exprs: list) -> str:
    if not exprs:
        return ""
    labels = dict(tep.graph_module.meta.get("safetrace_dim_labels") or {})
    user = [n for n in tep.graph_signature.user_inputs]
    labels.update({str(s): user[k] for k, s in input_ints(tep) if k < len(user)})
    names = {s: sympy.Symbol(labels.get(str(s), str(s))) for e in exprs for s in e.free_symbols}
    more = f" and {len(exprs) - 3} more" if len(exprs) > 3 else ""
    return "the decision" + "s" * (len(exprs) > 1) + " " + ", ".join(
        f"`{e.xreplace(names)}`" for e in exprs[:3]) + more


def _expr_guards(tep: Any, exprs: list, paths: list[str], told: str) -> list[str]:
    """Each of `exprs` as guard code on the input sizes (``L['x'].size()[0]``); refused
    where a symbol is no input's size (a derived Dim's root: no path to check it by)."""
    from torch.utils._sympy.printers import PythonPrinter

    where = {}
    for k, d, s in input_sizes(tep):
        if k < len(paths):
            where.setdefault(s, sympy.Symbol(f"{paths[k]}.size()[{d}]", integer=True))
    ints = {s: sympy.Symbol(paths[k], integer=True) for k, s in input_ints(tep)
            if k < len(paths)}  # (a dynamic int input: its guard path is the int itself)
    env = _env(tep)
    raised = {s for s, r in tep.range_constraints.items() if env is not None and
              s in env.var_to_range and env.var_to_range[s].lower >= 2 > r.lower}
    out = []
    for e in exprs:
        if not e.free_symbols <= where.keys() | ints.keys():
            raise EI.retrace_pins(told, "run_decompositions")
        code = PythonPrinter().doprint(e.xreplace({**where, **ints}))
        if e.free_symbols & ints.keys():  # (an int: no size's 0 and 1 to set apart)
            out.append(code)
            continue
        # (checked where each of its sizes is 2 or more: torch's retrace assumes no size
        # is 0 or 1 as torch.export's programs do, and ``pins`` leaves that too)
        # (only the sizes whose range the retrace raised to 2: under backed_size_oblivious
        # a size it did not assume >= 2 keeps its 0 and 1 in the guard, e.g. `c` of
        # `Eq(c*(n//2 - 1), 0)`, roll's empty slice, which holds at c = 1 only as written)
        small = sorted(PythonPrinter().doprint(where[s]) for s in e.free_symbols
                       if s in raised)
        if not small:
            out.append(code)
            continue
        small = small[0] if len(small) == 1 else f"min({', '.join(small)})"
        out.append(f"{small} < 2 or {code}")
    return out


def _range(lo: Any, hi: Any) -> str:
    return str(int(lo)) if lo == hi else f"[{lo}, {hi}]"

