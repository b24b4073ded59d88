"""The input contract as one typed object: what it holds, who reads it, how it is saved."""

from __future__ import annotations

import io
import json

import pytest
import torch

import safetrace as st
from safetrace import Dim
from safetrace.exporter.contract import (ConstInput, Contract, InputDim, SymbolRange,
                                         TensorInput, linear_in)
from safetrace.symbolic.expr import sym
from tests.serialize.hostile import pack, parts


def _three(x, y, z, k):
    torch._check(z.shape[0] <= z.shape[1])  # a residual condition (z[:, :n] clamps by a Min)
    return x.sum() + y.sum() + z[:, :x.shape[0]].sum() * k


def _export_three():
    d = Dim("d", min=2, max=50)
    args = (torch.randn(3), torch.randn(7), torch.randn(4, 5), 2)
    spec = {"x": {0: d}, "y": {0: 2 * d + 1}, "z": {0: Dim.AUTO, 1: Dim.DYNAMIC}, "k": None}
    return st.export(_three, args, dynamic_shapes=spec)


def test_contract_fields_per_input_dim():
    c = _export_three().contract
    x, y, z, k = c.inputs
    assert isinstance(k, ConstInput) and k.value == 2
    assert [d.kind for d in x.dims] == ["bind"] and x.dims[0].symbol == "s0"
    assert y.dims[0].kind == "equal" and str(y.dims[0].size) == "2*s0 + 1"
    assert "as declared" in y.dims[0].why
    assert [d.kind for d in z.dims] == ["bind", "bind"]
    assert c.symbol("s0") == SymbolRange("s0", 2, 50, True, "x.shape[0]", c.symbol("s0").origin)
    assert [str(cond.cond) for cond in c.conditions] == ["s1 <= s2"]
    assert "test_contract.py" in c.conditions[0].origin


