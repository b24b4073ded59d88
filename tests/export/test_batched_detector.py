"""A symbolic batch for detectors (issue 22, item 8): torchvision's list-of-images calling
convention against a wrapper that keeps the batch inside tensors (examples/batched_detector.py,
docs/deploying.md#batched-detectors).

- a list (or loop) as long as a declared batch Dim is refused with the reason and the fix,
  at once (no size splits tried on an unbounded Dim), torch.export refusing too;
- the wrapper (a map over the batch, each image's detections padded to a fixed count with a
  mask) is one program for batches of 1, 2, 3 at other resolutions, empty images included;
- inside a map body, an op's own check on a size made there (topk's ``k <= size`` on a count
  of boxes) is asserted in the body, where eager raises, instead of refusing the export.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "batched_detector.py"
_spec = importlib.util.spec_from_file_location("batched_detector_example", _PATH)
example = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = example  # (torch.export's dynamo imports the classes' module)
_spec.loader.exec_module(example)

AUTO = st.Dim.AUTO


def _detector():
    torch.manual_seed(0)
    return example.ListDetector().eval()


def _images(b, h, w, seed, blank=()):
    x = torch.randn(b, 3, h, w, generator=torch.Generator().manual_seed(seed))
    for i in blank:
        x[i] = 0  # nothing passes the score threshold
    return x


@pytest.mark.parametrize("spec", [st.Dim("batch"), st.Dim.DYNAMIC])
def test_a_list_as_long_as_a_declared_batch_is_refused_with_the_reason(spec):
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(example.AsList(_detector()), (_images(2, 16, 12, 0),),
                  dynamic_shapes={"images": {0: spec, 2: AUTO, 3: AUTO}})
    err = info.value
    assert type(err).__name__ == "DeclaredSpaceViolation" and err.problems[0].count
    text = str(err)
    assert "images.shape[0]" in text and "list(images)" in text
    assert "one Python value per index of this dim" in text
    assert "torch._higher_order_ops.map over images" in err.problems[0].fix
    assert "docs/deploying.md#batched-detectors" in err.problems[0].fix


def test_a_loop_over_range_of_a_declared_size_is_refused_with_the_reason():
    def f(x):
        return torch.stack([x[i] * i for i in range(x.shape[0])])

    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(f, (torch.rand(3, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    assert info.value.problems[0].count
    assert "turns the size into a Python int (`range(n)`" in str(info.value)
    # Dim.AUTO: specialized as the example, other sizes refused with the line
    ep = st.export(f, (torch.rand(3, 4),), dynamic_shapes={"x": {0: AUTO, 1: AUTO}})
    x = torch.rand(3, 7)
    assert_close(f(x), ep.module()(x))
    with pytest.raises(st.InputMismatchError, match=r"range\(x.shape\[0\]\)"):
        ep.module()(torch.rand(4, 7))


def test_the_wrapper_is_one_program_for_every_batch_and_image_size():
    model = example.PerImage(_detector()).eval()
    # grad mode on (the default) and weights that require grad, as a user calls eager:
    # torch's eager map would first trace the body for autograd and stop on the count
    assert torch.is_grad_enabled()
    ep = st.export(model, (_images(2, 16, 12, 0),),
                   dynamic_shapes={"images": {0: AUTO, 2: AUTO, 3: AUTO}})
    assert "map_impl" in ep.graph_module.code
    counts = set()
    for seed, (b, h, w, blank) in enumerate([(1, 16, 12, ()), (2, 20, 20, (1,)),
                                             (3, 24, 16, (0,)), (3, 8, 8, ()),
                                             (2, 1, 1, ())]):
        x = _images(b, h, w, seed, blank)
        want, got = model(x), ep.module()(x)
        assert want.keys() == got.keys() == {"boxes", "scores", "valid"}
        for key in want:
            assert_close(want[key], got[key])
            assert want[key].requires_grad == got[key].requires_grad
        assert got["scores"].requires_grad  # (autograd kept, as eager's)
        counts.update(want["valid"].sum(1).tolist())
    assert {0, 5} <= counts and len(counts) >= 3  # empty, full and partial images
    with torch.no_grad():
        x = _images(2, 20, 16, 9, (0,))
        want, got = model(x), ep.module()(x)
        assert_close(want["scores"], got["scores"]) and not got["scores"].requires_grad
    with pytest.raises(st.InputMismatchError, match="must be >= 1"):
        ep.module()(torch.rand(0, 3, 16, 12))  # eager cannot stack an empty batch
    with pytest.raises(st.ExportError, match="xs has length 0"):
        model(torch.rand(0, 3, 16, 12))  # (eager's st.map says so too)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.rand(2, 4, 16, 12))  # channels are static


def test_an_ops_own_check_inside_a_map_body_is_asserted_there():
    from torch._higher_order_ops import map as per_item

    def top3(s):
        return s[s > 0.5].topk(3)[0]  # eager raises when fewer than 3 pass

    def f(x):
        return per_item(top3, x)

    ep = st.export(f, (torch.rand(2, 50),), dynamic_shapes={"x": {0: AUTO, 1: AUTO}})
    for x in (torch.rand(3, 20), torch.rand(1, 40)):
        x[:, :3] = 0.9  # at least 3 pass in every row
        assert torch.equal(torch.stack([top3(r) for r in x]), ep.module()(x))
    bad = torch.zeros(2, 10)
    bad[0, :5] = 1  # row 1: none pass
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        top3(bad[1])
    with pytest.raises(st.RuntimeAssertionError, match="topk raises otherwise"):
        ep.module()(bad)


@pytest.mark.slow  # torch.export: ~15-20 s on the CI's cores
def test_torch_export_on_the_same_two_models():
    from torch.export import Dim

    detector = _detector()
    with pytest.raises(Exception, match="specialized it to be a constant"):
        torch.export.export(example.AsList(detector), (_images(2, 16, 12, 0),),
                            dynamic_shapes={"images": {0: Dim("batch"), 2: Dim.AUTO,
                                                       3: Dim.AUTO}})
    model = example.PerImage(detector).eval()
    with torch.no_grad():
        ep = torch.export.export(model, (_images(2, 16, 12, 0),),
                                 dynamic_shapes={"images": {0: Dim.AUTO, 2: Dim.AUTO,
                                                            3: Dim.AUTO}})
        x = _images(3, 24, 16, 1, (0,))
        want, got = model(x), ep.module()(x)
        for key in want:
            assert_close(want[key], got[key])


def test_a_write_through_the_same_view_of_an_unknown_layout_is_a_full_overlap():
    # torchvision's resize_keypoints: `k[..., 0] *= r` on a clone of a view (layout not
    # traced): __setitem__ copies the written view onto the same view taken anew, a full
    # overlap that eager allows for every layout; a partial one stays refused
    def scale(x):
        k = x[0].clone()
        k[..., 0] *= 2.0
        return k

    def shift(x):  # (a clone of a transpose: its layout not traced)
        v = x[0].t().clone()
        v[1:] += v[:-1]
        return v

    def shift_rows(x):  # (a clone of a row: contiguous, eager's own check runs)
        v = x[0].clone()
        v[..., 1:] += v[..., :-1]
        return v

    spec = {"x": {0: AUTO, 1: AUTO}}
    ep = st.export(scale, (torch.rand(2, 4, 3),), dynamic_shapes=spec)
    for x in (torch.rand(3, 5, 3), torch.rand(1, 1, 3), torch.rand(2, 0, 3)):
        assert torch.equal(scale(x), ep.module()(x))
    with pytest.raises(st.UnsupportedOpError, match="reading another view of the same memory"):
        st.export(shift, (torch.rand(2, 4, 3),), dynamic_shapes=spec)
    ep = st.export(shift_rows, (torch.rand(2, 4, 3),), dynamic_shapes=spec)
    for x in (torch.rand(3, 5, 3), torch.rand(1, 1, 3)):  # (dense slices: eager refuses)
        try:
            want = shift_rows(x.clone())
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=str(exc)[:40]):
                ep.module()(x)
        else:
            assert torch.equal(want, ep.module()(x))
