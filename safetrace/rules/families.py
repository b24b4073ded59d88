"""Imports every rule family module so that their rules are registered."""

import importlib
import pkgutil

import safetrace.rules as _pkg

for _info in pkgutil.iter_modules(_pkg.__path__):
    if _info.name not in {"registry", "common", "families"}:
        importlib.import_module(f"safetrace.rules.{_info.name}")
