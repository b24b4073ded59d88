"""Named results (``torch.return_types``: ``.values`` / ``.indices`` of topk, max, sort, ...)
on every path: an op on an input, on a buffer, on a module's constant tensor, on a global
tensor and on a tensor built in ``forward`` from constants or sizes (computed while
tracing: ``x.new_tensor([x.shape[-1], 1])`` used to give a plain tuple there, and
``torch.topk(t, 1).values`` an ``AttributeError``)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st

GLOBAL = torch.tensor([3.0, 1.0, 2.0, 2.0])

# name -> (call, the field read); every op torch.return_types names that safetrace records
OPS = {
    "topk": (lambda t: torch.topk(t, 2), "values"),
    "topk.indices": (lambda t: t.topk(1, largest=False), "indices"),
    "max.dim": (lambda t: torch.max(t, 0), "values"),
    "min.dim": (lambda t: t.min(dim=0), "indices"),
    "sort": (lambda t: torch.sort(t, descending=True), "values"),
    "sort.stable": (lambda t: t.sort(stable=True), "indices"),
    "kthvalue": (lambda t: torch.kthvalue(t, 2), "values"),
    "mode": (lambda t: torch.mode(t), "values"),
    "median.dim": (lambda t: torch.median(t, 0), "indices"),
    "nanmedian.dim": (lambda t: torch.nanmedian(t, 0), "values"),
    "aminmax": (lambda t: torch.aminmax(t), "max"),
    "cummax": (lambda t: torch.cummax(t, 0), "values"),
    "cummin": (lambda t: torch.cummin(t, 0), "indices"),
    "frexp": (lambda t: torch.frexp(t), "mantissa"),
}


class Sources(torch.nn.Module):
    """The op on five kinds of tensor; returns the named field of each and one named result
    itself (its type must survive the program's output too)."""

    def __init__(self, op):
        super().__init__()
        self.op, self.field = OPS[op]
        self.const = torch.tensor([5.0, 4.0, 6.0, 4.5])  # a constant (not a buffer)
        self.register_buffer("buf", torch.tensor([1.0, 9.0, 2.0, 0.0]))

    def forward(self, x):
        sized = x.new_tensor([x.shape[-1], 1.0, 2.0, x.shape[-1] - 1.0])
        fields = [getattr(self.op(t), self.field) for t in
                  (x[0], self.buf, self.const, GLOBAL, sized)]
        return fields, self.op(sized), self.op(x[0])


@pytest.mark.parametrize("op", sorted(OPS))
def test_named_results_survive_every_path(op):
    model = Sources(op)
    x = torch.randn(2, 4)
    ep = st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim("b", min=1, max=8)}})
    for b in (1, 2, 7):
        xi = torch.randn(b, 4)
        got, want = ep.module()(xi), model(xi)
        assert type(got[1]) is type(want[1]) and type(got[2]) is type(want[2])
        assert type(want[1]).__module__ == "torch.return_types"
        for g, w in zip(got[0], want[0]):
            torch.testing.assert_close(g, w)
        torch.testing.assert_close(tuple(got[1]), tuple(want[1]))
        torch.testing.assert_close(tuple(got[2]), tuple(want[2]))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 4))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 5))


def test_the_reported_pattern_matches_torch_export():
    """The fuzzer's program, compared with torch.export's at other sizes (static last dim:
    torch specializes a size that flows into a tensor's data)."""

    class TopkOfSizes(torch.nn.Module):
        def forward(self, x):
            t = x.new_tensor([x.shape[-1], 1])
            return x * torch.topk(t, 1).values

    model = TopkOfSizes()
    x = torch.randn(3, 5)
    ep = st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim("b", min=0, max=8)}})
    ref = torch.export.export(model, (x,), dynamic_shapes={
        "x": {0: torch.export.Dim("b", min=0, max=8)}})
    for b in (0, 1, 6):
        xi = torch.randn(b, 5)
        torch.testing.assert_close(ep.module()(xi), model(xi))
        torch.testing.assert_close(ep.module()(xi), ref.module()(xi))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 6))
