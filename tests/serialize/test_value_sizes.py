"""Sizes a kernel reads from its operands' values (``bincount(x)``, ``nonzero(m)``, ...) in
a loaded program: checked before the kernel runs, over the load's budget refused with a
RuntimeAssertionError (a check inside the graph, as it runs) naming the node, the bytes and the budget (issue 23)."""

from __future__ import annotations

import copy
import io
import os

import pytest
import torch

import safetrace as st
from safetrace.serialize import requirements, value_sizes, work
from tests import child
from tests.serialize.hostile_static import pack, parts, without_values
from tests.serialize.hostile import refused_at_load_or_call
from tests.serialize import surgery


class ValueSized(torch.nn.Module):
    """One op whose result's size its kernel reads from values; ``x * 3`` and the ``5`` of
    the expanded view's size are what the hostile files inflate."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, big = self.kind, x[:1].expand(x.shape[0] * 5, 8)
        if k == "bincount":
            return torch.bincount(x * 3).sum()
        if k == "repeat_interleave":
            return torch.repeat_interleave(x * 3).sum()
        if k == "repeat_self":
            return torch.repeat_interleave(x, x * 3).sum()
        if k == "nonzero":
            return torch.nonzero(big).sum()
        if k == "masked_select":
            return torch.masked_select(big, (x[:1] > 0).expand(x.shape[0] * 5, 8)).sum()
        if k == "index":
            return big[(x[:1] > 0).expand(x.shape[0] * 5, 8)].sum()
        if k == "unique":
            return torch.unique(big).sum()
        raise ValueError(k)


KINDS = ("bincount", "repeat_interleave", "repeat_self", "nonzero", "masked_select", "index",
         "unique")


def _blob(kind: str) -> bytes:
    ep = st.export(ValueSized(kind), (torch.tensor([1, 2, 3]),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}})
    return surgery.saved(ep)


def _inflated(blob: bytes) -> bytes:
    """The file with ``x * 3`` made ``x * 10**9`` and the view ``n * 5`` rows ``n * 10**9``:
    the graph asks the kernels for 8-300 GB at x = [1]."""
    doc, tensors = parts(blob)
    for node in doc["nodes"]:
        target, args = node.get("target"), node.get("args") or []
        for i, a in enumerate(args):
            if (target, a) in (("torch.ops.aten.mul.Tensor", 3), ("operator.mul", 5)):
                args[i] = 10**9
    return without_values(pack(doc, tensors))


@pytest.mark.parametrize("kind", KINDS)
def test_value_sized_kernels_run_as_eager_within_the_budget(kind):
    mod = st.load(_blob(kind)).module()
    for x in (torch.tensor([1]), torch.tensor([2, 0, 5]), torch.arange(1, 30)):
        torch.testing.assert_close(mod(x), ValueSized(kind)(x))


@pytest.mark.parametrize("kind", KINDS)
def test_value_sized_kernels_are_refused_before_allocating_over_the_budget(kind):
    # a budget of 16 KiB: what the kernel would allocate at x = [40] (bincount: 121 counts,
    # fine) and at x = [2000] (6001 counts, 48 KB: refused before bincount runs)
    small = {"max_alloc_numel": 1024}
    mod = st.load(_blob(kind), budgets=small).module()
    ok, over = torch.tensor([40]), torch.tensor([2000] * 64)
    if kind in ("nonzero", "masked_select", "index", "unique"):
        # a view of 15 x 8 elements at x = [3], of 320 x 8 at 64 elements: 2560 selected
        # elements of 8 bytes (and up to 16 more each for unique, 8 for nonzero's 2 dims)
        ok = torch.tensor([3])
    with pytest.raises(st.RuntimeAssertionError, match=r"node '\w+' would allocate \d+ bytes.*"
                       r"over the budget of 16384 bytes") as info:
        mod(over)
    assert info.value.details["budget"] == "max_alloc_numel"
    assert "st.load(path, budgets={'max_alloc_numel': " in info.value.fix
    torch.testing.assert_close(mod(ok), ValueSized(kind)(ok))


def test_guards_are_written_once_through_save_and_load():
    loaded = st.load(_blob("bincount"))
    again = st.load(surgery.saved(loaded))
    count = [sum(1 for n in g.nodes if n.target is value_sizes.check)
             for g in (loaded.graph, again.graph)]
    assert count == [1, 1]
    x = torch.tensor([4, 1])
    torch.testing.assert_close(again.module()(x), ValueSized("bincount")(x))


def test_a_file_cannot_use_the_check_to_read_anything_but_graph_values():
    doc, tensors = parts(_blob("bincount"))
    nodes = doc["nodes"]
    at = next(i for i, n in enumerate(nodes) if n["name"] == "bincount")
    check = {"name": "check", "op": "call_function", "target": "safetrace.value_size_check",
             "args": ["bincount", "bincount", 10, "/etc/passwd"],
             "meta": {"val": None}}
    nodes.insert(at, check)
    with pytest.raises(st.LoadError, match="value_size_check on"):
        surgery.load(doc, tensors)
    check["args"] = ["open", "bincount", 10, {"node": "mul"}]
    with pytest.raises(st.LoadError, match="value_size_check needs a kind"):
        surgery.load(doc, tensors)


_CHILD = r"""
import resource, sys, torch, safetrace as st
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
with open("/proc/self/statm") as f:
    vm = int(f.read().split()[0]) * 4096
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), hard))
for path in sys.argv[1:]:
    mod = st.load(path).module()
    try:
        mod(torch.tensor([1]))
        print(path, "ran")
    except st.RuntimeAssertionError as err:
        print(path, "refused", str(err).split(" would allocate ")[1].split()[0])
