"""The documentation is true to the code: the site builds with --strict (broken links and
stale API references fail), every relative link in the README and the pages resolves,
the README stays a front page, and its quick start and the getting-started page run."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import torch

import safetrace as st

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def _run(code: str, tmp_path: pathlib.Path, name: str) -> subprocess.CompletedProcess:
    script = tmp_path / name
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_mkdocs_build_strict(tmp_path):
    mkdocs = shutil.which("mkdocs") or str(pathlib.Path(sys.executable).parent / "mkdocs")
    if not os.path.exists(mkdocs):
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([mkdocs, "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    html = (tmp_path / "site" / "api" / "index.html").read_text()
    # mkdocstrings rendered the docstrings, not just the headings
    assert "Capture" in html and "ExportedProgram" in html


@pytest.mark.parametrize("page", [README, ROOT / "ARCHITECTURE.md", *PAGES],
                         ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.name}: links to missing files: {broken}"


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [p.name for p in PAGES if f": {p.name}" not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    lines = text.splitlines()
    first = lines[lines.index("```") + 1: lines.index("```") + 3]
    assert first[0].startswith("make demo") and first[1].startswith("make test")
    assert "session" not in text.lower()  # development logs live in docs/, not here


def test_readme_quick_start_runs(tmp_path, monkeypatch, capsys):
    code = _python_blocks(README.read_text())[0]
    assert len(code.splitlines()) <= 16
    # run as a script in this process (a fresh one cost ~3 s of CPU more, importing torch and
    # safetrace), in tmp_path, its random draws kept from later tests
    monkeypatch.chdir(tmp_path)
    with torch.random.fork_rng():
        exec(compile(code, str(tmp_path / "quick_start.py"), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Input contract:" in out
    assert "input.shape[1]" in out and "Fix:" in out  # the refusal printed
    assert (tmp_path / "model.st").exists()


@pytest.mark.slow
def test_getting_started_runs(tmp_path):
    code = "\n".join(_python_blocks((DOCS / "getting-started.md").read_text()))
    out = _run(code, tmp_path, "getting_started.py")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "1 <= s0 <= 1024" in out.stdout
    assert "torch.ops.aten.mul.Tensor(relu, 2.0)" in out.stdout  # `scale` folded, as said
    assert "Fix: n = Dim('n', min=3)" in out.stdout
    assert (tmp_path / "model.onnx").exists()


def test_ops_page_is_up_to_date():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_op_list
    finally:
        sys.path.remove(str(ROOT / "tools"))
    assert gen_op_list.op_list() in (DOCS / "ops.md").read_text(), \
        "docs/ops.md is stale: python tools/gen_op_list.py"


def test_migration_guide_names_exist():
    text = (DOCS / "migration.md").read_text()
    rows = [r.split(" | ") for r in text.splitlines() if r.startswith("| ") and "---" not in r]
    ours = " ".join(r[1] for r in rows if len(r) >= 2)
    for name in set(re.findall(r"\bst\.(\w+)", ours)):
        assert hasattr(st, name), f"migration.md names st.{name}, which does not exist"
    ep = st.export(lambda x: x + 1, (__import__("torch").ones(2),))
    for name in set(re.findall(r"(?<!to_torch\(\)\.)\bep\.(\w+)", ours)):
        assert hasattr(ep, name), f"migration.md names ep.{name}, which does not exist"


def test_readme_figures_are_documented_with_their_runs():
    """Every figure in the README's "Why" comes from a dated run described in docs/."""
    text = README.read_text()
    why = text[text.index("## Why"):text.index("## Install")]
    figures = set(re.findall(r"\d[\d,]*(?:\.\d+)?(?:/\d+)?", why))
    assert len(figures) >= 10
    runs = (DOCS / "benchmarks.md").read_text() + (DOCS / "development.md").read_text()
    compared = (DOCS / "vs-torch-export.md").read_text()
    missing = [f for f in figures if f != "0/1" and not (f in runs and f in compared)]
    assert not missing, f"README figures without a documented run: {missing}"
