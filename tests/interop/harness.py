"""Accept/reject parity between a safetrace program and its torch.export conversion.

Beside the inputs a case lists, every program is probed at the edges of its contract:
each input symbol moved to 0, 1, its bounds and one past them (all dims that depend on it
follow), and each dynamic dim of each input nudged by one on its own (breaks relations).
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import logging
import warnings
from typing import Any

import pytest

import torch
from torch.utils import _pytree

import safetrace as st
from tests.helpers import assert_close


def outcome(fn: Any, args: tuple, kwargs: dict) -> tuple[str, Any]:
    try:
        return "ok", fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as exc:  # noqa: BLE001 - either side may reject in its own words
        return "rejected", exc


def same_behaviour(ep: Any, converted: Any, args: tuple, kwargs: dict) -> str:
    """Both accept with the same outputs, or both reject; returns which.  `ep` is a
    safetrace program or its module (stateful programs keep their state across calls)."""
    ours = ep.module() if isinstance(ep, st.ExportedProgram) else ep
    a, out_a = outcome(ours, args, kwargs)
    b, out_b = outcome(converted, args, kwargs)
    assert a == b, (f"safetrace {a} ({out_a if a == 'rejected' else ''}), torch {b} "
                    f"({out_b if b == 'rejected' else ''}) for shapes "
                    f"{[getattr(x, 'shape', x) for x in _pytree.tree_leaves((args, kwargs))]}")
    if a == "ok":
        assert_close(out_a, out_b)
    return a


def _leaf(dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    if dtype is torch.bool:
        return torch.rand(shape) > 0.5
    return torch.zeros(shape, dtype=dtype)  # valid as an index into anything non-empty


def _binding_inputs(ep: st.ExportedProgram, binding: dict, bump: tuple | None) -> Any:
    from safetrace.exporter.contract import ConstInput

    leaves = []
    for i, inp in enumerate(ep.contract.inputs):
        if isinstance(inp, ConstInput):
            leaves.append(inp.value)
            continue
        try:
            shape = [d.size if d.kind == "static" else int(d.size.evaluate(binding))
                     for d in inp.dims]
        except KeyError:  # a size no input determines
            return None
        if bump is not None and bump[0] == i:
            shape[bump[1]] += 1
        if any(n < 0 for n in shape):
            return None
        leaves.append(_leaf(inp.dtype, shape))
    args, kwargs = _pytree.tree_unflatten(leaves, ep.in_spec)
    return tuple(args), dict(kwargs)


def edge_inputs(ep: st.ExportedProgram, cap: int = 64) -> list:
    """(args, kwargs) at and around the contract's edges (accepted sizes above `cap` are
    left out: they only cost compute)."""
    from safetrace.exporter.contract import TensorInput
    from safetrace.symbolic.expr import sym

    symbols = [s for s in ep.contract.symbols if s.where is not None]
    env = next((s.env for n in ep.graph.nodes if n.op == "placeholder"
                for s in getattr(n.meta.get("val"), "shape", ()) if hasattr(s, "env")), None)
    if env is None or not symbols:
        return []
    hints = {s.name: int(env.hint(sym(s.name))) for s in symbols}
    out = []
    for s in symbols:
        lo = s.lo or 0
        values = {0, 1, 2, lo - 1, lo, lo + 1, hints[s.name] + 1}
        if s.hi is not None:
            values |= {s.hi, s.hi + 1} if s.hi <= cap else {s.hi + 1}
        for v in sorted(x for x in values if x >= 0):
            made = _binding_inputs(ep, dict(hints, **{s.name: v}), None)
            if made is not None:
                out.append(made)
    for i, inp in enumerate(ep.contract.inputs):
        if isinstance(inp, TensorInput):
            for d, dim in enumerate(inp.dims):
                made = _binding_inputs(ep, hints, (i, d))
                if made is not None:
                    out.append(made)
    return out


def check_parity(ep: st.ExportedProgram, tep: Any, cases: list, cap: int = 64) -> dict:
    """Same behaviour on the listed cases and the contract's edges; counts by outcome.
    (The converted program is the same program: it shares our program's state, as torch's
    conversions do; ours runs on a copy of that state so that both start alike.)"""
    ours = copy.deepcopy(ep.module())
    converted = tep.module()
    counts = {"ok": 0, "rejected": 0}
    for args, kwargs in itertools.chain(cases, edge_inputs(ep, cap)):
        counts[same_behaviour(ours, converted, args, kwargs)] += 1
    return counts


class _Transpose(torch.nn.Module):
    def forward(self, x):
        return x.t() + 1


def wrong_rule_program(monkeypatch: Any) -> tuple[st.ExportedProgram, Any]:
    """A program whose ``x.t()`` node carries reversed (wrong) metadata, as a wrong shape
    rule would leave it: (the program, that node)."""
    ep = st.export(_Transpose(), (torch.randn(3, 5),), dynamic_shapes={"x": {0: st.Dim("n")}})
    node = next(n for n in ep.graph.nodes if getattr(n.target, "_opname", None) == "t")
    meta = node.meta["val"].st_meta
    monkeypatch.setattr(node.meta["val"], "st_meta",
                        type(meta)(tuple(reversed(meta.shape)), meta.dtype, meta.device))
    return ep, node


def malformed_inputs(ep: st.ExportedProgram, args: tuple, kwargs: dict) -> list:
    """(label, args, kwargs): the example with one tensor input made wrong in one way the
    contract refuses (another dtype, one dim more or less, a static dim one larger, a size
    that must equal another's one larger), and one way it accepts (transposed in memory:
    "layout", refused only where the program asked for a layout)."""
    from safetrace.exporter.contract import TensorInput

    leaves, spec = _pytree.tree_flatten((args, kwargs))
    out = []

    def swap(i: int, t: torch.Tensor) -> tuple:
        new = list(leaves)
        new[i] = t
        a, k = _pytree.tree_unflatten(new, spec)
        return tuple(a), dict(k)

    for i, inp in enumerate(ep.contract.inputs):
        if not isinstance(inp, TensorInput) or inp.scalar:
            continue
        t = leaves[i]
        other = torch.float64 if t.dtype != torch.float64 else torch.float32
        out.append((f"{inp.path} as {other}", *swap(i, t.to(other))))
        if t.dtype == torch.int64:
            out.append((f"{inp.path} as int32", *swap(i, t.to(torch.int32))))
        out.append((f"{inp.path} rank + 1", *swap(i, t.unsqueeze(-1))))
        if t.dim() >= 1:
            fewer = t[0] if t.shape[0] else _leaf(t.dtype, list(t.shape[1:]))
            out.append((f"{inp.path} rank - 1", *swap(i, fewer)))
        for d, dim in enumerate(inp.dims):
            if dim.kind in ("static", "derived", "equal"):
                shape = list(t.shape)
                shape[d] += 1
                out.append((f"{inp.path}.shape[{d}] + 1 ({dim.kind})",
                            *swap(i, _leaf(t.dtype, shape))))
        if t.dim() >= 2 and t.shape[-1] > 1 and t.shape[-2] > 1:
            moved = t.transpose(-1, -2).contiguous().transpose(-1, -2)
            out.append((f"{inp.path} layout", *swap(i, moved)))
    return out


def onnx_module_set_up() -> None:
    """For a test module of ONNX exports: torch.onnx's conversion warnings and logs quiet,
    and the module skipped (with the install line) where onnxruntime or onnxscript is
    missing."""
    warnings.filterwarnings("ignore", category=st.ConversionWarning)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    for package in ("onnxruntime", "onnxscript"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"needs {package}: pip install -c constraints.txt -e '.[dev]'",
                        allow_module_level=True)


def count_retraces(monkeypatch: Any) -> list:
    """Each ``run_decompositions`` of a torch program (a retrace through AOT autograd),
    appended to the list returned, for the rest of the test."""
    calls: list = []
    original = torch.export.ExportedProgram.run_decompositions

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", counted)
    return calls
