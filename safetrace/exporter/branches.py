"""Each side's program as a ``torch.cond`` branch: its graph taking every unified input
(and the values a common prefix computed before the cond, ``hoist.py``), returning every
unified output (the buffers any side writes, then the user outputs), with the output
metadata every side agrees on.  Shared by the size splits on declared Dims
(``splits.py``), on sizes read from data (``data_splits.py``) and on relations of input
sizes (``relation_splits.py``)."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch

from safetrace.exporter.compare import expr_key
from safetrace.exporter.hoist import NONE, Prefix, is_size_node, kept_sizes
from safetrace.exporter.program import ExportedProgram, InputSpec, OutputSpec
from safetrace.symbolic import make_int
from safetrace.symbolic.expr import Expr
from safetrace.trace.hops import submodules
from safetrace.trace.proxy import Proxy


@dataclasses.dataclass
class Side:
    """One specialization: the Dim ranges it was traced for, and its program."""

    region: dict[str, tuple[int, float]]   # Dim name -> (lo, hi), inclusive
    ep: ExportedProgram | None  # (None: sizes eager raises at, refused: `refused` says why)
    refused: str = ""


class Unsplittable(Exception):
    """The sides cannot make one program (the original refusal stands)."""


class OutputsDiffer(Unsplittable):
    """Two sides return an output of another dtype or rank: a ``torch.cond``'s branches
    return one of each, so no one program holds both (``detail`` says which output)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def unified_constants(sides: list[Side]) -> tuple[dict, list[dict]]:
    """Every side's lifted constants under one name each (renamed where two differ)."""
    out: dict[str, torch.Tensor] = {}
    names: list[dict] = []
    for s in sides:
        mine = {}
        for name, t in s.ep.lifted_constants.items():
            new = name
            k = 0
            while new in out and not (out[new].dtype == t.dtype and out[new].shape == t.shape
                                      and torch.equal(out[new], t)):
                k += 1
                new = f"{name}_split{k}"
            out[new] = t
            mine[name] = new
        names.append(mine)
    return out, names


def constant_names(ep: ExportedProgram, sides: list[Side], names: list[dict]) -> None:
    """`ep`'s constants (`sides`' unified: ``names``) keep torch.export's names, the
    sides' attribute paths (one renamed as a side's second, ``_split<k>``, with that
    suffix): ``ep.constants``' keys as an export without splits gives them."""
    targets: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for s, renamed in zip(sides, names):
        known = vars(s.ep).get("constant_targets") or {}
        for old, new in renamed.items():
            if old in known and new not in targets:
                targets[new] = known[old] + new[len(old):]
        aliases.update(vars(s.ep).get("constant_aliases") or {})
    ep.constant_targets = targets
    ep.constant_aliases = {a: p for a, p in aliases.items() if p in targets.values()}


def placeholders(g: torch.fx.Graph, inputs: list[InputSpec], metas: dict) -> list:
    phs = []
    for spec in inputs:
        ph = g.placeholder(spec.name)
        ph.meta.update(metas.get(spec.name, {"stack_trace": ""}))
        phs.append(ph)
    return phs


def input_nodes(side: Side, const_names: dict) -> dict[str, torch.fx.Node]:
    """The side's placeholders by their unified input names."""
    phs = {n.name: n for n in side.ep.graph.nodes if n.op == "placeholder"}
    return {(const_names[spec.target] if spec.kind == "constant" else spec.name):
            phs[spec.name] for spec in side.ep.graph_signature.input_specs}


