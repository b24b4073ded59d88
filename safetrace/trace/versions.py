"""Data versions per storage: which facts about tensor values an in-place write ends.

Facts about a tensor's data found while tracing (the symbol ``.item()`` gave, the value of
a 0-d tensor, its recipe, a literal's value, masks numbered by value) hold while nothing
writes its memory.  Each fact is stored with the tensor's *stamp*: the versions of every
storage the tensor may share memory with; a write bumps the versions of every storage
the written tensor may share memory with, and the fact holds while the stamp is the same.

Which storages a tensor may share memory with (its *roots*), from its graph node:

- an op result that may alias an input (views, in-place results, composites that may
  return an input, ``mutation.may_alias``) or any other call (getitem, control flow,
  Python callables): its inputs' roots, and itself;
- an op result that is always new memory: itself;
- a user input or a parameter: one storage for all of them (inputs may alias each other
  at run time, ``f(x, x)``, and a parameter the program does not write is the caller's
  own tensor, which the caller may pass as an input too);
- a buffer or a constant: its real memory (the program's own copy at run time; two
  buffers viewing one memory share it);
- anything else (a branch's placeholder, an unrecorded proxy, a tensor subclass's
  part): ``ANY``, which every write reaches, and whose write reaches everything.

Inside a branch or loop body, a placeholder stands for a tensor outside it (``ANY``): a
write to it, or to a view of it, reaches everything; a write to a tensor the body made
reaches that tensor only.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

from safetrace.meta.active import ACTIVE
from safetrace.trace.current import active_tracer
from safetrace.trace.mutation import may_alias

ANY = "any memory"   # a storage the analysis cannot name
INPUTS = "inputs"    # the user's inputs and the parameters: one storage (see the module)
_WIPE = "wipe"       # version key bumped by a write that may reach anything
_SERIAL = itertools.count(1)


class Versions:
    """One trace's data versions: storage key -> the number of writes that reached it,
    and each graph node's roots (computed once)."""

    __slots__ = ("serial", "counts", "roots")

    def __init__(self) -> None:
        self.serial = next(_SERIAL)  # (stamps of two traces never compare equal)
        self.counts: dict = {}
        self.roots: dict = {}


def stamp(x: Any, tr: Any = None) -> tuple:
    """The versions of every storage tensor `x` (a proxy or a real tensor) may share
    memory with: a fact about its data holds while its stamp stays the same."""
    if tr is None:
        tr = active_tracer()
    versions = getattr(tr, "data_versions", None)
    if versions is None:  # outside tracing: nothing is written
        return (0, ACTIVE.data_epoch)
    counts = versions.counts
    keys = _roots_of_value(tr, versions, x)
    out = [versions.serial, counts.get(_WIPE, 0)]
    for k in keys:
        out.append(ACTIVE.data_epoch if k is ANY else counts.get(k, 0))
    return tuple(out)


def recipe_stamp(tr: Any, result: Any, operands: tuple) -> tuple:
    """The stamp of a value recipe (values.py): `result` computed from `operands` holds
    while neither was written."""
    return (stamp(result, tr), *(stamp(a, tr) for a in operands
                                 if isinstance(a, torch.Tensor)))


def note_write(tr: Any, written: list) -> None:
    """A recorded op writes `written` (graph values: nodes, or lists of them) in place."""
    ACTIVE.data_epoch += 1  # (every write: TensorMeta's value facts, ANY's version)
    versions = tr.data_versions
    counts = versions.counts
    keys: set = set()
    stack = list(written)
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, torch.fx.Node):
            keys |= node_roots(tr, versions, v)
        else:  # (not a graph value: nothing known of its memory)
            keys.add(ANY)
    if ANY in keys:
        counts[_WIPE] = counts.get(_WIPE, 0) + 1
        return
    for k in keys:
        counts[k] = counts.get(k, 0) + 1


def forget_roots(tr: Any, node: torch.fx.Node) -> None:
    """`node`'s tensor now shares memory with anything (``x.set_(y)``): every value made
    from it later may reach any storage."""
    tr.data_versions.roots[node] = frozenset((ANY,))


def _roots_of_value(tr: Any, versions: Versions, x: Any) -> frozenset:
    node = getattr(x, "st_node", None)
    if node is not None:
        return node_roots(tr, versions, node)
    if hasattr(x, "st_node") or not isinstance(x, torch.Tensor):
        return frozenset((ANY,))  # an unrecorded proxy
    state = tr.state.get(id(x))
    if state is not None:
        return node_roots(tr, versions, state)
    return frozenset((memory_key(x),))


def memory_key(t: torch.Tensor) -> Any:
    """The key of a real tensor's memory (ANY where it has none to read)."""
    try:
        with torch._C.DisableTorchFunction():
            return ("memory", t.untyped_storage().data_ptr())
    except Exception:  # a tensor subclass without one storage
        return ANY


def node_roots(tr: Any, versions: Versions, node: torch.fx.Node) -> frozenset:
    """The storages `node`'s value may share memory with (see the module)."""
    known = versions.roots
    found = known.get(node)
    if found is not None:
        return found
    stack = [node]  # (iterative: a chain of views may be long)
    while stack:
        n = stack[-1]
        if n in known:
            stack.pop()
            continue
        if n.op == "call_function":
            inputs = n.all_input_nodes
            missing = [a for a in inputs if a not in known]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            target = n.target
            if isinstance(target, torch._ops.OpOverload) and not may_alias(target):
                known[n] = frozenset((n,))
            else:
                known[n] = frozenset((n,)).union(*(known[a] for a in inputs))
            continue
        stack.pop()
        known[n] = _leaf_roots(tr, n)
    return known[node]


def _leaf_roots(tr: Any, node: torch.fx.Node) -> frozenset:
    if node.op != "placeholder" or node.graph is not tr.scopes[0].graph:
        return frozenset((ANY,))  # get_attr, a branch's placeholder, ...
    kind = node.meta.get("kind")
    if kind in ("user_input", "parameter"):
        return frozenset((INPUTS,))
    if kind == "buffer":  # (state_tensors: set by the exporter; name -> tensor)
        t = getattr(tr, "state_tensors", {}).get(node.meta.get("target"))
    elif kind == "constant":
        t = tr.constants.get(node.target)
    else:
        t = None
    if t is not None:
        return frozenset((memory_key(t),))
    return frozenset((ANY,))
