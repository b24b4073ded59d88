"""The graph viewer: ``ep.to_html()``, ``safetrace show --html`` and ``--summary``.

Content is checked in Python; where Debian's Chromium is installed, the page is also
rendered headless and must run its script to the end without a JavaScript error."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest
import torch
from torch import nn

import safetrace as st
from safetrace import cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.lin(x)).relu()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = Block()
        self.second = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.second(self.first(x))
        y = torch.cond(y.sum() > 0, lambda t: t * 2, lambda t: t - 1, (y,))
        return y[:, :2] + 1  # <script>alert("not from the page")</script>


@pytest.fixture(scope="module")
def program():
    torch.manual_seed(0)
    model = Net().eval()
    batch = st.Dim("batch", max=64)
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes={"x": (batch, None)})
    m = ep.module()
    for n in (0, 1, 5, 64):  # the program is right at other sizes, 0 and 1 included
        x = torch.randn(n, 4)
        with torch.no_grad():
            assert torch.allclose(m(x), model(x), atol=1e-6), n
    for bad in (torch.randn(65, 4), torch.randn(3, 5)):  # outside the declared space
        with pytest.raises(st.InputMismatchError):
            m(bad)
    return ep


def test_to_html_content(program, tmp_path):
    page = program.to_html(tmp_path / "graph.html", title="Net")
    assert (tmp_path / "graph.html").read_text(encoding="utf-8") == page
    calls = [n for n in program.graph.nodes if n.op == "call_function"]
    for n in calls:  # every node has a row, and the drawn ones a box
        assert f'data-name="{n.name}"' in page
    assert page.count('class="node"') >= len(calls)
    # grouped by module, with the modules' classes
    assert "<code>first</code>" in page and "<code>first.lin</code>" in page
    assert "<code>second.norm</code>" in page and "LayerNorm" in page
    # symbolic shapes and the user's source lines
    assert "f32[s0, 4]" in page and "f32[s0, 2]" in page
    assert "test_viewer.py:31" in page and "self.norm(self.lin(x)).relu()" in page
    # the contract in words and the dims report
    assert "Input contract:" in page and "0 &lt;= s0 &lt;= 64" in page
    assert "x.shape[0]" in page and "dynamic s0" in page
    # the op histogram counts calls, the control-flow subgraphs' included
    assert re.search(r"aten\.linear\.default</code></td><td class=\"count\">2<", page)
    assert re.search(r"aten\.mul\.Tensor</code></td><td class=\"count\">1<", page)
    assert "higher_order.cond" in page and "true_graph_0" in page


def test_page_is_self_contained_and_escaped(program):
    page = program.to_html()
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert page.count("<script>") == 1  # only the page's own
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    assert re.findall(r"https?://[^\s\"'<]+", page) == ["http://www.w3.org/2000/svg"]


def test_cli_show_html_and_summary(program, tmp_path, capsys):
    path = tmp_path / "net.st"
    st.save(program, path)
    out = tmp_path / "net.html"
    assert cli.main(["show", "--html", str(path), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<code>first.lin</code>" in page and "f32[s0, 4]" in page  # kept by the file
    assert cli.main(["show", "--summary", str(path)]) == 0
    text = capsys.readouterr().out
    assert "parameters: 56 elements in 8 tensors" in text
    assert re.search(r"^\s+2  aten\.linear\.default", text, re.M)
    assert "x.shape[0]: dynamic s0" in text and "inputs: 1, outputs: 1" in text
    assert cli.main(["show", "--html", str(path)]) == 0  # without -o: standard output
    assert capsys.readouterr().out == page  # the same page as with -o
    assert cli.main(["show", str(path)]) == 0  # plain show is unchanged
    assert "class GraphModule" in capsys.readouterr().out


def test_renders_in_headless_chromium(program, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed: apt-get install -y chromium")
    page = tmp_path / "graph.html"
    program.to_html(page)
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    assert 'data-viewer="ready"' in dom, "the page's script did not finish"
    assert not re.search(r"Uncaught|CONSOLE.*Error", run.stderr), run.stderr[-2000:]
    rows = len([n for n in program.graph.nodes])
    assert re.search(r"viewer ready: (\d+) nodes", dom)
    assert int(re.search(r"viewer ready: (\d+) nodes", dom).group(1)) >= rows
    for n in program.graph.nodes:
        assert f'data-name="{n.name}"' in dom
