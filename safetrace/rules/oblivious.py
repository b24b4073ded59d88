"""Size-oblivious answers to questions the traced code asks about data-dependent sizes.

Export cannot read data, so a Python decision on an unbacked size (``if boxes.numel() ==
0:``, ``if n > 1:``) is normally refused with a DataDependentError.  Two kinds are answered
here instead, soundly:

- *size tests*: a condition on one data-dependent size that has the same value for every
  size >= 2 and differs only at 0 or 1 (emptiness and singleton tests).  It is answered as
  for a general size, and the answer is asserted at run time: the other branch was never
  traced, so data that takes it is rejected with a clear error, never computed wrongly.
- *the condition of a Python ``assert``* (``assert n > 0`` on a size or value read from
  data): answered so that the statement passes, and asserted at run time, where eager
  raises AssertionError (torch.export keeps such asserts as run-time checks too).  Found
  from the asking frame's bytecode: the jump whose fall-through or target is
  ``LOAD_ASSERTION_ERROR``; a condition of an ``or`` (another operand may pass) is not.
- *strategy switches* listed in ``STRATEGY_SWITCHES``: library code that picks between two
  implementations by input size (torchvision's ``batched_nms``), one of which cannot be
  traced (a loop over data).  The traceable one is taken and its condition asserted: the
  two agree only up to the order of equal scores, so the other side is rejected, not
  computed.

Every answer is recorded in ``env.settled`` and listed by ``st.explain``.  Questions inside
an op's shape rule (broadcasting, squeeze, preconditions) are settled by the rules
themselves (``rules.common.check`` / ``open_question`` / ``settle``).
"""

from __future__ import annotations

import dis
import os
import re
import sys
from typing import Any

from safetrace.symbolic import DataDependentQuestion, Env
from safetrace.symbolic.canon import diff, eq, ge, not_, subs
from safetrace.symbolic.expr import Expr, add, const, neg, sym, terms

# (path suffix, function, answer, why): at these call sites a data-dependent size chooses
# how a result is computed; the answer names the traceable branch.
STRATEGY_SWITCHES: list[tuple[str, str, bool, str]] = [
    ("torchvision/ops/boxes.py", "batched_nms", False,
     "torchvision's batched_nms uses the coordinate-offset trick up to 4000 box "
     "coordinates on CPU (1000 boxes) and a per-class loop over the data above; the loop "
     "cannot be traced and may order equal-score boxes differently, so more boxes are "
     "rejected at run time"),
]

_HEAD = re.compile(r'File "(?P<path>[^"]*)", line \d+, in (?P<fn>\S+)')

# probes of a size test: its value must agree at every one of these (capped by the range)
_GENERAL = (2, 3, 7, 64, 4097, 10 ** 9)


def oblivious_answer(env: Env, q: DataDependentQuestion,
                     catches: Any = None) -> tuple[bool, str, str, bool] | None:
    """(answer, kind, why, asserted) for a question this module settles, else None.
    `catches()`: whether the asking code runs inside a ``try`` block with an ``except``
    clause (``trace/raising.program_catches``)."""
    passing = _assert_statement()
    if passing is not None and catches is not None and catches():
        # an assert the program may catch: its failing side is a branch eager runs (the
        # except clause), not a requirement; a size test's other side is traced too
        # (exporter/size_tests.py), anything else stays asserted as before
        found = _size_test(env, q.expr)
        if found is not None:
            return _by_the_input_sizes(env, q.expr, found)
        return _caught_assert(env, q.expr, *passing)
    if passing is not None:
        answer, where = passing
        return answer, "assert", f"the assert statement at {where}", True
    site = _site(q.origin)
    if site is not None:
        path, fn = site
        for suffix, name, answer, why in STRATEGY_SWITCHES:
            if fn == name and path.replace("\\", "/").endswith(suffix):
                return answer, "strategy switch", why, True
    found = _size_test(env, q.expr)
    if found is not None:
        return _by_the_input_sizes(env, q.expr, found)
    return None


def _caught_assert(env: Env, c: Expr, answer: bool, where: str) -> tuple[bool, str, str, bool]:
    """Any other condition of an assert the program catches: answered so that it passes
    and asserted, as a size test is; its other side (the except clause) is traced too
    (``flipped``, exporter/size_tests.py) and the two joined (data_splits.py), or the
    assert stays."""
    if env.flipped and str(env.simplify(c if answer else not_(c))) in env.flipped:
        return (not answer, "size test, other side",
                f"`{c}` answered {not answer} (the assert at {where} fails: its except "
                f"clause, traced to compare with the passing side)", True)
    return (answer, "size test", f"`{c}` answered {answer} (the assert at {where} passes); "
                                 f"data where it fails would take the except clause, which "
                                 f"was not traced", True)


