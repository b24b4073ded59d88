"""A converted program's input guards after torch's ``run_decompositions``.

torch's ExportedProgram recomputes its guard code when it is built, so the program that
``run_decompositions`` returns would lose the checks ``to_torch()`` adds (a derived dim, a
relation, a range): the decomposed module then ran inputs outside the declared space.
Each case is compared with torch.export's own decomposed program (issue 21)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class Strided(torch.nn.Module):
    def forward(self, z, y):
        return z[1:] + y[1::2]


class OffBy4(torch.nn.Module):
    def forward(self, x, y):
        return x + y[4:]


def _programs(model, args, spec):
    ours = st.export(model, args, dynamic_shapes=spec).to_torch()
    theirs = torch.export.export(model, args, dynamic_shapes=spec)
    return {"ours": ours.run_decompositions({}),
            "ours twice": ours.run_decompositions({}).run_decompositions({}),
            "torch": theirs.run_decompositions({})}


def test_a_derived_dims_check_survives_run_decompositions():
    d = torch.export.Dim("d", min=3, max=6)
    spec = ({0: d + 1}, {0: d * 2 + 1})
    for ep in _programs(Strided(), (torch.randn(6), torch.randn(11)), spec).values():
        m = ep.module()
        for n in (4, 7):
            z, y = torch.randn(n), torch.randn(2 * n - 1)
            torch.testing.assert_close(m(z, y), Strided()(z, y))
        for z, y in ((5, 8), (8, 15)):  # off the relation; past the range
            with pytest.raises(AssertionError, match="Guard failed"):
                m(torch.randn(z), torch.randn(y))


def test_an_auto_relation_survives_run_decompositions():
    spec = ((torch.export.Dim.AUTO,), (torch.export.Dim.AUTO,))
    for ep in _programs(OffBy4(), (torch.randn(6), torch.randn(10)), spec).values():
        m = ep.module()
        x, y = torch.randn(3), torch.randn(7)
        torch.testing.assert_close(m(x, y), OffBy4()(x, y))
        with pytest.raises(AssertionError, match="Guard failed"):
            m(torch.randn(10), torch.randn(13))
