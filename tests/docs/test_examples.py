"""Every script in examples/ runs to the end and prints what it promises (each one also
asserts its own results against eager PyTorch, at other sizes, and the refusals)."""

from __future__ import annotations

import os
import pathlib
import runpy
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(name: str, tmp_path: pathlib.Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


def test_every_example_is_tested_and_listed():
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    tested = {"vision_onnx.py", "cond_model.py", "custom_op.py", "save_load.py",
              "llm_generate.py", "detector.py", "batched_detector.py"}
    assert set(scripts) == tested
    listing = (EXAMPLES / "README.md").read_text()
    assert all(f"`{s}`" in listing for s in scripts)
    page = (ROOT / "docs" / "examples.md").read_text()  # the site shows each one's source
    assert all(f'--8<-- "examples/{s}"' in page for s in scripts)


@pytest.mark.slow
def test_vision_onnx(tmp_path):
    pytest.importorskip("onnxruntime", reason="pip install onnx onnxscript onnxruntime")
    out = _run("vision_onnx.py", tmp_path, "--out", str(tmp_path))
    assert out.count("onnxruntime matches eager") == 4
    assert "ONNX input images: ['batch', 3," in out
    assert out.count("refused:") == 2
    assert (tmp_path / "smallnet.onnx").exists()


@pytest.mark.slow  # eager torch.cond goes through torch.compile: ~10 s
def test_cond_model(tmp_path):
    out = _run("cond_model.py", tmp_path)
    assert "Fix: use torch.cond" in out
    assert out.count("matches eager") == 5
    assert "refused: x.shape[0] = 0, but it must be >= 1" in out


@pytest.mark.slow  # a fresh process importing torch (~5 s); torch.library custom ops with
# get_ctx().new_dynamic_size are covered in-process by tests/trace/test_custom_ops.py
def test_custom_op(tmp_path):
    out = _run("custom_op.py", tmp_path)
    assert "'u0': (0, 4096)" in out
    assert "n=0: 0 values kept, matches eager" in out
    assert "refused: scale.shape[0] = 9, but it must equal x.shape[0] = 8" in out


@pytest.mark.slow  # two fresh processes importing torch
def test_save_load_in_a_fresh_process(tmp_path):
    out = _run("save_load.py", tmp_path, "--out", str(tmp_path))
    assert out.count("in a fresh process matches eager") == 2
    assert "refused: tokens.shape[1] = 0, but it must be >= 1" in out
    assert (tmp_path / "encoder.st").exists()


@pytest.mark.slow
def test_llm_generate(tmp_path):
    pytest.importorskip("transformers", reason="pip install transformers")
    out = _run("llm_generate.py", tmp_path, "--out", str(tmp_path))
    assert "20 greedy tokens from the loaded program match eager generate" in out
    assert "an empty prompt is refused" in out
    assert (tmp_path / "llama.st").exists()


def test_detector(capsys):
    # in this process (a fresh one cost ~3 s of CPU more, importing torch and safetrace): the
    # script as `python examples/detector.py` runs it, its random draws kept from later tests
    with torch.random.fork_rng():
        runpy.run_path(str(EXAMPLES / "detector.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.count("as eager") == 10
    assert "0 boxes, as eager" in out and "5 boxes, as eager" in out
    assert "a batch of 2 is refused" in out


@pytest.mark.slow  # a fresh process (~5 s); tests/export/test_batched_detector.py runs the
# same classes in-process by default
def test_batched_detector(tmp_path):
    out = _run("batched_detector.py", tmp_path)
    assert "list of images, named batch, refused: images.shape[0]" in out
    assert out.count("as eager") == 10
    assert "batch 3, 48x40: boxes per image [0, 5, 5], as eager" in out
    assert "an empty batch is refused" in out
