"""The public API is reachable however the package was imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_export_is_the_function_even_after_importing_internals():
    code = ("import safetrace.exporter.program, safetrace.exporter.api\n"
            "import safetrace as st, torch\n"
            "ep = st.export(lambda x: x + 1, (torch.ones(2),))\n"
            "print(type(st.export).__name__, ep.module()(torch.ones(2)).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "function [2.0, 2.0]" in out.stdout


def test_public_names():
    import safetrace as st

    for name in ("export", "explain", "Dim", "ShapesCollection", "check", "custom_op",
                 "register_fake", "new_dynamic_size", "save", "load", "register_dataclass",
                 "register_pytree_node", "register_shape_rule", "ExportError",
                 "UnsupportedInputError", "ConstraintViolationError", "DataDependentError",
                 "UnsupportedOpError", "InputMismatchError", "LoadError"):
        assert getattr(st, name) is not None, name


def test_the_namespace_holds_only_the_api():
    code = ("import safetrace as st\n"
            "print(' '.join(dir(st)))\n"
            "print(hasattr(st, 'Any'), hasattr(st, 'annotations'), hasattr(st, 'importlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    names, helpers = out.stdout.splitlines()
    import safetrace as st

    assert names.split() == sorted([*st.__all__, "__version__"])
    assert helpers == "False False False"
    for name in ("Any", "annotations", "importlib", "exporter", "symbolic"):
        assert name not in dir(st), name
    for name in st.__all__:
        assert getattr(st, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        st.nope  # noqa: B018


def test_version_is_the_package_version():
    import importlib.metadata

    import safetrace as st

    try:
        installed = importlib.metadata.version("safetrace")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("safetrace is not installed (run from a checkout without pip install -e)")
    assert st.__version__ == installed
