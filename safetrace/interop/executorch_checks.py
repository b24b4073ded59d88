"""The contract's input checks as instructions of an ExecuTorch program (``st.to_executorch``).

ExecuTorch removes every assertion node when it lowers (``RemoveGraphAssertsPass``:
``_assert_scalar``, ``_assert_async``, ``sym_constrain_range``), and ``to_edge`` retraces
the program under its range constraints, where two inputs declared with one size carry one
symbol.  The runtime itself refuses a wrong dtype or rank and a size above the planned
capacity (``set_inputs``), and nothing else: a wrong static size, a size two inputs share
given differently, a derived size, a size below its Dim's minimum and a residual condition
ran (or failed inside some kernel, by chance).

So the checks are written into the program after ``to_edge``, as the first instructions of
``forward`` (a pass given to ``to_executorch``): each size read from its own input
(``aten::sym_size``), the contract's arithmetic and comparisons on ExecuTorch's own scalar
operators (``executorch_prim``), and the checks' verdict folded into one index -- 0 when
every check holds, else the number of the first that fails, in ``ep.module()``'s order --
that selects from a one-element tensor (``aten::select_copy``).  An index past the tensor
is an error of the portable kernel, so the runtime stops before any operator of the program
runs, and its log names the check::

    Check failed (...): index 2 out of range [-1,1) at dimension 0)
    KernelCall failed at instruction 0:11 in operator aten::select_copy.int_out: 0x12

The check texts travel in the same file, as the constant method
``safetrace_input_checks`` (its entry 2 is the check that failed, 1-based).  The select
writes into its tensor (``aten::copy_``), so no dead-code pass drops the instructions.  A
divisor that can be 0 outside the contract is replaced by 1 there and the check fails
(ExecuTorch's integer division would stop the process).  Conditions on float arithmetic of
sizes have no scalar operator here and are left out.

Two more kinds of check go the same way: the graph's own ``_assert_scalar`` nodes on values
read from data (``.item()``, a size of ``x[mask]``), each a failure point where the program
computes it (``keep_data_checks``); and a dim the contract keeps dynamic that ``to_edge``'s
retrace specialized (``specialized``), checked at that size first.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import torch

from safetrace.errors import conversion_error
from safetrace.exporter.contract import Contract, TensorInput
from safetrace.interop.divisions import safe_conditions
from safetrace.symbolic.semantics import Algebra, lower

METHOD = "safetrace_input_checks"


def _prims() -> Any:
    from executorch.exir.dialects._ops import ops
    from executorch.exir.passes import executorch_prim_ops_registry  # noqa: F401  (registers)

    return ops.backend.executorch_prim


class _Checks:
    """The check nodes of one graph, appended before its first operator."""

    def __init__(self, graph: Any) -> None:
        self.g = graph
        self.p = _prims()
        self.divisors: list[Any] = []  # "this divisor is not 0", for the check being lowered

    def op(self, name: str, *args: Any) -> Any:
        return self.g.call_function(getattr(self.p, name).Scalar, args)

    def both(self, a: Any, b: Any) -> Any:
        return self.op("sym_ite", a, b, False)

    def either(self, a: Any, b: Any) -> Any:
        return self.op("sym_ite", a, True, b)

    def safe(self, b: Any) -> Any:
        """`b` where it is not 0, else 1 (noted: the check fails there)."""
        if isinstance(b, int) and b != 0:
            return b
        nonzero = self.op("sym_not", self.op("eq", b, 0))
        self.divisors.append(nonzero)
        return self.op("sym_ite", nonzero, b, 1)

    def floordiv(self, a: Any, b: Any) -> Any:
        return self.op("floordiv", a, self.safe(b))  # floor division, as Python's

    def mod(self, a: Any, b: Any) -> Any:  # Python's sign: a - b * (a // b)
        b = self.safe(b)
        return self.op("sub", a, self.op("mul", b, self.op("floordiv", a, b)))

    def algebra(self, symbols: dict[str, Any]) -> Algebra:
        def leaf(e: Any) -> Any:
            if e.op == "sym":
                return symbols[e.name]
            if e.op == "const":
                return e.value
            raise LookupError(e.op)  # a float size: no scalar operator here

        fns: dict[str, Callable[..., Any]] = {
            name: (lambda prim: lambda a, b: self.op(prim, a, b))(prim)
            for name, prim in (("add", "add"), ("mul", "mul"), ("min", "sym_min"),
                               ("max", "sym_max"), ("eq", "eq"), ("lt", "lt"),
                               ("le", "le"), ("ge", "ge"))}
        fns.update({"ne": lambda a, b: self.op("sym_not", self.op("eq", a, b)),
                    "not": lambda a: self.op("sym_not", a), "and": self.both,
                    "or": self.either, "floordiv": self.floordiv, "mod": self.mod})
        return Algebra(leaf, fns=fns)

    def verdict(self, lowered: Callable[[], Any]) -> Any:
        """The node of one check (True: holds), or None when it has no form here."""
        self.divisors = []
        try:
            ok = lowered()
        except (KeyError, LookupError):
            return None
        for nonzero in self.divisors:
            ok = self.both(nonzero, ok)
        return ok


def _plan(contract: Contract) -> list[tuple[str, Callable[[_Checks, list, dict], Any]]]:
    """(text, builder) per check, in ``ep.module()``'s order: static sizes, the sizes
    related to others, the symbols' ranges, the residual conditions."""
    plan: list[tuple[str, Callable[[_Checks, list, dict], Any]]] = []
    tensors = [inp for inp in contract.inputs if isinstance(inp, TensorInput)]
    for k, inp in enumerate(tensors):
        for d, dim in enumerate(inp.dims):
            if dim.kind == "static" and not inp.scalar:
                plan.append((f"{inp.where(d)} must be {dim.size}{dim.why or ''}",
                             lambda c, sizes, sy, k=k, d=d, n=dim.size:
                             c.op("eq", sizes[k][d], n)))
    for k, inp in enumerate(tensors):
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("derived", "equal"):
                plan.append((f"{inp.where(d)} must equal {contract.where_text(dim.size)}"
                             f"{dim.why or ''}",
                             lambda c, sizes, sy, k=k, d=d, e=dim.size:
                             c.op("eq", sizes[k][d], lower(e, c.algebra(sy)))))
    for s in contract.symbols:
        if s.where is None:
            continue  # read from data: asserted inside the graph, where ExecuTorch drops it
        if s.checked_lo > 0:
            plan.append((f"{s.where} must be >= {s.lo}{s.origin}",
                         lambda c, sizes, sy, n=s.name, lo=s.lo: c.op("ge", sy[n], lo)))
        if s.hi is not None:
            plan.append((f"{s.where} must be <= {s.hi}{s.origin}",
                         lambda c, sizes, sy, n=s.name, hi=s.hi: c.op("le", sy[n], hi)))
    bound = {s.name for s in contract.symbols if s.where is not None}
    for cond, safe in zip(contract.conditions, safe_conditions(contract)):
        if cond.cond.free_symbols <= bound:  # (no division by 0 where an `or` holds)
            plan.append((f"the inputs must satisfy {contract.where_text(cond.cond)}"
                         f"{cond.origin}",
                         lambda c, sizes, sy, e=safe: lower(e, c.algebra(sy))))
    return plan


