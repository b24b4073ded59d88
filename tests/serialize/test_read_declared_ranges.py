"""A size read from data in the main graph is held to the range the file declares for it
(``serialize/read_ranges.py``): the loaded program's metadata, ``range_constraints``,
``to_torch()`` and ``st.save`` of it believe that range, while the graph computes the read
from the data.  A file declaring ``u0`` in ``[2**40, 2**41]`` ran at ``u0 = 0``, and its
re-saved file (records simplified under the range) refused what the loaded one ran
(hostile probe seed 3303, ``resave differs``)."""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Head(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 0)
        return self.w[:n] * 2, torch.zeros(n) + 1


class _Count(torch.nn.Module):
    def forward(self, x):
        a = x.nonzero()
        return a[:3] + 1, torch.zeros(a.shape[0])


def _saved(ep: st.ExportedProgram) -> bytes:
    return surgery.saved(ep)


def _head() -> tuple[torch.nn.Module, bytes]:
    torch.manual_seed(0)
    m = _Head()
    ep = st.export(m, (torch.tensor([1, 1]),), dynamic_shapes={"x": {0: st.Dim("b", max=64)}})
    return m, _saved(ep)


def _declared(blob: bytes, lo: int | None, hi: int | None) -> bytes:
    """The file with its size read from data (``u0``) declared over ``[lo, hi]``."""
    doc, tensors = hostile.parts(blob)
    reads = [s for s in doc["symbols"] if not s["backed"]]
    assert [s["name"] for s in reads] == ["u0"], doc["symbols"]
    reads[0]["lo"], reads[0]["hi"] = lo, hi
    return hostile.pack(doc, tensors)


def _same(m: torch.nn.Module, ep: st.ExportedProgram, x: torch.Tensor) -> None:
    for got, want in zip(ep.module()(x), m(x)):
        torch.testing.assert_close(got, want)


def _counts(*ns: int) -> list:
    return [torch.tensor([n]) if n < 2 else torch.tensor([n - 1, 1]) for n in ns]


def test_our_file_runs_every_count():
    m, blob = _head()
    loaded = st.load(blob)
    for x in _counts(0, 1, 3, 5, 7) + [torch.tensor([], dtype=torch.int64)]:
        _same(m, loaded, x)
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.zeros(2, 2, dtype=torch.int64))


def test_a_declared_range_the_read_misses_is_refused_at_call():
    _, blob = _head()
    hostile.refused_at_load_or_call(_declared(blob, 2**40, 2**41), [(x,) for x in _counts(0, 3)],
                                    call="in|u0|records")


def test_a_narrower_range_holds_where_the_read_is_in_it_and_saves_as_such():
    """Declared ``[0, 1]``: the loaded program computes eager's values at counts 0 and 1,
    refuses 3; ``st.save`` of it writes ``w[:n]``'s rows as ``u0`` (simplified under the
    range), which the re-saved file's loader proves under the range it checks at call
    (it refused that file before: a record no check could read)."""
    m, blob = _head()
    loaded = st.load(_declared(blob, 0, 1))
    again = st.load(_saved(loaded))
    for ep in (loaded, again):
        for x in _counts(0, 1):
            _same(m, ep, x)
        with pytest.raises(st.RuntimeAssertionError):
            ep.module()(_counts(3)[0])


def test_a_declared_range_the_read_never_takes_is_refused_at_load():
    """``nonzero`` of at most 16 elements counts at most 16 rows: a file declaring its count
    in ``[100, 200]`` lies about every run."""
    ep = st.export(_Count(), (torch.tensor([1.0, 0, 2]),),
                   dynamic_shapes={"x": {0: st.Dim("p", max=16)}})
    with pytest.raises(st.LoadError, match="records its value as"):
        st.load(_declared(_saved(ep), 100, 200))


class _ReadInBranch(torch.nn.Module):
    def forward(self, x, y):
        n = x.sum().item()
        torch._check(n >= 0)
        return torch.zeros(n) + 1, torch.cond(y.shape[0] > 1, lambda y: y.nonzero() + 1,
                                              lambda y: y.nonzero() * 2, (y,))


def _renamed_in(nodes: list, old: str, new: str) -> list:
    def swap(v):
        if isinstance(v, list):
            return [swap(a) for a in v]
        if isinstance(v, dict):
            return {k: swap(a) for k, a in v.items()}
        return new if v == old else v
    return swap(nodes)


