"""A custom op's result in a loaded program is the loader's, not the file's word.

Until session 25 a custom op (a namespace the caller allowed) had no shape rule at load:
its result kept the shape the file records, whatever the op returns, and its bytes were
not counted.  At static sizes its fake (or Meta kernel) now gives the result, held
against the record (refused at load where they differ) and counted in the memory budget;
over sizes that vary the record is checked in the graph right after the op, at each call.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import pack, parts
from tests.serialize import surgery


@torch.library.custom_op("sth25::twice_rows", mutates_args=())
def twice_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x])


@twice_rows.register_fake
def _(x):
    return x.new_empty(2 * x.shape[0], x.shape[1])


@torch.library.custom_op("sth25::big", mutates_args=())
def big(x: torch.Tensor) -> torch.Tensor:
    raise AssertionError("never run: refused at load")


@big.register_fake
def _(x):
    return x.new_empty(1 << 20, 1 << 16)


@torch.library.custom_op("sth25::wide", mutates_args=())
def wide(x: torch.Tensor) -> torch.Tensor:
    raise AssertionError("never run: refused at call")


@st.register_fake(wide)
def _(x):
    return x.new_empty(x.shape[0] << 30)


class Twice(torch.nn.Module):
    def forward(self, x):
        return twice_rows(x) + 1


DYN = {"x": (st.Dim("n", min=0, max=64), None)}


def _saved(dynamic: dict | None, shape: list | None = None) -> bytes:
    buf = io.BytesIO()
    st.save(st.export(Twice(), (torch.randn(3, 4),), dynamic_shapes=dynamic), buf)
    if shape is None:
        return buf.getvalue()
    doc, tensors = parts(buf.getvalue())
    for node in doc["nodes"]:
        if node.get("name") in ("twice_rows", "add"):
            node["meta"]["val"]["tensor"]["shape"] = shape
    return pack(doc, tensors)


def _load(blob: bytes):
    return st.load(io.BytesIO(blob), allow_ops=["sth25"])


def test_a_recorded_result_other_than_the_fakes_is_refused_at_static_sizes():
    x = torch.randn(3, 4)
    torch.testing.assert_close(_load(_saved(None)).module()(x), torch.cat([x, x]) + 1)
    with pytest.raises(st.LoadError, match=r"node 'twice_rows': the file records its value "
                                           r"as float32\[1000, 4\], but the graph computes "
                                           r"float32\[6, 4\]"):
        _load(_saved(None, [1000, 4]))


def test_a_static_custom_ops_result_counts_in_the_memory_budget():
    class Big(torch.nn.Module):
        def forward(self, x):
            return big(x)

    ep = st.export(Big(), (torch.randn(3, 4),))
    buf = io.BytesIO()
    st.save(ep, buf)
    with pytest.raises(st.LoadError, match=r"node .big. \(sth25.big.default\): the tensors "
                                           r"alive there take 274877906944 bytes"):
        st.load(io.BytesIO(buf.getvalue()), allow_ops=["sth25::big"])


def test_over_varying_sizes_the_record_is_checked_after_the_op_at_each_call():
    ep = _load(_saved(DYN))
    for n in (0, 1, 5, 64):
        x = torch.randn(n, 4)
        torch.testing.assert_close(ep.module()(x), torch.cat([x, x]) + 1)
    lying = _load(_saved(DYN, [["mul", 1000, "s0"], 4]))
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000\*s0 \(\w+ is dim 0 of what "
                                                       r"'twice_rows'"):
        lying.module()(torch.randn(5, 4))
    # saved again, the loaded program's own checks are dropped at load and made anew
    buf = io.BytesIO()
    st.save(ep, buf)
    again = _load(buf.getvalue())
    torch.testing.assert_close(again.module()(torch.ones(2, 4)), torch.full((4, 4), 2.0))


def test_a_size_after_a_custom_ops_number_is_checked_as_recorded():
    """``z[:count_nonzero_int(x)]``: the loader cannot work the slice out (the op's number
    is read from data), so its recorded size is checked at each call (it stood as written:
    a file recording 1000 printed and converted as 1000)."""
    from tests.export import test_data_dependent as dd

    args = (torch.tensor([1.0, 0.0, 2.0, 0.0, 3.0, 0.0]), torch.randn(6))
    blob = surgery.saved(st.export(dd.CustomSlice(), args))
    doc, tensors = parts(blob)
    honest = st.load(io.BytesIO(blob), allow_ops=["sttest"]).module()
    torch.testing.assert_close(honest(*args), dd.CustomSlice()(*args))
    for node in doc["nodes"]:
        if node["name"].startswith("slice"):
            node["meta"]["val"]["tensor"]["shape"] = [1000]
    lying = surgery.load(doc, tensors, allow_ops=["sttest"]).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000 \(\w+ is dim 0 of what "
                                                       r"'slice_1' \(aten.slice.Tensor\)"):
        lying(*args)


def test_a_custom_ops_result_over_varying_sizes_counts_at_call():
    """Its fake gives the bytes at call, from the operands' real shapes, before it runs."""
    class Wide(torch.nn.Module):
        def forward(self, x):
            return wide(x)

    ep = st.export(Wide(), (torch.randn(3),), dynamic_shapes={"x": (st.Dim("n", max=64),)})
    buf = io.BytesIO()
    st.save(ep, buf)
    mod = st.load(io.BytesIO(buf.getvalue()), allow_ops=["sth25::wide"]).module()
    with pytest.raises(st.RuntimeAssertionError, match=r"'wide' \(sth25.wide.default\) would "
                                                       r"allocate 17179869184 bytes"):
        mod(torch.randn(4))


