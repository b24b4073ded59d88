"""A program whose input shape carries an unbacked symbol (a data-dependent size the
program equated with an input's) saves and loads back identical (issue 23)."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize.test_value_sizes import without_value_checks


class Twice(torch.nn.Module):
    def forward(self, x, z):
        c = (x > 0).sum().item()
        torch._check(z.shape[0] == 2 * c)
        return z * c


class CatTwice(torch.nn.Module):
    def forward(self, x, z):
        y = x[x > 0]
        return torch.cat([y, y]) + z


@pytest.mark.parametrize("model", [Twice(), CatTwice()], ids=["check", "cat"])
def test_unbacked_input_size_round_trips(model, tmp_path):
    x, z = torch.tensor([1.0, -1.0, 2.0, 3.0]), torch.randn(6)
    ep = st.export(model, (x, z), dynamic_shapes=({0: st.Dim.DYNAMIC}, {0: st.Dim.DYNAMIC}))
    assert "u0" in ep.describe_contract()  # the case: an input size bound to u0
    st.save(ep, tmp_path / "m.st")
    ep2 = st.load(tmp_path / "m.st")
    assert ep2.describe_contract() == ep.describe_contract()
    # (identical but for the check the loader puts before a kernel that sizes its result
    # by values, x[x > 0] here: tests/serialize/test_value_sizes.py)
    assert without_value_checks(ep2.graph) == str(ep.graph)
    mod = ep2.module()
    for xs, n in (([1.0, 2.0], 4), ([1.0], 2), ([-1.0], 0), ([], 0), ([1.0, 2.0, 3.0], 6)):
        xx, zz = torch.tensor(xs), torch.randn(n)
        torch.testing.assert_close(mod(xx, zz), model(xx, zz))
    with pytest.raises(st.InputMismatchError):
        mod(torch.tensor([1.0, 2.0]), torch.randn(5))  # odd: no u0 gives 2 * u0 == 5
    with pytest.raises(st.InputMismatchError):
        mod(torch.tensor([1.0, 2.0]), torch.randn(4, 1))
    with pytest.raises(RuntimeError):  # the data disagrees with the size: asserted in-graph
        mod(torch.tensor([1.0, 2.0]), torch.randn(6))
    buf = io.BytesIO()
    st.save(ep2, buf)
    assert st.load(buf.getvalue()).describe_contract() == ep.describe_contract()
