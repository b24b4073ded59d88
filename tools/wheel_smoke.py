"""Smoke test of an installed safetrace wheel, run by tools/wheel_smoke.sh in a clean venv.

Only the declared dependencies are installed there (numpy is not): export a small conv net
with a dynamic batch, save it, load it in a fresh process, call it on other sizes, compare
with eager, and check that an input outside the declared space is rejected.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile

import torch

import safetrace as st

assert importlib.util.find_spec("numpy") is None, "numpy is installed: not a clean venv"
assert "site-packages" in st.__file__, f"safetrace imported from {st.__file__}, not the wheel"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 2)
        self.register_buffer("scale", torch.tensor([0.5, 2.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3))) * self.scale


LOAD_AND_CALL = """
import sys, torch, safetrace as st
ep = st.load(sys.argv[1])
for x, ref in torch.load(sys.argv[2]):
    out = ep.module()(x)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    print(x.shape[0], float((out - ref).abs().max()))
try:
    ep.module()(torch.randn(2, 3, 9, 8))
except st.InputMismatchError as e:
    print("rejected:", str(e).splitlines()[0])
else:
    raise SystemExit("an input outside the declared space ran")
"""


def main() -> None:
    torch.manual_seed(0)
    model = Net().eval()
    batch = st.Dim("batch", min=1, max=64)
    ep = st.export(model, (torch.randn(2, 3, 8, 8),), dynamic_shapes={"x": {0: batch}})
    for n in (1, 3, 7):
        x = torch.randn(n, 3, 8, 8)
        torch.testing.assert_close(ep.module()(x), model(x))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "net.st")
        st.save(ep, path)
        ref = os.path.join(tmp, "ref.pt")
        xs = [torch.randn(n, 3, 8, 8) for n in (1, 5)]  # other sizes than the example's
        with torch.no_grad():
            torch.save([(x, model(x)) for x in xs], ref)
        out = subprocess.run([sys.executable, "-c", LOAD_AND_CALL, path, ref],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = out.stdout.splitlines()
        for line in lines[:2]:
            assert float(line.split()[1]) < 1e-5, line
        assert lines[2].startswith("rejected:"), lines
        cli = os.path.join(os.path.dirname(sys.executable), "safetrace")  # the entry point
        show = subprocess.run([cli, "show", path],
                              capture_output=True, text=True)
        assert show.returncode == 0 and "batch" in show.stdout, show.stdout + show.stderr
    print("wheel smoke test passed:", st.__file__)
    print(out.stdout.strip())


if __name__ == "__main__":
    main()
