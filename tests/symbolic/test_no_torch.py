"""safetrace.symbolic must never import torch."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from tests import sources

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = f"""
import sys, types
sys.modules['torch'] = None  # any 'import torch' now raises ImportError
pkg = types.ModuleType('safetrace')
pkg.__path__ = [{str(ROOT / 'safetrace')!r}]
sys.modules['safetrace'] = pkg
import safetrace.symbolic as S
env = S.Env()
n = S.SymInt(env.new_backed(4), env)
assert str(n * 2 + 1) == '2*s0 + 1'
assert not [m for m, v in sys.modules.items() if v is not None and m.split('.')[0] == 'torch']
print('ok')
"""


def test_symbolic_imports_without_torch() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_symbolic_sources_never_mention_torch_imports() -> None:
    import ast
    for path in (ROOT / "safetrace" / "symbolic").glob("*.py"):
        for node in ast.walk(sources.tree(path)):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "torch" for a in node.names), path
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "torch", path


def test_module_sizes() -> None:
    for path in (ROOT / "safetrace" / "symbolic").glob("*.py"):
        assert len(path.read_text().splitlines()) <= 550, path
