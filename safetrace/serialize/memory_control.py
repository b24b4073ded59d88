"""How the loader's memory evaluation (``memory.StaticMemory``) goes through control flow.

A ``cond``'s branches, a ``while_loop``'s condition and body, a ``map``'s or a ``scan``'s
body: each subgraph is evaluated with what the call passes it (once per distinct set of
operand sizes), in a scope of its own, and its live bytes become candidates for the peak
at the node that calls it.  A mixin of ``StaticMemory``: it uses that class's evaluation
(``_run``), its checks (``_predicate``, ``_require``, ``_fails``) and its state.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.errors.load import bad_file
from safetrace.meta import TensorMeta
from safetrace.serialize import carries, never_runs
from safetrace.serialize.allocations import out_bytes
from safetrace.serialize.allowlist import CALLABLES, NUMERIC
from safetrace.serialize.branch_facts import branch_conditions, merged, pinned, tighten
from safetrace.serialize.codec import new_symbolic
from safetrace.serialize.constant_sizes import UNKNOWN as _UNKNOWN
from safetrace.serialize.evaluation import is_int as _is_int, key as _key, sub as _sub
from safetrace.serialize.predicate_sizes import predicate_values
from safetrace.serialize.work import Tally
from safetrace.symbolic import eq, to_expr
from safetrace.symbolic.expr import FALSE
from safetrace.symbolic.scope import scoped
from safetrace.trace.mutation import written_inputs

# what one iteration costs beyond its kernels' elements, in elements (about a nanosecond
# each, as max_work counts them): torch's while_loop runs an iteration of a small body in
# about 15 us, its map or scan a slice in about 130 us; counted so that a loop or a map
# over empty tensors (zeros(2**40, 0): no element, no byte) is bounded by max_work too
LOOP_ITERATION_WORK = 1 << 14
SLICE_WORK = 1 << 17
_CPU = torch.device("cpu")
# Python callables of size arithmetic (and assert_sym): never given a tensor
SIZE_ARITHMETIC = frozenset(fn for name, fn in (
    (n, getattr(operator, n.split(".")[1], None)) for n, r in CALLABLES.items()
    if n.startswith("operator.") and r[2] in (NUMERIC, "assert", "pow", "shift"))
    if fn is not None)


class SubgraphMemory:
    """The control-flow part of ``StaticMemory`` (see the module's docstring)."""

    def _control(self, node: torch.fx.Node, meta: dict, data: dict, tainted: set,
                 inner: dict, tally: Tally) -> Any:
        """A cond, while_loop, map or scan: its subgraphs evaluated with what the call
        passes them; their live bytes become candidates at this node."""
        kind = node.target.name()
        subs = getattr(node.graph, "st_submodules", {})

        def graph_of(a: Any) -> Any:
            sub = subs.get(a.target) if isinstance(a, torch.fx.Node) and a.op == "get_attr" \
                else None
            return None if sub is None else sub.graph

        try:
            if kind == "cond":
                if isinstance(node.args[0], torch.fx.Node) and node.args[0] in meta:
                    self._predicate(node, meta[node.args[0]], "the predicate of torch.cond")
                operands = list(node.args[3])
                values = _sub(operands, meta)
                outs, cands = [], []
                given = branch_conditions(node.args[0], predicate_values(
                    node.args[0], meta, self.env, SIZE_ARITHMETIC), self.env.int_cls)
                for a, g in zip(node.args[1:3], given):  # (both branches' work: a bound)
                    out, c = self._call(graph_of(a), operands, values, data, tainted, tally,
                                        None, g, branch=True)
                    outs.append(out)
                    cands.extend(c)
                inner[node] = cands
                never_runs.branches(node, outs, given[0] is None)
                if self.recorded is not None:  # (also where one branch is not worked out)
                    self.recorded.kinds(node, outs)
                if outs[0] is not _UNKNOWN and _key(outs[0]) == _key(outs[1]):
                    return outs[0]
                own = None if self.recorded is None else \
                    self.recorded.each_branch(node, outs, given)
                if own is not None:  # (the file's form, each branch's where it runs)
                    return own
                # (sizes in two forms, or that differ: the exporter's new size, read from
                # data; the file must record it as one of its own, not as another size)
                both = merged(self.env, outs, given, self.bound_symbols | self.opaque.keys(),
                              None if self.recorded is None else self.recorded.input_forms(node))
                if both is None:
                    return _UNKNOWN
                if self.recorded is not None:
                    self.recorded.strict |= both[1]
                return both[0]
            if kind == "while_loop":
                carried, extra = list(node.args[2]), list(node.args[3])
                # (a carried number changes from one iteration to the next: any value)
                values = [new_symbolic(self.env.new_unbacked(None, None), self.env)
                          if i < len(carried) and _is_int(v) else v
                          for i, v in enumerate(_sub(carried + extra, meta))]
                fresh = {k: v for k, v in data.items() if k not in carried}
                cands, once, first = [], Tally(), values
                while values is not None:  # (again, with any size where the body changes one)
                    for i, a in enumerate(node.args[:2]):  # (the work of one iteration)
                        # (the condition runs at every call, the body where it holds)
                        out, c = self._call(graph_of(a), carried + extra, values, fresh,
                                            tainted, once if values is first else Tally(),
                                            True if i == 0 else None)
                        cands.extend(c)
                        if i == 0:
                            pred = out[0] if isinstance(out, (list, tuple)) and \
                                len(out) == 1 else out
                            self._predicate(node, pred, "the result of the while_loop's "
                                                        "condition")
                    if not isinstance(out, (list, tuple)) or values is not first:
                        break
                    never_runs.carried(node, values[:len(carried)], list(out))
                    more = carries.grown(self.env, values[:len(carried)], list(out))
                    values = None if more is None else more + values[len(carried):]
                values = first
                once.add(LOOP_ITERATION_WORK, node)  # (an iteration's own cost, empty or not)
                tally.merge(once)
                self.loops.setdefault(node, []).append(once)
                carried_bytes = out_bytes(values[:len(carried)])
                inner[node] = [(carried_bytes + c, w) for c, w in cands]
                if out is _UNKNOWN or _key(list(out)) != _key(values[:len(carried)]):
                    return _UNKNOWN
                return list(out)
            if kind in ("map_impl", "scan"):
                return self._mapped(node, kind, graph_of(node.args[0]), meta, data, tainted,
                                    inner, tally)
        except KeyError:  # an operand not known: its subgraphs are not evaluated, and
            self._subgraphs_at_call(node, meta, True)  # what they record is checked at call
        return _UNKNOWN

    def _mapped(self, node: torch.fx.Node, kind: str, body: Any, meta: dict, data: dict,
                tainted: set, inner: dict, tally: Tally) -> Any:
        """A map (``map_impl(body, xs, args)``) or a scan (``scan(combine, init, xs,
        additional)``): the body evaluated once on a slice of each xs (dim 0 dropped); its
        peak counts on top of the results of every iteration, kept until they are stacked
        (map's outputs, scan's ys: n of them, n the length of the xs)."""
        if kind == "map_impl":
            init, xs, extra = [], list(node.args[1]), list(node.args[2])
        else:
            init, xs, extra = list(node.args[1]), list(node.args[2]), list(node.args[3])
        xv = _sub(xs, meta)
        if not xv or not all(isinstance(v, TensorMeta) and v.shape for v in xv):
            bad = [v for v in xv if isinstance(v, TensorMeta) and not v.shape or isinstance(
                v, (int, float, self.env.int_cls))]
            if bad:  # (torch's kernel reads xs[0].shape[0]: IndexError)
                self._fails(node, node.target, "its xs include a number or a tensor of 0 "
                                               "dims, not one it can slice")
            return _UNKNOWN
        n = xv[0].shape[0]
        self._same_lengths(node, kind, [v.shape[0] for v in xv])
        slices = [TensorMeta(tuple(v.shape[1:]), v.dtype, _CPU) for v in xv]
        init_v, extra_v = _sub(init, meta), _sub(extra, meta)
        fresh = {k: v for k, v in data.items() if k not in xs and k not in init}
        body_work = Tally()
        has = n >= 1  # (a plain bool where the size's range decides it)
        some = has if isinstance(has, bool) else self.env.decide(has.expr)
        runs = None if some is False else True if some else has.expr
        if some is not True:  # (torch's kernel reads slice 0: IndexError on no slices)
            why = f"torch's {kind} runs its body on at least one slice of its xs"
            if some is False and self._runs() == []:
                raise bad_file(f"node {node.name!r}", f"{why}: it has none at every call")
            self._require(node, [(FALSE if some is False else runs, why)])
        out, cands = self._call(body, init + xs + extra, init_v + slices + extra_v, fresh,
                                tainted, body_work, runs)
        body_work.add(SLICE_WORK, node)  # (a slice's own cost: xs of [2**40, 0] are empty)
        tally.merge(body_work, n)  # (n iterations)
        carried = out_bytes(init_v)
        if out is _UNKNOWN:
            inner[node] = [(carried + c, w) for c, w in cands]
            return _UNKNOWN
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        never_runs.carried(node, init_v, out[:len(init)], kind)
        for same, why in carries.changed(self.env, init_v, out[:len(init)]):
            if same is False and self._runs() == []:
                raise bad_file(f"node {node.name!r}", f"scan: {why}")
            self._require(node, [(FALSE if same is False else same, why)])
        ys = out[len(init):]
        if not all(isinstance(y, TensorMeta) for y in ys):
            inner[node] = [(carried + c, w) for c, w in cands]
            return _UNKNOWN
        kept = n * out_bytes(ys)  # (every iteration's results, before the stack)
        inner[node] = [(carried + kept + c, w) for c, w in cands] + [(carried + kept, node)]
        stacked = [TensorMeta((n, *y.shape), y.dtype, _CPU) for y in ys]
        return [*init_v, *stacked] if kind == "scan" else stacked

    def _same_lengths(self, node: torch.fx.Node, kind: str, lengths: list) -> None:
        """A map's or a scan's xs are of one length (torch's kernel zips their slices: a
        longer one would lose its last slices silently): refused at load where they differ
        at every call, checked before the node where they may."""
        n = lengths[0]
        for i, m in enumerate(lengths[1:], start=1):
            same = eq(to_expr(n), to_expr(m))
            answer = same if isinstance(same, bool) else self.env.decide(same)
            if answer is True:
                continue
            why = f"torch's {kind} slices each of its xs along dim 0: xs[{i}] is as long as " \
                  f"xs[0] ({m} and {n})"
            if answer is False and self._runs() == []:
                raise bad_file(f"node {node.name!r}", f"{why}, not at any call")
            self._require(node, [(FALSE if answer is False else same, why)])

    def _call(self, graph: Any, operands: list, values: list, data: dict,
              tainted: set, tally: Tally, runs: Any = None,
              given: Any = None, branch: bool = False) -> tuple[Any, list]:
        """``runs``: when the subgraph runs at a call (see ``_ctx``); ``given``: a condition
        on sizes that holds wherever it runs (a cond branch's predicate, or its negation);
        ``branch``: a cond branch (what it is given is fixed for the call: no carry)."""
        if graph is None:
            return _UNKNOWN, []
        ph = [n for n in graph.nodes if n.op == "placeholder"]
        written = written_inputs(graph)
        known = {p: data[a] for p, a in zip(ph, operands)
                 if isinstance(a, torch.fx.Node) and a in data and p.name not in written}
        key = (id(graph), _key(values), tuple(sorted(id(t) for t in known.values())), given)
        if key not in self._subs:
            inputs = {p.name for p, a in zip(ph, operands) if a in tainted}
            self._ctx.append(runs)
            matched = self.recorded.scope() if self.recorded is not None else None
            steps = self.recorded.steps if self.recorded is not None else None
            try:  # (what a subgraph's ops establish is no fact outside it: a branch may
                # not run, and what a body needs is checked where it is needed)
                with scoped(self.env):
                    try:
                        if given is not None:
                            self.env.add_fact(given)
                            found = tighten(self.env)  # (what it and the contract leave)
                            if self.recorded is not None:
                                self.recorded.steps = self.recorded.steps + found
                    except ValueError:
                        pass  # (a branch that never runs: nothing assumed)
                    self._subs[key] = pinned(self.env, lambda: self._run(  # (sizes its
                        graph, dict(zip(ph, values)), known, inputs))  # own checks pin)
                    if self.recorded is not None:
                        self.recorded.settle(graph, self.asserted.facts, values,
                                             loop=not branch)
            finally:
                self._ctx.pop()
                if matched is not None:
                    self.recorded.restore(matched)
                    self.recorded.steps = steps
        out, cands, work = self._subs[key]
        tally.merge(work)
        return out, cands


__all__ = ["LOOP_ITERATION_WORK", "SIZE_ARITHMETIC", "SLICE_WORK", "SubgraphMemory"]
