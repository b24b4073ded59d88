"""Memory layout: branches on is_contiguous()/stride() are answered only where the layout
is known, the inputs' layout is then checked at run time, and a view's layout is refused
with a fix instead of guessed."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim


class Branch(torch.nn.Module):
    def forward(self, x):
        return x * 2 if x.is_contiguous() else x * 3


def test_branch_on_input_contiguity_requires_contiguous_inputs():
    m = Branch()
    ep = st.export(m, (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    x = torch.randn(5, 4)
    torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(torch.randn(4, 5).t())
    msg = str(info.value)
    assert "contiguous" in msg and "x.contiguous()" in msg and "test_layout.py" in msg


def test_program_without_layout_questions_accepts_any_layout():
    ep = st.export(lambda x: x * 2, (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    torch.testing.assert_close(ep.module()(x), x * 2)


def test_layout_of_a_view_is_refused_with_a_fix():
    def f(x):
        y = x.t()
        if not y.is_contiguous():
            y = y.contiguous() * 2
        return y

    with pytest.raises(st.UnsupportedOpError) as info:  # (x.t() is contiguous at a 1)
        st.export(f, (torch.randn(2, 3),), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))
    msg = str(info.value)
    assert "is_contiguous" in msg and ".contiguous()" in msg and "test_layout.py" in msg


def test_stride_of_a_view_is_exact_where_every_dim_is_at_least_two():
    """A view's strides are traced; ``stride()`` answers them where every dim of the view
    is known >= 2 (as torch.export does), and where a dim may be 1 by eager's rule for it
    (``small_strides.py``: ``x.t()`` of a row-major ``x``); an empty view, whose strides
    eager computes otherwise, is refused before running."""
    def f(x):
        return x * x.t().stride(1)

    ep = st.export(f, (torch.randn(2, 5),), dynamic_shapes=({1: Dim("b", min=2)},))
    for cols in (2, 9):
        x = torch.randn(2, cols)
        torch.testing.assert_close(ep.module()(x), f(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 1))
    ep = st.export(f, (torch.randn(2, 5),), dynamic_shapes=({1: Dim("b")},))
    for cols in (1, 2, 9):
        x = torch.randn(2, cols)
        torch.testing.assert_close(ep.module()(x), f(x))
    with pytest.raises(st.InputMismatchError):  # (b = 0: eager's stride there is 1)
        ep.module()(torch.randn(2, 0))


def test_layout_of_a_strided_slice_is_refused():
    with pytest.raises(st.UnsupportedOpError):  # (contiguous where the slice has 1 column)
        st.export(lambda x: x * x[:, ::2].is_contiguous(), (torch.randn(2, 6),),
                  dynamic_shapes=({1: Dim("b")},))


def test_layout_after_contiguous_and_compute_is_known():
    def f(x):
        y = x.transpose(0, 1).contiguous()
        z = (y + 1).view(-1, 2)
        s = z.stride(0)
        return z * s if z.is_contiguous() else z

    x = torch.randn(4, 6)
    ep = st.export(f, (x,), dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    for n in (2, 8):
        x2 = torch.randn(n, 6)
        torch.testing.assert_close(ep.module()(x2), f(x2))


def test_channels_last_question_on_contiguous_tensor():
    def f(x):
        y = x + 1
        return y * 2 if y.is_contiguous(memory_format=torch.channels_last) else y * 3

    ep = st.export(f, (torch.randn(2, 3, 4, 4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    x = torch.randn(5, 3, 4, 4)
    torch.testing.assert_close(ep.module()(x), f(x))
    ep1 = st.export(f, (torch.randn(2, 1, 4, 4),))  # C == 1: also channels-last contiguous
    x = torch.randn(2, 1, 4, 4)
    torch.testing.assert_close(ep1.module()(x), f(x))


def test_non_contiguous_example_input_has_unknown_layout():
    with pytest.raises(st.UnsupportedOpError):
        st.export(Branch(), (torch.randn(4, 3).t(),))
    # without a layout question it exports and runs on any layout
    ep = st.export(lambda x: x.sum(0), (torch.randn(4, 3).t(),))
    x = torch.randn(3, 4)
    torch.testing.assert_close(ep.module()(x), x.sum(0))


def test_layout_requirement_survives_save_and_load(tmp_path):
    ep = st.export(Branch(), (torch.randn(3, 4),))
    path = tmp_path / "p.st"
    st.save(ep, path)
    ep2 = st.load(path)
    with pytest.raises(st.InputMismatchError):
        ep2.module()(torch.randn(4, 3).t())
    x = torch.randn(3, 4)
    torch.testing.assert_close(ep2.module()(x), x * 2)


def test_negative_zero_constant_is_not_zero():
    class D(torch.nn.Module):
        def forward(self, x, s):
            return x / s

    ep = st.export(D(), (torch.ones(3), 0.0))
    torch.testing.assert_close(ep.module()(torch.ones(3), 0.0), torch.full((3,), float("inf")))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(3), -0.0)


def test_meta_device_input_is_rejected_before_running():
    ep = st.export(lambda x: x * 2, (torch.randn(3),))
    with pytest.raises(st.InputMismatchError, match="meta device"):
        ep.module()(torch.randn(3, device="meta"))


class VectorFromAView(torch.nn.Module):
    def forward(self, x):
        # a view's layout is not traced; what an op computes from it in at most one dim is
        # dense (stride 1), so its layout is known
        col = x[:, 1] * 2
        row = x[0] + 1
        if col.is_contiguous() and row.is_contiguous():
            return col.sum() + row.sum()
        return x.sum()


def test_a_vector_computed_from_a_view_has_a_known_layout():
    m = VectorFromAView()
    ep = st.export(m, (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO}})
    for shape in ((5, 2), (1, 3), (2, 7)):
        x = torch.randn(*shape)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 3, 4))
    with pytest.raises(st.UnsupportedOpError, match="contiguous"):  # a 2-d result: unknown
        st.export(lambda x: (x.t() * 2).is_contiguous() and x, (torch.randn(3, 4),),
                  dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))


def test_a_matrix_product_of_views_has_a_known_layout():
    """mm / addmm / bmm write a new row-major result whatever their operands' layout (the
    decomposed linear of a while_loop body, permute + addmm, stays a contiguous carry)."""
    def f(x, y):
        z = torch.mm(x.t(), y)
        b = torch.bmm(x.t().unsqueeze(0), y.unsqueeze(0))
        return z * 2 if z.is_contiguous() and b.is_contiguous() else z

    ep = st.export(f, (torch.randn(3, 4), torch.randn(3, 5)),
                   dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO}, {0: Dim.AUTO, 1: Dim.AUTO}))
    for k, m, n in ((1, 2, 3), (4, 1, 1), (2, 6, 2)):
        x, y = torch.randn(k, m), torch.randn(k, n)
        torch.testing.assert_close(ep.module()(x, y), f(x, y))


def test_view_of_a_computed_strided_tensor_is_refused_as_eager_raises():
    """Elementwise ops, clone and *_like keep a strided operand's layout in eager, so
    ``(x.t() * 2).view(-1)`` raises there like ``x.t().view(-1)``: refused at export (before,
    exported, and every call raised); where the dims can be merged it follows eager."""
    refused = [lambda x: (x.t() * 2).view(-1), lambda x: torch.relu(x[::2].t()).view(-1),
               lambda x: x.t().clone().view(-1), lambda x: torch.zeros_like(x.t()).view(-1),
               lambda x: x.t().sort(0).values.view(-1), lambda x: (x.t() + x.t()).view(-1)]
    spec = {"x": {0: Dim.AUTO, 1: Dim.AUTO}}
    for f in refused:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            f(torch.randn(3, 4))
        with pytest.raises(st.ExportError, match="view size is not compatible"):
            st.export(f, (torch.randn(3, 4),), dynamic_shapes=spec)
    ok = [lambda x: (x.t() * 2).reshape(-1), lambda x: x.t().sum(0).view(-1),
          lambda x: (x.t() * 2).view(x.shape[1], x.shape[0]),
          lambda x: x.t().clone(memory_format=torch.contiguous_format).view(-1)]
    for f in ok:
        ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes=spec)
        for shape in ((3, 4), (1, 5), (2, 1), (0, 3)):
            x = torch.randn(*shape)
            torch.testing.assert_close(ep.module()(x), f(x))


@pytest.mark.parametrize("op", [
    lambda x: torch.einsum("ijk->kji", x), lambda x: (x > 0).nonzero(),
    lambda x: x.rot90(1, (1, 2)), lambda x: torch.fft.rfft(x, dim=1).abs(),
    lambda x: torch.argwhere(x > 0)], ids=["einsum", "nonzero", "rot90", "rfft", "argwhere"])
def test_ops_with_their_own_strides_have_an_unknown_layout(op):
    """Not views, yet eager's results are strided (einsum and rot90 permute, nonzero writes
    its (n, ndim) result column by column, FFTs permute): asked for their layout, the
    program is refused, never answered "contiguous" (before: exported, and the branch
    differed from eager's)."""
    def f(x):
        y = op(x)
        return y * 2 if y.is_contiguous() else y * 3

    x = torch.randn(3, 4, 5)
    assert not op(x).is_contiguous()
    with pytest.raises(st.UnsupportedOpError, match="contiguous"):
        st.export(f, (x,))


class _StateLayout(torch.nn.Module):
    def __init__(self, b, use):
        super().__init__()
        self.register_buffer("b", b)
        self.use = use

    def forward(self, x):
        z = self.use(self.b)
        return x + (2 if z.is_contiguous() else 3)


_USES = [lambda b: b * 2, lambda b: b.unsqueeze(0), lambda b: b + b.sum()]


@pytest.mark.parametrize("use", _USES, ids=["mul", "unsqueeze", "add"])
def test_strided_model_state_has_an_unknown_layout(use):
    """A buffer that is a transpose: ops on it follow its layout in eager, so their layout
    is asked of a tensor of unknown layout and refused (before: the real tensor counted
    as contiguous, and a contiguous buffer of the same shape traced first had its answer
    replayed: the branch differed from eager's)."""
    x = torch.randn(3)
    plain = _StateLayout(torch.randn(3, 3), use)
    torch.testing.assert_close(st.export(plain, (x,)).module()(x), plain(x))
    strided = _StateLayout(torch.randn(3, 3).t(), use)
    assert not use(strided.b).is_contiguous()
    if use is _USES[1]:  # (a view of the real tensor: its strides are not derived)
        with pytest.raises(st.UnsupportedOpError, match="contiguous"):
            st.export(strided, (x,))
    else:  # (computed from the tensor's own strides, as eager's kernel allocates)
        torch.testing.assert_close(st.export(strided, (x,)).module()(x), strided(x))


def test_a_weight_with_channels_last_strides_has_an_unknown_layout():
    """A 1x1 conv weight converted to channels_last is contiguous to is_contiguous(), yet
    eager's conv then gives a channels-last output: its layout is not known."""
    class C(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            y = self.c(x)
            return y * 2 if y.is_contiguous() else y * 3

    m = C().eval()
    m.c.to(memory_format=torch.channels_last)
    x = torch.randn(1, 3, 5, 5)
    assert m.c.weight.is_contiguous() and not m.c(x).is_contiguous()
    with pytest.raises(st.UnsupportedOpError, match="contiguous"):
        st.export(m, (x,))


@pytest.mark.slow   # (the first computed op on meta tensors imports torch's meta kernels)
def test_view_of_a_computed_strided_tensor_of_a_large_example_is_refused():
    """A large example replays on meta tensors (small ones on CPU zeros): the same
    refusal."""
    def f(x):
        return (x.t() * 2).view(-1)

    with pytest.raises(st.ExportError, match="view size is not compatible"):
        st.export(f, (torch.randn(300, 400),), dynamic_shapes={"x": {0: Dim.AUTO}})



@pytest.mark.slow   # (the replay on meta tensors imports torch's meta kernels)
def test_a_small_view_replayed_from_a_large_tensor_replays_on_meta(monkeypatch):
    """The small ``(x.t() * w[:, :4].t()).view(-1)`` replays from ``w`` (90,000 elements): the
    whole replay runs on meta tensors, no CPU tensor of ``w``'s size (a transformer's
    projection views replayed from 4096 x 4096 weights: ~20 ms each), the same refusal."""
    def f(x, w):
        return (x.t() * w[:, :4].t()).view(-1)

    x, w = torch.randn(3, 4), torch.randn(3, 30000)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        f(x, w)
    made, empty = [], torch.empty

    def counting(*size, **kwargs):
        out = empty(*size, **kwargs)
        if out.device.type == "cpu":
            made.append(out.numel())
        return out

    monkeypatch.setattr(torch, "empty", counting)
    with pytest.raises(st.ExportError, match="view size is not compatible"):
        st.export(f, (x, w), dynamic_shapes={"x": {0: Dim.AUTO}, "w": None})
    assert 12 in made and max(made) <= 1 << 16, made  # (x's: the replay did start on CPU)


def test_a_cast_keeps_its_operands_layout():
    """``x.to(dtype)`` is ``x`` itself or a copy with ``x``'s strides (preserve_format): a
    contiguous input's cast answers layout questions, a view's is still refused, and
    ``x.t().float().view(-1)`` is refused at export as eager raises."""
    def strides(x):
        return torch.tensor(x.double().stride()) + x.float().is_contiguous()

    ep = st.export(strides, (torch.randn(3, 4),), dynamic_shapes={"x": {0: Dim.AUTO}})
    for n in (0, 1, 2, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), strides(x))
    with pytest.raises(st.ExportError, match="layout"):
        st.export(lambda x: x.t().double().stride(0), (torch.randn(3, 4),))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.randn(3, 4).t().float().view(-1)
    with pytest.raises(st.ExportError, match="view size is not compatible"):
        st.export(lambda x: x.t().float().view(-1), (torch.randn(3, 4),),
                  dynamic_shapes={"x": {0: Dim.AUTO}})

# -- strides of dims of size 0 / 1 (is_contiguous() ignores them; stride() returns them) ---

def _odd(shape, strides):
    """A tensor contiguous to is_contiguous() whose dims of size 0 / 1 carry odd strides."""
    return torch.empty_strided(shape, strides).copy_(torch.randn(shape))


def test_stride_read_rejects_inputs_with_odd_strides_on_size_one_dims():
    """`x.stride()` of a (3, 1) input: eager returns the size-1 dim's own stride; an input
    that is_contiguous() with stride 7 there was accepted and got the traced 1."""
    def f(x):
        return x * x.stride(1) + x.stride(0)

    ep = st.export(f, (torch.randn(3, 1),), dynamic_shapes={"x": {0: Dim("n", max=8)}})
    odd = _odd((3, 1), (1, 7))
    assert odd.is_contiguous() and odd.stride() == (1, 7)
    with pytest.raises(st.InputMismatchError, match=r"row-major strides \(1, 1\)"):
        ep.module()(odd)
    x = torch.randn(5, 1)
    torch.testing.assert_close(ep.module()(x), f(x))
    # an odd example: its strides are not traced, stride() is refused with the fix
    with pytest.raises(st.UnsupportedOpError, match="size 0 or 1 may carry any stride"):
        st.export(f, (odd,))
    # is_contiguous() alone does not depend on those strides: such inputs stay accepted
    ep2 = st.export(Branch(), (torch.randn(3, 1),))
    torch.testing.assert_close(ep2.module()(odd), Branch()(odd))


def test_stride_of_contiguous_of_a_view_with_a_size_one_dim_is_refused():
    """`x.t().contiguous()` is `x.t()` itself when that is contiguous (a dim of size 1):
    its strides are the view's, not row-major."""
    def f(x):
        return x * x.t().contiguous().stride(1)

    x = torch.randn(1, 3)
    assert f(x).flatten()[0] == x[0, 0] * 3   # eager: stride 3, not 1
    with pytest.raises(st.UnsupportedOpError, match="size 0 or 1 may carry any stride"):
        st.export(f, (x,))
    # dims known >= 2: contiguous() gives row-major strides either way
    ep = st.export(f, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("n", min=2)}})
    x = torch.randn(4, 3)
    torch.testing.assert_close(ep.module()(x), f(x))


