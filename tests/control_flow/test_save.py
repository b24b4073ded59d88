"""Saving a program with control-flow subgraphs is refused clearly (no saved form yet),
before anything is written; programs without subgraphs still save."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.control_flow.programs import CASES, PyPredLike


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_save_refuses_programs_with_subgraphs(case, tmp_path):
    torch.manual_seed(0)
    ep = st.export(case.make(), case.fresh(4, 1), dynamic_shapes=case.dynamic())
    path = tmp_path / "p.st"
    with pytest.raises(st.UnsupportedOpError, match="control-flow subgraph") as info:
        st.save(ep, path)
    assert "Fix:" in str(info.value)
    assert not path.exists()
    buf = io.BytesIO()
    with pytest.raises(st.UnsupportedOpError):
        st.save(ep, buf)
    assert buf.getvalue() == b""


def test_a_cond_decided_at_export_saves_and_loads():
    ep = st.export(PyPredLike(), (torch.randn(3),))
    buf = io.BytesIO()
    st.save(ep, buf)
    buf.seek(0)
    loaded = st.load(buf)
    x = torch.randn(3)
    torch.testing.assert_close(loaded.module()(x), PyPredLike()(x))
