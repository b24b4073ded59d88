"""Comparing two exported programs as data: a size split merges sides whose graphs are
the same (exporter/splits.py), and drops a size test's check whose answers all trace the
same graph (exporter/size_tests.py)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from safetrace.exporter.contract import Contract, TensorInput
from safetrace.exporter.program import ExportedProgram
from safetrace.symbolic.canon import subs
from safetrace.symbolic.expr import Expr, const
from safetrace.trace.asserts import assert_sym
from safetrace.trace.hops import submodules
from safetrace.trace.proxy import Proxy

aten = torch.ops.aten
_CONTIGUOUS = aten.contiguous.default
_SIZE_FNS = {aten.sym_size.int, aten.sym_numel.default, aten.sym_stride.int}


def note(graph: torch.fx.Graph, notes: list[str]) -> None:
    """Adds a block of split lines (exporter/split_report.py) unless the graph has it:
    the same side line may repeat in another block (a split nested in two sides)."""
    have = graph.__dict__.setdefault("st_splits", [])
    n = len(notes)
    if notes and not any(have[i:i + n] == notes for i in range(len(have) - n + 1)):
        have.extend(notes)


# -- comparing programs --------------------------------------------------------------------------
def expr_key(v: Any, subst: dict) -> Any:
    """A size or scalar as a canonical Expr (with `subst` applied); None if not one."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return const(v)
    e = getattr(v, "expr", None)
    if not isinstance(e, Expr):
        return None
    env = getattr(v, "env", None)
    if env is not None:
        e = env.simplify(e)
    return subs(e, subst) if subst and e.free_symbols & subst.keys() else e


def meta_key(val: Any, subst: dict) -> Any:
    if isinstance(val, Proxy):
        m = val.st_meta
        return ("t", m.dtype, m.device, tuple(expr_key(d, subst) for d in m.shape))
    if isinstance(val, (tuple, list)):
        return tuple(meta_key(v, subst) for v in val)
    e = expr_key(val, subst)
    return e if e is not None else ("v", type(val).__name__)


def argument_key(a: Any, node_key: Callable[[torch.fx.Node], Any]) -> Any:
    """An op's argument as data: its nodes through `node_key`, ints as constant
    expressions (a size node's key is its expression: equal sizes compare equal), floats
    by their bits."""
    if isinstance(a, torch.fx.Node):
        return node_key(a)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__,) + tuple(argument_key(x, node_key) for x in a)
    if isinstance(a, dict):
        return ("dict",) + tuple((k, argument_key(v, node_key)) for k, v in a.items())
    if isinstance(a, bool) or a is None:
        return ("bool", a)
    if isinstance(a, int):
        return const(a)
    if isinstance(a, float):
        return ("float", a.hex()) if math.isfinite(a) else ("float", repr(a))
    return ("obj", a)


def is_size_fn(node: torch.fx.Node) -> bool:
    """A node that only computes a size from sizes (symnodes.py): compared by its value."""
    t = node.target
    return t in _SIZE_FNS or getattr(t, "__module__", None) in ("_operator", "operator",
                                                               "math", "builtins")


def canonical(graph: torch.fx.Graph, subst: dict,
              skip: Callable[[torch.fx.Node], bool] | None = None,
              made_contiguous: set | None = None) -> tuple:
    """The graph as data: ops with their arguments and output metadata, sizes as
    expressions (`subst` applied), size arithmetic folded into the values it computes;
    nodes `skip` names left out.  With `made_contiguous`, an ``x.contiguous()`` stands for
    `x` itself (its values) and `x`'s key goes into the set (see ``same_program``)."""
    ids: dict = {}
    out: list = []
    for node in graph.nodes:
        if skip is not None and skip(node):
            continue
        if made_contiguous is not None and node.target is _CONTIGUOUS and not node.kwargs \
                and len(node.args) == 1 and node.args[0] in ids:
            ids[node] = ids[node.args[0]]
            made_contiguous.add(ids[node])
            continue
        if node.op == "placeholder":
            ids[node] = ("in", node.name)
        elif node.op == "get_attr":
            sub = submodules(graph).get(node.target)
            ids[node] = ("graph", canonical(sub.graph, subst, skip) if sub is not None
                         else node.target)
        elif node.op == "output":
            out.append(("out", argument_key(node.args, ids.__getitem__)))
        else:
            val = node.meta.get("val")
            e = None if isinstance(val, Proxy) else expr_key(val, subst)
            if node.op == "call_function" and is_size_fn(node) and isinstance(e, Expr):
                ids[node] = e  # compared by value, as a literal size would be
                continue
            ids[node] = ("n", len(out))
            if node.target is assert_sym:  # the check's condition (its text names sizes
                out.append((node.op, node.target, argument_key(node.args[:1], ids.__getitem__)))
                continue  # as each side printed them)
            out.append((node.op, node.target, argument_key(node.args, ids.__getitem__),
                        argument_key(dict(node.kwargs), ids.__getitem__), meta_key(val, subst)))
    return tuple(out)


