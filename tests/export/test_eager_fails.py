"""A declared Dim whose range includes sizes where the model itself fails in eager (a slice
of a fixed position table, ProphetNet's): the refusal says so plainly, with the range eager
runs as the fix, instead of reading as a relation with ``min(dec, 63)``."""

import pytest
import torch

import safetrace as st


class _PositionTable(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(63, 8))

    def forward(self, x):
        return x + self.table[: x.shape[1]]


@pytest.mark.parametrize("declared,sizes", [(dict(), "dec >= 64"),
                                            (dict(max=128), "64 <= dec <= 128")])
def test_sizes_past_a_fixed_table_are_named_as_eager_failures(declared, sizes):
    model = _PositionTable()
    with pytest.raises(RuntimeError):  # eager at 64: the broadcast of 64 with 63 rows
        model(torch.randn(2, 64, 8))
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, (torch.randn(2, 10, 8),),
                  dynamic_shapes={"x": {1: st.Dim("dec", **declared)}})
    text = str(info.value)
    assert f"includes sizes where the model itself fails in eager: for {sizes}, " \
           f"`return x + self.table[: x.shape[1]]` at test_eager_fails.py:" in text
    assert "Eager runs dec <= 63 only." in text
    assert "Fix: dec = Dim('dec', max=63)  (the sizes eager runs)" in text
    # the fix exports; its program matches eager at other sizes, 0 and 1 included, and
    # refuses a size eager fails at before running
    ep = st.export(model, (torch.randn(2, 10, 8),),
                   dynamic_shapes={"x": {1: st.Dim("dec", max=63)}})
    for n in (0, 1, 7, 63):
        x = torch.randn(2, n, 8)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 64, 8))


class _Branch(torch.nn.Module):
    """A branch on the size (eager computes something else above 63, never fails): the
    refusal keeps its narrowing words."""

    def forward(self, x):
        if x.shape[1] <= 63:
            return x * 2
        return x + 1


def test_a_branch_is_not_called_an_eager_failure():
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(_Branch(), (torch.randn(2, 10, 8),),
                  dynamic_shapes={"x": {1: st.Dim("dec", max=128)}}, max_splits=0)
    assert "fails in eager" not in str(info.value)


class _DiffThenSlice(torch.nn.Module):
    """``z.diff(dim=1, append=z * 2)`` has ``2*n - 1`` columns; ``[..., :4] @ w`` needs 4
    of them: eager fails for n <= 2 and runs every n >= 3 (an unbounded range above, where
    the refusal's check of the excluded sizes met infinity: OverflowError escaped st.export,
    fuzz seed 3161)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 16).reshape(4, 4))

    def forward(self, z):
        v = z.diff(dim=1, append=z * 2)
        return v, v[..., :4] @ self.w


def test_an_unbounded_range_that_eager_runs_above_is_refused_with_the_fix():
    model = _DiffThenSlice()
    with pytest.raises(RuntimeError):
        model(torch.randn(3, 2))
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(model, (torch.randn(3, 4),),
                  dynamic_shapes={"z": {0: st.Dim.DYNAMIC, 1: st.Dim("d2")}})
    text = str(info.value)
    assert "fails in eager: for d2 <= 2" in text and "Dim('d2', min=3)" in text
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes={"z": {0: st.Dim.DYNAMIC, 1: st.Dim("d2", min=3)}})
    for shape in ((0, 3), (1, 5), (4, 9)):
        z = torch.randn(shape)
        for got, want in zip(ep.module()(z), model(z)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 2))
