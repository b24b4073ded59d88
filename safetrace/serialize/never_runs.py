"""Nodes of a loaded program's main graph that would fail at every call: refused at load.

The loader's own evaluation (``memory.py``) hands each node's worked-out value here; a
node torch would refuse whatever the inputs (a size past int64, a dim the tensor lacks,
a buffer written with what cannot be copied into it) is a bad file, not an error that
surfaces at the caller as torch's own exception.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from safetrace.errors.load import bad_file
from safetrace.exporter.contract import TensorInput
from safetrace.meta import TensorMeta
from safetrace.trace.asserts import assert_sym
from safetrace.serialize.allowlist import (CALLABLES, NUMERIC, one_int_lists, signature,
                                           takes_numbers)

_INT64 = (-2**63, 2**63 - 1)


def int64(env: Any, node: torch.fx.Node, out: Any) -> None:
    """Refuse an integer computed outside int64 at every declared size (torch refuses it
    as an operator's argument: ``mul(-2**63, s0)``)."""
    if isinstance(out, bool) or not isinstance(out, (int, env.int_cls)):
        return
    r = env.bounds(out.expr) if isinstance(out, env.int_cls) else None
    lo, hi = (out, out) if r is None else (r.lo, r.hi)
    if lo > _INT64[1] or hi < _INT64[0]:
        raise bad_file(f"node {node.name!r}", f"{getattr(node.target, '__name__', 'it')} "
                       f"gives an integer outside int64 at every call of the program "
                       f"(from {lo} to {hi})")


def size_query(node: torch.fx.Node, op: Any, args: Any) -> None:
    """Refuse ``sym_size``/``sym_stride`` of a dim the tensor does not have."""
    t, dim = (tuple(args) + (None, None))[:2] if isinstance(args, (tuple, list)) else (None,
                                                                                      None)
    if op._opname in ("sym_size", "sym_stride") and isinstance(t, TensorMeta) and \
            isinstance(dim, int) and not -len(t.shape) <= dim < max(len(t.shape), 1):
        raise bad_file(f"node {node.name!r}", f"{op} fails at every call of the program: "
                                              f"dim {dim} of a tensor with {len(t.shape)} dims")


def writes_fit(outputs: Any, specs: list, state: dict, values: dict) -> None:
    """Each buffer_mutation output is a tensor that can be copied into its buffer at every
    call (the module writes it back with ``copy_``): refused where the loader's own
    evaluation shows it never can (more dims than the buffer, a size that differs and is
    not 1)."""
    for i, (spec, v) in enumerate(zip(specs, outputs)):
        if spec.kind != "buffer_mutation":
            continue
        if not isinstance(v, torch.fx.Node):
            raise bad_file(f"outputs[{i}]", f"the value written to {spec.target!r} is not a "
                                            "graph value")
        value, shape = values.get(v), tuple(state[spec.target].shape)
        if not isinstance(value, TensorMeta):
            continue
        sizes = tuple(value.shape)
        if len(sizes) > len(shape) or any(isinstance(a, int) and a not in (1, b)
                                          for a, b in zip(reversed(sizes), reversed(shape))):
            raise bad_file(f"outputs[{i}]", f"node {v.name!r} of shape {list(sizes)} is "
                                            f"written to {spec.target!r} of shape "
                                            f"{list(shape)}: the write fails at every call")
        if len(sizes) != len(shape) or any(isinstance(a, int) and a != b
                                           for a, b in zip(sizes, shape)):
            # (a value of another shape replaces the buffer, and the next call runs the
            # graph on a state of a shape the loader did not check)
            raise bad_file(f"outputs[{i}]", f"node {v.name!r} of shape {list(sizes)} is "
                                            f"written to {spec.target!r} of shape "
                                            f"{list(shape)}: a program's write keeps its "
                                            "buffer's shape")


# in-place ops that change their tensor's shape (not its values): on the program's state
_RESHAPING = frozenset(("t_", "transpose_", "squeeze_", "unsqueeze_", "swapdims_",
                        "swapaxes_"))


def state_keeps_shape(graph: torch.fx.Graph, inputs: list, values: dict) -> None:
    """Refuse an in-place op of the main graph that changes the shape of a parameter,
    buffer or constant (``self.w.t_()`` of a ``[1, 4]`` buffer, ``unsqueeze_``): torch
    runs it, but the state then has another shape at the next call, which the loader's
    analysis (its memory and work bounds, the records it holds) never saw: a ``[1, 2**15]``
    buffer transposed each call made ``x * w`` ``[2**15, 1]`` at one call and
    ``[2**15, 2**15]`` (4 GiB) at the next (session 31).  An in-place op returns its
    tensor itself: the ops after it on what it returns act on the state too.

    Of an input the caller gives, any such op is refused (``x.t_()``, ``x.unsqueeze_(0)``:
    the caller's tensor had another shape or layout after the call, which st.export and
    torch.export refuse to record; a file could say it, session 38)."""
    own = {s.name: f"{s.kind} {s.target!r}" for s in inputs if s.kind != "user_input"}
    given = {s.name for s in inputs if s.kind == "user_input"}
    root: dict = {}  # node -> the state placeholder whose tensor it is
    for node in graph.nodes:
        if node.op == "placeholder" and (node.name in own or node.name in given):
            root[node] = node
            continue
        op = node.target
        if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload) or \
                not node.args or node.args[0] not in root or not _returns_self(op):
            continue
        root[node] = state = root[node.args[0]]
        if state.name in given:
            if op._opname in _RESHAPING:
                raise bad_file(f"node {node.name!r}", f"{op} changes the shape or layout of "
                               f"the input {state.name!r} in place: the caller's tensor would "
                               "have another shape after the call, which an exported program "
                               "does not do to an input",
                               "reshape a new tensor in forward (x = x.unsqueeze(0), out of "
                               "place), and export and save the program again")
            continue
        got, want = values.get(node), values.get(state)
        if not isinstance(want, TensorMeta):
            continue
        if isinstance(got, TensorMeta):
            sizes = tuple(got.shape)
            if len(sizes) == len(want.shape) and all(not isinstance(a, int) or a == b for a, b
                                                     in zip(sizes, want.shape)):
                continue
        elif op._opname not in _RESHAPING:
            continue
        else:
            sizes = ("?",)
        raise bad_file(f"node {node.name!r}", f"{op} changes the shape of the program's "
                       f"{own[state.name]} in place ({list(want.shape)} to {list(sizes)}): the "
                       "next call would run on a state of a shape the loader never checked",
                       "keep the state's shape in forward (an out-of-place op: w.t() instead "
                       "of w.t_()), and export and save the program again")


