"""torch's backed symbol for one of our input symbols, made without ``create_symbol``'s
fixed costs.

``ShapeEnv.create_symbol`` does, for a dynamic size: a symbol named after its source, the
example value, the source, a default range, a guard counter; and, around that, work for
its log line and messages: it builds the sympy assertion ``s > 1`` (for translation
validation, off), prints the range with sympy's printer, walks the Python stack three
times for source locations, and formats a log line nobody listens to (~0.15 ms a
symbol, 5-10% of a small model's conversion).  Here the same state is written directly,
the range ours, the location the conversion's; torch's own path runs whenever translation
validation, event recording or the dynamic-shape log is on, and whenever the check below
(made once per process, on a scratch ShapeEnv) finds that the two paths leave different
state.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import logging
import operator
from typing import Any

import torch

from safetrace.interop.environ import env_value
from safetrace.interop.lazy import config_value, symbolic_shapes
from safetrace.interop.size_node import IntSizeNode

_WHERE = "safetrace.to_torch (an input symbol of the program)"


def backed_symint(shape_env: Any, hint: int, where: str, vr: Any,
                  positive: bool = True) -> Any:
    """A torch SymInt for a new backed symbol of range `vr` and example value `hint`, whose
    source is ``ConstantSource(where)``.

    `positive`: the symbol is positive in sympy (torch's convention for sizes, also where
    `vr` holds 0).  False (a range holding 0 only): sympy knows only that it is an
    integer, so ``max(n, 1)`` stays ``Max(1, n)`` in every tool that rebuilds the program's
    size arithmetic (``interop/positivity.py``); made by torch's own path."""
    if not positive and vr.lower <= 0:
        return _torch(shape_env, hint, where, vr, None)
    if quiet(shape_env) and _same_as_torch():
        return _direct(shape_env, hint, where, vr)
    return _torch(shape_env, hint, where, vr)


def _torch(shape_env: Any, hint: int, where: str, vr: Any,
           positive: bool | None = True) -> Any:
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic

    expr = shape_env.create_symbol(
        hint, ConstantSource(where), dynamic_dim=DimDynamic.DYNAMIC,
        do_not_specialize_zero_one=True, positive=positive)
    shape_env.var_to_range[expr] = vr  # (a constraint: ~0.2 ms of sympy Max/Min)
    return shape_env.create_symintnode(expr, hint=hint, source=ConstantSource(where))


def _direct(shape_env: Any, hint: int, where: str, vr: Any) -> Any:
    sympy, ConstantSource, SLoc, _, ValueRangesSLoc, SymT, make_symbol = parts()
    if hint < 0 or not _within(vr, hint):  # (torch's path says why)
        return _torch(shape_env, hint, where, vr)
    source = ConstantSource(where)
    expr = _size_symbol(shape_env, source.name)
    shape_env.source_to_var[source.name] = expr
    shape_env.backed_var_to_val[expr] = sympy.Integer(hint)
    shape_env.var_to_sources[expr] = [source]
    shape_env.var_to_range[expr] = vr
    sloc = SLoc(_WHERE, None)
    shape_env.var_to_range_sloc[expr] = ValueRangesSLoc(sloc, sloc)
    shape_env.counter["create_symbol"] += 1
    shape_env.symbol_guard_counter[expr] = 0
    return torch.SymInt(IntSizeNode(expr, shape_env, int, hint))


def _size_symbol(shape_env: Any, name: str) -> Any:
    """``make_symbol(SymT.SIZE, shape_env._generate_unique_id(name), positive=True,
    integer=True)``: torch's id (the first free number from the name's sha256 modulo 100)
    with the hash made once per name, and sympy's symbol once per number (sympy returns
    its cached object for the same name and assumptions: the same symbol), where the
    ShapeEnv's method is the one this copies (`_same_as_torch` compares the two paths'
    states, symbol names included, once per process)."""
    if type(shape_env)._generate_unique_id is not _torch_unique():
        _, _, _, _, _, SymT, make_symbol = parts()
        return make_symbol(SymT.SIZE, shape_env._generate_unique_id(name), positive=True,
                           integer=True)
    attempt = _FIRST_IDS.get(name)
    if attempt is None:
        if len(_FIRST_IDS) > 10_000:
            _FIRST_IDS.clear()
        attempt = _FIRST_IDS[name] = int(hashlib.sha256(name.encode()).hexdigest(), 16) % 100
    ids = shape_env.unique_ids
    while attempt in ids:
        attempt += 1
    ids.add(attempt)
    expr = _SIZE_SYMBOLS.get(attempt)
    if expr is None:
        _, _, _, _, _, SymT, make_symbol = parts()
        expr = _SIZE_SYMBOLS[attempt] = make_symbol(SymT.SIZE, attempt, positive=True,
                                                    integer=True)
    return expr


_FIRST_IDS: dict[str, int] = {}      # a source name -> its sha256 modulo 100
_SIZE_SYMBOLS: dict[int, Any] = {}   # a number -> sympy's size symbol of it (s<number>)


@functools.cache
def _torch_unique() -> Any:
    """torch's ``ShapeEnv._generate_unique_id`` as this process loaded it (the method
    `_size_symbol` copies; a class patched later, or a subclass's own, is called)."""
    return symbolic_shapes().ShapeEnv._generate_unique_id


@functools.cache
def parts() -> tuple:
    """What `_direct` builds from (imported once: ~6 µs a symbol as import statements)."""
    import sympy
    from torch._dynamo.source import ConstantSource
    from torch._guards import SLoc
    from torch.fx.experimental.sym_node import SymNode
    from torch.fx.experimental.symbolic_shapes import ValueRangesSLoc
    from torch.utils._sympy.symbol import SymT, make_symbol

    return sympy, ConstantSource, SLoc, SymNode, ValueRangesSLoc, SymT, make_symbol


