"""Minimal reproducers of the bug classes the differential fuzzer found (benchmarks/fuzz.py),
each xfail(strict) with its cause and owner: a fix makes it XPASS, then drop the mark."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim


def _same_as_eager(fn, example, spec, inputs):
    ep = st.export(fn, example, dynamic_shapes=spec)
    for args in inputs:
        want = fn(*[a.clone() for a in args])
        got = ep.module()(*[a.clone() for a in args])
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        for w, g in zip(want, got):
            assert w.shape == g.shape, (w.shape, g.shape)
            torch.testing.assert_close(g, w, equal_nan=True)
    return ep


def test_int_of_size_times_float_matches_python():
    def f(x):
        return torch.ones(int(x.shape[0] * 0.7))      # 40 * 0.7 is 28.000000000000004 in eager

    _same_as_eager(f, (torch.randn(40),), ({0: Dim("n")},), [(torch.randn(40),)])


def test_interpolate_area_third_matches_eager():
    def f(x):
        return F.interpolate(x, scale_factor=1 / 3, mode="area")

    _same_as_eager(f, (torch.randn(1, 2, 6),), ({2: Dim.AUTO},), [(torch.randn(1, 2, 6),)])


def test_zero_dim_tensor_index_stays_an_alias():
    def f(y):
        v = y.clone()
        a = v[torch.tensor(0)]
        v.zero_()
        return v, a

    # index 0 needs a row: b >= 1 is required; a Dim allowing 0 exports as torch's does
    # (eager raises at 0), and the program's input check refuses b = 0 before running
    _same_as_eager(f, (torch.randn(3, 2),), ({0: Dim("b", min=1)},),
                   [(torch.randn(1, 2),), (torch.randn(3, 2),), (torch.randn(5, 2),)])
    ep = st.export(f, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("b")},))
    with pytest.raises(IndexError):
        f(torch.randn(0, 2))
    with pytest.raises(st.InputMismatchError, match=">= 1"):
        ep.module()(torch.randn(0, 2))


def test_argmax_index_stays_an_alias():
    def f(x):
        v = x.clone()
        a = v[v.flatten().argmax() % v.shape[0]]
        v[:1] = 7.0
        return v, a

    _same_as_eager(f, (torch.randn(1, 4),), ({1: Dim("d", min=1, max=4)},), [(torch.randn(1, 3),)])


def test_masked_select_of_empty_dynamic_tensor_exports():
    def f(x, y):
        v0 = x[x.shape[0] + 1:1:3]
        v2 = torch.masked_select(x, x > 0)
        return v0, v2

    ep = st.export(f, (torch.randn(0), torch.randn(1, 5, 0)),
                   dynamic_shapes=({0: Dim.DYNAMIC}, {0: Dim("d0", max=16), 2: Dim("d1")}))
    _same_as_eager(f, (torch.randn(0), torch.randn(1, 5, 0)),
                   ({0: Dim.DYNAMIC}, {0: Dim("d0", max=16), 2: Dim("d1")}),
                   [(torch.randn(0), torch.randn(d0, 5, d1))
                    for d0, d1 in ((0, 0), (1, 3), (16, 1))])
    assert ep.contract.conditions == ()


def test_max_of_size_difference_stays_symbolic():
    def f(x):
        v0 = x[:, x.shape[1] - 2:3:2]
        v1 = x.double() * 2
        return v0, v1, torch.ones(max(0, v1.size(-2) - v0.size(-4)))

    spec = ({0: Dim("d0", min=2), 1: Dim.AUTO, 2: Dim.DYNAMIC, 3: Dim.AUTO},)
    _same_as_eager(f, (torch.randn(4, 3, 4, 5),), spec,
                   [(torch.randn(n, 3, 4, 5),) for n in (2, 3, 9)])


def test_split_piece_needs_no_count():
    _same_as_eager(lambda x: x.split(3, 0)[0], (torch.randn(6, 6, 4, 2),), ({0: Dim("d0")},),
                   [(torch.randn(n, 6, 4, 2),) for n in (0, 1, 4, 10)])


def test_len_of_chunks_needs_no_count():
    f = lambda y: torch.ones(len(y.chunk(2, 1)))  # noqa: E731
    _same_as_eager(f, (torch.randn(2, 4, 2),), ({1: Dim("d0")},),
                   [(torch.randn(2, n, 2),) for n in (0, 1, 2, 7)])


def test_branch_on_a_named_dim_with_a_dynamic_one_is_refused():
    def f(y):
        return y * 2 if y.numel() > 7 else y * 0

    with pytest.raises(st.ConstraintViolationError, match="d1 = Dim\\('d1', min=4\\)"):
        st.export(f, (torch.randn(2, 5),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim("d1")},),
                  max_splits=0)  # (by default: a size split, exporter/splits.py)


def test_a_split_program_with_sizes_negative_at_the_example_saves_and_loads():
    """Fuzzer (fifth session, seed 5): a size split's other side holds size expressions that
    are negative at this program's example; the loaded program's wrapper tensors were built
    from those hints ('numel: integer multiplication overflow', a LoadError at load)."""
    import io

    import safetrace as st

    class P(torch.nn.Module):
        def forward(self, x, y):
            v0 = torch.ones(min(len(x), 3))
            v1 = v0[3:v0.shape[0] + 1:3]
            v2 = x.clone()
            v2a = v2.split(1, 0)[0]
            v2a.neg_()
            v3 = torch.ones(int(v0.size(-1) == v1.numel()) + 1)
            v5 = torch.cat(v3.split(4, 0)[::-1], 0)
            v6 = v1.sum(0, keepdim=True)
            v7 = v2a.split(1, 0)[0]
            return v0, v1, v2, v2a, v3, v5, v6, v7

    model = P()
    ep = st.export(model, (torch.randn(4), torch.randn(7)),
                   dynamic_shapes=({0: st.Dim("d0", max=7)}, {0: st.Dim("d1", max=10)}))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue())
    for n in (1, 2, 3, 7):  # (eager's split(1, 0)[0] needs a row)
        args = (torch.randn(n), torch.randn(5))
        for got, want in zip(loaded.module()(*args), model(*args)):
            torch.testing.assert_close(got, want)


def test_a_condition_with_an_undefined_disjunct_holds_when_another_does():
    """`((2*n - 5)//(n - 2) == 1) or (n <= 5)` at n = 2: Python evaluates the division first
    and fails, but the second disjunct holds; the input check used to refuse n = 2 (found by
    the fuzzer, seed 7: over-rejection)."""
    class P(torch.nn.Module):
        def forward(self, x):
            v1 = x[:, 2:]
            v2 = v1.long() % 3
            v3 = v1 * 2 if v1.size(-1) < 4 else v1.flip(0)
            return v1, v2, v3, torch.stack([p.sum() for p in v2.chunk(1, 1)])

    spec = ({0: Dim.DYNAMIC, 1: Dim("d0", min=2, max=16)},)
    _same_as_eager(P(), (torch.randn(4, 9),), spec,
                   [(torch.randn(3, n),) for n in (2, 3, 5, 6, 16)] + [(torch.randn(0, 2),)])
    ep = st.export(P(), (torch.randn(4, 9),), dynamic_shapes=spec)
    for bad in (torch.randn(3, 1), torch.randn(3, 17)):
        with pytest.raises(st.InputMismatchError):
            ep.module()(bad)


def test_an_auto_size_one_broadcast_keeps_the_named_dim_free():
    # x.shape[1] (Dim.AUTO) and y.shape[0] (named) are both 1 at the example; unifying them
    # refused every y of another size, which broadcasts fine: the AUTO size stays 1 instead
    def f(x, y):
        return y * x

    spec = ({1: Dim.AUTO}, {0: Dim("d0", min=1)})
    _same_as_eager(f, (torch.randn(2, 1), torch.randn(1)), spec,
                   [(torch.randn(2, 1), torch.randn(n)) for n in (1, 2, 7)])
    ep = st.export(f, (torch.randn(2, 1), torch.randn(1)), dynamic_shapes=spec)
    with pytest.raises(st.errors.InputMismatchError, match=r"x.shape\[1\] = 3"):
        ep.module()(torch.randn(2, 3), torch.randn(3))


def test_int_of_a_size_comparison_stays_symbolic():
    """Fuzzer (seeds 5, 7): `int(x.shape[1] == len(y))` guarded the equality, which tied a
    Dim.DYNAMIC size to a named Dim (both 4 at the example) and refused d0 = 1 with the
    dynamic size at 4; it is now the exact 0/1 expression, with no condition at all."""
    def f(x, y):
        return (torch.ones(int(x.shape[1] == len(y)) + 1), torch.ones(int(len(x) < 3) + 2),
                torch.ones(int(x.shape[1] != y.shape[1]) * 2))

    spec = ({0: Dim("d0", max=4), 1: Dim.DYNAMIC}, {0: Dim("d0", max=4), 1: Dim("d1", max=16)})
    ep = st.export(f, (torch.randn(4, 4), torch.randn(4, 4)), dynamic_shapes=spec)
    assert ep.contract.conditions == ()
    _same_as_eager(f, (torch.randn(4, 4), torch.randn(4, 4)), spec,
                   [(torch.randn(a, b), torch.randn(a, c))
                    for a, b, c in ((1, 4, 1), (0, 0, 3), (1, 1, 1), (2, 5, 5), (3, 0, 16))])
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(5, 4), torch.randn(5, 4))


def test_two_sizes_of_one_broadcast_either_way():
    """Fuzzer (seed 5): x.shape[0] (named) and y.shape[3] (Dim.DYNAMIC) are both 1 at the
    example; unifying them refused x of 2 rows against y's 1, which eager broadcasts.  The
    result size is max(a, b) * min(a, b, 1) under eager's own condition (a == 1 or b == 1 or
    a == b), checked at run time."""
    def f(x, y):
        v0 = y.clone()
        v0.select(0, -1).fill_(2.0)
        return torch.maximum(x, v0)

    spec = ({0: Dim("d0")}, {0: Dim.DYNAMIC, 1: Dim("d1", min=1), 2: Dim.AUTO, 3: Dim.DYNAMIC})
    example = (torch.randn(1), torch.randn(4, 1, 3, 1))
    _same_as_eager(f, example, spec,
                   [(torch.randn(a), torch.randn(4, b, 3, c))
                    for a, b, c in ((2, 7, 1), (1, 7, 5), (0, 1, 1), (1, 1, 0), (3, 1, 3))])
    ep = st.export(f, example, dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError):   # eager raises there too
        ep.module()(torch.randn(2), torch.randn(4, 1, 3, 3))
    with pytest.raises(st.InputMismatchError):   # d1 >= 1
        ep.module()(torch.randn(2), torch.randn(4, 0, 3, 1))


def test_an_emptiness_test_the_example_answers_otherwise_is_not_asserted():
    """Fuzzer (seed 5): `y[y > 0]` of an empty example `y` has 0 rows, but `if
    bool(v1.size(-1))` was answered size-obliviously (nonempty) and asserted, so the program
    refused its own example.  The example's answer now holds where it must (y.shape[0] == 0,
    a size split of the named Dim); the rest asks the test where it runs (a torch.cond,
    exporter/data_splits.py: it was asserted, refusing data that empties `v1`)."""
    def f(y):
        v1 = y[y > 0]
        return v1 * 2 if bool(v1.size(-1)) else v1.sum(0, keepdim=True)

    spec = ({0: Dim("d0", max=3)},)
    _same_as_eager(f, (torch.randn(0),), spec,
                   [(torch.randn(0),), (torch.ones(1),), (torch.ones(3),),
                    (torch.tensor([1.0, -1.0]),)])
    ep = st.export(f, (torch.randn(0),), dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(4))
    x = -torch.ones(2)  # data taking the other branch: computed, as eager does
    torch.testing.assert_close(ep.module()(x), f(x))


def test_an_emptiness_test_splits_a_named_dim_at_zero():
    """Fuzzer (seed 7): `if bool(x.nonzero().shape[0])` was answered size-obliviously
    (nonempty) and asserted, so every input with x.shape[2] = 0 (no element, so no nonzero)
    was refused at run time.  The bound x.numel() is >= 1 exactly where each of its sizes
    is, so those are guards: the named Dim d1 is split at 0, its empty side traced as eager
    runs it; a Dim.DYNAMIC size, narrowed to >= 1 by the nonempty side only, takes 0 too
    (the sides join with each one's range asserted where it runs: exporter/size_tests.py)."""
    def f(x, y):
        v0 = x.nonzero()[:, 0].float()
        v4 = v0 * 2 if bool(v0.shape[0]) else v0.sum(0, keepdim=True)
        return v0, v4 + y.sum()

    d0 = Dim("d0", min=2, max=16)
    spec = ({0: d0, 1: d0, 2: Dim("d1")}, {0: Dim.AUTO})
    example = (torch.randn(2, 2, 6), torch.randn(2))
    _same_as_eager(f, example, spec, [(torch.randn(n, n, m), torch.randn(2))
                                      for n, m in ((8, 0), (2, 1), (3, 5), (16, 0))])
    ep = st.export(f, example, dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 1, 3), torch.randn(2))
    _same_as_eager(f, example, ({2: Dim.DYNAMIC}, None),
                   [(torch.randn(2, 2, n), torch.randn(2)) for n in (0, 1, 4)] +
                   [(torch.zeros(2, 2, 3), torch.randn(2))])