def reshaped_operand(node: torch.fx.Node, op: Any, args: Any, out: Any) -> None:
    """Refuse an in-place op of a subgraph that changes the shape of what the subgraph
    is given (a ``torch.cond`` branch's ``w.t_()`` of the program's ``[1, 4]`` buffer: the
    caller's tensor itself, of another shape at the next call; st.export refuses it)."""
    if not isinstance(out, TensorMeta) or not args or not isinstance(args[0], TensorMeta) \
            or not _returns_self(op):
        return
    root = node.args[0]
    while isinstance(root, torch.fx.Node) and root.op == "call_function" and \
            isinstance(root.target, torch._ops.OpOverload) and root.args and \
            _returns_self(root.target):
        root = root.args[0]
    if not isinstance(root, torch.fx.Node) or root.op != "placeholder":
        return  # (a tensor of its own: no one else sees its shape)
    was, now = tuple(args[0].shape), tuple(out.shape)
    if len(was) == len(now) and all(not isinstance(a, int) or not isinstance(b, int) or a == b
                                    for a, b in zip(was, now)):
        return
    raise bad_file(f"node {node.name!r}", f"{op} changes the shape of {root.name!r}, which "
                   f"its graph is given, in place ({list(was)} to {list(now)}): the caller's "
                   "tensor would have another shape after the call, which the loader's "
                   "analysis never saw", "an out-of-place op (w.t() instead of w.t_()); "
                   "export and save the program again")


_SELF: dict = {}  # op -> whether it writes its first argument and returns it


def _returns_self(op: Any) -> bool:
    """Whether ``op`` writes its first argument and returns it (an in-place op)."""
    hit = _SELF.get(op)
    if hit is None:
        args, rets = op._schema.arguments, op._schema.returns
        a = args[0].alias_info if args else None
        r = rets[0].alias_info if len(rets) == 1 else None
        hit = _SELF[op] = a is not None and r is not None and a.is_write and \
            a.before_set == r.before_set
    return hit


_DIVISIONS = (operator.floordiv, operator.mod, operator.truediv)


def division(env: Any, node: torch.fx.Node, args: Any) -> None:
    """Refuse a division of sizes by a divisor that is 0 at every declared size (Python's
    ZeroDivisionError at every call)."""
    if node.target not in _DIVISIONS or not isinstance(args, tuple) or len(args) != 2:
        return
    d = args[1]
    if isinstance(d, env.int_cls):
        r = env.bounds(d.expr)
        zero = r.lo == 0 and r.hi == 0
    else:
        zero = not isinstance(d, bool) and isinstance(d, (int, float)) and d == 0
    if zero:
        raise bad_file(f"node {node.name!r}", f"{node.target.__name__} divides by zero at "
                                              "every call of the program")


