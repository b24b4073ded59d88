"""What the file records of the nodes past the loader's analysis time is checked at call.

The loader evaluates at most ``ANALYSIS_NODES`` nodes that depend on the inputs, within
``ANALYSIS_SECONDS`` of CPU (a file of many nodes or hard size questions must not make
loading slow; the count, session 27, makes it the same on every machine, the time is a
backstop against hostile files); until session 27 the nodes past that
point kept their records unchecked, so a file made large enough to run the analysis out
of time had its later records believed (``print(ep)``, ``to_torch()``).  Now each such
node (and every node of the subgraphs it calls) has its recorded dtype, rank and sizes
checked at each call, like a node the loader cannot work out; a record no check can
read refuses the file.  Here the budget is spent at once (``ANALYSIS_NODES = 0``).
"""

from __future__ import annotations


import pytest
import torch

import safetrace as st
from safetrace.serialize import memory
from tests.serialize.hostile_static import parts
from tests.serialize.test_recorded_at_call import Branch, _branch, _edit
from tests.serialize import surgery


class Dyn(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return (x * 2).sum(1), x[: n // 2] + 1, torch.zeros(n + 1)


def _eager(x):
    return Dyn()(x)


@pytest.fixture
def no_time(monkeypatch):
    monkeypatch.setattr(memory, "ANALYSIS_NODES", 0)


def _saved(model, allow=()) -> tuple[dict, dict]:
    return parts(surgery.saved(st.export(model, (torch.randn(6, 4),),
                      dynamic_shapes={"x": (st.Dim("n", min=0, max=64), None)})))


def _load(doc, tensors):
    return surgery.load(doc, tensors, allow_ops=["sth25"]).module()


def _name(doc, prefix):
    return next(n["name"] for n in doc["nodes"] if n["name"].startswith(prefix))


def test_our_files_load_and_run_past_the_time(no_time):
    doc, tensors = _saved(Dyn())
    mod = _load(doc, tensors)
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        for got, want in zip(mod(x), Dyn()(x)):
            torch.testing.assert_close(got, want)
    branch = _load(*_saved(Branch()))
    for x in (torch.rand(3, 4) + 1, -torch.rand(0, 4) - 1, -torch.rand(2, 4) - 1):
        torch.testing.assert_close(branch(x), _branch(x))


@pytest.mark.parametrize("prefix, field, value, error", [
    ("sum", "shape", [["mul", 1000, "s0"]], r"== 1000\*s0 \(\w+ is dim 0 of what 'sum"),
    ("slice", "shape", [7, 4], r"== 7 \(\w+ is dim 0 of what 'slice"),
    ("add", "dtype", "float64", r"node 'add\w*' \(.*\) returned a float32 tensor of 1 dim|"
                                r"returned a float32 tensor of 2 dims, but the file records a "
                                r"float64"),
    ("zeros", "shape", [["add", "s0", 2]], r"== s0 \+ 2 \(\w+ is dim 0 of what 'zeros"),
], ids=["sum", "slice", "dtype", "zeros"])
def test_a_lying_record_past_the_time_is_refused_at_call(no_time, prefix, field, value, error):
    doc, tensors = _saved(Dyn())
    _edit(doc, _name(doc, prefix), field, value)
    mod = _load(doc, tensors)
    with pytest.raises(st.RuntimeAssertionError, match=error):
        mod(torch.randn(5, 4))


def test_a_branchs_lying_record_past_the_time_is_refused_where_it_runs(no_time):
    doc, tensors = _saved(Branch())
    _edit(doc, "twice_rows", "shape", [["mul", 1000, "s0"], 4])
    lying = _load(doc, tensors)
    x = -torch.rand(3, 4) - 1
    torch.testing.assert_close(lying(x), _branch(x))
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000\*s0 \(\w+ is dim 0 of what "
                                                       r"'twice_rows'"):
        lying(torch.rand(3, 4) + 1)


class Loop(torch.nn.Module):
    def forward(self, x):
        return torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, (a * 2).sin()),
                                (torch.tensor(0), x))[1]


def test_a_loops_carry_past_the_time_is_its_record_where_the_body_keeps_it(no_time):
    """The body returns the carry as recorded (checked at each iteration), the loop is
    given it so (checked before the loop): each iteration's carry is that record."""
    mod = _load(*_saved(Loop()))
    for n in (0, 1, 5):
        x = torch.randn(n, 4)
        want = x
        for _ in range(3):
            want = (want * 2).sin()
        torch.testing.assert_close(mod(x), want)


