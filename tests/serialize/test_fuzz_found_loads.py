"""Programs of our own that the loader refused (found by ``benchmarks/fuzz.py``): each
saves, loads and computes what eager does at other sizes, the edges of the declared space
included.  The loader re-derives every size; where it knew less than the exporter, its
recomputed size did not match the file's and it refused the file."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize import hostile
from tests.serialize import surgery


def _reloaded(ep: st.ExportedProgram) -> st.ExportedProgram:
    return st.load(surgery.saved(ep))


class _ProductPredicate(torch.nn.Module):
    def forward(self, x, y):
        v0 = torch.ones(x.numel() * (x.numel() > 2))
        v2a = x.clone().unsqueeze(0).expand(2, *x.shape).reshape(-1)
        v2a[:1].add_(1)
        return v0, v2a


def test_a_branch_fact_narrows_a_residual_disjunction():
    """Split on ``s1 == 0``: the other branch knows ``s1 >= 1``, which leaves of the
    condition ``s0*s1 >= 1 or s1 <= 0`` its first side; ``v2a[:1]`` is then one element
    (the loader computed ``min(10*s0*s1, 1)`` and refused the file's ``float32[1]``)."""
    m = _ProductPredicate()
    x, y = torch.randn(1, 5, 1, 1), torch.randn(0, 5, 1, 1)
    ep = st.export(m, (x, y), dynamic_shapes=({2: Dim.AUTO, 3: Dim("d0", max=4)}, None))
    loaded = _reloaded(ep)
    for s0, s1 in [(1, 1), (3, 4), (1, 0), (7, 2)]:
        xs = torch.randn(1, 5, s0, s1)
        for got, want in zip(loaded.module()(xs, y), m(xs, y)):
            torch.testing.assert_close(got, want)


class _SplitPerRow(torch.nn.Module):
    def forward(self, x, y):
        v0 = y.sum(0).view(-1)
        v1 = (x > 0) + x
        v2 = torch.cat([p * i for i, p in enumerate(v1.split(len(v0) or 1, 0))], 0)
        return v1, v2


def test_a_size_each_branch_writes_as_a_number_is_the_predicates_size():
    """Splits on ``s0 == 2`` inside ``s0 >= 2`` of ``s0 <= 3``: one branch's rows are
    ``2``, the other's ``3``, and the cond's are ``s0`` (the loader took them for a size
    read from data and refused the file's ``float32[s0, s1]``)."""
    m = _SplitPerRow()
    y = torch.randn(1, 1)
    ep = st.export(m, (torch.randn(0, 2), y), dynamic_shapes=(
        {0: Dim("d0", max=3), 1: Dim.AUTO}, None))
    loaded = _reloaded(ep)
    for rows in range(4):
        x = torch.randn(rows, 3)
        for got, want in zip(loaded.module()(x, y), m(x, y)):
            torch.testing.assert_close(got, want)


class _ChunkThenStride(torch.nn.Module):
    def forward(self, x, y):
        v1 = y[:y.shape[0] // 2]
        v2 = x * 2 if x.shape[0] >= v1.numel() else x * 0
        v3 = y.unsafe_chunk(2, 0)[-1].view(-1)
        return v2, v3, v3[-v3.shape[0] // 2:2:2]


def test_sizes_of_several_symbols_compare_at_each_value_of_one_of_few():
    """The file's and the loader's forms of the last slice's size (min/max of floor
    divisions of ``s0``, times ``s1*s2``) are one at each of ``s0``'s three values in the
    branch (``2 <= s0 <= 4``), which no rewriting showed: the loader refused the file."""
    m = _ChunkThenStride()
    x = torch.randn(5)
    ep = st.export(m, (x, torch.randn(1, 2, 5, 1)), dynamic_shapes=(
        None, {0: Dim("d0", max=4), 1: Dim.AUTO, 2: Dim.DYNAMIC}))
    loaded = _reloaded(ep)
    for shape in [(0, 2, 3, 1), (1, 1, 1, 1), (2, 3, 2, 1), (3, 2, 4, 1), (4, 2, 5, 1)]:
        y = torch.randn(shape)
        for got, want in zip(loaded.module()(x, y), m(x, y)):
            torch.testing.assert_close(got, want)


class _VmapAfterSizeBranches(torch.nn.Module):
    def forward(self, x):
        v0 = x * 2 if x.shape[0] == len(x) else x.flip(0)
        v1 = v0.squeeze(0) if v0.shape[0] == 1 else v0.sum(0)
        v2 = x.clone()
        v2[v2 > 0] = 0.0
        v3 = v0.flip(0)
        v4 = torch.cat(x.split(1, 0)[::-1], 0)
        v5 = torch.vmap(lambda r: r + v2.sum())(x)
        v6 = torch.cond(v3.size(-1) == 0, lambda t: torch.cond(
            t.shape[0] > 2, lambda u: u * 2, lambda u: u * 3, (t,)), lambda t: t.flip(0), (v3,))
        return v0, v1, v2, v4, v5, v6


def test_a_mapped_length_whose_range_decides_it_loads():
    """The loader asked ``n >= 1`` of a vmap's length as a condition where the size's own
    range answered it as a plain bool (fuzz seed 18404: "malformed program")."""
    with pytest.warns(UserWarning, match="Pred is a Python constant"):
        ep = st.export(_VmapAfterSizeBranches(), (torch.randn(4),),
                       dynamic_shapes=({0: Dim.AUTO},))
    ep = _reloaded(ep)
    m = ep.module()
    x = torch.randn(4)  # (the split's piece count pins the size: 4 only)
    for got, want in zip(m(x), _VmapAfterSizeBranches()(x)):
        torch.testing.assert_close(got, want)
    for n in (1, 3):
        with pytest.raises(st.InputMismatchError):
            m(torch.randn(n))


class _SplitThenClampedLength(torch.nn.Module):
    def forward(self, x):
        v2 = x * 2 if bool(len(x)) else x * 0
        return v2, torch.ones(max(0, x.numel() - x.size(-2))).permute(0)


def test_a_split_output_in_the_files_form_loads_where_each_branch_gives_it():
    """A size split on ``s0 == 0``: the file records the cond's length as
    ``max(s0*s1 - s0, 0)``, the loader's branches give ``0`` (``s0 == 0``) and
    ``s0*s1 - s0`` (``1 <= s0 <= 16``, ``s1 >= 1``), merged as ``s0*s1 - s0``, which no
    rule shows equal to the file's without a fact on ``s0``; the file's form is each
    branch's where it runs, so it stands (fuzz seed 19101: the file was refused)."""
    m = _SplitThenClampedLength()
    ep = st.export(m, (torch.randn(4, 4),), dynamic_shapes=(
        {0: Dim("d0", max=16), 1: Dim("d1", min=1)},))
    loaded = _reloaded(ep)
    out = next(n for n in loaded.graph.nodes if n.op == "output").args[0][1]
    assert [str(s) for s in out.meta["val"].shape] == ["max(-s0 + s0*s1, 0)"]
    for shape in [(3, 5), (0, 2), (1, 1), (16, 1)]:
        x = torch.randn(shape)
        for got, want in zip(loaded.module()(x), m(x)):
            torch.testing.assert_close(got, want)


class _SliceAfterSizeBranch(torch.nn.Module):
    def forward(self, x):
        v1 = x.reshape(-1)
        v3 = v1 * 2 if len(v1) > 25 else v1[:1]
        v5a = v3.clone().flatten()
        v5a[-1:] = 9.0
        return v1, v3, v5a


class _CondAfterNumelBranch(torch.nn.Module):
    def forward(self, x, y):
        v0 = y * 2 if y.numel() > 83 else y[:1]
        v2 = torch.cond(len(x) * 0.7 >= 3.5, lambda t: t * 2, lambda t: -t, (x,))
        return v0, v0.softmax(0), v2


class _ScalarOrPiece(torch.nn.Module):
    def forward(self, y):
        v0 = torch.zeros(1) if y.shape[3] == 0 else y.flatten()[:1]
        return v0, v0.squeeze(0) if v0.shape[0] == 1 else v0.sum(0)


_FUZZ18 = {  # fuzz18's files refused by the loader (fixed by loader18: these pin them)
    "slice_length_without_the_branch": (
        _SliceAfterSizeBranch, [(1, 5, 5)], ({0: Dim.AUTO, 1: Dim.DYNAMIC, 2: Dim("d0")},),
        [[(2, 3, 4)], [(1, 2, 2)], [(1, 0, 3)]]),
    "cond_rows_as_a_size_read_from_data": (
        _CondAfterNumelBranch, [(5,), (2, 3, 7, 2)], ({0: Dim.AUTO}, {0: Dim("d0", max=2)}),
        [[(7,), (1, 3, 7, 2)], [(2,), (2, 3, 7, 2)]]),
    "branches_of_other_ranks": (
        _ScalarOrPiece, [(7, 3, 7, 7)],
        ({1: Dim.DYNAMIC, 2: Dim("d1", min=7), 3: Dim("d0", max=7)},),
        [[(7, 2, 8, 3)], [(7, 0, 7, 0)]]),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow)
                                  if c == "branches_of_other_ranks" else c
                                  for c in sorted(_FUZZ18)])  # (four splits: ~2 s)
def test_fuzz18_refused_files_load(case):
    """(a) a slice's length recomputed as ``max(n - max(n - 1, 0), 0)`` without the
    branch's ``n <= 25`` against the file's ``1``; (b) a cond's rows recorded as ``s1``
    recomputed as a size read from data; (c) branches compared as ``[]`` and
    ``[min(7*s0*s1*s2, 1)]`` where the split's branch makes it ``[1]``."""
    model, example, spec, calls = _FUZZ18[case]
    m = model()
    ep = st.export(m, tuple(torch.randn(s) for s in example), dynamic_shapes=spec)
    loaded = _reloaded(ep).module()
    for shapes in calls:
        args = tuple(torch.randn(s) for s in shapes)
        for got, want in zip(loaded(*args), m(*args)):
            torch.testing.assert_close(got, want)


class _CondOnRowsReadFromData(torch.nn.Module):
    def forward(self, x):
        v0 = x.nonzero()[:, 0].float()
        v1 = torch.cond(len(v0) > 1, lambda t: t.sum(0, keepdim=True), lambda t: t[:1], (v0,))
        return v1 * 2


def test_a_cond_on_a_size_read_from_data_keeps_its_new_size():
    """``len(v0) > 1`` on rows read from data: the cond's rows stay a new size (the loader
    merges only forms of input sizes); written as ``min(u0, 1)`` the file was refused
    (fuzz seed 19505)."""
    m = _CondOnRowsReadFromData()
    loaded = _reloaded(st.export(m, (torch.randn(4),), dynamic_shapes=({0: Dim("d0", min=2)},)))
    for x in (torch.tensor([0.0, 0.0]), torch.tensor([0.0, 2.0, 0.0]), torch.randn(5)):
        torch.testing.assert_close(loaded.module()(x), m(x))


class _ConstantsPerSide(torch.nn.Module):
    def forward(self, x, z):
        v2 = x[:1] * x
        v4 = torch.tensor([x.numel(), 2])  # a constant on the d0 == 0 side only
        v6 = z.clone()
        v6.index_fill_(0, torch.tensor([0]), -1.0)
        return v2, v4, v6


def test_split_sides_lifting_different_constants_under_one_name_load():
    """A size split whose sides lift different constants first: the d0 == 0 side's
    ``c_lifted_tensor_0`` is ``[0, 2]``, the other side's is ``[0]`` (renamed
    ``c_lifted_tensor_0_split1``); the top graph's placeholder took the other side's
    metadata (``i64[1]``) for the ``i64[2]`` tensor, and the loader refused the file
    (fuzz seed 19505)."""
    m = _ConstantsPerSide()
    ep = st.export(m, (torch.randn(7, 3), torch.randn(7)),
                   dynamic_shapes=({0: Dim("d0", max=7), 1: Dim("d1", min=1)}, None))
    consts = ep.lifted_constants
    for n in ep.graph.nodes:
        if n.op == "placeholder" and n.name in consts:
            assert tuple(n.meta["val"].shape) == tuple(consts[n.name].shape), n.name
    loaded = _reloaded(ep).module()
    z = torch.randn(7)
    for rows, cols in [(0, 3), (1, 1), (5, 2), (7, 4)]:
        x = torch.randn(rows, cols)
        for got, want in zip(loaded(x, z), m(x, z)):
            torch.testing.assert_close(got, want)


class _MaskRowsInASplit(torch.nn.Module):
    def forward(self, y, z):
        if z.shape[0] == 1:
            v0 = z.squeeze(0)
        else:
            v0 = z.sum(0)
        v1 = y[torch.arange(y.shape[0]) % 2 == 0]  # rows read from data, in each side
        return v0, v1, torch.vstack([v1, v1[:len(z)]])


def test_a_split_size_of_a_data_size_one_side_simplified_loads():
    """A split on ``z.shape[0] == 0``: both sides record ``u0 + min(s1, u0)`` rows, of the
    rows ``u0`` read from data; the loader's ``s1 == 0`` branch simplifies its own to
    ``u3``, the other keeps ``u5 + min(s1, u5)``, and taking the two apart it made a new
    size where the file records the one form, then refused the file (fuzz seed 201)."""
    m = _MaskRowsInASplit()
    ep = st.export(m, (torch.randn(4, 2), torch.randn(4)),
                   dynamic_shapes=({0: Dim("d1", min=2, max=16)}, {0: Dim("d2")}))
    loaded = _reloaded(ep).module()
    for rows, n in [(2, 0), (2, 1), (5, 3), (16, 7), (3, 0)]:
        y, z = torch.randn(rows, 2), torch.randn(n)
        for got, want in zip(loaded(y, z), m(y, z)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        loaded(torch.randn(1, 2), torch.randn(3))


class _CondOnAClampedSliceLength(torch.nn.Module):
    def forward(self, y):
        v0 = y[y.shape[0] - 2:-1]
        return v0, torch.cond(v0.numel() > 1, lambda t: t.sum(0, keepdim=True),
                              lambda t: t[:1], (v0,))


def test_a_predicate_of_python_min_max_of_sizes_is_read():
    """The cond's predicate compares ``builtins.max(...)`` of sizes (the slice's length as
    the graph computes it): the loader ran Python's ``max`` on symbolic sizes, which asks
    which is larger, so it read no predicate and made the rows a size read from data
    where the file records ``min(len, 1)`` (fuzz seed 20104: the file was refused).  The
    predicate's own min/max are now worked out for it (``predicate_sizes.py``)."""
    m = _CondOnAClampedSliceLength()
    ep = st.export(m, (torch.randn(1),), dynamic_shapes=({0: Dim.AUTO},))
    loaded = _reloaded(ep).module()
    for n in (0, 1, 2, 3, 5):
        y = torch.randn(n)
        for got, want in zip(loaded(y), m(y)):
            torch.testing.assert_close(got, want)


def _recorded_as(ep: st.ExportedProgram, shape: list, *names: str) -> bytes:
    """``ep``'s file with the nodes ``names`` (of any graph) recorded as ``shape``."""
    doc, tensors = hostile.parts(surgery.saved(ep))
    for graph in [doc, *doc["subgraphs"]]:
        for n in graph["nodes"]:
            if n["name"] in names:
                val = n["meta"]["val"]
                (val["tuple"][0] if "tuple" in val else val)["tensor"]["shape"] = shape
    return hostile.pack(doc, tensors)


_P = ["max", ["add", ["mul", -1, ["max", ["min", "s0", ["add", "s0", ["mul", "s0", [
    "min", ["max", ["add", ["mul", -1, "s0"], 2], 0], 1]], -2]], 0]], ["max", [
        "add", "s0", -1], 0]], 0]  # (the slice's length as the file writes it)


@pytest.mark.parametrize("shape", [[1], [["add", _P, 1]], [2]])
def test_a_cond_recorded_as_other_sizes_of_a_min_max_predicate_is_refused(shape):
    """The same file with the cond's rows recorded as one (the false branch has none at
    ``len == 0``), ``len + 1`` or two: refused, now that the predicate is read as each
    branch's fact (at load, or at the calls of no row: ``n`` of 0 or 1).  (``min(len, 2)`` and ``len`` are no forgery: the slice ``y[n-2:-1]``
    has at most one row, so they are ``min(len, 1)`` and load.)"""
    ep = st.export(_CondOnAClampedSliceLength(), (torch.randn(1),),
                   dynamic_shapes=({0: Dim.AUTO},))
    hostile.refused_at_load_or_call(_recorded_as(ep, shape, "cond", "getitem"), [
        (torch.randn(0),), (torch.randn(1),)], load="records its value as")


class _CondOnAStridedClampedSlice(torch.nn.Module):
    def forward(self, x):
        v1 = x[x.shape[0] - 1:1:2]
        return v1, torch.cond(v1.size(-1) > 0, lambda t: t[:1] + 1,
                              lambda t: t.new_zeros(0), (v1,))


def _strided_slice_program() -> st.ExportedProgram:
    return st.export(_CondOnAStridedClampedSlice(), (torch.randn(0),),
                     dynamic_shapes=({0: Dim.AUTO},))


def test_a_predicate_pinning_a_min_max_length_to_one_loads():
    """``x[n - 1:1:2]`` has at most one row; the cond on ``len > 0`` is written with
    min/max of ``n`` (``max(min(n, 1) - max(min(n, ...), 0), 0) >= 1``), and the true
    branch's ``t[:1]`` recorded as the slice's length ``(max(...) + 1)//2``: where the
    predicate holds that is 1, which the loader's ``[1]`` is only once the fact pins the
    min/max to its one value (``symbolic/pins.py``).  Before: the predicate was unknown,
    the branches' ``[1]`` and ``[0]`` were compared and the file refused."""
    m = _CondOnAStridedClampedSlice()
    loaded = _reloaded(_strided_slice_program()).module()
    for n in (0, 1, 2, 3, 5):
        x = torch.randn(n)
        for got, want in zip(loaded(x), m(x)):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("shape", [[0], [2]])
def test_a_branch_recorded_as_another_length_of_a_pinned_slice_is_refused(shape):
    with pytest.raises(st.LoadError, match="node 'slice_2': the file records"):
        st.load(_recorded_as(_strided_slice_program(), shape, "slice_2"))


class _StridedTailOfReadRowsInASplit(torch.nn.Module):
    def forward(self, x):
        v1 = x.flatten()[:(x > 0).sum().item()]
        v3 = torch.masked_select(v1, v1 > 0)
        if len(x) < 4:
            v5 = x * 2
        else:
            v5 = x.sum(0, keepdim=True)
        return v3, v5, v3[-1::2]


def _strided_tail_program() -> st.ExportedProgram:
    return st.export(_StridedTailOfReadRowsInASplit(), (torch.randn(6),),
                     dynamic_shapes=({0: Dim("d0", max=16)},))


def test_a_split_size_written_in_two_equal_forms_loads():
    """A split on ``n <= 3``: both sides slice ``v3[-1::2]`` of ``u`` rows read from data;
    the loader's ``n <= 3`` side (``u <= 3``) simplified the length to
    ``(u + max(u - 1, 0) + 1)//2 - max(u - 1, 0)``, the other kept the file's
    ``(max(u - max(u - 1, 0), 0) + 1)//2``: one size (``min(u, 1)``) that the loader made a
    new one, and refused the file (fuzz seed 2112).  Split on the ``max``, each side is a
    number (``symbolic/cases.py``)."""
    m = _StridedTailOfReadRowsInASplit()
    loaded = _reloaded(_strided_tail_program()).module()
    for n in (0, 1, 3, 4, 9, 16):
        x = torch.randn(n)
        for got, want in zip(loaded(x), m(x)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        loaded(torch.randn(17))


_U = ["max", ["add", "u1", ["mul", -1, ["max", ["add", "u1", -1], 0]]], 0]


@pytest.mark.parametrize("shape, x", [
    (["u1"], torch.ones(5)), ([1], -torch.ones(5)),
    ([["floordiv", ["add", _U, 2], 2]], -torch.ones(5))], ids=["all_read", "one", "half_up"])
def test_a_split_size_recorded_in_another_form_is_refused(shape, x):
    """The same file with the strided tail's rows recorded as all the rows read (``u1``),
    as one row, or as ``(max(...) + 2)//2`` (one row where there are none): refused, at
    load or (where the loader cannot refute it) at a call where it is not what runs (five
    rows read; none)."""
    doc, tensors = hostile.parts(_recorded_as(_strided_tail_program(), [], "none"))
    for n in doc["nodes"]:
        if n["name"] in ("cond", "getitem_2"):
            val = n["meta"]["val"]
            (val["tuple"][2] if "tuple" in val else val)["tensor"]["shape"] = shape
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [(x,)],
                                    load="records its value as")


class _OneNonzero(torch.nn.Module):
    def forward(self, x):
        nz = x.nonzero()
        torch._check(nz.shape[0] == 1)
        return nz * 2


def test_a_count_a_later_check_pins_is_recorded_as_that_number_and_loads():
    """Why a recorded number where the loader's rule makes a new size read from data is
    kept, not refused (``nonzero`` recorded as ``[1, u0]`` of the rule's ``[u, 1]`` loads):
    the exporter writes a count that a later check pins as that number (``[1, 1]`` here),
    which the loader's evaluation of the node, before the check, cannot tell."""
    m = _OneNonzero()
    ep = st.export(m, (torch.tensor([0.0, 1.0, 0.0]),), dynamic_shapes=({0: Dim("n")},))
    blob = surgery.saved(ep)
    doc, _ = hostile.parts(blob)
    nonzero = next(n for n in doc["nodes"] if n["name"] == "nonzero")
    assert nonzero["meta"]["val"]["tensor"]["shape"] == [1, 1]
    loaded = st.load(blob).module()
    for x in (torch.tensor([0.0, 2.0]), torch.tensor([3.0]), torch.tensor([0, 0, 0, 1.0])):
        torch.testing.assert_close(loaded(x), m(x))
    with pytest.raises(st.RuntimeAssertionError, match="u0 == 1"):
        loaded(torch.tensor([1.0, 1.0]))


class _TwoSplits(torch.nn.Module):
    def forward(self, y, z):
        v0 = torch.ones(max(0, 6 - len(y)))
        v1 = v0 * 2 if bool(len(v0)) else v0.sum(0, keepdim=True)
        v2 = z * 2 if z.size(0) < 4 else z[:1]
        return v0, v1, v2


def test_a_branch_of_nested_size_splits_knows_what_their_facts_leave():
    """Splits on ``s3 <= 5`` and ``s6 <= 3`` nest: the false branch of ``(s3 <= 5) and
    (s6 <= 3)`` holds ``not (...)``, and inside it the true branch of ``s3 <= 5`` runs only
    where ``s6 >= 4``, where ``z[:1]`` is one row; the loader kept ``min(s6, 1)`` (it did not
    narrow a ``not (a and b)`` fact as the ``or`` it is) and refused the file's ``1``."""
    m = _TwoSplits()
    ep = st.export(m, (torch.randn(3, 7), torch.randn(6, 7)),
                   dynamic_shapes=({0: Dim("d3", min=3)}, {0: Dim("d5", max=6)}))
    loaded = _reloaded(ep).module()
    for rows, n in [(3, 0), (3, 6), (5, 4), (6, 3), (9, 5), (4, 1)]:
        y, z = torch.randn(rows, 7), torch.randn(n, 7)
        for got, want in zip(loaded(y, z), m(y, z)):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("shape", [[0, 7], [2, 7]])
def test_a_nested_split_branch_recorded_as_other_rows_is_refused(shape):
    ep = st.export(_TwoSplits(), (torch.randn(3, 7), torch.randn(6, 7)),
                   dynamic_shapes=({0: Dim("d3", min=3)}, {0: Dim("d5", max=6)}))
    with pytest.raises(st.LoadError, match="node 'slice_1': the file records"):
        st.load(_recorded_as(ep, shape, "slice_1"))


@pytest.mark.parametrize("shape", [[["min", _P, 2]], [_P]])
def test_a_cond_recorded_in_another_form_of_its_size_loads(shape):
    """``y[n-2:-1]`` has at most one row: ``min(len, 2)`` and ``len`` are ``min(len, 1)``
    written otherwise, which the loader proves case by case on the min/max terms of the
    length (``symbolic/cases.py``) and no longer refuses."""
    m = _CondOnAClampedSliceLength()
    ep = st.export(m, (torch.randn(1),), dynamic_shapes=({0: Dim.AUTO},))
    loaded = st.load(_recorded_as(ep, shape, "cond", "getitem")).module()
    for n in (0, 1, 2, 5):
        y = torch.randn(n)
        for got, want in zip(loaded(y), m(y)):
            torch.testing.assert_close(got, want)


class _StridedTailInASplit(torch.nn.Module):
    def forward(self, x):
        v0 = x * 2 if bool(x.shape[1]) else x[:1]
        return v0, torch.masked_select(v0, v0 > 0), x[x.shape[0] - 2:x.shape[0] + 1:3]


def _strided_split_program() -> st.ExportedProgram:
    return st.export(_StridedTailInASplit(), (torch.randn(7, 7),),
                     dynamic_shapes=({0: Dim("d0", max=16), 1: Dim("d0", max=16)},))


def test_a_split_size_the_file_writes_for_both_branches_loads():
    """A split on ``n == 0``: the file writes the rows of ``x[n-2:n+1:3]`` as the slice's
    length of ``n``, which is each branch's (0 at ``n == 0``); the loader's ``n != 0``
    branch simplified its own under ``n >= 1`` into a form that is 1 at ``n == 0``, so
    neither branch's form was the cond's and the loader made a new size, refusing the
    file (found by a load-only search, seed 7).  The file's form of the inputs' sizes is
    now the cond's where each branch's size is that form where it runs."""
    m = _StridedTailInASplit()
    loaded = _reloaded(_strided_split_program()).module()
    for n in (0, 1, 2, 3, 7, 16):
        x = torch.randn(n, n)
        for got, want in zip(loaded(x), m(x)):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("rows, size", [(["floordiv", ["add", "s0", 2], 3], 7), (1, 0),
                                        ("s0", 7)], ids=["third", "one", "all"])
def test_a_split_size_the_file_writes_otherwise_is_refused(rows, size):
    """The file's form must be each branch's where it runs: ``(n + 2)//3`` (3 rows at
    ``n == 7``), 1 (none at ``n == 0``) or ``n`` are refused (at load, or at those
    calls)."""
    doc, tensors = hostile.parts(_recorded_as(_strided_split_program(), [], "none"))
    for n in doc["nodes"]:
        if n["name"] in ("cond", "getitem_2"):
            val = n["meta"]["val"]
            (val["tuple"][2] if "tuple" in val else val)["tensor"]["shape"][0] = rows
    hostile.refused_at_load_or_call(hostile.pack(doc, tensors), [(torch.randn(size, size),)],
                                    load="records its value as")


class _PickAfterProduct(torch.nn.Module):
    def forward(self, x):
        v0 = x.flatten()[1] * x  # (requires s0*s1 >= 1: with s1 >= 1, s0 >= 1 too)
        return v0, torch.cond(len(x) == 0, lambda t: t.sum(0, keepdim=True),
                              lambda t: t[:1], (x,))


def test_a_product_requirement_gives_each_factor_its_lower_bound():
    """``x.flatten()[1]`` requires ``s0*s1 >= 1``; the exporter knew ``s0 >= 1`` from it and
    recorded the cond as ``t[:1]``'s ``min(s0, 1)``, which the loader (that computed ``1``)
    could not prove one with it: found by the fuzzer (seed 1)."""
    m = _PickAfterProduct()
    ep = st.export(m, (torch.randn(2, 1, 2),),
                   dynamic_shapes=({0: Dim("d0", max=16), 1: Dim("d1", min=1)},))
    for ours in (ep.module(), _reloaded(ep).module()):
        for s0, s1 in [(1, 1), (2, 3), (16, 1), (5, 7)]:
            xs = torch.randn(s0, s1, 2)
            for got, want in zip(ours(xs), m(xs)):
                torch.testing.assert_close(got, want)
        with pytest.raises(st.InputMismatchError):
            ours(torch.randn(0, 3, 2))


class _FirstTwoKept(torch.nn.Module):
    def forward(self, x):
        v1 = x.flatten()[x.flatten() > 0][:2]
        return v1 * 2 if v1.shape[0] > 1 else v1.flip(0), x + 1


def test_an_assertion_on_a_python_min_of_a_size_read_from_data_is_a_fact():
    """``v1.shape[0] > 1`` of ``x[mask][:2]`` is asserted as ``min(u0, 2) >= 2`` (Python's
    ``min`` in the graph), and ``v1`` recorded as two elements; the loader left the min
    unknown, took nothing from the assertion and refused our file (fuzzer seed 5).  (The
    test's other answer, traced for its own input ranges, is the cond's false branch.)"""
    m = _FirstTwoKept()
    torch.manual_seed(0)
    ep = st.export(m, (torch.randn(6, 3, 2),), dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO},))
    assert "min(u0, 2) >= 2" in str(ep)
    for ours in (ep.module(), _reloaded(ep).module()):
        for xs in [torch.randn(6, 3, 2).abs() + 0.1, torch.randn(1, 3, 1).abs() + 0.1,
                   -torch.ones(2, 3, 2), torch.randn(0, 3, 2)]:
            for got, want in zip(ours(xs), m(xs)):
                torch.testing.assert_close(got, want)