def test_view_of_a_computed_transposed_buffer_is_refused_at_export():
    """`(self.b_t * 2).view(-1)` of a buffer stored transposed: eager raises on every call,
    so the export does, with eager's message (it exported and raised at each call)."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b_t", torch.randn(3, 4).t())

        def forward(self, x):
            return (self.b_t * 2).view(-1) + x.sum()

    with pytest.raises(RuntimeError, match="view size is not compatible"):
        M()(torch.randn(2))
    with pytest.raises(st.ExportError, match="view size is not compatible"):
        st.export(M(), (torch.randn(2),))


def test_storage_offset_is_checked_only_where_the_program_reads_it():
    """is_contiguous() ignores the storage offset: a contiguous input at an offset passes
    (it was rejected, an example given so too); storage_offset() answers 0 for inputs of
    offset 0 only."""
    def off(x):
        return x * (x.storage_offset() + 1)

    shifted = torch.randn(7)[1:].view(2, 3)
    assert shifted.is_contiguous() and shifted.storage_offset() == 1
    ep = st.export(Branch(), (shifted,))
    torch.testing.assert_close(ep.module()(shifted), Branch()(shifted))
    ep = st.export(off, (torch.randn(2, 3),))
    with pytest.raises(st.InputMismatchError, match="storage offset 0"):
        ep.module()(shifted)
    with pytest.raises(st.UnsupportedOpError, match="storage offset may be any"):
        st.export(off, (shifted,))


def test_stride_of_a_computed_vector_that_may_have_one_element_is_refused():
    """``flip`` allocates like its operand: a dense operand's stride stays on a dim of
    size 1 (``y[::2]`` of one element has stride 4 here, and so has its flip), so a
    one-dim result of a strided input is row-major only where its size is >= 2 (the
    program answered 1 and scaled by it where eager scaled by 4; fuzz seed 292)."""
    def f(y):
        v = y[::2].flip(0)
        return v * v.contiguous().stride(0)

    y1 = torch.empty(4)[::2].copy_(torch.tensor([1.0, 2.0]))[:1]  # 1 element, stride 2
    assert f(y1).item() == 4.0  # eager: stride 4
    step = torch.empty(6)[::2].copy_(torch.arange(3.0))
    with pytest.raises(st.UnsupportedOpError, match="size 0 or 1 may carry any stride"):
        st.export(f, (step,), dynamic_shapes=({0: Dim.AUTO},))
    # a size known >= 3 (two elements after the step): row-major whatever y's layout
    ep = st.export(f, (step,), dynamic_shapes=({0: Dim("n", min=3)},))
    for n in (3, 4, 7):
        y = torch.empty(2 * n)[::2].copy_(torch.randn(n))
        torch.testing.assert_close(ep.module()(y), f(y))


def test_view_as_is_checked_as_the_view_it_is():
    # x.view_as(other) is x.view(other.size()): eager raises "view size is not compatible"
    # where the strides do not fit, and inside a `try` runs the except side there; the
    # program used to record view_as unchecked and raise at run time instead
    def in_try(x):
        try:
            return x.view_as(torch.empty(4, 2))
        except RuntimeError:
            return x.reshape(4, 2) * 2

    def plain(x):
        return x.view_as(torch.empty(4, 2))

    fits = torch.randn(2, 2, 4)[:, :, :2]    # strides (8, 4, 1): dims 0 and 1 merge
    raises = torch.randn(2, 4, 2)[:, :2, :]  # strides (8, 2, 1): they do not
    torch.testing.assert_close(in_try(raises), raises.reshape(4, 2) * 2)
    for fn in (in_try, plain):
        with pytest.raises(st.OpShapeError, match="view size is not compatible"):
            st.export(fn, (raises,))
    with pytest.raises(st.OpShapeError, match="inside a `try` block"):
        st.export(in_try, (fits,))
    ep = st.export(plain, (fits,))
    torch.testing.assert_close(ep.module()(fits), plain(fits))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 2, 2))

    def transposed_in_try(x):  # dynamic sizes: the fit at (4, 1) says nothing of (2, 2)
        v = x.t()
        try:
            return v.view_as(torch.empty(v.numel()))
        except RuntimeError:
            return v.reshape(-1) * 2

    with pytest.raises(st.OpShapeError, match="inside a `try` block"):
        st.export(transposed_in_try, (torch.randn(4, 1),),
                  dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))


def test_view_as_another_element_size_needs_a_last_stride_of_one():
    # eager's x.view(dtype) to another element size requires x.stride(-1) == 1: a
    # transposed tensor raises there, and inside a `try` eager runs the except side
    def in_try(x):
        v = x.t()
        try:
            return v.view(torch.int16).float()
        except RuntimeError:
            return v.reshape(-1) * 2

    def plain(x):
        return x.t().view(torch.int16).float()

    def contiguous_in_try(x):
        try:
            return x.view(torch.int16).float()
        except RuntimeError:
            return x * 2

    x = torch.randn(4, 6)
    torch.testing.assert_close(in_try(x), x.t().reshape(-1) * 2)
    for fn in (in_try, plain):
        with pytest.raises(st.OpShapeError, match=r"stride\(-1\) must be 1"):
            st.export(fn, (x,))
    spec = ({0: Dim("a"), 1: Dim("b")},)
    # at (4, 1) the transpose's last stride is 1 (eager's view fits); at (2, 2) it is not
    with pytest.raises(st.OpShapeError, match="inside a `try` block"):
        st.export(in_try, (torch.randn(4, 1),), dynamic_shapes=spec)
    ep = st.export(plain, (torch.randn(4, 1),), dynamic_shapes=spec)
    for s in [(1, 1), (5, 1), (0, 1)]:
        y = torch.randn(*s)
        torch.testing.assert_close(ep.module()(y), plain(y), equal_nan=True)
    with pytest.raises(RuntimeError, match=r"stride\(-1\) must be 1"):
        ep.module()(torch.randn(2, 2))
    ep = st.export(contiguous_in_try, (x,), dynamic_shapes=spec)  # (row-major: no check)
    for s in [(4, 6), (1, 2), (0, 4)]:
        y = torch.randn(*s)
        torch.testing.assert_close(ep.module()(y), contiguous_in_try(y), equal_nan=True)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(4, 6, 1))


def _view_in_try(x):
    try:
        return x.view(-1) * 2
    except RuntimeError:
        return x.reshape(-1) + 1


def _view_plain(x):
    return x.view(-1) * 2


@pytest.mark.parametrize("plain_first", [False, True])
def test_view_of_a_contiguous_input_inside_try_requires_contiguous_inputs(plain_first):
    # traced on a contiguous input, x.view(-1) fits; on a transposed one eager's view raises
    # and the `try` runs the except side: the program used to accept such an input and
    # raise inside its view. (plain_first: the same view traced outside a `try` first, so
    # that the second export replays it, memo.py)
    spec = ({0: Dim("a"), 1: Dim("b")},)
    if plain_first:
        st.export(_view_plain, (torch.randn(3, 4),), dynamic_shapes=spec)
    ep = st.export(_view_in_try, (torch.randn(3, 4),), dynamic_shapes=spec)
    for s in [(3, 4), (5, 2), (1, 1), (0, 3), (2, 0)]:
        y = torch.randn(*s)
        torch.testing.assert_close(ep.module()(y), _view_in_try(y))
    t = torch.randn(4, 3).t()
    torch.testing.assert_close(_view_in_try(t), t.reshape(-1) + 1)
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(t)
    msg = str(info.value)
    assert "x: expected a contiguous tensor" in msg and "x.contiguous()" in msg
    assert "x.view(-1)" in msg
    torch.testing.assert_close(ep.module()(t.contiguous()), _view_in_try(t.contiguous()))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 4, 1))


def test_view_of_a_contiguous_input_outside_try_keeps_any_layout():
    # without a `try` eager raises where the program's view raises: no layout requirement
    spec = ({0: Dim("a"), 1: Dim("b")},)
    st.export(_view_in_try, (torch.randn(3, 4),), dynamic_shapes=spec)  # (fills memo.py)
    ep = st.export(_view_plain, (torch.randn(3, 4),), dynamic_shapes=spec)
    fits = torch.randn(2, 8)[:, :4]  # (rows apart: view(-1) merges them only when stride fits)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        _view_plain(fits)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        ep.module()(fits)
    y = torch.randn(4, 3).t()[:1]  # (one row: any strides view)
    torch.testing.assert_close(ep.module()(y), _view_plain(y))


@pytest.mark.parametrize("plain_first", [False, True])
def test_view_as_and_dtype_view_of_a_contiguous_input_inside_try(plain_first):
    def as_in_try(x, y):
        try:
            return x.view_as(y) * 2
        except RuntimeError:
            return x.reshape_as(y) + 1

    def as_plain(x, y):
        return x.view_as(y) * 2

    def dtype_in_try(x):
        try:
            return x.view(torch.float32) * 2
        except RuntimeError:
            return x.clone().view(torch.float32) + 1

    def dtype_plain(x):
        return x.view(torch.float32) * 2

    if plain_first:
        st.export(as_plain, (torch.randn(3, 4), torch.randn(12)))
        st.export(dtype_plain, (torch.zeros(3, 4, dtype=torch.int16),))
    ep = st.export(as_in_try, (torch.randn(3, 4), torch.randn(12)))
    t, y = torch.randn(4, 3).t(), torch.randn(12)
    with pytest.raises(st.InputMismatchError, match="x.contiguous()"):
        ep.module()(t, y)
    torch.testing.assert_close(ep.module()(t.contiguous(), y), as_in_try(t.contiguous(), y))
    # int16 -> float32 needs an even storage offset: a contiguous slice at offset 1 breaks it
    ep = st.export(dtype_in_try, (torch.zeros(3, 4, dtype=torch.int16),))
    odd = torch.zeros(13, dtype=torch.int16)[1:].view(3, 4)
    torch.testing.assert_close(dtype_in_try(odd), odd.clone().view(torch.float32) + 1)
    with pytest.raises(st.InputMismatchError, match="storage offset 0"):
        ep.module()(odd)
    x = torch.arange(12, dtype=torch.int16).view(3, 4)
    torch.testing.assert_close(ep.module()(x), dtype_in_try(x))


def test_view_in_try_that_fits_any_layout_keeps_any_layout():
    # a view that only splits dims fits any strides; one of a tensor made contiguous fits
    # whatever the input's strides: neither requires a layout of the input
    def split(x):
        try:
            return x.view(2, 2, -1) * 2
        except RuntimeError:
            return x + 1

    def made_contiguous(x):
        try:
            return (x * 2).contiguous().view(-1)
        except RuntimeError:
            return x.reshape(-1) + 1

    for fn in (split, made_contiguous, split):  # (split twice: its replay, memo.py)
        ep = st.export(fn, (torch.randn(4, 6),))
        t = torch.randn(6, 4).t()
        torch.testing.assert_close(ep.module()(t), fn(t))
