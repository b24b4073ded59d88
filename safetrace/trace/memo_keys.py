"""The parts of a remembered call's key (``memo.py``): each argument keyed by what the
call's path depends on (a proxy by its meta's static or symbolic key and its layout, a
program state tensor by its meta, a plain value by its type and value, a size by its
expression, a list or an index by its items), its tensors' nodes collected as the
entry's slots; ``argument`` answers False where no key describes an argument."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.meta.symtypes import SYM_CLASSES, TorchSymInt
from safetrace.trace.memo_values import strides_key
from safetrace.trace.proxy import Proxy

# argument types keyed by value (a float zero by its text: -0.0 == 0.0, and the node
# gets the first call's number)
PLAIN = frozenset((int, float, bool, str, type(None), torch.dtype, torch.device,
                    torch.layout, torch.memory_format))


class _Mark:
    """A marker in a key (compared by identity: no argument value equals one)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# in a key, before a tensor's static key: a program state tensor; a proxy of unknown
# layout (a view: the layout of results follows from the arguments', layout.py); and
# before the keyword arguments
STATE, VIEW, KWARGS = _Mark("state"), _Mark("view"), _Mark("**")
STRIDES = _Mark("strides")  # (before a tensor's exact strides)
LOOSE = _Mark("loose")  # (a tensor of layout.LOOSE: its result keeps that)
# a program state tensor's classes (keyed inline in ``call``; others go by argument)
STATE_TYPES = frozenset((torch.Tensor, torch.nn.Parameter))
# in a key: a tensor with symbolic sizes follows (and the key ends with the state's name);
# a symbolic size given as an argument (``x.view(b, -1)``) follows, as its expression
_SYM = _Mark("symbolic")
_SIZE = _Mark("size")


def argument(a: Any, state: dict, parts: list, nodes: list, sym: list) -> bool:
    """Append one argument's key to `parts` (its tensors' nodes to `nodes`); False when
    no key describes it (the call takes the general path)."""
    t = type(a)  # (not a.__class__: an export may answer a size's in Python, pycalls.py)
    if t is Proxy:
        if a._st_value is not None:
            return False
        s = a.st_meta.static
        if a.st_layout is not None:  # (exact strides, strides.py; symbolic ones as
            if (lay := strides_key(a.st_layout, s, sym)) is None:       # expressions)
                return False
            parts.append(STRIDES)
            parts.append(lay)
        if s is None:  # symbolic sizes: keyed by their expressions (_symbolic, inline)
            if sym[0] is None:
                return False
            s = a.st_meta.symbolic_key(sym[0])
            if s is None:
                return False
            parts.append(_SYM)
            sym.append(_SYM)
        if a.st_contig is not True:  # (its layout unknown: the result's may follow)
            parts.append(VIEW if a.st_contig is None else LOOSE)
        parts.append(s)
        nodes.append(a.st_node)
    elif t in PLAIN:
        parts.append(t)
        parts.append(a if a or t is not float else repr(a))  # (-0.0 == 0.0)
    elif t is TorchSymInt:  # (a size of this export's env: its expression)
        if sym[0] is None or a.env is not sym[0]:
            return False
        parts.append(_SIZE)
        parts.append(a.expr)
        sym.append(_SIZE)
    elif t is list or t is tuple:
        inner = _sequence(a, state, nodes, sym)
        if inner is None:
            return False
        parts.append(t)
        parts.append(inner)
    elif t is slice or a is Ellipsis:  # (an index, x[1:n])
        inner = _sequence((a,), state, nodes, sym)
        if inner is None:
            return False
        parts.append(t)
        parts.append(inner)
    else:
        return _tensor(a, state, parts, nodes)
    return True


def _symbolic(meta: Any, sym: list, parts: list) -> tuple | None:
    """A meta's key with its symbolic sizes as expressions, marked in `parts` and in
    `sym` (the key then holds in the environment's current epoch only); None when no
    key describes it (no environment, value facts, a size of another environment)."""
    env = sym[0]
    if env is None:
        return None
    s = meta.symbolic_key(env)
    if s is not None:
        parts.append(_SYM)
        sym.append(_SYM)
    return s


def _tensor(a: Any, state: dict, parts: list, nodes: list) -> bool:
    """Key a real tensor that is program state (a parameter or buffer) by its meta;
    False for anything else (constants are folded or lifted: the general path)."""
    if type(a) in SYM_CLASSES or not isinstance(a, torch.Tensor):  # (a size: Python, pycalls)
        return False
    node = state.get(id(a))
    if node is None:
        return False
    s = node.meta["val"].st_meta.static
    if s is None:
        return False
    if node.meta["val"].st_contig is None:  # (a strided state tensor: its strides decide
        return False                         # its results' layout, strides.py)
    parts.append(STATE)
    parts.append(s)
    nodes.append(node)
    return True


def _sequence(v: list | tuple, state: dict, nodes: list, sym: list) -> tuple | None:
    """The key of a list argument (ints, numbers, proxies), its proxies' nodes appended
    to `nodes`; None when it holds anything else."""
    parts: list = []
    for x in v:
        t = type(x)
        if t is int or t is float or t is bool:
            parts.append(t)
            parts.append(x if x or t is not float else repr(x))
        elif t is TorchSymInt:  # (as argument keys it)
            if sym[0] is None or x.env is not sym[0]:
                return None
            parts.append(_SIZE)
            parts.append(x.expr)
            sym.append(_SIZE)
        elif x is None or x is Ellipsis:  # (in an index: x[:, None, ...])
            parts.append(x)
        elif t is slice:  # (its bounds as the items of a list; slices are unhashable)
            ends = (x.start, x.stop, x.step)
            if not all(b is None or type(b) is int or type(b) is TorchSymInt for b in ends):
                return None  # (a tensor bound is read through __index__: no key)
            bounds = _sequence(ends, state, nodes, sym)
            if bounds is None:
                return None
            parts.append(slice)
            parts.append(bounds)
        elif t is Proxy:
            if x._st_value is not None:
                return None
            s = x.st_meta.static
            if x.st_layout is not None:  # (as argument keys them)
                if (lay := strides_key(x.st_layout, s, sym)) is None:
                    return None
                parts.append(STRIDES)
                parts.append(lay)
            if s is None:
                s = _symbolic(x.st_meta, sym, parts)
                if s is None:
                    return None
            if x.st_contig is not True:
                parts.append(VIEW if x.st_contig is None else LOOSE)
            parts.append(s)
            nodes.append(x.st_node)
        else:
            return None
    return tuple(parts)
