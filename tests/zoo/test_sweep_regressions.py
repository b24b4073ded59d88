"""Patterns found by the transformers breadth sweep (the conformance table tests/conformance/models/hf.py), reproduced
by small hand-written modules: no transformers needed."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from tests.helpers import matches_eager, rejects


def _dims():
    return Dim("b", min=1, max=64), Dim("t", min=2, max=64)


def _export(fn, args, spec):
    rep = st.explain(fn, args, dynamic_shapes=spec)
    assert rep.ok, str(rep)
    assert not rep.guards, rep.guards
    ep = st.export(fn, args, dynamic_shapes=spec)
    return ep


def test_index_pairs_arange_with_argmax_without_size_one_guard():
    # CLIP text pooler: h[arange(b), ids.argmax(-1)] must also work for b == 1
    def f(h, ids):
        return h[torch.arange(h.shape[0]), ids.to(torch.int).argmax(dim=-1)]

    b, t = _dims()
    ep = _export(f, (torch.randn(2, 5, 4), torch.randint(0, 9, (2, 5))),
                 {"h": {0: b, 1: t}, "ids": {0: b, 1: t}})
    for bb, tt in [(1, 3), (4, 2), (7, 9)]:
        matches_eager(ep, f, (torch.randn(bb, tt, 4), torch.randint(0, 9, (bb, tt))))
    rejects(ep, (torch.randn(2, 5, 4), torch.randint(0, 9, (3, 5))))


def test_function_form_dtype_queries_are_metadata():
    # F.multi_head_attention_forward (WavLM) calls torch.is_floating_point(mask)
    def f(x):
        y = x * 2 if torch.is_floating_point(x) else x
        return y + torch.numel(x) if not torch.is_complex(x) else y

    b, t = _dims()
    ep = _export(f, (torch.randn(2, 5),), {"x": {0: b, 1: t}})
    assert all("is_floating_point" not in str(n.target) for n in ep.graph.nodes)
    for s in [(1, 2), (3, 7)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_arange_with_integral_float_step_stays_symbolic():
    # Funnel: torch.arange(-seq_len * 2, seq_len * 2, 1.0, dtype=torch.int64)
    def f(x):
        n = x.shape[1]
        return torch.arange(-n * 2, n * 2, 1.0, dtype=torch.int64).sum() + x.sum(), \
            torch.arange(0, n, 2.0)

    b, t = _dims()
    ep = _export(f, (torch.randn(2, 5),), {"x": {0: b, 1: t}})
    for s in [(1, 2), (3, 7), (2, 64)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_rules_added_for_the_sweep_keep_dims_dynamic():
    # GPT-J/CodeGen/Cohere rotary (repeat_interleave int), Persimmon (square), RoFormer
    # (reshape_as), WavLM (broadcast_to), ConvBERT (F.unfold = im2col)
    def f(x):
        r = torch.repeat_interleave(x, 2, dim=-1)                       # (b, t, 8)
        s = torch.square(x).reshape_as(x.transpose(0, 1).contiguous())  # (t, b, 4)
        m = x[:, None].broadcast_to(x.shape[0], 3, x.shape[1], 4)       # (b, 3, t, 4)
        u = F.unfold(x.transpose(1, 2)[..., None], [3, 1], padding=[1, 0])   # (b, 12, t)
        return r.sum(-1) + s.sum(-1).t() + m.sum((1, 3)) + u.sum(1)

    b, t = _dims()
    ep = _export(f, (torch.randn(2, 5, 4),), {"x": {0: b, 1: t}})
    for s in [(1, 2, 4), (3, 7, 4)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_histc_counts_tokens_per_expert_for_any_token_count():
    # Mixtral / Qwen2-MoE: torch.histc(routing.float(), bins=E, min=0, max=E - 1)
    def f(x):
        top = x.argmax(-1).reshape(-1).float()
        return torch.histc(top, bins=4, min=0, max=3)

    b, t = _dims()
    ep = _export(f, (torch.randn(2, 5, 4),), {"x": {0: b, 1: t}})
    for s in [(1, 2, 4), (3, 7, 4)]:
        matches_eager(ep, f, (torch.randn(*s),))


def test_ruleless_op_pinning_a_product_of_named_dims_is_an_error():
    # Mixtral before histc had a rule: histc(x.reshape(-1)) pinned b*t == 24 silently,
    # so the program rejected every other (b, t) that the named Dims declare valid
    import pytest
    from safetrace.rules.registry import get_rule

    op = torch.ops.aten.special_bessel_j0.default
    assert get_rule(op) is None, "bessel_j0 has a rule now: pick another rule-less op"

    def f(x):
        return torch.special.bessel_j0(x.reshape(-1))

    b, t = _dims()
    with pytest.raises(st.UnsupportedOpError, match="bessel_j0"):
        st.export(f, (torch.randn(2, 5),), dynamic_shapes={"x": {0: b, 1: t}})
    ep = st.export(f, (torch.randn(2, 5),), dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO}})
    matches_eager(ep, f, (torch.randn(2, 5),))


def test_size_tensors_used_as_sizes_and_slice_bounds():
    # Longformer: x.view(b, torch.div(n, 2w, rounding_mode="trunc"), ...), chunks_count + 1;
    # DeBERTa: att_span = torch.tensor(min(n, k)); rel[k - att_span : k + att_span]
    def f(x, rel):
        n = x.shape[1]
        span = torch.tensor(min(n, 16))
        e = rel[16 - span: 16 + span, :]
        c = torch.div(n, 2, rounding_mode="trunc") - 1
        y = x.view(x.shape[0], torch.div(n, 2, rounding_mode="trunc"), 2)
        z = y.new_zeros((x.shape[0], c + 1, 3))
        return e.sum(0), y.sum(-1) + z.sum(-1), torch.arange(n) + span * 2 - 1

    b, t = Dim("b", min=1, max=64), Dim("t", min=1, max=8)
    rel = torch.randn(32, 4)
    ep = st.export(f, (torch.randn(2, 12), rel), dynamic_shapes={"x": {0: b, 1: 2 * t}, "rel": None})
    for s in [(1, 2), (3, 16), (2, 10)]:
        matches_eager(ep, f, (torch.randn(*s), rel))
    rejects(ep, (torch.randn(2, 18), rel))


def test_tensor_of_data_as_slice_bound_is_read_at_run_time():
    # x[:k.sum()] uses a one-element tensor as a slice bound (__index__): an unbacked size
    # read by the graph, as .item() (it was refused before); eager's clamping and negative
    # bounds included
    def f(x, k):
        return x[: k.sum()]

    ep = st.export(f, (torch.randn(5), torch.tensor([1, 2])))
    x = torch.randn(5)
    for k in ([1, 2], [0, 0], [3, 4], [-1, -1], [-4, 0], [9, 9]):
        kk = torch.tensor(k)
        torch.testing.assert_close(ep.module()(x, kk), f(x, kk))


def test_number_for_optional_tensor_argument_never_builds_a_broken_program():
    # DeBERTa: torch.clamp(rel + span, 0, span * 2 - 1) with a tensor max: aten.clamp.Tensor
    # refuses an int min at run time: the number becomes a scalar tensor in the graph

    def f(x):
        return torch.clamp(x, 0, x.max())

    ep = st.export(f, (torch.randn(4),))
    matches_eager(ep, f, (torch.randn(4),))
    g = lambda x: torch.clamp(x, min=x.min(), max=1)  # noqa: E731
    matches_eager(st.export(g, (torch.randn(4),)), g, (torch.randn(4),))


def test_tensor_where_method_takes_self_as_the_value():
    # Longformer _mask_invalid_locations: x.where(mask.bool(), other)
    def f(x, m):
        return x.where(m.bool(), -x), x.where(m > 0, 0.5)

    b, t = _dims()
    ep = st.export(f, (torch.randn(2, 5), torch.randint(0, 2, (2, 5))),
                   dynamic_shapes={"x": {0: b, 1: t}, "m": {0: b, 1: t}})
    for s in [(2, 5), (1, 3), (4, 7)]:
        matches_eager(ep, f, (torch.randn(*s), torch.randint(0, 2, s)))


def test_known_size_value_is_dropped_after_in_place_write():
    def f(x):
        t = torch.tensor(x.shape[0])
        t += 1  # the tensor no longer holds x.shape[0]
        return x.new_zeros(t.item())

    try:
        ep = st.export(f, (torch.randn(3),), dynamic_shapes={"x": (Dim("n"),)})
    except st.DataDependentError:
        return  # refusing is fine; a stale value would not be
    for n in (2, 5):
        assert ep.module()(torch.randn(n)).shape == f(torch.randn(n)).shape