class _LastPieceOfARow(torch.nn.Module):
    def forward(self, z):
        v0 = z[-1]
        v3 = v0.hsplit([max(v0.shape[0] - 1, 1)])[0]
        return v3, v3.unbind(0)[0]


def test_a_requirement_on_a_min_bounds_its_argument():
    """``unbind(0)[0]`` requires ``min(z.shape[1], 1) == 1``: the exporter records
    ``hsplit``'s second piece as ``s1 - 1``; the loader, taking the requirement as a fact,
    computed ``max(s1 - 1, 0)`` and refused the file until the fact bounded ``s1 >= 1``
    (seed 263)."""
    m = _LastPieceOfARow()
    ep = st.export(m, (torch.randn(3, 2),),
                   dynamic_shapes=({0: Dim("a", min=2, max=16), 1: Dim("b", max=2)},))
    loaded = _reloaded(ep)
    for a, b in [(2, 1), (16, 2), (5, 2)]:
        z = torch.randn(a, b)
        for got, want in zip(loaded.module()(z), m(z)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(3, 0))


class _DiffThenReshape(torch.nn.Module):
    def forward(self, y):
        v1 = y.view(y.shape[0], -1)
        v2 = v1.diff(dim=0, append=v1 * 2)  # 2*s0 - 1 rows
        return v2.reshape(v2.shape[0], -1)  # -1: (6*s0*s1 - 3*s1) // (2*s0 - 1) == 3*s1


