"""The work of one call of a loaded program is bounded (issue 23): a kernel that scans a
huge broadcast view allocates nothing and still runs for minutes.  Over ``max_work`` at
every declared size: refused at load; at some sizes: refused at call before running; a
size read from data feeding a kernel: checked before that kernel (work and memory)."""

from __future__ import annotations

import io
import math
import time

import pytest
import torch

import safetrace as st
from safetrace.serialize import work
from tests.serialize.hostile_static import parts
from tests.serialize import surgery


def _loaded(model, example, dims, budgets=None):
    ep = st.export(model, (example,), dynamic_shapes={"x": dims})
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue(), budgets=budgets), buf.getvalue()


class Scan(torch.nn.Module):
    """A reduction over an [n, 2**20] broadcast of one zero: 2**20 elements per row."""

    def forward(self, x):
        return x + torch.zeros(1).expand(x.shape[0], 1 << 20).sum()


class MatmulOfViews(torch.nn.Module):
    """[n, 4096] @ [4096, 4096], both views of one element: n * 2**24 multiply-adds."""

    def forward(self, x):
        a = torch.ones(1, 1).expand(x.shape[0], 4096)
        b = torch.ones(1, 1).expand(4096, 4096)
        return x + (a @ b).sum(1)


class Window(torch.nn.Module):
    """A max pool whose 512 x 512 window slides over an [n, 1024] view: 2**18 reads per
    output."""

    def forward(self, x):
        img = torch.zeros(1, 1, 1, 1).expand(1, 1, x.shape[0], 1024)
        return torch.nn.functional.max_pool2d(img, 512, 1).sum() + x


def _cpu(fn):
    t = time.process_time()
    fn()
    return time.process_time() - t


@pytest.mark.parametrize("model", [Scan(), MatmulOfViews(), Window()],
                         ids=["scan", "matmul", "window"])
def test_heavy_kernels_run_as_eager_when_small_and_are_refused_at_call_when_large(model):
    lo = 512 if isinstance(model, Window) else 0
    ep, _ = _loaded(model, torch.randn(lo + 3), {0: st.Dim("n", min=lo)})
    mod = ep.module()
    for n in (lo, lo + 1, lo + 7):
        x = torch.randn(n)
        torch.testing.assert_close(mod(x), model(x))
    n = 1 << 16 if isinstance(model, Scan) else 1 << 13  # (memory within its budget)
    big = torch.randn(n)
    with pytest.raises(st.InputMismatchError, match=r"over the work budget .*\(max_work\)") \
            as info:
        assert _cpu(lambda: mod(big)) < 1  # (refused before running, not after)
    assert info.value.details["budget"] == "max_work"
    assert f"s0={n}" in str(info.value)
    need = int(info.value.fix.rsplit(": ", 1)[1].rstrip("})"))
    assert need > 1 << 34
    # the fix's budget admits the call (checked, not run: it would take minutes)
    ok, _ = _loaded(model, torch.randn(lo + 3), {0: st.Dim("n", min=lo)},
                    budgets={"max_work": need})
    ok._check_fn([big])


def test_over_the_budget_at_every_declared_size_is_refused_at_load():
    with pytest.raises(st.LoadError, match=r"node 'sum_1'.*over the budget \(max_work\)") \
            as info:
        _loaded(Scan(), torch.randn(1 << 15), {0: st.Dim("n", min=1 << 15)})
    need = int(info.value.fix.rsplit(": ", 1)[1].rstrip("})"))
    assert need >= (1 << 35)
    ep, _ = _loaded(Scan(), torch.randn(1 << 15), {0: st.Dim("n", min=1 << 15)},
                    budgets={"max_work": need})
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3))  # (outside the declared space)


def test_the_budget_is_configurable_and_scales_with_the_files_tensors():
    small, _ = _loaded(Scan(), torch.randn(3), {0: st.Dim("n")}, budgets={"max_work": 1000})
    with pytest.raises(st.InputMismatchError, match="work budget of 1000 "):
        small.module()(torch.randn(3))
    with pytest.raises(TypeError):
        _loaded(Scan(), torch.randn(3), {0: st.Dim("n")}, budgets={"max_work": -1})
    # a file of 1024 elements may touch 4096 x 1024 per call whatever the budget says
    weighted, _ = _loaded(ScanW(), torch.randn(3), {0: st.Dim("n")}, budgets={"max_work": 1000})
    x = torch.randn(1)
    torch.testing.assert_close(weighted.module()(x), ScanW()(x))
    with pytest.raises(st.InputMismatchError, match=f"work budget of {4096 * 1024} "):
        weighted.module()(torch.randn(8))


