"""``ep.run_decompositions()``: retraced by safetrace's own tracer into core ATen, with the
same numerics and contract; the result saves, loads and converts like any other."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close
from tests.interop.harness import check_parity, edge_inputs, same_behaviour
from tests.serialize.programs import CASES

SIZE_OPS = ("sym_size", "_assert", "assert_sym")


def _ops(ep) -> list:
    """Every operator of the program, inside control-flow subgraphs (scan bodies) too."""
    return [n.target for g in ep.graph_module.modules() if isinstance(g, torch.fx.GraphModule)
            for n in g.graph.nodes
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)]


def _non_core(ep) -> set[str]:
    return {str(t) for t in _ops(ep) if torch.Tag.core not in t.tags
            and not t._schema.is_mutable and not any(k in str(t) for k in SIZE_OPS)}


@pytest.mark.parametrize("name", ["dyn_mlp", "derived", "scenario_9", "attention", "counter",
                                  "convnet", "convnet_train", "dataclass_dict_out", "scenario_6"])
def test_decomposed_program_has_the_same_numerics_and_contract(name, tmp_path):
    case = CASES[name]()
    ep = case.export()
    dep = ep.run_decompositions()
    assert isinstance(dep, st.ExportedProgram)
    left = _non_core(dep)
    if name == "convnet_train":  # batch norm updating its running statistics stays
        left.discard("aten.batch_norm.default")
    assert not left, left
    # the decomposed program shares the program's state (torch's run_decompositions too):
    # each side runs on its own copy of it
    ours, theirs = copy.deepcopy(ep.module()), copy.deepcopy(dep.module())
    for args, kwargs in [(case.args, case.kwargs)] + case.good + case.bad + edge_inputs(ep):
        same_behaviour(ours, theirs, args, kwargs)
    path = tmp_path / "d.pt2z"
    st.save(dep, path)
    loaded = st.load(path)
    ours, loaded_m = copy.deepcopy(ep.module()), loaded.module()
    for args, kwargs in [(case.args, case.kwargs)] + case.good + case.bad:
        same_behaviour(ours, loaded_m, args, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        check_parity(dep, dep.to_torch(), [(case.args, case.kwargs)] + case.good)


def test_a_custom_table_is_used():
    case = CASES["dyn_mlp"]()
    ep = case.export()

    def relu_as_clamp(x):
        return torch.ops.aten.clamp_min.default(x, 0)

    dep = ep.run_decompositions({torch.ops.aten.relu.default: relu_as_clamp})
    targets = {n.target for n in dep.graph.nodes}
    assert torch.ops.aten.relu.default not in targets
    assert torch.ops.aten.clamp_min.default in targets
    same_behaviour(ep, dep.module(), (torch.randn(7, 16),), {})


# zoo models: in-place writes (relu_, add_, masked_fill_, copy_ into a slice), aten.to,
# chunk, unflatten, min/where with scalars, upsample, embedding_bag, triu_indices, LSTM/GRU
# (a scan over time) reach core ATen; the contract is unchanged.  Every model of the zoo that
# runs here (hand-written and transformers; timm/torchvision need their own venv): the fast
# ones by default, the rest with -m slow.
def _zoo() -> list:
    from benchmarks.zoo import registry

    entries = [e for e in registry() if e.family in ("hand", "transformers")]
    # (resnet and transformer_encoder: ~10-25 s each on two loaded cores, -m slow; the
    # convolutions decompose by default in test_decomposed_program_has_the_same_numerics...)
    fast = {"mlp", "tiny_gpt", "bert", "gru_tagger"}
    return [e.name if e.name in fast else pytest.param(e.name, marks=pytest.mark.slow)
            for e in entries]


@pytest.mark.parametrize("name", _zoo())
def test_zoo_model_decomposes_to_core_aten_with_the_same_contract(name):
    from benchmarks.zoo import by_name

    entry = by_name(name)
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
        dep = ep.run_decompositions()
    mutable = {str(t) for t in _ops(dep) if t._schema.is_mutable}
    assert not _non_core(dep) and not mutable, (_non_core(dep), mutable)
    assert str(dep.range_constraints) == str(ep.range_constraints)  # nothing narrowed
    with torch.no_grad():
        ours, theirs = copy.deepcopy(ep.module()), copy.deepcopy(dep.module())
        checked = [(case.args, case.kwargs)] + case.others
        # and the contract's edges: each size at 0, 1, its bounds and one past them
        seen = {same_behaviour(ours, theirs, args, kwargs) for args, kwargs in
                checked + ([case.outside] if case.outside else []) + edge_inputs(ep, cap=16)}
    assert seen == {"ok", "rejected"}  # both sides of the contract were compared


class _WriteThroughView(torch.nn.Module):
    """torchvision EfficientNet's classifier: a pooled tensor flattened, then
    ``Dropout(inplace=True)`` and another in-place op on the flattened view.  `keep_base`:
    the pooled tensor is returned too, so the writes through the view show in it."""

    def __init__(self, keep_base: bool) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(12, 3)
        self.drop = torch.nn.Dropout(0.2, inplace=True)
        self.keep_base = keep_base

    def forward(self, x):
        pooled = x.sum(2, keepdim=True) - 0.1  # (a sum: defined at n == 0)
        flat = self.drop(pooled.flatten(1))
        flat.relu_()
        out = self.fc(flat)
        return (out, pooled) if self.keep_base else out


@pytest.mark.parametrize("keep_base", [False, True])
def test_a_write_through_a_view_of_a_computed_tensor_decomposes(keep_base):
    # (tv_efficientnet kept aten.dropout_ after run_decompositions: a write into the view
    # of a tensor nothing else reads is seen through that view only, so it is functional)
    torch.manual_seed(0)
    model = _WriteThroughView(keep_base).eval()
    ep = st.export(model, (torch.randn(2, 12, 5),),
                   dynamic_shapes={"x": {0: st.Dim("b", max=16), 2: st.Dim("n", max=16)}})
    dep = ep.run_decompositions()
    mutable = {str(t) for t in _ops(dep) if t._schema.is_mutable}
    if not keep_base:
        assert not mutable and not _non_core(dep), (mutable, _non_core(dep))
    else:  # the base is read after the writes: they stay writes (through the view)
        assert mutable
    assert str(dep.range_constraints) == str(ep.range_constraints)
    seen = set()
    for args, kwargs in [((torch.randn(3, 12, 7),), {})] + edge_inputs(ep, cap=16):
        seen.add(same_behaviour(ep, dep.module(), args, kwargs))
        if seen == {"ok"} or "ok" in seen and len(seen) == 1:
            assert_close(model(*copy.deepcopy(args)), dep.module()(*args))
    assert seen == {"ok", "rejected"}


class _MultipleOfEight(torch.nn.Module):
    """torchvision RAFT's input check: H and W multiples of 8 (Dim.AUTO: a condition of
    the contract, not a narrowing)."""

    def forward(self, a, b):
        h, w = a.shape[-2:]
        if h % 8 != 0 or w % 8 != 0:
            raise ValueError("multiples of 8")
        return torch.nn.functional.avg_pool2d(a - b, 8).relu()


def test_a_contract_with_conditions_decomposes_to_the_same_contract():
    # (tv_raft_small: the retrace declared Dims and refused the conditions as narrowing)
    auto = st.Dim.AUTO
    spec = {"a": {2: auto, 3: auto}, "b": {2: auto, 3: auto}}
    ep = st.export(_MultipleOfEight(), (torch.randn(1, 2, 16, 24), torch.randn(1, 2, 16, 24)),
                   dynamic_shapes=spec)
    assert len(ep.contract.conditions) == 2
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert str(dep.range_constraints) == str(ep.range_constraints)
    assert sorted(ep.contract.where_text(c.cond) for c in dep.contract.conditions) == \
        sorted(ep.contract.where_text(c.cond) for c in ep.contract.conditions)
    good, bad = torch.randn(1, 2, 8, 32), torch.randn(1, 2, 12, 32)
    assert same_behaviour(ep, dep.module(), (good, good * 2), {}) == "ok"
    assert same_behaviour(ep, dep.module(), (bad, bad), {}) == "rejected"


def test_a_decomposition_needing_more_of_the_inputs_is_refused():
    from safetrace.interop.decompose import _same_conditions

    auto = st.Dim.AUTO
    spec = {"a": {2: auto, 3: auto}, "b": {2: auto, 3: auto}}
    ep = st.export(_MultipleOfEight(), (torch.randn(1, 2, 16, 24), torch.randn(1, 2, 16, 24)),
                   dynamic_shapes=spec)
    import dataclasses

    narrower = copy.copy(ep)  # (the program as if it required only one of the two)
    narrower.contract = dataclasses.replace(ep.contract, conditions=ep.contract.conditions[:1])
    with pytest.raises(st.ConversionError, match="would require `a.shape"):
        _same_conditions(narrower, ep)


class _ShiftedWindowMask(torch.nn.Module):
    """torchvision Swin's attention mask: regions written through a slice of a slice with
    negative bounds (``mask[-7:-3, -3:] = 4``); `odd` adds a slice whose bounds change
    order with the size (``[2:-1]``: empty below 4) and a select."""

    def __init__(self, odd: bool) -> None:
        super().__init__()
        self.odd = odd

    def forward(self, x):
        mask = x.new_zeros(x.shape[-2:])
        count = 0
        for h in ((0, -7), (-7, -3), (-3, None)):
            for w in ((0, -7), (-7, -3), (-3, None)):
                mask[h[0]:h[1], w[0]:w[1]] = count
                count += 1
        if self.odd:
            mask[2:-1, 1:] = -1
            mask[:, 1:][-1] = 2 * x.shape[-1]
        return x + mask


@pytest.mark.parametrize("odd", [False, True])
def test_a_mask_written_through_slices_of_slices_decomposes(odd):
    model = _ShiftedWindowMask(odd)
    ep = st.export(model, (torch.randn(2, 12, 10),),
                   dynamic_shapes={"x": {1: st.Dim("h", max=32), 2: st.Dim("w", max=32)}})
    dep = ep.run_decompositions()
    writes = [str(t) for t in _ops(dep) if t._schema.is_mutable]
    assert not writes, writes
    assert not _non_core(dep), _non_core(dep)
    for h, w in ((12, 10), (0, 3), (1, 1), (3, 8), (5, 6), (7, 7), (9, 2), (32, 31)):
        x = torch.randn(2, h, w)
        if odd and h == 0:  # (``[-1]`` of no rows: eager and both programs refuse it)
            with pytest.raises(st.InputMismatchError):
                dep.module()(x)
            continue
        assert_close(dep.module()(x), model(x))


class _TwoSizesOneCondition(torch.nn.Module):
    def forward(self, a, b):
        h, w = a.shape[-2:]
        if (h + 2 * w) % 8 != 0:
            raise ValueError("h + 2w must be a multiple of 8")
        return a - b


def _renamed(contract, names: dict):
    """`contract` with its symbols renamed (``{"s0": "s1", "s1": "s0"}``): the same
    requirements, written over other names (so its conditions print in another order)."""
    import dataclasses

    from safetrace.symbolic.canon import subs
    from safetrace.symbolic.expr import sym

    def expr(e):
        return subs(e, {k: sym(v) for k, v in names.items()})

    def dim(d):
        if d.kind == "static":
            return d
        return dataclasses.replace(d, size=expr(d.size), symbol=names.get(d.symbol, d.symbol))

    inputs = tuple(dataclasses.replace(i, dims=tuple(dim(d) for d in i.dims))
                   for i in contract.inputs)
    symbols = tuple(dataclasses.replace(s, name=names[s.name]) for s in contract.symbols)
    conditions = tuple(dataclasses.replace(c, cond=expr(c.cond)) for c in contract.conditions)
    return dataclasses.replace(contract, inputs=inputs, symbols=symbols, conditions=conditions)


def test_conditions_are_compared_by_meaning_not_text():
    import dataclasses

    from safetrace.interop.decompose import _same_conditions
    from safetrace.symbolic.canon import eq
    from safetrace.symbolic.expr import add, const, mod, mul, sym

    auto = st.Dim.AUTO
    spec = {"a": {2: auto, 3: auto}, "b": {2: auto, 3: auto}}
    ep = st.export(_TwoSizesOneCondition(), (torch.randn(1, 2, 16, 28),) * 2,
                   dynamic_shapes=spec)
    (cond,) = ep.contract.conditions
    swapped = copy.copy(ep)  # (a retrace whose symbols came out in the other order)
    swapped.contract = _renamed(ep.contract, {"s0": "s1", "s1": "s0"})
    text = [swapped.contract.where_text(c.cond) for c in swapped.contract.conditions]
    assert text != [ep.contract.where_text(cond.cond)], text  # (the two texts differ)
    _same_conditions(ep, swapped)
    # the same condition on another of the equal dims (b's where a's was read)
    b_reads = copy.copy(ep)
    (a, b) = ep.contract.inputs
    b_reads.contract = dataclasses.replace(ep.contract, inputs=(
        dataclasses.replace(a, dims=a.dims[:2] + tuple(
            dataclasses.replace(d, kind="equal", symbol=None) for d in a.dims[2:])),
        dataclasses.replace(b, dims=b.dims[:2] + tuple(
            dataclasses.replace(d, kind="bind", symbol=d.size.name, why=None)
            for d in b.dims[2:]))),
        symbols=tuple(dataclasses.replace(s, where=s.where.replace("a.", "b."))
                      for s in ep.contract.symbols))
    assert b_reads.contract.where_text(cond.cond).startswith("(b.shape[2]")
    _same_conditions(ep, b_reads)
    # a condition the original does not have is still refused, however it is named
    other = copy.copy(ep)
    s0, s1 = sym("s0"), sym("s1")
    by_four = eq(mod(add(s0, mul(const(2), s1)), const(4)), 0)  # (% 4 where it was % 8)
    other.contract = _renamed(dataclasses.replace(ep.contract, conditions=(
        dataclasses.replace(cond, cond=by_four),)), {"s0": "s1", "s1": "s0"})
    with pytest.raises(st.ConversionError, match="would require"):
        _same_conditions(ep, other)


class _Resampling(torch.nn.Module):
    """torchvision's segmentation heads (bilinear back to the input size) and video
    networks (a 3-D adaptive pool)."""

    def forward(self, x, v):
        up = torch.nn.functional.interpolate(x[:, :, ::2], size=x.shape[-2:], mode="bilinear",
                                             align_corners=False)
        fixed = torch.nn.functional.interpolate(x, size=(5, 7), mode="bilinear",
                                                align_corners=True)
        padded = torch.nn.functional.pad(x, (0, 1, 2, 0))  # (Swin's window padding)
        return up, fixed, torch.nn.functional.adaptive_avg_pool3d(v, (1, 2, 2)), padded


def test_resampling_decomposes_to_core_aten():
    # (tv_fcn / tv_deeplabv3 / tv_lraspp kept upsample_bilinear2d.default, tv_r3d_18
    # adaptive_avg_pool3d: neither is core, and torch decomposes both in C++)
    h, w, t = st.Dim("h", min=2, max=32), st.Dim("w", min=1, max=32), st.Dim("t", max=8)
    ep = st.export(_Resampling(), (torch.randn(2, 3, 8, 6), torch.randn(1, 2, 4, 6, 6)),
                   dynamic_shapes={"x": {2: h, 3: w}, "v": {0: st.Dim("n", max=4), 2: t}})
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert str(dep.range_constraints) == str(ep.range_constraints)
    seen = {same_behaviour(ep, dep.module(), args, kwargs)
            for args, kwargs in [((torch.randn(1, 3, 9, 4), torch.randn(2, 2, 3, 6, 6)), {})]
            + edge_inputs(ep, cap=12)}
    assert seen == {"ok", "rejected"}


class _FlowHead(torch.nn.Module):
    """torchvision RAFT's pieces torch decomposes in C++: a coordinate grid (meshgrid),
    InstanceNorm2d without running statistics, grid_sample."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(3, affine=True)

    def forward(self, x):
        h, w = x.shape[-2:]
        gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        xy = torch.meshgrid(torch.arange(w), torch.arange(h), indexing="xy")[0]
        grid = torch.stack([gx, gy], -1).float()[None].expand(x.shape[0], -1, -1, -1)
        out = torch.nn.functional.grid_sample(self.norm(x), grid / 4 - 1, align_corners=True)
        return out, xy * 2