_NUMBER_KINDS = frozenset(("int", "float", "bool", "SymInt", "List[int]", "List[float]",
                           "List[bool]", "List[SymInt]"))
_TENSOR_KINDS = frozenset(("Tensor", "List[Tensor]", "List[Optional[Tensor]]"))


def input_kinds(graph: torch.fx.Graph, specs: list, contract: Any) -> None:
    """Refuse a user input used as what its declaration is not: one the contract declares
    a tensor passed where an operator takes a number (torch refuses a tensor for an int at
    every call), or a number (a dynamic int, a constant input) passed where one takes a
    tensor (only ``add``, ``mul`` and the like accept one: ``allowlist.takes_numbers``).
    The kind is the contract's, the use the operator's schema: not the file's metadata."""
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    for spec in specs:
        node = placeholders.get(spec.name)
        if spec.kind != "user_input" or node is None:
            continue
        inp = contract.inputs[spec.leaf]
        tensor = isinstance(inp, TensorInput) and not inp.scalar
        for user in node.users:
            op = user.target
            if user.op == "call_function" and not isinstance(op, torch._ops.OpOverload):
                _input_use(user, node, inp.path, tensor)
            if user.op != "call_function" or not isinstance(op, torch._ops.OpOverload):
                continue
            positional, kinds = signature(op)
            given = {**dict(zip(positional, user.args)), **user.kwargs}
            for arg, v in given.items():
                if not (v is node or isinstance(v, (list, tuple)) and any(x is node for x in v)):
                    continue
                kind = kinds.get(arg, ("", False))[0]
                kind = kind[len("Optional["):-1] if kind.startswith("Optional[") else kind
                if tensor and kind in _NUMBER_KINDS:
                    raise bad_file(f"node {user.name!r}", f"{op} takes {kind} for its argument "
                                   f"{arg!r}, but it is given the input {inp.path} that the "
                                   "program's contract declares a tensor: torch refuses it "
                                   "at every call")
                if not tensor and kind in _TENSOR_KINDS and not (
                        kind == "Tensor" and takes_numbers(op)):
                    raise bad_file(f"node {user.name!r}", f"{op} takes {kind} for its argument "
                                   f"{arg!r}, but it is given the input {inp.path} that the "
                                   "program's contract declares a number, not a tensor: "
                                   "torch refuses it at every call")


def _input_use(user: torch.fx.Node, node: torch.fx.Node, path: str, tensor: bool) -> None:
    """A user input given to Python size arithmetic (a tensor declared) or to a map's or a
    scan's tensors (a number declared): torch fails at every call."""
    if isinstance(user.target, torch._ops.HigherOrderOperator):
        name = user.target.name()
        tensors = {"map_impl": (1,), "scan": (1, 2)}.get(name, ())
        if not tensor and any(node in user.args[i] for i in tensors
                              if i < len(user.args) and isinstance(user.args[i], (list, tuple))):
            raise bad_file(f"node {user.name!r}", f"{name} is given the input {path} among "
                           "its tensors, but the program's contract declares it a number: "
                           "torch refuses it at every call")
        return
    if tensor and CALLABLES.get(_name(user.target), (0, 0, ""))[2] in (NUMERIC, "assert",
                                                                       "getitem"):
        raise bad_file(f"node {user.name!r}", f"{_name(user.target)} computes with numbers "
                       f"(sizes) or takes one of several results, but it is given the input "
                       f"{path} that the program's contract declares a tensor")


def _name(fn: Any) -> str:
    if fn is assert_sym:
        return "safetrace.assert_sym"
    module = getattr(fn, "__module__", "") or ""
    return f"{module.replace('_operator', 'operator')}.{getattr(fn, '__name__', '')}"


def carried(node: torch.fx.Node, carried: list, out: list, kind: str = "while_loop") -> None:
    """A while_loop body returns values of its carried values' kinds, dtypes, ranks and
    static sizes, as torch's while_loop requires (the exporter traces it so): refused where
    the loader's own evaluation shows one differs."""
    for i, (a, b) in enumerate(zip(carried, out)):
        ta, tb = isinstance(a, TensorMeta), isinstance(b, TensorMeta)
        if ta and tb:
            differ = a.dtype != b.dtype or len(a.shape) != len(b.shape) or any(
                isinstance(x, int) and isinstance(y, int) and x != y
                for x, y in zip(a.shape, b.shape))
        else:
            differ = ta != tb and (ta or isinstance(a, (int, float))) and (
                tb or isinstance(b, (int, float)))
        if differ:
            shown = [f"{list(v.shape)} {v.dtype}" if isinstance(v, TensorMeta) else
                     type(v).__name__ for v in (a, b)]
            raise bad_file(f"node {node.name!r}", f"the {kind} body returns "
                           f"{shown[1]} for carried value {i} of {shown[0]}: torch's "
                           f"{kind} carries values of one dtype and shape (the next "
                           "iteration runs the body on them)")


