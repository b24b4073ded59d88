"""Helpers every rule family shares: dims, broadcasting, dtype promotion, checks."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

import torch

from safetrace.errors import outside_export, shape_error
from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE  # the trace in progress
from safetrace.meta.symtypes import SYM_CLASSES
from safetrace.symbolic import (
    SymBool, SymFloat, SymInt, ge, le, lt, make_float, make_int, sym_and, sym_max, sym_min,
    sym_or, to_expr,
)
from safetrace.symbolic.expr import terms

Size = Any


def check(cond: Any, op: str, message: str, fix: str = "") -> None:
    """Raise OpShapeError(op: message, with `fix`) unless `cond` holds (a guard when
    symbolic).

    On data-dependent sizes that the facts do not decide, the condition is what the op
    requires (eager raises where it fails), so it is assumed and checked at run time: the
    graph rejects exactly the data that eager rejects, instead of failing the export."""
    if isinstance(cond, SymBool):
        env = cond.env
        if env.undecided_unbacked(cond.expr) and (
                env.precondition_probe is None or env.precondition_probe(True, True,
                                                                         cond.expr)):
            env.settle(cond.expr, "precondition", f"{op} raises otherwise ({message})")
            return
        # (inside the program's own try block the except side is eager's path where the
        # data breaks it: no run-time assert, the question is refused below as undecided)
        env.precondition_depth += 1  # a guard made here is what the op requires, no branch
        try:  # (Env.precondition() inlined: checks are on every op's path)
            holds = bool(cond)
        finally:
            env.precondition_depth -= 1
        if not holds:
            raise shape_error(op, message, fix)
        return
    if not cond:
        raise shape_error(op, message, fix)


@contextmanager
def requiring() -> Iterator[None]:
    """Guards decided inside are the op's own requirements (for a condition ``check``
    cannot take whole: ``ok = all(...) or batch == 0``, then ``check(ok, ...)``)."""
    env = ACTIVE.env
    if env is None:
        yield
        return
    with env.precondition():
        yield


def every(conds: Iterable[Any]) -> Any:
    """``all(conds)`` without deciding anything: a SymBool for ``check`` to decide as the
    op's requirement (``all()`` would record each guard as a plain branch first)."""
    return sym_and(*conds)


def either(conds: Iterable[Any]) -> Any:
    """``any(conds)`` without deciding anything (``every``'s ``or``): Python's ``a or b``
    would decide ``a`` as a plain branch before ``check`` sees the whole."""
    return sym_or(*conds)


def divides(d: Any, n: Any) -> Any:
    """``d != 0 and n % d == 0`` as one requirement (``every``), without a branch on
    ``d != 0`` first; false where `d` is known to be 0 (no modulo by zero asked)."""
    nonzero = d != 0
    if nonzero is False:
        return False
    try:
        return every((nonzero, n % d == 0))
    except ZeroDivisionError:  # (the facts make a symbolic d 0)
        return False


def open_question(cond: Any) -> bool | None:
    """``bool(cond)`` (a guard on input sizes), or None when it depends on data-dependent
    sizes that the facts do not decide: the caller then answers size-obliviously."""
    if isinstance(cond, SymBool) and cond.env.undecided_unbacked(cond.expr):
        return None
    return bool(cond)


def settle(cond: Any, why: str, asserted: bool = True) -> None:
    """Assume `cond` (on data-dependent sizes) as a size-oblivious answer; with `asserted`,
    the graph checks it at run time because the excluded values would compute otherwise."""
    if isinstance(cond, SymBool):
        cond.env.settle(cond.expr, "size-oblivious", why, asserted=asserted)
    elif not cond:
        raise AssertionError(f"settled a false condition: {why}")


