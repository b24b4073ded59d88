"""Saving and loading need no numpy (not a dependency): the wheel installs without it."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.modules["numpy"] = None  # as in an environment without numpy: torch's .numpy() fails
import io, os, tempfile, torch, safetrace as st
try:
    torch.ones(2).numpy()
except (RuntimeError, ImportError):
    pass
else:
    raise SystemExit("numpy still reachable: the test would prove nothing")
m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
b = st.Dim("b", min=1, max=32)
ep = st.export(m, (torch.randn(2, 3),), dynamic_shapes=({0: b},))
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "m.st")
    st.save(ep, path)
    buf = io.BytesIO()
    st.save(ep, buf)
    for src in (path, io.BytesIO(buf.getvalue())):
        back = st.load(src)
        for n in (1, 7):
            x = torch.randn(n, 3)
            torch.testing.assert_close(back.module()(x), m(x))
        try:
            back.module()(torch.randn(33, 3))
        except st.InputMismatchError:
            pass
        else:
            raise SystemExit("b = 33 ran")
print("ok")
"""


def test_save_and_load_without_numpy():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "ok"
