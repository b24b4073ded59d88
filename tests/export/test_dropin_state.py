"""torch.export's state semantics: a program's state is the program's, shared by every
``ep.module()`` of it and shown by ``ep.state_dict``.

What torch 2.13 does (measured by each test on the same model): ``ep.state_dict`` holds
the model's own tensors, ``ep.module()`` registers those same tensors, and a call writes
its buffer updates into them (in place, ``copy_`` for a reassigned buffer).  So a module
obtained anew from the program sees the writes of the previous one (KV caches and
transformers' generation helpers rely on it), programs exported from one model share its
buffers, and running a torch program writes the user's model.

safetrace matches every observable value above except the last: the state a program writes
is a copy made once per source tensor and shared by every program whose state is that
tensor, so the exported model (and memory handed to ``st.load``) is never written.
"""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

import safetrace as st


class Counter(nn.Module):
    """One buffer written in place, one reassigned (a functional update), one not written."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("total", torch.zeros(3))
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x):
        self.count.add_(1)
        self.total = self.total + x.sum(0)
        return x * self.scale + self.count + self.total


def _steps(ep, xs):
    """Each input through a fresh ``ep.module()``, then all again through one module."""
    outs = [ep.module()(x) for x in xs]
    m = ep.module()
    outs += [m(x) for x in xs]
    return outs, m


def test_fresh_modules_see_the_previous_modules_writes_as_in_torch():
    xs = [torch.randn(n, 3) for n in (4, 0, 1, 5)]
    ref_model, model = Counter(), Counter()
    ref = torch.export.export(ref_model, (xs[0],), dynamic_shapes={"x": {0: torch.export.Dim(
        "b", min=0, max=16)}})
    ep = st.export(model, (xs[0],), dynamic_shapes={"x": {0: st.Dim("b", min=0, max=16)}})
    want, ref_m = _steps(ref, xs)
    got, our_m = _steps(ep, xs)
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w)
    assert not torch.equal(got[0], got[4])  # the same input, later state
    for name in ("count", "total"):
        torch.testing.assert_close(ep.state_dict[name], ref.state_dict[name])
        # the module's buffer is the program's (torch: the same object too)
        assert getattr(our_m, name) is ep.state_dict[name]
        assert getattr(ref_m, name) is ref.state_dict[name]
    assert ep.state_dict["count"].item() == 8.0
    # torch wrote the model it exported; safetrace never does
    assert ref_model.count.item() == 8.0
    assert model.count.item() == 0.0 and torch.equal(model.total, torch.zeros(3))
    # out of the declared space: refused before running, and no state is written
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 3))
    assert ep.state_dict["count"].item() == 8.0


class Core(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 2))
        self.proj = nn.Linear(2, 2)

    def write(self, pos, x):
        self.cache.index_copy_(0, pos, self.proj(x))
        return self.cache.sum(0)

    def read(self, x):
        return x + self.cache.sum(0)


class Prefill(nn.Module):
    def __init__(self, core):
        super().__init__()
        self.core = core

    def forward(self, pos, x):
        return self.core.write(pos, x)


class Decode(nn.Module):
    def __init__(self, core):
        super().__init__()
        self.core = core

    def forward(self, x):
        return self.core.read(x)


def _two_programs(export, dim):
    core = Core()
    pos, x = torch.tensor([0, 1, 2]), torch.randn(3, 2)
    spec = {"pos": {0: dim("n", min=1, max=8)}, "x": {0: dim("n", min=1, max=8)}}
    write = export(Prefill(core), (pos, x), dynamic_shapes=spec)
    read = export(Decode(core), (torch.randn(1, 2),))
    return core, write, read


def test_two_methods_exported_separately_share_their_buffers_as_in_torch():
    ref_core, ref_w, ref_r = _two_programs(torch.export.export, torch.export.Dim)
    core, w, r = _two_programs(st.export, st.Dim)
    core.load_state_dict(ref_core.state_dict())
    before = core.cache.clone()
    x, pos = torch.randn(5, 2), torch.tensor([3, 4, 5, 6, 7])
    torch.testing.assert_close(w.module()(pos, x), ref_w.module()(pos, x))
    y = torch.randn(1, 2)
    got, want = r.module()(y), ref_r.module()(y)
    torch.testing.assert_close(got, want)
    assert not torch.equal(got, y)  # the read saw the write of the other program
    torch.testing.assert_close(r.state_dict["core.cache"], ref_r.state_dict["core.cache"])
    assert torch.equal(core.cache, before)  # our model: unchanged
    assert not torch.equal(ref_core.cache, before)  # torch's: written
    with pytest.raises(st.InputMismatchError):
        w.module()(torch.tensor([0] * 9), torch.randn(9, 2))


def test_a_loaded_program_shares_its_state_and_never_writes_the_callers_buffer():
    model = Counter()
    ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes={"x": {0: st.Dim("b")}})
    f = io.BytesIO()
    st.save(ep, f)
    raw = bytearray(f.getvalue())
    snapshot = bytes(raw)
    loaded = st.load(raw)
    xs = [torch.randn(n, 3) for n in (2, 1, 0)]
    got, _ = _steps(loaded, xs)
    want, _ = _steps(ep, xs)  # the same program from its export: the same sequence
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w)
    assert loaded.state_dict["count"].item() == 6.0
    assert bytes(raw) == snapshot
    assert model.count.item() == 0.0


def test_to_torch_shares_the_programs_state():
    """The converted program is the same program: its modules continue from where ours
    left the state (torch's run_decompositions keeps the state tensors too)."""
    ep = st.export(Counter(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: st.Dim("b")}})
    x = torch.randn(2, 3)
    ep.module()(x)
    tep = ep.to_torch()
    tep.module()(x)
    assert ep.state_dict["count"].item() == 2.0
    assert ep.module()(x)[0, 0].item() == pytest.approx(
        (x[0, 0] * 2 + 3 + 3 * x.sum(0)[0]).item())