def dim_range(node: torch.fx.Node, op: Any, lookup: Any,
              when: str = "at every call of the program") -> None:
    """An operator's ``int dim`` (or one of its ``int[] dim``) outside its tensor's dims
    (``slice(x, 2**40, ...)``, ``sum(x, [-2**63])``): torch refuses it at every call.
    For a node whose other arguments the loader cannot work
    out (a size read from data), which its shape rule does not see; ``lookup(arg)``: what
    the loader knows an argument is (None: not known)."""
    positional, kinds = signature(op)
    kind = kinds.get("dim", ("",))[0]
    if not positional or kind not in ("int", "SymInt", "Optional[List[int]]", "List[int]") \
            or kinds[positional[0]][0] != "Tensor":
        return
    given = {**dict(zip(positional, node.args)), **node.kwargs}
    dim, t = given.get("dim"), lookup(given.get(positional[0]))
    if not isinstance(t, TensorMeta):
        return
    rank = max(len(t.shape) + op._opname.startswith("unsqueeze"), 1)
    for d in dim if isinstance(dim, (list, tuple)) else [dim]:  # (a dim list: each)
        if isinstance(d, int) and not isinstance(d, bool) and not -rank <= d < rank:
            raise bad_file(f"node {node.name!r}", f"{op} fails {when}: "
                           f"dim {d} of a tensor with {len(t.shape)} dims")


def python_value(node: torch.fx.Node, args: Any) -> None:
    """Python size arithmetic or ``getitem`` given what the loader's own evaluation shows
    is a tensor (``getitem(getitem(loop, 0), 1)``: a loop's carried tensor indexed)."""
    bad = next((a for a in args if isinstance(a, TensorMeta)), None) \
        if isinstance(args, tuple) else None
    if bad is not None:
        raise bad_file(f"node {node.name!r}", f"{_name(node.target)} computes with numbers "
                       f"(sizes) or takes one of several results, but it is given a tensor "
                       f"of shape {list(bad.shape)}")


def misused_kind(op: Any, args: Any, kwargs: dict, int_cls: type) -> str | None:
    """Why torch refuses the call whatever the sizes, by the kinds of the values the
    loader's own evaluation found (not the file's metadata): a tensor where the schema
    takes a number or a size list (``view(x, y)``), a number where it takes a tensor
    (``abs(n)``, ``cat(n)``), one number for a size list of no fixed length
    (``view(x, n)``).  Inside a subgraph a placeholder is whatever the call passes, so
    the allowlist's check of the file's arguments cannot tell these apart."""
    single = _one_element(op, args)
    if single is not None:
        return single
    positional, kinds = signature(op)
    given = {**dict(zip(positional, args if isinstance(args, (tuple, list)) else ())),
             **kwargs}
    fixed = one_int_lists(op)

    def number(v: Any) -> bool:
        return isinstance(v, (int, float, int_cls))

    for arg, v in given.items():
        kind = kinds.get(arg, ("", False))[0]
        if kind.startswith("Optional["):
            kind = kind[len("Optional["):-1]
            if v is None:
                continue
        tensor = isinstance(v, TensorMeta)
        if kind in ("int", "SymInt", "float", "bool", "Scalar", "number") and tensor:
            return f"it takes {kind} for {arg!r}, given a tensor"
        if kind.startswith("List[") and kind[5:-1] in ("int", "SymInt", "float", "bool"):
            if tensor or isinstance(v, (list, tuple)) and any(
                    isinstance(x, TensorMeta) for x in v):
                return f"it takes {kind} for {arg!r}, given a tensor"
            if number(v) and arg not in fixed:
                return f"it takes {kind} for {arg!r} (of no fixed length), given one number"
        if kind == "Tensor" and number(v) and not takes_numbers(op):
            return f"it takes a tensor for {arg!r}, given the number {v}"
        if kind == "Tensor" and number(v) and arg in _written(op):  # (``mul_(0.5, x)``:
            # torch writes a 0-d temporary, of another shape than the result but for a
            # 0-d other operand; the exporter never records one: session 33, seed 3302)
            return f"it writes {arg!r} in place, given the number {v}"
        if kind.startswith("List[") and "Tensor" in kind and v is not _UNSEEN and (
                not isinstance(v, (list, tuple)) or any(number(x) for x in v)):
            return f"it takes {kind} for {arg!r}, given {type(v).__name__}"
    return None