@pytest.mark.slow  # (~1-2 s: three decomposition rounds)
def test_raft_like_composites_decompose_to_core_aten():
    # (tv_raft_small kept meshgrid, instance_norm, grid_sampler: torch's table calls their
    # C++ kernels, which record nothing here; and batch norm without running statistics,
    # _native_batch_norm_legit.no_stats, was taken for a write of its flags)
    torch.manual_seed(0)
    model = _FlowHead().eval()
    with torch.no_grad():
        model.norm.weight.uniform_()
    spec = {"x": {0: st.Dim("b", max=8), 2: st.Dim("h", min=2, max=32),
                  3: st.Dim("w", min=2, max=32)}}
    ep = st.export(model, (torch.randn(2, 3, 8, 6),), dynamic_shapes=spec)
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert str(dep.range_constraints) == str(ep.range_constraints)
    seen = set()
    for args, kwargs in [((torch.randn(1, 3, 5, 9),), {})] + edge_inputs(ep, cap=12):
        seen.add(same_behaviour(ep, dep.module(), args, kwargs))
        if seen == {"ok"}:
            assert_close(model(*args), dep.module()(*args))
    assert seen == {"ok", "rejected"}


class _Recurrent(torch.nn.Module):
    def __init__(self, cell, **kw):
        super().__init__()
        self.rnn = getattr(torch.nn, cell)(6, 5, **kw)
        self.batch_first = kw.get("batch_first", False)

    def forward(self, x, h):
        return self.rnn(x, h)


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [dict(), dict(bias=False, batch_first=True, num_layers=2),
                                dict(bidirectional=True)])
