"""The pieces of ``split`` / ``chunk`` along a dim of symbolic size.

How many pieces there are depends on the size (``(n + 2)//3`` for ``split(3)``), and a
Python tuple needs a concrete length: building one pins the count with a guard, which
rules out most sizes; so does a count computed from sizes (``chunk(n // 2 + 1)``,
``tensor_split(m)``, ``split(max(m, 1))``).  ``Pieces`` is the sequence returned instead.
Indexing piece ``i`` only requires that piece to exist (a guard much weaker than the count,
none for piece 0).
``Pieces`` is a tuple of the example's pieces, each a slice of the input (a view, as
eager's pieces are) whose end is clamped by a Min, so a slice is valid for every size and
unused ones cost nothing; ``len()`` under tracing is the symbolic count (``pybuiltins``).
Reading the tuple as a whole (iterating, unpacking, slicing it, ``len`` outside tracing,
handing it to an op, returning it) pins the count to the example's with a guard, as a
plain tuple would have.  The pieces nothing read are erased after the trace
(``drop_unread``): a count of thousands at the example (``x.chunk(x.numel())[0]``) made a
graph of that many slices, a saved file over the loader's budget.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from safetrace.rules.common import check
from safetrace.symbolic import SymInt, sym_and, sym_max, sym_min, sym_or
from safetrace.trace.recorder import Recorder

aten = torch.ops.aten


def _truth(v: Any) -> bool:
    """A condition's value: decided from the facts, else on the example (a guard)."""
    return bool(v)


class Pieces(tuple):
    """The pieces at the example's count, as a tuple that torch's own argument parser
    accepts (see the module docstring); reading it as a whole pins the count."""

    _st: tuple  # (tracer, tensor, dim, kind, k, size, piece size, symbolic count, count)
    _pinned: bool

    def __new__(cls, tr: Recorder, x: Any, d: int, kind: str, k: int) -> Pieces:
        n = x.st_meta.shape[d]
        q = (n + k - 1) // k if kind == "chunk" else n // k if kind == "tensor_split" else k
        count = _count(kind, n, k, q)
        c = int(count.hint) if isinstance(count, SymInt) else int(count)
        st = (tr, x, d, kind, k, n, q, count, c)
        obj = super().__new__(cls, [_piece(st, j) for j in range(c)])
        obj._st = st
        obj._pinned = False
        return obj

    def symbolic_len(self) -> Any:
        """How many pieces there are, as a symbolic int (torch's count for each size)."""
        return self._st[7]

    def pin(self) -> None:
        """The count as on the example, from here on (a guard, as a tuple's length is)."""
        if not self._pinned:
            count, c = self._st[7], self._st[8]
            self._pinned = True
            if not _truth(count == c):  # pragma: no cover - the hint satisfies it
                raise AssertionError("the piece count differs from the example's")

    def _exists(self, j: int) -> Any:
        """Whether piece j >= 0 exists (a condition on the size)."""
        kind, k, n, q = self._st[3], self._st[4], self._st[5], self._st[6]
        if kind == "tensor_split":  # k pieces, whatever the size
            return j < k
        if j == 0:
            return True
        if kind == "split":
            return j * k < n
        if isinstance(k, SymInt):  # (for n > 0, j*q < n implies j < k: k*q >= n)
            return sym_or(sym_and(n == 0, j < k), j * q < n)
        if j >= k:
            return False
        return sym_or(n == 0, j * q < n)

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        if self._pinned or isinstance(i, SymInt) or not isinstance(i, int) or \
                isinstance(i, bool):
            self.pin()
            return tuple.__getitem__(self, i)
        if i >= 0:
            if not _truth(self._exists(i)):
                raise IndexError("tuple index out of range")
            return tuple.__getitem__(self, i)  # (exists on the example: i < the count)
        j = self._st[7] + i
        if not _truth(j >= 0):
            raise IndexError("tuple index out of range")
        if isinstance(j, int):
            return tuple.__getitem__(self, j)
        return _piece(self._st, j)

    # -- anything else reads the whole tuple: the count is pinned -----------------------
    def __len__(self) -> int:
        self.pin()
        return tuple.__len__(self)

    def __iter__(self) -> Any:
        self.pin()
        return tuple.__iter__(self)

    def __reversed__(self) -> Any:
        self.pin()
        return reversed(tuple(tuple.__iter__(self)))

    def __contains__(self, v: Any) -> bool:
        self.pin()
        return tuple.__contains__(self, v)

    def __add__(self, other: Any) -> Any:
        self.pin()
        return tuple(tuple.__iter__(self)) + tuple(other)

    def __radd__(self, other: Any) -> Any:
        self.pin()
        return tuple(other) + tuple(tuple.__iter__(self))

    def __eq__(self, other: Any) -> Any:
        self.pin()
        return tuple.__eq__(self, other)

    def __ne__(self, other: Any) -> Any:
        self.pin()
        return tuple.__ne__(self, other)

    def __hash__(self) -> int:
        self.pin()
        return tuple.__hash__(self)

    def __repr__(self) -> str:
        return f"Pieces({self._st[3]} of dim {self._st[2]}, {self._st[7]} pieces)"

    def index(self, *args: Any) -> int:  # type: ignore[override]
        self.pin()
        return tuple.index(self, *args)

    def count(self, v: Any) -> int:  # type: ignore[override]
        self.pin()
        return tuple.count(self, v)

    def __reduce__(self) -> Any:
        self.pin()
        return (tuple, (tuple(tuple.__iter__(self)),))