def test_a_branch_read_named_as_the_main_graphs_is_the_branchs_own():
    """A file recording the true branch's ``nonzero`` count as the main graph's ``.item()``
    (``u0``; our data splits wrote each branch's re-read so before session 34): the loaded
    program printed, saved and converted ``u0`` for the branch's rows, 2 where ``u0`` was
    3.  The branch's read is a symbol of its own in the loaded program now."""
    m = _ReadInBranch()
    ep = st.export(m, (torch.tensor([1, 1]), torch.tensor([1.0, 0, 2])),
                   dynamic_shapes={"x": {0: st.Dim("b", max=64)}, "y": {0: st.Dim("p", max=16)}})
    doc, tensors = hostile.parts(_saved(ep))
    true = next(g for g in doc["subgraphs"] if g["path"] == "true_graph_0")
    nonzero = next(n for n in true["nodes"] if n["name"] == "nonzero")
    mine = nonzero["meta"]["val"]["tensor"]["shape"][0]
    true["nodes"] = _renamed_in(true["nodes"], mine, "u0")
    loaded = surgery.load(doc, tensors)
    branch = loaded.graph_module.true_graph_0.graph
    rows = next(n for n in branch.nodes if n.name == "nonzero").meta["val"].shape[0]
    assert str(rows) != "u0", str(loaded)
    again = st.load(_saved(loaded))
    calls = [(torch.tensor([3]), torch.tensor([1.0, 0, 2])), (torch.tensor([0]), torch.ones(4)),
             (torch.tensor([1]), torch.zeros(1)), (torch.tensor([], dtype=torch.int64),
                                                   torch.zeros(0))]
    for prog in (loaded, again):
        for x, y in calls:
            for got, want in zip(prog.module()(x, y), m(x, y)):
                torch.testing.assert_close(got, want)


class _CheckedCount(torch.nn.Module):
    def forward(self, x):
        a = x.nonzero()
        torch._check(a.shape[0] >= 1)
        return a + 1


def test_a_declared_range_never_met_is_refused_past_the_graphs_assertions():
    """The loader compares a refuted record again under the main graph's assertions; the
    count matched with the file's symbol there made it equal to itself, and the lie
    loaded."""
    ep = st.export(_CheckedCount(), (torch.tensor([1.0, 0, 2]),),
                   dynamic_shapes={"x": {0: st.Dim("p", max=16)}})
    with pytest.raises(st.LoadError, match="records its value as"):
        st.load(_declared(_saved(ep), 100, 200))


def test_a_branch_read_is_held_to_its_declared_range():
    """A ``torch.cond`` branch's own ``nonzero`` count declared ``[0, 1]`` is checked where
    the branch runs (two rows refused); declared ``[2, 3]``, counts 2 and 3 run; declared
    beyond the 16 elements it counts, the file is refused at load."""
    m = _ReadInBranch()
    ep = st.export(m, (torch.tensor([1, 1]), torch.tensor([1.0, 0, 2])),
                   dynamic_shapes={"x": {0: st.Dim("b", max=64)}, "y": {0: st.Dim("p", max=16)}})
    doc, tensors = hostile.parts(_saved(ep))
    true = next(g for g in doc["subgraphs"] if g["path"] == "true_graph_0")
    name = next(n for n in true["nodes"]
                if n["name"] == "nonzero")["meta"]["val"]["tensor"]["shape"][0]
    entry = next(s for s in doc["symbols"] if s["name"] == name)
    two, three = torch.tensor([1.0, 0, 2]), torch.tensor([1.0, 2, 3, 0])
    x = torch.tensor([2])
    entry["lo"], entry["hi"] = 0, 1
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [(x, two), (x, three)])
    entry["lo"], entry["hi"] = 2, 3
    loaded = surgery.load(doc, tensors)
    for y in (two, three, torch.ones(1), torch.zeros(0)):
        for got, want in zip(loaded.module()(x, y), m(x, y)):
            torch.testing.assert_close(got, want)
    entry["lo"], entry["hi"] = 2**40, 2**41
    with pytest.raises(st.LoadError, match="records its value as"):
        surgery.load(doc, tensors)