def test_a_literal_slice_start_does_not_narrow_a_named_dim():
    """Fuzzer: `x[1:] + y` with x.shape[0] a Dim from 0 and y's dim AUTO was refused ("only
    works for n >= 1": the literal start was clamped with a guard). The clamp is now a
    Min/Max that holds for every size, and y follows it: max(n - 1, 0). torch.export
    narrows n to >= 3 silently (its program refuses n = 0, 1, 2)."""
    def f(x, y):
        return x[1:] + y, x[:3] * 2

    spec = ({0: Dim("n")}, {0: Dim.AUTO})
    example = (torch.randn(4), torch.randn(3))
    _same_as_eager(f, example, spec, [(torch.randn(n), torch.randn(max(n - 1, 0)))
                                      for n in (0, 1, 2, 3, 4, 9)])
    ep = st.export(f, example, dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(5), torch.randn(3))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(5, 1), torch.randn(4))
    # (Dim.DYNAMIC keeps torch's guard: tests/export/test_scenarios_dynamic.py scenario 9)

    class M(torch.nn.Module):
        def forward(self, x, y):
            return f(x, y)

    ref = torch.export.export(M(), example, dynamic_shapes=(
        {0: torch.export.Dim("n")}, {0: torch.export.Dim.AUTO}))
    small = (torch.randn(2), torch.randn(1))
    with pytest.raises(Exception):  # torch's program: n - 1 >= 2
        ref.module()(*small)
    _same_as_eager(f, example, spec, [small])


