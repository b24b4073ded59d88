"""The vision zoo (benchmarks/zoo/vision.py): its entries are well formed everywhere, and
where timm and torchvision import (the zoo venv, torch 2.14.1) a few of them export with a
dynamic batch and H/W, match eager at other batch sizes and resolutions and reject an input
outside the declared space.  In the main venv (torch 2.13, no torchvision) the model cases
skip with the command that builds the zoo venv."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close

from benchmarks.zoo import vision

# one per failure class the zoo found: stride chains + parity branches (MobileViT), TF "same"
# padding (tf_efficientnet), window padding (Swin), dynamic_img_size position tables (ViT)
SAMPLE = ["timm_mobilevit", "timm_tf_efficientnet", "timm_swin", "timm_vit"]


def test_entries_are_well_formed() -> None:
    names = [e.name for e in vision.ENTRIES]
    assert len(names) == len(set(names)) and len(names) >= 60
    assert {e.family for e in vision.ENTRIES} == {"timm", "torchvision"}
    assert set(SAMPLE) <= set(names)
    assert "zoo/.venv" in vision.NEEDS and "torchvision==0.29.1" in vision.NEEDS


@pytest.mark.parametrize("name", SAMPLE)
def test_vision_model_generalizes(name: str) -> None:
    if not vision.available():
        pytest.skip(vision.NEEDS)
    entry = next(e for e in vision.ENTRIES if e.name == name)
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        for args, kwargs in [(case.args, case.kwargs)] + case.others:
            expected = case.model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            assert_close(expected, ep.module()(*args, **kwargs))
        args, kwargs = case.outside
        with pytest.raises(st.InputMismatchError):
            ep.module()(*args, **kwargs)
