"""Unit tests: canonical forms, printing, parsing, structural access."""

from __future__ import annotations

import copy
import pickle

import pytest

from safetrace.symbolic import (
    Expr, and_, eq, ge, gt, le, lt, max_, min_, ne, not_, or_, parse, subs, to_expr,
)
from safetrace.symbolic.expr import release_since, sym, table_mark

s0, s1, u0 = sym("s0"), sym("s1"), sym("u0")


@pytest.mark.parametrize("a, b", [
    (s0 + s1, s1 + s0), (2 * (s0 + 1), 2 * s0 + 2), ((2 * s0) // 2, s0),
    ((s0 * 4) // 2, 2 * s0), ((s0 + 5) // 2, (s0 + 1) // 2 + 2), ((3 * s0) % 3, to_expr(0)),
    ((s0 + 2) % 2, s0 % 2), (min_(s0, u0), min_(u0, s0)), (max_(s0 + 1, s0), s0 + 1),
    (gt(s0 + 2, 4), ge(s0, 3)), (lt(s1, s0), gt(s0, s1)),
    (not_(lt(s0, 3)), ge(s0, 3)), (not_(eq(s0, 1)), ne(s0, 1)),
    (eq(2 * s0, 6), eq(s0, 3)), ((s0 // 2) // 3, s0 // 6), ((s0 % 6) % 3, s0 % 3),
    (and_(ge(s0, 3), eq(s1, 4)), and_(eq(s1, 4), ge(s0, 3))),
])
def test_equal_expressions_are_identical(a: Expr, b: Expr) -> None:
    assert a is b and a == b and hash(a) == hash(b)


def test_constants_fold() -> None:
    assert (to_expr(3) + 4).op == "const" and (to_expr(3) + 4).value == 7
    assert lt(2, 3) is to_expr(True)
    assert eq(s0, s0) is to_expr(True)
    assert eq(2 * s0, 7) is to_expr(False)
    assert (s0 - s0).value == 0
    assert and_(ge(s0, 1), lt(s0, 1)) is to_expr(False)


@pytest.mark.parametrize("e, text", [
    (s0 + s1, "s0 + s1"), (2 * s0, "2*s0"), ((s0 + 1) // 2, "(s0 + 1)//2"), (s0 % 2, "s0 % 2"),
    (min_(s0, u0), "min(s0, u0)"), (ge(s0, 3), "s0 >= 3"),
    (and_(ge(s0, 3), eq(s1, 4)), "(s0 >= 3) and (s1 == 4)"),
    (not_(or_(ge(s0, 3), eq(s1, 4))), "not ((s0 >= 3) or (s1 == 4))"),
    (s0 - s1, "s0 - s1"), (-s0, "-s0"), (-(s0 // 2), "-(s0//2)"), (s0 - 2 * s1, "s0 - 2*s1"),
    (lt(s0, s1), "s0 < s1"), (le(s0, 7), "s0 <= 7"), (ne(s0, 1), "s0 != 1"),
    (eq(s1, s0 + 1), "s0 + 1 == s1"), (s0 * s1, "s0*s1"), (2 * (s0 // 2), "2*(s0//2)"),
])
def test_printing(e: Expr, text: str) -> None:
    assert str(e) == text
    assert parse(text) is e


def test_structural_access() -> None:
    e = (s0 + 1) // 2
    assert e.op == "floordiv" and e.args[1].op == "const" and e.args[1].value == 2
    assert e.args[0].op == "add" and e.args[0].args == (s0, to_expr(1))
    assert s0.op == "sym" and s0.name == "s0"
    assert (2 * s0 * s1).op == "mul" and (2 * s0 * s1).args[0].value == 2
    assert gt(s0, s1).op == "lt" and gt(s0, s1).args == (s1, s0)
    assert (-s0).op == "mul"
    assert not_(and_(ge(s0, 3), ge(s1, 3))).op == "not"


def test_subs_evaluate_free_symbols() -> None:
    e = (s0 + 2 * s1) // 3
    assert e.free_symbols == frozenset({"s0", "s1"})
    assert subs(e, {"s1": 4}) is (s0 + 8) // 3
    assert subs(e, {s0: s1}) is s1
    assert e.evaluate({"s0": -7, "s1": 1}) == (-7 + 2) // 3
    assert ge(s0, 3).evaluate({"s0": 3}) is True


def test_copy_and_pickle_keep_identity() -> None:
    e = and_(ge(s0 // 2, 3), ne(s1 % 4, 1))
    assert copy.deepcopy(e) is e and copy.copy(e) is e
    assert pickle.loads(pickle.dumps(e)) is e


def test_bool_of_symbolic_expr_raises() -> None:
    with pytest.raises(TypeError):
        bool(ge(s0, 3))
    assert bool(to_expr(True))


def test_division_by_literal_zero_raises() -> None:
    with pytest.raises(ZeroDivisionError):
        s0 // 0
    with pytest.raises(ZeroDivisionError):
        s0 % (s1 - s1)


def test_parse_errors() -> None:
    assert parse("s0 / 2").op == "fdiv"  # a float expression, as in Python
    with pytest.raises(ValueError):
        parse("s0 @ 2")
    with pytest.raises(ValueError):
        parse("s0 +")
    assert parse("0 <= u0 <= s0") is and_(ge(u0, 0), le(u0, s0))


def test_release_since_keeps_what_is_referenced():
    # a live expression must never be dropped, or a rebuilt equal expression would be a
    # different object (release_since decides by weak references, not reference counts)
    mark = table_mark()
    kept = [sym("rel_kept0") * 5 + 3]
    held = sym("rel_kept1") // 7
    garbage = sym("rel_gone") * 11 + 2
    del garbage
    assert release_since(mark) >= 1
    assert sym("rel_kept0") * 5 + 3 is kept[0]
    assert sym("rel_kept1") // 7 is held


def test_release_since_drops_children_of_dropped_parents_only():
    import weakref

    mark = table_mark()
    parent = (sym("rel_p0") * 13) // 17      # its child `rel_p0 * 13` is held by it only
    child = weakref.ref(sym("rel_p0") * 13)
    lone = weakref.ref((sym("rel_p1") * 19) // 23)
    release_since(mark)
    assert child() is not None and sym("rel_p0") * 13 is child()  # parent alive: kept
    assert lone() is None  # nothing held it or its children
    del parent
    release_since(mark)
    assert child() is None