def test_two_data_dependent_sizes_broadcast_either_way():
    """Fuzzer (seed 7): `torch.maximum(v0, v2)` with v0 of u0 rows and v2 of u0 // 2 rows
    asserted `u0 == 1 or u0 == u0 // 2` (only v0 could broadcast), so data with u0 = 2 or 3
    (v2 has 1 row: eager broadcasts it) was refused. Eager's own condition (equal, or
    either is 1) is asserted now, and the result has max(a, b) * min(a, b, 1) rows."""
    def positives(k, n=8):
        t = -torch.ones(n)
        t[:k] = torch.arange(1.0, k + 1)
        return t

    def f(x):
        v0 = x[x > 0]
        v2 = v0.index_select(0, torch.arange(v0.shape[0] // 2))
        return torch.maximum(v0, v2)

    def g(x, y):
        return x[x > 0] * y[y > 0]

    _same_as_eager(f, (torch.randn(8),), None, [(positives(k),) for k in range(4)])
    _same_as_eager(f, (torch.randn(8),), ({0: Dim("n")},),
                   [(positives(k, n),) for k, n in ((0, 0), (1, 1), (2, 5), (3, 3))])
    pairs = ((2, 2), (1, 2), (2, 1), (0, 1), (1, 0), (0, 0), (1, 1))
    _same_as_eager(g, (torch.randn(8), torch.randn(8)), None,
                   [(positives(a), positives(b)) for a, b in pairs])
    for fn, args in ((f, (positives(4),)), (g, (positives(3), positives(2)))):
        with pytest.raises(RuntimeError):  # eager's broadcasting error
            fn(*args)
        ep = st.export(fn, tuple(torch.randn(8) for _ in args))
        with pytest.raises(st.RuntimeAssertionError, match="broadcasts"):
            ep.module()(*args)
        with pytest.raises(st.InputMismatchError):
            ep.module()(*(torch.randn(9) for _ in args))


# -- the long run's statement kinds (grammar_long.py), twelfth session ------------------------

def test_a_branch_reading_its_operand_from_outside_too_builds_its_module():
    """Fuzzer (hops, seeds 1 and 2): a torch.cond branch that reads `x` from outside besides
    its operand `x` got two placeholders with one target: ep.module() failed on fx's
    `def forward(self, x, x)` (SyntaxError: duplicate argument)."""

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.numel() >= 9, lambda t: t + x.sum(), lambda t: t - 1, (x,))

    spec = ({0: Dim("d0", min=2), 1: Dim.AUTO},)
    _same_as_eager(M(), (torch.randn(3, 3),), spec,
                   [(torch.randn(n, 3),) for n in (2, 3, 5)] + [(torch.randn(4, 1),)])
    ref = torch.export.export(M(), (torch.randn(3, 3),), dynamic_shapes=(
        {0: torch.export.Dim("d0", min=2), 1: torch.export.Dim.AUTO},))
    x = torch.randn(4, 3)
    torch.testing.assert_close(ref.module()(x), M()(x))


def test_a_requirement_inside_a_cond_branch_binds_only_where_it_runs():
    """Fuzzer (hops, seed 2): `amax(0)` in the true branch requires x.shape[0] >= 1, which
    became an input check of the whole program: x of size 0 takes the false branch in eager
    (a result), and was refused.  A guard inside a branch is a branch (a size split here)."""
    def f(x):
        return torch.cond(x.numel() > 4, lambda t: t.amax(0), lambda t: t.sum(0), (x,))

    _same_as_eager(f, (torch.randn(7),), ({0: Dim("d0")},),
                   [(torch.randn(n),) for n in (0, 1, 3, 5, 9)])


def test_an_op_check_inside_try_except_is_a_branch_not_an_input_check():
    """Fuzzer (raising, seeds 1 and 2): `y.select(0, 1)` inside `try: ... except IndexError`
    was exported with an input check refusing y.shape[0] < 2, where eager computes the
    except side.  It is a branch: where the op raises, eager's IndexError is what the
    trace raises (trace/eager_raise.py), so the except side is traced there too (a size
    split), and every size computes what eager computes."""
    def f(y):
        try:
            v = y.select(0, 1)
        except IndexError:
            v = y.sum(0) * 0
        return v

    _same_as_eager(f, (torch.randn(3, 2),), ({0: Dim("n", max=16)},),
                   [(torch.randn(n, 2),) for n in (0, 1, 2, 3, 16)])
    _same_as_eager(f, (torch.randn(3, 2),), ({0: Dim("n", min=2, max=16)},),
                   [(torch.randn(n, 2),) for n in (2, 3, 16)])


def test_torch_check_inside_try_except_is_a_branch():
    """Fuzzer (raising, seed 1): `torch._check(n != 1)` inside `try: ... except
    RuntimeError` became an input check refusing n == 1, where eager computes the except
    side.  It is a branch on the size: both sides traced (a size split)."""
    def f(y):
        try:
            torch._check(y.shape[0] != 1)
            v = y + 1
        except RuntimeError:
            v = y * 3
        return v

    _same_as_eager(f, (torch.randn(3),), ({0: Dim("n")},),
                   [(torch.randn(n),) for n in (0, 1, 2, 3, 8)])


def test_a_reraising_except_keeps_an_op_check_a_requirement():
    """The other side of the two tests above: an except clause that only raises again does
    not catch, so the op's check stays an input check (exported as before)."""
    def f(y):
        try:
            v = y.select(0, 1)
        except IndexError as e:
            raise ValueError("too short") from e
        return v

    ep = st.export(f, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 2))
    torch.testing.assert_close(ep.module()(torch.arange(6.).reshape(3, 2)), torch.tensor([2., 3.]))


