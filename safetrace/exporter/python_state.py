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

import contextlib
import functools
from typing import Any, Callable

import torch

from safetrace import errors as E
from safetrace.exporter.compare import same_program
from safetrace.exporter.global_caches import GlobalCaches
from safetrace.exporter.program import ExportedProgram
from safetrace.exporter.snapshot import ABSENT, CONTENTS
from safetrace.exporter.watched import watched
from safetrace.trace import memo


def check(ep: ExportedProgram, runs: list, again: Callable[[], ExportedProgram],
          caches: GlobalCaches | None = None) -> None:
    """Refuse `ep` if tracing with each attribute forward changed at its new value
    (`again`, which appends its exporters to `runs`) gives another program.  `runs`: the
    exporters that traced `ep` (each with its ``python_state``: (path, module, attribute,
    value before, value after), or for a list/dict/set attribute (path, the container,
    CONTENTS, items before, items after)).  `caches`: the export's module-level watch
    (global_caches.py), whose changes are checked in that form too.

    A string, bool or None forward changes is followed until it comes back to a value
    traced before (``self.mode`` rotating "a" -> "b" -> "c" -> "a": three traces, each the
    same program, or refused): `_ROUNDS` traces at most, then refused."""
    outside = caches.changes() if caches is not None else []
    if not outside:  # (the usual answer, without the tables below)
        for run in runs:
            if run.python_state:
                break
        else:
            return
    graph, kept_state = ep.graph, _unwritten_buffers(ep)
    changed = {c[0]: c for c in [*(c for run in runs for c in run.python_state), *outside]
               if not _memo_only(c, graph, kept_state)}
    if not changed:
        return
    kept: dict[tuple, tuple] = {}  # (id(owner), key) -> (owner, key, its value before)
    first = {p: c[3] for p, c in changed.items()}  # each value as export found it
    now = {p: c[4] for p, c in changed.items()}  # each value to trace with next
    history = {p: [v] for p, v in first.items()}  # the values traced so far, per path
    seen = [{p: v for p, v in first.items() if _cycles(v)}]  # strings, bools, Nones traced
    decided: list[str] = []  # where forward's Python decided on a watched number
    same = False
    try:
        for _ in range(_ROUNDS):
            for path, (_, owner, key, _, _) in changed.items():
                if history[path][-1] is not now[path]:
                    history[path].append(now[path])
                if key is CONTENTS:  # a list/dict/set attribute: its items
                    kept.setdefault((id(owner), key), (owner, key, type(owner)(owner)))
                    _fill(owner, _items_stand_in(now[path], first[path]))
                    continue
                kept.setdefault((id(owner), key), (owner, key, owner.__dict__.get(key, ABSENT)))
                owner.__dict__[key] = watched(_stand_in(first[path], now[path]), path, decided)
            seen.append({p: v for p, v in now.items() if _cycles(v)})
            other, after = _again(runs, again, caches)
            same = other is not None and same_program(ep, other, {}, set())
            if not same or decided:
                break
            fresh = False  # state this trace changed that no trace has had yet
            for c in after:
                path = c[0]
                if path not in changed:  # (changed only at the values traced now)
                    if _memo_only(c):
                        continue
                    changed[path], first[path], history[path] = c, c[3], [c[3]]
                    now[path], fresh = c[4], True
                elif _cycles(c[4]) or _cycles(now[path]):
                    now[path] = c[4]
            state = {p: v for p, v in now.items() if _cycles(v)}
            if not fresh and any(_same_values(state, s, first) for s in seen):
                return
        else:  # (new values after _ROUNDS traces: the program may differ at a later one)
            raise E.python_state_unsettled(
                [(p, _path_shown(history[p]), _Shown(now[p])) for p in changed
                 if _cycles(now[p]) and now[p] is not history[p][-1]], _ROUNDS + 1)
    finally:
        for mod, key, value in reversed(kept.values()):
            if key is CONTENTS:
                _fill(mod, value)
            elif value is ABSENT:
                mod.__dict__.pop(key, None)
            else:
                mod.__dict__[key] = value
    listed = sorted(changed.values(), key=lambda c: c[2] is CONTENTS)  # (the fix's buffer)
    _, _, key, old, new = listed[0]
    initial = None if key is CONTENTS else _stand_in(None, new) \
        if old is ABSENT or old is None else old
    raise E.python_state_read([(path, _path_shown(history[path][:-1]),
                                _Shown(history[path][-1])) for path, *_ in listed],
                              initial, decided[0] if same else None)