def test_run_decompositions_keeps_the_programs_state_as_in_torch():
    """torch's ``run_decompositions`` returns a program holding the same state tensors."""
    x = torch.randn(2, 3)
    ref = torch.export.export(Counter(), (x,))
    ref_d = ref.run_decompositions()
    ep = st.export(Counter(), (x,), dynamic_shapes={"x": {0: st.Dim("b", min=0)}})
    dep = ep.run_decompositions()
    for program, decomposed in ((ref, ref_d), (ep, dep)):
        program.module()(x)
        decomposed.module()(x)
        assert decomposed.state_dict["count"] is program.state_dict["count"]
        assert program.state_dict["count"].item() == 2.0
    assert dep.module()(torch.randn(0, 3)).shape == (0, 3)


def test_the_state_copy_lives_as_long_as_a_program_holding_it():
    """No copy outlives the programs: with every program gone, a new export of the same
    model starts again from the model's own values (which were never written)."""
    import gc
    import weakref

    model = Counter()
    ep = st.export(model, (torch.randn(2, 3),))
    ep.module()(torch.randn(2, 3))
    copy_ref = weakref.ref(ep.state_dict["count"])
    ep2 = st.export(model, (torch.randn(2, 3),))
    assert ep2.state_dict["count"] is copy_ref()  # shared while ep lives
    del ep, ep2
    gc.collect()
    assert copy_ref() is None
    ep3 = st.export(model, (torch.randn(2, 3),))
    assert ep3.state_dict["count"].item() == 0.0 == model.count.item()