def test_a_while_loop_carrying_a_view_is_refused():
    """Fuzzer (hops, seeds 1 and 2): eager's while_loop raises where body_fn's output has
    other strides than the carried input (`x.diagonal()` carried, `t + 1` returned: a
    contiguous result); the exported loop computed a result there.  Strides are not
    traced: a view carried (or returned) is refused with the fix; contiguous is exported."""
    wl = torch._higher_order_ops.while_loop
    spec = ({0: Dim("n", min=2), 1: Dim("n", min=2)},)

    def f(x):
        return wl(lambda i, t: i < 2, lambda i, t: (i + 1, t + 1), (torch.tensor(0), x.diagonal()))

    with pytest.raises(st.ExportError, match="does not trace strides"):
        st.export(f, (torch.randn(4, 4),), dynamic_shapes=spec)

    def g(x):
        return wl(lambda i, t: i < 2, lambda i, t: (i + 1, t + 1),
                  (torch.tensor(0), x.diagonal().contiguous()))[1]

    ep = st.export(g, (torch.randn(4, 4),), dynamic_shapes=spec)
    x = torch.randn(5, 5)
    torch.testing.assert_close(ep.module()(x), x.diagonal() + 2)


def test_the_count_of_a_mask_is_bounded_by_its_numel():
    """Fuzzer (base kinds, seed 17, over_rejection): `.item()` of a mask's sum had the upper
    bound max(numel, 1) (shared with prod, which is 1 when empty), so at an example where
    the mask is empty the size test on the count was answered for counts >= 2 and
    asserted: the program refused its own example.  The count is at most numel (prod of a
    mask is 0 or 1): an empty mask decides the test by the input sizes."""
    def f(x):
        v0 = torch.linspace(0, 1, x.shape[1])
        v2 = torch.zeros((v0 > 0).sum().item(), 2)
        return v2 * 2 if v2.numel() < 4 else v2.flip(0)

    _same_as_eager(f, (torch.randn(7, 0),), ({0: Dim("d0", min=1), 1: Dim("d1")},),
                   [(torch.randn(n, 0),) for n in (1, 6, 7)] + [(torch.randn(3, 5),)])


