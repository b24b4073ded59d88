"""A size read from data whose range the file declares (``u0`` in ``[2, oo)``) is held to
that range at each call, where the main graph's assertions do not prove it.

The loaded program's metadata names the file's symbol wherever the file records it
(``x[mask]``'s ``[u0]``, ``min(u0, 5)`` rows), and what reads the program as a whole
believes its declared range: ``range_constraints``, ``to_torch()`` and what is compiled
from it, and ``st.save`` of the loaded program, which writes each record simplified under
that range (``[5, 4]`` for ``min(u0, 5)`` rows: the re-saved file then refused the calls
the loaded one ran, hostile probe seeds 3303 and 3351, ``resave differs``).  The graph
itself computes the read from the data, whatever the file says: a file declaring ``u0``
in ``[2**40, 2**41]`` ran at ``u0 = 0``.  So where the loader's bounds of the read it
matched with the file's symbol (``Recorded.match``) are not within the declared range,
the range is a condition on that node's size: proved from all the main graph's
assertions at the end of the evaluation (``Recorded._unproven``: ``torch._check(n >= 2)``
after ``nonzero``), else checked at call after the node (``as_recorded``); where the
bounds show it never holds, the file lies and is refused.

So is a subgraph's read (a ``torch.cond`` branch's ``nonzero``), checked in its graph
after its node (its branch's own assertions are not used to prove it: the check at call
costs one comparison).  Our own files declare each read's range as its exporter proved
it, the checks of the program included; a data split's table writes each read over both
sides (the top graph's read is a size of its own, ``exporter/data_splits.py``;
``saving._table``), so their calls pass.  A declared range of one value is
``read_points``'.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from safetrace.meta import TensorMeta
from safetrace.serialize.codec import new_symbolic
from safetrace.symbolic.canon import and_, ge, le, substitute
from safetrace.symbolic.cases import by_cases
from safetrace.symbolic.expr import TRUE, Expr, to_expr
from safetrace.symbolic.scope import scoped
from safetrace.trace.hops import submodules
from safetrace.trace.proxy import Proxy


def held_to_range(env: Any, rec: Any, name: str, d: Expr, path: list) -> Any:
    """Whether the read ``d`` (the loader's, in ``env``) that the file's symbol ``name``
    (of the record ``rec``) names is within the file's declared range: None (the loader's
    bounds show it, or the file declares none), False (they show it never is), else
    (the condition, where in the node's value, the range) to prove or check at call."""
    file_env = getattr(rec, "env", None)
    rng = file_env.symbol_range(name) if file_env is not None else None
    if rng is None or (rng.lo == -math.inf and rng.hi == math.inf):
        return None
    try:
        b = env.bounds(d)
    except Exception:  # noqa: BLE001 - a question the engine cannot take: any value
        b = None
    if b is not None and rng.lo <= b.lo and b.hi <= rng.hi:
        return None
    if b is not None and (b.hi < rng.lo or b.lo > rng.hi):
        return False
    cond = and_(*(c for c in (ge(d, int(rng.lo)) if rng.lo > -math.inf else None,
                              le(d, int(rng.hi)) if rng.hi < math.inf else None)
                  if c is not None), TRUE)
    return cond, tuple(path), ("in", rng.lo, rng.hi)


def held_at_call(recorded: Any, facts: list) -> list:
    """At the end of the main graph's evaluation: each declared range of a read
    (``Recorded.ranged``) that all of the main graph's assertions (``facts``) do not prove
    is checked at call after its node (``Recorded.at_call``).  Returns ``facts`` with
    those ranges: every run that returns holds them, so what the main graph's nodes record
    is proved under them too (a range ``[0, 1]`` of ``u0``, and a re-saved file's
    ``min(u0, 5)`` rows written ``u0``)."""
    if not recorded.ranged:
        return facts
    with scoped(recorded.env):
        try:
            for fact in facts:
                recorded.env.add_fact(fact)
        except ValueError:
            return facts  # (they never all hold: the graph never returns)
        for node, (cond, path, size), values in recorded.ranged:
            if not _proved(recorded.env, cond):
                recorded.at_call.append((node, [(path, size)], values))
    return facts + [x[1][0] for x in recorded.ranged]


def own_read(recorded: Any, rec: Any, r: Expr, d: Expr, r_in: Expr) -> bool:
    """A subgraph's size read from data (``d``: the branch's own ``nonzero`` count) that
    the file records as a symbol of its own matched outside the subgraph (``r``: the main
    graph's ``.item()``, ``r_in`` its read) where no value the subgraph was given holds it:
    the subgraph reads its own size, whatever its name (a data split of a version before
    session 34 named each branch's read as the top graph's; a file may name any).  Taken
    as a new symbol of the file's (the declared range of ``r``) in this node's record and
    every later one of its graph, matched with ``d`` for the rest of the subgraph's
    evaluation and held to that range at call where the loader's bounds do not show it:
    the loaded program then prints, saves and converts the branch's size as its own (it
    showed the main graph's ``u0`` for a branch's two rows where ``u0`` was 3)."""
    node, values, path = recorded.comparing
    if recorded.in_main or node is None or values is None or d is r_in or \
            not recorded.reads(d):
        return False
    held = set().union(*(size_symbols(v) for v in values.values()))
    file_env = getattr(rec, "env", None)
    if {str(x) for x in r_in.free_symbols} & held or file_env is None:
        return False
    rng = file_env.symbol_range(r.name)
    if rng is not None and rng.lo == rng.hi:
        return False  # (one value: read_points' to settle)
    fresh = file_env.new_unbacked(None if rng is None or rng.lo == -math.inf else int(rng.lo),
                                  None if rng is None or rng.hi == math.inf else int(rng.hi))
    _rename_from(node, r.name, fresh, file_env)
    recorded.match(fresh.name, d)
    recorded.taken.add(d.name)
    at = held_to_range(recorded.env, new_symbolic(fresh, file_env), fresh.name, d, path)
    if at is False:
        return False
    if at is not None:
        recorded.at_call.append((node, [at[1:]], values))
    return True


def _rename_from(node: torch.fx.Node, name: str, new: Expr, env: Any) -> None:
    """Symbol ``name`` as ``new`` in the records of ``node`` and of every later node of
    its graph (their subgraphs' too)."""
    def renamed(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return type(v)(renamed(x) for x in v)
        meta = v.st_meta if isinstance(v, Proxy) else v
        if isinstance(meta, TensorMeta):
            shape = tuple(renamed(x) for x in meta.shape)
            if all(a is b for a, b in zip(shape, meta.shape)):
                return v
            meta = meta.like(shape=shape)
            return Proxy(meta, v.st_node) if isinstance(v, Proxy) else meta
        e = getattr(v, "expr", None)
        if e is None or name not in {str(x) for x in to_expr(e).free_symbols}:
            return v
        return new_symbolic(substitute(to_expr(e), lambda x: new if x.name == name else None),
                            env)

    todo, n = [], node
    while n is not None and n.op != "root":
        if "val" in n.meta:
            n.meta["val"] = renamed(n.meta["val"])
        n = n.next
    todo.extend(sub.graph for sub in submodules(node.graph).values())
    while todo:
        g = todo.pop()
        for m in g.nodes:
            if "val" in m.meta:
                m.meta["val"] = renamed(m.meta["val"])
        todo.extend(sub.graph for sub in submodules(g).values())


def size_symbols(v: Any) -> set:
    """The symbols of the sizes in ``v`` (tensors, sizes, in lists; recorded.py's too)."""
    if isinstance(v, Proxy):
        v = v.st_meta
    if isinstance(v, TensorMeta):
        return set().union(*(size_symbols(s) for s in v.shape))
    if isinstance(v, (list, tuple)):
        return set().union(*(size_symbols(x) for x in v))
    e = getattr(v, "expr", None)
    return set() if e is None else {str(s) for s in to_expr(e).free_symbols}


def _proved(env: Any, cond: Any) -> bool:
    try:
        return env.decide(cond) is True or by_cases(env, cond) is True
    except Exception:  # noqa: BLE001 - a question the engine cannot take
        return False


__all__ = ["held_at_call", "held_to_range", "own_read"]
