"""More behaviours pinned by torch's own export tests, met by a user who replaces
``torch.export.export(...)`` with ``st.export(...).to_torch()`` (issue 21).  Each case runs
the same model through torch.export in the same test.  Our own cases."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


# -- a derived input dim has its own range entry (torch's test_static_dim_constraints,
#    test_derived_dim_1_2) -------------------------------------------------------------------
class LinearPlusShifted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(6, 4)

    def forward(self, x, y, z):
        return self.l(x) + y[1:], z * 2.0


def _ranges(ep) -> list[tuple[str, int, int]]:
    """(key with the symbols renamed by first appearance, lower, upper), sorted."""
    names: dict[str, str] = {}
    out = []
    for key, vr in ep.range_constraints.items():
        text = str(key)
        for s in sorted(key.free_symbols, key=str):
            text = text.replace(str(s), names.setdefault(str(s), f"d{len(names)}"))
        out.append((text, int(vr.lower), int(vr.upper)))
    return sorted(out)


def test_a_derived_dim_gets_its_range_entry_as_in_torch_export() -> None:
    dx = Dim("dx", min=3, max=6)
    spec = ((dx, None), (dx + 1, 4), (Dim("dz", min=3, max=6), 3))
    args = (torch.randn(4, 6), torch.randn(5, 4), torch.randn(3, 3))
    m = LinearPlusShifted()
    ref = torch.export.export(m, args, dynamic_shapes=spec)
    conv = st.export(m, args, dynamic_shapes=spec).to_torch()
    assert len(conv.range_constraints) == len(ref.range_constraints) == 3
    assert ("d0 + 1", 4, 7) in _ranges(conv) and _ranges(conv) == _ranges(ref)
    # torch's tools keep the entry and run the program
    modules = [conv.module(), torch.export.unflatten(conv)]
    for n in (3, 6):
        inp = (torch.randn(n, 6), torch.randn(n + 1, 4), torch.randn(5, 3))
        want = m(*inp)
        for module in modules:
            same(module(*inp), want)
    with pytest.raises(AssertionError, match="Guard failed"):
        conv.module()(torch.randn(4, 7), torch.randn(5, 4), torch.randn(3, 3))
    with pytest.raises(Exception):
        conv.module()(torch.randn(4, 6), torch.randn(4, 4), torch.randn(3, 3))  # not dx + 1


# -- torch.cond with a Python constant predicate warns, one branch kept (torch's
#    test_export_cond_warns_constant_pred) ------------------------------------------------
class ConstantPred(nn.Module):
    def forward(self, pred, x):
        return torch.cond(pred, lambda x: x.sin(), lambda x: x.cos(), (x,))


@pytest.mark.parametrize("pred", [True, False])
def test_a_constant_cond_predicate_warns_and_keeps_one_branch(pred) -> None:
    args = (pred, torch.randn(3, 3))
    with pytest.warns(UserWarning, match="Pred is a Python constant"):
        ref = torch.export.export(ConstantPred(), args)
    with pytest.warns(UserWarning, match="Pred is a Python constant") as record:
        ours = st.export(ConstantPred(), args)
    assert any("test_dropin_torch_suite_more.py" in str(w.message) for w in record)
    kept = torch.ops.aten.sin.default if pred else torch.ops.aten.cos.default
    for prog in (ours.to_torch(), ref):
        assert len(prog.module().graph.find_nodes(op="call_function", target=kept)) == 1
    x = torch.randn(3, 3)
    same(ours.module()(pred, x), ConstantPred()(pred, x))
    with pytest.raises(st.InputMismatchError):  # the other value: the other branch
        ours.module()(not pred, x)
    with warnings.catch_warnings():  # a tensor predicate: both branches, no warning
        warnings.simplefilter("error")
        both = st.export(ConstantPred(), (torch.tensor(pred), x))
    same(both.module()(torch.tensor(not pred), x), ConstantPred()(torch.tensor(not pred), x))


# -- a forward wholly under torch._dynamo.disable: every node of the program carries its
#    custom metadata, the input checks too (torch's test_custom_tag_metadata_runtime_assert)
class DisabledForward(nn.Module):
    @torch._dynamo.disable()
    def forward(self, x, y):
        if x.shape[0] ** 2 - y.shape[0] ** 2 >= 4:
            return x * 2, y * 2
        return x, y


def test_custom_metadata_of_a_whole_forward_reaches_the_input_checks() -> None:
    import torch.fx.traceback as fx_traceback

    args = (torch.randn(5), torch.randn(3))
    spec = {"x": (Dim("dx"),), "y": (Dim("dy"),)}
    with fx_traceback.preserve_node_meta():
        ref = torch.export.export(DisabledForward(), args, dynamic_shapes=spec,
                                  prefer_deferred_runtime_asserts_over_guards=True)
        conv = st.export(DisabledForward(), args, dynamic_shapes=spec,
                         prefer_deferred_runtime_asserts_over_guards=True).to_torch()
    for prog in (conv, ref):
        calls = [n for n in prog.module().graph.nodes if n.op == "call_function"]
        assert calls and all(n.meta.get("custom") for n in calls), \
            [(n.name, n.meta.get("custom")) for n in calls]
    x, y = torch.randn(6), torch.randn(2)
    same(conv.module()(x, y), DisabledForward()(x, y))
    with pytest.raises(Exception):  # 3*3 - 3*3 < 4: the check, before any op
        conv.module()(torch.randn(3), torch.randn(3))


def test_custom_metadata_of_part_of_a_forward_stays_there() -> None:
    import torch.fx.traceback as fx_traceback

    class Part(nn.Module):
        def forward(self, x):
            with fx_traceback.annotate({"moo": 1}):
                y = x + 1
            return y * 2

    with fx_traceback.preserve_node_meta():
        conv = st.export(Part(), (torch.randn(4),),
                         dynamic_shapes=({0: Dim("n")},)).to_torch()
    custom = {n.name: n.meta.get("custom") for n in conv.module().graph.nodes
              if n.op == "call_function"}
    assert custom["add"] == {"moo": 1} and not custom["mul"], custom
    assert not any(v for k, v in custom.items() if k not in ("add",)), custom


# -- nn.MultiheadAttention's fused op with a Dim per input (torch's
#    test_native_multi_attention_head): q, k, v must match, which eager's kernel raises
#    on; torch.export's program leaves the three Dims independent, ours checks it first
E, HEADS = 8, 2


class FusedAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)

    def forward(self, q, k, v, key_padding_mask):
        return torch._native_multi_head_attention(
            q, k, v, E, HEADS, self.qkv.weight, self.qkv.bias, self.proj.weight,
            self.proj.bias, key_padding_mask, need_weights=False, mask_type=1)


def test_fused_attention_with_a_dim_per_input_checks_they_match() -> None:
    m = FusedAttention()
    q = torch.randn(4, 5, E)
    spec = {"q": {0: Dim("dq", max=64)}, "k": {0: Dim("dk", max=64)},
            "v": {0: Dim("dv", max=64)}, "key_padding_mask": None}
    args = (q, q.clone(), q.clone(), None)
    ref = torch.export.export(m, args, dynamic_shapes=spec)
    ours = st.export(m, args, dynamic_shapes=spec)
    conv = ours.to_torch()
    for b in (1, 6):
        x, y, z = (torch.randn(b, 5, E) for _ in range(3))
        want = m(x, y, z, None)
        for prog in (ours, conv, ref):
            same(prog.module()(x, y, z, None), want)
    bad = (torch.randn(3, 5, E), torch.randn(2, 5, E), torch.randn(3, 5, E), None)
    with pytest.raises(RuntimeError, match="shapes to match"):
        m(*bad)
    with pytest.raises(st.InputMismatchError, match="k.shape\\[0\\]"):
        ours.module()(*bad)  # before the op runs
    with pytest.raises(Exception):
        conv.module()(*bad)
    with pytest.raises(st.OpShapeError, match="shapes to match"):  # eager raises on it
        st.export(m, (q, torch.randn(3, 5, E), q, None), dynamic_shapes=spec)
