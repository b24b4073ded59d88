"""The memory a loaded program's tensors computed from its own constants and state take.

A small file can describe large tensors without declaring them: an outer broadcast of two
64 KB constants (1 GiB), a reduction of a zero-byte ``[0, 2**20, 2**20]`` constant over
dim 0 (4 TiB), a repeat of a weight, or sizes read from a constant's values (``bincount``,
``one_hot``, ``item`` then ``zeros``, ``repeat_interleave``).  The graph's own metadata is
the file's word, so it is not used: every node whose tensor inputs are all the program's
state and constants (or results computed from them) is evaluated at load by safetrace's
own shape rules, and a size read from data is read from the constant itself, unless the
program writes that tensor in place.
The bytes of every such result are summed (an upper bound of what is alive at once) and
held to the program's allocation budget (``16 * max_alloc_numel`` bytes).
"""

from __future__ import annotations

import math
import operator
import time
from typing import Any

import torch

from safetrace.errors import OpShapeError
from safetrace.errors.load import bad_file, over_budget
from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE
from safetrace.rules.registry import RULES
from safetrace.serialize import never_runs, peak, unruled
from safetrace.exporter.contract import TensorInput
from safetrace.serialize.codec import new_symbolic
from safetrace.symbolic import not_, or_
from safetrace.symbolic.expr import FALSE
from safetrace.serialize.allocations import out_bytes, result_bytes
from safetrace.serialize.asserted import Asserted
from safetrace.serialize.branch_facts import steps
from safetrace.serialize.recorded import Recorded
from safetrace.serialize.constant_sizes import UNKNOWN as _UNKNOWN, from_data as _from_data
from safetrace.serialize.scratch import scratch_env as _scratch_env, simple as _simple
from safetrace.serialize.work import (Tally, forget as forget_numels, has_loop_tensor,
                                      scalar_returns, touched)
from safetrace.serialize.evaluation import (evaluate as _evaluate, python as _python,
                                           sizes as _sizes, sub as _sub,
                                           sym_query as _sym_query)
from safetrace.serialize.as_recorded import AsRecorded
from safetrace.serialize.memory_control import SIZE_ARITHMETIC, SubgraphMemory
from safetrace.trace.asserts import assert_sym
from safetrace.trace.mutation import written_inputs

# nodes computed from the inputs that one load analyses (each evaluation of a subgraph's
# counted anew; one of many symbolic sizes counts as more: ``_extra_units``): past them
# the rest is not worked out but checked at call (``_late``), so
# a file cannot make loading slow through it.  A count, not a time, so that whether a
# file of ours loads is the same on every machine: a program of 20k ordinary nodes (a
# 800-block transformer) fits, in about 0.9 s of one 2-core VM's CPU
ANALYSIS_NODES = 1 << 15
# and CPU seconds, a backstop against a file whose nodes are each slow to analyse (huge
# size expressions): none of ours comes near it
ANALYSIS_SECONDS = 5.0
aten = torch.ops.aten
_CPU = torch.device("cpu")


