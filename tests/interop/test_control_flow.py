"""Programs with torch.cond / while_loop / map / scan convert to torch's higher-order
operators: validate() passes, the converted module accepts and rejects what ours does at
sizes 0, 1 and 7 with the same numerics; a use
torch's operator cannot take is refused with the operator named."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from tests.control_flow.programs import CASES
from tests.interop.harness import same_behaviour

TORCH_REFUSES = {"while_growing"}  # torch's while_loop keeps carried shapes fixed
CONVERTIBLE = [c for c in CASES if c.name not in TORCH_REFUSES]


def _export(case):
    return st.export(case.make().eval(), case.fresh(3, 1), dynamic_shapes=case.dynamic())


def _convert(ep):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch()


@pytest.mark.parametrize("case", CONVERTIBLE, ids=[c.name for c in CONVERTIBLE])
def test_control_flow_converts_to_torch_higher_order_ops(case):
    ep = _export(case)
    tep = _convert(ep)
    tep.validate()
    hops = {n.target for n in tep.graph.nodes if isinstance(n.target,
                                                             torch._ops.HigherOrderOperator)}
    ours = {n.target for n in ep.graph.nodes if isinstance(n.target,
                                                           torch._ops.HigherOrderOperator)}
    assert hops == ours and hops
    converted, mine = tep.module(), ep.module()
    seen = set()
    for n in sorted({0, 1, case.sizes[-1]}):  # 0, 1 and one more than the example
        for sign in (1, -1):
            seen.add(same_behaviour(mine, converted, case.fresh(n, sign), {}))
    assert "ok" in seen
    if case.min_size > 0:
        assert "rejected" in seen


def test_converted_cond_survives_torch_export_save_and_load(tmp_path):
    case = next(c for c in CASES if c.name == "nested")
    ep = _export(case)
    path = tmp_path / "cond.pt2"
    torch.export.save(_convert(ep), path)
    loaded = torch.export.load(path)
    loaded.validate()
    for n in (0, 1, 5):
        for sign in (1, -1):
            same_behaviour(ep, loaded.module(), case.fresh(n, sign), {})


def test_a_loop_torch_cannot_take_is_refused_with_the_operator_named():
    case = next(c for c in CASES if c.name == "while_growing")
    ep = _export(case)
    ep.module()(*case.fresh(4, 1))  # safetrace runs it
    with pytest.raises(st.ConversionError, match="(?s)while_loop.*cannot take.*st.save"):
        ep.to_torch()


def test_unflatten_keeps_the_modules_around_control_flow():
    case = next(c for c in CASES if c.name == "layers")
    model = case.make().eval()
    ep = st.export(model, case.fresh(3, 1), dynamic_shapes=case.dynamic())
    tree = torch.export.unflatten(_convert(ep))
    names = {n for n, _ in tree.named_modules()}
    assert {n for n, _ in model.named_modules()} <= names
    for n in (1, 6):
        for sign in (1, -1):
            args = case.fresh(n, sign)
            torch.testing.assert_close(tree(*args), model(*args))
