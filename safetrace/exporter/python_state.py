"""Plain Python attributes that ``forward`` changes (``self.n += 1``, ``self.first = False``,
``self.sizes.append(x.shape[0])``).

An exported program cannot carry them: it keeps each at the value export saw, and export
puts the model back as it was (``snapshot.py``).  That is right where nothing the graph
computes depends on the value (a call counter used for logging) and silently wrong where it
does (``return x * self.n``: eager gives ``x * 2`` on its second call, the program ``x * 1``
on every call; torch.export gives that answer too).  Told apart by tracing once more with
the attributes at the values forward left them: the same program means the graph does not
read them; another program (or an export error) is refused, naming each attribute.  A
number forward changes is traced again as a watched number (``watched.py``): forward's
Python deciding on it (``if self.calls > 2``) is refused too, since a later call can decide
otherwise while the program keeps the branch export took.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from safetrace import errors as E
from safetrace.exporter.compare import same_program
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.snapshot import ABSENT, CONTENTS
from safetrace.exporter.watched import watched
from safetrace.trace import memo


def check(ep: ExportedProgram, runs: list, again: Callable[[], ExportedProgram],
          outside: list = ()) -> None:
    """Refuse `ep` if tracing with each attribute forward changed at its new value
    (`again`) gives another program.  `runs`: the exporters that traced `ep` (each with
    its ``python_state``: (path, module, attribute, value before, value after), or for a
    list/dict/set attribute (path, the container, CONTENTS, items before, items after)).
    `outside`: the module-level names forward changed, in that form (global_caches.py)."""
    changed = [c for c in {c[0]: c for c in [*(c for run in runs for c in run.python_state),
                                             *outside]}.values() if not _memo_only(c)]
    if not changed:
        return
    kept = []
    try:
        decided: list[str] = []  # where forward's Python decided on a watched number
        for path, owner, key, old, new in changed:
            if key is CONTENTS:  # a list/dict/set attribute: its items
                kept.append((owner, key, type(owner)(owner)))
                _fill(owner, _items_stand_in(new))
                continue
            kept.append((owner, key, owner.__dict__.get(key, ABSENT)))
            owner.__dict__[key] = watched(_stand_in(old, new), path, decided)
        try:
            other = again()
        except E.ExportError:
            other = None
        finally:  # (op calls remembered with watched numbers as arguments: forgotten)
            memo.refresh()
    finally:
        for mod, key, value in reversed(kept):
            if key is CONTENTS:
                _fill(mod, value)
            elif value is ABSENT:
                mod.__dict__.pop(key, None)
            else:
                mod.__dict__[key] = value
    same = other is not None and same_program(ep, other, {}, set())
    if same and not decided:
        return
    changed.sort(key=lambda c: c[2] is CONTENTS)  # (the fix's buffer: the first attribute)
    _, _, key, old, new = changed[0]
    initial = None if key is CONTENTS else _stand_in(None, new) \
        if old is ABSENT or old is None else old
    raise E.python_state_read([(path, "unset" if was is ABSENT else _shown(was), _Shown(now))
                               for path, _, _, was, now in changed], initial,
                              decided[0] if same else None)


def _stand_in(old: Any, new: Any) -> Any:
    """The value to trace again with: `new`, or for a value computed from the input's sizes
    (``self.n = self.n + x.shape[0] % 2``: any value of its kind on the next call) a plain
    one of its kind other than `old`."""
    if isinstance(new, torch.SymBool):
        return not old if isinstance(old, bool) else True
    if isinstance(new, torch.SymInt):
        return old + 1 if type(old) is int else 1
    if isinstance(new, torch.SymFloat):
        return old + 1.0 if isinstance(old, (int, float)) and not isinstance(old, bool) else 1.0
    if isinstance(new, torch.Tensor) and hasattr(new, "st_meta"):
        # a tensor forward computed and kept (``self.hist.append(x * 2)``): a real tensor of
        # its dtype to trace again with (sizes from the input's: any plain value)
        meta = new.st_meta
        return torch.zeros([s if type(s) is int else 2 for s in meta.shape], dtype=meta.dtype)
    return new


def _memo_only(change: tuple) -> bool:
    """Whether a change only fills a memo: new keys of a dict, or an attribute that was
    unset or None, holding tensors of static shape computed by factories from sizes and
    parameters alone (``self._tables[n] = torch.arange(n) * 2``).  Eager's later reads give
    the values the program computes anew on every call.  (A list that grows, a value made
    from the one it replaces or from an input, is state: traced again.)"""
    _, _, key, old, new = change
    if key is CONTENTS:
        if not isinstance(new, dict) or any(k not in new or new[k] is not v
                                            for k, v in old.items()):
            return False
        added = [v for k, v in new.items() if k not in old]
    elif old is ABSENT or old is None:
        added = [new]
    else:
        return False
    return bool(added) and all(_pure(v) for v in added)


_KEPT = ("parameter",)  # the only placeholders a memo's tensor may be computed from


def _pure(value: Any) -> bool:
    node = getattr(value, "st_node", None)
    if node is None or not all(type(s) is int for s in value.st_meta.shape):
        return False
    todo, seen = [node], {node}
    while todo:
        n = todo.pop()
        if n.op == "placeholder" and n.meta.get("kind") not in _KEPT:
            return False
        if any(_writes(u) for u in n.users):  # (`self._t[n].add_(1)` every call: state)
            return False
        for a in n.all_input_nodes:
            if a not in seen:
                if len(seen) > 10_000:
                    return False
                seen.add(a)
                todo.append(a)
    return True


def _writes(node: Any) -> bool:
    target = node.target
    return node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and \
        target._schema.is_mutable


class _Shown:
    """A value as the error shows it (`repr`; a tensor forward computed: its dtype and rank)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return _shown(self.value)


def _shown(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        meta = getattr(value, "st_meta", value)
        return f"<tensor {str(meta.dtype).removeprefix('torch.')}, {len(meta.shape)} dims>"
    if isinstance(value, (list, tuple, set)):
        inner = ", ".join(map(_shown, value))
        return {list: f"[{inner}]", tuple: f"({inner})"}.get(type(value), f"{{{inner}}}")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _items_stand_in(items: Any) -> Any:
    """A container's new items with each value from the input's sizes made plain."""
    if isinstance(items, dict):
        return {k: _stand_in(None, v) for k, v in items.items()}
    plain = functools.partial(_stand_in, None)
    return type(items)(tuple(map(plain, i)) if type(i) is tuple else plain(i) for i in items)


def _fill(container: Any, items: Any) -> None:
    container.clear()
    if isinstance(container, list):
        container.extend(items)
    else:
        container.update(items)
