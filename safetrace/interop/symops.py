"""torch's size arithmetic on SymInts (``a * b``, ``a + b``, ``a // b``, ``sym_max``,
``a <= b``...),
its result made directly once torch has made it for the same operands.

One SymInt operation costs ~12-17 µs in torch: the user-level magic method, the SymNode
method under its provenance wrapper, a proxy-mode lookup, a SymNode for the int operand,
the hint, an FX-node lookup; the sympy result itself is memoized by torch already.  A
conversion makes tens to hundreds of them (each value's contiguous strides, each range
check), the same ones every time for a program (our input symbols get the same torch names
in every conversion).  Here the result's sympy expression (and its ``optimized_summation``
flag) is remembered by operation and operands, process-wide; a later call builds the
``SymNode`` torch would build: that expression, the shape env, the result's type, the hint
computed from the operands' as torch computes it, no FX node (as torch's when translation
validation is off).  torch's own path runs
whenever a proxy mode is tracing, translation validation or structured tracing is on,
an operand is a constant or a bool, and whenever the check below (made once per process, on
scratch ShapeEnvs) finds that the two paths leave different values or ShapeEnv state.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import torch
# (sym_node's sentinel for "no hint" is what torch's own SymNode code compares against)
from torch.fx.experimental.sym_node import _NO_HINT, method_to_operator

from safetrace.interop.size_node import node_class
from safetrace.interop.symbols import backed_symint, conversion_env

# method -> (the Python operation, the result's type)
_OPS = {"add": (operator.add, int), "sub": (operator.sub, int), "mul": (operator.mul, int),
        "floordiv": (operator.floordiv, int), "sym_max": (torch.sym_max, int),
        "ge": (operator.ge, bool), "le": (operator.le, bool), "eq": (operator.eq, bool)}
_BY_FN = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
          operator.floordiv: "floordiv", torch.sym_max: "sym_max", operator.ge: "ge",
          operator.le: "le", operator.eq: "eq"}
_TORCH_NAMES = {"floordiv": "int_floordiv"}  # (a SymInt's ``//`` is SymNode.int_floordiv)


def _stride(a: Any, b: Any) -> Any:
    """A contiguous stride from the next one `a` and the next size `b` (torch's
    ``empty_tensor_restride``): ``a * sym_max(b, 1)`` (of an int, Python's ``max``: what
    ``torch.sym_max`` returns for two ints, without its checks)."""
    return a * (max(b, 1) if type(b) is int else torch.sym_max(b, 1))


# (made directly: the product's expression, the hint from the operands' hints; the
# intermediate ``sym_max`` torch's path makes is read by nothing else)
_OPS["stride"] = (_stride, int)
_HINTS = {"stride": lambda a, b: a * max(b, 1)}
# method -> the operation computing a result's hint from its operands' (as torch's)
_HINT_FNS = {m: _HINTS.get(m) or method_to_operator(_TORCH_NAMES.get(m, m)) for m in _OPS}
_SYMINT = torch.SymInt
_OVERLOAD = torch._ops.OpOverload
_NODE = torch.fx.Node
_SEEN: dict[tuple, Any] = {}  # (method, lhs key, rhs key) -> (expr, optimized) or _TORCH
_TORCH = object()             # a result torch's path gives (a constant, an FX node...)
# (method, each operand: an int's value or an expression's id, its optimized_summation flag
# or None for an int) -> (the expressions, _SEEN's entry): `sym_op`'s first look
_BY_ID: dict[tuple, tuple] = {}
_LIMIT = 50_000


def method_of(fn: Any) -> str | None:
    """The method name of a Python operation this module makes (else None)."""
    try:
        return _BY_FN.get(fn)
    except TypeError:  # (an unhashable target)
        return None


def size_op(target: Any, args: tuple) -> Any:
    """For a graph node's size arithmetic (`target` one of this module's operations, its
    two arguments sizes or graph nodes of sizes): a function computing its value by
    `sym_op`; else None."""
    if type(target) is _OVERLOAD or len(args) != 2:  # (an ATen op: not one of ours,
        return None  # and its hash is a Python call)
    method = method_of(target)
    if method is None:
        return None
    a, b = args  # (each a node's value or a number; unrolled: a generator costs ~2k
    if isinstance(a, _NODE):  # instructions more)
        a = a.meta.get("val")
    if isinstance(b, _NODE):
        b = b.meta.get("val")
    if (type(a) is not int and type(a) is not _SYMINT) or \
            (type(b) is not int and type(b) is not _SYMINT):
        return None
    return lambda: sym_op(method, a, b)


def sym_op(method: str, a: Any, b: Any) -> Any:
    """``a <op> b`` for `method` in ``add sub mul floordiv sym_max ge le eq`` (and ``stride``,
    ``a * sym_max(b, 1)``): the value torch's SymInt arithmetic gives (ints: Python's)."""
    ta, tb = type(a), type(b)
    if ta is _SYMINT and (tb is int or tb is _SYMINT):
        node = a.node  # (torch's orientation: the SymInt's method)
    elif ta is int and tb is _SYMINT:
        node = b.node  # (torch's __r<op>__: the int's wrapped node's method)
    else:
        return _OPS[method][0](a, b)
    env = node.shape_env
    if env is None or not _fast_ok() or \
            env._translation_validation_enabled or _tracing():
        return _OPS[method][0](a, b)
    # (each operand's part of the key and its hint, `_key` inline: a call fewer each)
    replaced = getattr(env, _COUNTER, 1) != 0
    if ta is int:
        ea, oa, hl = a, None, a
    else:
        n = a.node
        if n.constant is not None:  # (torch computes with the constant)
            return _OPS[method][0](a, b)
        ea = n.expr if replaced or n.shape_env is not env else n._expr
        oa, hl = n._optimized_summation, n._hint
    if tb is int:
        eb, ob, hr = b, None, b
    else:
        n = b.node
        if n.constant is not None:
            return _OPS[method][0](a, b)
        eb = n.expr if replaced or n.shape_env is not env else n._expr
        ob, hr = n._optimized_summation, n._hint
    # the result by the operands' identities first (a tuple of ints: no sympy hash, a
    # Python call each, ~1.5k instructions), the entry holding the expressions it is for
    by_id = (method, ea if oa is None else id(ea), oa, eb if ob is None else id(eb), ob)
    entry = _BY_ID.get(by_id)
    if entry is not None and (oa is None or entry[0] is ea) and \
            (ob is None or entry[1] is eb):
        hit = entry[2]
    else:
        key = (method, ea if oa is None else (ea, oa), eb if ob is None else (eb, ob))
        hit = _SEEN.get(key)
        if hit is None:
            out = _OPS[method][0](a, b)
            _remember(key, out)
            return out
        if len(_BY_ID) > _LIMIT:
            _BY_ID.clear()
        _BY_ID[by_id] = (ea, eb, hit)
    if hit is _TORCH:
        return _OPS[method][0](a, b)
    return _build(method, hit, env, _OPS[method][1], hl, hr)


_COUNTER = "_replacements_version_counter"


def _key(x: Any) -> tuple[Any, Any]:
    """(the operand's part of the key, its hint); (None, None): torch's path serves."""
    if type(x) is int:
        return x, x
    n = x.node
    if n.constant is not None:  # (torch computes with the constant)
        return None, None
    # (``n.expr`` is ``n._expr`` while its ShapeEnv has made no replacement, after a
    # walk of the expression's arguments for ``is_number``; a conversion makes none)
    e = n._expr if getattr(n.shape_env, "_replacements_version_counter", 1) == 0 \
        else n.expr
    return (e, n._optimized_summation), n._hint  # (torch's ``hint`` property's value)


def _remember(key: tuple, out: Any) -> None:
    if len(_SEEN) > _LIMIT:
        _SEEN.clear()
    t = type(out)
    if (t is torch.SymInt or t is torch.SymBool) and out.node.constant is None and \
            out.node.fx_node in (None, False):  # (False: no FX node, translation
        # validation off)
        _SEEN[key] = (out.node._expr, out.node._optimized_summation, out.node.fx_node,
                      node_class(out.node._expr, out.node.pytype))
    else:
        _SEEN[key] = _TORCH


def _build(method: str, hit: tuple, env: Any, pytype: type, hl: Any, hr: Any) -> Any:
    hint: Any = None  # (an operand without a hint: torch's ``_NO_HINT``, stored as None)
    if hl is not None and hr is not None:
        hint = _HINT_FNS[method](hl, hr)
        if type(hint) is not pytype and hint is not None and \
                not isinstance(hint, (torch.SymInt, torch.SymBool)):
            hint = pytype(hint)
    if type(hint) is pytype and _direct_ok():
        # the constructor's fields written at once (its Python body defines a closure
        # and tests the hint's type and translation validation, off here: fx_node False)
        node = _NEW(hit[3])
        node.__dict__ = {"_expr": hit[0], "shape_env": env, "pytype": pytype,
                         "_optimized_summation": hit[1], "_expr_ver": -1,
                         "_expr_cache": None, "_hint": hint, "constant": None,
                         "fx_node": False}
    else:
        node = hit[3](hit[0], env, pytype, _NO_HINT if hint is None else hint,
                      fx_node=hit[2], optimized_summation=hit[1])
    return torch.SymInt(node) if pytype is int else torch.SymBool(node)


_NEW = object.__new__


@functools.cache
def _direct_ok() -> bool:
    """`_build`'s fields are those torch's ``SymNode`` constructor writes, in its order
    (checked once per process; else the constructor runs)."""
    try:
        import sympy

        env = conversion_env()
        expr = sympy.Symbol("s0", positive=True, integer=True) * 2
        for cls, pytype, hint in ((node_class(expr, int), int, 6),
                                  (node_class(expr, bool), bool, True)):
            theirs = cls(expr, env, pytype, hint, fx_node=False, optimized_summation=True)
            if list(vars(theirs).items()) != [
                    ("_expr", expr), ("shape_env", env), ("pytype", pytype),
                    ("_optimized_summation", True), ("_expr_ver", -1),
                    ("_expr_cache", None), ("_hint", hint), ("constant", None),
                    ("fx_node", False)]:
                return False
        return True
    except Exception:  # noqa: BLE001 - torch's class changed: its constructor serves
        return False


def _tracing() -> bool:
    """A proxy mode is tracing (torch records the operation as a graph node) or torch's
    structured trace is on (it logs each expression made)."""
    if _LOGGING.GET_DTRACE_STRUCTURED or _DISPATCH_MODE(_PROXY) is not None:
        return True
    # (torch's ``_get_dispatch_mode_pre_dispatch(PROXY)``: the pre-dispatch mode stack's
    # slot 0, read from the stack's list of modes, without its two Python calls, where
    # the stack is a module global holding one)
    stack = getattr(_OPS_MODULE, "_mode_stack_state_for_pre_dispatch", None)
    if stack is _PRE_STACK[0] and stack is not None:
        return _PRE_STACK[1][0] is not None
    modes = vars(stack).get(_MODES) if hasattr(stack, "__dict__") else None
    if type(modes) is not list or not modes or not hasattr(stack, "get"):
        return _PRE_DISPATCH_MODE(_PROXY) is not None
    _PRE_STACK[:] = [stack, modes]  # (the stack keeps its list: `set` writes into it)
    return stack.get(0) is not None


_MODES = "_ModeStackStateForPreDispatch__infra_modes"
_PRE_STACK: list = [None, None]  # the pre-dispatch mode stack, its list of modes


_LOGGING = torch._logging._internal
_OPS_MODULE = torch._ops
_PROXY = torch._C._TorchDispatchModeKey.PROXY
_PRE_DISPATCH_MODE = torch._ops._get_dispatch_mode_pre_dispatch
_DISPATCH_MODE = torch._C._get_dispatch_mode


@functools.cache
def _fast_ok() -> bool:
    """Both paths give the same values (every SymNode field) and leave the same ShapeEnv
    state, on a sample of the operations a conversion makes (checked once per process)."""
    from torch.utils._sympy.value_ranges import ValueRanges

    def symbols(env: Any) -> tuple:
        a = backed_symint(env, 8, "x.shape[0]", ValueRanges(1, 1024))
        b = backed_symint(env, 5, "x.shape[1]", ValueRanges(0, 64))
        return a, b, env.create_unbacked_symint()

    def samples(a: Any, b: Any, u: Any, op: Any) -> list:
        ab = op("add", a, b)
        return [op("mul", a, 32), op("mul", 32, a), ab, op("add", ab, 1), op("add", 1, b),
                op("mul", ab, a), op("sym_max", a, 1), op("sym_max", b, 1),
                op("mul", 4, op("sym_max", b, 1)), op("ge", a, 1), op("ge", b, 2),
                op("le", a, 1024), op("le", ab, 7), op("mul", u, 4), op("le", u, 10),
                op("ge", u, 0), op("add", u, a), op("floordiv", op("add", a, -3), 2),
                op("floordiv", ab, a), op("floordiv", 64, op("sym_max", b, 1)),
                op("add", op("floordiv", op("add", b, 1), 2), 1), op("floordiv", u, 4),
                op("stride", 1, a), op("stride", 1, b), op("stride", op("stride", 1, b), a),
                op("stride", ab, 3), op("stride", 1, u), op("stride", u, b),
                op("sub", a, 0), op("sub", ab, b), op("sub", 7, a), op("sub", u, 1),
                op("eq", a, op("mul", 4, op("floordiv", a, 4))), op("eq", b, 5),
                op("eq", 3, ab), op("eq", u, a)]

    def torch_op(method: str, x: Any, y: Any) -> Any:
        return _OPS[method][0](x, y)

    def fast_op(method: str, x: Any, y: Any) -> Any:  # (without the check: recursion)
        kl, hl = _key(x)
        kr, hr = _key(y)
        hit = _SEEN.get((method, kl, kr))
        if hit is None or hit is _TORCH:
            raise LookupError(method)
        return _build(method, hit, (x if type(x) is torch.SymInt else y).node.shape_env,
                      _OPS[method][1], hl, hr)

    def record(method: str, x: Any, y: Any) -> Any:
        out = torch_op(method, x, y)
        _remember((method, _key(x)[0], _key(y)[0]), out)
        return out

    try:
        primer, theirs, ours = conversion_env(), conversion_env(), conversion_env()
        samples(*symbols(primer), record)
        a = samples(*symbols(theirs), torch_op)
        b = samples(*symbols(ours), fast_op)
        for x, y in zip(a, b):
            if type(x) is not type(y) or not _same_fields(vars(x.node), vars(y.node)) or \
                    x.node.expr != y.node.expr or x.node.maybe_as_int() != y.node.maybe_as_int():
                return False
        state_a, state_b = vars(theirs), vars(ours)
        if state_a.keys() != state_b.keys():
            return False
        # (where a symbol was made: texts and tracebacks, compared by symbol)
        return all(v.keys() == state_b[k].keys() if k in _WHERE_MADE else
                   _equal(v, state_b[k]) for k, v in state_a.items())
    except Exception:  # noqa: BLE001 - torch's internals moved: its own path serves
        return False


_WHERE_MADE = ("var_to_range_sloc", "var_to_stack")


def _same_fields(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        w = b[k]
        if k == "shape_env":
            continue  # (one scratch env each)
        if type(v) is not type(w) or not _equal(v, w):
            return False
    return True


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - not comparable: only the same object is
        return a is b
