"""What the file records of a node the loader cannot work out is checked at each call.

Session 26: a subgraph's node (a ``torch.cond`` branch's custom op over sizes that vary)
kept its recorded sizes as written, a custom op's ``List[Tensor]`` record stood beside the
checked records of its elements, and no such node's recorded dtype was checked.  Each is
now checked in its graph before the value's first use, at every call.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import pack, parts
from tests.serialize.hostile import refused_at_load_or_call
from tests.serialize.test_custom_op_results import twice_rows
from tests.serialize import surgery


@torch.library.custom_op("sth26::halves", mutates_args=())
def halves(x: torch.Tensor) -> list[torch.Tensor]:
    return [x[: x.shape[0] // 2].clone(), x[x.shape[0] // 2:].clone()]


@halves.register_fake
def _(x):
    half = x.shape[0] // 2
    return [x.new_empty(half, x.shape[1]), x.new_empty(x.shape[0] - half, x.shape[1])]


class Branch(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda a: twice_rows(a) + 1,
                          lambda a: torch.cat([a, a]) - 1, (x,))


def _branch(x: torch.Tensor) -> torch.Tensor:
    """``Branch`` in eager, without torch.cond (whose eager call compiles: seconds)."""
    return torch.cat([x, x]) + 1 if x.sum() > 0 else torch.cat([x, x]) - 1


class Halves(torch.nn.Module):
    def forward(self, x):
        a, b = halves(x)
        return a * 2, b.sum(0)


DYN = {"x": (st.Dim("n", min=0, max=64), None)}


def _saved(model: torch.nn.Module) -> tuple[dict, dict]:
    return parts(surgery.saved(st.export(model, (torch.randn(6, 4),), dynamic_shapes=DYN)))


def _edit(doc: dict, name: str, field: str, value, element: int | None = None) -> None:
    for graph in [doc["nodes"], *(s["nodes"] for s in doc.get("subgraphs", ()))]:
        for node in graph:
            if node["name"] == name:
                val = node["meta"]["val"]
                val = val["list"][element] if element is not None else val
                val["tensor"][field] = value


def _load(doc: dict, tensors: dict):
    return surgery.load(doc, tensors, allow_ops=["sth25", "sth26"]).module()


def test_a_branchs_recorded_sizes_are_checked_where_the_branch_runs():
    doc, tensors = _saved(Branch())
    honest = _load(doc, tensors)
    for n in (0, 1, 5):
        x = torch.rand(n, 4) + 1
        torch.testing.assert_close(honest(x), _branch(x))
    _edit(doc, "twice_rows", "shape", [["mul", 1000, "s0"], 4])
    lying = _load(doc, tensors)
    x = -torch.rand(3, 4) - 1  # (the other branch runs: not checked)
    torch.testing.assert_close(lying(x), _branch(x))
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000\*s0 \(\w+ is dim 0 of what "
                                                       r"'twice_rows'"):
        lying(torch.rand(3, 4) + 1)


def test_a_lists_record_and_its_elements_are_held_to_what_ran():
    doc, tensors = _saved(Halves())
    x = torch.randn(7, 4)
    got = _load(doc, tensors)(x)
    torch.testing.assert_close(got, Halves()(x))
    _edit(doc, "halves", "shape", [1000, 4], element=0)
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000 \(\w+ is dim 0 of what "
                                                       r"'getitem'"):
        _load(doc, tensors)(x)


def test_a_recorded_dtype_is_checked_where_the_loader_cannot_work_it_out():
    doc, tensors = _saved(Halves())
    _edit(doc, "getitem", "dtype", "float64")
    with pytest.raises(st.LoadError, match=r"node 'getitem': the file records its value as "
                                           r"float64\[s0//2, 4\], but as float32\[s0//2, 4\] "
                                           r"in the value of 'halves'"):
        _load(doc, tensors)
    for element in (0, 1):
        _edit(doc, "halves", "dtype", "float64", element=element)
    _edit(doc, "getitem_1", "dtype", "float64")
    mod = _load(doc, tensors)
    # (since session 27 the list's own record is checked first, right after the op)
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'halves' \(.*\) returned a list "
                                                       r"of 2 \(a float32 tensor of 2 dims, .*"
                                                       r"records a list of 2 \(a float64"):
        mod(torch.randn(4, 4))


def test_a_recorded_rank_is_checked_before_the_sizes_are_read():
    """(the size checks read each recorded dim: of a tensor of fewer dims, torch's
    IndexError, not the file's refusal)"""
    doc, tensors = _saved(Halves())
    _edit(doc, "sum_1", "shape", [4, 1])
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'sum_1' \(.*\) returned a "
                                                       r"float32 tensor of 1 dim, but the file "
                                                       r"records a float32 tensor of 2 dims"):
        _load(doc, tensors)(torch.randn(5, 4))


