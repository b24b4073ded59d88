"""Input-size bounds implied by the program's own run-time checks on sizes read from data
(exporter/implied_bounds.py): a call that every such check refuses is refused by the
input check, before anything runs (a static cache's prompt longer than the cache)."""

import math

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close


class StaticCache(torch.nn.Module):
    """transformers' StaticLayer.update, with the length read as a size first (OPT)."""

    def __init__(self, slots=8):
        super().__init__()
        self.register_buffer("cache", torch.zeros(slots, 4))
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x):
        start = self.length.item()
        idx = torch.arange(x.shape[0]) + self.length
        self.length.add_(x.shape[0])
        self.cache.index_copy_(0, idx, x)
        return self.cache[: start + x.shape[0]].sum(0) * 2


def _range(ep, dim="n"):
    return next((r.lower, r.upper) for k, r in ep.range_constraints.items()
                if ep.dim_names.get(str(k)) == dim)


def test_static_cache_length_bounds_the_prompt_before_running():
    ep = st.export(StaticCache(), (torch.ones(3, 4),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1)}})
    assert _range(ep) == (1, 8)  # declared min=1, no max: 8 from the cache's size
    assert "every larger size fails the program's run-time check" in ep.describe_contract()
    mod, eager = ep.module(), StaticCache()
    for n in (1, 3, 4):  # the same calls on the same state: 8 slots filled
        x = torch.randn(n, 4)
        assert_close(mod(x), eager(x.clone()))
    with pytest.raises(IndexError):  # eager: no call of 9 rows runs, whatever the state
        StaticCache()(torch.ones(9, 4))
    before = {k: v.clone() for k, v in mod.state_dict().items()}  # (8 slots filled)
    with pytest.raises(st.InputMismatchError, match=r"x.shape\[0\] = 9, but it must be <= 8 "
                       r"\(every larger size fails the program's run-time check "
                       r"`x.shape\[0\] \+ u0 <= 8` \(from `self.cache.index_copy_"):
        mod(torch.ones(9, 4))
    for k, v in mod.state_dict().items():  # refused before the length was written
        assert torch.equal(v, before[k]), k
    with pytest.raises(st.InputMismatchError):  # (the declared min stays)
        mod(torch.ones(0, 4))
    # a call within the bound that the state makes fail is refused by the write's own
    # index check, asserted before the first state write (exporter/index_checks.py):
    # eager raises IndexError after writing the length, the program before
    with pytest.raises(IndexError):
        eager(torch.ones(1, 4))
    before = {k: v.clone() for k, v in mod.state_dict().items()}
    with pytest.raises(RuntimeError, match="refused the call before writing any state"):
        mod(torch.ones(1, 4))
    for k, v in mod.state_dict().items():
        assert torch.equal(v, before[k]), k

def test_bound_needs_every_other_size_bounded():
    """``x.shape[0] + u <= 8`` alone refuses nothing by itself: a negative ``u`` admits
    any size, so nothing is narrowed; with ``u >= 0`` asserted too, 8 is the bound."""

    class M(torch.nn.Module):
        def __init__(self, nonnegative):
            super().__init__()
            self.nonnegative = nonnegative

        def forward(self, x, start):
            u = start.item()
            if self.nonnegative:
                torch._check(u >= 0)
            torch._check(x.shape[0] + u <= 8)
            return x * 2 + u

    spec = {"x": {0: st.Dim("n", min=1)}, "start": None}
    open_ = st.export(M(False), (torch.ones(3), torch.tensor(1)), dynamic_shapes=spec)
    assert _range(open_) == (1, math.inf)
    x, start = torch.ones(12), torch.tensor(-5)  # eager runs it
    assert_close(open_.module()(x, start), M(False)(x, start))
    bounded = st.export(M(True), (torch.ones(3), torch.tensor(1)), dynamic_shapes=spec)
    assert _range(bounded) == (1, 8)
    with pytest.raises(RuntimeError):
        M(True)(torch.ones(9), torch.tensor(0))
    with pytest.raises(st.InputMismatchError, match="must be <= 8"):
        bounded.module()(torch.ones(9), torch.tensor(0))
    for n in (1, 8):
        assert_close(bounded.module()(torch.ones(n), torch.tensor(0)),
                     M(True)(torch.ones(n), torch.tensor(0)))


def test_lower_bound_and_equality():
    class M(torch.nn.Module):
        def forward(self, x, start):
            u = start.item()
            torch._check(u <= 2)
            torch._check(x.shape[0] + u >= 5)  # x.shape[0] >= 3 whatever u is
            return x + u

    ep = st.export(M(), (torch.ones(4), torch.tensor(2)),
                   dynamic_shapes={"x": {0: st.Dim("n", max=16)}, "start": None})
    assert _range(ep) == (3, 16)
    assert "every smaller size fails" in ep.describe_contract()
    with pytest.raises(st.InputMismatchError, match="must be >= 3"):
        ep.module()(torch.ones(2), torch.tensor(2))
    assert_close(ep.module()(torch.ones(3), torch.tensor(2)), M()(torch.ones(3),
                                                                   torch.tensor(2)))


def test_deferred_program_keeps_its_checks_at_run_time():
    ep = st.export(StaticCache(), (torch.ones(3, 4),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1)}},
                   prefer_deferred_runtime_asserts_over_guards=True)
    assert _range(ep) == (1, math.inf)
    # (refused at run time: by the write's own index check, before any state write)
    with pytest.raises(RuntimeError, match="refused the call before writing any state"):
        ep.module()(torch.ones(9, 4))


