"""Facts about tensor data (the symbol ``.item()`` gave, ``__index__``'s value, a literal's
value, a recipe ``(s + 1).item() == s.item() + 1``, masks numbered by value) hold while no
write may reach the tensor's memory (trace/versions.py).

Adversarial cases write through an alias (a view, ``.data``, ``detach``, a slice's
``copy_``, ``__setitem__``, ``out=``, an input passed twice, a buffer viewing another) and
read again: the program must see the new value, as eager does, on inputs other than the
example.  The other cases write memory the tensor cannot share and read again: one symbol
(before, any write anywhere made a new one, and the facts known of the first were lost).
"""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from tests.trace.caches import StaticCache, fills_as_eager_and_refuses_when_full


def _read_twice(write):
    """f(x, y): x[0].item() before and after `write(x, y)`, each as a size."""
    def f(x, y):
        s = x[0]
        a = s.item()
        write(x, y)
        c = s.item()
        return torch.zeros(a), torch.zeros(c), x * 1, y * 1
    return f


# name -> a write that reaches x[0] in eager
ALIASED = {
    "base": lambda x, y: x.add_(1),
    "view": lambda x, y: x.view(-1).add_(2),
    "other_view": lambda x, y: x[0:1].add_(3),
    "data": lambda x, y: x.data.add_(1),
    "detach": lambda x, y: x.detach().mul_(2),
    "copy_into_slice": lambda x, y: x[:2].copy_(y[1:]),
    "setitem": lambda x, y: x.__setitem__(0, 4),
    "setitem_tensor_index": lambda x, y: x.__setitem__(torch.tensor([0]), 5),
    "index_put_": lambda x, y: x.index_put_((torch.tensor([0]),), torch.tensor(6)),
    "out": lambda x, y: torch.ops.aten.add.out(y, y, out=x),
    "unbind_piece": lambda x, y: x.unbind(0)[0].add_(1),
    "split_piece": lambda x, y: x.split(1)[0].add_(2),
    "type_as": lambda x, y: x.type_as(y).add_(1),
    "as_strided": lambda x, y: x.as_strided((2,), (1,)).add_(1),
    "diagonal": lambda x, y: x.view(1, 3).diagonal().add_(1),
    "reshape_chain": lambda x, y: x.reshape(3, 1).t()[0].add_(1),
}


@pytest.mark.parametrize("name", list(ALIASED))
def test_a_write_through_an_alias_is_seen_by_the_next_read(name):
    f = _read_twice(ALIASED[name])
    ep = st.export(f, (torch.tensor([2, 1, 3]), torch.tensor([1, 2, 0])))
    assert len(_item_nodes(ep)) == 2  # read again after the write
    for xs, ys in (([2, 1, 3], [1, 2, 0]), ([0, 4, 1], [3, 0, 2]), ([5, 5, 0], [0, 1, 7])):
        x, y = torch.tensor(xs), torch.tensor(ys)
        want = f(x.clone(), y.clone())
        got = ep.module()(x, y)
        assert [t.shape for t in got] == [t.shape for t in want], (name, xs)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


def test_inputs_passed_twice_see_each_others_writes():
    """x and y are distinct at export; called as f(t, t), a write to y is one to x."""
    f = _read_twice(lambda x, y: y.add_(1))
    ep = st.export(f, (torch.tensor([2, 1, 3]), torch.tensor([1, 2, 0])))
    for xs in ([2, 1, 3], [0, 0, 0], [4, 1, 1]):
        t, u = torch.tensor(xs), torch.tensor(xs)
        want = f(t, t)
        got = ep.module()(u, u)
        assert [g.shape for g in got] == [w.shape for w in want]


def test_a_write_to_a_buffer_another_buffer_views_is_refused():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("whole", torch.tensor([2, 3]))
            self.register_buffer("first", self.whole[0])

        def forward(self, x):
            a = self.first.item()
            self.whole.add_(x)
            c = self.first.item()
            return torch.zeros(a), torch.zeros(c)

    # the program gives each buffer its own copy: a write to one would not reach the other
    with pytest.raises(st.UnsupportedOpError, match="`first` shares its memory"):
        st.export(M(), (torch.tensor(1),))