def specialized(inputs: list[Any], contract: Contract) -> list[tuple[int, int, int]]:
    """(tensor input, dim, size) for each dim the contract keeps dynamic but the edge
    program's placeholder has as an int: ``to_edge``'s retrace specialized it (its dtype
    verifier calls ``len()`` on a list of tensors; its LSTM decomposition unrolls the
    sequence).  The program then holds only for that size."""
    out = []
    tensors = [(inp, node) for inp, node in zip(contract.inputs, inputs)
               if isinstance(inp, TensorInput)]
    for k, (inp, node) in enumerate(tensors):
        shape = getattr(node.meta.get("val"), "shape", None) if node is not None else None
        if inp.scalar or shape is None or len(shape) != len(inp.dims):
            continue
        for d, dim in enumerate(inp.dims):
            size = shape[d]
            if isinstance(size, torch.SymInt) and size.node.expr.is_number:
                size = int(size.node.expr)  # a symbol replaced by its value
            if dim.kind != "static" and type(size) is int:
                out.append((k, d, size))
    return out


def add_input_checks(graph: Any, inputs: list[Any], contract: Contract,
                     pinned: Sequence[tuple[int, int, int]] = ()) -> list[str]:
    """Write `contract`'s checks at the head of `graph` (an edge program's graph whose user
    inputs, in order, are the placeholder nodes `inputs`: one per contract input), and a
    check of each `pinned` size (``specialized``) first; returns the texts of the checks
    written, in the order their failure index counts them."""
    tensors = [(inp, node) for inp, node in zip(contract.inputs, inputs)
               if isinstance(inp, TensorInput)]
    first = next(n for n in graph.nodes if n.op != "placeholder")
    texts: list[str] = []
    verdicts: list[Any] = []
    with graph.inserting_before(first):
        c = _Checks(graph)
        sizes: list[list[Any]] = []
        symbols: dict[str, Any] = {}
        for inp, node in tensors:
            if inp.scalar:  # an int input: its value is its one size
                sizes.append([node])
            else:
                sizes.append([graph.call_function(torch.ops.aten.sym_size.int, (node, d))
                              for d in range(len(inp.dims))])
        for (inp, _), got in zip(tensors, sizes):
            for d, dim in enumerate(inp.dims):
                if dim.kind == "bind":
                    symbols[str(dim.symbol)] = got[d]
                elif dim.kind == "derived":  # read back: (size - offset) // coef
                    symbols[str(dim.symbol)] = c.floordiv(c.op("sub", got[d], dim.offset),
                                                     dim.coef)
        plan = [(f"{tensors[k][0].where(d)} must be {n} (ExecuTorch's lowering specialized "
                 f"it to the example's size)",
                 lambda c, sizes, sy, k=k, d=d, n=n: c.op("eq", sizes[k][d], n))
                for k, d, n in pinned]
        for text, build in plan + _plan(contract):
            ok = c.verdict(lambda build=build: build(c, sizes, symbols))
            if ok is not None:
                texts.append(text)
                verdicts.append(ok)
        if verdicts:
            _failure_point(graph, verdicts, 1)
    return texts