"""


def test_inflated_files_are_refused_at_call_within_a_gigabyte(tmp_path):
    """The hostile files (a file's arithmetic in front of the kernel) under a 1 GiB cap of
    address space: each call refused, none allocates what it asks for."""
    paths = []
    for kind in KINDS:
        p = tmp_path / f"{kind}.st"
        p.write_bytes(_inflated(_blob(kind)))
        paths.append(str(p))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = child.run(["-c", _CHILD, *paths], text=True, timeout=300, cwd=root,
                    env={**os.environ, "PYTHONPATH": root})  # (tests/child.py: a fork)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    for p in paths:
        verdict, _, need = lines[p].partition(" ")
        assert verdict == "refused" and int(need) > 2**30, (p, lines[p])


def without_value_checks(graph: torch.fx.Graph) -> str:
    """The text of ``graph`` less the checks ``st.load`` put in it (value-sized kernels,
    kernels whose sizes are read from data, requirements on such sizes)."""
    g = copy.deepcopy(graph)
    requirements.strip(g)
    for n in list(g.nodes):
        if n.target is value_sizes.check or n.target is work.check:
            g.erase_node(n)
    return str(g)


def test_a_files_own_check_with_a_limit_of_its_choosing_is_replaced():
    """A file that puts a check of its own before the kernel (limit 10**18) gets the
    loader's, with the load's budget, in its place."""
    doc, tensors = parts(_inflated(_blob("bincount")))
    nodes = doc["nodes"]
    at = next(i for i, n in enumerate(nodes) if n["name"] == "bincount")
    mul = nodes[at]["args"][0]
    nodes.insert(at, {"name": "check", "op": "call_function",
                      "target": "safetrace.value_size_check",
                      "args": ["bincount", "bincount", 10**18, mul, None, None],
                      "meta": {"val": None}})
    loaded = surgery.load(doc, tensors, budgets={"max_alloc_numel": 1024})
    limits = [n.args[2] for n in loaded.graph.nodes if n.target is value_sizes.check]
    assert limits == [16384]
    with pytest.raises(st.RuntimeAssertionError, match="over the budget of 16384 bytes"):
        loaded.module()(torch.tensor([1]))


class FromItem(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.sum().item()
        torch._check(n >= 0)
        if self.kind == "arange":
            return torch.arange(n).sum() + x.shape[0]
        return torch.zeros(n).sum() + x.shape[0]


@pytest.mark.parametrize("kind", ["zeros", "arange"])
@pytest.mark.parametrize("lie", [False, True], ids=["as_saved", "meta_claims_an_input_size"])
def test_sizes_read_by_item_are_checked_whatever_the_metadata_claims(kind, lie):
    """``zeros(x.sum().item())`` and ``arange(...)``: checked before allocating; a file whose
    metadata calls the ``.item()`` an input size (``s0``) is refused at a call where the
    value read is not ``s0`` (no check of the graph's makes it so: ``recorded.py``), before
    the allocation."""
    ep = st.export(FromItem(kind), (torch.tensor([1, 2]),),
                   dynamic_shapes={"x": (st.Dim("k"),)})
    blob = surgery.saved(ep)
    if lie:
        doc, tensors = parts(blob)
        for node in doc["nodes"]:
            if node["name"] == "item":
                node["meta"]["val"] = {"symint": "s0"}
        assert refused_at_load_or_call(pack(doc, tensors), [
            (torch.tensor([3, 4]),), (torch.tensor([100000, 1]),)], call="'item'",
            budgets={"max_alloc_numel": 1024}) == "call"
        return
    mod = st.load(blob, budgets={"max_alloc_numel": 1024}).module()
    for x in (torch.tensor([0]), torch.tensor([3, 4]), torch.tensor([1000])):
        torch.testing.assert_close(mod(x), FromItem(kind)(x))
    with pytest.raises((st.InputMismatchError, st.RuntimeAssertionError),
                       match=r"node '(zeros|arange)'.*max_alloc_numel"):
        mod(torch.tensor([100000]))


def test_a_loaded_program_saves_without_the_loaders_checks():
    """What st.save writes of a loaded program is the program (each load adds its own
    checks with its own budget): the file names no callable an older loader lacks."""
    loaded = st.load(_blob("bincount"))
    doc, _ = parts(surgery.saved(loaded))
    assert not [n for n in doc["nodes"] if "value_size" in str(n.get("target"))]
    assert doc == parts(_blob("bincount"))[0]


def test_a_loaded_program_with_budget_checks_converts_with_them():
    """``to_torch()`` of a loaded program whose call-time budget checks guard a size read
    from data: the checks become graph arithmetic (``interop/load_checks.py``; the
    conversion was refused, naming the check); the loaded program, its conversion and the
    conversion of the program st.export gave run as eager."""

    class Nz(torch.nn.Module):
        def forward(self, y):
            return y.nonzero() * 2

    ep = st.export(Nz(), (torch.tensor([1.0, 0.0, 2.0]),),
                   dynamic_shapes=({0: torch.export.Dim("n")},))
    buf = io.BytesIO()
    st.save(ep, buf)
    buf.seek(0)
    loaded = st.load(buf)
    converted_loaded = loaded.to_torch().module()
    assert any(n.target is torch.ops.aten._assert_async.msg
               for n in converted_loaded.graph.nodes)
    converted = ep.to_torch().module()
    for v in ([0.0, 3.0, 1.0, 0.0], [], [5.0]):
        x = torch.tensor(v)
        assert torch.equal(loaded.module()(x), Nz()(x))
        assert torch.equal(converted(x), Nz()(x))
        assert torch.equal(converted_loaded(x), Nz()(x))


@pytest.mark.parametrize("data", [False, True])
def test_a_loaded_program_exports_again_with_its_dims(data):
    """``st.export(st.load(f).module(), ...)`` with a Dim: the loaded module's call-time
    memory check compared bytes of symbolic sizes with its budget while being traced, a
    branch on the size at every size (TooManySplits: n == 0, 1, 2, ...). It is not run
    while traced (it has no values then, as the graph's own budget checks); the program
    traced again runs as eager at other sizes, and the loaded one keeps its checks."""

    class Nz(torch.nn.Module):
        def forward(self, y):
            return y.nonzero() * 2 if data else y * 2

    dims = ({0: torch.export.Dim("n")},)
    ep = st.export(Nz(), (torch.tensor([1.0, 0.0, 2.0]),), dynamic_shapes=dims)
    buf = io.BytesIO()
    st.save(ep, buf)
    buf.seek(0)
    loaded = st.load(buf)
    again = st.export(loaded.module(), (torch.tensor([1.0, 0.0, 2.0]),), dynamic_shapes=dims)
    for v in ([0.0, 3.0, 1.0, 0.0], [], [5.0], [1.0, 2.0]):
        x = torch.tensor(v)
        assert torch.equal(again.module()(x), Nz()(x))
        assert torch.equal(loaded.module()(x), Nz()(x))
    with pytest.raises(st.InputMismatchError):
        again.module()(torch.ones(2, 2))