def test_recurrent_layers_decompose_to_a_scan_over_a_symbolic_length(cell, kw):
    # torch's decompositions unroll the sequence (torch.export specializes it: its own
    # export of this module fails with seq dynamic); ours keep it a Dim, in a scan
    torch.manual_seed(0)
    model = _Recurrent(cell, **kw).eval()
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    bf = kw.get("batch_first", False)

    def inputs(seq, batch=3):
        x = torch.randn(batch, seq, 6) if bf else torch.randn(seq, batch, 6)
        h = torch.randn(layers, batch, 5)
        return (x, (h, torch.randn(layers, batch, 5)) if cell == "LSTM" else h), {}

    seq = st.Dim("seq", min=1, max=100)
    hspec = ({1: None}, {1: None}) if cell == "LSTM" else None
    ep = st.export(model, *inputs(4)[:1], dynamic_shapes=({1 if bf else 0: seq}, hspec))
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert any(str(t).startswith("aten.tanh") for t in _ops(dep))
    assert str(dep.range_constraints) == str(ep.range_constraints)
    with torch.no_grad():
        for n in (1, 2, 9):
            args, kwargs = inputs(n)
            assert same_behaviour(ep, dep.module(), args, kwargs) == "ok"
            assert_close(dep.module()(*args), model(*args))
        for n, batch in ((0, 3), (101, 3), (4, 2)):  # outside: refused by both
            assert same_behaviour(ep, dep.module(), *inputs(n, batch)) == "rejected"