def test_set_makes_a_tensor_share_memory_with_another():
    def f(x, y):
        t = x * 1  # (fresh memory)
        s = y * 1
        t.set_(s)  # t is s's memory from now on
        a = t.item()
        s.add_(2)  # reaches t
        c = t.item()
        return torch.zeros(a), torch.zeros(c)

    try:
        ep = st.export(f, (torch.tensor(1), torch.tensor(3)))
    except st.ExportError:
        return  # refusing is sound
    for a, b in ((1, 3), (0, 5), (4, 0)):
        want = f(torch.tensor(a), torch.tensor(b))
        got = ep.module()(torch.tensor(a), torch.tensor(b))
        assert [g.shape for g in got] == [w.shape for w in want]


def test_a_recipe_computed_before_a_write_keeps_the_old_value():
    """t = s + 1 is computed before x is written: its value is the old s + 1, not a new
    read of s plus one."""
    def f(x):
        s = x[0]
        t = s + 1
        a = torch.zeros(s)  # (__index__ reads t as s's read plus one)
        x.add_(5)
        return a, torch.zeros(t), torch.zeros(s)

    ep = st.export(f, (torch.tensor([2, 1]),))
    for xs in ([2, 1], [0, 3], [4, 4]):
        want = f(torch.tensor(xs))
        got = ep.module()(torch.tensor(xs))
        assert [g.shape for g in got] == [w.shape for w in want], xs


def test_index_value_after_a_write_through_an_alias():
    def f(x):
        s = x[0]
        n = torch.ones(s)  # __index__: one read
        x[:1].add_(1)
        m = torch.ones(s)  # read again
        c = torch.tensor(3)
        k = torch.zeros(c // 1)  # a literal's value
        c.add_(x[1])  # written
        return n, m, k, torch.zeros(c // 1)

    ep = st.export(f, (torch.tensor([2, 1]),))
    for xs in ([2, 1], [0, 3], [5, 0]):
        want = f(torch.tensor(xs))
        got = ep.module()(torch.tensor(xs))
        assert [g.shape for g in got] == [w.shape for w in want], xs


def test_masks_numbered_by_value_after_writes():
    def f(x, y):
        m = x > 1
        x.view(-1).add_(1)  # x > 1 now differs
        m2 = x > 1
        k = y > 1
        k.logical_not_()  # the first `y > 1` is written: another count than the second
        k2 = y > 1
        return y[m], y[m2], x[k], x[k2]

    ep = st.export(f, (torch.tensor([0, 1, 2, 3]), torch.tensor([3, 0, 1, 2])))
    for xs, ys in (([0, 1, 2, 3], [3, 0, 1, 2]), ([1, 1, 1, 1], [2, 2, 0, 0]),
                   ([5, 0, 0, 1], [0, 0, 0, 9])):
        want = f(torch.tensor(xs), torch.tensor(ys))
        got = ep.module()(torch.tensor(xs), torch.tensor(ys))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
    sizes = [str(n.meta["val"].shape[0]) for n in ep.graph.nodes
             if n.op == "call_function" and "index" in str(n.target)]
    assert len(set(sizes)) == 4, sizes  # four masks, four counts (no two shared)


# -- writes that cannot reach the tensor: the same symbol -----------------------------------
def _item_nodes(ep):
    return [n for n in ep.graph.nodes if n.target is torch.ops.aten.item.default]


UNRELATED = {
    "fresh": lambda x, y, m: (y * 2).add_(1),
    "clone_of_x": lambda x, y, m: x.clone().add_(1),
    "fresh_view": lambda x, y, m: (y + 0)[1:].mul_(3),
    "other_buffer": lambda x, y, m: m.other.mul_(2),
    "other_buffer_setitem": lambda x, y, m: m.other.__setitem__(0, 5),
}


@pytest.mark.parametrize("name", list(UNRELATED))
def test_a_write_that_cannot_reach_the_tensor_keeps_its_symbol(name):
    write = UNRELATED[name]

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.tensor(2))
            self.register_buffer("other", torch.zeros(3))

        def forward(self, x, y):
            a = x.item()
            n = self.count.item()
            write(x, y, self)
            b = x.item()
            k = self.count.item()
            torch._check(a <= 5)  # a fact about the first read holds for the second
            return torch.zeros(b).new_zeros(5 - b), torch.zeros(n), torch.zeros(k)

    ep = st.export(M(), (torch.tensor(3), torch.tensor([1, 2])))
    assert len(_item_nodes(ep)) == 2, name  # x read once, count read once
    eager = M()
    for v in (3, 0, 5):
        want = eager(torch.tensor(v), torch.tensor([1, 2]))
        got = ep.module()(torch.tensor(v), torch.tensor([1, 2]))
        assert [g.shape for g in got] == [w.shape for w in want]


# -- a buffer (or a constant written in place) given where torch reads an int -----------------
AS_SIZE = {
    "zeros": lambda m, x: torch.zeros(m.count),
    "new_zeros": lambda m, x: x.new_zeros(m.count, 2),
    "full": lambda m, x: torch.full((2,), m.count),
    "narrow": lambda m, x: x.narrow(0, 0, m.count),
    "repeat": lambda m, x: x.repeat(m.count),
    "slice": lambda m, x: x[:m.count] * 1,
}


@pytest.mark.parametrize("name", list(AS_SIZE))
def test_a_buffer_given_for_a_size_is_read_when_the_program_runs(name):
    """torch's argument parser reads a real tensor given for an int itself: a buffer the
    program writes (a step counter) was read once, at export, and fixed in the graph."""
    use = AS_SIZE[name]

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.tensor(1))

        def forward(self, x):
            self.count.add_(1)
            return use(self, x)

    ep = st.export(M(), (torch.arange(6),))
    mod, eager = ep.module(), M()
    for _ in range(3):  # the count grows call after call
        torch.testing.assert_close(mod(torch.arange(6)), eager(torch.arange(6)))


