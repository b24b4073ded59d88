"""An in-place op given a number where it writes (``mul_(0.5, w[:n])``: ``self`` a
Python float) is refused at load (hostile probe, session 33, seed 3302, ``json:
list_reverse`` of ``mul_``'s arguments).

Before: it loaded (``mul`` takes a number for a tensor operand) and every call raised
torch's ``RuntimeError: output with shape [] doesn't match the broadcast shape [7, 4]``:
torch wraps the number in a 0-d temporary and writes the result there.
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("c", torch.ones(8, 4))

    def forward(self, x):
        self.c[: x.shape[0]].mul_(0.5)
        return x + self.c[: x.shape[0]]


def _file(edit=None) -> bytes:
    ep = st.export(_Scale(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=8)}})
    doc, tensors = hostile.parts(surgery.saved(ep))
    node = next(n for n in doc["nodes"] if n.get("target") == "torch.ops.aten.mul_.Tensor")
    if edit is not None:
        edit(node)
    return hostile.pack(doc, tensors)


def test_a_number_written_in_place_is_refused_at_load():
    blob = _file(lambda n: n.update(args=[{"float": "0.5"}, n["args"][0]]))
    with pytest.raises(st.LoadError, match=r"'mul_'.*writes 'self' in place, given the "
                                           r"number 0.5"):
        st.load(blob)


def test_the_program_as_saved_runs():
    blob = _file()
    for n in (0, 1, 5):
        m, mod = _Scale(), st.load(blob).module()  # (each writes its state: fresh ones)
        x = torch.randn(n, 4)
        torch.testing.assert_close(mod(x), m(x))
        torch.testing.assert_close(mod(x), m(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(9, 4))
