"""Unit tests: prover, unification, specialization, facts, guards, contract."""

from __future__ import annotations

import math

import pytest

from safetrace.symbolic import (
    DataDependentQuestion, Env, Expr, Range, eq, ge, gt, le, lt, max_, min_, ne, parse,
)


def test_prover_examples() -> None:
    env = Env()
    s0 = env.new_backed(5)
    u0 = env.new_unbacked()
    env.add_fact(ge(u0, 0))
    env.add_fact(le(u0, s0))
    assert env.decide(eq(min_(u0, s0), u0)) is True
    assert env.decide(le(u0, s0 + 1)) is True
    assert env.decide(gt(u0, s0)) is False
    assert env.decide(ge(u0, 1)) is None
    env.add_fact(ge(s0, 3))
    assert env.decide(gt(s0 + 2, 4)) is True


def test_a_min_or_max_is_bounded_by_each_of_its_arguments() -> None:
    # topk's `k <= size` for k = min(size, 10), with an unbounded data-dependent size: the
    # ranges alone bound `u - min(u, 10)` by [-10, inf]
    env = Env()
    u, v = env.new_unbacked(lo=0), env.new_unbacked(lo=0)
    assert env.decide(le(min_(u, 10), u)) is True
    assert env.decide(ge(u, min_(10, u))) is True
    assert env.decide(lt(u, min_(u, 10))) is False
    assert env.decide(le(u + 1, max_(v, u + 1))) is True
    assert env.decide(gt(min_(u, 10) - u, 0)) is False
    assert env.decide(le(min_(u, 10), v)) is None  # no argument bounds it by v
    assert env.decide(le(max_(u, 10), u)) is None  # the max is at least u, not at most
    assert env.guards == []


