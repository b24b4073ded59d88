"""``ep.to_torch()`` of programs over Dims that admit 0 (and examples of 0 or 1), through
torch's own tools: the converted program, torch's ``run_decompositions`` of it, and
``torch.export.save`` / ``load`` of both compute eager's values at 0, 1 and other sizes and
refuse a size outside the declared range.

torch's size symbols are positive in sympy: ``max(n, 1)`` is ``n`` to them and ``n == 0``
is False, and torch's retrace keeps those values (0 elements at n == 0 where eager makes
1; a condition ``(n == 0) or ...`` reduced to its other side, refusing n == 0).  The
conversion makes such a Dim's symbol non-positive (``interop/positivity.py``).  torch's
retrace also decides its guards at each symbol's hint and keeps an equality: an example
of 1 made the decomposed program's size the number 1."""

from __future__ import annotations

import io
import warnings

import pytest
import torch

import safetrace as st
from safetrace import Dim


class _MaxOne(torch.nn.Module):
    def forward(self, x):
        return x.new_ones(max(x.shape[0], 1)) * 2


class _Chunks(torch.nn.Module):   # (its contract: `n == 0 or ...`)
    def forward(self, x):
        a = x.chunk(3, 0)
        return a[0] * 2, a[1] + 1


class _Clamped(torch.nn.Module):
    def forward(self, x):
        return torch.ones(max(x.shape[0] - 1, 0), max(x.shape[0], 2))


class _SplitThenMax(torch.nn.Module):   # (the max inside a size split's branch)
    def forward(self, x):
        if 1 in x.shape:
            v = x.flatten() + 1
        else:
            v = x.reshape(-1) * 2
        return v, x.new_ones(max(x.shape[0], 1))


class _SlicedSum(torch.nn.Module):
    def forward(self, x):
        return x + x[:, :1].t()[:, :x.shape[0]].sum()


class _Plain(torch.nn.Module):
    def forward(self, x):
        return x.new_ones(x.shape[0]) * 2 + x.sum(1), x.reshape(-1) * 3


