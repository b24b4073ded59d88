"""The refusal classes the fuzzer's refusal table showed (benchmarks/fuzz.py), fixed in the
library, each tested as a class through the public API: numerics against eager at other
sizes (0 and 1 included) and out-of-space inputs rejected before running."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

import safetrace as st
from safetrace.errors import UnsupportedConstruct
from safetrace import Dim
from tests.helpers import matches_eager, rejects


def _export_and_run(fn, example, spec, sizes, save=False):
    """Export, then compare with eager on inputs whose dim 0 takes each of `sizes`."""
    ep = st.export(fn, example, dynamic_shapes=spec)
    for n in sizes:
        args = tuple(torch.randn(n, *a.shape[1:]) for a in example)
        matches_eager(ep, fn, args)
    if save:
        buf = io.BytesIO()
        st.save(ep, buf)
        loaded = st.load(buf.getvalue())
        args = tuple(torch.randn(sizes[-1], *a.shape[1:]) for a in example)
        torch.testing.assert_close(loaded.module()(*args), ep.module()(*args))
    return ep


# -- len(x) keeps a dynamic first size symbolic (it pinned the size to the example) ----------

@pytest.mark.parametrize("fn", [
    lambda x: torch.eye(len(x)),
    lambda x: torch.zeros(len(x), 3) + x.sum(),
    lambda x: torch.arange(len(x) * 2).reshape(len(x), 2),
    lambda x: torch.linspace(0, 1, len(x)),
    lambda x: torch.ones(int(len(x) == x.shape[0]) + 1),
    lambda x: torch.full((len(x),), 2.0) * x[:, 0],
    lambda x: x.reshape(len(x) * 3),
    lambda x: torch.ones(len(x) // 2),
], ids=["eye", "zeros", "arange", "linspace", "int_of_eq", "full", "reshape", "floordiv"])
def test_len_of_a_dynamic_dim_stays_symbolic(fn):
    ep = _export_and_run(fn, (torch.randn(5, 3),), ({0: Dim("n", max=9)},), (0, 1, 2, 7, 9),
                         save=True)
    rejects(ep, (torch.randn(10, 3),))            # out of the declared range
    rejects(ep, (torch.randn(4, 2),))             # a static dim differs


def test_len_in_control_flow_guards_like_shape():
    def f(x):
        if len(x) > 3:
            return x * 2
        return x - 1

    ep = _export_and_run(f, (torch.randn(5, 2),), ({0: Dim("n", min=4)},), (4, 6, 20))
    rejects(ep, (torch.randn(3, 2),))


def test_len_still_works_on_other_objects_and_is_restored():
    def f(x):
        return x * len([1, 2, 3]) + len((x, x)) + len("ab")

    _export_and_run(f, (torch.randn(4),), ({0: Dim("n")},), (0, 1, 5))
    import builtins
    assert builtins.len is len and len([1]) == 1     # the real len is back


def test_range_of_len_guards_the_size():
    def f(x):
        return torch.stack([x[i] for i in range(len(x))])

    # a Python loop needs a concrete count: the size is specialized, as with x.shape[0]
    with pytest.raises(st.ConstraintViolationError, match="specialized"):
        st.export(f, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("n")},))


# -- torch.broadcast_shapes: no needless `n != 1` guard ---------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: x.new_zeros(torch.broadcast_shapes(x.shape, (4,))) + x,
    lambda x: torch.zeros(torch.broadcast_shapes((4,), x.shape)) + x,
    lambda x: torch.zeros(torch.broadcast_shapes(x.shape, (1, 4), 4)),
    lambda x: x.expand(torch.broadcast_shapes(x.shape, (3, 1, 1))).sum(0),
], ids=["same_rank", "swapped", "three", "higher_rank"])
def test_broadcast_shapes_keeps_size_one_admitted(fn):
    ep = _export_and_run(fn, (torch.randn(3, 4),), ({0: Dim("n", max=8)},), (0, 1, 2, 8))
    rejects(ep, (torch.randn(9, 4),))


def test_broadcast_shapes_mismatch_is_still_an_error():
    with pytest.raises(st.ExportError):
        st.export(lambda x: torch.zeros(torch.broadcast_shapes(x.shape, (3,))),
                  (torch.randn(2, 4),))
    assert torch.broadcast_shapes((2, 1), (3,)) == torch.Size([2, 3])   # restored


# -- 0-d integer tensors made from literals carry their value ---------------------------------

def test_literal_tensor_arithmetic_as_a_size():
    def f(x):
        return x.view(torch.tensor(6) // 2, -1), x.reshape(torch.tensor(2) * 2, -1)

    ep = st.export(f, (torch.randn(12),))
    matches_eager(ep, f, (torch.randn(12),))
    rejects(ep, (torch.randn(10),))


@pytest.mark.parametrize("write", [lambda c: c.add_(2), lambda c: c.copy_(torch.tensor(8))],
                         ids=["add_", "copy_"])
def test_literal_tensor_written_in_place_is_read_at_run_time(write):
    def f(x):
        c = torch.tensor(6)
        write(c)                        # eager: c is 8 now (folding 6 // 2 was a wrong shape)
        return x.view(c // 2, -1)

    # the written constant is no known value: its size is read at run time (and checked);
    # each call starts from the constant as made (eager makes it anew: 8 every call)
    ep = st.export(f, (torch.randn(24),), dynamic_shapes=({0: Dim("n", max=64)},))
    for prog in (ep, ep.to_torch()):
        module = prog.module()
        for n in (24, 8, 0, 24):
            x = torch.randn(n)
            assert torch.equal(module(x), f(x))
    with pytest.raises(st.RuntimeAssertionError):
        ep.module()(torch.randn(6))


def test_literal_tensor_written_through_a_view_is_refused():
    def f(x):
        c = torch.tensor(6)
        c.view(()).add_(2)
        return x.view(c // 2, -1)

    # the view and the tensor are two folded constants, and a write to one while the other
    # is read is refused as such (tests/export/test_constant_aliases.py)
    with pytest.raises(UnsupportedConstruct):
        st.export(f, (torch.randn(24),))


def test_state_tensor_value_is_never_trusted():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k", torch.tensor(3))

        def forward(self, x):
            return x.view(self.k * 2, -1)

    # the buffer's value is read at run time, never folded: a module whose k is 2 views
    # as (4, 3), and a k that does not divide the size is refused by the run-time check
    for convert in (False, True):  # (one program each: a program's state is its own)
        ep = st.export(M(), (torch.randn(12),))
        module = (ep.to_torch() if convert else ep).module()
        x = torch.randn(12)
        assert module(x).shape == (6, 2)
        module.k.fill_(2)
        assert torch.equal(module(x), x.view(4, 3))
        module.k.fill_(5)
        with pytest.raises(Exception):
            module(x)


# -- pooling with stride=None, copy_ of a number, op packets (issue 15, item 8) ---------------

@pytest.mark.parametrize("fn", [
    lambda x: F.avg_pool1d(x, 2, stride=None),
    lambda x: F.avg_pool1d(x, 3, None, 1, True, False),
    lambda x: F.avg_pool2d(x[..., None].expand(-1, -1, -1, 4), 2, None),
    lambda x: F.avg_pool2d(x[..., None].expand(-1, -1, -1, 4), (2, 1), None, 0, False, True, 2),
    lambda x: F.max_pool1d(x, 2, None),
], ids=["avg1d_kw", "avg1d_pos", "avg2d_pos", "avg2d_divisor", "max1d_pos"])
def test_pooling_with_stride_none(fn):
    def f(x):
        return fn(x.transpose(0, 2))

    ep = _export_and_run(f, (torch.randn(8, 2, 1),), ({0: Dim("w", min=3, max=40)},),
                         (3, 4, 9, 40), save=True)
    rejects(ep, (torch.randn(2, 2, 1),))


def test_copy_of_a_number():
    def f(x):
        t = x.clone()
        t.copy_(2.0)
        u = x.clone()
        u.view(-1).copy_(3)
        w = x.long()
        w.copy_(True)
        return t, u, w

    ep = _export_and_run(f, (torch.randn(4, 2),), ({0: Dim("n")},), (0, 1, 6), save=True)
    rejects(ep, (torch.randn(4, 3),))


def test_op_packets_pick_their_overload():
    def f(x, y):
        return (torch.ops.aten.add(x, 1), torch.ops.aten.add(x, y), torch.ops.aten.mul(x, 2.5),
                torch.ops.aten.sum(x, [1]), torch.ops.aten.cat([x, y]),
                torch.ops.aten.slice(x, 0, 1), torch.ops.aten.view(x, [-1]))

    ep = _export_and_run(f, (torch.randn(3, 2), torch.randn(3, 2)),
                         ({0: Dim("n", min=1)}, {0: Dim("n", min=1)}), (1, 2, 7), save=True)
    rejects(ep, (torch.randn(3, 2), torch.randn(4, 2)))


# -- checks that are false at export, random-generator state ---------------------------------

def test_false_check_is_an_export_error_naming_the_check():
    def in_branch(x):
        def then(x):
            st.check(x.shape[0] < 0)
            return x + 1

        return torch.cond(x.shape[0] > 2, then, lambda x: x - 1, (x,))

    def after_guard(x):
        if x.shape[0] > 2:
            torch._check(x.shape[0] < 2)
        return x + 1

    def static(x):
        st.check(x.shape[1] == 5, "needs 5 columns")
        return x

    for fn in (in_branch, after_guard, static):
        with pytest.raises(st.ConstraintViolationError, match="test_refusal_classes.py:") as e:
            st.export(fn, (torch.randn(5, 3),), dynamic_shapes=({0: Dim("n")},))
        assert "check" in str(e.value) and "RuntimeAssertion" not in type(e.value).__name__
    assert "needs 5 columns" in str(e.value)


@pytest.mark.parametrize("body", [
    lambda: torch.manual_seed(torch.initial_seed()),
    lambda: torch.initial_seed(),
    lambda: torch.get_rng_state(),
    lambda: torch.random.set_rng_state(torch.random.get_rng_state()),
    lambda: torch.seed(),
], ids=["reseed_same", "initial_seed", "get_state", "set_state", "seed"])
def test_random_generator_state_in_forward_is_refused(body):
    def f(x):
        body()
        return x + torch.rand(3)

    torch.manual_seed(11)
    with pytest.raises(st.UnsupportedOpError, match="random generator"):
        st.export(f, (torch.zeros(3),))
    a = torch.rand(2)          # the generator is untouched and the functions are back
    torch.manual_seed(11)
    torch.get_rng_state()
    assert torch.equal(a, torch.rand(2)) and torch.initial_seed() == 11


def test_message_without_a_source_line_has_no_empty_backticks():
    src = "def f(x):\n    return x[:3] + torch.ones(3)\n"
    ns: dict = {"torch": torch}
    exec(compile(src, "<typed>", "exec"), ns)       # no file, no linecache entry
    with pytest.raises(st.ConstraintViolationError) as e:
        st.export(ns["f"], (torch.randn(5),), dynamic_shapes=({0: Dim("n", min=1)},),
                  max_splits=0)  # (by default: a size split, exporter/splits.py)
    msg = str(e.value)
    assert "``" not in msg and "(from <typed>:2)" in msg


# -- F.affine_grid: its `min(size) <= 0` compared the sizes with each other -------------------

@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_takes_batch_one(align):
    def f(x, theta):
        g = F.affine_grid(theta, x.size(), align_corners=align)
        return F.grid_sample(x, g, align_corners=align), g

    b = Dim("b", min=1, max=16)
    spec = ({0: b, 2: Dim("h", min=1, max=32), 3: Dim("w", min=1, max=32)}, {0: b})
    ep = st.export(f, (torch.randn(2, 1, 4, 5), torch.randn(2, 2, 3)), dynamic_shapes=spec)
    for n, h, w in ((1, 1, 1), (1, 3, 7), (5, 6, 2), (16, 32, 32)):
        matches_eager(ep, f, (torch.randn(n, 1, h, w), torch.randn(n, 2, 3)))
    rejects(ep, (torch.randn(17, 1, 4, 5), torch.randn(17, 2, 3)))
    rejects(ep, (torch.randn(2, 1, 4, 5), torch.randn(3, 2, 3)))


def test_affine_grid_refuses_a_batch_eager_refuses():
    def f(theta):
        return F.affine_grid(theta, [theta.shape[0], 1, 4, 4], align_corners=False)

    # eager raises for a 0 batch ("Expected non-zero, positive output size"): the program
    # refuses it before computing (a named Dim's size below 2, as torch's trace assumes)
    ep = st.export(f, (torch.randn(2, 2, 3),), dynamic_shapes=({0: Dim("b")},))
    for n in (1, 5):
        matches_eager(ep, f, (torch.randn(n, 2, 3),))
    with pytest.raises(ValueError, match="non-zero"):
        f(torch.randn(0, 2, 3))
    rejects(ep, (torch.randn(0, 2, 3),))


# -- masks computed twice the same way have one count ----------------------------------------

def test_same_mask_computed_twice_has_one_count():
    def f(x):
        z = torch.zeros_like(x)
        z[x > 1] = x[x > 1] * 10
        w = x.clone()
        w[(x > 0) & (x < 1)] = x[(x > 0) & (x < 1)].neg()
        return z, w

    ep = st.export(f, (torch.randn(3, 4) * 2,), dynamic_shapes=({0: Dim("b"), 1: Dim("t")},))
    for shape in ((0, 4), (1, 1), (5, 6), (2, 0)):
        matches_eager(ep, f, (torch.randn(*shape) * 2,))


def test_masks_separated_by_a_write_keep_separate_counts():
    def f(x):
        y = x.clone()
        a = y[y > 1]
        y.add_(1)                       # the second mask sees other values
        return torch.zeros(a.shape[0] + y[y > 1].shape[0])

    ep = st.export(f, (torch.randn(6) * 2,), dynamic_shapes=({0: Dim("n")},))
    for n in (0, 1, 9, 40):
        matches_eager(ep, f, (torch.randn(n) * 2,))


def test_random_masks_keep_separate_counts():
    def f(x):
        a = x[torch.rand(x.shape) > 0.5]
        return torch.zeros(a.shape[0] + x[torch.rand(x.shape) > 0.5].shape[0] * 10)

    ep = st.export(f, (torch.randn(6),), dynamic_shapes=({0: Dim("n")},))
    for n in (0, 1, 9, 40):
        x = torch.randn(n)
        torch.manual_seed(n)
        want = f(x)
        torch.manual_seed(n)
        assert ep.module()(x).shape == want.shape


# -- a bool of sizes in size arithmetic is an int (it pinned the other size) -------------------

@pytest.mark.parametrize("fn", [
    lambda x, y: torch.ones(x.shape[0] * (y.shape[0] > 2)),
    lambda x, y: torch.ones((x.shape[0] > 1) * x.shape[0] + 1),
    lambda x, y: torch.ones(1 + (y.shape[0] > 2) - (y.shape[0] > 3) + x.shape[0]),
], ids=["size_times_bool", "bool_times_size", "sum_of_bools"])
def test_bool_of_sizes_in_size_arithmetic(fn):
    spec = ({0: Dim("a", min=2, max=30)}, {0: Dim.DYNAMIC})
    ep = st.export(fn, (torch.randn(3), torch.randn(4)), dynamic_shapes=spec)
    for a in (2, 5, 30):
        matches_eager(ep, fn, (torch.randn(a), torch.randn(4)))
    rejects(ep, (torch.randn(31), torch.randn(4)))
