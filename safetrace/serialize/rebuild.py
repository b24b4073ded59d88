"""Rebuilding an ExportedProgram from a parsed format-2 document, field by field.

Nothing in the file is executed or imported: operators are looked up by name in
``torch.ops`` and must be on the allowlist (``allowlist.py``), other callables come from
an explicit registry, classes only from the ones already registered as pytree nodes.
"""

from __future__ import annotations

import keyword
import math
from typing import Any

import torch

from safetrace.errors.load import unchecked_inputs
from safetrace.exporter.contract import Contract, RangeConstraints, TensorInput, ValueRange
from safetrace.serialize import (allocations, allowlist, devices, memory, never_runs,
                                 operand_checks, read_points, record_checks, requirements,
                                 subgraphs, value_sizes, work)
from safetrace.serialize.budgets import Budgets
from safetrace.serialize.codec import (IDENT_RE, SYMBOL_RE, ValueDecoder, decode_record,
                                       decode_spec, expect, expect_keys, fail, new_env,
                                       undeclared)
from safetrace.serialize.state import StateReader
from safetrace.serialize.targets import name_to_target
from safetrace.exporter.api import export
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.signature import InputSpec, OutputSpec
from safetrace.meta import TensorMeta
from safetrace.symbolic.expr import dag_nodes, sym
from safetrace.trace.current import active_tracer
from safetrace.trace.graph import RUN_TIME_CHECKS, add_node
from safetrace.trace.proxy import Proxy

_RESERVED_NODES = frozenset({"self"})
MAX_SPLIT_LINES = 4096  # (the lines of a program's splits: one per split and side)
_ARG_TAGS = frozenset({"node", "list", "tuple", "float", "complex", "dtype", "device",
                       "layout", "memory_format", "ellipsis"})


