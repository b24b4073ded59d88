"""torch.export as the reference on representatives of the table (a cond and a while_loop; the
whole table runs in benchmarks/bench_control_flow.py): where it exports, safetrace does,
and both programs compute the same on fresh inputs."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from benchmarks.common import torch_spec
from tests.control_flow.programs import CASES
from tests.helpers import assert_close

PICKED = ("basic", "while_decode")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in PICKED], ids=lambda c: c.name)
def test_safetrace_exports_what_torch_export_exports(case):
    torch.manual_seed(0)
    model = case.make()
    args = case.fresh(5, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.export.export(model, args, dynamic_shapes=torch_spec(case.dynamic()))
    ep = st.export(model, args, dynamic_shapes=case.dynamic())
    for n in (case.min_size, 1, 6):
        for sign in (1, -1):
            fresh = case.fresh(n, sign)
            assert_close(ref.module()(*fresh), ep.module()(*fresh))