def _by_the_input_sizes(env: Env, c: Expr, found: tuple[bool, str, str, bool]
                        ) -> tuple[bool, str, str, bool]:
    """The size-oblivious answer, unless the input sizes decide the question: a
    data-dependent size at most a size expression that is 0 (``y[y > 0]`` of an empty
    ``y``) is 0, and the general answer is wrong there.  At an example where that bound is
    0, asserting the general answer would refuse the example itself: the bound's emptiness
    becomes a guard on the input sizes, under which the question is decided with nothing
    asserted.  At an example where it is not, a bound that is an element count gets the
    guards that its sizes are >= 1, so that a named Dim is split at 0 (its empty side
    traced as eager runs it) instead of refusing every empty input at run time.  A named
    Dim that cannot be split is refused with the fix; no other input is narrowed silently
    (the assert refused those inputs anyway)."""
    bounds: dict[str, Expr] = {}
    for f in env.linear:  # f >= 0
        for mono, k in dict(terms(f)).items():
            if k != -1 or len(mono) != 1 or mono[0].op != "sym":
                continue
            u = mono[0]
            info = env.symbols.get(str(u.name))
            if u.name not in c.free_symbols or info is None or info.backed \
                    or env.bounds(u).lo < 0:
                continue
            bound = add(f, u)  # u <= bound
            if bound.free_symbols and all(env.symbols[n].backed for n in bound.free_symbols):
                bounds.setdefault(str(u.name), bound)
    empty = {name: b for name, b in bounds.items() if env.hint(b) == 0}
    if empty:
        at_example = _decide_at_zero(env, c, empty)
        if at_example is not None and at_example != found[0]:
            for name, bound in empty.items():
                env.evaluate(eq(bound, 0))  # a guard: it holds at the example
                env.add_fact(eq(sym(name), 0))
            return (at_example, "decided by the example's sizes",
                    f"every data-dependent size in `{c}` is bounded by input sizes that "
                    f"are 0", False)
    for name, bound in bounds.items():
        factors = _size_factors(bound)
        if name in empty or factors is None or _decide_at_zero(env, c, (name,)) == found[0]:
            continue
        for size in factors:  # the bound is >= 1 where each of its sizes is
            env.evaluate(ge(size, 1))  # a guard: it holds at the example
    return found


def _decide_at_zero(env: Env, c: Expr, names: Any) -> bool | None:
    """`c` decided with each data-dependent size of `names` at 0; None where that cannot
    be decided, or where `c` is undefined there (a division by such a size: eager's op
    raises at 0, so no answer at 0 is the example's)."""
    try:
        return env.decide(subs(c, {name: 0 for name in names}))
    except ZeroDivisionError:
        return None


def _size_factors(bound: Expr) -> list[Expr] | None:
    """The symbols of a bound that is a positive multiple of their product (an element
    count, ``s0*s1``), else None."""
    t = dict(terms(bound))
    if len(t) != 1:
        return None
    ((mono, k),) = t.items()
    if k <= 0 or not mono or any(f.op != "sym" for f in mono):
        return None
    return list(dict.fromkeys(mono))


_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# code object -> {offset of a conditional jump: the answer that passes an assert}
_ASSERT_JUMPS: dict[Any, dict[int, bool]] = {}
# (code object, offset of such a jump) -> its file:line
_ASSERT_WHERE: dict[tuple[Any, int], str] = {}