class Builder(StateReader):
    def __init__(self, doc: dict, container: Any, external: dict | None,
                 allow_ops: frozenset, budgets: Budgets, allow_cuda: bool = False) -> None:
        self.doc = doc
        self.allow_cuda = allow_cuda
        self.container = container
        self.names = set(container.header)
        self.external = external
        self.allow_ops = allow_ops
        self.budgets = budgets
        self.targets: dict = {}  # call target name -> resolved target or why it is unknown

    def build(self) -> Any:

        doc = self.doc
        self.env = self._env(expect(doc["symbols"], list, "symbols"))
        state, constants = self._state()
        largest = max((t.numel() for t in [*state.values(), *constants.values()]), default=0)
        self.max_numel = max(self.budgets.max_alloc_numel, 4 * largest)
        held = sum(t.numel() for t in [*state.values(), *constants.values()])
        self.max_work = max(self.budgets.max_work, 4096 * held)
        self.alloc = allowlist.AllocBudget(self.max_numel)  # summed over every graph
        graph, placeholders, outputs = self._graph(expect(doc["nodes"], list, "nodes"))
        self._subgraphs(graph)
        record_checks.indices(self._all_graphs)
        clash = {n.target for n in graph.nodes if n.op == "get_attr"} & {
            k.split(".")[0] for k in [*state, *constants]}
        if clash:
            raise fail("subgraphs", f"subgraph {sorted(clash)[0]!r} has the name of the "
                                    "program's state (both would be attributes of its module)")
        in_spec = decode_spec(doc["in_spec"], "in_spec")
        kids = in_spec.children() if in_spec.type is tuple else []
        if len(kids) != 2 or kids[0].type is not tuple or kids[1].type is not dict:
            raise fail("in_spec", "the inputs' spec must be a tuple of (a tuple of the "
                                  "positional arguments, a dict of the keyword arguments)")
        out_spec = decode_spec(doc["out_spec"], "out_spec")
        self._contract_budget(doc["contract"])
        contract = self._contract(doc["contract"])
        self._contract_exprs(contract)
        if in_spec.num_leaves != len(contract.inputs):
            raise fail("in_spec", f"{in_spec.num_leaves} leaves, but the contract has "
                                  f"{len(contract.inputs)}")
        inputs = self._inputs(placeholders, len(contract.inputs), state, constants)
        never_runs.input_kinds(graph, inputs, contract)
        out_specs = self._outputs(len(outputs), state)
        n_user = sum(1 for s in out_specs if s.kind == "user_output")
        for g in self._all_graphs:  # (a loaded program saved again: its loader's checks
            requirements.strip(g)  # go before the analysis, which places new ones)
        bound = memory.StaticMemory(self.alloc.limit, self.budgets.max_static_ops, contract,
                                    self.max_work)
        bound.graph(graph, memory.state_of(inputs, state, constants, out_specs),
                    {s.name: contract.inputs[s.leaf] for s in inputs if s.kind == "user_input"})
        never_runs.writes_fit(outputs, out_specs, state, bound.values)
        never_runs.state_keeps_shape(graph, inputs, bound.values)
        contract = read_points.in_contract(contract, read_points.settle(
            self.env, bound.recorded.spans if bound.recorded else {}))
        bound.refuse_late(requirements.guard(self._all_graphs, bound.inline,
                                             bound.bound_symbols | bound.opaque.keys(),
                                             bound.required, bound.env))
        record_checks.guard(self._all_graphs, bound.dtype_checks)
        for g in {id(g): g for g in self._all_graphs}.values():
            allocations.guard_sizes(g, self.max_numel, bound.is_sized)
            value_sizes.guard(g, self.alloc.limit, bound.dtypes, bound.is_sized)
            operand_checks.guard(g, self.budgets.max_repeat)
            work.guard(g, bound.bounded, self.alloc.limit, self.max_work)
        for node, iterations in bound.loops.items():  # (the least an iteration touches)
            least = min(int(min(t.bounds(bound.env)[0], 1 << 62)) for t in iterations)
            subgraphs.limit_loop_work(node, least, self.max_work, self.alloc.limit)
        subgraphs.limit_nested_work(self._all_graphs, self.max_work)
        if out_spec.num_leaves != n_user:
            raise fail("out_spec", f"{out_spec.num_leaves} leaves, but the graph returns "
                                   f"{n_user} user outputs")
        try:
            graph.lint()
        except Exception as err:  # noqa: BLE001
            raise fail("nodes", f"inconsistent graph: {err}") from None
        # (the graph, not a GraphModule: the modules of its subgraphs, and their code, are
        # made on first use, so that loading costs no code generation per subgraph)
        ep = ExportedProgram(graph, inputs, out_specs, in_spec, out_spec, state=state,
                             constants=constants, contract=contract)
        ep.retrace = export  # run_decompositions retraces with st.export
        ep.dim_names = self._dim_names(contract)
        ep.constant_targets, ep.constant_aliases = self._constant_paths(
            constants, ep.graph_signature.non_persistent_buffers)
        ep.exported_training = expect(self.doc.get("training", False), bool, "training")
        graph.__dict__["st_splits"] = self._splits()
        # (format 1 also stores these two; the program derives them from its contract)
        self._range_constraints()
        self._pairs("dims_report", str)
        try:
            checks = ep._build_checks()
        except Exception as err:  # noqa: BLE001 - the contract could not be compiled
            raise fail("contract", f"cannot build the input checks: {str(err)[:200]}") from None
        size = len(getattr(checks, "__source__", ""))
        if size > self.budgets.max_check_code:
            raise fail("contract", f"the input checks are {size} characters of code, over the "
                                   f"budget (max_check_code={self.budgets.max_check_code})")
        ep._check_fn = _arith_safe(checks, bound.call_check(), devices.named(self._all_graphs))
        return ep

    def _subgraphs(self, graph: torch.fx.Graph) -> None:
        """The control-flow subgraphs (see ``subgraphs.py``), within the node budget."""
        graphs = {"": graph}
        total = len(graph.nodes)
        saved = subgraphs.paths(self.doc.get("subgraphs", []), self.budgets.max_nodes)
        # identical subgraphs (2000 torch.cond of one function) are built, checked and
        # code-generated once, and shared; their allocations still count each time
        keys, built = subgraphs.same_graphs(saved), {}
        for path, items in saved:
            total += len(items)
            if total > self.budgets.max_nodes:
                raise fail("subgraphs", f"more than {self.budgets.max_nodes} nodes in all "
                                        f"graphs (max_nodes)")
            if keys[path] in built:
                graphs[path], allocated = built[keys[path]]
                self.alloc.again(allocated, f"subgraph {path[:60]!r}")
                continue
            before = self.alloc.total
            graphs[path] = self._graph(items, subgraph=path)[0]
            built[keys[path]] = graphs[path], self.alloc.total - before
        subgraphs.attach(graphs, self.budgets.max_loop_iterations)
        self._all_graphs = list(graphs.values())
        for path, g in {id(g): (p, g) for p, g in graphs.items()}.values():
            if path:
                try:
                    g.lint()
                except Exception as err:  # noqa: BLE001
                    raise fail(f"subgraph {path!r}", f"inconsistent graph: {err}") from None

    # -- budgets of the contract (before and after decoding it) ---------------------------
    def _contract_budget(self, c: Any) -> None:
        conditions = c.get("conditions") if isinstance(c, dict) else None
        if isinstance(conditions, list) and len(conditions) > self.budgets.max_residual:
            raise fail("contract.conditions", f"{len(conditions)} conditions, over the budget "
                                              f"(max_residual={self.budgets.max_residual})")

    def _contract_exprs(self, contract: Any) -> None:
        exprs = [(f"contract.conditions[{i}]", c.cond)
                 for i, c in enumerate(contract.conditions)]
        for i, inp in enumerate(contract.inputs):
            if isinstance(inp, TensorInput):
                exprs += [(f"contract.inputs[{i}]", dim.size) for dim in inp.dims
                          if not isinstance(dim.size, int)]
                if inp.scalar and (len(inp.dims) != 1 or inp.layout is not None or
                                   inp.subclass):
                    # (the checks would read a tensor's layout or rank off an int)
                    raise fail(f"contract.inputs[{i}]", "an int input (scalar) has one "
                                                        "dim, its value, and no layout or "
                                                        "tensor subclass")
        for s in contract.symbols:
            info = self.env.symbols.get(s.name)
            if info is None or bool(info.backed) != s.backed:
                raise fail("contract.symbols", f"symbol {s.name} is not declared as "
                                               f"{'backed' if s.backed else 'unbacked'}")
            # (an unbacked symbol may be bound by an input shape: a data-dependent size the
            # program equated with an input's, `z.shape[0] == 2 * u0`; the checks bind it
            # from that size as they do at export)
        bound = {s.name for s in contract.symbols if s.where is not None}
        total = 0
        for where, e in exprs:
            n = _check_divisors(e, where)
            if where.startswith("contract.conditions"):
                total += n
                if n > self.budgets.max_residual_nodes:
                    raise fail(where, f"a condition of {n} nodes, over the budget "
                                      f"(max_residual_nodes={self.budgets.max_residual_nodes})")
                if total > self.budgets.max_residual_total:
                    raise fail(where, f"the conditions hold over {total} nodes together, over "
                                      f"the budget (max_residual_total="
                                      f"{self.budgets.max_residual_total})")
            unknown = e.free_symbols - self.env.symbols.keys()
            if unknown:
                raise fail(where, undeclared(unknown))
            unbound = [x for x in e.free_symbols if not self.env.symbols[x].backed
                       and x not in bound]
            if unbound and where.startswith("contract.inputs"):
                raise fail(where, f"an input shape uses the unbacked symbol(s) {unbound[:5]}, "
                                  "which no input size binds")

    # -- symbols and tensors ---------------------------------------------------------
    def _env(self, items: list) -> Any:
        if len(items) > self.budgets.max_symbols:
            raise fail("symbols", f"more than {self.budgets.max_symbols} symbols (max_symbols)")
        env = new_env()
        for i, s in enumerate(items):
            where = f"symbols[{i}]"
            expect_keys(s, {"name", "backed", "hint", "lo", "hi"}, where, {"float"})
            name = expect(s["name"], str, where)
            if not SYMBOL_RE.fullmatch(name) or name in env.symbols:
                raise fail(where, f"bad or duplicate symbol name {name[:40]!r}")
            lo, hi = (_opt_int(s[k], where) for k in ("lo", "hi"))
            if lo is not None and hi is not None and lo > hi:
                raise fail(where, f"empty range [{lo}, {hi}]")
            try:
                if s.get("float") is True and s["backed"] is False:
                    env.new_unbacked_float(name=name)  # a float read from data
                elif expect(s["backed"], bool, where):
                    hint = _opt_int(expect(s["hint"], int, where), where)
                    if (lo is not None and hint < lo) or (hi is not None and hint > hi):
                        raise fail(where, f"hint {hint} outside its range [{lo}, {hi}]")
                    env.new_backed(hint, lo, hi, name=name)
                else:
                    read_points.declare(env, name, lo, hi)
            except (ValueError, TypeError) as err:
                raise fail(where, str(err)[:200]) from None
        return env

    # -- graph -------------------------------------------------------------------------
    def _graph(self, items: list, subgraph: str | None = None) -> tuple[torch.fx.Graph, list,
                                                                        tuple]:

        if len(items) > self.budgets.max_nodes:
            raise fail("nodes", f"more than {self.budgets.max_nodes} nodes (max_nodes)")
        graph = torch.fx.Graph()
        nodes: dict[str, torch.fx.Node] = {}
        dec = ValueDecoder(nodes, self.env)
        placeholders: list = []
        outputs: tuple | None = None
        for i, item in enumerate(items):
            where = f"nodes[{i}]"
            expect_keys(item, {"name", "op"}, where, {"target", "args", "kwargs", "meta"})
            name = expect(item["name"], str, where)
            where = f"node {name[:60]!r}"
            if not IDENT_RE.fullmatch(name) or keyword.iskeyword(name) or name in nodes or \
                    name in _RESERVED_NODES:
                raise fail(where, "bad, reserved or duplicate node name")
            if outputs is not None:
                raise fail(where, "nodes after the output node")
            op = item["op"]
            raw_args = expect(item.get("args", []), list, where)
            raw_kwargs = expect(item.get("kwargs", []), list, where)
            for a in raw_args + [p[1] for p in raw_kwargs if isinstance(p, list) and len(p) == 2]:
                _plain_arg(a, where)
            args = tuple(dec.decode(a, where) for a in raw_args)
            kwargs = {}
            for pair in raw_kwargs:
                if (not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str)
                        or not IDENT_RE.fullmatch(pair[0]) or keyword.iskeyword(pair[0])
                        or pair[0] in kwargs):
                    raise fail(where, "kwargs must be [name, value] pairs with unique names")
                kwargs[pair[0]] = dec.decode(pair[1], where)
            _no_void_operand(args, kwargs, where)
            if op == "placeholder":
                if args or kwargs or "target" in item or len(nodes) != len(placeholders):
                    raise fail(where, "placeholders take no arguments and come first")
                node = graph.placeholder(name)
                placeholders.append(node)
            elif op == "call_function":
                tname = item.get("target")
                target = name_to_target(tname, where, self.targets)
                if isinstance(target, torch._ops.OpOverload):
                    allowlist.check_op(target, tname, args, kwargs, where, self.allow_ops,
                                       self.budgets, self.max_numel, self.alloc,
                                       self.allow_cuda)
                elif isinstance(target, torch._ops.HigherOrderOperator):
                    subgraphs.check_target(target, where)  # its call: subgraphs.attach
                else:
                    allowlist.check_callable(tname, target, args, kwargs, where, self.budgets)
                node = add_node(graph, target, args, kwargs, name)
                if not isinstance(target, torch._ops.OperatorBase):
                    self.alloc.fold(node, tname, target, args)
            elif op == "get_attr":  # a control-flow subgraph, resolved by subgraphs.attach
                if args or kwargs:
                    raise fail(where, "get_attr takes no arguments")
                node = subgraphs.get_attr(graph, name, item.get("target"), where)
            elif op == "output":
                if subgraph is not None and not kwargs and subgraphs.output_ok(args) and \
                        name == "output":
                    node = graph.output(args[0])
                    outputs = args[0] if isinstance(args[0], tuple) else (args[0],)
                    nodes[name] = node
                    self._meta(node, item.get("meta", {}), where)
                    continue
                if len(args) != 1 or kwargs or not isinstance(args[0], tuple) or name != "output":
                    raise fail(where, "the output node returns one tuple")
                node = graph.output(args[0])
                outputs = args[0]
            else:
                raise fail(where, f"unsupported node op {str(op)[:40]!r}")
            if node.name != name:
                raise fail(where, f"name is reserved or clashes (became {node.name!r})")
            nodes[name] = node
            self._meta(node, item.get("meta", {}), where)
        if outputs is None:
            raise fail("nodes", "no output node (truncated graph?)")
        return graph, placeholders, outputs

    def _meta(self, node: torch.fx.Node, meta: Any, where: str) -> None:
        expect_keys(meta, set(), where + " meta", {"val", "stack_trace", "extra"})
        node.meta["stack_trace"] = expect(meta.get("stack_trace", ""), str, where)
        if "val" in meta:
            val = ValueDecoder(None, self.env).decode(meta["val"], where + " meta val")
            try:
                node.meta["val"] = _wrap(val, node)
            except (RuntimeError, ValueError, OverflowError) as err:
                raise fail(where, f"bad tensor metadata: {str(err)[:200]}") from None
        for k, v in expect(meta.get("extra", {}), dict, where).items():
            if not IDENT_RE.fullmatch(k) or k in ("val", "stack_trace"):
                raise fail(where, f"bad meta key {k[:40]!r}")
            node.meta[k] = ValueDecoder(None, self.env).decode(v, f"{where} meta {k}")

    # -- signature and contract ----------------------------------------------------------
    def _inputs(self, placeholders: list, n_leaves: int, state: dict, constants: dict) -> list:

        items = expect(self.doc["inputs"], list, "inputs")
        if len(items) != len(placeholders):
            raise fail("inputs", f"{len(items)} input specs for {len(placeholders)} placeholders")
        out, leaves = [], set()
        for i, (s, node) in enumerate(zip(items, placeholders)):
            where = f"inputs[{i}]"
            expect_keys(s, {"kind", "name", "target", "leaf", "persistent"}, where)
            kind = s["kind"]
            if s["name"] != node.name:
                raise fail(where, f"names placeholder {str(s['name'])[:40]!r}, expected "
                                  f"{node.name!r}")
            target, leaf = s["target"], s["leaf"]
            if kind == "user_input":
                ok = (target is None and type(leaf) is int and 0 <= leaf < n_leaves
                      and leaf not in leaves)
                leaves.add(leaf)
            elif kind in ("parameter", "buffer"):
                ok = leaf is None and isinstance(target, str) and target in state
            elif kind == "constant":
                ok = leaf is None and isinstance(target, str) and target in constants
            else:
                ok = False
            if not ok:
                raise fail(where, f"inconsistent input spec (kind {str(kind)[:20]!r}, target "
                                  f"{str(target)[:40]!r}, leaf {str(leaf)[:10]})")
            if kind != "user_input":
                t = state[target] if kind != "constant" else constants[target]
                _same_meta(node, t, where)
            out.append(InputSpec(kind, node.name, target, leaf,
                                 expect(s["persistent"], bool, where)))
        if len(leaves) != n_leaves:
            raise fail("inputs", f"{len(leaves)} user inputs for {n_leaves} contract leaves")
        return out

    def _outputs(self, n: int, state: dict) -> list:

        items = expect(self.doc["outputs"], list, "outputs")
        if len(items) != n:
            raise fail("outputs", f"{len(items)} output specs for {n} graph outputs")
        out = []
        for i, s in enumerate(items):
            where = f"outputs[{i}]"
            expect_keys(s, {"kind", "target"}, where)
            ok = (s["kind"] == "user_output" and s["target"] is None) or (
                s["kind"] == "buffer_mutation" and isinstance(s["target"], str)
                and s["target"] in state)
            if not ok:
                raise fail(where, "inconsistent output spec")
            out.append(OutputSpec(s["kind"], s["target"]))
        return out

    def _contract(self, c: Any) -> Any:
        contract = decode_record(Contract, c, "contract")
        for i, s in enumerate(contract.symbols):  # (a bound as range_constraints' own:
            for k in ("lo", "hi"):  # -2**63 was taken here, and a second save wrote a
                _opt_int(getattr(s, k), f"contract.symbols[{i}].{k}")  # file refused)
        return contract

    def _range_constraints(self) -> Any:

        out = RangeConstraints()
        for i, r in enumerate(expect(self.doc["range_constraints"], list, "range_constraints")):
            where = f"range_constraints[{i}]"
            if not isinstance(r, list) or len(r) != 3:
                raise fail(where, "expected [symbol, lower, upper]")
            lo, hi = _opt_int(r[1], where), _opt_int(r[2], where)
            out[sym(_symbol(r[0], where))] = ValueRange(-math.inf if lo is None else lo,
                                                         math.inf if hi is None else hi)
        return out

    def _splits(self) -> list[str]:
        """The lines describing the program's splits (``print(ep)``, ``split_report.py``):
        text only, never parsed nor run; printable characters (no terminal escapes, line
        breaks or direction marks), within the string budget and ``MAX_SPLIT_LINES``."""
        lines = expect(self.doc.get("splits", []), list, "splits")
        if len(lines) > MAX_SPLIT_LINES:
            raise fail("splits", f"{len(lines)} lines, more than {MAX_SPLIT_LINES}")
        for i, line in enumerate(lines):
            expect(line, str, f"splits[{i}]")
            if len(line) > self.budgets.max_string or not line.isprintable():
                raise fail(f"splits[{i}]", f"a line of {len(line)} characters that is "
                           f"longer than max_string ({self.budgets.max_string}) or holds "
                           "characters that are not printable (control, format)")
        return list(lines)

    def _dim_names(self, contract: Any) -> dict:
        """symbol -> the user's Dim name; each symbol one of the contract's."""
        if "dim_names" not in self.doc:
            return {}
        names = self._pairs("dim_names", str)
        for i, (sym_name, dim_name) in enumerate(names.items()):
            if contract.symbol(sym_name) is None:
                raise fail(f"dim_names[{i}]", f"{sym_name[:40]!r} is not a symbol of the "
                                              f"program's contract")
            if not dim_name.isidentifier() or len(dim_name) > 200:
                raise fail(f"dim_names[{i}]", "a Dim name must be a Python identifier of "
                                              "at most 200 characters")
        return names

    def _constant_paths(self, constants: dict, buffers: list) -> tuple[dict, dict]:
        """(placeholder target -> attribute path, other path -> that path) of the lifted
        constants: the keys of ``ep.constants`` (a file before 2.3: none, each named by
        its placeholder less ``c_``), each naming one tensor (`buffers`: the
        non-persistent buffers' names, keys there too)."""
        paths = self._pairs("constant_paths", str) if "constant_paths" in self.doc else {}
        aliases = self._pairs("constant_aliases", str) if "constant_aliases" in self.doc \
            else {}
        for key, table in (("constant_paths", paths), ("constant_aliases", aliases)):
            for i, (name, path) in enumerate(table.items()):
                if key == "constant_paths" and name not in constants:
                    raise fail(f"{key}[{i}]", f"{name[:40]!r} is not a constant of the "
                                              "program")
                for part in (path, name) if key == "constant_aliases" else (path,):
                    if not part or len(part) > self.budgets.max_string or \
                            not all(p.isprintable() and p for p in part.split(".")):
                        raise fail(f"{key}[{i}]", "an attribute path must be non-empty "
                                                  "printable names joined by dots")
        named = [paths.get(n, n.removeprefix("c_")) for n in constants]
        known = set(named)
        for i, (alias, path) in enumerate(aliases.items()):
            if path not in known:
                raise fail(f"constant_aliases[{i}]", f"{path[:40]!r} is not the path of a "
                                                     "constant of the program")
        seen: set = set()
        for k in (*named, *aliases, *buffers):  # (one pass: a file's list may be long)
            if k in seen:
                raise fail("constant_paths", f"{k[:40]!r} names two tensors of the program")
            seen.add(k)
        return paths, aliases

    def _pairs(self, key: str, kind: type) -> dict:
        out = {}
        for i, r in enumerate(expect(self.doc[key], list, key)):
            if not isinstance(r, list) or len(r) != 2:
                raise fail(f"{key}[{i}]", "expected a [key, value] pair")
            out[expect(r[0], str, f"{key}[{i}]")] = expect(r[1], kind, f"{key}[{i}]")
        return out