def _failure_point(graph: Any, verdicts: list[Any], first: int) -> None:
    """Where the checks `verdicts` (numbered from `first`) stop the program: an index, 0
    when all hold, else the number of the first that fails, selected from a one-element
    tensor, and the selection written back into it (no dead-code pass drops a write)."""
    from executorch.exir.dialects._ops import ops

    p = _prims()
    index: Any = 0
    for k in reversed(range(len(verdicts))):
        index = graph.call_function(p.sym_ite.Scalar, (verdicts[k], index, first + k))
    edge = ops.edge.aten
    box = graph.call_function(edge.full.default, ([1], 0), {"dtype": torch.int64})
    picked = graph.call_function(edge.select_copy.int, (box, 0, index))
    graph.call_function(edge.copy_.default, (box, picked))


def keep_data_checks(graph: Any, first: int) -> list[str]:
    """Turn the graph's ``_assert_scalar`` nodes on values read from data (``.item()``'s,
    a size of ``x[mask]``, which ExecuTorch would drop) into failure points numbered from
    `first`, where the program computes them; returns their messages, in that order.  An
    assert on sizes alone is left to ExecuTorch to drop: the contract's checks at the head
    cover it."""
    texts: list[str] = []
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten._assert_scalar.default:
            continue
        cond = node.args[0]
        if not isinstance(cond, torch.fx.Node) or not _reads_data(cond):
            continue
        text = str(node.args[1]) if len(node.args) > 1 else str(cond)
        ok = _scalar_form(graph, cond, text)
        # after the assert, which stays for ExecuTorch to drop: its retrace learns the fact
        # from it, and the failure point's own retrace then finds the condition true
        with graph.inserting_before(node.next):
            _failure_point(graph, [ok], first + len(texts))
        texts.append(text)
    return texts


def _reads_data(node: Any) -> bool:
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n in seen or n.op != "call_function":
            continue
        seen.add(n)
        if n.target is torch.ops.aten._local_scalar_dense.default:
            return True
        if n.target is torch.ops.aten.sym_size.int and _unbacked(n.meta.get("val")):
            return True  # the size of a tensor sized by data (x[mask], nonzero)
        todo.extend(a for a in n.all_input_nodes)
    return False


def _unbacked(value: Any) -> bool:
    return isinstance(value, torch.SymInt) and any(
        str(s).startswith("u") for s in value.node.expr.free_symbols)


def _scalar_form(graph: Any, node: Any, text: str) -> Any:
    """`node` (a condition on scalars) with ``!=``, for which ExecuTorch has no scalar
    operator, rewritten as ``not ==``; refuses an operator ExecuTorch cannot run.  The
    rest is left as torch wrote it: ExecuTorch's pass that maps Python's operators to its
    own retraces the graph first, and there each data-dependent condition is known true
    only in the form the program asserted it."""

    from executorch.exir.passes.executorch_prim_ops_registry import is_sym_op

    memo: dict[Any, Any] = {}
    anchor = node.next  # every new node goes here, in the order made
    c = _Checks(graph)

    def visit(n: Any) -> Any:
        if not isinstance(n, torch.fx.Node) or n.op != "call_function":
            return n
        if n in memo:
            return memo[n]
        if n.target in (torch.ops.aten._local_scalar_dense.default,
                        torch.ops.aten.sym_size.int):
            return n  # a value read at run time: a leaf of the condition
        args = [visit(a) for a in n.args]
        with graph.inserting_before(anchor):
            if n.target is operator.ne:
                out = c.op("sym_not", c.op("eq", *args))
            elif not is_sym_op(n.target):
                raise conversion_error(
                    f"st.to_executorch: the program checks `{text}` on a value read from "
                    f"data with {n.target}, which has no ExecuTorch scalar operator",
                    fix="report this with the model; meanwhile check that value before "
                        "calling the .pte")
            elif args != list(n.args):
                out = graph.call_function(n.target, tuple(args), dict(n.kwargs))
            else:
                out = n
        memo[n] = out
        return out

    return visit(node)


def failure_points(graph: Any) -> int:
    """How many failure points a lowered graph holds."""
    count = 0
    for node in graph.nodes:
        if node.op == "call_function" and "copy_" in str(node.target) and len(node.args) == 2:
            src = node.args[1]
            if getattr(src, "op", None) == "call_function" and "select_copy" in str(src.target):
                count += 1
    return count