def test_an_op_check_inside_a_with_block_stays_a_requirement():
    """A `with` block (or `finally`) lets the op's exception pass: its check stays an input
    check (torch.no_grad() around a forward's body is common), as before."""
    def f(y):
        with torch.no_grad():
            v = y.select(0, 1)
        return v * 2

    ep = st.export(f, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 2))
    x = torch.randn(4, 2)
    torch.testing.assert_close(ep.module()(x), f(x))


def test_a_size_split_keeps_a_sides_refusal_where_eager_raises():
    """Fuzzer (long kinds, seed 23, WRONG): `if n < 2: raise` then a branch on `n < 4` split
    the Dim into [0, 3] and [4, 16]; the first side's own program refused 0 and 1 (eager
    raises there), but the combined program's range was the sides' regions, [0, 16]: it
    computed results at 0 and 1.  Each side now stands for the sizes its program admits."""
    def f(x):
        v0 = (x > 0) * 2.5
        if v0.shape[0] < 2:
            raise RuntimeError("short")
        v3 = v0 * 2 if v0.shape[0] < 4 else v0.sum(0, keepdim=True)
        return v0.flatten()[1:], v3

    spec = ({0: Dim("d0", max=16)},)
    _same_as_eager(f, (torch.randn(5),), spec, [(torch.randn(n),) for n in (2, 3, 4, 16)])
    ep = st.export(f, (torch.randn(5),), dynamic_shapes=spec)
    for n in (0, 1, 17):
        with pytest.raises(st.InputMismatchError, match="v0.shape"
                           if n < 2 else "d0|x.shape"):
            ep.module()(torch.randn(n))


def test_unsafe_split_and_chunk_have_splits_shape_rules():
    """``unsafe_split`` / ``unsafe_split_with_sizes`` / ``unsafe_chunk`` (views of their
    input that the schema does not declare) follow split's / chunk's rules and lazily counted
    pieces; a write through a piece shows through the base as in eager (fuzz kind
    ``derived``; before: refused, "no symbolic shape rule", the dims specialized)."""
    def f(x):
        v = x.clone()
        v.unsafe_split(2)[0].add_(1)
        a = torch.unsafe_split_with_sizes(x, [1, x.shape[0] - 1])[1] * 2
        return v, a, x.unsafe_chunk(2, 1)[-1] + 1, x.unsafe_split(9, 1)[0] * 3

    spec = ({0: Dim("a", min=3, max=4), 1: Dim("b", max=9)},)
    _same_as_eager(f, (torch.randn(3, 4),), spec,
                   [(torch.randn(*s),) for s in ((3, 4), (4, 0), (3, 1), (4, 7), (3, 9))])
    g = lambda x: torch.unsafe_split(x, 2)[1] * 2   # noqa: E731 - counted lazily as split's
    _same_as_eager(g, (torch.randn(5),), ({0: Dim("n", min=3)},),
                   [(torch.randn(n),) for n in (3, 4, 9)])