def _assert_statement() -> tuple[bool, str] | None:
    """(the answer that lets it pass, file:line) when the question is being asked by the
    conditional jump of a Python ``assert`` statement in the first frame outside
    safetrace; else None."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_OURS):
        f = f.f_back
    if f is None:
        return None
    code, lasti = f.f_code, f.f_lasti
    jumps = _ASSERT_JUMPS.get(code)
    if jumps is None:
        if len(_ASSERT_JUMPS) > 10_000:
            _ASSERT_JUMPS.clear()
            _ASSERT_WHERE.clear()
        jumps = _ASSERT_JUMPS[code] = _assert_jumps(code)
    answer = jumps.get(lasti)
    if answer is None:
        return None
    # (keyed by the instruction: a frame's f_lineno walks its code's line table, and an
    # assert in a loop asks at every turn)
    where = _ASSERT_WHERE.get((code, lasti))
    if where is None:
        where = _ASSERT_WHERE[(code, lasti)] = f"{code.co_filename}:{f.f_lineno}"
    return answer, where


def _assert_jumps(code: Any) -> dict[int, bool]:
    """The conditional jumps of `code` that decide an assert: falling through into
    ``raise AssertionError`` (``assert c``: pass when the jump is taken) or jumping to it
    (``assert a and b``: pass when it is not)."""
    ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    at = {i.offset: i for i in ins}
    out: dict[int, bool] = {}
    for k, (i, nxt) in enumerate(zip(ins, ins[1:])):
        name = i.opname
        if "JUMP" not in name or not ("IF_TRUE" in name or "IF_FALSE" in name) or \
                "NONE" in name or "OR_POP" in name:
            continue
        when = "IF_TRUE" in name  # the truth value that takes the jump
        target = at.get(i.argval)
        if nxt.opname == "LOAD_ASSERTION_ERROR":
            passing = when
        elif target is not None and target.opname == "LOAD_ASSERTION_ERROR":
            passing = not when
        else:
            continue
        out[i.offset] = passing
        # a comparison that decides its value itself (``n == 7`` gives a bool) is asked
        # at its own instruction, right before the jump (or before a ``not`` of it)
        before = ins[k - 1] if k >= 1 else None
        if before is not None and before.opname == "UNARY_NOT" and k >= 2:
            before, passing = ins[k - 2], not passing
        if before is not None and before.opname in _COMPARES:
            out[before.offset] = passing
    return out


_COMPARES = frozenset(("COMPARE_OP", "IS_OP", "CONTAINS_OP"))


def _site(origin: Any) -> tuple[str, str] | None:
    if not isinstance(origin, str):
        return None
    m = _HEAD.search(origin)
    return (m.group("path"), m.group("fn")) if m else None


def is_size_test(env: Env, c: Expr) -> bool:
    """Whether `c` is a size test on data-dependent sizes (``_size_test``)."""
    return _size_test(env, c) is not None


def _size_test(env: Env, c: Expr) -> tuple[bool, str, str, bool] | None:
    """A comparison ``S <op> k`` of a size expression S >= 0 (built from data-dependent sizes
    only: ``4*u0``, ``u0 + u1``, a sum of ``min(u_i, 10)``) whose value is the same for
    every S >= 2 and differs at S == 0 or S == 1."""
    if c.op not in ("le", "lt", "ge", "eq", "ne") or not c.free_symbols:
        return None
    for name in c.free_symbols:
        info = env.symbols.get(name)
        if info is None or info.backed or info.is_float:
            return None
    d = diff(c)  # c is `d <= 0` (le, lt, ge), `d == 0` or `d != 0`
    k0 = dict(terms(d)).get((), 0)
    part = add(d, const(-k0))
    r = env.bounds(part)
    if r.lo >= 0:
        sign, size = 1, part
    elif r.hi <= 0:
        sign, size = -1, neg(part)
    else:
        return None
    hi = r.hi if sign == 1 else -r.lo

    def holds(v: int) -> bool:
        x = sign * v + k0
        return (x == 0) == (c.op == "eq") if c.op in ("eq", "ne") else x <= 0

    probes = [v for v in _GENERAL if v <= hi]
    if not probes:
        return None
    general = {holds(v) for v in probes}
    if len(general) != 1:
        return None  # a threshold (u > 100): no general answer
    answer = general.pop()
    excluded = [v for v in (0, 1) if v <= hi and holds(v) != answer]
    if not excluded:
        return None
    sizes = " or ".join(f"{size} == {v}" for v in excluded)
    if env.flipped and str(env.simplify(c if answer else not_(c))) in env.flipped:
        # the other side's retrace (exporter/splits.py): same graph, the check is dropped
        return (not answer, "size test, other side",
                f"`{c}` answered {not answer} (the other side of a size test, traced to "
                f"compare with the general side)", True)
    why = (f"`{c}` answered {answer} as for every size >= 2; data with {sizes} would take "
           f"the other branch, which was not traced: the export traces it and asks the size "
           f"where the program runs only where both answers return outputs of one dtype "
           f"and rank, within max_splits; fix: make both sides of that branch return the "
           f"same dtypes and numbers of dims, or raise max_splits")
    return answer, "size test", why, True
