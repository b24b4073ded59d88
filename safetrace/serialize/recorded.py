"""The file's recorded metadata of each node (``meta['val']``: a tensor's shape, dtype and
device, a size, a flag) held against what the loader's own evaluation works out for it
(``memory.py``: safetrace's shape rules over the contract's symbolic input sizes).

A loaded graph is run as written, but what reads its metadata later (``print(ep)``,
``to_torch()`` and what is compiled from it, ``run_decompositions``) believes it: a file
whose metadata says ``[s0, 4]`` where the graph computes ``[s0, 8]`` would mislead them.
Where the evaluation knows a node's value and the recorded one differs (another dtype or
rank, another static size, or sizes of the inputs that are not provably one
there), the file is refused at load; where it cannot work the value out (a custom op, past
the analysis' time) the recorded value stays as written.

Sizes compare as expressions in the evaluation's scratch environment (the contract's
symbols, and inside a branch its predicate as a fact), each node as soon as it is
evaluated: under the assertions before it (a subgraph's, and where the plain comparison
differs the main graph's, ``asserted.py``), never one after it.  A size read from data is a new
symbol in each of the two: the first time a node's evaluated size is such a symbol and the
file records a bare symbol of its own there, the two are taken as one (once each: two
values read from data are never one symbol of the file).  A main-graph node's size read
from data that the file records as a number or a size the inputs bind (``nonzero`` as
``[1, 1]`` where a later ``torch._check`` pins its count; ``.item()`` as ``u0`` of a
contract's ``z.shape[0] == 2 * u0``, which the graph checks after it) is proved at the end
from all the main graph's assertions, else the file is refused (``Recorded._unproven``);
a subgraph's, read from data inside it, at the end of its evaluation (``settle``).  So is
the reverse in the main graph: an input size the file records as one read from data
(``x > 0``'s ``[s0]`` as ``[1000*u0]``, ``u0`` the count of an earlier ``nonzero``);
one recorded as a size read from data that no earlier node's record names where the
evaluation reads none (``[u7]``) is refused (``_new_read``, session 26).  One the file
records first inside an expression (``[u0 + 1]``) is solved from the evaluated size where
linear, its declared range checked at call, else refused (``_solve``, session 28); a
subgraph's size read from data that the file records as one of the inputs' (a split
side's count ``[0]``) is taken as it, checked at call, where a later node of that
evaluation is otherwise refuted (``_rescue``).  A size the
loader reads from a constant (``n.item()`` of a buffer never written: 3) is that value
wherever later nodes record the file's symbol for it.
Left open (kept as written): a size the file records as one of its own read from data
where the evaluation has an input size in a subgraph (a while_loop body's growing carry,
evaluated at its first iteration), and a subgraph's size read from data outside it (a
carry of any size) recorded as a number; a
torch.cond whose branches return other sizes is the exporter's new size read from data
(``branch_facts.merged``), and recorded as any other size it is refused.  Two forms of a
size are compared case by case within the load's budget of decisions
(``scratch.CASE_DECISIONS``).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.errors.load import bad_file
from safetrace.meta import TensorMeta
from safetrace.serialize.branch_facts import steps
from safetrace.serialize.codec import new_symbolic
from safetrace.serialize.constant_sizes import UNKNOWN
from safetrace.serialize.read_points import declared_range
from safetrace.serialize.read_ranges import held_at_call, held_to_range, own_read
from safetrace.serialize.read_ranges import size_symbols as _names
from safetrace.serialize.record_values import all_of as _all, is_int as _is_int, kind as _kind
from safetrace.serialize.record_values import show as _show
from safetrace.serialize.renaming import renaming
from safetrace.serialize.scratch import simple
from safetrace.serialize.value_sizes import GUARDED
from safetrace.symbolic import eq
from safetrace.symbolic.cases import by_cases
from safetrace.symbolic.canon import substitute
from safetrace.symbolic.expr import Expr, dag_nodes, from_terms, terms, to_expr
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.scope import scoped
from safetrace.trace.proxy import Proxy

# facts of the graph's assertions one load assumes, in all, to compare nodes again under
# them (each is a decision of the engine: a file of thousands of checks and of nodes that
# need them stays fast; past it, a node that needs one is refused)
_ASSUMED = 1 << 12
_AT_CALL_NODES = 256
_FIX = "the file was modified or written by another version of safetrace; re-export the " \
       "program and save it again (st.save(st.export(model, args, ...), path))"


class Recorded:
    """Compares each evaluated node's value with its recorded ``meta['val']``.

    ``contract``: names of the symbols both environments share (the contract's);
    ``opaque``: scratch symbol name -> the contract size it stands for (``memory._dim``).
    """

    def __init__(self, env: Any, contract: set, opaque: dict, main: Any = None) -> None:
        self.env, self.contract, self.main = env, contract, main
        self.opaque = dict(opaque)
        self.file_to_scratch: dict = {}  # a file symbol read from data -> scratch symbol
        self.spans: dict = {}  # a file symbol read from data -> the bounds of all it matched
        self.taken: set = set()  # scratch symbols matched with a file symbol
        self.as_input: set = set()  # file symbols read from data taken as sizes of the inputs
        self.steps: list = []  # (in a branch: ``branch_facts.tighten``'s progressions)
        # scratch symbols of sizes that differ between a cond's branches: recorded as any
        # other size, not one of the file's own read from data, it is refused
        self.strict: set = set()
        self.wrong: tuple | None = None  # (node, recorded, evaluated): the first differing
        self.assumed = 0  # facts assumed to compare nodes again (``_under``), in all
        # nodes whose sizes read from data the file records as sizes of the inputs
        # (``[1, 1]`` of a nonzero whose count a later check pins): (graph, node, recorded,
        # evaluated, the equalities left open), held against all their graph's checks
        self.later: list = []
        # (node, [(where in its value, the recorded size in scratch symbols)], the values of
        # its graph's nodes): records the loader can neither prove nor refute (it may know
        # less than the exporter did: a split side's facts), checked at call
        # (``as_recorded.AsRecorded.records_at_call``)
        self.at_call: list = []
        self.open: list = []  # (for one node: (equality, where, size) left open till the
        self.unsure: list = []  # end of its graph; (where, size) not provably the record)
        self._path: list = []  # (where in the value ``_same`` compares now)
        self.read: set = set()  # nodes whose value the evaluation read from a constant
        self.in_main = False  # (whether the node being compared is the main graph's)
        self.reading = False  # (whether its value is read from a constant's data)
        self._first: dict | None = None  # file symbol -> the main-graph node naming it first
        self._node, self._values = None, None  # (the node ``check`` compares now)
        self.extra: dict = {}  # (for one node: where in its value -> what is checked at call)
        self.given: set | None = None  # (for one node: the sizes its operands hold)
        # a subgraph's size read from data (a scratch symbol) that the file records as a
        # size of the inputs' -> (that equality, node, where in its value, the record, the
        # values of its graph): taken as a fact, checked at call, where a later node of
        # its evaluation is otherwise refuted (``_rescue``)
        self.pins: dict = {}
        self.held: list = []  # (those equalities, once checked at call)
        self._dims: Any = False  # (whether ``_size`` compares a tensor's sizes now, or
        # "number": a number's record, whose check at call, where no check can read it,
        # leaves it as written (``soft``) as before session 33)
        self.soft: set = set()  # ((node, where in its value) of those)
        self.ranged: list = []  # (main-graph reads' declared ranges: read_ranges.py)

    def scope(self) -> tuple:
        """What matches are known now (a subgraph's are its own: ``restore``)."""
        return dict(self.file_to_scratch), set(self.taken), set(self.as_input), \
            dict(self.pins), list(self.held)

    def restore(self, kept: tuple) -> None:
        self.file_to_scratch, self.taken = dict(kept[0]), set(kept[1])
        self.as_input, self.pins, self.held = set(kept[2]), dict(kept[3]), list(kept[4])

    def check(self, node: torch.fx.Node, derived: Any, facts: list,
              values: dict | None = None) -> None:
        """Note ``node`` if its recorded value differs from ``derived`` (its evaluated one),
        also where the main graph's assertions before it hold (``facts``: they raise before
        it otherwise, ``asserted.py``), unless those can never all hold (then nothing is
        assumed: the node never runs, and what the file says of it is not believed).
        A size neither proved nor refuted (the exporter may have known more: a split
        side's facts) is checked at call (``at_call``; ``values``: those of its graph)."""
        if node.op == "output" or "val" not in node.meta or derived is UNKNOWN:
            return  # (an op without a rule, past the analysis' time: kept as written)
        facts = facts + [x[1][0] for x in self.ranged] if self.ranged else facts
        recorded = node.meta["val"]
        self.in_main = node.graph is self.main
        self.reading = node in self.read or node.target in GUARDED  # (sized by values)
        self._node, self._values = node, values
        self.extra = {}  # (of ``_solve``: kept across ``_under``)
        self.given = set().union(*(_names(values.get(a)) for a in node.all_input_nodes)) \
            if values is not None and node.op != "placeholder" else None  # (the sizes its
        # operands hold, not read here; a placeholder's come from outside: a loop's carry)
        if self._new_read(node, recorded, derived):
            same, opened, unsure = False, [], []
        else:
            same, opened, unsure = self._compare(recorded, derived)
        if (same is False or unsure) and facts and self.wrong is None:
            same, opened, unsure = self._under(facts, recorded, derived) or \
                (same, opened, unsure)
        if same is False and (self.pins or self.held) and self.wrong is None:
            rescued = self._rescue(recorded, derived)
            if rescued is None:
                return  # (it never runs where the pins hold: they are checked at call)
            same, opened, unsure = rescued
        if same is False:
            if self.wrong is None:
                self.wrong = (node.name, _show(recorded), _show(derived))
        elif unsure:  # (with every size of it left open: checked at call)
            self.at_call.append((node, unsure + [x[1:] for x in opened], values))
        elif same is None and opened:
            self.later.append((node.graph, node.name, _show(recorded), _show(derived),
                               opened, node, values))
        if same is not False and self.extra:
            self.at_call.append((node, list(self.extra.items()), values))

    def _compare(self, recorded: Any, derived: Any) -> tuple:
        """(``_same``, the sizes it leaves open, those it cannot prove the record)."""
        self.open, self.unsure, self._path = [], [], []
        same = self._same(recorded, derived)
        return same, self.open, self.unsure

    def _new_read(self, node: torch.fx.Node, recorded: Any, derived: Any) -> bool:
        """Whether a main-graph node's record names a size read from data that no earlier
        node's record names (so read here) where the evaluation reads none: not a value
        read from a constant nor an op sized by its operands' values (``unique`` of one
        element: 1), no size of its own (``x > 0`` recorded as ``[1000*u0]``, the
        ``u0`` a later ``.item()`` reads).  A subgraph's node is left out (a loop body's
        carry may name the loop's new size where the first iteration has an input size),
        and so is a control-flow node (the exporter makes a new size of branches' sizes it
        cannot prove one, which the loader's case-by-case comparison may)."""
        if node.graph is not self.main or self.main is None or self.reading or \
                isinstance(node.target, torch._ops.HigherOrderOperator):
            return False
        new = {x for x in _names(recorded) - self.contract if self._first_record(x) is node}
        return bool(new) and not _names(derived) - self.contract - self.opaque.keys()

    def _first_record(self, name: str) -> Any:
        """The main-graph node whose record names the file's symbol ``name`` first."""
        if self._first is None:
            self._first = {}
            for n in self.main.nodes:
                for x in _names(n.meta.get("val")) - self.contract:
                    self._first.setdefault(x, n)
        return self._first.get(name)

    def _under(self, facts: list, recorded: Any, derived: Any) -> tuple | None:
        """``_compare`` under ``facts`` (None past the load's budget of them: what is left
        open is then checked at call)."""
        self.assumed += len(facts)
        if self.assumed > _ASSUMED:  # (a file of many checks and many nodes that need them
            return None  # would make loading slow: past a number, none is assumed)
        with scoped(self.env):
            for fact in facts:
                try:
                    self.env.add_fact(fact)
                except ValueError:
                    return False, [], []
            return self._compare(recorded, derived)

    def refuse(self, facts: list) -> None:
        """Refuse the file where a node's recorded value differs from the evaluated one
        (after the budgets' refusals, which name what to raise); where it records a size
        read from data as a size of the inputs that its graph's assertions do not make it
        (``facts``: all of the main graph's), that size is checked at call."""
        if self.wrong is not None:
            name, recorded, derived = self.wrong
            raise bad_file(f"node {name!r}", f"the file records its value as {recorded}, "
                           f"but the graph computes {derived} there", _FIX)
        self._unproven([x for x in self.later if x[0] is self.main], held_at_call(self, facts))
        self.later = [x for x in self.later if x[0] is not self.main]

    def settle(self, graph: Any, facts: list, values: list, loop: bool = True) -> None:
        """At the end of a subgraph's evaluation (its branch predicate and all its own
        assertions facts of the env), check at call those of its ``later`` nodes they
        and the main graph's before it (``facts``) do not prove.  In a loop or map body,
        one whose size is read from data outside (``values``: its inputs; a loop's carry
        of any size) stays as written; a cond branch's are checked (session 31)."""
        outside = set().union(*(_names(v) for v in values)) if loop else set()
        mine = [x for x in self.later if x[0] is graph and not any(
            {str(s) for s in c.free_symbols} & outside for c, _, _ in x[4])]
        self.later = [x for x in self.later if x[0] is not graph]
        self._unproven(mine, facts)

    def _unproven(self, later: list, facts: list) -> None:
        """Check at call (``at_call``) each size of ``later`` that the env's facts and
        ``facts`` do not prove the file's.

        Why proved ones need no check: the loaded graph runs as written, each node on what
        it computes, whatever the file records (what it writes before an assertion fails
        it computes from the data); the recorded value is read only by what takes the
        program as a whole (``print(ep)``, ``to_torch()``, decompositions), and a graph
        returns nothing where one of its assertions fails (a subgraph's: the node that
        calls it returns nothing).  Where they prove the recorded size at every run that
        returns, the value is what our exporter writes for that graph (it records a size
        as the checks of the whole program leave it: ``nonzero`` pinned to one row by a
        later ``torch._check`` is ``[1, 1]`` at its own node).  Where they do not (the
        exporter knew more: a split side's facts), the check at call refuses a run where
        the record is not what ran."""
        if not later:
            return
        self.assumed += len(facts)
        if self.assumed > _ASSUMED:  # (past the budget: none proved, each checked at call)
            self.at_call.extend((x[5], [o[1:] for o in x[4]], x[6]) for x in later)
            return
        with scoped(self.env):
            for fact in facts:
                try:
                    self.env.add_fact(fact)
                except ValueError:
                    return  # (they never all hold: the graph never returns)
            for x in later:
                left = [o[1:] for o in x[4] if not self._proved(o[0])]
                if left:
                    self.at_call.append((x[5], left, x[6]))

    def _proved(self, cond: Any) -> bool:
        try:
            return self.env.decide(cond) is True or by_cases(self.env, cond) is True
        except Exception:  # noqa: BLE001 - a question the engine cannot take
            return False

    def kinds(self, node: torch.fx.Node, outs: list) -> None:
        """Note a torch.cond ``node`` whose recorded value is not, in count, kind, dtype
        and rank, what a branch the evaluation worked out returns (eager runs the branch
        its predicate picks, whatever the other returns: the file's value must be each's)."""
        if "val" not in node.meta:
            return
        rec = node.meta["val"]
        for out in outs:
            if out is not UNKNOWN and self.wrong is None and _kind(rec) != _kind(out):
                self.wrong = (node.name, _show(rec), _show(out))

    def each_branch(self, node: torch.fx.Node, outs: list, given: tuple) -> Any:
        """A torch.cond ``node``'s recorded value (in the scratch environment) where it
        holds only sizes of the inputs' and is each branch's value wherever that branch
        runs, else None.  (``max(s0*s1 - s0, 0)`` is ``s0*s1 - s0`` where ``s0 >= 1`` and
        ``0`` where ``s0 == 0``, which the branches' merged form ``s0*s1 - s0`` is not
        provably without a fact on ``s0``: the file's form stays, and what reads it later
        is held against it.)"""
        rec = node.meta.get("val")
        if given[0] is None or any(out is UNKNOWN for out in outs) or \
                not isinstance(rec, (list, tuple)) or not _sizes(rec, self.contract) or \
                not all(isinstance(v, (Proxy, TensorMeta)) for v in rec):
            return None
        kept = self.scope()
        try:
            for out, fact in zip(outs, given):
                with scoped(self.env):
                    try:
                        self.env.add_fact(fact)
                    except ValueError:
                        continue  # (a branch that never runs)
                    if self._same(rec, out) is not True:
                        return None
        finally:
            self.restore(kept)
        return type(outs[0])(_scratch(v, d, self.env) for v, d in zip(rec, outs[0]))

    def input_forms(self, node: torch.fx.Node) -> list | None:
        """A torch.cond ``node``'s recorded sizes of each output where they are sizes of
        the inputs (a number, or an expression of the contract's symbols), None where not
        (a size read from data, a file's huge expression, not a tensor)."""
        rec = node.meta.get("val")
        if not isinstance(rec, (list, tuple)):
            return None
        out: list = []
        for v in rec:
            m = v.st_meta if isinstance(v, Proxy) else v
            if not isinstance(m, TensorMeta):
                out.append(None)
                continue
            out.append([to_expr(s) if isinstance(s, int) else to_expr(s.expr) if isinstance(
                s, torch.SymInt) and _sizes(s, self.contract) and simple(to_expr(s.expr))
                else None for s in m.shape])
        return out

    # -- one value ---------------------------------------------------------------------
    def _same(self, rec: Any, der: Any) -> bool | None:
        """True where they are provably the same, False where they provably differ (or
        are of different kinds), None where the sizes cannot be compared."""
        if isinstance(rec, Proxy):
            rec = rec.st_meta
        if isinstance(rec, TensorMeta):
            if not isinstance(der, TensorMeta) or rec.dtype != der.dtype or \
                    len(rec.shape) != len(der.shape):  # (the device is the export's: a
                # program exported on the meta device runs on the weights given at load)
                return False
            self._dims = True  # (a tensor's sizes: a check at call reads them)
            same = _all(self._at(i, self._size, r, d)
                        for i, (r, d) in enumerate(zip(rec.shape, der.shape)))
            self._dims = False
            return same
        if isinstance(rec, (list, tuple)):
            if not isinstance(der, (list, tuple)) or len(rec) != len(der):
                return False
            return _all(self._at(i, self._same, r, d) for i, (r, d) in enumerate(zip(rec, der)))
        if isinstance(rec, bool):
            return der == rec if isinstance(der, bool) else None
        if rec is None or isinstance(rec, (float, str)):
            return None  # (not a value the evaluation knows of)
        if _is_int(rec):
            if not _is_int(der):
                return None if isinstance(der, (float, torch.SymFloat)) else False
            # (a number's record, a sym_size or min of a clamped read written ``u0`` for
            # ``min(u0, 5)``: checked at call as a tensor's size is, since session 33)
            self._dims = "number" if not self._path and not isinstance(rec, int) else False
            same = self._size(rec, der)
            self._dims = False
            return same
        return None  # (a symbolic bool or float: not compared)

    def _at(self, i: int, compare: Any, rec: Any, der: Any) -> bool | None:
        self._path.append(i)
        try:
            return compare(rec, der)
        finally:
            self._path.pop()

    def _size(self, rec: Any, der: Any) -> bool | None:
        d = der if isinstance(der, int) else der.expr
        r = rec if isinstance(rec, int) else rec.expr
        if isinstance(d, int) and isinstance(r, int):
            return d == r
        d, r = to_expr(d), to_expr(r)
        if d.free_symbols & self.opaque.keys():  # (an input dim too complex to reason on)
            return True if self.opaque.get(d.name) is r else None
        if not simple(r):  # (a file's large expression: not reasoned on; of the inputs'
            # sizes both and not the loader's own form, checked at call where it is of at
            # most _AT_CALL_NODES nodes (our split files write min/max forms of 60), each
            # call evaluating it; larger, not believed)
            if d is r:
                return True
            if {str(x) for x in d.free_symbols | r.free_symbols} <= self.contract:
                if sum(1 for _ in dag_nodes(r)) > _AT_CALL_NODES:
                    return False
                self.unsure.append((tuple(self._path), r))
            return None
        r_in = self._file(r)
        if r_in is None:  # (a symbol of the file's that nothing matched yet)
            if d.op == "sym" and r.op == "sym" and d.name not in self.contract and \
                    d.name not in self.taken and d.name not in self.opaque:
                held = held_to_range(self.env, rec, r.name, d, self._path)  # (its
                if held is False:  # declared range: proved or checked at call, and a
                    return False  # fact of the later nodes' records; never met: a lie)
                self.match(r.name, d)
                self.taken.add(d.name)
                if held:
                    self.ranged.append((self._node, held, self._values))
                return True
            if r.op == "sym" and not self.in_main and \
                    {str(x) for x in d.free_symbols} <= self.contract:
                return self._as_input(rec, r, d)
            alike = renaming(d, r, lambda x, y: self._file(y) is x, self._unmatched)
            if alike:  # (a size split's cond of sizes each side reads: ``min(u0, 2)``
                for name, x in alike.items():  # for new sizes, branch_facts.merged)
                    self.match(name, x)
                    self.taken.add(x.name)
                return True
            if d.op == "const" and r.op == "sym" and self.reading:  # (read from a constant
                if not self._declares(rec, r, d.value):  # by the loader: the file's symbol
                    return False  # is that value, in what later nodes record of it, where
                self.match(r.name, d)  # its declared range holds it: a range
                return True  # [-1, -1] for a 3 made zeros' record [-1], session 29)
            return self._solve(rec, r, d)
        if d is r_in or (r.op == "sym" and own_read(self, rec, r, d, r_in)):
            return True  # (or a subgraph's own read named as one outside it: read_ranges)
        try:
            answer = self.env.decide(eq(d, r_in))
            if answer is None:  # (two forms of one size, a min/max placed otherwise in
                answer = by_cases(self.env, eq(d, r_in))  # each: case by case, within the
                # load's budget of decisions, scratch.CASE_DECISIONS)
            if answer is None and self.steps:  # (in a branch whose facts leave a size
                answer = steps(self.env, eq(d, r_in), self.steps)  # one value in every m)
        except Exception:  # noqa: BLE001 - a question the engine cannot take
            answer = None
        if answer is None and self._reads(d) and r.free_symbols <= self.contract and \
                self._node is not None:  # (a split side's count recorded [0]: ``_rescue``)
            self.pins.setdefault(d.name, (eq(d, r_in), self._node, tuple(self._path), r_in,
                                          self._values))
        if answer is None:
            free = {str(x) for x in d.free_symbols}
            if free & self.strict or free | ({str(x) for x in r.free_symbols} -
                                             self.as_input) <= self.contract:
                # (sizes of the inputs both, not provably one: the exporter may have known
                # more, a split side's facts; checked at call)
                self.unsure.append((tuple(self._path), r_in))
            elif {str(x) for x in r.free_symbols} <= self.contract or (
                    self.in_main and free <= self.contract):  # (or the reverse, in the
                self.open.append((eq(d, r_in), tuple(self._path), r_in))  # main graph:
                # read from data, recorded as of the inputs; of the inputs, recorded as
                # read from data, [1000*u0] for [s0]: either holds only where the graph's
                # checks prove it, else it is checked at call)
            elif self._dims and self._values is not None and {str(x) for x in r_in.free_symbols
                                                               } <= _held(self._values):
                # (read from data both, not provably one, held in its graph: ``w[:u0]`` of a
                # 5-row ``w`` recorded [u0, 4] for [min(u0, 5), 4]; checked at call since
                # session 31. Not held, a split side's read of the main count: as written)
                self.unsure.append((tuple(self._path), r_in))
                if self._dims == "number":
                    self.soft.add((self._node, tuple(self._path)))
        return answer

    def _as_input(self, rec: Any, r: Expr, d: Expr) -> bool:
        """A subgraph's size of the inputs (``d``) that the file records as a symbol of its
        own read from data (``r``, unmatched: a loop body's carry at its first iteration,
        which the body may grow): that symbol is ``d`` in what later nodes of this
        evaluation record (checked against it), where its declared range holds every value
        ``d`` takes; where the bounds the loader knows of ``d`` do not show it, the range
        is checked at call (``u9`` in ``[0, 3]`` for ``s0`` up to 64: refused at a call
        where ``s0 > 3``); where they show it never does, the file lies."""
        env = getattr(rec, "env", None)
        rng = declared_range(env, r.name) if env is not None else None
        try:
            b = self.env.bounds(d)
        except Exception:  # noqa: BLE001 - a question the engine cannot take
            b = None
        if rng is None or b is not None and (b.hi < rng.lo or b.lo > rng.hi):
            return False
        self.match(r.name, d)
        self.as_input.add(r.name)
        if b is None or not (rng.lo <= b.lo and b.hi <= rng.hi):
            self.unsure.append((tuple(self._path), ("in", rng.lo, rng.hi)))
            return None
        return True

    @staticmethod
    def _declares(rec: Any, r: Expr, value: Any) -> bool:
        """Whether the file's declared range of its symbol ``r`` holds ``value``."""
        env = getattr(rec, "env", None)
        rng = declared_range(env, r.name) if env is not None else None
        return rng is None or rng.lo <= value <= rng.hi

    @property
    def comparing(self) -> tuple:
        """(the node ``check`` compares now, its graph's values, the path in its value)."""
        return self._node, self._values, self._path

    def reads(self, d: Expr) -> bool:
        return self._reads(d)

    def _reads(self, d: Expr) -> bool:
        """Whether ``d`` is a size a subgraph's node reads from data (none of its operands
        holds it, no record names it yet)."""
        return not self.in_main and d.op == "sym" and self.given is not None and \
            d.name not in self.given and d.name not in self.contract and \
            d.name not in self.taken and d.name not in self.opaque and d.name not in self.strict

    def _rescue(self, recorded: Any, derived: Any) -> tuple | None:
        """A subgraph's node refuted where the sizes it read from data (``pins``) may be
        what the file records (a split side's count, read again in its branch, recorded
        as 0 where the side's fact makes it so; the branch's inner cond on ``count == s0``
        then never runs): compared again with those as facts, each then checked at call
        before its node's first use.  None where it never runs so, else ``_compare``'s."""
        with scoped(self.env):
            try:
                for fact in self.held + [x[0] for x in self.pins.values()]:
                    self.env.add_fact(fact)
            except ValueError:
                out = None
            else:
                out = self._compare(recorded, derived)
        if out is not None and out[0] is False:
            return out
        for name, (_, node, path, size, values) in list(self.pins.items()):
            self.at_call.append((node, [(path, size)], values))
            self.taken.add(name)
            self.held.append(self.pins.pop(name)[0])
            try:  # (a fact for the rest of this evaluation: its scope ends it)
                self.env.add_fact(self.held[-1])
            except ValueError:
                pass  # (this graph never runs where it holds)
        return out

    def _solve(self, rec: Any, r: Expr, d: Expr) -> bool | None:
        """A record naming a symbol of the file's own read from data that nothing matched
        yet (``r``: its first record, ``[u0 + 1]`` where the evaluation has a count of its
        own, ``d``): where it is ``k*u0 + rest``, ``rest`` known, ``u0`` is ``(d - rest)
        // k`` in what later nodes record (checked against it), and at call the real size
        less ``rest`` is checked a multiple of ``k`` whose quotient is in the range the file
        declares for ``u0`` (unless the loader's bounds of ``d`` prove it, ``k`` being 1 or
        -1; where they show it never is, the file lies); elsewhere (``u0*u0``, two new
        symbols) the file is refused."""
        new = [x for x in r.free_symbols if x not in self.contract and
               x not in self.file_to_scratch]
        env = getattr(rec, "env", None)
        if len(new) != 1 or env is None:
            return False
        u = new[0]
        if self.in_main and self.main is not None and self._node is not None and \
                self._first_record(u) not in (None, self._node):
            return False  # (an earlier node reads it, one the loader could not work out: a
            # custom op's count; another size here is no solution, hostile probe seed 3201)
        k, rest = 0, {}
        for mono, c in terms(r):
            if len(mono) == 1 and mono[0].op == "sym" and mono[0].name == u:
                k = c
            elif any(u in f.free_symbols for f in mono):
                return False  # (not linear in it)
            else:
                rest[mono] = c
        rest_in = self._file(from_terms(rest))
        rng = declared_range(env, u)
        if not k or rest_in is None or rng is None:
            return False
        self.match(u, (d - rest_in) // k)
        if d.op == "sym" and d.name not in self.contract:
            self.taken.add(d.name)
        try:
            b = self.env.bounds((d - rest_in) // k)
        except Exception:  # noqa: BLE001 - a question the engine cannot take
            b = None
        if b is not None and (b.hi < rng.lo or b.lo > rng.hi):
            return False
        if abs(k) == 1 and b is not None and rng.lo <= b.lo and b.hi <= rng.hi:
            return True
        self.extra[tuple(self._path)] = ("in", rng.lo, rng.hi, rest_in, k)
        return True

    def match(self, name: str, d: Expr) -> None:
        """The file's symbol ``name`` read from data is ``d`` from here on (its bounds
        kept: ``read_points.settle``)."""
        self.file_to_scratch[name] = d
        try:
            b = self.env.bounds(d)
        except Exception:  # noqa: BLE001 - a question the engine cannot take: any value
            b = Range()
        old = self.spans.get(name)
        self.spans[name] = b if old is None else Range(min(old.lo, b.lo), max(old.hi, b.hi))

    def _unmatched(self, d: Expr, r: Expr) -> bool:
        """Whether the file's symbol ``r`` and the evaluated one ``d`` are both unmatched."""
        return self._file(r) is None and d.name not in self.contract and \
            d.name not in self.taken and d.name not in self.opaque

    def _file(self, e: Expr) -> Expr | None:
        """A recorded size in scratch symbols; None where it names a symbol of the file's
        own (read from data) that no evaluated symbol was matched with."""
        free = e.free_symbols
        if free <= self.contract:
            return e
        if not free - self.contract <= self.file_to_scratch.keys():
            return None
        return substitute(e, lambda s: self.file_to_scratch.get(s.name))


def _sizes(v: Any, contract: set) -> bool:
    """Whether ``v`` (tensors, sizes, in lists) holds only sizes of the inputs'."""
    if isinstance(v, Proxy):
        v = v.st_meta
    if isinstance(v, TensorMeta):
        return all(_sizes(s, contract) for s in v.shape)
    if isinstance(v, (list, tuple)):
        return all(_sizes(x, contract) for x in v)
    if isinstance(v, torch.SymInt):
        return {str(s) for s in to_expr(v.expr).free_symbols} <= contract
    return isinstance(v, int) and not isinstance(v, bool)


def _scratch(v: Any, like: TensorMeta, env: Any) -> Any:
    """A recorded tensor value as a TensorMeta of sizes of ``env`` (on ``like``'s device)."""
    m = v.st_meta if isinstance(v, Proxy) else v
    return TensorMeta(tuple(s if isinstance(s, int) else new_symbolic(to_expr(s.expr), env)
                            for s in m.shape), m.dtype, like.device)


def _held(values: dict) -> set:
    return set().union(*(_names(v) for v in values.values()))




__all__ = ["Recorded"]
