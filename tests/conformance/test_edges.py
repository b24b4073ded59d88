"""User mistakes and unusual-but-legal programs (ex benchmarks/sweep_edges.py): every case
either behaves as promised or is a known bug below, marked xfail(strict) with its owner."""

from __future__ import annotations

import pytest
import torch

import tests.conformance.edges.edges_0  # noqa: F401  (registers the cases)
import tests.conformance.edges.edges_1  # noqa: F401
import tests.conformance.edges.edges_2  # noqa: F401
import tests.conformance.edges.edges_3  # noqa: F401
from tests.conformance.edge_harness import CASES, ST_ERRORS, Finding, Note, _where, describe, from_safetrace

KNOWN: dict[str, str] = {}


def _params():
    return list(_gen_params())


def _gen_params():
    for cat, name, fn in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        yield pytest.param(fn, id=f"{cat}-{name}", marks=marks)


@pytest.mark.parametrize("fn", _params())
def test_edge_case(fn):
    torch.manual_seed(0)
    try:
        fn()
    except Note:
        pass                      # behaviour worth knowing, no broken promise
    except Finding as f:
        pytest.fail(f"{f.kind}: {f.msg}")
    except ST_ERRORS as e:
        pytest.fail(f"refused a legal program or input: {describe(e)}")
    except Exception as e:  # noqa: BLE001
        if from_safetrace(e):
            pytest.fail(f"internal {describe(e)} at {_where(e)}")
        raise


def test_case_names_are_unique():
    names = [name for _, name, _ in CASES]
    assert len(names) == len(set(names)) and len(names) >= 180