def test_ranges_prove_simple_facts() -> None:
    env = Env()
    s0 = env.new_backed(4, lo=2)
    assert env.decide(ne(s0, 1)) is True
    assert env.decide(ge(s0 * 2, s0)) is True
    assert env.decide(eq((s0 * 4) // 2, 2 * s0)) is True
    assert env.decide(eq(s0, 4)) is None
    assert env.bounds(s0 * 3 - 1) == Range(5, math.inf)
    assert env.bounds((s0 + 1) % 4) == Range(0, 3)
    assert env.bounds(ge(s0, 2)) == Range(1, 1)
    assert env.guards == []


def test_unification_chain_keeps_oldest_symbol() -> None:
    env = Env()
    s0, s1, s2 = env.new_backed(6, lo=2), env.new_backed(6, hi=10), env.new_backed(6)
    assert env.evaluate(eq(s2, s1), origin="line 1") is True
    assert env.evaluate(eq(s1, s0), origin="line 2") is True
    assert env.simplify(s2) is s0 and env.simplify(s1) is s0
    assert env.replacements == {s1: s0, s2: s0}
    assert env.bounds(s0) == Range(2, 10)
    assert env.simplify(s1 + s2) is 2 * s0
    fates = env.solution().fates
    assert fates["s0"].kind == "free" and fates["s1"].kind == "equal" and fates["s1"].expr is s0
    assert env.solution().residual == []
    assert [g.origin for g in env.guards] == ["line 1", "line 2"]


def test_specialization_and_derived() -> None:
    env = Env()
    s0, s1, s2 = env.new_backed(3), env.new_backed(4), env.new_backed(8)
    assert env.evaluate(eq(s0, 3))
    assert env.simplify(s0 + 1).value == 4
    assert env.evaluate(eq(s2, 2 * s1))
    c = env.solution()
    assert c.fates["s0"].kind == "static" and c.fates["s0"].value == 3
    assert c.fates["s2"].kind == "derived" and c.fates["s2"].expr is 2 * s1
    assert env.check_binding({"s0": 3, "s1": 5, "s2": 10}) == []
    assert env.check_binding({"s0": 4, "s1": 5, "s2": 11}) == [eq(s0, 3), eq(s2, 2 * s1)]


def test_inequality_guards_narrow_ranges_and_dedupe() -> None:
    env = Env()
    s0 = env.new_backed(4)
    assert env.evaluate(le(2 * s0, 10)) is True
    assert env.bounds(s0) == Range(0, 5)
    assert env.evaluate(gt(s0, 20)) is False
    assert env.evaluate(gt(s0, 20)) is False
    assert env.evaluate(ge(s0, 3)) is True
    assert env.bounds(s0) == Range(3, 5)
    assert len(env.guards) == 2
    assert env.solution().residual == []
    assert env.check_binding({"s0": 6}) == [le(s0, 5)]


def test_residual_guards() -> None:
    env = Env()
    s0, s1 = env.new_backed(6), env.new_backed(7)
    assert env.evaluate(gt(s0 + s1, 10)) is True
    assert env.evaluate(eq(s0 % 2, 0)) is True
    assert env.evaluate(ne(s1, 1)) is True
    residual = [str(g.cond) for g in env.solution().residual]
    assert residual == ["s0 + s1 >= 11", "s0 % 2 == 0", "s1 != 1"]
    assert env.decide(eq((s0 + 4) % 2, 0)) is True
    assert env.simplify(2 * (s0 // 2)) is s0


def test_divisibility_fact() -> None:
    env = Env()
    s0 = env.new_backed(8)
    env.add_fact(eq(s0 % 4, 0))
    assert env.decide(eq(s0 % 2, 0)) is True
    assert env.decide(eq((3 * s0) % 4, 0)) is True
    assert env.decide(eq((s0 // 4) * 4, s0)) is True


def test_unbacked_questions_raise() -> None:
    env = Env()
    s0 = env.new_backed(10)
    u0 = env.new_unbacked(lo=0, origin="item()")
    assert env.symbols["u0"].backed is False and env.symbols["u0"].origin == "item()"
    with pytest.raises(DataDependentQuestion) as info:
        env.evaluate(lt(u0, s0), origin="model.py:3")
    assert info.value.expr is lt(u0, s0)
    assert info.value.origin == "model.py:3"
    assert "u0 < s0" in str(info.value)
    assert info.value.hints == {"s0": 10}
    with pytest.raises(DataDependentQuestion):
        env.hint(u0 + 1)
    assert env.evaluate(ge(u0, 0)) is True
    assert env.bounds(u0) == Range(0, math.inf)
    assert Env().bounds(Env().new_unbacked()) == Range(-math.inf, math.inf)


def test_add_fact_on_unbacked() -> None:
    env = Env()
    s0 = env.new_backed(10)
    u0, u1 = env.new_unbacked(), env.new_unbacked()
    env.add_fact(parse("0 <= u0 <= s0"))
    assert env.evaluate(lt(u0, s0 + 1)) is True
    env.add_fact(eq(u1, s0))
    assert env.simplify(u1) is s0 and env.hint(u1 * 2) == 20
    with pytest.raises(ValueError):
        env.add_fact(lt(u0, 0))
    with pytest.raises(ValueError):
        env.add_fact(eq(s0, 3))  # false on the example
    env.add_fact(eq(u0, 4))
    assert env.simplify(u0).value == 4
    assert env.facts[0].cond is parse("0 <= u0 <= s0")


def test_origin_provider_is_lazy() -> None:
    env = Env()
    s0 = env.new_backed(5)
    calls: list[int] = []
    env.origin_provider = lambda: calls.append(1) or "user.py:7"
    env.evaluate(ge(s0, 0))  # proven: no guard, no origin needed
    assert calls == []
    env.evaluate(ge(s0, 3))
    assert env.guards[0].origin == "user.py:7" and calls == [1]
    env.evaluate(ge(s0, 4), origin="given")
    assert env.guards[1].origin == "given"


def test_contradictions_and_bad_hints() -> None:
    env = Env()
    with pytest.raises(ValueError):
        env.new_backed(3, lo=4)
    s0 = env.new_backed(4, lo=2, hi=8)
    u0 = env.new_unbacked(lo=10)
    with pytest.raises(ValueError):
        env.add_fact(eq(u0, s0))
    assert env.new_backed(7, lo=7, hi=7, name="k").op == "sym"
    assert env.solution().fates["k"].kind == "static"


def test_hint_and_names() -> None:
    env = Env()
    b = env.new_backed(3, name="batch")
    s = env.new_backed(4)
    assert str(b * s + 1) == "batch*s0 + 1"
    assert env.hint(b * s + 1) == 13
    assert env.hint(gt(b, s)) is False


def test_the_epoch_changes_with_every_change_a_question_may_depend_on() -> None:
    """``Env.epoch`` (trace/memo.py replays a computation on symbolic sizes only while it
    is the same): a new number after each change, and after an undecided question on a
    data-dependent size (its answer may depend on who asks), never after a pure question;
    two environments never share one."""
    env = Env()
    seen = [env.epoch]

    def changed() -> bool:
        new = env.epoch not in seen
        seen.append(env.epoch)
        return new

    s0 = env.new_backed(5, lo=0)
    assert changed()
    s1 = env.new_backed(5, lo=0)
    assert changed()
    u0 = env.new_unbacked(lo=0)
    assert changed()
    for pure in (lambda: env.decide(ge(s0, 0)), lambda: env.bounds(s0 + s1),
                 lambda: env.simplify(s0 * 2), lambda: env.hint(s0 + 1),
                 lambda: env.decide(eq(u0, 3)), lambda: env.undecided_unbacked(eq(u0, 3))):
        pure()
        assert not changed()
    assert env.evaluate(eq(s0, s1)) is True  # a guard (s1 replaced by s0)
    assert changed()
    assert env.evaluate(eq(s0, s1)) is True  # decided now: nothing new
    assert not changed()
    env.evaluate(ge(s0, 3))  # a guard narrowing a range
    assert changed()
    env.add_fact(le(u0, s0))
    assert changed()
    env.require(le(s0, 10 ** 6))
    assert changed()
    with pytest.raises(DataDependentQuestion):
        env.evaluate(eq(u0, 2))
    assert changed()
    env.settle(ge(u0, 1), "size test", "why")
    assert changed()
    assert Env().epoch not in seen



def test_an_or_decided_by_one_operand_survives_a_zero_divisor() -> None:
    """`(6*s0*u0 - 1)//(3*s0*u0) == 1 or u0 <= 0` once `u0 == 0`: the second operand
    decides it; the first (a division by 0 now) is not evaluated, as Python's `or` would
    not (a loaded contract's condition under a branch's fact, fuzz seed 221)."""
    from safetrace.symbolic import and_, or_

    env = Env()
    s0, u0 = env.new_backed(3), env.new_unbacked(0, None)
    n = 3 * s0 * u0
    env.add_fact(or_(eq((2 * n - 1) // n, 1), le(u0, 0)))
    env.add_fact(eq(u0, 0))
    assert env.decide(eq(u0, 0)) is True
    env2 = Env()
    v0 = env2.new_unbacked(0, None)
    with pytest.raises(ZeroDivisionError):  # (nothing decides it: raised, as before)
        env2.add_fact(eq(v0, 0))
        env2.simplify(and_(eq((v0 - 1) // v0, 1), le(v0, 0)))


def test_a_later_fact_leaves_one_side_of_a_disjunction() -> None:
    """``s1 != 0`` of a range from 0 rules out ``s1 <= 0``: the fact ``s0*s1 >= 1 or
    s1 <= 0`` is then its first side, which bounds the product (a size split's branch of a
    loaded program: found by the fuzzer)."""
    env = Env()
    env.new_unbacked(0, None, name="s0")
    env.new_unbacked(0, 4, name="s1")
    env.add_fact(parse("(s0*s1 >= 1) or (s1 <= 0)"))
    assert str(env.simplify(parse("min(10*s0*s1, 1)"))) == "min(10*s0*s1, 1)"
    env.add_fact(parse("s1 != 0"))
    assert str(env.simplify(parse("min(10*s0*s1, 1)"))) == "1"
    with pytest.raises(ValueError):
        env.add_fact(parse("s0*s1 <= 0"))


def test_a_question_of_several_symbols_is_decided_at_each_value_of_one_of_few() -> None:
    """An env that enumerates (the loader's) decides ``c`` at each of ``s0``'s values when
    ``s0`` ranges over few: ``(s0 + 1)//2 * s1 == s1 * (s0 - s0//2)`` holds at each."""
    env = Env()
    env.new_unbacked(0, 3, name="s0")
    env.new_unbacked(0, None, name="s1")
    same = parse("((s0 + 1)//2)*s1 == s1*(s0 - s0//2)")
    assert env.decide(same) is None
    env.enumerate_up_to = 16
    env.cache.clear()
    assert env.decide(same) is True
    assert env.decide(parse("((s0 + 1)//2)*s1 == s1*(s0//2)")) is None  # (s1 == 0: equal)


def test_a_replacement_that_leaves_one_side_of_a_disjunction_makes_it_a_fact() -> None:
    """``not (s0 == 1 and s1 == 1)`` once ``s0 == 1`` is ``s1 != 1``: a fact of its own
    (``s1 >= 2`` of a range from 1), which leaves ``s3 >= 2`` of ``s1 <= 1 or s3 >= 2``
    (a size split's nested branch of a loaded program: ``max(s3, 2)`` is ``s3`` there;
    fuzz seed 20105)."""
    env = Env()
    env.new_unbacked(1, 16, name="s0")
    env.new_unbacked(1, None, name="s1")
    env.new_unbacked(0, None, name="s3")
    env.add_fact(parse("(s1 <= 1) or (s3 == max(s3, 2))"))
    env.add_fact(parse("not ((s0 == 1) and (s1 == 1))"))
    assert env.decide(parse("max(s3, 2) == s3")) is None
    env.add_fact(parse("s0 == 1"))
    assert env.symbol_range("s1") == Range(2, math.inf)
    assert env.decide(parse("max(s3, 2) == s3")) is True


def test_enumerating_a_value_that_divides_by_zero_decides_nothing() -> None:
    """At ``s0 = 1`` the divisor ``s0 - 1`` of ``s1 // (s0 - 1)`` is 0: enumerating
    ``s0``'s few values gives no answer (it raised ZeroDivisionError, through st.load)."""
    env = Env()
    env.new_unbacked(1, 3, name="s0")
    env.new_unbacked(0, None, name="s1")
    env.enumerate_up_to = 16
    assert env.decide(parse("s1//(s0 - 1) == s1")) is None


def test_a_fact_leaving_a_min_max_one_value_makes_it_that_value() -> None:
    # (a strided slice's length x[n - 1:1:2] in the branch of a cond on its length > 0:
    # the atom ranges over [0, 1], the fact leaves it 1, and a size of it is that size at 1)
    env = Env()
    s0, s1 = env.new_unbacked(0, None), env.new_unbacked(0, None)
    p = max_(min_(s0, 1) - min_(s1, 3), 0)
    assert env.decide(eq((p + 1) // 2, 1)) is None
    env.add_fact(ge(p, 1))
    assert env.decide(eq((p + 1) // 2, 1)) is True
    assert env.decide(eq(p * 5, 5)) is True
    wider = Env()
    s0, s1 = wider.new_unbacked(0, None), wider.new_unbacked(0, None)
    q = max_(min_(s0, 2) - min_(s1, 3), 0)  # ([0, 2]: the fact leaves two values)
    wider.add_fact(ge(q, 1))
    assert wider.decide(eq(q, 1)) is None and wider.decide(eq(q, 2)) is None
    below = Env()
    s0, s1 = below.new_unbacked(0, None), below.new_unbacked(0, None)
    r = max_(min_(s0, 4) - s1, 0)
    below.add_fact(le(2 * r, 1))  # (r <= 0 of r >= 0: r is 0)
    assert below.decide(eq(r + s0, s0)) is True


def test_two_forms_of_one_size_are_equal_case_by_case() -> None:
    # (a strided slice's length v[-1::2] of u rows, simplified two ways: both min(u, 1))
    from safetrace.symbolic.cases import by_cases
    env = Env()
    u = env.new_unbacked(0, None)
    a = (u + max_(u - 1, 0) + 1) // 2 - max_(u - 1, 0)
    b = (max_(u - max_(u - 1, 0), 0) + 1) // 2
    assert env.decide(eq(a, b)) is None
    assert by_cases(env, eq(a, b)) is True and by_cases(env, eq(a, min_(u, 1))) is True
    assert by_cases(env, eq(a, u)) is None  # (u == 2: 1 and 2)
    assert by_cases(env, ge(a, 2)) is False and by_cases(env, le(a, 1)) is True
    assert not env.facts and not env.linear  # (the cases are assumed inside only)


def test_case_by_case_work_is_counted_in_decisions() -> None:
    """An env's ``case_decisions`` (the loader's budget) is spent in the prover's
    decisions, the same count on every run; past it a question is left open at once."""
    from safetrace.symbolic.cases import by_cases
    spent = []
    for _ in range(2):
        env = Env()
        u = env.new_unbacked(0, None)
        a = (u + max_(u - 1, 0) + 1) // 2 - max_(u - 1, 0)
        b = (max_(u - max_(u - 1, 0), 0) + 1) // 2
        env.case_decisions = 1000  # type: ignore[attr-defined]
        assert by_cases(env, eq(a, b)) is True
        spent.append(1000 - env.case_decisions)  # type: ignore[attr-defined]
        env.case_decisions = spent[-1] - 1  # type: ignore[attr-defined]
        assert by_cases(env, eq(a + 1, b + 1)) is None  # (one decision short)
        before = env.cache.decisions
        assert env.case_decisions <= 0 and by_cases(env, eq(a, b)) is None  # type: ignore
        assert env.cache.decisions == before
    assert spent[0] == spent[1] > 0


def test_a_not_and_fact_is_narrowed_as_an_or() -> None:
    # (nested size splits: the false branch of (s3 <= 5) and (s6 <= 3), then the true
    # branch of s3 <= 5 inside it, where s6 >= 4)
    from safetrace.symbolic import and_, not_
    env = Env()
    s3, s6 = env.new_unbacked(3, None), env.new_unbacked(0, 6)
    env.add_fact(not_(and_(le(s3, 5), le(s6, 3))))
    assert env.decide(eq(min_(s6, 1), 1)) is None
    env.add_fact(le(s3, 5))
    assert env.bounds(s6) == Range(4, 6) and env.decide(eq(min_(s6, 1), 1)) is True


def test_an_assumption_that_zeroes_a_stored_divisor_never_holds() -> None:
    # fuzz seed 2123: `x.unsafe_split(x.shape[2] // 2 or 1, 2)` stores the chunk count
    # (s0 + s0//2 - 1)//(s0//2); a cond on `2*s0 == 0` then assumed s0 == 0 inside its true
    # branch, and re-simplifying the count divided by zero (a ZeroDivisionError escaped
    # st.export). The program computed the count, so its divisor is not zero wherever the
    # facts hold: the assumption is refuted, the branch never runs.
    from safetrace.symbolic.scope import assuming
    env = Env()
    s0 = env.new_backed(3)
    assert env.evaluate(ne(s0 // 2, 0)) is True
    count = (s0 + s0 // 2 - 1) // (s0 // 2)
    assert env.evaluate(eq(count, 3)) is True
    with assuming(env, eq(2 * s0, 0)) as runs:
        assert runs is False
    with assuming(env, eq(s0, 5)) as runs:
        assert runs is True
    assert env.decide(eq(s0, 3)) is None  # (what the blocks assumed is forgotten)


def test_two_environments_through_the_same_changes_share_a_state_name() -> None:
    """``Env.state_name`` (symbolic/history.py; trace/memo.py keeps results under it):
    the same described changes in the same order give the same name, whatever their
    origins; another hint, another order or a change made outside the described methods
    (a block's facts forgotten) gives another one."""
    from safetrace.symbolic.scope import assuming

    def walk(hint: int, order: bool = True, origin: str = "a") -> Env:
        env = Env()
        s0 = env.new_backed(hint, lo=0, origin=origin)
        s1 = env.new_backed(5, lo=0)
        conds = [ge(s0, 2), le(s1, 64)]
        for c in conds if order else conds[::-1]:
            env.evaluate(c, origin)
        env.require(le(s0 + s1, 10 ** 6), origin)
        return env

    first = walk(4)
    assert walk(4, origin="b").state_name == first.state_name
    assert walk(3).state_name != first.state_name
    assert walk(4, order=False).state_name != first.state_name
    name = first.state_name
    first.decide(ge(parse("s0"), 0))  # (a pure question: the state is the same)
    assert first.state_name == name
    with assuming(first, ge(parse("s0"), 3)):
        pass
    assert first.state_name != name and first.state_name != walk(4).state_name
    noted = walk(4)
    noted.note(("flexible", "s0"))
    assert noted.state_name != name


def test_a_value_a_scoped_fact_gives_is_forgotten_with_the_scope() -> None:
    # (session 30: hint_value cached `u0 -> 0` under a branch's `u0 == 0` and answered it
    # after the branch; st.load then evaluated the other side of a split as that value)
    from safetrace.symbolic.scope import assuming

    env = Env()
    u0 = env.new_unbacked(0, 6)
    with assuming(env, eq(u0, 0)) as holds:
        assert holds and env.hint(u0) == 0
    with assuming(env, ge(u0, 1)) as holds:
        assert holds
        with pytest.raises(DataDependentQuestion):
            env.hint(u0)
