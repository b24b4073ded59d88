"""torchvision's detectors (benchmarks/zoo/detection.py): the fast ones export with dynamic
image sizes and match eager, also where no box survives the score threshold.  Needs
torchvision (beside a CPU-only torch: /work/shared/tools/tv_shim.py, and the CPU kernels of
benchmarks/zoo/tv_ops.py); skipped elsewhere.  Other resolutions: test_detectors.py."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from benchmarks.zoo import detection
from tests.helpers import assert_close

needs_torchvision = pytest.mark.skipif(
    not detection.available(),
    reason="torchvision does not import here (pip install torchvision; beside a CPU-only "
           "torch also install /work/shared/tools/tv_shim.py as a .pth hook)")


def test_entries_are_listed_without_torchvision():
    names = [e.name for e in detection.ENTRIES]
    assert len(names) == 12 and len(set(names)) == 12
    assert {e.family for e in detection.ENTRIES} == {"detection"}


def _entry(name):
    return next(e for e in detection.ENTRIES if e.name == name)


@needs_torchvision
@pytest.mark.slow  # the default run covers both: test_detectors.py (resolutions), docs' detector.py (0 boxes)
@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_fpn",
                                  "fasterrcnn_mobilenet_v3_large_fpn-empty"])
def test_detector_exports_and_matches_eager(name):
    case = _entry(name).factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
        assert "torchvision.nms.default" in ep.graph_module.code
        assert "torchvision.roi_align.default" in ep.graph_module.code
        for args, _ in [(case.args, {})] + case.others:
            expected = case.model(*copy.deepcopy(args))
            assert (expected[0]["boxes"].shape[0] == 0) == name.endswith("-empty")
            assert_close(expected, ep.module()(*args))
        with pytest.raises(st.InputMismatchError):
            ep.module()(*case.outside[0])


@needs_torchvision
def test_batched_nms_replacement_equals_torchvision():
    # the branch-free coordinate trick used while tracing (safetrace.trace.shims)
    import torchvision.ops.boxes as B

    from safetrace.trace.shims import _batched_nms_coordinate_trick as ours

    g = torch.Generator().manual_seed(0)
    for n in (0, 1, 2, 7, 300):
        xy = torch.rand(n, 2, generator=g) * 50 - 10
        boxes = torch.cat([xy, xy + torch.rand(n, 2, generator=g) * 20], 1)
        scores, idxs = torch.rand(n, generator=g), torch.randint(0, 4, (n,), generator=g)
        for iou in (0.3, 0.7):
            expected = B._batched_nms_coordinate_trick(boxes, scores, idxs, iou)
            got = ours(boxes, scores, idxs, iou)
            assert got.dtype == expected.dtype and torch.equal(got, expected)