@functools.lru_cache(maxsize=4096)
def value_range(lo: int, hi: int | None) -> Any:
    """``ValueRanges(lo, hi)`` (None: no upper bound), one object per range (immutable;
    its constructor's sympy conversions and checks cost ~20 µs)."""
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import ValueRanges

    return ValueRanges(lo, int_oo if hi is None else hi)


@functools.lru_cache(maxsize=4096)
def _within(vr: Any, hint: int) -> bool:
    return hint in vr  # (sympy comparisons: ~10 µs)


def quiet(shape_env: Any) -> bool:
    """Whether nothing but the ShapeEnv's state would see torch's path: no translation
    validation, no event recording, no listener of the dynamic-shape log."""
    return not (shape_env._translation_validation_enabled or shape_env.should_record_events
                or symbolic_shapes().log.isEnabledFor(logging.INFO) or env_value("TORCH_TRACE") != "")


@functools.cache
def _same_as_torch() -> bool:
    """Both paths leave the same ShapeEnv state (location texts aside), and the same value
    (checked once per process)."""
    from torch.utils._sympy.value_ranges import ValueRanges

    try:
        theirs, ours = conversion_env(), conversion_env()
        if not quiet(theirs):
            return False
        a = [_torch(theirs, h, w, ValueRanges(lo, hi)) for h, w, lo, hi in _SAMPLES]
        b = [_direct(ours, h, w, ValueRanges(lo, hi)) for h, w, lo, hi in _SAMPLES]
        if [(x.node.expr, x.node.hint, x.node.pytype, x.node.maybe_as_int()) for x in a] != \
                [(x.node.expr, x.node.hint, x.node.pytype, x.node.maybe_as_int()) for x in b]:
            return False
        state_a, state_b = vars(theirs), vars(ours)
        if state_a.keys() != state_b.keys():
            return False
        for key, value in state_a.items():
            other = state_b[key]
            if key == "var_to_range_sloc":  # (where the range came from: texts differ)
                if value.keys() != other.keys():
                    return False
            elif not _equal(value, other):
                return False
        return True
    except Exception:  # noqa: BLE001 - torch's internals moved: its own path serves
        return False


def conversion_env() -> Any:
    """A new ShapeEnv set as a conversion's: no duck sizing (equal example sizes are not
    equal dims), no 0/1 specialization (our ranges say what sizes are allowed),
    data-dependent output sizes allowed.  Each conversion makes one, and so do the checks
    made once per process (scratch ShapeEnvs set exactly as the conversion's).

    The constructor writes ~60 attributes, nearly all empty containers, constants and one
    settings object, and costs ~35 µs (~0.1 ms amid a conversion): where the plan below
    exists (its result checked once per process against the constructor's), the same
    attributes are written from it, fresh containers each time; torch's constructor runs
    whenever translation validation or the dynamic-shape log is on."""
    plan = _env_plan()
    shapes = symbolic_shapes()
    if plan is None or shapes.log.isEnabledFor(logging.INFO) or _tv_enabled(shapes):
        return _torch_env()
    return _from_plan(shapes, plan)


def _from_plan(shapes: Any, plan: tuple) -> Any:
    template, fresh = plan
    env = shapes.ShapeEnv.__new__(shapes.ShapeEnv)
    d = env.__dict__
    d.update(template)  # (every attribute in the constructor's order)
    keys, makers = fresh
    d.update(zip(keys, map(_call, makers)))  # (fresh containers: a loop in C)
    return env


def _torch_env() -> Any:
    return symbolic_shapes().ShapeEnv(
        specialize_zero_one=False, duck_shape=False, allow_dynamic_output_shape_ops=True,
        assume_static_by_default=False)


def _tv_enabled(shapes: Any) -> bool:
    """Translation validation is on (torch's constructor then asserts z3 and makes its
    validator)."""
    return bool(config_value(shapes.config, "translation_validation"))


_IMMUTABLE = (type(None), bool, int, float, str)
_call = operator.call  # (each fresh container made by its type, from C)
_EMPTY = (dict, list, set, collections.Counter)


@functools.cache
def _env_plan() -> tuple | None:
    """A conversion's ShapeEnv attributes in the constructor's order (the values to
    share: constants, the frozen settings, the logger), and those that are a fresh empty
    container each time (with its type); None where an attribute is neither, or the
    result differs from the constructor's (checked here, once)."""
    try:
        shapes = symbolic_shapes()
        if shapes.log.isEnabledFor(logging.INFO) or _tv_enabled(shapes):
            return None
        template, fresh = {}, []
        for key, value in vars(_torch_env()).items():
            t = type(value)
            template[key] = value
            if (t in _EMPTY or t is shapes.OrderedSet) and not value:
                fresh.append((key, t))
            elif not (t in _IMMUTABLE or (t is tuple and hash(value) is not None) or
                      value is shapes.log or (t is shapes.ShapeEnvSettings and
                                              t.__dataclass_params__.frozen)):
                return None
        plan = (template, (tuple(k for k, _ in fresh), tuple(t for _, t in fresh)))
        a, b = vars(_from_plan(shapes, plan)), vars(_torch_env())
        if list(a) != list(b) or any(type(v) is not type(b[k]) or not _equal(v, b[k])
                                     for k, v in a.items()):
            return None
        return plan
    except Exception:  # noqa: BLE001 - torch's internals moved: its constructor serves
        return None


# (hint, where, lo, hi); y.shape[87]'s name hashes to x.shape[0]'s number (s55: the next
# free number is taken)
_SAMPLES = ((8, "x.shape[0]", 1, 1024), (3, "y.shape[1]", 0, 64), (5, "y.shape[87]", 2, 9))


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - not comparable: only the same object is
        return a is b
