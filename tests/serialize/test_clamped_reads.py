"""A tensor's size read from data that the file records as a bare symbol of its own where
the graph computes another size read from data (``w[:n]`` of a 5-row ``w``: the graph
computes ``min(u0, 5)`` rows, the file records ``u0``) is not believed: checked at each
call before the node's first use, a RuntimeAssertionError where they differ.

Before (session 31): the loader compared the two, could neither prove nor refute them,
and kept the record as written with no check (the branch for sizes read from data on
both sides was missing): the loaded program printed ``mul: f32[u0, 4]`` and ``add:
f32[u0]`` for two outputs of 5 and 7 rows at ``n = 7`` (``to_torch()`` and ``st.save``
kept the lie), in the main graph and in ``torch.cond`` branches.  The exporter writes
``min(u0, 5)`` there; the file's ``u0`` is a lie a check at call catches.
"""

from __future__ import annotations

import json

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


class _Branches(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 0)
        return torch.cond(x.shape[0] > 1, lambda w: w[:n] * 2, lambda w: w[:n] * 3,
                          (self.w,))


def _saved(model: torch.nn.Module) -> bytes:
    ep = st.export(model, (torch.tensor([1, 1]),),
                   dynamic_shapes={"x": {0: st.Dim("b", max=64)}})
    return surgery.saved(ep)


def _lying(model: torch.nn.Module) -> bytes:
    """The file with every ``min(u0, 5)`` it records written ``u0``."""
    doc, tensors = hostile.parts(_saved(model))
    text = json.dumps(doc)
    assert '["min", "u0", 5]' in text
    return hostile.pack(None, tensors, text.replace('["min", "u0", 5]', '"u0"'))


_X = [torch.tensor([1, 1]), torch.tensor([0]), torch.tensor([5]), torch.tensor([2, 1]),
      torch.tensor([], dtype=torch.int64)]


@pytest.mark.parametrize("model", [_Head, _Branches])
def test_saved_clamp_loads_and_runs_at_every_count(model):
    """The exporter's own file: no check refuses a call (counts 0 to 9, past the 5 rows)."""
    torch.manual_seed(0)
    m = model()
    mod = st.load(_saved(m)).module()
    for x in _X + [torch.tensor([7]), torch.tensor([9, 0])]:
        got, want = mod(x), m(x)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("model", [_Head, _Branches])
def test_count_recorded_for_clamped_rows_is_checked_at_call(model):
    torch.manual_seed(0)
    m = model()
    blob = _lying(m)
    mod = st.load(blob).module()
    for x in _X:  # (where the record holds: as eager)
        for g, w in zip(mod(x), m(x)):
            torch.testing.assert_close(g, w)
    for x in (torch.tensor([7]), torch.tensor([6, 0]), torch.tensor([40, 1])):
        with pytest.raises(st.RuntimeAssertionError, match=r"'slice_1' .*the file records"):
            mod(x)
    with pytest.raises(st.InputMismatchError):  # (out of the declared space: before running)
        mod(torch.ones(65, dtype=torch.int64))


def test_branch_count_recorded_as_a_number_is_checked_at_call():
    """A branch's ``w[:n] * 2`` recorded ``[5, 4]`` (the graph computes ``min(u0, 5)``
    rows, ``u0`` read before the cond): kept as written before (a size read from data
    outside a subgraph was left to a loop's carry rule; a cond branch is given it fixed
    for the call), so the loaded program claimed 5 rows where a call returned 0 to 4
    (hostile_probe seed 3132, class sg).  Checked at call now; counts of 5 or more run."""
    torch.manual_seed(0)
    m = _Branches()
    doc, tensors = hostile.parts(_saved(m))
    true = next(g for g in doc["subgraphs"] if g["path"] == "true_graph_0")
    for n in true["nodes"]:
        if n["name"] in ("slice_1", "mul"):
            assert n["meta"]["val"]["tensor"]["shape"][0] == ["min", "u0", 5]
            n["meta"]["val"]["tensor"]["shape"][0] = 5
    mod = surgery.load(doc, tensors).module()
    for x in (torch.tensor([5, 0]), torch.tensor([9, 1]), torch.tensor([2])):
        for g, w in zip(mod(x), m(x)):  # (the false branch at one element: as eager)
            torch.testing.assert_close(g, w)
    for x in (torch.tensor([1, 1]), torch.tensor([0, 0]), torch.tensor([4, 0, 0])):
        with pytest.raises(st.RuntimeAssertionError, match=r"'slice_1' .*the file records"):
            mod(x)


class _Rows(torch.nn.Module):
    """``w[:n]``'s row count used as a number: the graph computes ``min(u0, 5)`` with
    ``builtins.min``, a number the loader's evaluation does not reduce."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        n = x.sum().item()
        torch._check(n >= 0)
        t = self.w[:n]
        return torch.zeros(t.shape[0]) + 1, t * 2


@pytest.mark.parametrize("record", ["u0", ["add", "u0", 1]])
@pytest.mark.parametrize("query", [False, True])
def test_a_number_recorded_for_clamped_rows_is_checked_at_call(record, query):
    """The ``min`` node's record written ``u0`` (or ``u0 + 1``), every tensor's record left
    true (a record that is a number is kept as written: our files record size-oblivious
    answers, ``min(u0, 2)`` as 2 where an assertion after it makes it so):
    kept as written before (session 33: a number the loader could not work out had no
    check), so the loaded program printed, saved and converted ``min_1 = u0`` where the
    call computed 5 (at a count of 7).  Checked before its first use now.  ``query``: the
    number is ``sym_size(w[:n], 0)`` instead, which the loader works out as ``min(u0,
    5)`` and could not prove the record (a number's record was kept as written where a
    tensor's size was checked at call, session 31)."""
    torch.manual_seed(0)
    m = _Rows()
    doc, tensors = hostile.parts(_saved(m))
    node = next(n for n in doc["nodes"] if n["meta"].get("val") == {"symint": ["min", "u0", 5]})
    node["meta"]["val"] = {"symint": record}
    if query:
        node.update(target="torch.ops.aten.sym_size.int", args=[{"node": "slice_1"}, 0])
    if query and record != "u0":  # (the loader's min(u0, 5) is never u0 + 1: refuted)
        with pytest.raises(st.LoadError, match="records its value as u0 \\+ 1"):
            surgery.load(doc, tensors)
        return
    mod = surgery.load(doc, tensors).module()
    if record == "u0":
        holds = [torch.tensor([1, 1]), torch.tensor([0]), torch.tensor([5]), torch.tensor([3])]
        lies = [torch.tensor([7]), torch.tensor([40, 1])]
    else:  # (u0 + 1: never min(u0, 5))
        holds = []
        lies = [torch.tensor([7]), torch.tensor([0]), torch.tensor([2, 1])]
    for x in holds:  # (where the record holds: as eager)
        for g, w in zip(mod(x), m(x)):
            torch.testing.assert_close(g, w)
    for x in lies:
        with pytest.raises(st.RuntimeAssertionError, match=rf"'{node['name']}' .*the file "
                                                           "records it"):
            mod(x)
    for x in (torch.tensor([1, 1]), torch.tensor([7]), torch.tensor([0])):  # (the file's own)
        for g, w in zip(st.load(_saved(m)).module()(x), m(x)):
            torch.testing.assert_close(g, w)