class _Histogram(torch.nn.Module):
    """transformers' MoE routing counts: ``histc`` of integer-valued floats with the
    experts' range, and a data-range histogram of real values."""

    def forward(self, ids, x):
        counts = torch.histc(ids, bins=4, min=0, max=3)
        spread = torch.histc(x, bins=5)
        return counts.cumsum(0), spread, torch.histc(x * 2, bins=3, min=-1.5, max=2.5)


def test_histc_decomposes_to_core_aten_with_eagers_bins():
    model = _Histogram()
    n = st.Dim("n", min=1, max=64)
    ep = st.export(model, (torch.tensor([0., 3., 3., 1.]), torch.randn(5)),
                   dynamic_shapes={"ids": {0: n}, "x": {0: st.Dim("m", min=1, max=64)}})
    dep = ep.run_decompositions()
    assert torch.ops.aten.histc.default not in _ops(dep) and not _non_core(dep)
    torch.manual_seed(0)
    cases = [(torch.randint(0, 6, (k,)).float(), torch.randn(j) * 3) for k, j in
             ((1, 1), (7, 2), (64, 33))]
    # values at the bin edges (and the maximum, which the last bin includes)
    edges = torch.linspace(-1.5, 2.5, 4) / 2
    cases.append((torch.tensor([3., 3., 0., -1., 4.]), torch.cat([edges, torch.tensor([7.])])))
    cases.append((torch.tensor([2.]), torch.full((3,), 0.25)))  # equal data: widened by 1
    for ids, x in cases:
        want = model(ids, x)
        got = dep.module()(ids, x)
        for g, w in zip(got, want):
            assert torch.equal(g, w), (ids, x, g, w)
    with pytest.raises(st.InputMismatchError):  # the contract is kept
        dep.module()(torch.zeros(65), torch.zeros(2))