def _no_void_operand(args: tuple, kwargs: dict, where: str) -> None:
    """A node's argument naming a node that returns nothing (a run-time check, a grad
    switch, an operator without results) would hand None to the kernel: refused at load."""
    found: list = []
    torch.fx.node.map_arg((args, kwargs), found.append)
    for n in found:
        t = n.target
        if (t in RUN_TIME_CHECKS or t is torch._C._set_grad_enabled
                or isinstance(t, torch._ops.OpOverload) and not t._schema.returns):
            raise fail(where, f"takes the result of node {n.name!r}, which returns nothing "
                              f"(a check or a mode switch, run for its effect)")


def _wrap(val: Any, node: torch.fx.Node) -> Any:

    if isinstance(val, TensorMeta):
        return Proxy(val, node)
    if isinstance(val, (list, tuple)):
        return type(val)(_wrap(v, node) for v in val)
    return val


def _same_meta(node: torch.fx.Node, t: torch.Tensor, where: str) -> None:
    val = node.meta.get("val")
    meta = getattr(val, "st_meta", None)
    if meta is None or not all(type(s) is int for s in meta.shape) or \
            tuple(meta.shape) != tuple(t.shape) or meta.dtype != t.dtype:
        raise fail(where, f"placeholder {node.name} does not match its tensor "
                          f"(shape {list(t.shape)}, {t.dtype})")