class InBranch(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda a: twice_rows(a) + 1,
                          lambda a: torch.cat([a, a]) - 1, (x,))


@pytest.mark.parametrize("dim", [3, 5, -4])
def test_a_dim_past_a_custom_ops_recorded_rank_in_a_branch_is_refused_at_load(dim):
    """A cond branch's ``unsqueeze(twice_rows(a), dim)`` with ``dim`` outside the rank the
    file records for the custom op's result (which a check right after it holds at each
    call): torch would raise its IndexError at the call whenever the branch runs; refused
    at load (before: loaded, torch's IndexError at call; hostile probe seed 3134)."""
    buf = io.BytesIO()
    ep = st.export(InBranch(), (torch.randn(3, 4),), dynamic_shapes=DYN)
    st.save(ep, buf)
    good = _load(buf.getvalue())
    for x in (torch.ones(0, 4), torch.ones(1, 4), -torch.ones(5, 4), torch.randn(7, 4)):
        torch.testing.assert_close(good.module()(x), ep.module()(x))
    doc, tensors = parts(buf.getvalue())
    branch = next(g for g in doc["subgraphs"] if any(
        n.get("target", "").startswith("torch.ops.sth25") for n in g["nodes"]))
    add = next(n for n in branch["nodes"] if n.get("target") == "torch.ops.aten.add.Tensor")
    add.update(target="torch.ops.aten.unsqueeze.default", args=[add["args"][0], dim])
    add["meta"]["val"]["tensor"]["shape"] += [1]
    with pytest.raises(st.LoadError, match=rf"aten.unsqueeze.default fails whenever it runs: "
                                           rf"dim {dim} of a tensor with 2 dims"):
        _load(pack(doc, tensors))


def test_a_size_a_custom_ops_count_records_is_no_free_symbol_for_a_later_node():
    """``z[:c]``, ``c`` a custom op's count ``u0``, rewritten as ``empty([3])`` still
    recorded ``[u0]``: the loader matched the file's ``u0`` with the 3 it computes there,
    as if that record read it first, and the loaded program (metadata ``[u0]``) returned
    3 elements where the count was 2 (hostile probe seed 3201, ``ops:layout``).  Refused:
    the count's first record is the custom op's."""
    from tests.export.test_data_dependent import CustomSlice

    n = st.Dim("n", max=32)
    ep = st.export(CustomSlice(), (torch.randn(6), torch.randn(6)),
                   dynamic_shapes={"x": {0: n}, "y": {0: n}})
    buf = io.BytesIO()
    st.save(ep, buf)
    good = st.load(io.BytesIO(buf.getvalue()), allow_ops=["sttest"])
    for x in (torch.zeros(0), torch.ones(1), torch.tensor([1.0, 0.0, 2.0])):
        torch.testing.assert_close(good.module()(x, x + 1), (x + x + 1)[:int((x != 0).sum())])
    doc, tensors = parts(buf.getvalue())
    node = next(n for n in doc["nodes"] if n.get("target") == "torch.ops.aten.slice.Tensor")
    node.update(target="torch.ops.aten.empty.memory_format", args=[{"list": [3]}],
                kwargs=[])
    with pytest.raises(st.LoadError, match=rf"node {node['name']!r}: the file records its "
                                           r"value as float32\[u0\], but the graph computes "
                                           r"float32\[3\]"):
        surgery.load(doc, tensors, allow_ops=["sttest"])


@pytest.mark.parametrize("dims", [[2], [0, -3], [-(1 << 63)]])
def test_a_dim_list_past_a_custom_ops_recorded_rank_is_refused_at_load(dims):
    """``sum(twice_rows(x), dims)`` with a dim outside the 2 dims the file records for the
    custom op's result (checked right after it at each call): before, loaded and torch's
    IndexError at call (hostile probe seed 3201, ``multi``, a list of tensors' element
    summed over ``[-2**63]``); only an ``int dim`` was held to the rank."""
    doc, tensors = parts(_saved(DYN))
    add = next(n for n in doc["nodes"] if n.get("target") == "torch.ops.aten.add.Tensor")
    add.update(target="torch.ops.aten.sum.dim_IntList", args=[add["args"][0], {"list": dims}])
    add["meta"]["val"]["tensor"]["shape"] = []
    bad = next(d for d in dims if not -2 <= d < 2)
    with pytest.raises(st.LoadError, match=rf"aten.sum.dim_IntList fails at every call of the "
                                           rf"program: dim {bad} of a tensor with 2 dims"):
        _load(pack(doc, tensors))