def branch_graph(side: Side, ref: Side, inputs: list[InputSpec], const_names: dict,
            mutated: list[str], prefix: Prefix, index: int) -> torch.fx.Graph:
    """The side's graph taking every unified input (and the prefix's values the
    branches read), returning every unified output; the prefix's ops left out."""
    old = side.ep.graph
    by_name = {}
    for spec in side.ep.graph_signature.input_specs:
        key = const_names[spec.target] if spec.kind == "constant" else spec.name
        by_name[key] = spec.name
    old_phs = {n.name: n for n in old.nodes if n.op == "placeholder"}
    g = torch.fx.Graph()
    metas = {spec.name: dict(old_phs[by_name[spec.name]].meta) for spec in inputs
             if spec.name in by_name}
    ref_phs = {n.name: n for n in ref.ep.graph.nodes if n.op == "placeholder"}
    narrowed = {}  # a point side's input: the operand's (symbolic) meta, narrowed inside
    for spec in inputs:
        theirs = ref_phs.get(spec.name)
        if spec.kind == "user_input" and spec.name in metas and theirs is not None and \
                point_dims(metas[spec.name].get("val"), theirs.meta.get("val")):
            narrowed[spec.name] = metas[spec.name]["val"]
            metas[spec.name] = dict(theirs.meta)
    phs = placeholders(g, inputs, metas)
    extra = extra_placeholders(g, prefix)
    val_map = {old_phs[by_name[spec.name]]: narrow(g, ph, narrowed[spec.name])
               if spec.name in narrowed else ph
               for spec, ph in zip(inputs, phs) if spec.name in by_name}
    if prefix:
        outs = _copy_rest(g, old, prefix.matched[index], dict(zip(prefix.extras, extra)),
                          val_map)
    else:
        outs = g.graph_copy(old, val_map)
    outs = outs if isinstance(outs, tuple) else (outs,)
    specs = side.ep.graph_signature.output_specs
    written = {o.target: v for o, v in zip(specs, outs) if o.kind == "buffer_mutation"}
    buf_ph = {spec.target: ph for spec, ph in zip(inputs, phs) if spec.kind == "buffer"}
    user = [v for o, v in zip(specs, outs) if o.kind == "user_output"]
    g.output(tuple(written.get(t, buf_ph.get(t)) for t in mutated) + tuple(user))
    subs_ = submodules(old)
    if subs_:
        g.__dict__["st_submodules"] = dict(subs_)
    return g


def cond_outputs(g: torch.fx.Graph, node: torch.fx.Node, inputs: list[InputSpec],
                 phs: list, mutated: list, vals: list) -> None:
    """The program's output from its ``cond`` node: an item per written buffer (its
    placeholder's value) and per output value in `vals`, in that order."""
    buf_val = {spec.target: ph.meta.get("val") for spec, ph in zip(inputs, phs)
               if spec.kind == "buffer"}
    items = []
    for i, val in enumerate([buf_val.get(t) for t in mutated] + vals):
        item = g.call_function(operator.getitem, (node, i))
        item.meta.update(val=val, stack_trace="")
        items.append(item)
    node.meta["val"] = tuple(it.meta["val"] for it in items)
    g.output(tuple(items))


def extra_placeholders(g: torch.fx.Graph, prefix: Prefix) -> list[torch.fx.Node]:
    """A branch's placeholders for the prefix's values (the reference side's metadata)."""
    out = []
    for e in prefix.extras:
        ph = g.placeholder(e.name)
        ph.meta.update(val=e.meta.get("val"), stack_trace="")
        out.append(ph)
    return out


def _copy_rest(g: torch.fx.Graph, old: torch.fx.Graph, matched: dict, extra: dict,
               val_map: dict) -> Any:
    """`old` less the prefix's ops into `g`: a matched node reads the branch's operand for
    the reference's node (narrowed to a point side's sizes, as inputs are)."""
    for mine, theirs in matched.items():
        ph = extra.get(theirs)
        if ph is None:
            continue
        val = mine.meta.get("val")
        val_map[mine] = narrow(g, ph, val) if point_dims(val, ph.meta.get("val")) else ph
    sizes = kept_sizes(old, matched)
    for n in old.nodes:
        if n.op == "placeholder" or n in matched or (is_size_node(n) and n not in sizes):
            continue
        if n.op == "output":
            return torch.fx.node.map_arg(n.args[0], val_map.__getitem__)
        val_map[n] = g.node_copy(n, val_map.__getitem__)
    raise Unsplittable("a side's graph without an output")


