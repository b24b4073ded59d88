"""Save an exported program, then load and run it in a fresh Python process that never
sees the model's class: the file holds the graph, the weights and the input contract,
and loading it runs no code from it (no pickle).

    python examples/save_load.py [--out DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

import torch
from torch import nn

import safetrace as st


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.out = nn.Linear(32, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.layer(self.embed(tokens)).mean(dim=1))


# Run by the fresh process: only torch and safetrace, no Encoder class.
LOADER = """
import sys, torch, safetrace as st
ep = st.load(sys.argv[1])
print(ep.describe_contract())
tokens = torch.load(sys.argv[2])
torch.save(ep.module()(tokens), sys.argv[3])
try:
    ep.module()(tokens[:, :0])  # seq 0: Dim("seq", min=1) was declared
except st.InputMismatchError as err:
    print("refused:", str(err).splitlines()[0])
"""


def main(out_dir: pathlib.Path) -> None:
    torch.manual_seed(0)
    model = Encoder().eval()
    batch, seq = st.Dim("batch", min=1, max=32), st.Dim("seq", min=1, max=512)
    example = torch.randint(0, 100, (2, 7))
    ep = st.export(model, (example,), dynamic_shapes={"tokens": (batch, seq)})
    path = out_dir / "encoder.st"
    st.save(ep, path)
    print(f"saved {path.name}: {path.stat().st_size} bytes")

    for shape in [(3, 11), (1, 1)]:
        tokens = torch.randint(0, 100, shape)
        torch.save(tokens, out_dir / "tokens.pt")
        run = subprocess.run([sys.executable, "-c", LOADER, str(path),
                              str(out_dir / "tokens.pt"), str(out_dir / "out.pt")],
                             capture_output=True, text=True, check=True)
        print(run.stdout.strip())
        got = torch.load(out_dir / "out.pt")
        with torch.no_grad():
            expected = model(tokens)
        assert torch.allclose(got, expected, atol=1e-5), shape
        print(f"tokens {shape}: the loaded program in a fresh process matches eager")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=None)
    ns = parser.parse_args()
    if ns.out is None:
        with tempfile.TemporaryDirectory() as tmp:
            main(pathlib.Path(tmp))
    else:
        main(ns.out)
