"""Every rule against torch: same shapes and dtypes, same rejections."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import torch

import tests.rules as pkg
from safetrace.errors import OpShapeError
from safetrace.rules import RULES
from tests.rules.harness import describe, reference, run_rule, sampled, within


def _tables(name: str) -> list:
    out = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("samples_"):
            mod = importlib.import_module(f"tests.rules.{info.name}")
            out.extend(getattr(mod, name, []))
    return out


SAMPLES = _tables("SAMPLES")
ERROR_SAMPLES = _tables("ERROR_SAMPLES")


@pytest.mark.parametrize("sample", sampled(SAMPLES), ids=repr)
def test_rule_matches_torch(sample):
    if sample.data_dependent:
        real = reference(sample)
        got = run_rule(sample)
        assert within(got, real), (got, describe(real))
        return
    expected = describe(reference(sample))
    got = describe(run_rule(sample))
    assert got == expected


@pytest.mark.parametrize("sample", sampled(ERROR_SAMPLES), ids=repr)
def test_rule_rejects_like_torch(sample):
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)):
        reference(sample)
    with pytest.raises(OpShapeError):
        run_rule(sample)


def test_every_rule_has_a_sample():
    covered = {s.op for s in SAMPLES}
    missing = sorted(str(op) for op in RULES if op not in covered)
    assert not missing, f"rules without samples: {missing}"