def normalize_dim(dim: int, ndim: int, op: str = "op") -> int:
    """Wrap a possibly negative dim into [0, ndim); 0-d tensors accept dim 0 and -1."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise shape_error(op, f"dim {dim} is out of range for a tensor with {ndim} dims "
                              f"(expected to be in range [{-n}, {n - 1}])")
    return dim + n if dim < 0 else dim


def normalize_dims(dims: Iterable[int] | int | None, ndim: int, op: str = "op") -> list[int]:
    """Normalize a dim, a list of dims, or None (meaning all dims)."""
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    out = [normalize_dim(d, ndim, op) for d in dims]
    if len(set(out)) != len(out):
        raise shape_error(op, f"dim {out} appears multiple times in the list of dims")
    return out


def broadcast_shapes(*shapes: Sequence[Size], op: str = "op") -> tuple:
    """Broadcast shapes as torch does; size-1 questions on symbolic sizes become guards."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Size] = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            j = offset + i
            cur = out[j]
            if cur is size:
                continue
            if type(cur) not in SYM_CLASSES and type(size) not in SYM_CLASSES and \
                    isinstance(cur, int) and isinstance(size, int):
                if size == 1 or cur == size:
                    continue
                if cur == 1:
                    out[j] = size
                    continue
                raise shape_error(op, f"The size of tensor a ({cur}) must match the size of "
                                      f"tensor b ({size}) at non-singleton dimension {i}")
            if type(cur) is type(size) is SymInt and cur.expr is size.expr and \
                    cur.env is size.env:
                continue  # one (interned) size expression: equal, with nothing to decide
            out[j] = broadcast_sizes(cur, size, i, op)
    return tuple(out)


def hint_of(size: Size) -> int | None:
    if isinstance(size, int):
        return size
    try:
        return size.hint
    except Exception:  # unbacked: no example value
        return None


def broadcast_sizes(a: Size, b: Size, i: int, op: str) -> Size:
    """Broadcast two sizes, one at least symbolic, without arbitrary size-1 guards.

    Sizes equal on the example are unified (equal sizes broadcast alike whether or not
    they are 1); only when the example really broadcasts is ``== 1`` guarded.
    """
    if type(b) not in SYM_CLASSES and isinstance(b, int) and b == 1:
        return a
    if isinstance(a, int) and a == 1:
        return b
    ha, hb = hint_of(a), hint_of(b)
    if ha is not None and hb is not None:
        small = _zero_or_one_broadcast(a, b)
        if small is not None:
            return small
        if ha != hb or ha <= 1:  # (both 1: `cache[:n] + x` at n = 1, min(n, 8) against
            # n, where pinning the Dim.AUTO n to 1 refused every other n eager computes)
            ok = _one_symbol_broadcast(a, b, ha == 0)
            if ok is not None:
                with requiring():  # eager's own condition: where it fails eager raises
                    holds = bool(ok)
                if not holds:
                    raise _mismatch(a, b, i, op)
                return decided_max(a, b) * decided_min(decided_min(a, b), 1)
        if ha == hb:
            if ha == 1:  # a Dim.AUTO size 1 stays 1 (as torch.export specializes it), so
                if _flexible(a) and a == 1:  # the other size keeps its declared range
                    return b
                if _flexible(b) and b == 1:
                    return a
                if isinstance(a, SymInt) and isinstance(b, SymInt) and not cond_true(a == b):
                    return _either_broadcasts(a, b)
            if _one_only_below_two(a) and _one_only_below_two(b):
                # eager raises wherever they differ with every size at least 2, the sizes
                # torch.export assumes of a dynamic dim: the op's requirement there
                # (exporter/eager_raises.py reads it so), as torch's broadcast checks it
                env = a.env if isinstance(a, SymInt) else b.env
                env.required_from = 2
                env.required_sizes = (to_expr(a), to_expr(b))  # (where eager raises)
                try:
                    same = bool(a == b)
                finally:
                    env.required_from, env.required_sizes = 0, ()
                if not same:
                    raise _mismatch(a, b, i, op)
                return a
            if not (a == b):  # messages are built only on failure: printing sizes is costly
                raise _mismatch(a, b, i, op)
            return a
        if ha == 1 and _broadcasts_to(a, b):
            return b
        if hb == 1 and _broadcasts_to(b, a):
            return a
        raise shape_error(op, f"The size of tensor a ({a}) must match the size of tensor b "
                              f"({b}) at non-singleton dimension {i}")
    # data-dependent sizes: what the facts prove, else size-oblivious.  The graph's op
    # broadcasts at run time as eager does, so a size-1 operand gives the same result as
    # an equal one: `a` broadcast with `b` is `b` whenever a == 1 or a == b.  That condition
    # is asserted (eager raises for other values), and nothing is assumed about a == 1.
    b_one = open_question(b == 1)
    if b_one:
        return a
    a_one = open_question(a == 1)
    if a_one:
        return b
    same = a == b
    if a_one is None or b_one is None:
        if same is True or (isinstance(same, SymBool) and cond_true(same)):
            return a
        if a_one is None and b_one is None:
            # either may be 1 at run time (`x[m1] * y[m2]`): eager's own condition is
            # asserted, and the result is exact for each way it holds (`_either_broadcasts`)
            settle((a == 1) | (b == 1) | same,
                   f"{op}: dim {i} broadcasts ({a} and {b} are equal, or one is 1)")
            return decided_max(a, b) * decided_min(decided_min(a, b), 1)
        if a_one is None:
            settle((a == 1) | same, f"{op}: dim {i} broadcasts ({a} is 1 or equals {b})")
            return b
        settle((b == 1) | same, f"{op}: dim {i} broadcasts ({b} is 1 or equals {a})")
        return a
    check(same, op, f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
                    f"at non-singleton dimension {i}")
    return a