def point_dims(mine: Any, theirs: Any) -> list[tuple[int, int]]:
    """(dim, size) where this side's input has a plain size and the operand a symbol."""
    if not isinstance(mine, Proxy) or not isinstance(theirs, Proxy):
        return []
    return [(d, a) for d, (a, b) in enumerate(zip(mine.st_meta.shape, theirs.st_meta.shape))
            if isinstance(a, int) and not isinstance(b, int)]


def narrow(g: torch.fx.Graph, ph: torch.fx.Node, mine: Proxy) -> torch.fx.Node:
    """`ph` sliced to the point side's sizes (``x[:, :1]`` where seq == 1): the same tensor
    where the branch runs, and a branch that torch's cond traces with the operands'
    symbolic sizes then sees the sizes it was traced for."""
    node, shape = ph, list(ph.meta["val"].st_meta.shape)
    for d, size in point_dims(mine, ph.meta["val"]):
        node = g.call_function(torch.ops.aten.slice.Tensor, (node, d, 0, size))
        shape[d] = size
        node.meta["val"] = Proxy(mine.st_meta.like(shape=tuple(shape)), node)
        node.meta["stack_trace"] = ""
    return node


def env_of(graph: torch.fx.Graph) -> Any:
    for n in graph.nodes:
        val = n.meta.get("val")
        for d in (val.st_meta.shape if isinstance(val, Proxy) else (val,)):
            if getattr(d, "env", None) is not None:
                return d.env
    return None


def _user_vals(ep: ExportedProgram) -> list:
    out = next(n for n in reversed(ep.graph.nodes) if n.op == "output").args[0]
    return [v.meta.get("val") if isinstance(v, torch.fx.Node) else v
            for o, v in zip(ep.graph_signature.output_specs, out) if o.kind == "user_output"]


def _typed(meta: Any) -> str:
    """``a bool tensor of 4 dims``: an output's dtype and rank, as a refusal names them."""
    name = str(meta.dtype).removeprefix("torch.")
    n = len(meta.shape)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} tensor of {n} dim{'s' * (n != 1)}"


def output_vals(sides: list[Side], ref: Side, syms: dict, env: Any,
                keep: frozenset = frozenset()) -> list:
    """The outputs' metadata every side agrees on (the reference's, where each side's
    sizes are the reference's at its point); a size they disagree on is a fresh
    data-dependent size, as torch.cond's outputs get.  Sides returning another dtype or
    rank cannot be one torch.cond.

    A size naming a symbol of the sides' own (``u0`` of a ``nonzero`` inside a branch; not
    an input size nor one of `keep`, sizes the graph holding the cond reads) is a size the
    cond's output defines: kept where an earlier output size is that symbol alone (each
    side returns ``[u0]`` and ``[u0 + 5]`` of its own ``u0``), else fresh too.  Alone,
    ``4*u0`` would name in the top graph a symbol that only a branch defines (``st.load``
    refused the file, fuzz seed 3406)."""
    vals = _user_vals(ref.ep)
    fresh: dict[tuple[int, int], Any] = {}

    def new(k: int, d: int, lo: int | None) -> None:
        if (k, d) not in fresh:
            fresh[k, d] = make_int(env.new_unbacked(lo=lo, origin="a size split output"),
                                   env)

    for s in sides:
        subst = point_subst(s, syms)
        for k, (mine, theirs) in enumerate(zip(vals, _user_vals(s.ep))):
            if isinstance(mine, Proxy) != isinstance(theirs, Proxy):
                raise Unsplittable(f"output {k} differs in kind between the sides")
            if not isinstance(mine, Proxy):
                if _differ(mine, theirs, subst):
                    new(k, -1, None)
                continue
            a, b = mine.st_meta, theirs.st_meta
            if a.dtype != b.dtype or len(a.shape) != len(b.shape):
                raise OutputsDiffer(f"output {k} is {_typed(a)} on one side and {_typed(b)} "
                                    f"on the other")
            for d, (x, y) in enumerate(zip(a.shape, b.shape)):
                if _differ(x, y, subst):
                    new(k, d, 0)
    known = {x.name for s in sides for x in s.ep.contract.symbols if x.backed} | set(keep)
    for k, v in enumerate(vals):  # (in the order the cond's outputs are read)
        sizes = [(d, x) for d, x in enumerate(v.st_meta.shape)] \
            if isinstance(v, Proxy) else [(-1, v)]
        for d, x in sizes:
            if (k, d) not in fresh and not _defined(x, known):
                new(k, d, 0 if d >= 0 else None)
    out = []
    for k, v in enumerate(vals):
        if (k, -1) in fresh:
            v = fresh[k, -1]
        elif isinstance(v, Proxy) and any((k, d) in fresh for d in range(len(v.st_meta.shape))):
            m = v.st_meta
            shape = tuple(fresh.get((k, d), x) for d, x in enumerate(m.shape))
            v = Proxy(type(m)(shape, m.dtype, m.device), v.st_node)
        out.append(v)
    return out


