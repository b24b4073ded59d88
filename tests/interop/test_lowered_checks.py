"""The input checks survive lowering (issue 20, item 3): every conformance program converted
with ``ep.to_torch()`` refuses, in ``.module()``, every out-of-spec input that
``ep.module()`` refuses, before any operator computes, and again after
``torch.export.save`` / ``torch.export.load``.

"Before any operator computes": the converted module may run only the check operators
(``_assert_tensor_metadata``, ``_assert_scalar``, size reads and the arithmetic on sizes)
and compute-free views before it raises.  The whole tables run under ``-m slow``; a small
fixed sample runs by default.
"""

from __future__ import annotations

import copy
import io
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import safetrace as st
import tests.conformance.models.patterns_0  # noqa: F401  (registers the pattern cases)
import tests.conformance.models.patterns_1  # noqa: F401
import tests.conformance.models.patterns_2  # noqa: F401
from tests.conformance.checker import derive_bounds, generic_outside
from tests.conformance.models.pattern_base import CASES as PATTERN_CASES
from tests.conformance.models.vision import VISION
from tests.conformance.table_models import ARCH, ARCH2
from tests.conformance.test_tables import KNOWN, REFUSED, SLOW_CASES

_TABLES = {"arch": ARCH, "arch2": ARCH2, "vision": VISION,
           "patterns": {name: (lambda c=c: c) for name, c in PATTERN_CASES}}
_ALL = [f"{t}/{n}" for t, cases in _TABLES.items() for n in cases
        if f"{t}/{n}" not in REFUSED and f"{t}/{n}" not in KNOWN and f"{t}/{n}" not in SLOW_CASES]
# a fixed sample for the default run: residual conditions, derived dims, relations between
# inputs, static programs, control flow
_FAST = {"arch/unet_pad", "arch/kv_cache", "arch/sliding_window", "arch2/pixelcnn_functional",
         "patterns/unfold_overlap_padding", "patterns/conv_transpose1d_outpad"}

# (case, bad input) pairs that torch's serializer cannot keep checked: the check lives in the
# converted program's guard code, which torch.export.save drops (torch's own program accepts
# these inputs, and runs the branch traced for the export's value)
_LOST_BY_TORCH_SAVE = {("patterns/container_inputs_bad_structure", "None -> tensor")}

# what a module may run before refusing: checks, size reads and arithmetic, views
_ALLOWED = ("_assert", "sym_size", "sym_numel", "sym_stride", "sym_storage_offset", "permute",
            "view", "alias", "expand", "detach", "_local_scalar_dense", "lift_fresh",
            "unsqueeze", "squeeze", "select", "slice", "t.default", "transpose")


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.computed: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        name = str(func)
        if not any(a in name for a in _ALLOWED):
            self.computed.append(name)
        return func(*args, **(kwargs or {}))


def _refuses(module, args, kwargs) -> str | None:
    """None when ``module`` raises before computing; else what went wrong."""
    a, k = copy.deepcopy((args, kwargs))
    ops = _Ops()
    try:
        with ops:
            module(*a, **k)
    except Exception as e:  # noqa: BLE001 - any refusal counts; what ran before is checked
        if ops.computed:
            return f"refused only after computing {ops.computed[:3]}: {type(e).__name__}"
        return None
    return "accepted"


def _bad_inputs(case) -> list[tuple[str, tuple, dict]]:
    spec = case.spec() if callable(case.spec) else case.spec
    _, beyond = derive_bounds(case, spec) if case.bounds and not case.stateful else ([], [])
    example = case.inputs(case.ex)
    out = [(f"outside #{j}", *case.inputs(s)) for j, s in enumerate([*case.outside, *beyond])]
    out += list(case.bad(*example)) if case.bad else []
    out += generic_outside(*example)
    return out


def _case(name: str):
    table, key = name.split("/", 1)
    return _TABLES[table][key]()


def _check(name: str) -> None:
    case = _case(name)
    torch.manual_seed(0)
    if isinstance(case.model, torch.nn.Module):
        case.model.eval()
    spec = case.spec() if callable(case.spec) else case.spec
    args, kwargs = case.inputs(case.ex)
    ep = st.export(case.model, args, kwargs, dynamic_shapes=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = ep.to_torch()
        except st.ConversionError as e:  # no lowered program to check (tests/interop's own)
            pytest.skip(f"not converted: {str(e).splitlines()[0][:200]}")
        buf = io.BytesIO()
        try:
            torch.export.save(converted, buf)
            buf.seek(0)
            loaded = torch.export.load(buf)
        except Exception as e:  # noqa: BLE001 - torch's serializer, not the checks
            loaded = None
            unsaved = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    lowered = [("to_torch().module()", converted.module())]
    if loaded is not None:
        lowered.append(("after save/load", loaded.module()))
    ours = ep.module()
    problems = []
    for what, a, k in _bad_inputs(case):
        if _refuses(ours, a, k) is not None:
            continue  # only what our program refuses is required of the lowered ones
        for label, module in lowered:
            if label == "after save/load" and (name, what) in _LOST_BY_TORCH_SAVE:
                continue
            if (p := _refuses(module, a, k)) is not None:
                problems.append(f"{what} ({label}): {p}")
    assert not problems, "\n".join(problems)
    if loaded is None:  # the checks held in memory; torch's serializer refused the program
        pytest.skip(f"torch.export.save/load of the converted program failed: {unsaved}")


@pytest.mark.parametrize("name", sorted(n for n in _ALL if n in _FAST))
def test_lowered_program_refuses_what_ours_refuses(name: str) -> None:
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in _ALL if n not in _FAST))
def test_lowered_program_refuses_what_ours_refuses_all_tables(name: str) -> None:
    _check(name)
