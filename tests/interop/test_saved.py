"""What deployment needs survives saving: Dim names and the train/eval flag through
``st.save``/``st.load``; dataclass inputs through ``torch.export.save``/``load`` of the
converted program."""

from __future__ import annotations

import dataclasses
import io
import json
import logging

import pytest
import torch

import safetrace as st
from tests.interop.harness import same_behaviour
from tests.models import ConvNet
from tests.serialize.hostile import pack, parts


def _roundtrip(ep: st.ExportedProgram, tmp_path) -> st.ExportedProgram:
    path = tmp_path / "p.st"
    st.save(ep, path)
    return st.load(path)


def _mlp_program():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    spec = {"input": {0: st.Dim("batch", min=1, max=32)}}
    return model.eval(), st.export(model.eval(), (torch.randn(3, 4),), dynamic_shapes=spec)


def test_dim_names_survive_save_and_load_and_name_the_onnx_dims(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    _, ep = _mlp_program()
    loaded = _roundtrip(ep, tmp_path)
    assert loaded.dim_names == ep.dim_names and "batch" in loaded.dim_names.values()
    path = tmp_path / "m.onnx"
    st.to_onnx(loaded, path)
    dims = [d.dim_param for d in onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim]
    assert dims[0] == "batch"


def test_the_export_mode_survives_save_and_load(tmp_path):
    x = torch.randn(2, 3, 8, 8)
    trained = _roundtrip(st.export(ConvNet().train(), (x,)), tmp_path)
    assert trained.exported_training is True
    with pytest.raises(RuntimeError, match="exported in train mode"):
        trained.module().eval()
    evaluated = _roundtrip(st.export(ConvNet().eval(), (x,)), tmp_path)
    assert evaluated.exported_training is False
    with pytest.raises(RuntimeError, match="exported in eval mode"):
        evaluated.module().train()


def test_a_dim_name_for_a_symbol_the_program_lacks_is_refused(tmp_path):
    _, ep = _mlp_program()
    buf = io.BytesIO()
    st.save(ep, buf)
    doc, tensors = parts(buf.getvalue())
    assert doc["version"] == [2, 3] and doc["dim_names"]
    for bad in ([["s999", "batch"]], [[doc["dim_names"][0][0], "not a name"]]):
        doc["dim_names"] = bad
        with pytest.raises(st.LoadError, match="dim_names"):
            st.load(pack(doc, tensors))
    del doc["dim_names"], doc["training"]
    with pytest.raises(st.LoadError, match="missing field"):  # a 2.1 file has them
        st.load(pack(doc, tensors))
    doc["version"] = [2, 0]  # a 2.0 file: no names, eval mode
    old = st.load(pack(doc, tensors))
    assert old.dim_names == {} and old.exported_training is False
    json.dumps(doc)


@dataclasses.dataclass
class Pair:
    x: torch.Tensor
    y: torch.Tensor


st.register_dataclass(Pair)


class PairModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, p: Pair):
        return self.lin(p.x) * p.y


def test_dataclass_inputs_survive_torch_export_save_and_load(tmp_path, monkeypatch):
    # torch.export.load unpickles example inputs holding a user class with weights_only=
    # False after a weights_only failure (torch.export's own programs alike), and logs that
    # with a malformed format string, which pytest's log capture turns into an error
    monkeypatch.setattr(logging.getLogger("torch._export.serde.serialize"), "disabled", True)
    model = PairModel().eval()
    n = st.Dim("n", min=1, max=16)
    p = Pair(torch.randn(3, 4), torch.randn(3, 4))
    ep = st.export(model, (p,), dynamic_shapes={"p": Pair(x={0: n}, y={0: n})})
    path = tmp_path / "pair.pt2"
    torch.export.save(ep.to_torch(), path)
    loaded = torch.export.load(path)
    loaded.validate()
    converted, ours = loaded.module(), ep.module()
    for rows in (1, 5):
        q = Pair(torch.randn(rows, 4), torch.randn(rows, 4))
        assert same_behaviour(ours, converted, (q,), {}) == "ok"
        torch.testing.assert_close(converted(q), model(q))
    for bad in (Pair(torch.randn(17, 4), torch.randn(17, 4)),
                Pair(torch.randn(2, 4), torch.randn(3, 4))):
        assert same_behaviour(ours, converted, (bad,), {}) == "rejected"
