"""The model snapshot's exit check (exporter/snapshot.py): forward's changes to a module's
tables that only one part of the one-pass check sees are still put back, on a first and a
warm export, and the programs compute as eager at other sizes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st
from safetrace import Dim

BATCH = {"x": {0: Dim("batch", max=64)}}


class MovesParameter(nn.Module):
    """forward moves its parameter into its buffers (the same key and tensor: only the
    two tables' lengths differ)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        self._buffers["w"] = self._parameters.pop("w")
        return x * self.w


class RenamesAttribute(nn.Module):
    """forward renames its last attribute (the same value in the same place: only the
    keys differ)."""

    def __init__(self):
        super().__init__()
        self.a = (2, 3)

    def forward(self, x):
        self.c = self.a
        del self.a
        return x * self.c[0]


class RebindsEqualCopy(nn.Module):
    """forward replaces a dict attribute by an equal copy (equal, not the same object)."""

    def __init__(self):
        super().__init__()
        self.cfg = {"k": 3}

    def forward(self, x):
        self.cfg = dict(self.cfg)
        return x * self.cfg["k"]


class TogglesTraining(nn.Module):
    def forward(self, x):
        self.training = not self.training
        return x + 1


class ModeOutside(nn.Module):
    """`training` a property over a table of the class: forward flips it with no change to
    any of the module's dicts (or anything else the snapshot copies)."""

    modes: dict = {}
    training = property(lambda self: ModeOutside.modes[id(self)],
                        lambda self, v: ModeOutside.modes.__setitem__(id(self), v))

    def forward(self, x):
        ModeOutside.modes[id(self)] = not ModeOutside.modes[id(self)]
        return x - 1


def _state(m):
    return [(name, list(mod.__dict__), list(mod.__dict__.values()), list(mod._parameters),
             list(mod._buffers), mod.training) for name, mod in m.named_modules()]


def _same_state(a, b):
    return all(x[0] == y[0] and x[1] == y[1] and len(x[2]) == len(y[2]) and
               all(p is q for p, q in zip(x[2], y[2])) and x[3:] == y[3:]
               for x, y in zip(a, b)) and len(a) == len(b)


@pytest.mark.parametrize("cls", [MovesParameter, RenamesAttribute, RebindsEqualCopy,
                                 TogglesTraining, ModeOutside])
def test_forward_changes_seen_by_one_part_of_the_exit_check_are_put_back(cls):
    torch.manual_seed(0)
    m = cls().eval()
    before = _state(m)
    for _ in range(3):  # (the first export, then warm ones: the snapshot taken earlier)
        ep = st.export(m, (torch.randn(5, 4),), dynamic_shapes=BATCH)
        assert _same_state(_state(m), before)
        for n in (0, 1, 7):
            x = torch.randn(n, 4)
            want = cls().eval()
            want.load_state_dict(m.state_dict())
            torch.testing.assert_close(ep.module()(x), want(x))
            assert _same_state(_state(m), before)
        with pytest.raises(Exception, match="4"):
            ep.module()(torch.randn(3, 5))  # (the width is static: refused before running)
