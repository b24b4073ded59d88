"""A main-graph assertion (``torch._check`` on a size read from data) is a fact for the
nodes after it when st.load holds their recorded sizes against its own evaluation
(``serialize/asserted.py``): the program's own file loads.  Only for the nodes after it,
and never for what bounds a call's memory: those are checked before the graph runs."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.serialize.hostile import pack, parts, refused_at_load_or_call
from tests.serialize import surgery


class CheckedCache(torch.nn.Module):
    """Writes rows ``pos:pos + n`` of its cache, then halves the first ``n`` rows: the
    exporter knows ``n <= 8`` from the two checks, so ``cache[:n]`` is ``n`` rows."""

    def __init__(self, wide: int = 0) -> None:
        super().__init__()
        self.wide = wide
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, pos):
        p = pos.item()
        torch._check(p >= 0)
        torch._check(p + x.shape[0] <= 8)
        self.cache[p:p + x.shape[0]] = x
        self.cache[:x.shape[0]].mul_(0.5)
        out = self.cache + 0
        if self.wide:  # (a tensor of n * wide floats, allocated after the checks)
            return out, x.new_ones(x.shape[0], self.wide).sum()
        return out


@pytest.fixture(scope="module")
def saved() -> bytes:
    ep = st.export(CheckedCache(), (torch.randn(3, 4), torch.tensor(2)),
                   dynamic_shapes=({0: Dim("n", min=1)}, None))
    return _without_implied_bound(surgery.saved(ep))


def _without_implied_bound(blob: bytes) -> bytes:
    """The file with its contract's ``n <= 8`` taken out: the exporter puts that bound,
    which the two checks imply, in the contract (exporter/implied_bounds.py); these tests
    hold the loader to what the graph's own checks establish, with ``n`` unbounded."""
    doc, tensors = parts(blob)
    (s0,) = [s for s in doc["contract"]["symbols"] if s["name"] == "s0"]
    assert s0["hi"] == 8 and "every larger size fails" in s0["origin"]
    s0["hi"], s0["origin"] = None, " (as declared: Dim('n', min=1))"
    doc["range_constraints"] = [[n, lo, None if n == "s0" else hi]
                                for n, lo, hi in doc["range_constraints"]]
    return pack(doc, tensors)


def test_a_size_the_checks_bound_loads_and_computes_what_eager_does(saved):
    """The loader evaluated ``cache[:n]`` as ``min(n, 8)`` rows and refused the file's
    ``float32[s0, 4]``: ``u0 >= 0`` and ``u0 + s0 <= 8`` now hold for the nodes after
    them."""
    loaded = st.load(saved).module()
    eager = CheckedCache()
    for n, pos in [(1, 7), (3, 2), (8, 0), (2, 0)]:
        x = torch.randn(n, 4)
        torch.testing.assert_close(loaded(x, torch.tensor(pos)), eager(x, torch.tensor(pos)))
    with pytest.raises(st.RuntimeAssertionError, match=r"u0 \+ s0 <= 8|s0 \+ u0 <= 8"):
        loaded(torch.randn(3, 4), torch.tensor(6))
    with pytest.raises(st.InputMismatchError):
        loaded(torch.randn(0, 4), torch.tensor(0))


def _moved_after(blob: bytes, names: tuple, anchor: str) -> bytes:
    """The file with the nodes ``names`` moved (in their order) to just after ``anchor``."""
    doc, tensors = parts(blob)
    nodes = doc["nodes"]
    moved = [n for n in nodes if n["name"] in names]
    assert len(moved) == len(names)
    rest = [n for n in nodes if n["name"] not in names]
    at = next(i for i, n in enumerate(rest) if n["name"] == anchor) + 1
    doc["nodes"] = rest[:at] + moved + rest[at:]
    return pack(doc, tensors)


def _check_of(blob: bytes, fact: str) -> tuple:
    """The names of the comparison and the assertion of the check on ``fact``."""
    doc, _ = parts(blob)
    nodes = doc["nodes"]
    for i, n in enumerate(nodes):
        if n.get("target", "").endswith("assert_sym") and fact in n["args"][1]:
            return nodes[i - 1]["name"], n["name"]
    raise AssertionError(f"no check of {fact}")


def test_a_check_after_the_nodes_it_would_size_is_no_fact_for_them(saved):
    """The same file with ``u0 + s0 <= 8`` asserted only after ``cache[:n].mul_``: the
    sizes recorded before it rest on nothing that holds there (n = 9 runs them)."""
    compare, check = _check_of(saved, "<= 8")
    anchor = next(n["name"] for n in parts(saved)[0]["nodes"]
                  if n.get("target", "").endswith("mul_.Tensor"))
    blob = _moved_after(saved, (compare, check), anchor)
    assert refused_at_load_or_call(blob, [(torch.randn(9, 4), torch.tensor(0))], load=(
        r"node 'slice_\d'.*records its value as float32\[s0, 4\].*computes")) == "call"