def _defined(v: Any, known: set) -> bool:
    """Whether size `v` names only `known` symbols, or is one other symbol alone (which
    it then defines: added to `known`)."""
    e = expr_key(v, {})
    if not isinstance(e, Expr):
        return True
    names = {str(x) for x in e.free_symbols}
    if names <= known:
        return True
    if e.op == "sym":
        known.add(e.name)
        return True
    return False


def _differ(mine: Any, theirs: Any, subst: dict) -> bool:
    """Whether the reference's size `mine` at a side's point (`subst`) is not the side's
    `theirs`; so where the reference's form is undefined there (``ceil(s1/ceil(s1/2))`` of
    ``x.chunk(2, 1)`` at s1 == 0 divides by zero): the cond's size is then a fresh one."""
    try:
        return expr_key(mine, subst) != expr_key(theirs, {})
    except ZeroDivisionError:
        return True


def point_subst(side: Side, syms: dict) -> dict:
    return {syms[d]: lo for d, (lo, hi) in side.region.items() if lo == hi}


def both_sides(ep: ExportedProgram, sides: list[Side]) -> tuple:
    """(constants, each side's constant names, inputs, outputs, written buffers, each
    side's branch graph, placeholder metadata) of one program running either of two
    complete exports as a cond's branches (``data_splits.py``, ``relation_splits.py``):
    `ep`'s inputs and the sides' unified constants, the buffers any side writes then
    `ep`'s user outputs."""
    consts, const_names = unified_constants(sides)
    inputs = [dataclasses.replace(spec) for spec in ep.graph_signature.input_specs
              if spec.kind != "constant"]
    inputs += [InputSpec("constant", name, name, None, True) for name in consts]
    mutated = list(dict.fromkeys(o.target for s in sides
                                 for o in s.ep.graph_signature.output_specs
                                 if o.kind == "buffer_mutation"))
    n_user = sum(1 for o in ep.graph_signature.output_specs if o.kind == "user_output")
    outputs = [OutputSpec("buffer_mutation", t) for t in mutated]
    outputs += [OutputSpec("user_output", None) for _ in range(n_user)]
    branches = [branch_graph(s, sides[0], inputs, const_names[k], mutated, NONE, k)
                for k, s in enumerate(sides)]
    metas = {n.name: dict(n.meta) for n in ep.graph.nodes
             if n.op == "placeholder" and n.name not in consts}
    for b in branches:  # (a unified constant: the metadata of a branch that reads it)
        for n in b.nodes:
            if n.op == "placeholder" and "val" not in metas.get(n.name, ()):
                metas[n.name] = dict(n.meta)
    return consts, const_names, inputs, outputs, mutated, branches, metas
