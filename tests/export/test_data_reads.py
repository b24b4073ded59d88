"""Reading float data while exporting: the error names the call and the user's line."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class FloatItem(torch.nn.Module):
    def forward(self, x):
        s = x.sum().item()  # the line the error must show
        return x * s


class FloatToList(torch.nn.Module):
    def forward(self, x):
        vals = x.tolist()  # the line the error must show
        return x + len(vals)


class ScalarToList(torch.nn.Module):
    def forward(self, x):
        v = x.sum().tolist()  # a 0-dim tensor's tolist() is a number
        return x * v


class IntToList(torch.nn.Module):
    def forward(self, x):
        a, b = x.tolist()
        return torch.zeros(a + b) if False else x * 2


def test_float_item_is_an_unbacked_float():
    """``x.sum().item()`` of a float tensor: a value the graph computes (issue 15 item 1)."""
    ep = st.export(FloatItem(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim.DYNAMIC}})
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        assert torch.allclose(ep.module()(x), FloatItem()(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 5))


@pytest.mark.parametrize("model", [FloatToList(), ScalarToList()])
def test_float_tolist_gives_unbacked_floats(model, tmp_path):
    """``.tolist()`` of a float tensor: one unbacked float per element (issue 15 item 1)."""
    static = isinstance(model, FloatToList)  # a list's length is a static size
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes=None if static else {"x": {1: st.Dim.DYNAMIC}})
    st.save(ep, tmp_path / "p.st")
    for prog in (ep, st.load(tmp_path / "p.st")):
        for n in (0, 1, 4, 7):
            x = torch.randn(3, n)
            if static and n != 4:
                with pytest.raises(st.InputMismatchError):
                    prog.module()(x)
                continue
            torch.testing.assert_close(prog.module()(x), model(x))


def test_complex_tolist_names_the_call_and_line():
    class ComplexToList(torch.nn.Module):
        def forward(self, x):
            vals = x.tolist()  # the line the error must show
            return x + len(vals)

    with pytest.raises(st.DataDependentError) as info:
        st.export(ComplexToList(), (torch.randn(3, 4, dtype=torch.complex64),))
    msg = str(info.value)
    assert msg.startswith(".tolist() of a tensor c64[")
    assert "test_data_reads.py:" in msg and "vals = x.tolist()" in msg and "Fix:" in msg


def test_int_tolist_still_traces():
    ep = st.export(IntToList(), (torch.tensor([1, 2]),))
    assert torch.equal(ep.module()(torch.tensor([3, 4])), torch.tensor([6, 8]))


class CacheLength(torch.nn.Module):
    """OPT's positions with a static cache: ``seq_length = past + n`` is a 0-d tensor, used
    as a size, and ``past`` as a slice start."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("past", torch.tensor(3))

    def forward(self, x):
        total = self.past + x.shape[1]
        mask = torch.ones(x.shape[0], total)
        positions = mask.cumsum(1)[:, self.past:]
        return x + positions


def test_a_sum_of_read_values_keeps_its_relation_and_a_read_start_is_checked():
    m = CacheLength()
    ep = st.export(m, (torch.randn(2, 5),),
                   dynamic_shapes={"x": {1: st.Dim("n", min=1, max=64)}})
    # `past + n` is read as past.item() + n: the slice has n columns, the add needs no check
    out = [n for n in ep.graph.nodes if n.target is torch.ops.aten.add.Tensor][-1]
    assert str(out.meta["val"].shape[1]) == "s0", out.meta["val"].shape
    for past, n in ((0, 1), (3, 5), (10, 64)):
        m.past.fill_(past)
        x = torch.randn(2, n)
        mod = ep.module()
        mod.past.fill_(past)
        torch.testing.assert_close(mod(x), m(x))
    # a negative start counts from the end in eager: not traced, refused at run time
    mod = ep.module()
    mod.past.fill_(-1)
    with pytest.raises(st.RuntimeAssertionError, match="counted from the start"):
        mod(torch.randn(2, 4))


class RangeOfBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.tensor(3))

    def forward(self, x):
        out = x
        for i in range(self.count):  # the line the error must show
            out = out + i
        return out


class RangeOfComputed(torch.nn.Module):
    def forward(self, x):
        return [x * i for i in range((x > 0).sum())]


@pytest.mark.parametrize("model", [RangeOfBuffer, RangeOfComputed])
def test_range_of_a_tensor_is_a_data_read(model):
    """``range(t)`` of a 0-d integer buffer (or a count computed from data): Python needs a
    real int there, and the value is data; a DataRead naming the line, never CPython's
    ``__index__ returned non-int`` TypeError."""
    with pytest.raises(st.ExportError) as info:
        st.export(model(), (torch.randn(4),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    err = info.value
    assert err.kind == "data-read" and "in range(" in str(err)
    assert "Python int attribute" in err.fix


class SizeOfBufferDim(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("d", torch.tensor(1))

    def forward(self, x):
        return x * x.size(self.d)


def test_size_of_a_dim_given_as_a_buffer_is_a_data_read():
    """``x.size(self.d)`` of a 0-d integer buffer: which size is data; a DataRead naming
    the line, not the internal "ge was called on a safetrace proxy outside of tracing"."""
    with pytest.raises(st.ExportError) as info:
        st.export(SizeOfBufferDim(), (torch.randn(5, 4),),
                  dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    err = info.value
    assert err.kind == "data-read" and "x.size(self.d)" in err.where.source
    assert "tensor i64[]" in err.cause and "`x.size(1)`" in err.fix


def test_size_of_a_dim_given_as_a_constant_tensor_exports():
    def f(x):
        return x * x.size(torch.tensor(1))

    ep = st.export(f, (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), f(x))


class SplitByBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("size", torch.tensor(2))

    def forward(self, x):
        return x.split(self.size)[0]


def test_split_by_a_0d_tensor_reads_it_as_eager_does():
    """``x.split(t)`` of a 0-d tensor: eager's int(t); a constant's value exports, a
    buffer's is a DataRead naming the line (was the "internal error: aten.split has no
    overload" refusal)."""
    def f(x):
        return x.split(torch.tensor(2))[0]

    dims = {"x": {0: st.Dim("n", min=2, max=64)}}
    ep = st.export(f, (torch.randn(5, 4),), dynamic_shapes=dims)
    for n in (2, 3, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), f(x))
    with pytest.raises(st.ExportError) as info:
        st.export(SplitByBuffer(), (torch.randn(5, 4),), dynamic_shapes=dims)
    assert info.value.kind == "data-read" and "x.split(self.size)" in info.value.where.source


def test_item_of_many_elements_says_how_to_get_one():
    """``x.item()`` of a tensor of 4*n elements: eager raises at every size; the refusal
    names the line and now also the fix (it had none)."""
    def f(x):
        return x * x.item()

    with pytest.raises(st.ExportError) as info:
        st.export(f, (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    err = info.value
    assert err.kind == "op-shape" and "x * x.item()" in err.where.source
    assert "`x.sum().item()`" in err.fix