class WithParams(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("mask", torch.ones(3), persistent=False)

    def forward(self, x):
        self.steps.add_(1)
        return self.lin(x) * self.mask + self.steps


def test_named_parameters_and_buffers_are_torch_exports():
    """transformers' ExecuTorch helpers read ``ep.named_buffers()``: the same names, in the
    same order, with the state the program's modules run on (non-persistent included)."""
    model, x = WithParams(), torch.randn(2, 3)
    ref = torch.export.export(model, (x,))
    ep = st.export(model, (x,), dynamic_shapes={"x": {0: st.Dim("b", min=0)}})
    assert [n for n, _ in ep.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in ep.named_buffers()] == [n for n, _ in ref.named_buffers()]
    for (_, a), (_, b) in zip(ep.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(a, b)
    assert [tuple(p.shape) for p in ep.parameters()] == [(3, 3), (3,)]
    m = ep.module()
    m(torch.randn(0, 3))
    bufs = dict(ep.named_buffers())
    assert bufs["steps"] is m.steps and bufs["steps"].item() == 1.0
    assert len(list(ep.buffers())) == 2


def _load_then_others(export, dim, model, x):
    """load_state_dict into one module(), with one module made before and one after."""
    ep = export(model, (x,), dynamic_shapes={"x": {0: dim("b", min=0, max=8)}})
    early, loader = ep.module(), ep.module()
    opt = torch.optim.SGD(early.parameters(), lr=0.1)  # holds early's Parameter objects
    loader.load_state_dict({k: torch.full_like(v, 0.25) for k, v in loader.state_dict().items()})
    late = ep.module()
    return ep, early, late, opt


def test_load_state_dict_into_one_module_is_seen_by_every_module_as_in_torch():
    x = torch.randn(2, 3)
    ref_model, model = WithParams(), WithParams()
    model.load_state_dict(ref_model.state_dict())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ref, ref_early, ref_late, _ = _load_then_others(torch.export.export,
                                                      torch.export.Dim, ref_model, x)
    ep, early, late, opt = _load_then_others(st.export, st.Dim, model, x)
    for ours, theirs in ((early, ref_early), (late, ref_late)):
        for n in (0, 1, 4):
            v = torch.randn(n, 3)
            torch.testing.assert_close(ours(v), theirs(v))
    with pytest.raises(st.InputMismatchError):
        late(torch.randn(9, 3))
    torch.testing.assert_close(ep.state_dict["lin.weight"], torch.full((3, 3), 0.25))
    torch.testing.assert_close(ref.state_dict["lin.weight"], torch.full((3, 3), 0.25))
    # the early module's Parameter objects stayed (its optimizer still steps them) ...
    assert opt.param_groups[0]["params"][0] is early.lin.weight
    early(x).sum().backward()
    opt.step()
    torch.testing.assert_close(late.lin.weight, early.lin.weight)  # ... into shared state
    # and the model exported with safetrace was never written (torch's was)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert torch.equal(ref_model.lin.weight, torch.full((3, 3), 0.25))


def test_a_buffer_reassigned_with_another_shape_or_dtype_is_refused():
    """`self.cache = torch.cat([self.cache, x])` (a growing cache) and `self.step =
    self.step + 0.5` (int64 to float): the program's second call ran a graph traced for
    the first state's shape / dtype and answered wrong silently, as torch.export's does
    (measured below); module state keeps one shape and dtype, so both are refused."""
    import torch.export as te

    class Grow(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(0, 2))

        def forward(self, x):
            self.cache = torch.cat([self.cache, x])
            return self.cache.sum(0) * self.cache.shape[0]

    class Retype(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("step", torch.zeros((), dtype=torch.int64))

        def forward(self, x):
            self.step = self.step + 0.5
            return x * self.step

    x = torch.randn(1, 2)
    torch_module, eager = te.export(Grow(), (x,), strict=False).module(), Grow()
    torch_module(x), eager(x)
    assert not torch.allclose(torch_module(x), eager(x))   # torch: wrong on the 2nd call
    with pytest.raises(st.UnsupportedOpError, match=r"`cache` a tensor of float32\[1, 2\] "
                                                    r"in place of its float32\[0, 2\]"):
        st.export(Grow(), (x,))
    with pytest.raises(st.UnsupportedOpError, match=r"`step` a tensor of float32\[\] in "
                                                    r"place of its int64\[\]"):
        st.export(Retype(), (torch.randn(2),))
    # the same shape and dtype (a functional update) stays supported
    ep = st.export(Counter(), (torch.randn(2, 3),))
    assert ep.module()(torch.ones(2, 3)).shape == (2, 3)


class ViewThenReassign(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.arange(8.0).reshape(4, 2))

    def forward(self, x):
        head = self.cache[:2]               # a view of the buffer, returned
        self.cache[:2] = x.sum()            # written in place: the view shows it
        self.cache = self.cache.roll(1, 0)  # then replaced: the view keeps the old tensor
        return head, self.cache[0] + 1


def test_an_output_viewing_a_buffer_that_forward_replaces_keeps_the_old_values():
    """The program writes a reassigned buffer's new value into the state tensor
    (``copy_``, so every module of the program sees it): an output that is a view of that
    tensor showed the new values ([6, 7, s, s] for eager's [s, s, s, s])."""
    x = torch.randn(3, 2)
    ep = st.export(ViewThenReassign(), (x,))
    eager, m = ViewThenReassign(), ep.module()
    for _ in range(3):
        x = torch.randn(3, 2)
        want, got = eager(x), m(x)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w)
        torch.testing.assert_close(m.cache, eager.cache)


def test_a_view_of_a_replaced_buffer_keeps_the_old_values_through_every_runtime():
    """The program itself returns a copy of such a view (one ``clone``), so every runtime
    that writes the new buffer after the graph — torch.export's unlifted module from
    ``to_torch()``, a re-export of ``ep.module()``, ExecuTorch — returns eager's values.
    torch.export's own program returns the new values here (shown below): stricter only
    where torch is wrong."""
    x = torch.randn(3, 2)
    ep = st.export(ViewThenReassign(), (x,))
    assert any(n.target is torch.ops.aten.clone.default for n in ep.graph.nodes)
    runs = {"to_torch": ep.to_torch().module(),
            "re-export": torch.export.export(st.export(ViewThenReassign(), (x,)).module(),
                                             (x,)).module()}
    for name, m in runs.items():
        eager = ViewThenReassign()
        outs = [(eager(x), m(x)) for x in (torch.randn(3, 2) for _ in range(3))]
        for want, got in outs:  # (compared after every call: a view would have moved)
            for w, g in zip(want, got):
                torch.testing.assert_close(g, w, msg=name)
    theirs = torch.export.export(ViewThenReassign(), (x,)).module()
    eager = ViewThenReassign()
    outs = [(eager(x), theirs(x)) for _ in range(2)]
    assert not all(torch.equal(w, g) for want, got in outs for w, g in zip(want, got))