def test_a_reshape_by_a_size_of_two_terms_loads():
    """fuzz seed 271: the loader computed the -1 dim as the numel over ``2*s0 - 1``
    unsimplified, where the file records ``3*s1``; the engine now divides a polynomial
    by a divisor of several terms where nothing is left over."""
    model = _DiffThenReshape()
    ep = st.export(model, (torch.randn(7, 4, 3),),
                   dynamic_shapes=({0: Dim("d1", min=2), 1: Dim("d0", min=2, max=7)},))
    loaded = _reloaded(ep).module()
    for shape in [(2, 2, 3), (3, 7, 3), (9, 5, 3)]:
        y = torch.randn(*shape)
        torch.testing.assert_close(loaded(y), model(y))
    with pytest.raises(Exception, match="d0|shape|8"):
        loaded(torch.randn(3, 8, 3))


class _SplitThenReadRows(torch.nn.Module):
    def forward(self, x, z):
        if len(z) % 2 == 0:
            v1 = z * 2
        else:
            v1 = z.sum(0, keepdim=True)
        return v1, x.flatten()[x.flatten() > 0][:2]


def test_a_split_whose_sides_each_read_a_count_loads():
    """A split on ``len(z) % 2 == 0`` whose sides each read ``x[x > 0]``'s count and take
    ``[:2]``: the file records the cond's size ``min(u0, 2)`` of its own symbol, where the
    loader had a new size for it (its branches' ``min(u3, 2)`` and ``min(u5, 2)`` differ in
    their symbols alone) and refused the file (session 29, fuzz run fuzz292's
    ``export_crash``).  Now the cond's size is ``min`` of a new size read in the side that
    ran, and the file's ``u0`` that size."""
    m = _SplitThenReadRows()
    ep = st.export(m, (torch.randn(6, 2), torch.randn(2, 3)), dynamic_shapes=(
        {0: Dim("d0", max=8)}, {0: Dim("d3", min=1, max=16)}))
    loaded = _reloaded(ep)
    assert "f32[min(u0, 2)]" in str(loaded)
    for n, k in ((0, 1), (1, 2), (3, 2), (8, 5), (4, 16)):
        x, z = torch.randn(n, 2), torch.randn(k, 3)
        for got, want in zip(loaded.module()(x, z), m(x, z)):
            torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(9, 2), torch.randn(2, 3))
    again = _reloaded(loaded)  # (saved again, it loads and runs alike)
    x, z = torch.tensor([[1.0, -1], [2, 3]]), torch.randn(3, 3)
    for got, want in zip(again.module()(x, z), m(x, z)):
        torch.testing.assert_close(got, want)


