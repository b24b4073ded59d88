"""Let the symbolic tests run even while the top-level package is mid-edit or broken."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

_PKG = pathlib.Path(__file__).resolve().parents[2] / "safetrace"


def _stub_parent_package() -> None:
    # safetrace.symbolic is self-contained; only its parent's __init__ pulls in torch layers.
    for name in [m for m in sys.modules if m == "safetrace" or m.startswith("safetrace.")]:
        del sys.modules[name]
    mod = types.ModuleType("safetrace")
    mod.__path__ = [str(_PKG)]  # type: ignore[attr-defined]
    mod.__spec__ = importlib.util.spec_from_loader("safetrace", loader=None, is_package=True)
    sys.modules["safetrace"] = mod


try:
    import safetrace  # noqa: F401
except Exception:  # noqa: BLE001
    _stub_parent_package()
