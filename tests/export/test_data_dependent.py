"""SPEC scenarios 11-12 and data-dependent ops: unbacked sizes, checks, custom ops."""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects, targets


class CountSlice(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        c = torch.count_nonzero(x).item()
        return z[:c]


class CountSliceChecked(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        c = torch.count_nonzero(x).item()
        torch._check(c >= 0)
        torch._check(c <= z.shape[0])
        return z[:c]


def _masks(n):
    return [torch.zeros(n), torch.ones(n), (torch.arange(n) % 2).float()]


@pytest.mark.parametrize("model", [CountSlice(), CountSliceChecked()])
def test_scenario_11_exports(model):
    ep = st.export(model, (torch.randn(6), torch.randn(6)))
    text = ep.graph_module.print_readable(print_output=False)
    assert "aten.item.default" in text and 'slice_1: "f32[u0]"' in text
    if isinstance(model, CountSliceChecked):
        assert text.count("asserts.assert_sym(") == 2
    else:
        assert "assert_sym" not in text
    for x in _masks(6):
        matches_eager(ep, model, (x, torch.randn(6)))
    rejects(ep, (torch.randn(7), torch.randn(7)))


def test_scenario_11_dynamic():
    n = Dim("n")
    ep = st.export(CountSlice(), (torch.randn(6), torch.randn(6)),
                   dynamic_shapes={"x": (n,), "y": (n,)})
    for size in (1, 4, 9, 0):
        for x in _masks(size):
            matches_eager(ep, CountSlice(), (x, torch.randn(size)))
    rejects(ep, (torch.randn(4), torch.randn(5)))


class Unprovable(torch.nn.Module):
    def forward(self, x, z):
        c = torch.count_nonzero(x).item()
        if c > 3:  # a threshold on data: no size-oblivious answer exists
            return z * 2
        return z


def test_undecidable_is_a_data_dependent_error_with_fix():
    with pytest.raises(st.DataDependentError) as info:
        st.export(Unprovable(), (torch.randn(6), torch.randn(6, 2)))
    msg = str(info.value)
    assert "st.check(" in msg and "u0" in msg
    assert "test_data_dependent.py" in msg


# -- scenario 12: a custom op with a fake implementation ------------------------------------
@st.custom_op("sttest::count_nonzero_int")
def count_nonzero_int(x: torch.Tensor) -> int:
    return int(torch.count_nonzero(x).item())


@st.register_fake(count_nonzero_int)
def _(x):
    u = st.new_dynamic_size()
    st.check(u >= 0)
    st.check(u <= x.numel())
    return u


class CustomSlice(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        c = count_nonzero_int(x)
        return z[:c]


def test_scenario_12_custom_op_static_and_dynamic():
    ep = st.export(CustomSlice(), (torch.randn(6), torch.randn(6)))
    assert "sttest.count_nonzero_int.default" in targets(ep)
    for x in _masks(6):
        matches_eager(ep, CustomSlice(), (x, torch.randn(6)))
    n = Dim("n")
    ep = st.export(CustomSlice(), (torch.randn(6), torch.randn(6)),
                   dynamic_shapes={"x": (n,), "y": (n,)})
    for size in (1, 3, 10):
        for x in _masks(size):
            matches_eager(ep, CustomSlice(), (x, torch.randn(size)))


@torch.library.custom_op("sttest::torch_style_count", mutates_args=())
def torch_style_count(x: torch.Tensor) -> int:
    return int(torch.count_nonzero(x).item())


@torch_style_count.register_fake
def _(x):
    ctx = torch.library.get_ctx()
    u = ctx.new_dynamic_size()
    torch._check(u <= x.numel())
    return u


def test_torch_style_custom_op_exports_unchanged():
    class M(torch.nn.Module):
        def forward(self, x):
            return x[:torch_style_count(x)]

    ep = st.export(M(), (torch.randn(5),))
    for x in _masks(5):
        matches_eager(ep, M(), (x,))


@st.custom_op("sttest::liar")
def liar(x: torch.Tensor) -> int:
    return x.numel() + 5  # breaks the promise of its fake


@st.register_fake(liar)
def _(x):
    u = st.new_dynamic_size(min=0, max=None)
    st.check(u <= x.numel())
    return u


def test_runtime_assertion_violated_by_data():
    class M(torch.nn.Module):
        def forward(self, x):
            return x.new_zeros(liar(x))

    ep = st.export(M(), (torch.randn(4),))
    with pytest.raises(st.RuntimeAssertionError, match="u0 <= 4"):
        ep.module()(torch.randn(4))


def test_custom_op_without_fake():
    @st.custom_op("sttest::nofake")
    def nofake(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    with pytest.raises(st.UnsupportedOpError, match="register_fake"):
        st.export(lambda x: nofake(x), (torch.randn(3),))


# -- ops with data-dependent output sizes ----------------------------------------------------
class MaskSum(torch.nn.Module):
    def forward(self, x, m):
        return x[m].sum() + x[m].shape[0]


class NonzeroRows(torch.nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x[:, 0] > 0).squeeze(1)
        return torch.index_select(x, 0, idx) * 2


class MaskedSelect(torch.nn.Module):
    def forward(self, x, m):
        v = torch.masked_select(x, m)
        return torch.cat([v, v.new_zeros(1)])


class Argwhere(torch.nn.Module):
    def forward(self, x):
        return torch.argwhere(x > 0).float().mean(0, keepdim=True) + x.shape[0]


class Unique(torch.nn.Module):
    def forward(self, x):
        u, counts = torch.unique(x, return_counts=True)
        return u.float() * counts.float()


class UniqueInverse(torch.nn.Module):
    def forward(self, x):
        u, inv = torch.unique(x, return_inverse=True)
        return u[inv] + u.shape[0]


class RepeatInterleave(torch.nn.Module):
    def forward(self, x, r):
        return torch.repeat_interleave(x, r, dim=0).sum(0)


class Bincount(torch.nn.Module):
    def forward(self, x):
        b = torch.bincount(x)
        return b[:2].sum() + b.shape[0]


class ItemArange(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        return torch.arange(n).float().sum() + torch.zeros(n).shape[0]


def _bools(shape):
    return [torch.zeros(shape, dtype=torch.bool), torch.ones(shape, dtype=torch.bool),
            torch.rand(shape) > 0.5]


def test_boolean_mask_indexing():
    n = Dim("n")
    ep = st.export(MaskSum(), (torch.randn(5, 3), torch.rand(5) > 0.5),
                   dynamic_shapes={"x": (n, None), "m": (n,)})
    for size in (1, 4, 7):
        for m in _bools(size):
            matches_eager(ep, MaskSum(), (torch.randn(size, 3), m))


def test_nonzero_rows_into_index_select():
    ep = st.export(NonzeroRows(), (torch.randn(6, 3),), dynamic_shapes={"x": (Dim("n"), None)})
    for x in (torch.randn(4, 3), torch.zeros(2, 3), torch.ones(9, 3)):
        matches_eager(ep, NonzeroRows(), (x,))


def test_masked_select_and_argwhere():
    ep = st.export(MaskedSelect(), (torch.randn(4, 3), torch.rand(4, 3) > 0.5),
                   dynamic_shapes={"x": (Dim("a"), None), "m": (Dim("a"), None)})
    for m in _bools((5, 3)):
        matches_eager(ep, MaskedSelect(), (torch.randn(5, 3), m))
    ep = st.export(Argwhere(), (torch.randn(4, 3),), dynamic_shapes={"x": (Dim("a"), None)})
    for x in (torch.randn(6, 3), torch.ones(2, 3)):
        matches_eager(ep, Argwhere(), (x,))


def test_unique_variants():
    x = torch.randint(0, 4, (8,))
    for model in (Unique(), UniqueInverse()):
        ep = st.export(model, (x,), dynamic_shapes={"x": (Dim("n"),)})
        for data in (torch.randint(0, 4, (12,)), torch.zeros(3, dtype=torch.int64),
                     torch.arange(5)):
            matches_eager(ep, model, (data,))


def test_repeat_interleave_and_bincount():
    ep = st.export(RepeatInterleave(), (torch.randn(3, 2), torch.tensor([1, 0, 2])),
                   dynamic_shapes={"x": (Dim("n"), None), "r": (Dim("n"),)})
    matches_eager(ep, RepeatInterleave(), (torch.randn(4, 2), torch.tensor([3, 1, 0, 2])))
    ep = st.export(Bincount(), (torch.tensor([1, 3, 3]),), dynamic_shapes={"x": (Dim("n"),)})
    matches_eager(ep, Bincount(), (torch.tensor([0, 5, 2, 2]),))


def test_item_as_size():
    ep = st.export(ItemArange(), (torch.randn(5),), dynamic_shapes={"x": (Dim("n"),)})
    for x in (torch.randn(8), -torch.ones(3), torch.ones(4)):
        matches_eager(ep, ItemArange(), (x,))


def test_python_branch_on_data_still_errors():
    class M(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(st.DataDependentError, match="x.sum"):
        st.export(M(), (torch.randn(3),))


def test_data_read_inside_torch_code_names_the_torch_line():
    from torch import nn

    m = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=32, batch_first=True).eval()

    def f(src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return m(src, tgt, tgt_mask=mask)

    with pytest.raises(st.DataDependentError) as info:
        st.export(f, (torch.randn(2, 5, 16), torch.randn(2, 4, 16)))
    msg = str(info.value)
    assert "transformer.py" in msg and "tgt_is_causal" in msg and "test_data_dependent.py" in msg

    def g(src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return m(src, tgt, tgt_mask=mask, tgt_is_causal=True)

    ep = st.export(g, (torch.randn(2, 5, 16), torch.randn(2, 4, 16)))
    a = (torch.randn(2, 5, 16), torch.randn(2, 4, 16))
    torch.testing.assert_close(ep.module()(*a), g(*a))

    def h(x):
        return x * 2 if x.sum() > 0 else x
    with pytest.raises(st.DataDependentError) as info:
        st.export(h, (torch.randn(3),))
    assert "inside" not in str(info.value)


def test_in_place_write_forgets_what_was_known_about_values():
    """A mask's True count and a count's bounds hold only until the tensor is written."""
    def f(x):
        m = x > 0
        a = x[m]
        m.logical_not_()
        b = x[m]
        return a.sum() + b.sum(), b.shape[0]

    ep = st.export(f, (torch.tensor([1.0, -2.0, 3.0, 4.0, -5.0]),))
    for x in (torch.tensor([1.0, -2.0, 3.0, 4.0, -5.0]), torch.tensor([1.0, -2.0, -3.0, -4.0, -5.0])):
        got, want = ep.module()(x), f(x)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]


def test_known_size_values_are_forgotten_after_a_write_through_a_view():
    from safetrace import Dim

    def f(x):
        t = torch.tensor(x.shape[0])
        t.view(1).add_(1)  # t changes through an alias
        return torch.ones(int(t))

    with pytest.raises(st.DataDependentError):
        st.export(f, (torch.randn(3),), dynamic_shapes=({0: Dim.AUTO},))

    def g(x):  # int() of a known size is that size, as int(x.shape[0]) is
        return torch.ones(int(torch.tensor(x.shape[0])) + 1)

    ep = st.export(g, (torch.randn(3),), dynamic_shapes=({0: Dim.AUTO},))
    assert ep.dims_report["x.shape[0]"] != "static 3"
    for n in (0, 1, 3, 7):
        assert ep.module()(torch.randn(n)).shape == (n + 1,)


class _ChecksReadValue(torch.nn.Module):
    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 4)
        torch._check(n <= 40)
        return torch.zeros(n)


def test_failed_run_time_check_reads_as_torchs_assertion():
    """A failed check on a value read from data starts with torch's own words, so code
    matching torch.export's text keeps working; our provenance follows."""
    args = (torch.tensor([5]),)
    torch_text = "Runtime assertion failed for expression u0 >= 4"
    ref = torch.export.export(_ChecksReadValue(), args)
    with pytest.raises(RuntimeError, match=torch_text):
        ref.module()(torch.tensor([2]))
    ep = st.export(_ChecksReadValue(), args)
    for prog in (ep.module(), ep.to_torch().module()):
        with pytest.raises(RuntimeError, match=torch_text + r" where u0 = \.item\(\)") as info:
            prog(torch.tensor([2]))
        assert "torch._check(n >= 4)" in str(info.value)
        with pytest.raises(RuntimeError, match="u0 <= 40"):
            prog(torch.tensor([41]))
        assert prog(torch.tensor([7])).shape == (7,)
