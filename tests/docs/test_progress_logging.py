"""The ``safetrace`` logger says what an export guarded, specialized and unified, with
the user's names and lines; progress for long steps appears only where asked for."""

from __future__ import annotations

import io
import logging

import pytest
import torch

import safetrace as st
from safetrace import progress


class Branchy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, x, y):
        if x.shape[0] > 2:
            x = x * 2
        return (x + y) @ self.w


def _export_checked():
    model = Branchy()
    spec = {"x": (st.Dim.AUTO, st.Dim.AUTO), "y": (st.Dim.AUTO, st.Dim.AUTO)}
    ep = st.export(model, (torch.randn(5, 4), torch.randn(5, 4)), dynamic_shapes=spec)
    m = ep.module()
    for n in (3, 8):  # other sizes compute what eager computes
        x, y = torch.randn(n, 4), torch.randn(n, 4)
        assert torch.allclose(m(x, y), model(x, y), atol=1e-6)
    for x, y in [(torch.randn(2, 4), torch.randn(2, 4)),   # the guard x.shape[0] >= 3
                 (torch.randn(4, 4), torch.randn(5, 4)),   # unified: equal rows
                 (torch.randn(4, 5), torch.randn(4, 5))]:  # specialized: 4 columns
        with pytest.raises(st.InputMismatchError):
            m(x, y)
    return ep


def test_debug_log_says_what_was_decided_and_where(caplog):
    with caplog.at_level(logging.DEBUG, logger="safetrace"):
        _export_checked()
    lines = [r.getMessage() for r in caplog.records if r.name == "safetrace"]
    text = "\n".join(lines)
    assert any(m.startswith("guard s0 >= 3 (s0 = x.shape[0]) at test_progress_logging.py:")
               and "`if x.shape[0] > 2:`" in m for m in lines), text
    assert "unified s2 (s2 = y.shape[0]) with s0 (s0 = x.shape[0])" in text
    assert "specialized s1 (s1 = x.shape[1]) to 4" in text
    assert "`return (x + y) @ self.w`: the program needs them equal" in text


def test_quiet_by_default(caplog):
    with caplog.at_level(logging.INFO, logger="safetrace"):
        _export_checked()
    assert not [r for r in caplog.records if r.name == "safetrace"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_lines(monkeypatch):
    log = io.StringIO()
    with progress.task("saving", verbose=True, stream=log):
        pass
    assert log.getvalue().startswith("safetrace: saving ...\n")
    assert "safetrace: saving: done in" in log.getvalue()

    for verbose in (False, None):  # off, and not a terminal
        quiet = io.StringIO()
        with progress.task("saving", verbose=verbose, stream=quiet):
            pass
        assert quiet.getvalue() == ""

    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    tty = _Terminal()
    with pytest.raises(KeyError):
        with progress.task("converting", stream=tty):
            with progress.task("inner step", stream=tty):  # part of the outer one
                import time
                time.sleep(0.1)
                raise KeyError("x")
    out = tty.getvalue()
    assert "\rsafetrace: converting ... 0 s" in out and "inner step" not in out
    assert "safetrace: converting: failed in" in out and out.endswith(" s\n")

    monkeypatch.setenv("SAFETRACE_PROGRESS", "0")
    assert not progress.enabled(None, _Terminal())


def test_to_torch_reports_progress(capsys):
    ep = _export_checked()
    ep.to_torch(verbose=True)
    err = capsys.readouterr().err
    assert "safetrace: ep.to_torch(): building torch.export's program ..." in err
    assert "done in" in err
    ep.to_torch(verbose=False)
    assert "safetrace:" not in capsys.readouterr().err


def test_the_tools_page_shows_real_log_lines(tmp_path):
    """docs/tools.md's sample is what the logger prints for the model it describes."""
    import pathlib
    import re
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    page = (root / "docs" / "tools.md").read_text()
    sample = re.search(r"```\n(safetrace: guard .*?)```", page, re.S).group(1)
    expected = [line for line in sample.splitlines() if line != "..."]
    (tmp_path / "model.py").write_text(
        "import logging, torch, safetrace as st\n"
        "logging.basicConfig(format='%(name)s: %(message)s')\n"
        "logging.getLogger('safetrace').setLevel(logging.DEBUG)\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(s): super().__init__(); s.w = torch.nn.Parameter(torch.randn(4, 3))\n"
        "    def forward(self, x, y):\n"
        "        if x.shape[0] > 2:\n"
        "            x = x * 2\n"
        "        return (x + y) @ self.w\n"
        "spec = {'x': (st.Dim.AUTO, st.Dim.AUTO), 'y': (st.Dim.AUTO, st.Dim.AUTO)}\n"
        "model = M()\n"
        "ep = st.export(model, (torch.randn(5, 4), torch.randn(5, 4)), dynamic_shapes=spec)\n"
        "m = ep.module()\n"
        "for n in (3, 8):\n"
        "    x, y = torch.randn(n, 4), torch.randn(n, 4)\n"
        "    assert torch.allclose(m(x, y), model(x, y), atol=1e-6)\n"
        "try:\n"
        "    m(torch.randn(2, 4), torch.randn(2, 4))\n"
        "except st.InputMismatchError:\n"
        "    print('refused')\n")
    out = subprocess.run([sys.executable, "model.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**__import__("os").environ,
                                                      "PYTHONPATH": str(root)})
    assert out.returncode == 0 and out.stdout == "refused\n", out.stderr[-2000:]
    logged = out.stderr.splitlines()
    for line in expected:
        assert line in logged, f"{line!r} not in {logged}"
