"""A small convolutional classifier: export with a dynamic batch and image size, convert
to ONNX, and run it with onnxruntime at sizes other than the example's.

    pip install onnx onnxscript onnxruntime
    python examples/vision_onnx.py [--out DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import torch
from torch import nn

import safetrace as st


class SmallNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images).flatten(1))


def main(out_dir: pathlib.Path) -> None:
    import onnxruntime as ort

    torch.manual_seed(0)
    model = SmallNet().eval()
    batch = st.Dim("batch", min=1, max=64)
    # MaxPool2d(2) needs at least 2 pixels; Dim.AUTO lets the program find that out
    spec = {"images": (batch, None, st.Dim.AUTO, st.Dim.AUTO)}
    ep = st.export(model, (torch.randn(2, 3, 32, 48),), dynamic_shapes=spec)
    print(ep.describe_contract())

    path = out_dir / "smallnet.onnx"
    st.to_onnx(ep, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    print(f"ONNX input {inp.name}: {inp.shape}")  # the dims carry the name "batch"
    assert inp.shape[0] == "batch", inp.shape

    for shape in [(1, 3, 32, 48), (5, 3, 64, 64), (3, 3, 17, 9), (1, 3, 2, 2)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            expected = model(x)
        got = torch.from_numpy(session.run(None, {inp.name: x.numpy()})[0])
        assert torch.allclose(got, expected, atol=1e-4), shape
        assert torch.allclose(ep.module()(x), expected, atol=1e-5), shape
        print(f"{shape}: onnxruntime matches eager")

    for shape in [(65, 3, 32, 32), (1, 3, 1, 8)]:  # outside the declared space
        try:
            ep.module()(torch.randn(*shape))
        except st.InputMismatchError as err:  # refused before any operator runs
            print(f"{shape} refused: {str(err).splitlines()[0]}")
        else:
            raise AssertionError(f"{shape} was accepted")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=None)
    ns = parser.parse_args()
    if ns.out is None:
        with tempfile.TemporaryDirectory() as tmp:
            main(pathlib.Path(tmp))
    else:
        main(ns.out)