def _broadcasts_to(a: Size, b: Size) -> bool:
    """`a` (1 at the example) broadcasts against `b` (not 1 there): the result is `b` where
    a == 1 or a == b, so a size that may equal `b` elsewhere (``x[:, :1]`` of a dim that
    may be 0: ``min(n, 1)`` against ``n``) needs only that condition, not a == 1 (a guard
    that refused n = 0, which eager broadcasts).  A bare symbol keeps its a == 1 guard:
    it narrows a declared Dim, as torch.export specializes it."""
    if isinstance(a, SymInt) and a.expr.op != "sym" and isinstance(b, (int, SymInt)):
        return bool((a == 1) | (a == b))
    return bool(a == 1)


def _zero_or_one_broadcast(a: Size, b: Size) -> Size | None:
    """One size an expression within 0..1 by its form (``x.flatten()[:1]``: ``min(n, 1)``)
    that no proven condition ties to the other: eager broadcasts it where it is 1, and where
    it is 0 the other is 0 or 1 and the result is 0, so the result is exactly `a * b`.  Only
    eager's own condition is required (a == 1, b == 1 or a == b), where a guard of the
    example's side (`a == b`, or `a == 1`) refused `1` against `0`, which eager runs."""
    for s, o in ((a, b), (b, a)):
        if not isinstance(s, SymInt) or _flexible(o):
            continue
        named = not _capped_at_one(s.expr) and _named_upto_one(s)
        if (named or _capped_at_one(s.expr)) and \
                cond_true(s >= 0) and not cond_true((s == 1) | (s == o)):
            if named:  # (a Dim's own range: eager's requirement on the Dims it relates)
                with requiring():
                    holds = bool((a == 1) | (b == 1) | (a == b))
                if not holds:
                    return None
            else:
                bool((a == 1) | (b == 1) | (a == b))  # eager's condition (it holds at the example)
            return a * b
    return None


def _capped_at_one(e: Any) -> bool:
    """An expression at most 1 by its own form (`min(n, 1)`, `max(min(n, 1), 0)`), not by
    facts of one side of a split (`min(a, b)` where a <= 1: that side keeps the other's
    relation to it, so the sides' results stay one expression)."""
    if e.op == "const":
        return e.value <= 1
    if e.op == "min":
        return any(_capped_at_one(a) for a in e.args)
    return e.op == "max" and all(_capped_at_one(a) for a in e.args)


def _named_upto_one(s: SymInt) -> bool:
    """A named Dim's symbol whose range is 0..1 (``Dim("a", max=1)``): 0 or 1 as a capped
    form is, where a guard of the example's side (a == 1) pinned it (``(x > 0) == (y > 0)``
    refused a = 0, which eager broadcasts against a size 0 or 1)."""
    e = s.expr
    if e.op != "sym" or e.name not in s.env.named:
        return False
    r = s.env.bounds(e)
    return r.lo == 0 and r.hi == 1


