"""The generate example of docs/llm.md runs as written (its own assert compares the tokens
with eager generate)."""

import importlib.util
import os
import pathlib
import re

import pytest

if importlib.util.find_spec("transformers") is None:  # (imported when the example runs)
    pytest.skip("needs transformers: pip install -c constraints.txt -e '.[dev]'",
                allow_module_level=True)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
PAGE = pathlib.Path(__file__).parents[2] / "docs" / "llm.md"


def test_the_generate_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    example = next(b for b in blocks if "def generate(" in b)
    assert "assert generate(ep, prompt, 20) == eager" in example
    exec(compile(example, str(PAGE), "exec"), {"__name__": "docs_llm"})  # noqa: S102