def _again(runs: list, again: Callable[[], ExportedProgram],
           caches: GlobalCaches | None) -> tuple[ExportedProgram | None, list]:
    """Trace again: the program (None where that export fails) and the Python state that
    trace changed (the model's attributes from its exporters, the module-level names from
    a watch of the same namespaces)."""
    start = len(runs)
    inner = GlobalCaches(caches.model, caches.fn) if caches is not None else None
    try:
        with inner if inner is not None else contextlib.nullcontext():
            try:
                other = again()
            except E.ExportError:
                return None, []
            after = [c for run in runs[start:] for c in run.python_state]
            return other, after + (inner.changes() if inner is not None else [])
    finally:  # (op calls remembered with watched numbers as arguments: forgotten)
        memo.refresh()


_ROUNDS = 4  # traces again at most (a string cycling through up to five values settles)


def _cycles(value: Any) -> bool:
    """Whether a value forward changes is followed round by round (not a number: those are
    watched, any decision on one refused; not a container or tensor: traced once)."""
    return type(value) in (str, bool, bytes, type(None))


def _same_values(a: dict, b: dict, first: dict) -> bool:
    """Whether two rounds' strings/bools/Nones agree (a path missing from one: its value
    as export found it)."""
    return all(type(a.get(p, first[p])) is type(b.get(p, first[p])) and
               a.get(p, first[p]) == b.get(p, first[p]) for p in {*a, *b})


def _path_shown(values: list) -> str:
    return " -> ".join("unset" if v is ABSENT else _shown(v) for v in values)


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
        # its dtype to trace again with (sizes from the input's: any plain value), whose
        # values differ from the one it replaces where it has that one's form (a program
        # reading them then reads other constants: ``self.c = self.c + 1`` is told apart)
        meta = new.st_meta
        shape = [s if type(s) is int else 2 for s in meta.shape]
        if isinstance(old, torch.Tensor) and not hasattr(old, "st_meta") and \
                list(old.shape) == shape and old.dtype == meta.dtype:
            with torch.no_grad():
                return (old == 0).to(meta.dtype)
        return torch.zeros(shape, dtype=meta.dtype)
    return new


def _unwritten_buffers(ep: ExportedProgram) -> frozenset:
    """The placeholder names of `ep`'s buffers that no write of the program may reach."""
    written = ep.written_placeholders()
    return frozenset(name for name in ep.graph_signature.inputs_to_buffers
                     if name not in written)


def _memo_only(change: tuple, graph: Any = None, buffers: frozenset = frozenset()) -> bool:
    """Whether a change only fills a memo: new keys of a dict, or an attribute that was
    unset or None, holding tensors of static shape computed by factories from sizes and
    parameters alone (``self._tables[n] = torch.arange(n) * 2``), or from the buffers of
    `graph` (the program's) named in `buffers`, which no write of it reaches (LeViT's
    ``self.cache[device] = self.attention_biases[:, self.attention_bias_idxs]``).  Eager's later reads give
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
    return bool(added) and all(_pure(v, graph, buffers) for v in added)


_KEPT = ("parameter",)  # the only placeholders a memo's tensor may be computed from


def _pure(value: Any, graph: Any = None, buffers: frozenset = frozenset()) -> bool:
    node = getattr(value, "st_node", None)
    if node is None or not all(type(s) is int for s in value.st_meta.shape):
        return False
    todo, seen = [node], {node}
    while todo:
        n = todo.pop()
        if n.op == "placeholder" and n.meta.get("kind") not in _KEPT and not (
                n.meta.get("kind") == "buffer" and n.graph is graph and n.name in buffers):
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


def _items_stand_in(items: Any, before: Any = None) -> Any:
    """A container's new items with each value from the input's sizes made plain (a
    tensor unlike the item it replaces: `before`, the items export found)."""
    if isinstance(items, dict):
        kept = before if isinstance(before, dict) else {}
        return {k: _stand_in(kept.get(k), v) for k, v in items.items()}
    old = list(before) if isinstance(before, (list, tuple)) and len(before) == len(items) \
        else [None] * len(items)
    plain = functools.partial(_stand_in, None)
    return type(items)(tuple(map(plain, i)) if type(i) is tuple else _stand_in(o, i)
                       for i, o in zip(items, old))


def _fill(container: Any, items: Any) -> None:
    container.clear()
    if isinstance(container, list):
        container.extend(items)
    else:
        container.update(items)