class TwoSites(torch.nn.Module):
    def forward(self, x):
        for _ in range(2):  # (one subgraph at load, shared by both conds)
            x = torch.cond(x.sum() > 0, lambda a: twice_rows(a)[: a.shape[0]] + 1,
                           lambda a: a - 1, (x,))
        return x


def test_a_shared_subgraphs_record_is_checked_at_each_call_site():
    doc, tensors = _saved(TwoSites())
    ep = surgery.load(doc, tensors, allow_ops=["sth25"])
    assert len({id(s.graph) for s in ep.graph.st_submodules.values()}) == 2
    honest = ep.module()
    for n in (0, 1, 5):
        x = torch.rand(n, 4) + 1
        torch.testing.assert_close(honest(x), x + 2 if n else x - 2)
    for sg in doc["subgraphs"]:
        for node in sg["nodes"]:
            if node["name"].startswith("twice_rows"):
                node["meta"]["val"]["tensor"]["shape"][1] = 5
    lying = _load(doc, tensors)
    with pytest.raises(st.RuntimeAssertionError, match=r"== 5 \(\w+ is dim 1 of what "
                                                       r"'twice_rows"):
        lying(torch.rand(3, 4) + 1)


class Data(torch.nn.Module):
    def forward(self, x):
        nz = torch.nonzero(x > 0)
        k = (x > 0).sum().item()
        return nz, torch.zeros(k)


@pytest.mark.parametrize("shape", [[["mul", 1000, "u0"]], ["u7"]], ids=["of_u0", "new"])
def test_an_input_size_recorded_as_one_read_from_data_is_refused_at_load(shape):
    """``x > 0`` is ``[s0]``: recorded as ``[1000*u0]`` (``u0``: the nonzero's count) or as a
    size no node reads (``u7``), the file is refused, not kept as written (session 26: the
    probe's node-by-node oracle found the first kept): at load, or at call."""
    buf = io.BytesIO()
    st.save(st.export(Data(), (torch.randn(7),), dynamic_shapes={"x": (st.Dim("n", max=64),)}),
            buf)
    doc, tensors = parts(buf.getvalue())
    x = torch.randn(9)
    got = _load(doc, tensors)(x)
    for a, b in zip(got, Data()(x)):
        torch.testing.assert_close(a, b)
    name = [n["name"] for n in doc["nodes"] if n["name"].startswith("gt")][-1]
    _edit(doc, name, "shape", shape)
    doc["symbols"].append({**next(s for s in doc["symbols"] if s["name"] == "u0"),
                           "name": "u7"})
    # (``u7``: refused at load; ``1000*u0``, the count of the nonzero before it, checked at
    # call, since session 28: the loader refutes it at no size)
    refused_at_load_or_call(pack(doc, tensors), [(torch.randn(9),)], load=(
        rf"node '{name}': the file records its value as bool\[(1000\*u0|u7)\], but the graph "
        r"computes bool\[s0\]"), call=f"'{name}'", allow_ops=["sth25"])


class ReadsBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x):
        return x + torch.zeros(self.n.item()).sum()


def test_a_size_the_loader_reads_from_a_constant_is_that_value_in_later_records():
    """``n.item()`` of a buffer the program never writes is 3 at load: the file's ``u0``
    for it is 3 in what later nodes record (``[1000*u0]`` for ``x + ...``'s ``[3]`` stood)."""
    buf = io.BytesIO()
    st.save(st.export(ReadsBuffer(), (torch.randn(3),)), buf)
    doc, tensors = parts(buf.getvalue())
    x = torch.randn(3)
    torch.testing.assert_close(_load(doc, tensors)(x), x)
    name = [n["name"] for n in doc["nodes"] if n["name"].startswith("add")][-1]
    _edit(doc, name, "shape", [["mul", 1000, "u0"]])
    with pytest.raises(st.LoadError, match=rf"node '{name}': the file records its value as "
                                           r"float32\[1000\*u0\], but the graph computes "
                                           r"float32\[3\]"):
        _load(doc, tensors)