def test_einsum_ellipsis_covering_no_dims():
    """``torch.einsum('i...->...i', v)`` of a vector: the operand's ellipsis covers no dims,
    and eager accepts the ellipsis in the output (fuzz kind ``layout``; before: refused,
    "ellipsis in the output but not in any operand")."""
    def f(x, y):
        return torch.einsum("i...->...i", x), torch.einsum("i...,i...->...", x, y)

    _same_as_eager(f, (torch.randn(3), torch.randn(3)), ({0: Dim("n")}, {0: Dim("n")}),
                   [(torch.randn(n), torch.randn(n)) for n in (0, 1, 5)])


class _ChunksByHalfACount(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(12.0))

    def forward(self, x, y):
        v0 = y + self.buf[:y.shape[-1]]
        v2 = v0.flatten().new_ones((v0 < 0).sum().item())
        return torch.ones(len(v2.chunk(v2.shape[0] // 2, 0)))


def test_emptiness_probe_of_a_division_by_a_data_size_is_an_export_error():
    """fuzz seed 91: a size-oblivious question on `chunk(u0 // 2)` was probed at u0 = 0,
    where the pieces' count divides by zero: an internal ZeroDivisionError escaped
    st.export; now the undefined probe is no answer and the export refuses clearly (the
    count of pieces, a value computed from data, is what `len` needs)."""
    torch.manual_seed(0)
    args = (torch.randn(0), torch.randn(4, 7, 7, 7))
    spec = (None, {1: Dim("d0", min=1, max=7), 3: Dim.AUTO})
    with pytest.raises(st.DataDependentError, match="from tensor data|on tensor data"):
        st.export(_ChunksByHalfACount(), args, dynamic_shapes=spec)


def test_a_size_split_returning_one_data_size_twice_loads(tmp_path):
    # fuzz seed 303: each branch returns nonzero()'s rows twice; the file records one size
    # for both outputs, the loader made a new size for each and refused its own file
    def f(z):
        v = z.nonzero()
        if z.size(1) == 2:
            return v, v * 2
        return v, v + 1

    ep = st.export(f, (torch.randn(6, 3),), dynamic_shapes=({0: Dim("a", max=6),
                                                              1: Dim("b", max=8)},))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for z in (torch.randn(4, 2), torch.randn(0, 5), torch.randn(3, 1)):
        for got, want in zip(loaded.module()(z.clone()), f(z.clone())):
            assert torch.equal(got, want)


def test_an_assert_inside_a_size_split_branch_is_a_fact_at_load(tmp_path):
    # fuzz seed 304: `x[mask][:2]` after `assert numel > 1` is two rows in both branches; the
    # loader did not take the branch's assertion as a fact and refused the file's `[2]`
    def f(y):
        try:
            if y.shape[1] <= 1:  # (no assert statement: pytest rewrites those here)
                raise ValueError("narrow")
            v = y * 2
        except ValueError:
            v = y - 1
        m = v[v > 0]
        torch._check(m.numel() > 1)
        return m[:2]

    ep = st.export(f, (torch.randn(3, 3),), dynamic_shapes=({1: Dim("d", max=3)},))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for y in (torch.rand(3, 1) + 1, torch.rand(3, 2) + 0.5):
        torch.testing.assert_close(loaded.module()(y.clone()), f(y.clone()))
    with pytest.raises(Exception, match=">= 2"):
        loaded.module()(-torch.rand(3, 2))


def test_a_size_split_returning_a_data_size_plus_one_loads(tmp_path):
    # fuzz seed 304 (second run): the file records `[u0]` and `[u0 + 1]`; the loader made
    # two unrelated new sizes for them and refused its own file
    def f(x):
        v = torch.unique((x > 0).int())
        w = torch.cat([v, v.amax(0, keepdim=True)])
        return v, w, (x * 2 if x.shape[1] >= 3 else x * 0)

    ep = st.export(f, (torch.randn(5, 3),), dynamic_shapes=({1: Dim("d", min=1)},))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for x in (torch.randn(5, 1), torch.randn(5, 7)):
        for got, want in zip(loaded.module()(x.clone()), f(x.clone())):
            assert torch.equal(got, want)


def test_an_in_place_read_of_its_own_memory_after_vmap_is_refused():
    # fuzz seed 261: vmap's output was traced as row-major where eager's has the batch dim
    # innermost (strides (1, 7)); `v.add_(v[0])` passed eager's overlap check (a non-dense
    # read) and failed in the program (a dense, partly overlapping read) on every input
    def f(x):
        v = torch.vmap(lambda r: r.flip(0), in_dims=1)(x).clone()
        v.add_(v[0])
        return v

    x = torch.randn(3, 7)
    f(x)  # eager runs
    with pytest.raises(st.UnsupportedOpError, match=r"reading another view of the same "
                                                    r"memory(.|\n)*v\.add_\(v\[0\]\.clone\(\)\)"):
        st.export(f, (x,), dynamic_shapes=({1: Dim("d0", min=2, max=10)},))

    def g(x):  # with the read copied: exported, eager's values
        v = torch.vmap(lambda r: r.flip(0), in_dims=1)(x).clone()
        v.add_(v[0].clone())
        return v

    ep = st.export(g, (x,), dynamic_shapes=({1: Dim("d0", min=2, max=10)},))
    for n in (2, 5, 10):
        x = torch.randn(3, n)
        torch.testing.assert_close(ep.module()(x), g(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 11))


def test_a_torchscript_interpreter_operator_called_directly_runs(tmp_path):
    # torch.ops.aten.tensor.float is TorchScript's interpreter's own (outside the
    # dispatcher): the program's write analysis asked the dispatcher about it and every
    # call raised `operator aten::tensor.float does not exist`
    def f(x):
        return x * torch.ops.aten.tensor.float(2.0)

    ep = st.export(f, (torch.randn(3),), dynamic_shapes=({0: Dim("b")},))
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x), f(x))
    st.save(ep, tmp_path / "p.st")
    x = torch.randn(4)
    torch.testing.assert_close(st.load(tmp_path / "p.st").module()(x), f(x))


def test_an_in_place_view_keeps_vmaps_unknown_layout_for_the_overlap_check():
    # v.unsqueeze_(0) gave vmap's output (strides unknown at export) a row-major layout,
    # and v[0] after it was taken for the same view as v[0] before it: eager's write
    # (a non-dense read) ran, the program's (dense, partly overlapping) raised every call
    def f(x):
        v = torch.vmap(lambda r: r * 2, in_dims=1)(x)
        a = v[0]
        v.unsqueeze_(0)
        v[0].add_(a)
        return v

    f(torch.randn(3, 4))  # eager runs
    with pytest.raises(st.UnsupportedOpError, match="reading another view of the same"):
        st.export(f, (torch.randn(3, 4),), dynamic_shapes=({1: Dim("n", min=2)},))

    def g(x):  # with the read copied: exported, eager's values
        v = torch.vmap(lambda r: r * 2, in_dims=1)(x)
        a = v[0].clone()
        v.unsqueeze_(0)
        v[0].add_(a)
        return v

    _same_as_eager(g, (torch.randn(3, 4),), ({1: Dim("n", min=2)},),
                   [(torch.randn(3, n),) for n in (2, 5)])


def test_a_cond_on_a_size_that_zeroes_an_earlier_divisor_exports():
    # fuzz seed 2123: the cond's true branch (2*d0 == 0) assumed d0 == 0, which made the
    # split's chunk count (d0 + d0//2 - 1)//(d0//2) divide by zero: ZeroDivisionError
    # escaped st.export. The branch cannot run where the split ran (d0//2 != 0). Since
    # session 28 piece 0 of a split by a size needs no count (trace/pieces.py): it exports,
    # and matches eager at every d0 (the `or 1` splits at d0//2 == 0).
    class P(torch.nn.Module):
        def forward(self, x, y, z):
            v0 = x.unsafe_split(x.shape[2] // 2 or 1, 2)[0]
            v1 = torch.cond(y.size(-1) == 0, lambda t: t.sum(0, keepdim=True),
                            lambda t: t[:1], (y,))
            return (v0, v1)

    d0 = Dim("d0")
    spec = ({0: Dim.DYNAMIC, 2: d0}, {0: 2 * d0},
            {0: d0, 1: Dim("d1", min=3, max=6), 2: Dim.AUTO})
    args = (torch.randn(1, 0, 3), torch.randn(6), torch.randn(3, 3, 3))
    with pytest.warns(UserWarning, match="Python constant"):
        _same_as_eager(P(), args, spec, [(torch.randn(b, 0, n), torch.randn(2 * n),
                                          torch.randn(n, 4, 3)) for n in range(6)
                                         for b in (0, 2)])


# -- grammar_ops.py's kinds (session 27) ------------------------------------------------------

def test_group_norm_refuses_one_value_per_channel_as_eager_does():
    # grammar_ops seed 3, WRONG: F.group_norm was traced as aten.group_norm, whose rule
    # lacks the Python function's ValueError where N*C/G * prod(spatial) == 1: the program
    # computed a result (zeros) where eager raises
    def f(x):
        return F.group_norm(x, 1)

    ep = st.export(f, (torch.randn(1, 1, 7),), dynamic_shapes=({2: Dim("d0", max=10)},))
    for n in (0, 2, 10):
        assert torch.equal(ep.module()(x := torch.randn(1, 1, n)), f(x))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        f(torch.randn(1, 1, 1))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 1, 1))
    m = torch.nn.GroupNorm(2, 4)    # the module form: the same check
    ep = st.export(m, (torch.randn(3, 4, 5),), dynamic_shapes=({0: Dim("b")},))
    _same_as_eager(m, (torch.randn(3, 4, 5),), ({0: Dim("b")},),
                   [(torch.randn(n, 4, 5),) for n in (0, 1, 6)])


