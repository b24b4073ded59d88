"""A loaded program's ``ep.constants`` is keyed as the saved one's and torch.export's (issue
21): the attribute path of each lifted constant (``sub.table``, not the placeholder's
``sub_table``), a constant held under two paths under both; a file without the names (format
2.2) still loads, each constant named by its placeholder less ``c_``; names a file gives
that are not the program's constants are refused."""

from __future__ import annotations

import copy
import gc
import io

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st
from tests.serialize import hostile


class Inner(nn.Module):
    def __init__(self, shared: torch.Tensor) -> None:
        super().__init__()
        self.table = torch.arange(3.0)
        self.shared = shared

    def forward(self, x):
        return x * self.table + self.shared


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shared = torch.full((3,), 2.0)
        self.sub = Inner(self.shared)
        self.register_buffer("mask", torch.ones(3), persistent=False)

    def forward(self, x):
        return self.sub(x) * self.mask + self.shared + torch.tensor([0.5, 1.0, 1.5])


_SPEC = ({0: Dim("b", max=32)},)


def _saved() -> tuple:
    model = Outer()
    ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes=_SPEC)
    buf = io.BytesIO()
    st.save(ep, buf)
    return model, ep, buf.getvalue()


def _runs(loaded, model) -> None:
    for n in (0, 1, 5, 32):
        x = torch.randn(n, 3)
        torch.testing.assert_close(loaded.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(33, 3))


def test_a_loaded_program_keys_its_constants_as_the_saved_one_and_torch():
    model, ep, blob = _saved()
    ref = torch.export.export(Outer(), (torch.randn(4, 3),), dynamic_shapes=_SPEC)
    loaded = st.load(blob)
    assert sorted(ep.constants) == sorted(ref.constants) == [
        "lifted_tensor_0", "mask", "shared", "sub.shared", "sub.table"]
    assert list(loaded.constants) == list(ep.constants)
    for k, t in ep.constants.items():
        torch.testing.assert_close(loaded.constants[k], t)
    assert loaded.constants["shared"] is loaded.constants["sub.shared"]
    assert sorted(loaded.to_torch().constants) == sorted(ref.constants)
    assert list(loaded.graph_signature.lifted_tensor_constants) == list(
        ep.graph_signature.lifted_tensor_constants)
    _runs(loaded, model)


def test_a_file_without_the_paths_loads_with_the_placeholder_names():
    model, ep, blob = _saved()
    doc, tensors = hostile.parts(blob)
    assert doc["constant_paths"] == [["c_sub_table", "sub.table"]]
    doc["version"] = [2, 2]  # as written before 2.3
    del doc["constant_paths"], doc["constant_aliases"]
    loaded = st.load(hostile.pack(doc, tensors))
    assert sorted(loaded.constants) == ["lifted_tensor_0", "mask", "shared", "sub_table"]
    _runs(loaded, model)


@pytest.mark.parametrize("field, value, why", [
    ("constant_paths", [["c_nothing", "sub.table"]], "is not a constant of the program"),
    ("constant_paths", [["c_sub_table", "sub..table"]], "non-empty printable names"),
    ("constant_paths", [["c_sub_table", "sub.\x1b[2Ktable"]], "not printable"),
    ("constant_paths", [["c_sub_table", 3]], ""),
    ("constant_aliases", [["sub.shared", "elsewhere"]], "is not the path of a constant"),
    ("constant_paths", [["c_sub_table", "shared"]], "names two tensors"),
    ("constant_paths", [["c_sub_table", "mask"]], "names two tensors"),
    ("constant_aliases", [["sub.table", "shared"]], "names two tensors"),
])
def test_names_that_are_not_the_programs_constants_are_refused(field, value, why):
    _, _, blob = _saved()
    doc, tensors = hostile.parts(blob)
    doc[field] = value
    with pytest.raises(st.LoadError, match=why):
        st.load(hostile.pack(doc, tensors))


def test_a_copy_of_a_program_names_its_constants_when_the_original_is_gone():
    model, ep, _ = _saved()
    names = list(ep.graph_signature.lifted_tensor_constants)
    assert names == ["sub.table", "shared", "lifted_tensor_0"]
    twin = copy.deepcopy(ep)
    del ep
    gc.collect()
    assert list(twin.graph_signature.lifted_tensor_constants) == names
    assert sorted(twin.constants) == ["lifted_tensor_0", "mask", "shared", "sub.shared",
                                      "sub.table"]
    _runs(twin, model)
