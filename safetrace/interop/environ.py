"""Environment variables the conversion reads on every call (``SAFETRACE_VERIFY_TO_TORCH``,
``TORCH_TRACE``), read from ``os.environ``'s own table where it keeps one (POSIX: encoded
keys and values, the table its writes update) rather than through ``Mapping.get``'s
Python calls (~0.7 µs each; ``symbols.quiet`` asks per symbol); elsewhere the public way."""

from __future__ import annotations

import os

_POSIX = os.name == "posix"
_KEYS: dict[str, bytes] = {}  # (name -> its encoded key)


def env_value(name: str) -> str:
    """The variable's value ("" when unset), as ``os.environ.get(name, "")`` gives it."""
    data = getattr(os.environ, "_data", None)
    if _POSIX and type(data) is dict:
        key = _KEYS.get(name)
        if key is None:
            key = _KEYS[name] = os.fsencode(name)
        value = data.get(key)
        return "" if value is None else os.fsdecode(value)
    return os.environ.get(name, "")