def test_a_constant_written_in_place_given_for_a_size():
    def f(x):
        c = torch.tensor(3)
        c.add_(x[1])
        return torch.zeros(c)

    ep = st.export(f, (torch.tensor([2, 1]),))
    for xs in ([2, 1], [0, 3], [5, 0]):
        assert ep.module()(torch.tensor(xs)).shape == f(torch.tensor(xs)).shape, xs


def test_data_assignment_makes_a_traced_tensor_share_the_new_memory():
    """``w.data = v``: later writes to v show in w (and the reverse); a view of w taken
    before keeps w's old memory.  (It was a copy into w's memory: both differed.)"""
    def f(x):
        w = x * 1
        u = w[1:]
        v = x * 2
        w.data = v
        v.add_(1)
        w.mul_(3)
        return w * 1, u * 1, v * 1

    ep = st.export(f, (torch.arange(3.0),), dynamic_shapes=({0: st.Dim("n", min=1)},))
    for x in (torch.arange(3.0), torch.randn(4), torch.randn(1)):
        for g, w in zip(ep.module()(x), f(x.clone())):
            torch.testing.assert_close(g, w)


def test_a_write_inside_a_branch_to_a_tensor_it_made_keeps_the_outer_symbol():
    def f(x, p):
        s = x[0]
        a = s.item()

        def yes(t):
            u = t * 1
            u.add_(1)  # the branch's own tensor
            v = t[1:] * 2
            v[0] = 7
            return u + v.sum()

        r = torch.cond(p.sum() > 0, yes, lambda t: t - 1, (x,))
        c = s.item()
        return torch.zeros(a), torch.zeros(c), r

    ep = st.export(f, (torch.tensor([2, 1]), torch.tensor([1.0])))
    assert len(_item_nodes(ep)) == 1
    for xs, p in (([2, 1], 1.0), ([0, 4], -1.0), ([3, 3], 2.0)):
        got = ep.module()(torch.tensor(xs), torch.tensor([p]))
        want = f(torch.tensor(xs), torch.tensor([p]))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


# -- a static cache's bound (OPT with transformers' StaticCache, issue 22) --------------------
def test_a_full_static_cache_fails_its_check_before_the_write():
    ep = st.export(StaticCache(), (torch.randn(1, 3, 2),),
                   dynamic_shapes=({1: st.Dim("n", min=1)},))
    assert "s0 + u0 <= 8" in str(ep)  # u0: the length, s0: the new tokens
    fills_as_eager_and_refuses_when_full(ep, StaticCache())