class ScanW(Scan):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.zeros(1024))

    def forward(self, x):
        return super().forward(x) + self.w.sum()


class FromCount(torch.nn.Module):
    """Sizes read from data (a nonzero count) feeding kernels that are not factories."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x):
        u = torch.nonzero(x).shape[0]
        k = self.kind
        if k == "expand":  # allocates u * 2**22 floats
            return torch.zeros(1).expand(u, 1 << 22).contiguous().sum(1)
        if k == "broadcast":  # [u, 1] + [1, 2**22]
            return (x[x != 0].unsqueeze(1) + torch.zeros(1, 1 << 22)).sum(1)
        if k == "repeat":
            return x[x != 0].repeat(1 << 22).reshape(-1, u).sum(0)
        if k == "scan":  # allocates nothing, reads u * 2**25
            return torch.zeros(1).expand(u, 1 << 25).sum(1)
        raise ValueError(k)


@pytest.mark.parametrize("kind", ["expand", "broadcast", "repeat", "scan"])
def test_sizes_read_from_data_are_checked_before_the_kernel(kind):
    model = FromCount(kind)
    # (n >= 1: at n = 0 the repeat's reshape(-1, 0) fails in eager, and the export says so)
    ep, blob = _loaded(model, torch.tensor([1.0, 0.0, 2.0]), {0: st.Dim("n", min=1)})
    mod = ep.module()
    for x in (torch.tensor([3.0]), torch.tensor([0.0, 2.0, -1.0, 0.0, 5.0])):
        torch.testing.assert_close(mod(x), model(x))
    big = torch.ones(1000)  # 1000 * 2**22 floats: 16 GB; 1000 * 2**25 reads
    budget = "max_work" if kind == "scan" else "max_alloc_numel"
    with pytest.raises(st.RuntimeAssertionError, match=rf"{budget}\)") as info:
        assert _cpu(lambda: mod(big)) < 1
    assert info.value.details["budget"] == budget
    # the checks are the loader's: never written to a file
    doc, _ = parts(blob)
    assert "work.check" not in str(doc) and any(n.target is work.check
                                                for n in ep.graph.nodes)


def test_programs_sized_by_their_inputs_get_no_run_time_check():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ep = st.export(model, (torch.randn(4, 8),), dynamic_shapes=({0: st.Dim("b")},))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue())
    assert not any(n.target is work.check for n in loaded.graph.nodes)
    for b in (0, 1, 7):
        x = torch.randn(b, 8)
        torch.testing.assert_close(loaded.module()(x), model(x))


def test_work_counts_contractions_views_and_queries():
    from safetrace.meta import TensorMeta

    def t(*shape):
        return TensorMeta(shape, torch.float32, torch.device("cpu"))

    aten = torch.ops.aten
    assert work.touched(aten.mm.default, (t(8, 16), t(16, 4)), {}, t(8, 4)) == \
        8 * 16 + 16 * 4 + 8 * 4 + 8 * 4 * 16
    assert work.touched(aten.expand.default, (t(1, 1), [1 << 20, 1 << 20]), {},
                        t(1 << 20, 1 << 20)) == 0
    assert work.touched(aten.sum.default, (t(1 << 20, 1 << 20),), {}, t()) == (1 << 40) + 1
    assert work.touched(aten.linalg_cholesky.default, (t(2, 64, 64),), {}, t(2, 64, 64)) == \
        2 * 2 * 64 * 64 + 2 * 64 ** 3
    assert work.touched(aten.sym_size.int, (t(5, 6), 0), {}, 5) == 0


class Fixed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return x + self.w.select(0, 1)


@pytest.mark.parametrize("op,index", [("select.int", (1 << 63) - 1), ("narrow", -(1 << 63))])
def test_a_node_that_fails_at_every_call_is_refused_at_load(op, index):
    """A kernel of the program's own state whose operands eager refuses (an index at the
    int64 edge) would raise torch's IndexError at every call: refused at load instead."""
    ep = st.export(Fixed(), (torch.randn(8),), dynamic_shapes=None)
    blob = surgery.saved(ep)
    doc, tensors = parts(blob)
    node = next(n for n in doc["nodes"] if n.get("target", "").endswith("select.int"))
    if op == "narrow":
        node["target"] = "torch.ops.aten.narrow.default"
        node["args"] = [node["args"][0], 0, index, 1]
    else:
        node["args"][2] = index
    from tests.serialize.hostile_static import pack
    st.load(blob).module()(torch.randn(8))  # (the control)
    with pytest.raises(st.LoadError, match=r"node 'select'.*fails at every call"):
        surgery.load(doc, tensors)