def _one_only_below_two(size: Size) -> bool:
    """A size that is 1 only where one of its input sizes is below 2: one size itself, a
    sum or product of sizes (positive coefficients), or the min/max of such sizes and
    constants of at least 2."""
    if isinstance(size, int):
        return size >= 2
    if not isinstance(size, SymInt):
        return False
    return _not_one_from_two(size.expr)


def _not_one_from_two(e: Any) -> bool:
    if e.op == "sym":
        return True
    if e.op in ("add", "mul"):  # sizes times and plus sizes (`s0*s1`, `s0 + s1`): 1
        t = terms(e)  # only where a size is 0 or 1 (each term at least 2 otherwise)
        return all(k > 0 and all(f.op == "sym" for f in m) for m, k in t) and any(m for m, _ in t)
    return e.op in ("min", "max") and all(
        _not_one_from_two(a) or (a.op == "const" and a.value >= 2) for a in e.args)


def _either_broadcasts(a: SymInt, b: SymInt) -> Size:
    """Two sizes that are both 1 at the example: each may broadcast against the other at
    run time, so neither is tied to the other (unifying them would refuse a 1 against any
    other size, which eager broadcasts).  The program needs `a == 1 or b == 1 or a == b`
    (eager's own condition: a run-time check that refuses only what eager refuses), and the
    result is `b` where a == 1, else `a`: exactly max(a, b) * min(a, b, 1) for sizes >= 0
    (not max alone: 1 broadcast with 0 is 0)."""
    bool((a == 1) | (b == 1) | (a == b))  # a guard (it holds at the example)
    return decided_max(a, b) * decided_min(decided_min(a, b), 1)


def _one_symbol_broadcast(a: Size, b: Size, empty: bool = False) -> Any:
    """Two different sizes of one and the same symbol (``cat([v, v])`` against ``v``: 2k
    and k): eager's condition (a == 1, b == 1 or a == b) is then a condition on that symbol
    alone, which holds at more than the example's value (k = 0 and k = 1), where a guard of
    the example's side (k == 1, or 2k == k) pinned the symbol to one of them.  So for
    sizes of a common symbol both 0 at the example (`empty`: d0 against d0 * d1, where
    d0 = 1 broadcasts and the guard d0 == d0 * d1 refused it).  Returns that condition
    (None for other sizes);
    the result is then exact for each way it holds: max(a, b) * min(a, b, 1)."""
    if not (isinstance(a, SymInt) and isinstance(b, SymInt)) or a.env is not b.env:
        return None
    names = a.expr.free_symbols
    if empty:  # (two bare sizes stay unified, a == b: eager raises wherever they differ
        # with both at least 2; and sizes of no common symbol, which a split's sides may
        # tie to each other)
        if a.expr.op == "sym" and b.expr.op == "sym" or not names & b.expr.free_symbols:
            return None
    elif len(names) != 1 or b.expr.free_symbols != names:
        return None
    if cond_true(a == b):
        return None  # (equal sizes: the caller's way keeps the expression)
    return (a == 1) | (b == 1) | (a == b)


def _flexible(size: Size) -> bool:
    """A size that is one Dim.AUTO symbol not yet tied to another size (the export may
    narrow it freely; a tied one would narrow what it is tied to)."""
    if not isinstance(size, SymInt):
        return False
    e, env = size.expr, size.env
    return e.op == "sym" and e.name in env.flexible and e not in env.subst


def cond_true(cond: Any) -> bool:
    """True when the facts prove `cond` (no guard, no question)."""
    return cond is True or (isinstance(cond, SymBool) and cond.env.decide(cond.expr) is True)


def _mismatch(a: Size, b: Size, i: int, op: str) -> Exception:
    return shape_error(op, f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
                           f"at non-singleton dimension {i}")


# -- dtypes -------------------------------------------------------------------------