class _VitLike(torch.nn.Module):
    """timm's ViTs with a dynamic image size: the position embedding (a 14 x 14 grid)
    resampled to the input's grid with antialiased bicubic; EVA's rotary embedding
    (``repeat_interleave`` by an int, ``type_as``)."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(1, 8, 14, 14))

    def forward(self, x):
        grid = torch.nn.functional.interpolate(
            self.pos, size=(x.shape[2] // 16, x.shape[3] // 16), mode="bicubic",
            antialias=True, align_corners=False)
        rope = x[:, :2, :3, :4].repeat_interleave(2, -1).type_as(grid) + \
            x[0, 0, 0].to(torch.float64).repeat_interleave(3).type_as(x).sum()
        return grid.flatten(2).mean(2) + x.mean(), rope


@pytest.mark.slow  # (~3-6 s on two loaded cores; the forms' numerics are checked by default below)
def test_vit_position_resampling_and_rotary_repeats_decompose_to_core_aten():
    model = _VitLike()
    spec = ({0: st.Dim("batch", min=1, max=8), 2: st.Dim.AUTO, 3: st.Dim.AUTO},)
    ep = st.export(model, (torch.randn(2, 3, 64, 96),), dynamic_shapes=spec)
    before = {str(t) for t in _ops(ep)}
    assert {"aten._upsample_bicubic2d_aa.default", "aten.repeat_interleave.self_int",
            "aten.type_as.default"} <= before
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert str(dep.range_constraints) == str(ep.range_constraints)
    # other grids: smaller, larger than 14 (downsampling and upsampling), non-square, 1
    # (96 x 24: a grid one column wide, where torch's kernel repeats the first row)
    for hw in [(64, 96), (224, 224), (160, 480), (400, 48), (16, 16), (96, 24)]:
        x = torch.randn(1, 3, *hw)
        same_behaviour(model, dep.module(), (x,), {})
    same_behaviour(ep, dep.module(), (torch.randn(1, 3, 15, 64),), {})  # (refused: 15 < 16)


@pytest.mark.parametrize("size,out", [(14, (4, 5)), (14, (14, 14)), (14, (30, 9)), (7, (50, 1)),
                                      (20, (1, 20))])
def test_antialiased_bicubic_form_matches_torchs_kernel(size, out):
    """The core ATen form (interop/composites_vision.py) against torch's kernel, down- and
    upsampling, on eager tensors; repeat_interleave and type_as too."""
    from safetrace.interop.composites_vision import TABLE

    aten = torch.ops.aten
    x = torch.randn(2, 3, size, size + 3)
    want = aten._upsample_bicubic2d_aa.default(x, list(out), False, None, None)
    got = TABLE[aten._upsample_bicubic2d_aa.default](x, list(out), False)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for dim in (None, 0, -1, 2):
        assert torch.equal(TABLE[aten.repeat_interleave.self_int](x, 3, dim),
                           x.repeat_interleave(3, dim))
    assert TABLE[aten.type_as.default](x, want) is x
    assert torch.equal(TABLE[aten.type_as.default](x, want.double()), x.double())


@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, float("inf"), -float("inf")])
def test_vector_norm_and_expand_as_forms_match_eager(ord):
    """EdgeNeXt's ``x.norm(p=2, dim=1, keepdim=True)`` and ``expand_as`` (not core ATen, not
    in torch's table): the forms against eager, over one dim, several and all."""
    from safetrace.interop.composites_vision import TABLE

    aten = torch.ops.aten
    x = torch.randn(2, 3, 4)
    x[0, 0, 0] = 0.0
    for dim, keep in ((1, True), ([0, 2], False), (None, False)):
        want = torch.linalg.vector_norm(x, ord, dim, keep)
        got = TABLE[aten.linalg_vector_norm.default](x, ord, dim, keep)
        torch.testing.assert_close(got, want)
    got = TABLE[aten.linalg_vector_norm.default](x, ord, -1, dtype=torch.float64)
    torch.testing.assert_close(got, torch.linalg.vector_norm(x, ord, -1, dtype=torch.float64))
    assert torch.equal(TABLE[aten.expand_as.default](x[:, :1], x), x[:, :1].expand_as(x))
    y = x.transpose(1, 2)  # (not contiguous: reshape copies)
    for v, like in ((x, torch.empty(4, 6)), (y, torch.empty(24)), (x[:1], torch.empty(3, 4))):
        assert torch.equal(TABLE[aten.reshape_as.default](v, like), v.reshape_as(like))
    for v in (x, torch.arange(-3, 4), torch.tensor([True, False])):
        want = torch.square(v)
        got = TABLE[aten.square.default](v)
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_a_condition_the_contract_implies_is_not_narrowing():
    """A retrace may require a condition the program's contract implies without stating it
    (timm MaxViT's window counts): proved from the contract's ranges and conditions, it
    refuses no input the program accepts; one the contract does not imply still is."""
    import dataclasses

    from safetrace.interop.decompose import _same_conditions
    from safetrace.symbolic.canon import eq, ge
    from safetrace.symbolic.expr import add, const, floordiv, mod, mul, sym

    spec = {"a": {2: st.Dim("h", min=8, max=64), 3: st.Dim("w", min=8, max=64)},
            "b": {2: st.Dim("h", min=8, max=64), 3: st.Dim("w", min=8, max=64)}}
    ep = st.export(_TwoSizesOneCondition(), (torch.randn(1, 2, 16, 28),) * 2,
                   dynamic_shapes=spec)
    (cond,) = ep.contract.conditions
    h, w = (sym(s.name) for s in ep.contract.symbols if s.where in ("a.shape[2]",
                                                                    "a.shape[3]"))

    def requiring(extra):
        other = copy.copy(ep)
        other.contract = dataclasses.replace(ep.contract, conditions=(
            cond, dataclasses.replace(cond, cond=extra)))
        return other

    # implied by the ranges: (h + 7)//8 >= 1 and h*w >= 64 (h, w >= 8)
    _same_conditions(ep, requiring(ge(floordiv(add(h, const(7)), const(8)), 1)))
    _same_conditions(ep, requiring(ge(mul(h, w), 64)))
    with pytest.raises(st.ConversionError, match="would require"):  # h % 16 == 0: narrower
        _same_conditions(ep, requiring(eq(mod(h, const(16)), 0)))


