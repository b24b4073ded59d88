"""A custom op's ``List[Tensor]`` the loader cannot work out, held to the file's record.

Session 27: a ``getitem`` past the recorded list (``halves(x)[2]`` of a 2-element record)
loaded and raised Python's IndexError at call; the op's real length was never held to
the record; an element no ``getitem`` takes kept its recorded dtype and sizes unchecked.
Now the index is refused at load, and the length, each element's dtype and rank, and the
sizes of the elements nothing takes are checked right after the op at each call.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import parts
from tests.serialize.test_recorded_at_call import Halves, _edit, _load, _saved, halves
from tests.serialize import surgery


class First(torch.nn.Module):
    def forward(self, x):
        a, _ = halves(x)
        return a * 2


def _first() -> tuple[dict, dict]:
    """``First`` saved, without the getitem of the value it drops (the exporter records
    one for each value; a file need not)."""
    doc, tensors = _saved(First())
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] != "getitem_1"]
    return doc, tensors


def _node(doc: dict, name: str) -> dict:
    return next(n for n in doc["nodes"] if n["name"] == name)


@pytest.mark.parametrize("index", [2, -3, 7])
def test_a_getitem_past_the_recorded_list_is_refused_at_load(index):
    doc, tensors = _saved(Halves())
    _node(doc, "getitem_1")["args"][1] = index
    with pytest.raises(st.LoadError, match=rf"node 'getitem_1': takes value {index} of "
                                           r"'halves', which the file records with 2"):
        _load(doc, tensors)


def test_a_list_op_recorded_without_a_list_is_refused_at_load():
    doc, tensors = _saved(Halves())
    _node(doc, "halves")["meta"].pop("val")
    with pytest.raises(st.LoadError, match=r"node 'halves': sth26.halves.default returns a "
                                           r"list of tensors, but the file records no list"):
        _load(doc, tensors)


def test_the_ops_real_length_is_held_to_the_record_at_call():
    doc, tensors = _first()
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(_load(doc, tensors)(x), First()(x))
    del _node(doc, "halves")["meta"]["val"]["list"][1]
    lying = _load(doc, tensors)
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'halves' \(.*\) returned a list "
                                                       r"of 2 \(.*\), but the file records a "
                                                       r"list of 1"):
        lying(torch.randn(5, 4))


@pytest.mark.parametrize("field, value, error", [
    ("shape", [1000, 4], r"== 1000 \(\w+ is dim 0 of value 1 of what 'halves'"),
    ("shape", [["mul", 1000, "s0"], 4], r"== 1000\*s0 \(\w+ is dim 0 of value 1 of what "),
    ("dtype", "float64", r"returned a list of 2 \(.*\), but the file records a list of 2 "
                         r"\(a float32 tensor of 2 dims, a float64 tensor"),
], ids=["static", "of_s0", "dtype"])
def test_an_element_nothing_takes_is_checked_at_call(field, value, error):
    doc, tensors = _first()
    _edit(doc, "halves", field, value, element=1)
    lying = _load(doc, tensors)
    with pytest.raises(st.RuntimeAssertionError, match=error):
        lying(torch.randn(5, 4))


def test_saved_again_the_checks_are_made_anew():
    doc, tensors = _first()
    ep = surgery.load(doc, tensors, allow_ops=["sth26"])
    buf = io.BytesIO()
    st.save(ep, buf)
    again = st.load(io.BytesIO(buf.getvalue()), allow_ops=["sth26"]).module()
    x = torch.randn(7, 4)
    torch.testing.assert_close(again(x), First()(x))


class Split(torch.nn.Module):
    def forward(self, x):
        a, b = x.split(3)
        return a + 1, b


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "unrecorded"])
def test_a_getitem_past_an_aten_lists_values_is_refused_at_load(record):
    """Held to the file's record, or without one to the loader's evaluation of the op."""
    buf = io.BytesIO()
    st.save(st.export(Split(), (torch.randn(6, 4),)), buf)
    doc, tensors = parts(buf.getvalue())
    split = next(n for n in doc["nodes"] if n["name"].startswith("split"))
    x = torch.randn(6, 4)
    for got, want in zip(_load(doc, tensors)(x), Split()(x)):
        torch.testing.assert_close(got, want)
    next(n for n in doc["nodes"] if n.get("args", [])[:1] == [{"node": split["name"]}]
         and n.get("target") == "operator.getitem")["args"][1] = 5
    if not record:
        split["meta"].pop("val")
    with pytest.raises(st.LoadError, match=r"takes value 5 of 'split\w*', which the file "
                                           r"records with|value 5 of split\w*, which returns"):
        _load(doc, tensors)
