"""A size read from data whose first record names it inside an expression (session 28).

A data-dependent count is a new symbol of the file's own (``u0``); the loader makes one of
its own there and matches the two where the file records the bare symbol.  A file that
first records it inside an expression (``nonzero`` of ``[u0 + 1, 2]`` rows) was kept as
written: its metadata said at least one row where the call had none, and ``u0`` where the
next node reads that same dim (``print(ep)`` showed ``nonzero: i64[u0 + 1, 2]`` and
``sym_size_int: Sym(u0)`` of it; ``to_torch()`` crashed on it).  Now the symbol is solved
from the real size where it appears linearly (``k*u0 + rest``): the relation and the range
the file declares for it are checked at call; elsewhere the file is refused at load.
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery


class _Rows(torch.nn.Module):
    def forward(self, x):
        nz = x.nonzero()
        return nz, torch.ones(nz.shape[0] + 1)


def _file(edit) -> bytes:
    ep = st.export(_Rows(), (torch.randn(4, 3),),
                   dynamic_shapes={"x": {0: st.Dim("n", max=32)}})
    doc, tensors = hostile.parts(surgery.saved(ep))
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["nonzero"]["meta"]["val"]["tensor"]["shape"][0] == "u0"
    edit(nodes, doc)
    return hostile.pack(doc, tensors)


def _rows(nodes: dict, size, then=None) -> None:
    nodes["nonzero"]["meta"]["val"]["tensor"]["shape"][0] = size
    if then is not None:  # (every later record of the count, in its terms)
        nodes["sym_size_int"]["meta"]["val"]["symint"] = size
        nodes["add"]["meta"]["val"]["symint"] = then
        nodes["ones"]["meta"]["val"]["tensor"]["shape"][0] = then


_CALLS = [(torch.zeros(3, 3),), (torch.ones(2, 3),), (torch.tensor([[1.0, 0, 0]]),)]


def test_a_count_first_recorded_inside_an_expression_is_not_believed():
    """``[u0 + 1, 2]`` where the next node records that dim as ``u0``: refused at load."""
    blob = _file(lambda nodes, doc: _rows(nodes, ["add", "u0", 1]))
    assert hostile.refused_at_load_or_call(blob, _CALLS, load="'sym_size_int'") == "load"


def test_a_consistent_renaming_is_checked_at_call():
    """Every record in terms of ``u0 + 1`` (``u0`` declared ``>= 0``): the count is
    ``u0 + 1``, which a call with no nonzero element contradicts (refused there); others
    run."""
    blob = _file(lambda nodes, doc: _rows(nodes, ["add", "u0", 1], ["add", "u0", 2]))
    mod = st.load(blob).module()
    x = torch.tensor([[1.0, 0, 2], [0, 0, 3]])
    for got, want in zip(mod(x), _Rows()(x)):
        torch.testing.assert_close(got, want)
    with pytest.raises(st.RuntimeAssertionError, match="'nonzero'"):
        mod(torch.zeros(3, 3))


def test_a_multiple_is_checked_for_its_divisor_and_range_at_call():
    """``[2*u0, 2]`` rows with ``u0`` declared in ``[1, 2]``: two or four nonzero elements
    run; one, three or six are refused at the call."""
    def edit(nodes, doc):
        _rows(nodes, ["mul", 2, "u0"], ["add", ["mul", 2, "u0"], 1])
        next(s for s in doc["symbols"] if s["name"] == "u0").update(lo=1, hi=2)
    mod = st.load(_file(edit)).module()
    for n in (2, 4):
        x = torch.zeros(3, 3)
        x.view(-1)[:n] = 1
        torch.testing.assert_close(mod(x)[0], x.nonzero())
    for n in (1, 3, 6):
        x = torch.zeros(3, 3)
        x.view(-1)[:n] = 1
        # (the count's record, or the number of the count plus one the file records in
        # its terms, checked at call since session 33: whichever check runs first)
        with pytest.raises(st.RuntimeAssertionError, match="'nonzero'|'add'"):
            mod(x)


def test_a_count_recorded_where_it_cannot_be_solved_refuses_the_file():
    """``[u0*u0, 2]``: not linear in the new symbol, refused at load."""
    square = ["mul", "u0", "u0"]
    blob = _file(lambda nodes, doc: _rows(nodes, square, ["add", square, 1]))
    with pytest.raises(st.LoadError, match="'nonzero'"):
        st.load(blob)