class HeavyLoop(torch.nn.Module):
    """A while_loop of three iterations, each reading a 4096 x 4096 view (2**24)."""

    def forward(self, x):
        def cond(i, y):
            return i < 3

        def body(i, y):
            return i + 1, y * 2 + torch.zeros(1).expand(4096, 4096).sum()

        return torch._higher_order_ops.while_loop(cond, body, (torch.tensor(0), x))[1]


def test_a_loops_work_is_its_iterations_times_its_body():
    ep = st.export(HeavyLoop(), (torch.randn(4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    buf = io.BytesIO()
    st.save(ep, buf)
    budget = {"max_work": 1 << 27}  # 8 iterations
    mod = st.load(buf.getvalue(), budgets=budget).module()
    for n in (0, 1, 7):
        x = torch.randn(n)
        torch.testing.assert_close(mod(x), HeavyLoop()(x))
    doc, tensors = parts(buf.getvalue())  # the body made to stop counting: never ends
    body = next(g for g in doc["subgraphs"] if "body" in g["path"])
    add = next(n for n in body["nodes"] if n.get("target") == "torch.ops.aten.add.Tensor"
               and n["args"][1] == 1)
    add["args"][1] = 0
    from tests.serialize.hostile_static import pack
    stuck = surgery.load(doc, tensors, budgets=budget).module()
    t = time.process_time()
    # (2**24 elements of the sum, a few more, and the iteration's own cost: 2**14)
    with pytest.raises(st.RuntimeAssertionError, match=r"while_loop.*16793\d\d\d elements an "
                                                       r"iteration.*\(max_work\)"):
        stuck(torch.randn(2))
    assert time.process_time() - t < 2  # (8 iterations, not 10,000)


def test_a_kernel_without_a_shape_rule_is_checked_through_its_meta_kernel():
    """An op without a safetrace rule is sized by its meta kernel, as the tracer sizes it
    (``kron`` here, made rule-less for the test); where the meta kernel cannot tell either
    (``combinations``, which reads data inside), the call is refused before the kernel
    (its first step allocates n**4 here: 4 TB at n = 1000)."""
    from safetrace.rules import registry

    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output((g.call_function(torch.ops.aten.kron.default, (x, x)),
              g.call_function(torch.ops.aten.combinations.default, (x, 4))))
    work.guard(g, {}, 1 << 30, 1 << 34)
    mod = torch.fx.GraphModule(torch.nn.Module(), g)
    rule = registry.RULES.pop(torch.ops.aten.kron.default)
    try:
        work._SEEN.clear()
        with pytest.raises(st.RuntimeAssertionError,
                           match=r"node 'kron_default'.*max_alloc_numel"):
            mod(torch.ones(1 << 16, 1))  # [2**32, 1]: 16 GiB
    finally:
        registry.RULES[torch.ops.aten.kron.default] = rule
    assert torch.ops.aten.combinations.default not in registry.RULES
    with pytest.raises(st.RuntimeAssertionError,
                       match=r"'combinations_default'.*refused before"):
        assert _cpu(lambda: mod(torch.ones(1000))) < 1


class EmptyMap(torch.nn.Module):
    """A map over the rows of a [5, 0] tensor: no element, no byte, 5 slices."""

    def forward(self, x):
        from torch._higher_order_ops.map import map as map_
        return x + map_(lambda r: r + 1, x.new_zeros(5, 0)).sum()


def test_a_map_over_empty_slices_costs_its_slices():
    """The map's xs inflated to [2**26, 0]: no element and no byte, so neither the memory
    nor the elements touched bounded it, and torch's map would run 2**26 slices (hours,
    and a Python object each): every slice costs ``SLICE_WORK`` elements of max_work."""
    from safetrace.serialize.memory_control import SLICE_WORK
    from tests.serialize.hostile_static import pack, without_values

    ep, blob = _loaded(EmptyMap(), torch.randn(3), {0: st.Dim("n", max=64)})
    x = torch.randn(4)
    torch.testing.assert_close(ep.module()(x), EmptyMap()(x))
    doc, tensors = parts(blob)
    zeros = next(n for n in doc["nodes"] if "new_zeros" in str(n.get("target")))
    zeros["args"][1] = {"list": [1 << 26, 0]}
    with pytest.raises(st.LoadError, match=r"over the budget \(max_work\)") as info:
        st.load(without_values(pack(doc, tensors)))
    assert info.value.details["budget"] == "max_work"
    assert (1 << 26) * SLICE_WORK > st.serialize.Budgets().max_work


class NotRun(torch.nn.Module):
    """A scan of y's [s1, 2**20] broadcast, and a branch whose scan has a size that is
    negative, or divides by zero, at the sizes where the branch does not run."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x, y):
        big = torch.zeros(1).expand(y.shape[0], 1 << 20).sum()
        minus = self.kind == "minus"

        def run(x, y):  # ((s0 - 5) * 2**24 elements: -5 * 2**24 at s0 == 0)
            n = x.shape[0] - 5 if minus else y.shape[0] // x.shape[0]
            return x.sum() + torch.zeros(1).expand(n, 1 << 24).sum()

        return torch.cond(x.shape[0] >= (5 if minus else 1), run,
                          lambda x, y: x.sum(), (x, y)) + big


@pytest.mark.parametrize("kind", ["minus", "divide"])
def test_a_node_that_does_not_run_cancels_no_work(kind):
    """The work of a call is one sum of every node's: the term of a node that does not run
    at these sizes (``(s0 - 5) * 2**24`` at ``s0 == 0``, ``s1 // s0 * 2**24``) counts 0, not
    -5 * 2**24 that would cancel the scan of y, nor an error that skipped the check."""
    model = NotRun(kind)
    ep = st.export(model, (torch.randn(6), torch.randn(3)),
                   dynamic_shapes={"x": {0: st.Dim("a")}, "y": {0: st.Dim("b")}})
    buf = io.BytesIO()
    st.save(ep, buf)
    mod = st.load(buf.getvalue(), budgets={"max_work": 1 << 22}).module()
    for a, b in ((0, 0), (4, 3), (5, 2), (0, 3)):
        x, y = torch.randn(a), torch.randn(b)
        torch.testing.assert_close(mod(x, y), model(x, y))
    with pytest.raises(st.InputMismatchError, match=r"over the work budget .*\(max_work\)") \
            as info:
        mod(torch.randn(0), torch.randn(64))  # (64 * 2**20 elements)
    assert info.value.details["budget"] == "max_work"
    assert "node 'sum_1'" in str(info.value) and "s0=0, s1=64" in str(info.value)
    with pytest.raises(st.InputMismatchError, match=r"sum.default.*\(max_work\)"):
        mod(*((torch.randn(6), torch.randn(0)) if kind == "minus" else
              (torch.randn(1), torch.randn(1))))  # (the branch's 2**24, where it runs)


class _Node:  # (what a refusal names of a graph node)
    name, target = "sum_1", "aten.sum.default"


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_a_call_check_refuses_a_need_that_is_no_finite_number(value):
    """``CallCheck`` (built by the loader; a file's size expressions are its author's, and
    a float in one may overflow): work or bytes that evaluate to inf or nan at a call's
    sizes are refused before the call, not taken for "no need" (it returned without
    refusing them)."""
    from types import SimpleNamespace

    from safetrace.serialize.peak import CallCheck
    from safetrace.symbolic.expr import fconst, mul, sym
    contract = SimpleNamespace(inputs=[])
    x = torch.randn(10)
    need = mul(fconst(1e308 if value == math.inf else value), sym("d0"))
    work = CallCheck([], contract, 1 << 30, {"d0": (0, 0)}, [(1, need, _Node(), True)], 1e9)
    with pytest.raises(st.InputMismatchError, match=r"max_work.*evaluates to (inf|nan)"):
        work([x])
    loose = CallCheck([], contract, 1 << 30, {"d0": (0, 0)}, [(1, need, _Node(), False)],
                      1e9)
    with pytest.raises(st.InputMismatchError, match=r"max_work"):
        loose([x])
    alive = CallCheck([(need, _Node())], contract, 1 << 30, {"d0": (0, 0)})
    with pytest.raises(st.InputMismatchError, match=r"bytes .*evaluates to (inf|nan)"):
        alive([x])
    small = mul(fconst(1.5), sym("d0"))
    CallCheck([(small, _Node())], contract, 1 << 30, {"d0": (0, 0)},
              [(1, small, _Node(), True)], 1e9)([x])  # (15 elements, 15 bytes: runs)
