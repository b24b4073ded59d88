"""The special handlers (``safetrace/trace/handlers/``), one group per concern, and the
registry they share."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
import safetrace.trace.handlers  # noqa: F401  (registers them, as the tracer does)
from safetrace.trace.registry import HANDLERS, handles
from tests.helpers import matches_eager
from tests.trace.common import check, targets

T = torch.Tensor


def _x(n):
    return (torch.randn(n, 4),)


def _xy(n):
    return torch.randn(n, 4), torch.randn(n, 4)


# -- the registry -------------------------------------------------------------------------
def test_a_callable_has_one_handler():
    with pytest.raises(ValueError, match="has a handler already"):
        handles(torch.Tensor.item)(lambda tr, f, a, k: None)


def test_handlers_are_keyed_by_the_callables_torch_passes():
    for func in (T.shape.__get__, T.size, T.item, T.to, T.float, T.__getitem__,
                 T.T.__get__, T.data.__set__, torch.tensor, torch.full, torch.nonzero,
                 T.where, torch.split, T.split):
        assert func in HANDLERS, func


# -- metadata queries: answered without nodes ---------------------------------------------
METADATA = [
    ("shape", lambda x: x.new_zeros(x.shape)),
    ("size_dim", lambda x: x.new_zeros(x.size(0), x.size(-1))),
    ("dim_ndim", lambda x: x.new_zeros(x.dim(), x.ndim, x.ndimension())),
    ("numel", lambda x: x.new_zeros(x.numel(), x.nelement(), torch.numel(x))),
    ("len", lambda x: x.new_zeros(len(x.T))),
    ("dtype_device", lambda x: torch.zeros(2, dtype=x.dtype, device=x.device)),
    ("flags", lambda x: x.new_zeros(int(x.is_floating_point()) + int(x.is_complex())
                                    + int(x.is_signed()) + int(torch.is_floating_point(x)))),
    ("element_size", lambda x: x.new_zeros(x.element_size())),
    ("layout_queries", lambda x: x.new_zeros(x.stride(0), int(x.is_contiguous()),
                                             x.storage_offset() + 1)),
    ("never", lambda x: x.new_zeros(int(x.is_sparse) + int(x.requires_grad) + 2
                                    + int(x.is_quantized) + int(x.is_nested)
                                    + int(x.grad is None) + int(x.is_leaf))),
    ("device_kind", lambda x: x.new_zeros(int(x.is_cpu) + int(x.is_cuda) + x.get_device() + 2)),
    # (torchvision RAFT's make_coords_grid: torch.device(device) was an aten.device node)
    ("device_constructor", lambda x: torch.zeros(2, device=torch.device(x.device.type))),
]


@pytest.mark.parametrize("name,fn", METADATA, ids=[m[0] for m in METADATA])
def test_metadata_query_adds_no_node(name, fn):
    ep = check(fn, _x)
    assert all(t.startswith(("aten.new_zeros", "aten.zeros", "aten.sym_size", "aten.permute",
                             "<built-in"))
               or "operator" in t for t in targets(ep)), targets(ep)


def test_printing_a_proxy_shows_metadata_not_data():
    seen = []

    def f(x):
        seen.append((repr(x), str(x), f"{x}"))
        return x + 1

    st.export(f, (torch.randn(2, 3),))
    assert all(s.startswith("Proxy(f32[2, 3]") for s in seen[0])


# -- data reads -------------------------------------------------------------------------
@pytest.mark.parametrize("read", [bool, int, float, lambda t: t.numpy(),
                                  lambda t: 1.0 in t],
                         ids=["bool", "int", "float", "numpy", "contains"])
def test_reading_float_data_is_a_data_dependent_error(read):
    with pytest.raises(st.DataDependentError) as info:
        st.export(lambda x: read(x.sum()), (torch.randn(3),))
    assert "test_handlers.py" in str(info.value)


def test_float_tolist_is_an_unbacked_float():
    """A float tensor's .tolist() (issue 15 item 1): the graph computes with the values."""
    ep = st.export(lambda x: x * x.sum().tolist(), (torch.randn(3),))
    x = torch.randn(3)
    torch.testing.assert_close(ep.module()(x), x * x.sum().item())


def test_integer_item_and_tolist_are_unbacked_sizes():
    def f(x, m):
        n = m.sum().item()
        a, b = m[:2].tolist()
        return x[: n % 3 + 1], a + b

    ep = st.export(f, (torch.randn(5), torch.tensor([1, 0, 1, 1])))
    for m in (torch.tensor([1, 1, 0, 0]), torch.tensor([0, 0, 0, 0])):
        matches_eager(ep, f, (torch.randn(5), m))


def test_int_of_a_size_tensor_gives_its_value():
    """The user's ``int()`` (rewritten, trace/pycalls.py) gives the known value, a dynamic
    size too, as ``int(size)`` does (``Tensor.__int__`` itself must return a real int)."""
    check(lambda x: x.new_zeros(int(torch.tensor(x.shape[1])) + 1), _x)
    check(lambda x: x.new_zeros(int(torch.tensor(x.shape[0]))), _x)


