"""Every converted cond program of ``test_cond_merge.py`` (and the deploy refusals' cond)
through torch's own retrace: ``ep.to_torch().run_decompositions().module()``, ``st.to_onnx``
run by onnxruntime, ``st.to_executorch`` run by ExecuTorch's runtime, and (slow)
``st.to_aoti``. At each size, 0 and 1 included, the result is eager's or a refusal:
the decomposed program's input check (``Guard failed``), the artifact's own check, or a
catalogue error up front; never another value, never torch's internal error.

``merge_pins_no_size`` was WRONG here (session 37, helper conv37's find): exported at an
example of 1 on two dynamic dims, torch's retrace ran its meta kernels at those hints and
guarded on them (``expand``'s ``broadcast_in_dim``: ``guard_or_false(s == 1)``), pinning
``y.shape[0]`` and ``y.shape[1]`` to 1 and dropping the guard: 2.14 off at (2, 1, 4),
``Sizes of tensors must match`` at (8, 4, 4) (interop/retrace_pins.py)."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st
from safetrace.errors import StructuredError
from tests.interop.test_cond_merge import CASES

# the refusals a decomposed program's module() or an artifact makes of an input: a guard
# (ours or torch's), the contract's in-graph checks, the .pte's or the ONNX model's checks
_REFUSED = ("Guard failed", "must be", "must equal", "Expected", "check", "Check",
            "the inputs must satisfy")


@pytest.fixture(autouse=True)
def _unverified(request, monkeypatch):
    """As test_cond_merge: two programs convert with torch's verification off (torch's
    engine cannot tell a side's fact from data; ep.to_torch(verify=False) is the path)."""
    name = request.node.callspec.params.get("name")
    if name in ("view_of_its_own_side", "size_of_data_no_output_binds"):
        monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")


def _export(name):
    model, example, spec, others, _ = CASES[name]
    ep = st.export(model, tuple(torch.randn(*s) for s in example), dynamic_shapes=spec)
    return model, ep, [example] + others


def _same(got, want) -> bool:
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    return len(got) == len(want) and all(
        tuple(torch.as_tensor(g).shape) == tuple(w.shape) and
        torch.allclose(torch.as_tensor(g).to(w.dtype), w, atol=1e-5, equal_nan=True)
        for g, w in zip(got, want))


def _sweep(model, run, sizes, tool) -> dict:
    """Run `run` at each of `sizes`: ok / refused counts; WRONG and crash fail."""
    seen = {"ok": 0, "refused": 0, "folded": 0}
    for shapes in sizes:
        torch.manual_seed(0)
        args = tuple(torch.randn(*s) for s in shapes)
        want = model(*args)
        try:
            got = run(args)
        except Exception as exc:  # noqa: BLE001 - classified below
            text = f"{type(exc).__name__}: {exc}"
            assert isinstance(exc, StructuredError) or any(w in text for w in _REFUSED), \
                f"{tool} at {shapes}: crash {text[:300]}"
            seen["refused"] += 1
            # (the program's own run-time condition as torch's retrace folded it with its
            # positive symbols, `min(n, 1)` as 1: refused at 0, loud; positivity.py)
            seen["folded"] += "the inputs must satisfy" in text and 0 in sum(shapes, ())
            continue
        assert _same(got, want), f"{tool} at {shapes}: WRONG"
        seen["ok"] += 1
    return seen


def _converted(ep):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ep.to_torch()


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_decompositions_of_each_cond_program_is_eager_or_refuses(name):
    model, ep, sizes = _export(name)
    tep = _converted(ep)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            decomposed = tep.run_decompositions()
    except StructuredError:
        # (refused, with the catalogue's error: a cond made from ours where torch's cond
        # stops, GuardOnDataDependentSymNode; before, torch's own error; and before, a
        # side returning a view stopped at torch's "cond_true might be aliasing")
        # (view_of_its_own_side: its Dims admit 0, converted with non-positive symbols
        # (positivity.faithful_at_zero), whose strides Max(1, ...) torch's cond refuses)
        assert name in ("data_dependent_stride", "zero_rows_side", "view_of_its_own_side"), name
        return
    module = decomposed.module()
    seen = _sweep(model, lambda args: module(*args), sizes, "run_decompositions")
    assert seen["ok"] >= 1  # (the example's sizes at least)


