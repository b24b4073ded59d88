"""The contract's size checks as nodes of an ONNX graph (``st.to_onnx``).

ONNX has no assertion operator, and torch's exporter drops ``_assert_scalar`` nodes;
onnxruntime itself checks each input's dtype, rank and static sizes against the graph's
declared input shapes, but no range of a dynamic size, no size two inputs share (a
``dim_param`` repeated across inputs is not compared) and no derived size or residual
condition.  Each of those becomes arithmetic on ``Shape`` of the inputs, ending in a
``Gather`` from a one-element constant at index ``not ok``: in bounds (0) when the check
holds, out of bounds (1) when it fails, where onnxruntime stops with an error naming the
node -- and the node is named after the check (``safetrace input check: x.shape[0] must
be >= 1 (as declared: ...)``).  The gathered zeros feed every input through a ``Where``
whose branches are the input itself, in front of every input: no pass can drop them, and
no op of the program runs before they pass.  Expressions are lowered with the engine's ``lower`` over an ONNX algebra.
"""

from __future__ import annotations

from typing import Any

from safetrace.exporter.contract import Contract, TensorInput
from safetrace.interop.divisions import safe_conditions
from safetrace.symbolic.semantics import Algebra, lower

_BINARY = {"add": "Add", "mul": "Mul", "min": "Min", "max": "Max", "eq": "Equal",
           "lt": "Less", "le": "LessOrEqual", "ge": "GreaterOrEqual", "and": "And",
           "or": "Or"}
PREFIX = "safetrace input check: "


class _Graph:
    """Nodes appended in order, later inserted before the graph's first node."""

    def __init__(self, ir: Any) -> None:
        self.ir = ir
        self.nodes: list[Any] = []
        self.consts: dict[Any, Any] = {}

    def op(self, op_type: str, *inputs: Any, name: str | None = None, **attrs: Any) -> Any:
        node = self.ir.node(op_type, list(inputs), attrs or None, name=name)
        # (a name of its own: an unnamed value is named val_<n> when the model is saved,
        # which can be a name the exporter's graph already holds)
        node.outputs[0].name = f"safetrace_check_{len(self.nodes)}"
        self.nodes.append(node)
        return node.outputs[0]

    def const(self, value: Any) -> Any:
        key = (type(value), value)
        hit = self.consts.get(key)
        if hit is None:
            import numpy as np

            array = np.array(value, dtype=np.bool_ if isinstance(value, bool) else np.int64)
            hit = self.op("Constant", value=self.ir.tensor(array))
            self.consts[key] = hit
        return hit


def _algebra(g: _Graph, symbols: dict[str, Any]) -> Algebra:
    def leaf(e: Any) -> Any:
        if e.op == "sym":
            return symbols[e.name]
        if e.op == "const":
            return g.const(e.value)
        raise LookupError(e.op)  # a float size: no check here

    def binary(name: str) -> Any:
        return lambda a, b: g.op(name, a, b)

    fns: dict[str, Any] = {k: binary(v) for k, v in _BINARY.items()}
    fns["ne"] = lambda a, b: g.op("Not", g.op("Equal", a, b))
    fns["not"] = lambda a: g.op("Not", a)
    fns["mod"] = lambda a, b: g.op("Mod", a, b, fmod=0)  # the sign of the divisor: Python's
    fns["floordiv"] = lambda a, b: g.op("Div", g.op("Sub", a, g.op("Mod", a, b, fmod=0)), b)
    return Algebra(leaf, fns=fns)


def add_input_checks(model: Any, contract: Contract) -> int:
    """Add the checks onnxruntime does not make to `model` (an ``onnx_ir`` model whose
    inputs are the program's tensor inputs, in order); returns how many.  A model whose
    inputs are not those is left as it is (0)."""
    import onnx_ir as ir

    graph = model.graph
    tensors = [inp for inp in contract.inputs if isinstance(inp, TensorInput)
               and not inp.scalar]
    if len(tensors) != len(graph.inputs) or not len(graph):
        return 0
    g = _Graph(ir)
    symbols: dict[str, Any] = {}
    failures: list[Any] = []

    def check(ok: Any, text: str) -> None:
        index = g.op("Cast", g.op("Not", ok), to=ir.DataType.INT64)
        failures.append(g.op("Gather", g.const((0,)), index, axis=0, name=PREFIX + text))

    algebra = _algebra(g, symbols)
    sizes: dict[tuple[int, int], Any] = {}
    for k, (inp, value) in enumerate(zip(tensors, graph.inputs)):
        for d, dim in enumerate(inp.dims):
            if dim.kind == "static" or dim.kind == "unchecked":
                continue  # static: onnxruntime compares it with the declared shape
            shape = g.op("Shape", value, start=d, end=d + 1)
            sizes[k, d] = g.op("Squeeze", shape, g.const((0,)))
            if dim.kind == "bind":
                symbols[dim.symbol] = sizes[k, d]
    for k, inp in enumerate(tensors):
        for d, dim in enumerate(inp.dims):
            if dim.kind == "derived":
                symbols[dim.symbol] = _derived(g, sizes[k, d], dim)
            if dim.kind in ("derived", "equal"):
                try:
                    want = lower(dim.size, algebra)
                except (KeyError, LookupError):
                    continue
                check(g.op("Equal", sizes[k, d], want),
                      f"{inp.where(d)} must equal {contract.where_text(dim.size)}"
                      f"{dim.why or ''}")
    for s in contract.symbols:
        if s.name not in symbols:
            continue
        if s.checked_lo > 0:
            check(g.op("GreaterOrEqual", symbols[s.name], g.const(s.lo)),
                  f"{s.where} must be >= {s.lo}{s.origin}")
        if s.hi is not None:
            check(g.op("LessOrEqual", symbols[s.name], g.const(s.hi)),
                  f"{s.where} must be <= {s.hi}{s.origin}")
    for c, safe in zip(contract.conditions, safe_conditions(contract)):
        if not c.cond.free_symbols <= set(symbols):
            continue
        try:
            ok = lower(safe, algebra)  # (no division by 0 where an `or` holds)
        except (KeyError, LookupError):
            continue
        check(ok, f"the inputs must satisfy {contract.where_text(c.cond)}{c.origin}")
    if not failures:
        return 0
    total = failures[0]
    for f in failures[1:]:
        total = g.op("Add", total, f)
    holds = g.op("Equal", g.op("ReduceSum", total, keepdims=0), g.const(0))
    program = list(graph)
    gated = {}
    for value in graph.inputs:  # every op of the program reads its inputs through a gate
        gated[id(value)] = g.op("Where", holds, value, value)
        gated[id(value)].shape, gated[id(value)].type = value.shape, value.type
    graph.insert_before(program[0], g.nodes)
    for node in program:
        for i, value in enumerate(node.inputs):
            if value is not None and id(value) in gated:
                node.replace_input_with(i, gated[id(value)])
    return len(failures)


def _derived(g: _Graph, size: Any, dim: Any) -> Any:
    """The symbol of a derived dim, read back from its size: (size - offset) // coef."""
    top = g.op("Sub", size, g.const(dim.offset))
    coef = g.const(dim.coef)
    return g.op("Div", g.op("Sub", top, g.op("Mod", top, coef, fmod=0)), coef)