def test_a_size_constant_on_the_whole_range_is_folded_by_the_prover():
    """timm EfficientFormerV2: the retrace requires ``16*b == b*((h + 15)//16)*((w +
    15)//16)``, true on the declared ``49 <= h, w <= 64`` (each division is 4 there) but
    opaque to the decision; each floor division whose bounds are one value is that value.
    Where it is not one value on the range (``(h + 16)//16``: 5 at 64), it is refused."""
    import dataclasses

    from safetrace.exporter.contract import Condition
    from safetrace.interop.decompose import _same_conditions
    from safetrace.symbolic.canon import eq
    from safetrace.symbolic.expr import add, const, floordiv, mul, sym

    dims = {0: st.Dim("b", max=64), 2: st.Dim("h", min=49, max=64),
            3: st.Dim("w", min=49, max=64)}
    ep = st.export(_TwoConvs(), (torch.randn(2, 3, 50, 60),), dynamic_shapes={"x": dims})
    b, h, w = (sym(s.name) for s in sorted(ep.contract.symbols, key=lambda s: s.where))

    def requiring(extra):
        other = copy.copy(ep)
        other.contract = dataclasses.replace(ep.contract, conditions=(Condition(extra),))
        return other

    def cells(size, k):
        return floordiv(add(size, const(k)), const(16))

    _same_conditions(ep, requiring(eq(mul(const(16), b), mul(b, mul(cells(h, 15), cells(w, 15))))))
    with pytest.raises(st.ConversionError, match="would require"):
        _same_conditions(ep, requiring(eq(mul(const(16), b),
                                          mul(b, mul(cells(h, 16), cells(w, 15))))))


