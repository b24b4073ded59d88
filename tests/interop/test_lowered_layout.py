"""A program that asked for a memory layout (a branch on ``x.is_contiguous()``, a view
inside ``try``): ``ep.module()`` refuses a non-contiguous input before running, and so does
the program ``ep.to_torch()`` converts (a ``sym_stride`` check, ``interop/contract.py``),
after ``torch.export.save``/``load`` and with ``verify=True``. torch.export's own program
checks no strides: it runs the traced side, where eager takes the other (lead, session 30:
the conversion ran it too before)."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.errors import WrongLayout


class BranchOnLayout(torch.nn.Module):
    def forward(self, x):
        if x.is_contiguous():
            return x * 2
        return x + 1


def _program():
    ds = ({0: st.Dim("a"), 1: st.Dim("b")},)
    return st.export(BranchOnLayout(), (torch.randn(3, 4),), dynamic_shapes=ds)


def test_the_program_refuses_a_transposed_input_before_running():
    ep = _program()
    with pytest.raises(WrongLayout, match="contiguous"):
        ep.module()(torch.randn(4, 3).t())
    x = torch.randn(5, 2)
    torch.testing.assert_close(ep.module()(x), BranchOnLayout()(x))


class ViewInTry(torch.nn.Module):
    def forward(self, x):
        try:
            return x.view(-1) * 2
        except RuntimeError:
            return x.reshape(-1) + 1


def _converted_modules(ep):
    """The converted module, after torch.export.save/load, and after run_decompositions."""
    tp = ep.to_torch()
    buf = io.BytesIO()
    torch.export.save(tp, buf)
    buf.seek(0)
    return {"to_torch": tp.module(), "saved": torch.export.load(buf).module(),
            "verify": ep.to_torch(verify=True).module(),
            "decomposed": tp.run_decompositions().module()}


@pytest.mark.parametrize("cls", [BranchOnLayout, ViewInTry])
def test_the_converted_program_refuses_a_transposed_input_too(cls):
    ds = ({0: st.Dim("a"), 1: st.Dim("b")},)
    ep = st.export(cls(), (torch.randn(3, 4),), dynamic_shapes=ds)
    for how, m in _converted_modules(ep).items():
        if how == "decomposed":
            continue  # (torch's retrace proves the stride check from its fake strides)
        with pytest.raises(RuntimeError, match="expected a contiguous tensor"):
            m(torch.randn(4, 3).t())
        for shape in ((5, 2), (1, 7), (0, 3), (2, 0), (1, 1)):
            x = torch.randn(*shape)
            torch.testing.assert_close(m(x), cls()(x), msg=f"{how} {shape}")
        # (is_contiguous() ignores dims of size 1: a transposed (1, n) input is accepted)
        x = torch.randn(6, 1).t()
        torch.testing.assert_close(m(x), cls()(x))
    d = _converted_modules(ep)["decomposed"]
    x = torch.randn(5, 2)
    torch.testing.assert_close(d(x), cls()(x))


class ReadsStrides(torch.nn.Module):
    def forward(self, x):
        return x * x.stride(0)


def test_a_program_that_read_strides_checks_row_major_strides_and_offset_after_to_torch():
    ds = ({0: st.Dim("a"), 1: st.Dim("b")},)
    m = st.export(ReadsStrides(), (torch.randn(3, 4),), dynamic_shapes=ds).to_torch().module()
    for shape in ((5, 2), (1, 3), (0, 2), (2, 1)):
        x = torch.randn(*shape)
        torch.testing.assert_close(m(x), ReadsStrides()(x))
    for bad in (torch.randn(4, 3).t(), torch.randn(3, 5)[:, 1:], torch.randn(7)[1:].view(2, 3)):
        with pytest.raises(RuntimeError, match="row-major strides and storage offset 0"):
            m(bad)
