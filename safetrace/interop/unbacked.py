"""torch's data-dependent (unbacked) symbols of a conversion, made without
``create_unbacked_symint``'s fixed costs.

A size our rules took from data (``nonzero``'s count, ``x[mask]``'s rows) is a fresh
unbacked symbol to torch, size-like, with our range: ``create_unbacked_symint()`` then
``_constrain_range_for_size``, as torch's kernel makes it.  Those two walk the Python
stack for source locations twice, build the default range and intersect it with ours in
sympy, and go through the event recorder's wrapper three times (~0.2 ms amid a small
conversion).  Here their state is written directly, the source locations the
conversion's; torch's own path runs whenever translation validation, event recording or
the dynamic-shape log is on (``symbols.quiet``), and whenever the check below (made once
per process, on scratch ShapeEnvs) finds that the two paths leave different state.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from safetrace.interop.lazy import symbolic_shapes
from safetrace.interop.symbols import conversion_env, parts, quiet, value_range


def unbacked_symint(shape_env: Any, lo: int, hi: int | None) -> Any:
    """A torch SymInt for a new unbacked size-like symbol of range [lo, hi] (None: no upper
    bound; 0 <= lo <= hi): what ``create_unbacked_symint()`` then
    ``_constrain_range_for_size(u, min=lo, max=hi)`` give."""
    if quiet(shape_env) and _unbacked_same_as_torch():
        return _direct_unbacked(shape_env, lo, hi)
    return _torch_unbacked(shape_env, lo, hi)


def _torch_unbacked(shape_env: Any, lo: int, hi: int | None) -> Any:
    u = shape_env.create_unbacked_symint()
    symbolic_shapes()._constrain_range_for_size(u, min=lo, max=hi)
    return u


def _direct_unbacked(shape_env: Any, lo: int, hi: int | None) -> Any:
    sympy, ConstantSource, SLoc, SymNode, ValueRangesSLoc, SymT, make_symbol = parts()
    symbol = make_symbol(SymT.UNBACKED_INT, shape_env.unbacked_symint_counter, integer=True)
    shape_env.unbacked_symint_counter += 1
    if not shape_env._ignore_fresh_unbacked_symbols_tls():
        shape_env.pending_fresh_unbacked_symbols.append(symbol)
    shape_env.counter["create_unbacked_symbol"] += 1
    shape_env.var_to_stack[symbol] = _captured_traceback().extract(skip=1)
    shape_env.var_to_range[symbol] = value_range(lo, hi)
    # (torch's: both ends where the symbol was made, then the lower one where its range
    # was set, and the upper one too where the range has one)
    made, ranged = SLoc(_WHERE_UNBACKED, None), SLoc(_WHERE_UNBACKED, None)
    shape_env.var_to_range_sloc[symbol] = ValueRangesSLoc(ranged,
                                                          made if hi is None else ranged)
    shape_env.size_like.add(symbol)
    return torch.SymInt(SymNode(symbol, shape_env, int, None, fx_node=None))


_WHERE_UNBACKED = "safetrace.to_torch (a size from data: torch's kernel would make it)"


@functools.cache
def _captured_traceback() -> Any:
    from torch.utils._traceback import CapturedTraceback

    return CapturedTraceback


@functools.cache
def _unbacked_same_as_torch() -> bool:
    """Both unbacked paths leave the same ShapeEnv state (location texts and captured
    stacks aside: the same keys) and the same values (checked once per process)."""
    try:
        theirs, ours = conversion_env(), conversion_env()
        if not quiet(theirs) or theirs._ignore_fresh_unbacked_symbols_tls():
            return False
        ranges = ((0, None), (0, 4096), (2, 9), (1, 1))
        a = [_torch_unbacked(theirs, lo, hi) for lo, hi in ranges]
        b = [_direct_unbacked(ours, lo, hi) for lo, hi in ranges]
        if [_node_fields(x) for x in a] != [_node_fields(x) for x in b]:
            return False
        state_a, state_b = vars(theirs), vars(ours)
        if list(state_a) != list(state_b):
            return False
        for key, value in state_a.items():
            other = state_b[key]
            if key in ("var_to_range_sloc", "var_to_stack"):  # (texts, stacks: the same keys)
                if list(value) != list(other):
                    return False
            elif type(value) is not type(other) or not _equal(value, other):
                return False
            elif key == "var_to_range" and any(
                    [type(e) for e in (r.lower, r.upper)] !=
                    [type(e) for e in (other[k].lower, other[k].upper)]
                    for k, r in value.items()):
                return False
        return True
    except Exception:  # noqa: BLE001 - torch's internals moved: its own path serves
        return False


def _node_fields(x: Any) -> tuple:
    n = x.node
    return (type(x), type(n), n._expr, n.hint, n.pytype, n.constant, n.fx_node,
            n.shape_env is not None)


def fresh_bindings(shape_env: Any, val: Any) -> Any:
    """``compute_unbacked_bindings(shape_env, val)`` of a value made here (``val``'s
    sizes hold each fresh symbol bare): the path to each fresh symbol, found as torch's
    walk finds it (sizes, strides, storage offset of each tensor in order, the first place
    wins), without its generic walk of every value kind (~50 µs amid a conversion).
    torch's function runs where the walk meets anything but fake tensors, tuples and
    sizes, where a fresh symbol is not found bare (or first appears in a product, which
    torch binds by division), and wherever ``fresh_symbols`` would not be quiet."""
    if quiet(shape_env) and _bindings_same_as_torch():
        found = _direct_bindings(shape_env, val)
        if found is not None:
            return found
    return symbolic_shapes().compute_unbacked_bindings(shape_env, val)


def _direct_bindings(shape_env: Any, val: Any) -> dict | None:
    fresh = shape_env.pending_fresh_unbacked_symbols
    if not fresh or shape_env.ignorable_fresh_unbacked_symbols:
        return None
    want, found = set(fresh), {}
    if not _walk(val, (), want, found, _path_keys()) or want:
        return None
    fresh.clear()
    return found


def _walk(a: Any, path: tuple, want: set, found: dict, keys: tuple) -> bool:
    """Record in `found` the path of each symbol of `want` met bare in `a`; False where
    `a` holds something torch's walk treats otherwise."""
    method, item, fake_class, product = keys
    if isinstance(a, (tuple, list)):
        return all(_walk(x, path + (item(i),), want, found, keys) for i, x in enumerate(a))
    if isinstance(a, torch.Tensor):
        if type(a) is not fake_class or a.layout != torch.strided or \
                a.real_tensor is not None:
            return False
        return _walk(a.size(), path + (method("size"),), want, found, keys) and \
            _walk(a.stride(), path + (method("stride"),), want, found, keys) and \
            _walk(a.storage_offset(), path + (method("storage_offset"),), want, found,
                  keys)
    if type(a) is torch.SymInt:
        e = a.node._expr
        if e in want:
            found[e] = path
            want.discard(e)
            return True
        return not (isinstance(e, product) and not want.isdisjoint(e.free_symbols))
    return not isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))


