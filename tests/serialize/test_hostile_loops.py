"""Kernels that loop over a count for each element, the count a constant of the file
(session 37, load37): ``mvlgamma``'s ``p`` (its terms, allocated as one tensor) and the
special polynomials' ``n`` (an n-term recurrence).  A file of a few elements could make a
call run for hours or allocate hundreds of GiB; the loader counts ``numel * count`` as the
kernel's work (and mvlgamma's allocation) and refuses the file over the budget."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError, RuntimeAssertionError
from tests.serialize import surgery
from tests.serialize.hostile_static import saved_abs

X = {"node": "x"}


def _file(target: str, count: float, *shape: int) -> bytes:
    """The saved program of ``Abs`` at ``shape``, its call replaced by ``target(x, count)``."""
    node = {"name": "y", "op": "call_function", "target": f"torch.ops.aten.{target}",
            "args": [X, count]}
    return surgery.calls_replaced(saved_abs(*shape), node)


@pytest.mark.parametrize("target,count", [
    ("special_hermite_polynomial_h.n_scalar", 1 << 25),
    ("special_laguerre_polynomial_l.n_scalar", 1 << 25),
    ("special_legendre_polynomial_p.n_scalar", -(1 << 25)),
    ("special_chebyshev_polynomial_t.n_scalar", 1 << 25),
    ("mvlgamma.default", 1 << 24),
])
def test_a_huge_loop_count_is_refused_at_load(target, count):
    # (before: loaded; a call of 4096 elements then ran 2**37 iterations, hours, or
    # mvlgamma allocated 256 GiB)
    with pytest.raises(LoadError, match="max_work|max_alloc_numel"):
        st.load(io.BytesIO(_file(target, count, 64, 64)))


def test_mvlgamma_terms_count_as_memory():
    # under a generous work budget, the allocation of its terms is still refused
    blob = _file("mvlgamma.default", 1 << 24, 64, 64)
    with pytest.raises(LoadError, match="max_alloc_numel"):
        st.load(io.BytesIO(blob), budgets={"max_work": 1 << 50})


@pytest.mark.parametrize("target,count,fn", [
    ("special_hermite_polynomial_h.n_scalar", 5, torch.special.hermite_polynomial_h),
    ("special_legendre_polynomial_p.n_scalar", 3, torch.special.legendre_polynomial_p),
    ("mvlgamma.default", 3, torch.mvlgamma),
])
def test_small_counts_load_and_match_eager(target, count, fn):
    class Loop(torch.nn.Module):
        def forward(self, x):
            return fn(x, count)

    x = torch.rand(5, 3) + 2
    dim = st.Dim("n", min=0, max=1 << 12)
    ep = st.export(Loop(), (x,), dynamic_shapes={"x": {0: dim}})
    buf = io.BytesIO()
    st.save(ep, buf)
    mod = st.load(io.BytesIO(buf.getvalue())).module()
    for n in (0, 1, 7):
        xs = torch.rand(n, 3) + 2
        torch.testing.assert_close(mod(xs), fn(xs, count))
    with pytest.raises(st.InputMismatchError):
        mod(torch.rand(2, 4) + 2)
    # a file of the same program at a larger count still loads
    st.load(io.BytesIO(_file(target, count, 64, 64)))


def _tensor_count_file(count: float, *shape: int) -> bytes:
    """``hermite_polynomial_h(x, full_like(x, count))``: counts the file makes as a tensor."""
    nodes = [{"name": "n", "op": "call_function", "target": "torch.ops.aten.full_like.default",
              "args": [X, count]},
             {"name": "y", "op": "call_function",
              "target": "torch.ops.aten.special_hermite_polynomial_h.default",
              "args": [X, {"node": "n"}]}]
    return surgery.calls_replaced(saved_abs(*shape), *nodes)


def test_a_huge_tensor_of_counts_is_refused_at_call():
    """Counts given as a tensor are read when the call runs (work.check), before the
    kernel."""
    # (before: the call ran 2**25 iterations for each of 4096 elements: hours)
    mod = st.load(io.BytesIO(_tensor_count_file(1 << 25, 64, 64))).module()
    with pytest.raises(RuntimeAssertionError, match="max_work"):
        mod(torch.rand(64, 64))
    small = st.load(io.BytesIO(_tensor_count_file(4, 64, 64))).module()
    x = torch.rand(64, 64)
    torch.testing.assert_close(small(x), torch.special.hermite_polynomial_h(x, 4.0))


def test_counts_given_by_the_caller_run_and_match_eager():
    class Poly(torch.nn.Module):
        def forward(self, x, n):
            return torch.special.laguerre_polynomial_l(x, n)

    dim = st.Dim("k", min=0, max=1 << 12)
    ep = st.export(Poly(), (torch.rand(5), torch.full((5,), 3.0)),
                   dynamic_shapes={"x": {0: dim}, "n": {0: dim}})
    buf = io.BytesIO()
    st.save(ep, buf)
    mod = st.load(io.BytesIO(buf.getvalue())).module()
    for k in (0, 1, 6):
        x, n = torch.rand(k), torch.randint(0, 9, (k,)).float()
        torch.testing.assert_close(mod(x, n), torch.special.laguerre_polynomial_l(x, n))
    with pytest.raises(RuntimeAssertionError, match="max_work"):
        mod(torch.rand(4096), torch.full((4096,), float(1 << 25)))


def test_mvlgamma_terms_are_held_to_the_memory_budget_at_each_size():
    class Gamma(torch.nn.Module):
        def forward(self, x):
            return torch.mvlgamma(x, 3)

    dim = st.Dim("n", min=1, max=1 << 12)
    blob = surgery.saved(st.export(Gamma(), (torch.rand(5, 4) + 9,),
                                   dynamic_shapes={"x": {0: dim}}))

    def edit(doc):
        call = next(n for n in doc["nodes"] if n.get("target", "").endswith("mvlgamma.default"))
        call["args"][1] = 1 << 20

    mod = st.load(io.BytesIO(surgery.edited(blob, edit)),
                  budgets={"max_work": 1 << 50}).module()
    x = torch.rand(1, 4) + (1 << 20)
    torch.testing.assert_close(mod(x), torch.mvlgamma(x, 1 << 20))
    # (before: 64 rows asked torch for 1 GiB of terms; 4096 rows for 64 GiB)
    with pytest.raises(st.InputMismatchError, match="max_alloc_numel"):
        mod(torch.rand(4096, 4) + (1 << 20))