def test_checks_that_can_never_all_hold_are_no_facts(saved):
    """A file whose second check is ``u0 + s0 <= 0`` (never, with ``s0 >= 1`` and
    ``u0 >= 0``): nothing after it runs, and its recorded sizes are not believed."""
    doc, tensors = parts(saved)
    compare, _ = _check_of(saved, "<= 8")
    node = next(n for n in doc["nodes"] if n["name"] == compare)
    assert node["args"][1] == 8
    node["args"][1] = 0
    with pytest.raises(st.LoadError, match=r"node 'slice_\d'.*records its value"):
        surgery.load(doc, tensors)


@pytest.mark.parametrize("after", [False, True], ids=["checks_first", "checks_after"])
def test_a_calls_memory_is_bounded_without_the_graphs_checks(after):
    """``ones(n, 1024)`` after checks that give ``n <= 8``: the bytes a call keeps alive are
    checked before the graph runs, at the call's sizes, as if no check held (a file may
    put its checks after the allocation, or claim what fails: the check raises only after
    what runs before it).  n = 100 is refused for its memory, not by the assertion."""
    ep = st.export(CheckedCache(wide=1024), (torch.randn(3, 4), torch.tensor(2)),
                   dynamic_shapes=({0: Dim("n", min=1)}, None))
    blob = _without_implied_bound(surgery.saved(ep))
    if after:  # (the allocation moved before both checks, just after n is read)
        doc = parts(blob)[0]["nodes"]
        ones = next(n["name"] for n in doc if n.get("target", "").endswith("new_ones.default"))
        blob = _moved_after(blob, (ones,), "sym_size_int")
    loaded = st.load(blob, budgets={"max_alloc_numel": 1 << 12}).module()
    out = loaded(torch.ones(2, 4), torch.tensor(1))
    assert out[1].item() == 2 * 1024
    with pytest.raises(st.InputMismatchError, match=r"max_alloc_numel"):
        loaded(torch.randn(100, 4), torch.tensor(0))


class BranchChecks(torch.nn.Module):
    """The same checks inside a torch.cond branch, then ``zeros(8, 4)[:n]`` there."""

    def forward(self, x, pos):
        def rows(x, pos):
            p = pos.item()
            torch._check(p >= 0)
            torch._check(p + x.shape[0] <= 8)
            return torch.zeros(8, 4)[:x.shape[0]] + x
        return torch.cond(x.shape[0] > 2, rows, lambda x, pos: x * 2, (x, pos))


def test_a_branchs_check_is_a_fact_only_for_the_branchs_nodes_after_it():
    """In a branch the checks are facts of the evaluation for its later nodes: the file
    loads; with the ``<= 8`` check moved after the slice the slice's recorded ``s0`` rows
    rest on nothing that holds where it runs (the loader compared a subgraph's nodes only
    once it was evaluated, under all of its checks: the slice passed, and only a value the
    branch returns showed the difference, at the cond)."""
    m = BranchChecks()
    ep = st.export(m, (torch.randn(3, 4), torch.tensor(2)),
                   dynamic_shapes=({0: Dim("n", min=1)}, None))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue()).module()
    for n, pos in [(3, 5), (8, 0), (1, 9)]:
        x = torch.randn(n, 4)
        torch.testing.assert_close(loaded(x, torch.tensor(pos)), m(x, torch.tensor(pos)))
    doc, tensors = parts(buf.getvalue())
    branch = next(g for g in doc["subgraphs"] if any(
        n.get("target", "").endswith("assert_sym") for n in g["nodes"]))
    nodes = branch["nodes"]
    check = [i for i, n in enumerate(nodes) if n.get("target", "").endswith("assert_sym")][-1]
    moved = nodes[check - 1:check + 1]  # (the comparison and its assertion)
    rest = nodes[:check - 1] + nodes[check + 1:]
    at = next(i for i, n in enumerate(rest) if n.get("target", "").endswith("slice.Tensor"))
    branch["nodes"] = rest[:at + 1] + moved + rest[at + 1:]
    assert refused_at_load_or_call(pack(doc, tensors), [(torch.randn(9, 4), torch.tensor(0))],
                                   load=r"node 'slice_\d'.*records its value as "
                                        r"float32\[s0, 4\]") == "call"