class _UniqueOfOneElement(torch.nn.Module):
    def forward(self, x, y):
        return torch.unique((x > 0).int()), torch.igamma(y.bfloat16(), (x * 4).long())


def _unique_file() -> bytes:
    """``x`` is ``Dim.AUTO``, made 1 by the broadcast against ``y`` only after
    ``unique`` traced its count as a new size ``u0``: the loader, seeing ``x`` of one
    element, computes the count 1 (fuzz seed 3201: it refused the file, "records its
    value as (int32[u0], ...), but the graph computes (int32[1], ...)")."""
    buf = io.BytesIO()
    st.save(st.export(_UniqueOfOneElement(), (torch.randn(1), torch.randn(1)),
                      dynamic_shapes=({0: Dim.AUTO}, {0: Dim("d0", min=1, max=4)})), buf)
    return buf.getvalue()


def test_a_count_read_from_data_that_the_loader_finds_constant_loads():
    loaded = st.load(_unique_file())
    m = _UniqueOfOneElement()
    for x0, n in [(-1.0, 1), (2.0, 3), (0.5, 4)]:
        x, y = torch.tensor([x0]), torch.rand(n) + 0.5
        for got, want in zip(loaded.module()(x, y), m(x, y)):
            torch.testing.assert_close(got, want, equal_nan=True)  # (igamma of a < 0)
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(2), torch.rand(2))


def test_that_count_declared_without_the_constant_is_refused():
    doc, tensors = hostile.parts(_unique_file())
    (u,) = [s for s in doc["symbols"] if s["name"].startswith("u")]
    u["lo"], u["hi"] = 2, 5
    with pytest.raises(st.LoadError, match="_unique2"):
        surgery.load(doc, tensors)