def _outputs(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _saved(tep):
    buf = io.BytesIO()
    torch.export.save(tep, buf)
    buf.seek(0)
    return torch.export.load(buf)


def _ways(ep):
    """Each way a user reaches a runnable module from ``ep.to_torch()`` with torch's tools."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tep = ep.to_torch()
        return {"to_torch": tep.module(),
                "run_decompositions": tep.run_decompositions().module(),
                "save/load": _saved(tep).module(),
                "save/load/run_decompositions": _saved(tep).run_decompositions().module(),
                "run_decompositions/save/load": _saved(tep.run_decompositions()).module()}


def _check(model, example, spec, sizes, outside, rest=(3,)):
    ep = st.export(model, (torch.randn(example, *rest),), dynamic_shapes=(spec,))
    for way, module in _ways(ep).items():
        for n in sizes:
            x = torch.randn(n, *rest)
            try:
                want = _outputs(model(x))
            except Exception:  # noqa: BLE001 - eager raises: so must ours and theirs
                with pytest.raises(Exception):
                    ep.module()(x)
                with pytest.raises(Exception):
                    module(x)
                continue
            got = _outputs(module(x))
            assert len(got) == len(want), (way, n)
            for g, w in zip(got, want):
                assert g.shape == w.shape, (way, n, g.shape, w.shape)
                torch.testing.assert_close(g, w)
        for n in outside:   # (out of the declared range: refused)
            with pytest.raises(Exception):
                module(torch.randn(n, *rest))


def test_max_of_a_size_and_one_keeps_eagers_value_at_zero():
    # before: run_decompositions (and save/load then run_decompositions) gave 0 elements
    # at n == 0, eager 1
    _check(_MaxOne(), 4, {0: Dim("n", max=64)}, (0, 1, 2, 5, 64), (65,))


@pytest.mark.parametrize("model", [_Chunks, _Clamped])
def test_a_condition_holding_at_zero_keeps_zero_in_torchs_tools(model):
    # before: the decomposed programs refused n == 0, which ep.module() accepts
    _check(model(), 4, {0: Dim("n", max=64)}, (0, 1, 2, 3, 5, 64), (65,))


def test_a_max_inside_a_size_split_at_an_example_of_zero():
    # before: the decomposed program gave 0 elements at n == 0 (eager 1) and refused n >= 2
    _check(_SplitThenMax(), 0, {0: Dim("d0", max=16)}, (0, 1, 2, 5, 16), (17,), rest=(0,))


@pytest.mark.parametrize("model,lo", [(_SlicedSum, 0), (_Plain, 0), (_Plain, 1)])
def test_an_example_of_one_keeps_the_size_symbolic(model, lo):
    # before: run_decompositions made n the number 1: _SlicedSum's values were wrong at
    # n = 2, 5, 64 (silently); _Plain was refused at every n but 1
    sizes = (0, 1, 2, 5, 64)
    _check(model(), 1, {0: Dim("n", min=lo, max=64)}, sizes[lo:], sizes[:lo] + (65,))


def test_max_one_lowers_to_executorch_with_eagers_value_at_zero(tmp_path):
    # before: st.to_executorch refused the program (its retrace would give 0 elements)
    pytest.importorskip("executorch")
    from executorch.runtime import Runtime

    ep = st.export(_MaxOne(), (torch.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=64)},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st.to_executorch(ep, tmp_path / "m.pte")
    method = Runtime.get().load_program(tmp_path / "m.pte").load_method("forward")
    for n in (0, 1, 2, 5, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(method.execute([x])[0], _MaxOne()(x))


@pytest.mark.slow
def test_max_one_aoti_package_gives_eagers_value_at_zero(tmp_path):
    # before: st.to_aoti refused the program (its package returned 0 elements at n == 0)
    ep = st.export(_MaxOne(), (torch.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=64)},))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = st.to_aoti(ep, str(tmp_path / "m.pt2"))
    run = torch._inductor.aoti_load_package(path)
    for n in (0, 1, 2, 5, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(_outputs(run(x))[0], _MaxOne()(x))
    with pytest.raises(Exception):
        run(torch.randn(65, 3))


def test_a_later_conversion_of_a_folding_program_is_made_once(monkeypatch):
    # before: every ep.to_torch() of a program with a size fold at a Dim's 0 converted it
    # twice (the first conversion, then again with that symbol non-positive)
    from safetrace.interop import torch_export

    made = []
    run = torch_export._Converter.run
    monkeypatch.setattr(torch_export._Converter, "run",
                        lambda self: (made.append(self.from_zero), run(self))[1])
    ep = st.export(_MaxOne(), (torch.randn(4, 3),), dynamic_shapes=({0: Dim("n", max=64)},))
    first = ep.to_torch()
    assert len(made) == 2 and made[1]  # (found: converted again, non-positive)
    second = ep.to_torch()
    assert made[2:] == [made[1]]  # once, with the symbols the first found
    assert second.graph_module.code == first.graph_module.code
    assert str(second.range_constraints) == str(first.range_constraints)
    assert str(second.graph_signature) == str(first.graph_signature)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decomposed = second.run_decompositions().module()
    for n in (0, 1, 2, 64):
        x = torch.randn(n, 3)
        torch.testing.assert_close(decomposed(x), _MaxOne()(x))
        torch.testing.assert_close(second.module()(x), _MaxOne()(x))
    with pytest.raises(Exception):
        second.module()(torch.randn(65, 3))
    # a program with no size fold at 0 is converted once, the first time too
    made.clear()
    _ = st.export(_Plain(), (torch.randn(4, 3),),
                  dynamic_shapes=({0: Dim("n", max=64)},)).to_torch()
    assert made == [frozenset()]