def _count(kind: str, n: Any, k: Any, q: Any) -> Any:
    if kind == "split":
        return sym_max((n + k - 1) // k, 1)
    if kind == "tensor_split":
        return k
    q1 = sym_max(q, 1)  # chunk: ceil(n / q) pieces, or k empty ones for n == 0
    return sym_max((n + q1 - 1) // q1, k * (1 - sym_min(n, 1)))


def _piece(st: tuple, j: Any) -> Any:
    """Piece `j` (an index >= 0 that exists) of the pieces ``st`` (``Pieces._st``)."""
    tr, x, d, kind, k, n, q = st[:7]
    if kind != "tensor_split":
        return _slice(tr, x, d, j * q, q, n)
    # sections: the first n % k pieces one longer; piece j starts at j*q + min(j, n % k)
    r = n % k
    start = j * q + sym_min(j, r)
    return _slice(tr, x, d, start, q + sym_min(sym_max(r - j, 0), 1), n)


def _slice(tr: Recorder, x: Any, d: int, start: Any, q: Any, n: Any) -> Any:
    """Piece ``x[start:start + q]`` along `d`: both bounds clamped by a Min, never guarded
    (a literal bound would be guarded to lie within the example's size)."""
    lo = start if isinstance(start, int) and start == 0 else sym_min(start, n)
    out = tr.emit(aten.slice.Tensor, (x, d, lo, sym_min(start + q, n)), {})
    made = getattr(tr, "st_pieces", None)
    if made is None:
        made = tr.st_pieces = []
    made.append((out.st_node, tr.scope))
    return out


# the size arithmetic a piece's bounds are computed with (never raises: no division by a
# size that may be 0, ``q1 = max(q, 1)``), erased with the piece where nothing else reads it
_ARITH = frozenset((operator.add, operator.sub, operator.mul, operator.floordiv,
                    operator.mod, operator.neg, min, max))


def drop_unread(tr: Recorder) -> None:
    """After the trace: erase each piece's slice that nothing reads (a view whose bounds
    are clamped, valid at every size: never an error eager would raise), and the size
    arithmetic only it read (dropped from its scope's table of size nodes)."""
    made = getattr(tr, "st_pieces", None)
    if not made:
        return
    tr.st_pieces = []
    sources = {v if isinstance(v, torch.fx.Node) else v[0] for v in tr.sym_sources.values()}
    owners: dict = {}
    root = tr.scopes[0]  # (a branch's or body's graph is a module already: left as is)
    for node, scope in reversed(made):
        if scope is not root or node.users or node in sources or node is root.first_op or \
                getattr(node, "_erased", False):
            continue
        pending = [a for a in node.all_input_nodes if a.op == "call_function"]
        node.graph.erase_node(node)
        while pending:
            n = pending.pop()
            if n.users or n in sources or n.target not in _ARITH or n is root.first_op or \
                    getattr(n, "_erased", False):
                continue
            if id(scope) not in owners:
                owners[id(scope)] = {}
                for key, v in scope.sym_nodes.items():
                    if isinstance(v, torch.fx.Node):
                        owners[id(scope)].setdefault(v, []).append(key)
            for key in owners[id(scope)].pop(n, ()):
                scope.sym_nodes.pop(key, None)
            pending.extend(a for a in n.all_input_nodes if a.op == "call_function")
            n.graph.erase_node(n)


def pieces(tr: Recorder, x: Any, d: int, kind: str, k: Any,
           materialize: Callable[[], Any]) -> Any:
    """The pieces of `x` along dim `d` (already normalized): a ``Pieces`` when their count
    depends on a symbolic size, else the op's own tuple."""
    n = x.st_meta.shape[d]
    if kind == "split" and isinstance(k, SymInt) and _truth(k >= 1):
        # a split size from sizes: the count varies with it too (a guard k >= 1, which
        # aten.split's own check would have made; k = 0 only splits an empty dim)
        return Pieces(tr, x, d, kind, k)
    if kind in ("chunk", "tensor_split") and isinstance(k, SymInt):
        # a count from sizes: eager's own check, then pieces counted for each k
        check(k > 0, kind, f"chunk expects `chunks` to be greater than 0, got: {k}"
              if kind == "chunk" else f"number of sections must be larger than 0, got {k}")
        return Pieces(tr, x, d, kind, k)
    if isinstance(n, int) or not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        return materialize()
    return Pieces(tr, x, d, kind, k)