@functools.cache
def _path_keys() -> tuple:
    import sympy
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx.experimental.symbolic_shapes import CallMethodKey
    from torch.utils._pytree import SequenceKey

    return CallMethodKey, SequenceKey, FakeTensor, sympy.Mul


@functools.cache
def _bindings_same_as_torch() -> bool:
    """`fresh_bindings` gives torch's bindings, and leaves the fresh symbols as torch's
    function does, on a sample of values (checked once per process, outside the dispatch
    modes of the conversion that asks: its fake mode would make and cache the samples)."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch._C._DisablePythonDispatcher():
        return _bindings_check()


def _bindings_check() -> bool:
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    try:
        env = conversion_env()
        if not quiet(env):
            return False
        mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
        meta = torch.empty(0, device="meta")

        def fake(sizes: list, strides: list) -> Any:
            return FakeTensor(mode, meta.as_strided(sizes, strides), torch.device("cpu"))

        for count, make in ((1, lambda u: fake([u[0], 16], [16, 1])),
                            (2, lambda u: (fake([u[0]], [1]), fake([4, u[1]], [u[1], 1]))),
                            (1, lambda u: [fake([4, u[0], 1], [u[0], 1, 1])]),
                            (2, lambda u: fake([u[1], u[0]], [u[0], 1]))):
            symbols = [_direct_unbacked(env, 0, None) for _ in range(count)]
            val = make(symbols)
            pending = list(env.pending_fresh_unbacked_symbols)
            ours = _direct_bindings(env, val)
            left = list(env.pending_fresh_unbacked_symbols)
            env.pending_fresh_unbacked_symbols[:] = pending
            theirs = symbolic_shapes().compute_unbacked_bindings(env, val)
            if ours != theirs or repr(ours) != repr(theirs) or left or \
                    env.pending_fresh_unbacked_symbols:
                return False
        return True
    except Exception:  # noqa: BLE001 - torch's internals moved: its function serves
        return False


def all_bindings(shape_env: Any, val: Any) -> Any:
    """``compute_unbacked_bindings`` (torch's, for a value a kernel made)."""
    return symbolic_shapes().compute_unbacked_bindings(shape_env, val)


def follow(value: Any, path: tuple) -> Any:
    """The part of `value` (ours or torch's) that an unbacked binding's key path names;
    None for a path this walk does not know."""
    for key in path:
        name = type(key).__name__
        if name == "SequenceKey":
            value = value[key.idx]
        elif name == "CallMethodKey" and key.name == "size":
            value = tuple(value.shape)
        elif name == "CallMethodKey" and key.name == "stride" and \
                isinstance(value, torch.Tensor):
            value = tuple(value.stride())
        elif name == "ConvertIntKey":
            continue
        elif name == "DivideByKey":  # a size a fake kernel made as k * fresh size
            value = value // key.divisor
        else:
            return None
    return value


def known_unbacked(size: Any, names: dict) -> bool:
    """Whether `size` is a data-dependent symbol of torch's that is matched already."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if not isinstance(size, torch.SymInt):
        return False
    expr = size.node.expr
    return expr.is_symbol and expr in names and symbol_is_type(expr, SymT.UNBACKED_INT)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - not comparable: only the same object is
        return a is b