def _symbol(x: Any, where: str) -> str:
    if not isinstance(x, str) or not SYMBOL_RE.fullmatch(x):
        raise fail(where, f"bad symbol name {str(x)[:40]!r}")
    return x


def _opt_int(x: Any, where: str) -> int | None:
    if x is None:
        return None
    if type(x) is not int or abs(x) >= 1 << 62:
        raise fail(where, f"expected an integer bound or null, got {str(x)[:40]}")
    return x



def _plain_arg(obj: Any, where: str, depth: int = 0) -> None:
    """Graph arguments are constants and node references: symbolic values are nodes."""
    if isinstance(obj, dict) and len(obj) == 1 and depth < 64:
        (tag, x), = obj.items()
        if tag not in _ARG_TAGS and tag != "dict":
            raise fail(where, f"a {str(tag)[:20]!r} value cannot be a graph argument")
        if tag in ("list", "tuple") and isinstance(x, list):
            for v in x:
                _plain_arg(v, where, depth + 1)
        if tag == "dict" and isinstance(x, list):
            for pair in x:
                if isinstance(pair, list) and len(pair) == 2:
                    _plain_arg(pair[1], where, depth + 1)


def _check_divisors(e: Any, where: str) -> int:
    """Count the nodes of ``e``; a constant zero divisor is refused."""
    n = 0
    for x in dag_nodes(e):
        n += 1
        if x.op in ("floordiv", "mod") and x.args[1].op == "const" and x.args[1].value == 0:
            raise fail(where, f"division by zero in `{str(x)[:80]}`")
    return n


def _arith_safe(checks: Any, memory_check: Any = None, cuda: list | None = None) -> Any:
    """The input checks, with an arithmetic error (a file's `s0 // (s1 - s1)`) reported as
    an input mismatch rather than escaping as ZeroDivisionError; then the memory the
    program would take at these sizes, where the declared ranges leave it open, and the
    CUDA devices it names (``cuda``), where this process has them."""
    def check_inputs(leaves: list) -> None:
        if cuda and active_tracer() is None:
            devices.check(cuda)
        try:
            out = checks(leaves)
        except ArithmeticError as err:
            raise unchecked_inputs(err) from None
        if memory_check is not None and active_tracer() is None:
            memory_check(leaves)  # (not while st.export traces the module: no values)
        subgraphs.new_call()
        return out

    check_inputs.__source__ = getattr(checks, "__source__", "")
    return check_inputs