def _onnx_runner(ep):
    ort = pytest.importorskip("onnxruntime")
    program = st.to_onnx(ep)
    sess = ort.InferenceSession(program.model_proto.SerializeToString())
    names = [i.name for i in sess.get_inputs()]

    def run(args):
        return sess.run(None, {n: a.numpy() for n, a in zip(names, args)})
    return run


def _pte_runner(ep, tmp_path):
    pytest.importorskip("executorch")
    from executorch.runtime import Runtime

    path = tmp_path / "m.pte"
    st.to_executorch(ep, path)
    method = Runtime.get().load_program(path).load_method("forward")
    return lambda args: method.execute(list(args))


@pytest.mark.parametrize("tool", ["onnx", "executorch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_deploy_helper_is_eager_or_refuses_up_front(name, tool, tmp_path):
    model, ep, sizes = _export(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run = _onnx_runner(ep) if tool == "onnx" else _pte_runner(ep, tmp_path)
        except st.errors.ConversionError:
            return  # refused up front, by the catalogue
    _sweep(model, run, sizes, tool)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_aoti_is_eager_or_refuses_up_front(name):
    model, ep, sizes = _export(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            path = st.to_aoti(ep)
        except st.errors.ConversionError:
            return
    runner = torch._inductor.aoti_load_package(path)
    _sweep(model, lambda args: runner(*args), sizes, "aoti")


class _Flat(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0] * x.shape[1], -1) * 2


class _Chunked(torch.nn.Module):  # (test_zero_divisor_lowerings' program: a size split)
    def forward(self, z):
        v0 = z.sum(dim=[], keepdim=False) if z.shape[0] > 2 else z.sum(dim=0, keepdim=False)
        return v0, z.unsafe_chunk(2, 0)[-1] * 2


@pytest.mark.parametrize("model, example, spec, sizes", [
    # example 1 on two Dim(min=1): torch's retrace wrote view(x, [1, -1]) (before: (1, 24)
    # where eager gives (6, 4) at (3, 2, 4), silently)
    (_Flat(), [(1, 1, 4)], ({0: st.Dim("a", min=1, max=16), 1: st.Dim("b", min=1, max=4)},),
     [[(1, 1, 4)], [(3, 2, 4)], [(2, 1, 4)], [(1, 3, 4)], [(16, 4, 4)]]),
    # the example's side of a size split: torch's retrace pinned d0 to 2 and kept cond(True)
    # (before: the `<= 2` side's values at 1 and 5, silently)
    (_Chunked(), [(2,)], ({0: st.Dim("d0", max=16)},), [[(n,)] for n in (0, 1, 2, 5, 16)]),
])
def test_sizes_torch_retrace_pins_are_checked_by_the_decomposed_program(
        model, example, spec, sizes):
    ep = st.export(model, tuple(torch.randn(*s) for s in example), dynamic_shapes=spec)
    tep = _converted(ep)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        decomposed = tep.run_decompositions()
    pinned = any("torch's retrace specialized" in str(w.message) for w in told)
    module = decomposed.module()
    seen = _sweep(model, lambda args: module(*args), sizes, "run_decompositions")
    # either torch's retrace pinned a size, and the decomposed program refuses the others,
    # or (an example of 1 given torch as the hint 2: positivity; the retrace's contiguity
    # questions answered without a guard) nothing was pinned and it computes eager's
    # everywhere but at a 0 its positive symbols folded the program's condition at;
    # never a wrong value (_sweep)
    assert seen["ok"] >= 1 and (seen["refused"] >= 1 if pinned else
                                seen["refused"] == seen["folded"]), (pinned, seen)
    # a second retrace of the same program (its ShapeEnv already pinned) checks them too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = tep.run_decompositions().module()
    _sweep(model, lambda args: again(*args), sizes, "run_decompositions twice")
    # and ep.to_torch().module() itself still computes eager's values everywhere
    assert _sweep(model, lambda args: tep.module()(*args), sizes, "to_torch")["refused"] == 0