def test_readers_agree_with_the_contract():
    ep = _export_three()
    assert {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {
        "s0": (2, 50), "s1": (0, float("inf")), "s2": (0, float("inf")),
        "2*s0 + 1": (5, 101)}  # (a derived dim keyed too, as torch.export keys it)
    assert ep.dims_report == {"x.shape[0]": "dynamic s0 where s0 = x.shape[0]",
                              "y.shape[0]": "dynamic 2*s0 + 1 where s0 = x.shape[0]",
                              "z.shape[0]": "dynamic s1 where s1 = z.shape[0]",
                              "z.shape[1]": "dynamic s2 where s2 = z.shape[1]"}
    text = ep.describe_contract()
    assert "requires z.shape[0] <= z.shape[1]" in text
    m = ep.module()
    for n in (2, 5):
        out = m(torch.ones(n), torch.ones(2 * n + 1), torch.ones(0, 9), 2)
        assert out == _three(torch.ones(n), torch.ones(2 * n + 1), torch.ones(0, 9), 2)
    with pytest.raises(st.InputMismatchError, match="must equal 2\\*x.shape\\[0\\] \\+ 1"):
        m(torch.ones(3), torch.ones(6), torch.ones(1, 9), 2)
    with pytest.raises(st.InputMismatchError, match="z.shape\\[0\\] <= z.shape\\[1\\]"):
        m(torch.ones(3), torch.ones(7), torch.ones(3, 2), 2)
    out = m(torch.ones(5), torch.ones(11), torch.ones(1, 2), 2)  # x[:, :5] of 2 columns
    assert out == _three(torch.ones(5), torch.ones(11), torch.ones(1, 2), 2)
    with pytest.raises(st.InputMismatchError, match=">= 2"):
        m(torch.ones(1), torch.ones(3), torch.ones(1, 2), 2)


def test_a_root_declared_only_through_a_derived_dim_is_read_by_inversion():
    d = Dim("d", max=40)

    def f(x, y):
        return x[: y.shape[0]] * 2

    ep = st.export(f, (torch.randn(7), torch.randn(6)),
                   dynamic_shapes={"x": {0: 2 * d + 1}, "y": {0: 2 * d}})
    x, y = ep.contract.inputs
    assert (x.dims[0].kind, x.dims[0].coef, x.dims[0].offset) == ("derived", 2, 1)
    assert y.dims[0].kind == "equal"
    assert ep.contract.symbol(x.dims[0].symbol).where == "((x.shape[0] - 1) // 2)"
    m = ep.module()
    for n in (0, 1, 4):
        a, b = torch.randn(2 * n + 1), torch.randn(2 * n)
        assert torch.equal(m(a, b), f(a, b))
    with pytest.raises(st.InputMismatchError, match="must equal 2\\*d|must equal"):
        m(torch.randn(8), torch.randn(8))  # even: no integer d
    with pytest.raises(st.InputMismatchError, match="<= 40"):
        m(torch.randn(83), torch.randn(82))  # d = 41 > max


def test_linear_in_inverts_only_integer_linear_forms():
    s0, s1 = sym("s0"), sym("s1")
    assert linear_in(s0 * 2 + 1, "s0") == (2, 1)
    assert linear_in(s0, "s0") == (1, 0)
    assert linear_in(s0 + s1, "s0") is None
    assert linear_in(s0 * s0, "s0") is None
    assert linear_in(s1 + 3, "s0") is None


class _CountSlice(torch.nn.Module):
    def forward(self, x):
        c = torch.count_nonzero(x).item()
        return x[:c]


def test_unbacked_symbols_are_listed_with_their_ranges():
    g = _CountSlice()
    ep = st.export(g, (torch.randn(12),))
    (u,) = [k for k in ep.range_constraints if str(k).startswith("u")]
    assert (ep.range_constraints[u].lower, ep.range_constraints[u].upper) == (0, 12)
    ref = torch.export.export(g, (torch.randn(12),))
    # torch lists the raw item as another symbol in (-oo, oo), then u1 in [0, 12]
    assert (0, 12) in {(v.lower, v.upper) for k, v in ref.range_constraints.items()
                       if str(k).startswith("u")}
    assert ep.contract.symbol(str(u)).backed is False


def test_the_contract_validates_itself():
    with pytest.raises(ValueError, match="dim kind"):
        InputDim("maybe", 3)
    with pytest.raises(ValueError, match="static size"):
        InputDim("static", sym("s0"))
    with pytest.raises(ValueError, match="not 2\\*s0"):
        InputDim("derived", sym("s0") * 3, "s0", 2, 0)
    with pytest.raises(ValueError, match="bound once"):
        Contract((TensorInput("x", torch.float32, (InputDim("bind", sym("s0"), "s0"),)),))
    with pytest.raises(ValueError, match="no earlier input dim"):
        Contract((TensorInput("x", torch.float32, (InputDim("equal", sym("s0") + 1),)),))


def _doc_and_tensors(ep):
    buf = io.BytesIO()
    st.save(ep, buf)
    return parts(buf.getvalue())


def test_saved_contract_round_trips_and_hostile_fields_are_refused():
    ep = _export_three()
    doc0, tensors = _doc_and_tensors(ep)
    assert st.load(pack(doc0, tensors)).contract == ep.contract
    bad = [
        (lambda c: c["inputs"][0].update(extra=1), "unknown field"),
        (lambda c: c["inputs"][0].pop("dtype"), "missing field"),
        (lambda c: c["inputs"][0]["dims"][0].update(kind="maybe"), "dim kind"),
        (lambda c: c["inputs"][0]["dims"][0].update(coef=True), "contract.inputs\\[0\\]"),
        (lambda c: c["symbols"][0].update(name="s0; import os"), "bad symbol name"),
        (lambda c: c["symbols"][0].update(lo="2"), "contract.symbols\\[0\\].lo"),
        (lambda c: c["inputs"][1]["dims"][0].update(size=["add", ["mul", 2, "s9"], 1]),
         "no earlier input dim"),
        (lambda c: c.update(inputs={}), "expected list"),
    ]
    for mutate, message in bad:
        doc = json.loads(json.dumps(doc0))
        mutate(doc["contract"])
        with pytest.raises(st.LoadError, match=message):
            st.load(pack(doc, tensors))
