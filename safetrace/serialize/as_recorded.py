"""What the file records of a node the loader cannot work out, checked at each call.

A mixin of ``memory.StaticMemory``: a node whose result its evaluation cannot work out
(operands it does not know: after a custom op's number; an op without a rule: a custom op
over sizes that vary, a kernel that sizes by data) keeps the file's record, which what
reads the program's metadata believes (``print(ep)``, ``to_torch()``): its sizes are
checked in its graph before its first use (``inline``, ``requirements.py``), its dtype
and rank right after it (``dtype_checks``, ``record_checks.py``).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace.errors.load import bad_file
from safetrace.meta import TensorMeta
from safetrace.serialize.codec import new_symbolic
from safetrace.symbolic import eq, to_expr

_CPU = torch.device("cpu")


class AsRecorded:
    """The record-checking part of ``StaticMemory`` (see the module's docstring)."""

    def _as_recorded(self, node: torch.fx.Node) -> None:
        """A node whose result the loader cannot work out (operands it does not know: after
        a custom op's number; an op without a rule: a custom op over sizes that vary, whose
        fake cannot run here, a kernel that sizes by data): the sizes the file records for
        its tensor (which the loaded program keeps, and ``to_torch`` hands on) are checked
        in its graph before its first use, at each call (``inline``), a subgraph's as a
        main graph's: its check runs each time the subgraph does, at every call site of a
        shared one (its record, one for all sites, is read from the sizes that graph holds
        there).  A recorded size of a symbol no earlier value gives (one the op makes from
        data) is left as recorded."""
        rec = getattr(node.meta.get("val"), "st_meta", None)
        if isinstance(node.meta.get("val"), (list, tuple)) and node.users:
            self._list_as_recorded(node)
        if not isinstance(rec, TensorMeta) or not node.users:
            return
        after = node.next  # (before its first use other than a size query)
        while after.op != "root" and (after not in node.users or
                                      after.target is torch.ops.aten.sym_size.int):
            after = after.next
        if after.op == "root":
            return
        real = self._real.get(node)  # (one set per node: a shared subgraph's checks of
        if real is None or len(real) != len(rec.shape):  # each site are then one)
            real = []
            for _ in rec.shape:
                real.append(new_symbolic(self.env.new_unbacked(0, None, name=self._fresh()),
                                         self.env))
            self._real[node] = real
        values = {**self._meta, node: TensorMeta(tuple(real), rec.dtype, _CPU)}
        self.dtype_checks.append((node, rec.dtype, len(rec.shape)))
        sizes = list(enumerate(zip(real, rec.shape)))
        for d, size in _element_record(node, rec):  # (the list's record: one with it)
            sizes.append((d, (real[d], size)))
        for d, (got, size) in sizes:
            size = to_expr(size)
            # (a symbol of the file's read from data: the scratch one it was matched with)
            mine = self.recorded._file(size) if self.recorded is not None else None
            size = size if mine is None else mine
            self.inline.append((eq(got.expr, size), after, f"{got} is dim {d} of "
                                f"what {node.name!r} ({node.target}) returns; "
                                "the file records its size", values))

    def _list_as_recorded(self, node: torch.fx.Node) -> None:
        """A custom op's ``List[Tensor]`` the loader cannot work out: its length and each
        element's dtype and rank are checked right after it (``record_checks.check_list``),
        and the sizes of each element no ``getitem`` takes (those taken are checked with the
        getitem's own record, ``_element_record``) before its first use."""
        recs = [getattr(v, "st_meta", v) for v in node.meta["val"]]
        if not isinstance(node.target, torch._ops.OpOverload) or \
                not all(isinstance(r, TensorMeta) for r in recs):
            return
        self.dtype_checks.append((node, tuple((r.dtype, len(r.shape)) for r in recs), None))
        taken = {u.args[1] % len(recs) for u in node.users if u.target is operator.getitem
                 and len(u.args) == 2 and type(u.args[1]) is int}
        after = node.next  # (its first user)
        while after.op != "root" and after not in node.users:
            after = after.next
        real = []
        for i, r in enumerate(recs):
            real.append(TensorMeta(tuple(new_symbolic(self.env.new_unbacked(
                0, None, name=self._fresh()), self.env) for _ in r.shape), r.dtype, _CPU)
                if i not in taken else None)  # (a taken one: with its getitem's)
        values = {**self._meta, node: real}
        for i, r in enumerate(recs):
            if i in taken:
                continue
            for d, (got, size) in enumerate(zip(real[i].shape, r.shape)):
                size = to_expr(size)
                mine = self.recorded._file(size) if self.recorded is not None else None
                self.inline.append((eq(got.expr, size if mine is None else mine), after,
                                    f"{got} is dim {d} of value {i} of what {node.name!r} "
                                    f"({node.target}) returns; the file records its size",
                                    values))

    def _fresh(self) -> str:
        return next(f"r{i}" for i in range(len(self.env.symbols), 1 << 30)
                    if f"r{i}" not in self.env.symbols)


def _element_record(node: torch.fx.Node, rec: TensorMeta) -> list:
    """(dim, size) the file records for ``node`` (``x[i]`` of an op's list of tensors) in
    its operand's record, where that operand's result the loader could not work out
    either: each is checked with ``node``'s own, so that the list's record is the one
    that ran.  Refused at load where the two records differ in dtype or rank."""
    if node.target is not operator.getitem or len(node.args) != 2 or \
            not isinstance(node.args[0], torch.fx.Node) or type(node.args[1]) is not int:
        return []
    whole = node.args[0].meta.get("val")
    if not isinstance(whole, (list, tuple)) or not -len(whole) <= node.args[1] < len(whole):
        return []
    part = getattr(whole[node.args[1]], "st_meta", whole[node.args[1]])
    if not isinstance(part, TensorMeta):
        return []  # (not recorded as a tensor there: nothing of it is read as one)
    if part.dtype != rec.dtype or len(part.shape) != len(rec.shape):
        raise bad_file(f"node {node.name!r}", f"the file records its value as {_show(rec)}, "
                       f"but as {_show(part)} in the value of {node.args[0].name!r} it is "
                       "taken from",
                       "the file was modified or written by another version of safetrace; "
                       "re-export the program and save it again")
    return list(enumerate(part.shape))


def _show(v: Any) -> str:
    if not isinstance(v, TensorMeta):
        return type(v).__name__
    return f"{str(v.dtype).removeprefix('torch.')}{[str(x) for x in v.shape]}".replace("'", "")


__all__ = ["AsRecorded"]