# -- casts ----------------------------------------------------------------------------------
CASTS = [
    ("to_dtype", lambda x: x.to(torch.float64)),
    ("to_python_type", lambda x: x.to(float)),
    ("to_device", lambda x: x.to("cpu")),
    ("to_device_dtype", lambda x: x.to("cpu", torch.float16)),
    ("to_keywords", lambda x: x.to(dtype=torch.int32, copy=True)),
    ("to_other", lambda x: x.to(torch.ones(1, dtype=torch.int64))),
    ("cast_methods", lambda x: x.double() + x.half().float() + x.long() + x.int() + x.bool()),
    ("byte_char_short", lambda x: x.abs().byte() + x.char() + x.short()),
    ("bfloat16", lambda x: x.bfloat16()),
    ("type_dtype", lambda x: x.type(torch.int32)),
    ("cpu", lambda x: x.cpu() + 1),
]


@pytest.mark.parametrize("name,fn", CASTS, ids=[c[0] for c in CASTS])
def test_cast(name, fn):
    check(fn, _x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int8, torch.uint8,
                                   torch.bool, torch.complex64])
def test_type_without_a_dtype_names_the_tensor_type(dtype):
    names = []

    def f(x):
        names.append(x.type())
        return x

    x = torch.zeros(2, dtype=dtype)
    st.export(f, (x,))
    assert names == [x.type()]


# -- factories ------------------------------------------------------------------------------
FACTORIES = [
    ("tensor_constant", lambda x: x + torch.tensor([1.0, 2.0, 3.0, 4.0])),
    ("tensor_of_sizes", lambda x: x.sum() + torch.tensor([x.shape[0], 2]).sum()),
    ("tensor_of_a_tensor", lambda x: torch.tensor(x) * 2),
    ("as_tensor_cast", lambda x: torch.as_tensor(x, dtype=torch.float64)),
    ("as_tensor_same", lambda x: torch.as_tensor(x) + 1),
    ("asarray_data", lambda x: x + torch.asarray([1.0, 2.0, 3.0, 4.0])),
    ("new_tensor", lambda x: x + x.new_tensor([1, 2, 3, 4])),
    ("new_tensor_of_tensor", lambda x: x.new_tensor(x.long())),
    ("full_number", lambda x: x + torch.full((4,), 2.5)),
    ("full_traced_fill", lambda x: torch.full((x.shape[0], 2), x.sum())),
    ("full_int_fill", lambda x: torch.full((2,), x.shape[0] + 1)),
]


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
@pytest.mark.parametrize("name,fn", FACTORIES, ids=[c[0] for c in FACTORIES])
def test_factory(name, fn):
    check(fn, _x)


# -- views ----------------------------------------------------------------------------------
VIEWS = [
    ("int_index", lambda x: x[:, 0]),
    ("slices", lambda x: x[:, 1::2]),
    ("none_ellipsis", lambda x: x[None, ..., 1]),
    ("tensor_index", lambda x: x[:, torch.tensor([0, 2])]),
    ("mask_index", lambda x: x[x > 0]),
    ("T", lambda x: x.T),
    ("mT", lambda x: x.mT),
    ("H", lambda x: x.to(torch.complex64).H.real),
    ("mH", lambda x: x.to(torch.complex64).mH.imag),
    ("real_imag", lambda x: x.to(torch.complex64).real + x.to(torch.complex64).imag),
    ("data", lambda x: x.data + 1),
    ("contiguous", lambda x: x.T.contiguous()),
]


@pytest.mark.parametrize("name,fn", VIEWS, ids=[c[0] for c in VIEWS])
def test_view(name, fn):
    check(fn, _x)


def test_setitem_forms():
    def f(x, y):
        x = x.clone()
        x[:, 0] = 1.0
        x[:, 1:3] = y[:, :2]
        x[x > 1.5] = 0.0
        x[:, torch.tensor([3])] = 2.0
        return x

    check(f, _xy)


def test_assigning_data_in_forward_writes_the_parameter():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4))

        def forward(self, x):
            self.w.data = self.w * 0.5
            return x * self.w

    m = M()
    ep = st.export(M(), (torch.randn(3, 4),))
    assert "aten.copy_.default" in targets(ep)
    with pytest.raises(st.UnsupportedOpError, match="x.data = value"):
        class Bad(M):
            def forward(self, x):
                self.w.data = torch.zeros(5)
                return x
        st.export(Bad(), (torch.randn(3, 4),))
    assert m is not None


# -- spellings ------------------------------------------------------------------------------
SPELLINGS = [
    ("tensor_where", lambda x, y: x.where(x > 0, y)),
    ("tensor_where_number", lambda x, y: x.where(x > 0, 0.0) + y),
    ("split_size", lambda x, y: x.split(2, dim=1)[1] + y[:, 2:]),
    ("split_sizes", lambda x, y: torch.split(x, [1, 3], 1)[1] + y[:, 1:]),
    ("split_function_size", lambda x, y: torch.split(x, 1, 1)[0] + y),
    ("nonzero_rows", lambda x, y: torch.nonzero(x > 0).sum() + y),
    ("nonzero_tuple", lambda x, y: (x > 0).nonzero(as_tuple=True)[1].sum() + y),
]


@pytest.mark.parametrize("name,fn", SPELLINGS, ids=[c[0] for c in SPELLINGS])
def test_spelling(name, fn):
    check(fn, _xy)