class StaticMemory(SubgraphMemory, AsRecorded):
    """Evaluate a whole program's shapes (subgraphs included) and bound what is alive.

    The user inputs' shapes are the contract's (symbols ranging over the declared space),
    the state's and constants' their tensors' own; every other shape is recomputed by
    safetrace's shape rules in a scratch environment where no undecided question is
    answered by an example (a rule that would need one leaves its result unknown).  The
    bytes alive at each point (``peak.py``) are then held to ``limit``: at load where even
    the smallest declared sizes pass it, at call (``call_check``, with the call's sizes)
    where only some declared sizes do.
    """

    def __init__(self, limit: int, max_ops: int, contract: Any = None,
                 work_limit: float = math.inf) -> None:
        self.limit, self.max_ops, self.work_limit = limit, max_ops, work_limit
        self.bounded: dict = {}  # kernel node -> whether its sizes and work are bounded by
        # the input sizes at every evaluation (else: work.check before it, at call)
        self.work_open: list = []  # (count, work expression, node, >= 0) at call
        self.loops: dict = {}  # while_loop node -> the work of one iteration, per evaluation
        self.ops = 0
        self.env = _scratch_env(contract)
        self.contract = contract
        self.open: list = []  # (bytes expression, node) the declared ranges leave unbounded
        self._subs: dict = {}  # (subgraph, what it is called with) -> (outputs, candidates)
        self.opaque: dict = {}  # symbol of an input dim too complex to analyse -> (leaf, dim)
        self.deadline = math.inf
        self.analysed = 0  # (nodes computed from the inputs analysed: ``ANALYSIS_NODES``)
        self.main: torch.fx.Graph | None = None  # (a node of it that always fails: refused)
        self.values: dict = {}
        self.gave_up: torch.fx.Node | None = None  # where the analysis stopped
        self.dtypes: dict = {}  # node -> the dtype its tensor has, where the rules know it
        self.sized: dict = {}  # node -> whether its int is a size the call check bounds
        self.bound_symbols = {s.name for s in getattr(contract, "symbols", ())
                              if s.backed or s.where is not None}
        # (condition, node, why): what a main-graph kernel requires of the input sizes
        # (eager raises where it fails) that the contract does not decide: checked at call
        self.required: list = []
        # (condition, node, why, the values of its graph's nodes): what a kernel requires
        # where the call check cannot decide it (in a branch or a loop body, or of a size
        # read from data): checked in its graph before it (requirements.py)
        self.inline: list = []
        self._meta: dict = {}  # the values of the graph being evaluated
        # one entry per subgraph being evaluated: the condition under which it runs at a
        # call (True: always; an expression: a map's length >= 1), None where it may not
        # run at all (a cond branch, a loop body)
        self._ctx: list = []
        self.recorded: Recorded | None = None  # (the file's metadata held against ours)
        self.asserted = Asserted(self.env, None)  # (what the graph's assertions establish)
        self._real: dict = {}  # node -> the symbols of its real sizes (``_as_recorded``)
        self.dtype_checks: list = []  # (node, the dtype and rank the file records)
        # (node, condition) of a record's check at call -> why the file is refused where
        # no check can read it (None: past the analysis' time)
        self.late_checks: dict = {}
        self.late_sizes = 0  # (sizes past the time checked at call: ``LATE_SIZES``)
        self._soft = False  # (``as_recorded._subgraphs_at_call``)

    def graph(self, graph: torch.fx.Graph, tensors: dict[str, tuple],
              user: dict | None = None) -> None:
        """``tensors``: placeholder name -> (the state or constant tensor it is bound to,
        whether the program updates it: its values then change from call to call);
        ``user``: placeholder name -> the user input's TensorMeta (or symbolic int)."""
        meta, data = {}, {}
        self.main = graph
        self.values = meta  # (node -> what the analysis works out it is)
        written = written_inputs(graph)
        # (the memory of every tensor the program writes: a file's aliases can bind a name
        # the program only reads to it, whose values then change from call to call too)
        changing = {_memory(t) for name, (t, updated) in tensors.items()
                    if updated or name in written}
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            entry = tensors.get(node.name)
            if entry is not None:
                t, updated = entry
                meta[node] = TensorMeta(tuple(t.shape), t.dtype, _CPU)
                if _memory(t) not in changing:
                    data[node] = t
            elif user is not None and node.name in user:
                value = self._input(user[node.name])
                if value is not _UNKNOWN:
                    meta[node] = value
        self.recorded = Recorded(self.env, self.bound_symbols, self._opaque_sizes(), graph)
        self.asserted = Asserted(self.env, graph)
        previous, ACTIVE.env = ACTIVE.env, self.env
        self.deadline = time.process_time() + ANALYSIS_SECONDS
        self.analysed = 0
        try:
            _, candidates, tally = self._run(graph, meta, data, set(user or ()))
        finally:
            ACTIVE.env = previous
            forget_numels()
        self.check(candidates)
        self.check_work(tally)
        self.recorded.refuse(self.asserted.facts)
        self.records_at_call()

    def _input(self, inp: Any) -> Any:
        """A user input as the contract declares it: a TensorMeta of symbolic sizes, a
        symbolic int, or the constant it must equal."""
        if isinstance(inp, TensorInput):
            sizes = tuple(self._dim(inp, d, dim) for d, dim in enumerate(inp.dims))
            if inp.scalar:
                return sizes[0] if sizes else _UNKNOWN
            return TensorMeta(sizes, inp.dtype, _CPU)
        value = getattr(inp, "value", None)
        return value if isinstance(value, (int, float, bool)) else _UNKNOWN

    def _opaque_sizes(self) -> dict:
        """opaque symbol name -> the contract's expression of the dim it stands for."""
        out = {}
        for name, (leaf, d) in self.opaque.items():
            dim = self.contract.inputs[leaf].dims[0 if d is None else d]
            out[name] = dim.size
        return out

    def _dim(self, inp: TensorInput, d: int, dim: Any) -> Any:
        """One input dim's size: its expression, or where that is too complex to reason
        about, a symbol of its own (no range) that the call check reads off the input."""
        if isinstance(dim.size, int):
            return dim.size
        if _simple(dim.size):
            return new_symbolic(dim.size, self.env)
        name = f"d{len(self.opaque)}"
        leaf = next(i for i, x in enumerate(self.contract.inputs) if x is inp)
        self.opaque[name] = (leaf, None if inp.scalar else d)
        return new_symbolic(self.env.new_unbacked(0, None, name=name), self.env)

    def _run(self, graph: torch.fx.Graph, meta: dict, data: dict,
             inputs: set) -> tuple[Any, list, Tally]:
        """Shapes and bytes of every node of ``graph`` whose placeholders ``meta`` knows;
        returns (the output's values, or _UNKNOWN, the live-bytes candidates, the work)."""
        nbytes: dict = {}
        tally = Tally()
        inner: dict = {}  # control-flow node -> its subgraphs' candidates
        outer, self._meta = self._meta, meta
        try:
            return self._nodes(graph, meta, data, inputs, nbytes, tally, inner)
        finally:
            self._meta = outer

    def _nodes(self, graph: torch.fx.Graph, meta: dict, data: dict, inputs: set,
               nbytes: dict, tally: Tally, inner: dict) -> tuple[Any, list, Tally]:
        for node in graph.nodes:
            if node in meta and node.op == "placeholder":
                self._note(node, meta[node])
                self._held(node, meta)
        tainted = {n for n in graph.nodes if n.op == "placeholder" and n.name in inputs}
        for node in graph.nodes:
            if node.op == "call_function":
                if any(a in tainted for a in node.all_input_nodes):
                    tainted.add(node)
                    self.analysed += 1
                    if self.gave_up is not None or self.analysed > ANALYSIS_NODES or \
                            time.process_time() > self.deadline:
                        self.gave_up = self.gave_up or node
                        self.bounded[node] = False
                        self._late(node, meta)  # (its record checked at call)
                        continue
                if isinstance(node.target, torch._ops.HigherOrderOperator):
                    out = self._control(node, meta, data, tainted, inner, tally)
                    size = _UNKNOWN if out is _UNKNOWN else out_bytes(out)
                else:
                    out, size = self._node(node, meta, data, node not in tainted, tally)
                if out is not _UNKNOWN:
                    meta[node] = out
                    if node in tainted:  # (a node of many symbolic sizes costs more)
                        self.analysed += _extra_units(out)
                if size is not _UNKNOWN:
                    nbytes[node] = size
                self._held(node, meta)
        for node in graph.nodes:
            if node in meta and node.op == "call_function":
                self._note(node, meta[node])
        output = next((n for n in graph.nodes if n.op == "output"), None)
        try:
            result = _sub(output.args[0], meta) if output is not None else _UNKNOWN
        except KeyError:
            result = _UNKNOWN
        return result, peak.candidates(graph, nbytes, inner), tally

    def _held(self, node: torch.fx.Node, meta: dict) -> None:
        """Hold ``node``'s recorded value against the evaluated one as soon as it is worked
        out: under what the graph's assertions before it establish, not those after it."""
        if self.recorded is not None and node in meta:
            self.recorded.check(node, meta[node], self.asserted.facts, meta)

    def _note(self, node: torch.fx.Node, value: Any) -> None:
        """Remember a tensor node's dtype (None: unknown, or not the same at every call of
        a shared subgraph)."""
        dtype = value.dtype if isinstance(value, TensorMeta) else None
        if self.dtypes.get(node, dtype) != dtype:
            dtype = None
        self.dtypes[node] = dtype
        if isinstance(value, bool) or not isinstance(value, (int, self.env.int_cls)):
            sized = False
        elif isinstance(value, int):
            sized = True
        else:  # (a size of the inputs, not one read from data as the program runs)
            sized = {str(x) for x in value.expr.free_symbols} <= \
                self.bound_symbols | self.opaque.keys()
        self.sized[node] = self.sized.get(node, True) and sized

    def is_sized(self, node: Any) -> bool:
        """Whether ``node`` computes an int the declared input sizes bound (a constant, or
        an expression of the inputs' sizes), by the loader's own evaluation: not a value
        read from data, nor one it could not work out (the file's metadata is not asked)."""
        return not isinstance(node, torch.fx.Node) or self.sized.get(node, False)

    def _node(self, node: torch.fx.Node, meta: dict, data: dict, static: bool,
              tally: Tally) -> tuple:
        target = node.target
        prior = self.bounded.get(node, True)  # (a shared subgraph's node: every evaluation)
        self.bounded[node] = False  # (until its sizes and work are worked out below)
        if target is assert_sym:
            self.asserted.node(node, meta)
        try:
            args = _sub(node.args, meta)
            kwargs = _sub(node.kwargs, meta)
        except KeyError:  # a value not known (an unknown op's result)
            if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
                # (an operand kept as recorded has the record's rank when this node runs,
                # checked right after it: a dim outside it fails whenever it runs, in a
                # branch too, and a file of ours never records one)
                checked = self._checked_record
                if self._runs() == []:
                    never_runs.dim_range(node, target, lambda a: (
                        meta.get(a) or checked(a)) if isinstance(a, torch.fx.Node) else a)
                else:
                    never_runs.dim_range(node, target, lambda a: checked(a) if isinstance(
                        a, torch.fx.Node) else a, "whenever it runs")
            why = never_runs.misused_unknown(target, node, meta, self.env.int_cls) \
                if isinstance(target, torch._ops.OpOverload) else None
            if why is not None:
                return self._fails(node, target, why), _UNKNOWN
            self._as_recorded(node)  # (its record is checked at call)
            return _UNKNOWN, _UNKNOWN
        if not isinstance(target, torch._ops.OpOverload):
            if target is operator.getitem or target in SIZE_ARITHMETIC or target is assert_sym:
                never_runs.python_value(node, args)  # (a subgraph's assert_sym too: session 31)
            if target is operator.getitem and isinstance(args[0], (list, tuple)) and \
                    type(args[1]) is int and not -len(args[0]) <= args[1] < len(args[0]):
                return self._fails(node, target, f"value {args[1]} of {node.args[0]}, which "
                                   f"returns {len(args[0])}"), _UNKNOWN
            if node.graph is self.main:
                never_runs.division(self.env, node, args)
            out = _python(target, args, self.env)
            if out is _UNKNOWN or not all(_simple(x.expr) for x in _sizes(out)):
                self._number_unknown(node)  # (its record checked at call)
                return _UNKNOWN, _UNKNOWN
            if node.graph is self.main:
                never_runs.int64(self.env, node, out)
            return out, 0
        if static:  # (evaluating what depends on the inputs costs one rule per node)
            self.ops += 1
            if self.ops > self.max_ops:
                raise over_budget(f"node {node.name!r}", f"the program applies more than "
                                  f"{self.max_ops} operators to its own state and constants "
                                  "(their memory is evaluated at load)", "max_static_ops",
                                  2 * self.max_ops)
        why = never_runs.misused_kind(target, args, kwargs, self.env.int_cls)
        if why is not None:
            return self._fails(node, target, why), _UNKNOWN
        out = _from_data(target, node, args, kwargs, data)
        if out is not _UNKNOWN and self.recorded is not None:
            self.recorded.read.add(node)  # (a size read from a constant's values)
        if out is _UNKNOWN:
            out = self._evaluate(target, args, kwargs, node, static)
        if out is _UNKNOWN and scalar_returns(target):  # (a number: reads its operands)
            self._work(node, touched(target, args, kwargs, None), tally, prior)
        if out is _UNKNOWN or not all(_simple(x.expr) for x in _sizes(out)):
            return _UNKNOWN, _UNKNOWN
        if node.graph is not self.main:  # (the main graph's: never_runs.state_keeps_shape)
            never_runs.reshaped_operand(node, target, args, out)
        # (counts of a per-element loop given as a tensor: read at call, work.check)
        self._work(node, touched(target, args, kwargs, out), tally,
                   prior and not has_loop_tensor(target, args))
        return out, result_bytes(target, out, args, kwargs)

    def _work(self, node: torch.fx.Node, value: Any, tally: Tally, prior: bool) -> None:
        """Count a kernel's work; it is bounded where that is a number or an expression of
        the input sizes (a size read from data is checked before the kernel, at call)."""
        tally.add(value, node)
        ok = isinstance(value, int) or (_simple(value.expr) and {
            str(x) for x in value.expr.free_symbols} <= self.bound_symbols | self.opaque.keys())
        self.bounded[node] = prior and ok

    def _evaluate(self, op: Any, args: Any, kwargs: dict, node: torch.fx.Node,
                  static: bool) -> Any:
        """The op's result metadata by safetrace's own shape rule, unknown without one or
        where the rule would have to assume an answer (no example sizes here)."""
        if op._opname in ("sym_size", "sym_numel", "sym_storage_offset", "sym_stride"):
            if node.graph is self.main:
                never_runs.size_query(node, op, args)
            return _sym_query(op, args)
        guards, settled = len(self.env.guards), len(self.env.settled)
        out = _evaluate(op, args, kwargs)
        if out is _UNKNOWN and op not in RULES:
            out = unruled.result(op, args, kwargs)
            if out is unruled.SYMBOLIC and op.namespace != "aten" or out is _UNKNOWN:
                self._as_recorded(node)  # (a custom op over varying sizes, or data-dependent)
                out = _UNKNOWN
            if out is unruled.SYMBOLIC:
                raise bad_file(f"node {node.name!r}", f"{op} has no shape rule: safetrace's "
                               "exporter records such an operator only where its operands' "
                               "sizes are static, and here they vary with the inputs")
        if len(self.env.guards) != guards:
            return _UNKNOWN  # (never: the scratch symbols have no hints)
        self._require(node, [(x.cond, x.why) for x in self.env.settled[settled:]
                             if x.asserted])  # (eager raises where it fails, or computes
        # otherwise)
        if isinstance(out, OpShapeError):
            # (a rule refuses symbolic sizes only where no declared size passes: one it
            # cannot decide adds a guard or raises otherwise, and is left unknown above)
            return self._fails(node, op, str(out))
        return out

    def _fails(self, node: torch.fx.Node, op: Any, why: str) -> Any:
        """A node that fails wherever it runs: refused at load where it runs at every call;
        else (a map body failing on every slice: only a call of no slices runs; a branch or
        a loop body: it fails where it runs) checked in its graph, before it."""
        if self._runs() == []:
            raise bad_file(f"node {node.name!r}", f"{op} fails at every call of the "
                           f"program, whatever its inputs: {why[:300]}")
        self._require(node, [(FALSE, f"{op} fails wherever it runs: {why[:200]}")])
        return _UNKNOWN

    def _runs(self) -> list | None:
        """When the node being evaluated runs at a call: [] at every call (the main graph,
        a while_loop's condition, a map body of a length >= 1), else the conditions it runs
        under (a map body: its length >= 1); None where that is not known (a branch)."""
        out = []
        for c in self._ctx:
            if c is None:
                return None
            if c is not True:
                out.append(c)
        return out

    def _require(self, node: torch.fx.Node, conds: list) -> None:
        """Keep what the rule assumed of sizes the contract leaves open, where the excluded
        sizes fail in eager (``rules.common.check``; a broadcast of ``[s0]`` with ``[5]`` needs
        ``s0 in (1, 5)``; the exporter only writes programs whose contract implies every
        such condition, so in a file it is checked before each call (``peak.CallCheck``).
        A map or scan body's holds where the body runs (a length >= 1).  A branch's or a
        loop body's (they run only where taken, a loop body on carried values that change),
        and one on a size read from data (the call cannot tell it), are checked in their
        graph, before the node (``inline``)."""
        runs = self._runs()
        known = self.bound_symbols | self.opaque.keys()
        found = self.recorded.steps if self.recorded is not None else []
        for cond, why in conds:
            if found and steps(self.env, cond, found) is True:
                continue  # (it holds where the branch runs: its facts leave a size one
                # value in every m, ``branch_facts.tighten``)
            if runs is None or not {str(x) for x in cond.free_symbols} <= known:
                self.inline.append((cond, node, why, self._meta))
                continue
            if runs:
                cond = or_(*(not_(r) for r in runs), cond)
            self.required.append((cond, node, why))

    def _predicate(self, node: torch.fx.Node, pred: Any, what: str) -> None:
        """A cond's predicate (a while_loop condition's result) is one element (torch
        raises otherwise): refused at load where it never is, checked at call where only
        some declared sizes make it one."""
        runs = self._runs()
        if not isinstance(pred, TensorMeta):
            return
        one = math.prod(pred.shape) == 1
        answer = one if isinstance(one, bool) else self.env.decide(one.expr)
        if answer is False and runs == []:
            raise bad_file(f"node {node.name!r}", f"{what} has shape {list(pred.shape)}, "
                           "not one element, at every call of the program")
        if answer is not True:
            self._require(node, [(one.expr if answer is None else FALSE,
                                  f"{what} is one element")])

    def check(self, candidates: list) -> None:
        """Refuse at load what is over the limit at every declared size; what is over it at
        some sizes only is checked at call (a real model declares ranges whose largest
        sizes it is never called with: refusing it for them would refuse the model)."""
        worst, where, opened = 0, None, []
        for value, node in candidates:
            if isinstance(value, int):
                lo = hi = value
            else:
                try:
                    r = self.env.bounds(value.expr)
                    lo, hi = r.lo, r.hi
                except Exception:  # noqa: BLE001 - no bounds known: checked at call
                    lo, hi = 0, math.inf
            if lo <= self.limit:
                if hi > self.limit:  # (over only at some declared sizes: checked at call)
                    opened.append((value.expr, node))
                continue
            if lo > worst:
                worst, where = int(lo), node
        if worst > self.limit:
            sizes = "" if all(isinstance(v, int) for v, _ in candidates) else \
                " at the smallest declared input sizes"
            raise over_budget(
                f"node {where.name!r} ({where.target})", f"the tensors alive there take "
                f"{worst} bytes{sizes}, {self.limit} allowed (16 * max_alloc_numel bytes)",
                "max_alloc_numel", -(-worst // 16))
        self.open = peak.prune(opened, self.env)

    def check_work(self, tally: Tally) -> None:
        """Refuse at load a program whose kernels touch more than the work budget at every
        declared size; keep what is over it at some sizes only for the call check."""
        lo, hi, opened = tally.bounds(self.env)
        if lo > self.work_limit:
            node = tally.worst(self.env)
            where = f"node {node.name!r} ({node.target})" if node is not None else None
            sizes = "" if not tally.terms else " at the smallest declared input sizes"
            raise over_budget(where, f"one call's kernels touch {int(lo)} elements{sizes} "
                              f"(this is the largest), {self.work_limit} allowed", "max_work",
                              int(lo))
        if hi > self.work_limit:
            self.work_open = [(tally.const, None, tally.biggest[1], True), *opened]

    def call_check(self) -> Any:
        """The run-time check of the open bounds (None when there are none)."""
        if (not self.open and not self.work_open and not self.required) or \
                self.contract is None:
            return None
        return peak.CallCheck(self.open, self.contract, self.limit, self.opaque,
                              self.work_open, self.work_limit, self.required)



def _extra_units(value: Any) -> int:
    """What analysing a node of result ``value`` costs beyond one node of
    ``ANALYSIS_NODES``: its sizes that are not numbers, ``r`` of them, cost ``(r // 8)**2``
    more (the engine's products of ``r`` symbols grow as ``r**2``: a node of a rank-64
    tensor of symbolic sizes took 2 ms, 24 times one of rank 2, rank 32 6.5 times, rank
    8 twice; a transformer's values, of 1-3 such sizes, cost one node each)."""
    r = sum(not isinstance(d, int) for m in (value if isinstance(value, (list, tuple))
                                             else (value,)) if isinstance(m, TensorMeta)
            for d in m.shape)
    return (r // 8) ** 2


def _memory(t: torch.Tensor) -> int:
    """What identifies a tensor's memory (tied names, a Parameter and its data: one)."""
    return t.untyped_storage().data_ptr()


def state_of(inputs: list, state: dict, constants: dict, outputs: list) -> dict:
    """placeholder name -> (the state or constant tensor it is bound to, whether the
    program updates it: a buffer an output of the program is written back to)."""
    updated = {s.target for s in outputs if s.kind == "buffer_mutation"}
    out = {}
    for s in inputs:
        if s.kind in ("parameter", "buffer"):
            out[s.name] = (state[s.target], s.target in updated)
        elif s.kind == "constant":
            out[s.name] = (constants[s.target], False)
    return out


__all__ = ["StaticMemory", "state_of"]