def test_a_record_no_check_can_read_past_the_time_refuses_the_file(no_time):
    """The body's result recorded in another form (``max(s0, 0)``) than the carry: the
    carry's ``[s0, 4]`` in the body is then a size of the inputs its graph holds no value
    of (its carried values change), so the file is refused, not believed."""
    doc, tensors = _saved(Loop())
    body = next(s for s in doc["subgraphs"] if "body" in s["path"])
    sin = next(n for n in body["nodes"] if n["name"] == "sin")
    sin["meta"]["val"]["tensor"]["shape"][0] = ["max", "s0", 0]
    with pytest.raises(st.LoadError, match=r"analysis ran out of time before it, and what "
                                           r"the file records there cannot be checked"):
        _load(doc, tensors)


def test_the_count_stops_the_analysis_at_the_same_node_everywhere(monkeypatch):
    """Three nodes analysed (``sym_size_int``, ``mul``, ``sum_1``): a lie in the third's
    record is refused at load, one in a node after them at call."""
    monkeypatch.setattr(memory, "ANALYSIS_NODES", 3)
    doc, tensors = _saved(Dyn())
    _edit(doc, _name(doc, "sum"), "shape", [["add", "s0", 1]])  # (never the rows: refuted)
    with pytest.raises(st.LoadError, match="node 'sum_1': the file records its value as"):
        _load(doc, tensors)
    doc, tensors = _saved(Dyn())
    _edit(doc, _name(doc, "zeros"), "shape", [["add", "s0", 2]])
    mod = _load(doc, tensors)
    with pytest.raises(st.RuntimeAssertionError, match=r"== s0 \+ 2 \(\w+ is dim 0 of what"):
        mod(torch.randn(5, 4))


def test_the_cpu_backstop_also_stops_the_analysis(monkeypatch):
    monkeypatch.setattr(memory, "ANALYSIS_SECONDS", -1.0)
    doc, tensors = _saved(Dyn())
    mod = _load(doc, tensors)
    x = torch.randn(7, 4)
    for got, want in zip(mod(x), Dyn()(x)):
        torch.testing.assert_close(got, want)
    _edit(doc, _name(doc, "sum"), "shape", [["mul", 1000, "s0"]])
    with pytest.raises(st.RuntimeAssertionError, match=r"== 1000\*s0 \(\w+ is dim 0 of"):
        _load(doc, tensors)(x)


class _Wide(torch.nn.Module):
    def forward(self, x):
        for _ in range(8):
            x = x * 2
        return x


def _wide(rank: int) -> tuple[dict, dict]:
    return parts(surgery.saved(st.export(_Wide(), (torch.randn(*[2] * rank),),
                      dynamic_shapes={"x": {d: st.Dim.DYNAMIC for d in range(rank)}})))


def test_a_node_of_many_symbolic_sizes_costs_more_of_the_analysis(monkeypatch):
    """Eight nodes of 16 symbolic sizes each: ``1 + (16 // 8)**2`` units apiece (the
    engine's products of their sizes grew as the square: rank 64 took 2 ms a node), so
    a budget of 12 units stops the analysis within the first four; the later records are
    checked at call, and the program runs.  Two symbolic sizes cost a node one unit."""
    monkeypatch.setattr(memory, "ANALYSIS_NODES", 12)
    seen = []
    graph = memory.StaticMemory.graph

    def spy(self, *a, **k):
        try:
            return graph(self, *a, **k)
        finally:
            seen.append((self.gave_up.name if self.gave_up is not None else None,
                         self.analysed))

    monkeypatch.setattr(memory.StaticMemory, "graph", spy)
    mod = _load(*_wide(16))
    assert seen[-1][0] in ("mul_1", "mul_2", "mul_3") and seen[-1][1] > 12
    x = torch.randn(*[1] * 15, 3)
    torch.testing.assert_close(mod(x), x * 256)
    _load(*_wide(2))
    assert seen[-1] == (None, 8)


def test_the_sizes_checked_at_call_past_the_analysis_are_bounded(monkeypatch):
    """Each is a few nodes of the loaded graph (0.35 ms of load): a file of many nodes of
    many symbolic sizes past the analysis took 22 ms a node to load; past ``LATE_SIZES``
    it is refused, naming the budgets to raise."""
    from safetrace.serialize import as_recorded

    monkeypatch.setattr(memory, "ANALYSIS_NODES", 0)
    monkeypatch.setattr(as_recorded, "LATE_SIZES", 20)
    with pytest.raises(st.LoadError, match=r"(?s)more than 20 sizes .*LATE_SIZES"):
        _load(*_wide(4))