class IndexedCache(torch.nn.Module):
    """transformers' StaticLayer.update as llama runs it (no size read from data): the length
    is set from the positions given, then ``arange(n) + length`` indexes the cache's slots.
    `index`: how the write indexes ("arange": distinct; "halved": ``arange(n) // 2``, which
    repeats values; "given": the positions themselves, data; "put": ``cache[idx] = x``,
    whose indices may be negative)."""

    def __init__(self, index="arange", slots=8):
        super().__init__()
        self.index = index
        self.register_buffer("cache", torch.zeros(slots, 4))
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x, pos):
        self.length.copy_(pos[0])
        idx = {"arange": lambda: torch.arange(x.shape[0]) + self.length,
               "put": lambda: torch.arange(x.shape[0]) + self.length,
               "halved": lambda: torch.arange(x.shape[0]) // 2 + self.length,
               "given": lambda: pos}[self.index]()
        self.length.add_(x.shape[0])
        if self.index == "put":
            self.cache[idx] = x
        else:
            self.cache.index_copy_(0, idx, x)
        return self.cache.sum(0) * 2


def _export_indexed(index):
    n = st.Dim("n", min=1)
    return st.export(IndexedCache(index), (torch.ones(3, 4), torch.arange(3)),
                     dynamic_shapes={"x": {0: n}, "pos": {0: n}})


def test_distinct_indices_into_a_static_dim_bound_the_size_before_running():
    """``index_copy_`` of ``arange(n) + length`` into 8 slots raises for every n > 8 (n
    distinct values cannot all lie in [0, 8)), whatever the length: the contract says
    n <= 8 and refuses a larger call before the length is written (eager writes it, then
    raises)."""
    ep = _export_indexed("arange")
    assert _range(ep) == (1, 8)
    assert "every larger size indexes out of bounds" in ep.describe_contract()
    mod, eager = ep.module(), IndexedCache()
    for n, start in ((3, 0), (1, 3), (5, 3), (8, 0), (1, 7)):  # the same calls, same state
        x = torch.randn(n, 4)
        assert_close(mod(x, torch.arange(n) + start), eager(x.clone(), torch.arange(n) + start))
    with pytest.raises(IndexError):  # eager: 9 rows fail whatever the positions say
        IndexedCache()(torch.ones(9, 4), torch.arange(9) - 4)
    before = {k: v.clone() for k, v in mod.state_dict().items()}
    with pytest.raises(st.InputMismatchError, match=r"x.shape\[0\] = 9, but it must be <= 8 "
                       r"\(every larger size indexes out of bounds: `x.shape\[0\] <= 8` "
                       r"\(from `self.cache.index_copy_\(0, idx, x\)`.*`index_copy_` takes "
                       r"indices in \[0, 8\) of dim 0"):
        mod(torch.ones(9, 4), torch.arange(9))
    for k, v in mod.state_dict().items():  # refused before the length was written
        assert torch.equal(v, before[k]), k
    with pytest.raises(st.InputMismatchError):  # (the declared min stays)
        mod(torch.ones(0, 4), torch.arange(0))
    # in the bound, out of the slots: eager's IndexError, refused before any state write
    with pytest.raises(RuntimeError, match=r"`self.cache.index_copy_\(0, idx, x\)` takes the "
                                           r"indices .* refused the call before writing any "
                                           r"state"):
        mod(torch.ones(2, 4), torch.tensor([7, 8]))
    for k, v in mod.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_index_put_takes_negative_indices_so_the_bound_is_twice_the_dim():
    """``cache[idx] = x`` accepts indices in [-8, 8): 16 distinct ones fit, 17 do not."""
    ep = _export_indexed("put")
    assert _range(ep) == (1, 16)
    mod, eager = ep.module(), IndexedCache("put")
    x = torch.randn(16, 4)  # at -8 .. 7: every slot once
    assert_close(mod(x, torch.arange(16) - 8), eager(x.clone(), torch.arange(16) - 8))
    with pytest.raises(IndexError):
        IndexedCache("put")(torch.ones(17, 4), torch.arange(17) - 8)
    with pytest.raises(st.InputMismatchError, match="must be <= 16"):
        mod(torch.ones(17, 4), torch.arange(17) - 8)


@pytest.mark.parametrize("index", ["halved", "given"])
def test_indices_that_may_repeat_bound_nothing(index):
    """``arange(n) // 2`` repeats values and the positions given are data: more rows than
    slots can run (eager writes a slot twice), so n keeps its declared range."""
    ep = _export_indexed(index)
    assert _range(ep) == (1, math.inf)
    x = torch.randn(12, 4)
    pos = torch.arange(12) % 4 if index == "given" else torch.zeros(12, dtype=torch.long)
    assert_close(ep.module()(x, pos), IndexedCache(index)(x.clone(), pos))


class _WrittenIndex(torch.nn.Module):
    """``arange(n) + length``, then written into (in place, or through a view): its values
    repeat, so more rows than slots can run, as in eager."""

    def __init__(self, how):
        super().__init__()
        self.how = how
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x, pos):
        idx = torch.arange(x.shape[0]) + pos[0]
        if self.how == "in_place":
            idx.remainder_(8)
        else:
            idx[1:] = idx[0]
        self.cache.index_copy_(0, idx, x)
        return self.cache * 1


@pytest.mark.parametrize("how", ["in_place", "through_a_view"])
def test_an_index_written_after_it_is_made_bounds_nothing(how):
    n = st.Dim("n", min=1)
    ep = st.export(_WrittenIndex(how), (torch.ones(3, 4), torch.arange(3)),
                   dynamic_shapes={"x": {0: n}, "pos": {0: n}})
    assert _range(ep) == (1, math.inf)
    x, pos = torch.randn(12, 4), torch.arange(12)
    assert_close(ep.module()(x, pos), _WrittenIndex(how)(x.clone(), pos))