def dtype_category(dtype: torch.dtype) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex."""
    if dtype is torch.bool:
        return 0
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 1


def scalar_category(value: Any) -> int:
    if isinstance(value, (bool, SymBool)):
        return 0
    if isinstance(value, (int, SymInt)):
        return 1
    if isinstance(value, (float, SymFloat)) or getattr(value, "opaque", False):
        return 2  # opaque: a float computed by the graph (n ** -0.5)
    if isinstance(value, complex):
        return 3
    raise TypeError(f"not a scalar: {value!r}")


def scalar_dtype(value: Any) -> torch.dtype:
    """The dtype torch gives a Python scalar wrapped into a tensor."""
    cat = scalar_category(value)
    if cat == 0:
        return torch.bool
    if cat == 1:
        return torch.int64
    default = torch.get_default_dtype()
    if cat == 2:
        return default
    return torch.complex128 if default is torch.float64 else torch.complex64


TO_COMPLEX = {torch.float16: torch.complex32, torch.float32: torch.complex64,
               torch.float64: torch.complex128}


def result_type(*operands: Any) -> torch.dtype:
    """torch.result_type over TensorMetas and Python scalars (None entries are skipped).

    Dimensioned tensors win over zero-dim tensors, which win over Python scalars; a lower
    priority operand only matters when its category (bool < int < float < complex) is higher.
    """
    dims: torch.dtype | None = None
    zero: torch.dtype | None = None
    scalar_cat = -1
    for x in operands:
        if x is None:
            continue
        if isinstance(x, TensorMeta):
            if x.ndim > 0:
                dims = x.dtype if dims is None else _promote(dims, x.dtype)
            else:
                zero = x.dtype if zero is None else _promote(zero, x.dtype)
        else:
            scalar_cat = max(scalar_cat, scalar_category(x))
    result = dims
    if zero is not None:
        if result is None:
            result = zero
        elif dtype_category(zero) > dtype_category(result):
            # a complex 0-d tensor keeps a floating result's precision (torch's rule)
            result = TO_COMPLEX.get(result) if zero.is_complex and result.is_floating_point \
                and result in TO_COMPLEX else _promote(result, zero)
    if scalar_cat >= 0:
        if result is None:
            result = scalar_dtype({0: False, 1: 0, 2: 0.0, 3: 0j}[scalar_cat])
        elif scalar_cat > dtype_category(result):
            if scalar_cat == 2:
                result = torch.get_default_dtype()
            elif scalar_cat == 3:
                result = TO_COMPLEX.get(result, torch.complex64)
            else:
                result = torch.int64
    if result is None:
        raise TypeError("result_type needs at least one operand")
    return result


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """torch.promote_types, its refusal (a float8 dtype with another one) the rule's: eager
    raises there, and a loaded file's evaluation sees the op fail, not an unknown result."""
    try:
        return torch.promote_types(a, b)
    except RuntimeError as err:
        raise shape_error("type promotion", str(err)) from None


def float_result(dtype: torch.dtype) -> torch.dtype:
    """The dtype of ops that always compute in floating point (div, sqrt, mean, ...)."""
    if dtype.is_floating_point or dtype.is_complex:
        return dtype
    return torch.get_default_dtype()


def to_real(dtype: torch.dtype) -> torch.dtype:
    """The real dtype of a complex dtype (abs, angle); real dtypes unchanged."""
    return {torch.complex64: torch.float32, torch.complex128: torch.float64,
            torch.complex32: torch.float16}.get(dtype, dtype)


def static_zero(n: Size) -> bool:
    """True only for a plain 0: a symbolic size is taken as non-empty, without a guard."""
    return isinstance(n, int) and n == 0


def is_empty(t: TensorMeta) -> bool:
    """Whether `t` has no elements, for rules of kernels that special-case empty inputs
    (a guard on symbolic sizes, as the kernel's own branch is)."""
    return bool(t.numel() == 0)


def prod(sizes: Iterable[Size]) -> Size:
    """Product of sizes (1 for none); plain ints are multiplied first (cheaper)."""
    n = 1
    sym: Size = None
    for s in sizes:
        if s.__class__ is int:
            n *= s
        else:
            sym = s if sym is None else sym * s
    return n if sym is None else (sym * n if n != 1 else sym)


def nonneg(size: Size) -> Size:
    """max(size, 0) without a guard for symbolic sizes."""
    if isinstance(size, int):
        return size if size > 0 else 0
    return sym_max(size, 0)


def _backed(v: Size) -> bool:
    return isinstance(v, int) or hint_of(v) is not None


