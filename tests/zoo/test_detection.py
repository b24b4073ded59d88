"""torchvision's detectors (benchmarks/zoo/detection.py): the fast ones export with dynamic
image sizes and match eager; where no box survives, the program refuses the data at run
time instead of computing it.  Needs torchvision, which imports only beside its own torch
(run with /work/zoo/.venv); skipped elsewhere."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from benchmarks.zoo import detection
from tests.helpers import assert_close

needs_torchvision = pytest.mark.skipif(
    not detection.available(),
    reason="torchvision with its C++ ops (nms, roi_align) does not import beside this torch; "
           "run these with PYTHONPATH=$PWD /work/zoo/.venv/bin/python -m pytest tests/zoo")


def test_entries_are_listed_without_torchvision():
    names = [e.name for e in detection.ENTRIES]
    assert len(names) == 12 and len(set(names)) == 12
    assert {e.family for e in detection.ENTRIES} == {"detection"}


def _entry(name):
    return next(e for e in detection.ENTRIES if e.name == name)


@needs_torchvision
@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_fpn"])
def test_detector_exports_and_matches_eager(name):
    case = _entry(name).factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
        assert "torchvision.nms.default" in ep.graph_module.code
        for args, _ in [(case.args, {})] + case.others:
            expected = case.model(*copy.deepcopy(args))
            assert expected[0]["boxes"].shape[0] > 0
            assert_close(expected, ep.module()(*args))
        with pytest.raises(st.InputMismatchError):
            ep.module()(*case.outside[0])


@needs_torchvision
def test_detector_with_no_surviving_box_is_refused():
    case = _entry("fasterrcnn_mobilenet_v3_large_fpn-empty").factory()
    with torch.no_grad():
        assert case.model(*case.args)[0]["boxes"].shape[0] == 0
        ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
        with pytest.raises(st.RuntimeAssertionError, match="boxes.numel"):
            ep.module()(*case.args)