def _written(op: Any) -> frozenset:
    """The arguments ``op``'s schema writes in place (``self`` of ``mul_``)."""
    return frozenset(a.name for a in op._schema.arguments
                     if a.alias_info is not None and a.alias_info.is_write)


def _one_element(op: Any, args: Any) -> str | None:
    """``item()`` of a tensor whose sizes are numbers, not one element (a stored tensor
    declared ``[0, 2**30, 2**30]``): torch refuses it whatever the inputs (hostile probe,
    session 33, class ``zerodims``)."""
    if getattr(op, "_opname", None) not in ("item", "_local_scalar_dense") or \
            not isinstance(args, (tuple, list)) or not args or \
            not isinstance(args[0], (TensorMeta, torch.Tensor)) or \
            not all(type(s) is int for s in args[0].shape):
        return None
    numel = math.prod(args[0].shape)
    return None if numel == 1 else (f"it takes a tensor of one element, given one of "
                                    f"{numel} ({list(args[0].shape)})")


# (stands for a value the loader cannot work out that its operator's schema says is a
# tensor: ``misused_unknown``)
_A_TENSOR = TensorMeta((), torch.float32, torch.device("cpu"))
_UNSEEN = object()  # (one whose kind nothing says: misused by no rule)


def misused_unknown(op: Any, node: torch.fx.Node, meta: dict, int_cls: type) -> str | None:
    """``misused_kind`` of a call some of whose operands the loader cannot work out (a
    custom op's results, past the analysis): those that the schema of the operator making
    them says are tensors (its one ``Tensor`` result, an element of its ``Tensor[]`` or
    its ``Tensor`` result at that position) count as tensors, the rest as nothing known:
    ``sum(x, [0], getitem_1)``, a custom op's list element given for ``keepdim``, fails at
    every call (torch: "Expected a value of type 'bool'")."""
    def value(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return meta[a] if a in meta else _A_TENSOR if _tensor_by_schema(a) else _UNSEEN
        if isinstance(a, (list, tuple)):
            return type(a)(value(x) for x in a)
        return a

    return misused_kind(op, value(node.args), {k: value(v) for k, v in node.kwargs.items()},
                        int_cls)


def _tensor_by_schema(v: torch.fx.Node) -> bool:
    if v.op != "call_function":
        return False
    if isinstance(v.target, torch._ops.OpOverload):
        returns = v.target._schema.returns
        return len(returns) == 1 and str(returns[0].real_type) == "Tensor"
    src = v.args[0] if v.target is operator.getitem and len(v.args) == 2 else None
    if not isinstance(src, torch.fx.Node) or src.op != "call_function" or \
            not isinstance(src.target, torch._ops.OpOverload) or type(v.args[1]) is not int:
        return False
    returns = [str(r.real_type) for r in src.target._schema.returns]
    if len(returns) == 1:
        return returns[0] == "List[Tensor]"
    return -len(returns) <= v.args[1] < len(returns) and returns[v.args[1]] == "Tensor"


def branches(node: torch.fx.Node, outs: list, sizes: bool = True) -> None:
    """torch.cond's branches return as many values, of one kind, dtype and rank, and of
    the same static sizes (the exporter only traces such a cond, and torch.export refuses
    another): refused where the loader's own evaluation shows they differ.  (Eager runs
    either without comparing them: a map stacking its slices, or the graph after the
    cond, then met a value the loader did not expect.)  ``sizes``: False where each branch
    was evaluated under its own assumption (a size predicate: branch_facts.py), which may
    make a size one number in one branch and another in the other."""
    a, b = outs
    if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)):
        return
    why = None if len(a) == len(b) else f"{len(a)} and {len(b)} values"
    for i, (x, y) in enumerate(zip(a, b)):
        tx, ty = isinstance(x, TensorMeta), isinstance(y, TensorMeta)
        if tx and ty and (x.dtype != y.dtype or len(x.shape) != len(y.shape) or any(
                sizes and isinstance(p, int) and isinstance(q, int) and p != q
                for p, q in zip(x.shape, y.shape))):
            why = f"value {i} of shape {list(x.shape)} {x.dtype} and {list(y.shape)} {y.dtype}"
        elif tx != ty:
            why = f"value {i} a tensor in one branch only"
        if why:
            break
    if why:
        raise bad_file(f"node {node.name!r}", f"the branches of torch.cond return {why}: "
                       "torch.cond's branches return values of one kind, dtype and shape")