class _TwoConvs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x).relu()


class _ShiftedWindows(torch.nn.Module):
    """Swin's shifted windows (timm): the image padded to whole windows of 3, rolled by
    half a window, split into windows, rolled back.  The count of windows is not provably
    non-zero, and torch's reference form of ``roll`` asks ``numel() == 0`` first."""

    def forward(self, x):  # (B, H, W, C), H and W multiples of 2
        b, h, w, c = x.shape
        x = x.view(b, h // 2, 2, w // 2, 2, c).mean((2, 4))
        hh, ww = x.shape[1:3]
        x = torch.nn.functional.pad(x, (0, 0, 0, (3 - ww % 3) % 3, 0, (3 - hh % 3) % 3))
        x = torch.roll(x, shifts=(-1, -1), dims=(1, 2))
        hp, wp = x.shape[1:3]
        win = x.view(b, hp // 3, 3, wp // 3, 3, c).permute(0, 1, 3, 2, 4, 5)
        win = win.reshape(-1, 9, c).softmax(-1).view(b, hp // 3, wp // 3, 3, 3, c)
        x = win.permute(0, 1, 3, 2, 4, 5).reshape(b, hp, wp, c)
        return torch.roll(x, shifts=(1, 1), dims=(1, 2)) + torch.roll(x, 2)


def test_shifted_windows_roll_decomposes_without_a_condition():
    # (timm_swin: the reference form's `numel() == 0` became a condition of the retrace
    # that the program does not state: refused as narrowing before the roll form)
    model = _ShiftedWindows()
    auto = st.Dim.AUTO
    ep = st.export(model, (torch.randn(2, 10, 14, 3),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=0), 1: auto, 2: auto}})
    assert ep.contract.conditions
    dep = ep.run_decompositions()
    assert not _non_core(dep), _non_core(dep)
    assert "cond" not in {str(n.target) for g in dep.graph_module.modules()
                          if isinstance(g, torch.fx.GraphModule) for n in g.graph.nodes}
    assert str(dep.range_constraints) == str(ep.range_constraints)
    for shape in ((2, 10, 14, 3), (0, 6, 4, 3), (1, 2, 2, 3), (3, 12, 2, 3), (1, 0, 4, 3)):
        x = torch.randn(shape)
        assert same_behaviour(ep, dep.module(), (x,), {}) == "ok", shape
        assert_close(dep.module()(x), model(x))
    x = torch.randn(2, 9, 14, 3)  # (an odd height: refused by both before running)
    assert same_behaviour(ep, dep.module(), (x,), {}) == "rejected"


@pytest.mark.parametrize("shifts,dims", [((-3, 2), (1, 2)), (5, None), ((4,), (0,)),
                                         ((-9,), (-1,)), ((0, 1), (0, 0))])
def test_roll_form_matches_eager(shifts, dims):
    from safetrace.interop.composites_vision import TABLE

    for shape in ((2, 7, 9), (0, 3, 2), (1, 1, 1), (4, 0, 5)):
        x = torch.randn(shape)
        want = torch.roll(x, shifts, dims) if dims is not None else torch.roll(x, shifts)
        d = [] if dims is None else list(dims)
        s = [shifts] if isinstance(shifts, int) else list(shifts)
        got = TABLE[torch.ops.aten.roll.default](x, s, d)
        assert torch.equal(got, want), (shape, shifts, dims)


def test_a_size_rounded_up_to_a_multiple_is_one_term_for_the_prover():
    """timm DaViT: the program requires ``(b*hn*wn) % (hn*wn) == 0`` of its window count,
    the retrace ``((b*hp*wp)//49) % (hn*wn) == 0``, with ``hp = a + ((6*a) % 7)`` (a padded
    to a multiple of 7, expanded in the product) and ``hn = hp//7``; written ``7*((a +
    6)//7)``, each padded size is a multiple of 7 and both say the same.  A remainder that
    does not round up (``(5*a) % 7``) is not rewritten, and stays refused."""
    import dataclasses

    from safetrace.exporter.contract import Condition
    from safetrace.interop.decompose import _same_conditions
    from safetrace.symbolic.canon import eq
    from safetrace.symbolic.expr import add, const, floordiv, mod, mul, sym

    dims = {0: st.Dim("b", max=64), 2: st.Dim("h", max=512), 3: st.Dim("w", max=512)}
    ep = st.export(_TwoConvs(), (torch.randn(2, 3, 50, 60),), dynamic_shapes={"x": dims})
    b, h, w = (sym(s.name) for s in sorted(ep.contract.symbols, key=lambda s: s.where))

    def windows(size, c):
        # (after a stem of stride 4 that pads to a multiple of 4, as DaViT's)
        a = floordiv(add(add(size, mod(mul(const(3), size), const(4))), const(3)), const(4))
        padded = add(a, mod(mul(const(c), a), const(7)))
        return padded, floordiv(padded, const(7))

    def requiring(extra, given=None):
        other = copy.copy(ep)
        other.contract = dataclasses.replace(ep.contract, conditions=tuple(
            Condition(c) for c in (extra, given) if c is not None))
        return other

    for c, holds in ((6, True), (5, False)):
        (hp, hn), (wp, wn) = windows(h, c), windows(w, c)
        cells = mul(hn, wn)
        program = requiring(eq(mod(mul(b, cells), cells), 0))
        retraced = requiring(eq(mod(floordiv(mul(b, mul(hp, wp)), const(49)), cells), 0))
        if holds:
            _same_conditions(program, retraced)
            # (the rewrite: the padded sizes as multiples of 7 of a rounded-up count)
            from safetrace.interop.implication import _round_up

            assert str(_round_up(hp, {})) == f"7*(({h} + 27)//28)", _round_up(hp, {})
        else:
            with pytest.raises(st.ConversionError, match="would require"):
                _same_conditions(program, retraced)