def contract_key(c: Contract, subst: dict, skip: set[str]) -> tuple:
    inputs = []
    for inp in c.inputs:
        if isinstance(inp, TensorInput):
            dims = []
            for d in inp.dims:
                e = const(d.size) if isinstance(d.size, int) else d.size
                dims.append(subs(e, subst) if subst else e)
            inputs.append((inp.path, inp.dtype, inp.layout is not None, tuple(dims)))
        else:
            inputs.append((inp.path, "const", repr(inp.value)))
    symbols = tuple(sorted((s.name, s.lo, s.hi, s.backed) for s in c.symbols
                           if s.name not in skip))
    return tuple(inputs), symbols


def narrower_ranges(mine: Contract, other: Contract) -> dict | None:
    """{input size symbol: (lo, hi)} where `other`'s range is narrower than `mine`'s (None
    where it is wider, or binds another symbol)."""
    by_name = {x.name: x for x in mine.symbols if x.backed}
    out = {}
    for x in other.symbols:
        if not x.backed:
            continue
        y = by_name.get(x.name)
        if y is None:
            return None
        if (x.lo, x.hi) != (y.lo, y.hi):
            if (x.lo or 0) < (y.lo or 0) or (y.hi is not None and (x.hi is None or
                                                                    x.hi > y.hi)):
                return None
            out[x.name] = (x.lo, x.hi)
    return out


def residual_conditions(c: Contract, subst: dict) -> frozenset | None:
    """The residual conditions with `subst` applied; None when one becomes False."""
    out = set()
    for cond in c.conditions:
        e = subs(cond.cond, subst) if subst else cond.cond
        if e.op == "const":
            if not e.value:
                return None
            continue
        out.add(e)
    return frozenset(out)


def signature_key(ep: ExportedProgram) -> tuple:
    sig = ep.graph_signature
    ins = tuple((s.kind, s.name, s.target, s.leaf) for s in sig.input_specs
                if s.kind != "constant")
    outs = tuple((s.kind, s.target) for s in sig.output_specs)
    return ins, outs, ep.in_spec, ep.out_spec


def same_constants(a: ExportedProgram, b: ExportedProgram) -> bool:
    if a.lifted_constants.keys() != b.lifted_constants.keys():
        return False
    for k, t in a.lifted_constants.items():
        u = b.lifted_constants[k]
        if t.dtype != u.dtype or t.shape != u.shape or not torch.equal(t, u):
            return False
    return True


def same_program(g: ExportedProgram, h: ExportedProgram, subst: dict, skip: set) -> bool:
    """Whether `g`'s graph computes what `h`'s does on `h`'s range (at `subst`), with the
    same input contract there."""
    if signature_key(g) != signature_key(h) or not same_constants(g, h):
        return False
    if contract_key(g.contract, subst, skip) != contract_key(h.contract, {}, skip):
        return False
    cg = residual_conditions(g.contract, subst)
    if cg is None or cg != residual_conditions(h.contract, {}):
        return False
    # `g` (the graph kept) may make contiguous a value `h` does not: at `h`'s sizes `h`
    # found that value contiguous already, where ``contiguous`` returns it as it is (GPT/OPT
    # attention's transpose at seq == 1); every value `h` makes contiguous, `g` must too
    mine: set = set()
    theirs: set = set()
    return canonical(g.graph, subst, made_contiguous=mine) == \
        canonical(h.graph, {}, made_contiguous=theirs) and theirs <= mine