def guarded_min(a: Size, b: Size) -> Size:
    """min(a, b): proven when the facts allow; for sizes with example values, the branch
    the example takes becomes a guard (as any Python ``min`` would); for data-dependent
    sizes an unguarded ``min`` expression."""
    if isinstance(a, int) and isinstance(b, int):
        return a if a <= b else b
    env = (a if not isinstance(a, int) else b).env
    known = env.decide(le(to_expr(a), to_expr(b)))
    if known is not None:
        return a if known else b
    if _backed(a) and _backed(b):
        return a if a <= b else b
    return sym_min(a, b)


_COMPARE = {"lt": (lt, lambda a, b: a < b), "le": (le, lambda a, b: a <= b),
            "ge": (ge, lambda a, b: a >= b)}


def known(a: Size, cmp: str, b: Size) -> bool | None:
    """Whether ``a cmp b`` ("lt", "le", "ge") follows from the facts; None when it does
    not (never a guard)."""
    build, plain = _COMPARE[cmp]
    if isinstance(a, int) and isinstance(b, int):
        return plain(a, b)
    env = (a if not isinstance(a, int) else b).env
    return env.decide(build(to_expr(a), to_expr(b)))


def decided_min(a: Size, b: Size) -> Size:
    """min(a, b) without a guard: one of them where the facts decide, else a Min."""
    first = known(a, "le", b)
    if first is None:
        return sym_min(a, b)
    return a if first else b


def decided_max(a: Size, b: Size) -> Size:
    """max(a, b) without a guard: one of them where the facts decide, else a Max."""
    first = known(a, "ge", b)
    if first is None:
        return sym_max(a, b)
    return a if first else b


def negative_indicator(a: Size) -> Size:
    """1 where ``a < 0``, else 0, as an exact integer expression: min(max(-a, 0), 1)."""
    return decided_min(decided_max(-a, 0), 1)


def wrap_index(i: Size, size: Size) -> Size:
    """A possibly negative index or bound counted from the end (``i + size`` where
    ``i < 0``), as torch reads it; an unknown sign costs no guard."""
    negative = known(i, "lt", 0)
    if negative is None:
        return i + size * negative_indicator(i)
    return i + size if negative else i


# -- data-dependent sizes ---------------------------------------------------------------

def new_size(lo: Any = 0, hi: Any = None, what: str = "a data-dependent size") -> Any:
    """A fresh unbacked size in [lo, hi]: an op's output size that depends on data (a
    plain int where the bounds admit one value)."""
    env = ACTIVE.env
    if env is None:
        raise outside_export(what)
    lo_i = _static_bound(env, lo, low=True)
    hi_i = _static_bound(env, hi, low=False)
    u = make_int(env.new_unbacked(lo=lo_i, hi=hi_i, origin=what), env)
    if isinstance(u, int):  # the bounds admit one value (x[100:] of fewer rows: 0)
        return u
    # symbolic bounds (u0 <= x.numel()) are facts, not just ranges
    if hi is not None and not isinstance(hi, int):
        env.add_fact(le(u.expr, to_expr(hi)))
    if lo is not None and not isinstance(lo, int):
        env.add_fact(ge(u.expr, to_expr(lo)))
    return u


def new_float(what: str = "a float read from data") -> Any:
    """A fresh unbacked float (any double, inf and nan included): ``x.max().item()``."""
    env = ACTIVE.env
    if env is None:
        raise outside_export(what)
    return make_float(env.new_unbacked_float(origin=what), env)


def _static_bound(env: Any, v: Any, low: bool) -> int | None:
    if v is None:
        return None
    if isinstance(v, int):
        return v
    r = env.bounds(to_expr(v))
    b = r.lo if low else r.hi
    if not low and b > 0 and _at_most_zero(env, to_expr(v)):
        return 0  # (a count of elements the facts make none: ``s0*s1 == 0`` is no range)
    return None if b in (float("inf"), float("-inf")) else int(b)


def _at_most_zero(env: Any, e: Any) -> bool:
    """Whether the facts prove ``e <= 0`` (a product of sizes, one of them 0 where the
    facts hold, has no range the bounds show, or a wider one: the tracer's and the
    loader's environments must both find the count of its elements 0, or a file records
    a number its loader cannot prove)."""
    try:
        return env.decide(le(e, 0)) is True
    except Exception:  # noqa: BLE001 - a question the engine cannot take: not assumed
        return False