def test_adaptive_avg_pool_of_an_output_size_that_may_be_one_keeps_empty_inputs():
    # grammar_ops seed 3, over-rejection: `max(w // 2, 1)` is 1 for w < 4, where eager
    # takes the mean path (NaN for an empty w); the kernel's non-empty check narrowed w >= 1
    def f(x):
        return F.interpolate(x, size=(max(x.shape[-1] // 2, 1),), mode="area")

    _same_as_eager(f, (torch.randn(2, 2, 6),), ({0: Dim("b", max=16), 2: Dim("w", max=16)},),
                   [(torch.randn(b, 2, w),) for b, w in ((0, 0), (2, 0), (1, 1), (3, 7))])

    def g(x):       # an output size that is never 1: empty still raises, as in eager
        return F.adaptive_avg_pool1d(x, max(x.shape[-1] // 2, 2))

    ep = st.export(g, (torch.randn(2, 2, 6),), dynamic_shapes=({2: Dim("w", max=16)},))
    with pytest.raises(RuntimeError):
        g(torch.randn(2, 2, 0))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2, 0))


def test_take_of_an_empty_index_from_an_empty_tensor():
    # grammar_ops seed 3: take's `index.numel() == 0 or self.numel() != 0` decided its
    # first half as a branch, and the second became a requirement: n = 0 refused
    def f(x):
        return x.take(torch.arange(x.numel()) // 2)

    _same_as_eager(f, (torch.randn(6, 3),), ({0: Dim("n")},),
                   [(torch.randn(n, 3),) for n in (0, 1, 4)])


def test_conv_of_an_empty_batch_keeps_an_empty_spatial_dim():
    # grammar_ops seed 7 ('layers'): conv's "only zero batch or zero channel inputs"
    # requirement asked `w != 0` first, which became the requirement: w = 0 was refused
    # also at batch 0, where eager computes (a padded length of 2 for a kernel of 2)
    def f(x):
        return F.conv1d(x, torch.ones(2, x.shape[1], 2), stride=2, padding=1)

    spec = ({0: Dim("b"), 2: Dim("w", max=16)},)
    _same_as_eager(f, (torch.randn(0, 7, 6),), spec,
                   [(torch.randn(b, 7, w),) for b, w in ((0, 0), (0, 5), (2, 1), (3, 16))])
    ep = st.export(f, (torch.randn(0, 7, 6),), dynamic_shapes=spec)
    with pytest.raises(RuntimeError, match="zero batch"):
        f(torch.randn(2, 7, 0))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 7, 0))


def test_tensordot_of_a_size_with_itself_or_one_asks_no_branch():
    # grammar_ops seed 7: tensordot's "size 1 broadcasts" asked `s == 1` as a branch, kept
    # as a run-time check `s != 1` (inputs eager computes refused); now one requirement
    def f(x):
        v = x.flatten(0, 1)
        return torch.tensordot(v, v, dims=2)

    _same_as_eager(f, (torch.randn(6, 3, 6),), ({0: Dim("n"), 2: Dim("n")},),
                   [(torch.randn(n, 3, n),) for n in (0, 1, 2, 5)])

    def g(x, y):
        return torch.tensordot(x, y, dims=([0], [0]))

    _same_as_eager(g, (torch.randn(3, 2), torch.randn(3, 4)), ({0: Dim("n")}, {0: Dim("m")}),
                   [(torch.randn(a, 2), torch.randn(b, 4)) for a, b in
                    ((1, 3), (3, 1), (0, 0), (0, 1), (5, 5))])
    ep = st.export(g, (torch.randn(3, 2), torch.randn(3, 4)),
                   dynamic_shapes=({0: Dim("n")}, {0: Dim("m")}))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 2), torch.randn(2, 4))


