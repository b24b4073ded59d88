"""What the file records of a node the loader cannot work out, checked at each call.

A mixin of ``memory.StaticMemory``: a node whose result its evaluation cannot work out
(operands it does not know: after a custom op's number; an op without a rule: a custom op
over sizes that vary, a kernel that sizes by data) keeps the file's record, which what
reads the program's metadata believes (``print(ep)``, ``to_torch()``): its sizes are
checked in its graph before its first use (``inline``, ``requirements.py``), its dtype
and rank right after it (``dtype_checks``, ``record_checks.py``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.errors.load import bad_file
from safetrace.meta import TensorMeta
from safetrace.serialize.codec import new_symbolic
from safetrace.symbolic import and_, eq, ge, le, to_expr
from safetrace.symbolic.expr import TRUE, dag_nodes

_CPU = torch.device("cpu")
# nodes of the recorded sizes one load checks at call because it could neither prove nor
# refute them (``records_at_call``; a file of ours has a few, where its split sides knew
# more): each call evaluates them
RECORDS_AT_CALL = 1 << 14
# sizes recorded past the analysis' budget one load checks at call (each check is a few
# nodes of the loaded graph, about 0.35 ms of load each: a file of many nodes of many
# symbolic sizes past the budget took 22 ms a node to load)
LATE_SIZES = 1 << 13
_FIX = "the file was modified or written by another version of safetrace; re-export the " \
       "program and save it again (st.save(st.export(model, args, ...), path))"


class AsRecorded:
    """The record-checking part of ``StaticMemory`` (see the module's docstring)."""

    def _as_recorded(self, node: torch.fx.Node, late: bool = False) -> Any:
        """A node whose result the loader cannot work out (operands it does not know: after
        a custom op's number; an op without a rule: a custom op over sizes that vary, whose
        fake cannot run here, a kernel that sizes by data): the sizes the file records for
        its tensor (which the loaded program keeps, and ``to_torch`` hands on) are checked
        in its graph before its first use, at each call (``inline``), a subgraph's as a
        main graph's: its check runs each time the subgraph does, at every call site of a
        shared one (its record, one for all sites, is read from the sizes that graph holds
        there).  A recorded size of a symbol no earlier value gives (one the op makes from
        data) is left as recorded, except ``late`` (past the analysis' time, ``_late``):
        then it is that size at the call, for later records (and a number's record, a
        size, is checked too).  Returns the value with the real sizes (for later checks),
        or None."""
        val = node.meta.get("val")
        rec = getattr(val, "st_meta", None)
        if isinstance(val, (list, tuple)) and (node.users or late):
            self._list_as_recorded(node, late)
            return None
        if late and rec is None and _is_int(val):
            return self._number_as_recorded(node, val)
        if not isinstance(rec, TensorMeta) or not (node.users or late):
            return None
        after = _after(node, late)
        if after is None:
            return None
        real = self._real.get(node)  # (one set per node: a shared subgraph's checks of
        if real is None or len(real) != len(rec.shape):  # each site are then one)
            real = []
            for _ in rec.shape:
                real.append(new_symbolic(self.env.new_unbacked(0, None, name=self._fresh()),
                                         self.env))
            self._real[node] = real
        value = TensorMeta(tuple(real), rec.dtype, _CPU)
        if late:  # (one dict for the graph's checks: ``requirements._sources`` walks it once)
            self._meta[node] = value
        values = self._meta if late else {**self._meta, node: value}
        self.dtype_checks.append((node, rec.dtype, len(rec.shape)))
        sizes = list(enumerate(zip(real, rec.shape)))
        for d, size in _element_record(node, rec):  # (the list's record: one with it)
            sizes.append((d, (real[d], size)))
        for d, (got, size) in sizes:
            self._check_size(got, size, after, f"{got} is dim {d} of what {node.name!r} "
                             f"({node.target}) returns; the file records its size", values,
                             late)
        return value

    def _checked_record(self, node: torch.fx.Node) -> TensorMeta | None:
        """What a node kept as recorded is when a later node uses it (its dtype and rank,
        the record's, checked right after it; its sizes the symbols checked against the
        record's): None for a node not kept so."""
        real = self._real.get(node)
        rec = getattr(node.meta.get("val"), "st_meta", None)
        if real is None or not isinstance(rec, TensorMeta) or len(real) != len(rec.shape):
            return None
        return TensorMeta(tuple(real), rec.dtype, _CPU)

    def _check_size(self, got: Any, size: Any, after: torch.fx.Node, why: str,
                    values: dict, late: bool) -> None:
        """Check before ``after`` that the real size ``got`` is the recorded ``size``."""
        size = to_expr(size)
        # (a symbol of the file's read from data: the scratch one it was matched with)
        mine = self.recorded._file(size) if self.recorded is not None else None
        if mine is None and size.op == "sym" and self.recorded is not None and \
                size.name not in self.recorded.contract:  # (its first record: the size
            # read there; a check of the file's own name would read a scratch symbol of
            # that name: a torch.cond's output sized from data, `u1` in the file, is not
            # the scratch `u1` of an earlier op's, fuzz grammar_model seed 3020)
            self.recorded.match(size.name, to_expr(got.expr))
            return
        cond = eq(got.expr, size if mine is None else mine)
        self.inline.append((cond, after, why, values))
        if late:
            if not self._soft:  # (a soft one, not readable, is left as written)
                self.late_checks[(after, cond)] = None
            self.late_sizes += 1
            if self.late_sizes > LATE_SIZES:  # (each a few nodes of the loaded graph)
                raise bad_file(f"node {after.name!r}", "the loader's analysis ran out of its "
                               f"budget, and the file records more than {LATE_SIZES} sizes "
                               "of the nodes after it, each to be checked at call",
                               "raise safetrace.serialize.memory.ANALYSIS_NODES (nodes "
                               "analysed at load) or safetrace.serialize.as_recorded."
                               "LATE_SIZES")

    def _number_as_recorded(self, node: torch.fx.Node, val: Any) -> Any:
        """A number past the analysis' time (a size query, size arithmetic, ``.item()``):
        its record checked before its first use."""
        after = _after(node, True)
        if after is None:
            return None
        got = new_symbolic(self.env.new_unbacked(None, None, name=self._fresh()), self.env)
        self._meta[node] = got
        self._check_size(got, val, after, f"{got} is what {node.name!r} ({node.target}) "
                         "returns; the file records it", self._meta, True)
        return got

    def _number_unknown(self, node: torch.fx.Node) -> None:
        """A number the loader cannot work out (size arithmetic of a size read from data it
        cannot reduce: ``min(u0, 5)`` of a clamped read) recorded as a symbolic size: its
        record is checked before its
        first use, at each call (it was kept as written: a file recording ``u0`` for the
        ``min`` printed, saved and converted ``u0`` where the call computed 5; session
        33).  A record naming a size no earlier value gives is that size (``_check_size``)."""
        val = node.meta.get("val")
        if isinstance(val, (bool, int)) or not _is_int(val) or not node.users:
            return  # (a number recorded as a number is kept: our files record size-oblivious
            # answers, ``min(u0, 2)`` as 2 where the assertion after it makes it so)
        after = _after(node, False)
        if after is None:
            return
        got = new_symbolic(self.env.new_unbacked(None, None, name=self._fresh()), self.env)
        self._check_size(got, val, after, f"{got} is what {node.name!r} ({node.target}) "
                         "returns; the file records it", {**self._meta, node: got}, False)

    def _list_as_recorded(self, node: torch.fx.Node, late: bool = False) -> None:
        """A custom op's ``List[Tensor]`` the loader cannot work out (``late``: any list of
        tensors): its length and each element's dtype and rank are checked right after it
        (``record_checks.check_list``), and the sizes of each element no ``getitem`` takes
        (those taken are checked with the getitem's own record, ``_element_record``)
        before its first use."""
        recs = [getattr(v, "st_meta", v) for v in node.meta["val"]]
        if not isinstance(node.target, torch._ops.OpOverload) and not late or \
                not all(isinstance(r, TensorMeta) for r in recs) or not recs:
            return
        self.dtype_checks.append((node, tuple((r.dtype, len(r.shape)) for r in recs), None))
        taken = {u.args[1] % len(recs) for u in node.users if u.target is operator.getitem
                 and len(u.args) == 2 and type(u.args[1]) is int}
        after = _after(node, late)
        if after is None:
            return
        real = []
        for i, r in enumerate(recs):
            real.append(TensorMeta(tuple(new_symbolic(self.env.new_unbacked(
                0, None, name=self._fresh()), self.env) for _ in r.shape), r.dtype, _CPU)
                if i not in taken else None)  # (a taken one: with its getitem's)
        if late:
            self._meta[node] = real
        values = self._meta if late else {**self._meta, node: real}
        for i, r in enumerate(recs):
            if i in taken:
                continue
            for d, (got, size) in enumerate(zip(real[i].shape, r.shape)):
                self._check_size(got, size, after, f"{got} is dim {d} of value {i} of what "
                                 f"{node.name!r} ({node.target}) returns; the file records "
                                 "its size", values, late)

    def _late(self, node: torch.fx.Node, meta: dict) -> None:
        """A node past the analysis' budget (``memory.ANALYSIS_NODES``): not evaluated, its
        record is checked at each call as one the loader cannot work out, with what the
        nodes before it really hold (their own checked records past the time), and so are
        those of the subgraphs a control-flow node calls; a record no check can read
        (``late_checks``) refuses the file (``refuse_late``)."""
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            self._subgraphs_at_call(node, meta)
        out = self._as_recorded(node, late=True)
        if out is not None:
            meta[node] = out

    def _subgraphs_at_call(self, node: torch.fx.Node, meta: dict,
                           unevaluated: bool = False) -> None:
        """The records of every node of the subgraphs a control-flow node calls, checked
        at call as past the analysis' time: the node is past it, or the analysis could
        not work out what it passes them (a cond given a value the loader does not know:
        its branches, never evaluated, kept their records as written; hostile probe,
        ``sg:hop_args``).  In the second case a record no check can read stays as
        written (``_soft``: our own files have such conds, whose branches' sizes their
        graphs may hold nowhere linearly; a load-only search found 22 refused)."""
        subs = getattr(node.graph, "st_submodules", {})
        graphs = [subs[a.target].graph for a in node.args if isinstance(a, torch.fx.Node)
                  and a.op == "get_attr" and a.target in subs]
        given = _operands(node, meta, self._real)
        soft, self._soft = self._soft, self._soft or unevaluated
        try:
            for g in graphs:
                self._late_graph(g, given)
        finally:
            self._soft = soft

    def _late_graph(self, graph: torch.fx.Graph, given: list) -> None:
        """Every node of a subgraph whose call is past the analysis' time: its placeholders
        hold what the call passes (``given``: None where not known, or where the record
        is not plainly that value), checked as recorded otherwise."""
        outer, self._meta = self._meta, {}
        try:
            ph = [n for n in graph.nodes if n.op == "placeholder"]
            for p, (v, rec) in zip(ph, given):
                mine = getattr(p.meta.get("val"), "st_meta", p.meta.get("val"))
                if v is not None and _plainly(mine, v, self.recorded):
                    self._meta[p] = v
                elif v is None and _same_record(mine, rec):  # (what the call passes is
                    v = self._scratch(rec)  # checked to be that record before the call,
                    if v is not None:  # or at each iteration: a loop's carry the body
                        self._meta[p] = v  # returns as recorded)
            for n in graph.nodes:
                if n.op == "call_function" or n.op == "placeholder" and n not in self._meta:
                    self._late(n, self._meta)
        finally:
            self._meta = outer

    def _scratch(self, rec: TensorMeta) -> TensorMeta | None:
        """A recorded tensor value in the scratch env's symbols (None: a symbol of the
        file's that nothing matched)."""
        dims = []
        for d in rec.shape:
            if isinstance(d, int):
                dims.append(d)
                continue
            e = self.recorded._file(to_expr(d.expr)) if self.recorded is not None else None
            if e is None:
                return None
            dims.append(new_symbolic(e, self.env))
        return TensorMeta(tuple(dims), rec.dtype, _CPU)

    def records_at_call(self) -> None:
        """Each size the file records that the loader could neither prove nor refute
        (``Recorded.at_call``: the exporter knew more, a split side's facts; or the file
        lies) is checked in its graph before the node's first use, at each call, as the
        real size (a symbol of its own, read off the node's value there) equal to the
        record (``inline``); a record no check can read refuses the file
        (``refuse_late``).  At most ``RECORDS_AT_CALL`` sizes a load."""
        made: dict = {}  # (id of a graph evaluation's values -> those with real sizes)
        count = 0
        for node, sizes, values in self.recorded.at_call:
            after = _after(node, True) or node.next  # (used by size queries only: the
            # next node; the output follows every node)
            if values is None:
                raise _unreadable(node, "no values of its graph")
            count += sum(sum(1 for _ in dag_nodes(x)) if not isinstance(x, tuple) else 1
                         for _, x in sizes)  # (their expressions' nodes: each call's work)
            if count > RECORDS_AT_CALL:
                raise _unreadable(node, f"the file has more than {RECORDS_AT_CALL} nodes "
                                  "of them")
            real = made.setdefault(id(values), dict(values))
            for path, size in sizes:
                got = new_symbolic(self.env.new_unbacked(None, None, name=self._fresh()),
                                   self.env)
                where = _with(real.get(node), path, got)
                if where is None:  # (a number in a list: no value of it a check reads)
                    raise _unreadable(node, f"its value at {list(path)}")
                soft = (node, tuple(path)) in self.recorded.soft  # (a number's record: where
                # no check can read it, kept as written, and later checks do not read it)
                held = {**real, node: where[0]} if soft else real
                held[node] = where[0]
                cond = eq(got.expr, size) if not isinstance(size, tuple) else \
                    _in_range(got.expr, *size[1:])
                self.inline.append((cond, after, f"{got} is {where[1]} of what {node.name!r} "
                                    f"({node.target}) returns; the file records it", held))
                if not soft:
                    self.late_checks[(after, cond)] = node.name

    def refuse_late(self, dropped: list) -> None:
        """Refuse the file where a record past the analysis' time, or one the loader could
        not prove (``records_at_call``), can be neither worked out nor checked at call
        (``dropped``: what ``requirements.guard`` could not put in its graph)."""
        for cond, node, why in dropped:
            if (node, cond) not in self.late_checks:
                continue
            name = self.late_checks[(node, cond)]
            if name is not None:
                raise _unreadable(node, f"no check at call can read it ({why[:200]})",
                                  name)
            raise bad_file(f"node {node.name!r}", f"the loader's analysis ran out of time "
                           f"before it, and what the file records there cannot be "
                           f"checked at call ({why[:200]})",
                           "raise safetrace.serialize.memory.ANALYSIS_NODES (nodes "
                           "analysed at load) or ANALYSIS_SECONDS (its CPU backstop)")

    def _fresh(self) -> str:
        return next(f"r{i}" for i in range(len(self.env.symbols), 1 << 30)
                    if f"r{i}" not in self.env.symbols)


def _unreadable(node: torch.fx.Node, why: str, name: str | None = None) -> Exception:
    return bad_file(f"node {name or node.name!r}", "the file records a value of it that "
                    f"the loader can neither prove nor check at call: {why}", _FIX)


def _in_range(got: Any, lo: Any, hi: Any, rest: Any = 0, k: int = 1) -> Any:
    """That the real size ``got`` is ``k*u + rest`` for ``u`` in ``[lo, hi]`` (the range
    the file declares for a symbol of its own it records there first, ``u``)."""
    u = (got - rest) // k
    return and_(*(c for c in (ge(u, lo) if math.isfinite(lo) else None,
                              le(u, hi) if math.isfinite(hi) else None,
                              eq(u * k + rest, got) if abs(k) != 1 else None)
                  if c is not None), TRUE)


def _with(value: Any, path: tuple, got: Any) -> tuple | None:
    """``value`` (a node's evaluated value) with the size at ``path`` replaced by ``got``
    (a tuple of values becomes a list, as the checks read one), and what that size is in
    words; None where no check reads it so (a number inside a list)."""
    if isinstance(value, TensorMeta) and len(path) == 1 and path[0] < len(value.shape):
        shape = list(value.shape)
        shape[path[0]] = got
        return TensorMeta(tuple(shape), value.dtype, value.device), f"dim {path[0]}"
    if not path and not isinstance(value, (TensorMeta, list, tuple)):
        return got, "the number"
    if isinstance(value, (list, tuple)) and len(path) == 2 and path[0] < len(value) and \
            isinstance(value[path[0]], TensorMeta):
        inner = _with(value[path[0]], path[1:], got)
        if inner is None:
            return None
        out = list(value)
        out[path[0]] = inner[0]
        return out, f"{inner[1]} of value {path[0]}"
    return None


def _after(node: torch.fx.Node, late: bool) -> torch.fx.Node | None:
    """Where a node's recorded sizes are checked: before its first use other than a size
    query (``late``: the next node where nothing uses it); None where nothing does."""
    after = node.next
    while after.op != "root" and (after not in node.users or
                                  after.target is torch.ops.aten.sym_size.int):
        after = after.next
    if after.op == "root":
        return node.next if late and node.next.op != "root" and not node.users else None
    return after


def _operands(node: torch.fx.Node, meta: dict, checked: Any) -> list:
    """What a control-flow node passes each of its subgraphs' placeholders: (what the
    loader knows it is, or None where it is checked at call as recorded (``checked``); the
    record it is checked to be before the call, or None),
    a loop's carried value by its record where the body returns it as recorded so."""
    def rec(a: Any) -> Any:
        v = getattr(a.meta.get("val"), "st_meta", None) if isinstance(a, torch.fx.Node) \
            else None
        return v if isinstance(v, TensorMeta) else None

    def of(a: Any) -> tuple:  # (a value checked as recorded at call: its record)
        if isinstance(a, torch.fx.Node):
            return (None if a in checked else meta.get(a)), rec(a)
        return a, None

    def sliced(a: Any) -> tuple:
        v, r = of(a)
        return tuple(TensorMeta(tuple(x.shape[1:]), x.dtype, _CPU) if isinstance(
            x, TensorMeta) and x.shape else None for x in (v, r))

    def carried(a: Any, i: int, body: Any) -> tuple:
        out = next((n for n in body.nodes if n.op == "output"), None) if body else None
        outs = out.args[0] if out is not None and out.args else ()
        back = outs[i] if isinstance(outs, (list, tuple)) and i < len(outs) else None
        return None, rec(a) if _same_record(rec(back), rec(a)) else None

    kind, args = node.target.name(), node.args
    subs = getattr(node.graph, "st_submodules", {})
    try:
        if kind == "cond":
            return [of(a) for a in args[3]]
        if kind == "while_loop":
            body = subs.get(args[1].target) if isinstance(args[1], torch.fx.Node) else None
            body = getattr(body, "graph", None)
            return [carried(a, i, body) for i, a in enumerate(args[2])] + \
                [of(a) for a in args[3]]
        if kind == "map_impl":
            return [sliced(a) for a in args[1]] + [of(a) for a in args[2]]
        if kind == "scan":
            body = subs.get(args[0].target) if isinstance(args[0], torch.fx.Node) else None
            body = getattr(body, "graph", None)
            return [carried(a, i, body) for i, a in enumerate(args[1])] + \
                [sliced(a) for a in args[2]] + [of(a) for a in args[3]]
    except (IndexError, TypeError, AttributeError):
        pass
    return []


def _same_record(a: Any, b: Any) -> bool:
    """Whether two recorded tensor values are the same (dtype, rank, each size the same
    number or expression)."""
    if not isinstance(a, TensorMeta) or not isinstance(b, TensorMeta) or \
            a.dtype != b.dtype or len(a.shape) != len(b.shape):
        return False
    return all(isinstance(x, int) and isinstance(y, int) and x == y
               if isinstance(x, int) or isinstance(y, int) else
               to_expr(x.expr) is to_expr(y.expr) for x, y in zip(a.shape, b.shape))


def _plainly(rec: Any, value: Any, recorded: Any) -> bool:
    """Whether ``rec`` (a placeholder's record) is plainly ``value``: the same dtype and
    rank, each size the same number or expression (no question asked: past the time)."""
    if not isinstance(rec, TensorMeta) or not isinstance(value, TensorMeta) or \
            rec.dtype != value.dtype or len(rec.shape) != len(value.shape):
        return False
    for r, v in zip(rec.shape, value.shape):
        if isinstance(r, int) or isinstance(v, int):
            if not (isinstance(r, int) and isinstance(v, int) and r == v):
                return False
            continue
        mine = recorded._file(to_expr(r.expr)) if recorded is not None else None
        if mine is None or mine is not to_expr(v.expr):
            return False
    return True


def _is_int(v: Any) -> bool:
    return isinstance(v, torch.SymInt) or isinstance(v, int) and not isinstance(v, bool)


def _element_record(node: torch.fx.Node, rec: TensorMeta) -> list:
    """(dim, size) the file records for ``node`` (``x[i]`` of an op's list of tensors) in
    its operand's record, where that operand's result the loader could not work out
    either: each is checked with ``node``'s own, so that the list's record is the one
    that ran.  Refused at load where the two records differ in dtype or rank."""
    if node.target is not operator.getitem or len(node.args) != 2 or \
            not isinstance(node.args[0], torch.fx.Node) or type(node.args[1]) is not int:
        return []
    whole = node.args[0].meta.get("val")
    if not isinstance(whole, (list, tuple)) or not -len(whole) <= node.args[1] < len(whole):
        return []
    part = getattr(whole[node.args[1]], "st_meta", whole[node.args[1]])
    if not isinstance(part, TensorMeta):
        return []  # (not recorded as a tensor there: nothing of it is read as one)
    if part.dtype != rec.dtype or len(part.shape) != len(rec.shape):
        raise bad_file(f"node {node.name!r}", f"the file records its value as {_show(rec)}, "
                       f"but as {_show(part)} in the value of {node.args[0].name!r} it is "
                       "taken from",
                       "the file was modified or written by another version of safetrace; "
                       "re-export the program and save it again")
    return list(enumerate(part.shape))


def _show(v: Any) -> str:
    if not isinstance(v, TensorMeta):
        return type(v).__name__
    return f"{str(v.dtype).removeprefix('torch.')}{[str(x) for x in v.shape]}".replace("'", "")


__all__ = ["AsRecorded"]