def test_qr_and_svd_of_sizes_either_side_of_each_other_ask_no_branch(tmp_path):
    # grammar_ops seed 3 ('layers'): qr / svd's k = min(m, n) was a guard `n <= m` on the
    # example's side, kept as a run-time check (m < n refused where eager computes); k is
    # now min(m, n) itself, and the program saves and loads
    def f(x):
        v = F.pad(x.flatten(0, 1), (1, 0), mode="replicate")
        q, r = torch.linalg.qr(v)
        u, s, vh = torch.linalg.svd(v, full_matrices=False)
        return r.abs(), q.abs().sum(0), s, ((u * s) @ vh - v).abs().amax(), torch.linalg.svdvals(v)

    spec = ({0: Dim("d0", min=1), 1: Dim("d1", min=1)},)
    ep = st.export(f, (torch.randn(2, 6, 2),), dynamic_shapes=spec)
    st.save(ep, tmp_path / "p.pt2")
    loaded = st.load(tmp_path / "p.pt2").module()
    for shape in ((1, 1, 2), (1, 2, 2), (1, 3, 2), (3, 1, 2), (4, 4, 2)):
        x = torch.randn(*shape)
        want = f(x)
        for got in (ep.module()(x), loaded(x)):
            for w, g in zip(want, got):
                assert w.shape == g.shape
                torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)


def test_transposed_conv_of_an_empty_batch_keeps_an_empty_output():
    # grammar_ops seed 8: conv_transpose's "output size is too small" (sizes > 0) is not
    # checked by eager at batch 0, where an output size of 0 computes an empty result
    def f(x):
        return F.conv_transpose2d(x, torch.ones(x.shape[1], 1, 3, 1), stride=2,
                                  output_padding=1)

    spec = ({0: Dim("b"), 3: Dim("w")},)
    _same_as_eager(f, (torch.randn(0, 1, 1, 3),), spec,
                   [(torch.randn(b, 1, 1, w),) for b, w in ((0, 0), (0, 2), (2, 1))])
    ep = st.export(f, (torch.randn(0, 1, 1, 3),), dynamic_shapes=spec)
    with pytest.raises(st.InputMismatchError):   # eager: "only zero batch ... supported"
        ep.module()(torch.randn(1, 1, 1, 0))
