"""Every rule on symbolic sizes: the shapes it derives (under the guards it records) equal
torch's at *other* sizes that satisfy those guards.  A rule that asks too little is
unsound (torch disagrees or raises where the guards admit the sizes); this finds it."""

from __future__ import annotations

import random

import pytest

from safetrace.symbolic.expr import sym
from tests.rules.harness import describe, evaluate, reference, resized, sampled, \
    symbolic_run
from tests.rules.test_rules_vs_torch import SAMPLES

SYMBOLIC = sampled([s for s in SAMPLES if not s.data_dependent])


def _bindings(env, dims, rng, n=3):
    """Sizes different from the example that satisfy every recorded guard."""
    names = sorted(dims)
    hints = {k: env.symbols[k].hint for k in names}
    found, tries = [], 0
    while len(found) < n and tries < 60:
        tries += 1
        # only growing sizes: index data drawn for the example stays in range
        binding = {k: hints[k] + rng.choice([0, 1, 2, 3, max(hints[k], 1)]) for k in names}
        if binding == hints or env.check_binding(binding):
            continue
        # replaced symbols must follow their representatives
        for name in names:
            rep = env.simplify(sym(name))
            if rep.free_symbols <= binding.keys():
                binding[name] = rep.evaluate(binding)
        if env.check_binding(binding):
            continue
        found.append(binding)
    return found


def _carries_data(sample) -> bool:
    """Integer or bool tensors (indices, masks, counts) or explicit output sizes."""
    def walk(v):
        if isinstance(v, (list, tuple)):
            return any(walk(x) for x in v)
        return getattr(v, "dtype", None) is not None and not (
            v.dtype.is_floating_point or v.dtype.is_complex)
    return walk(sample.args) or walk(list(sample.kwargs.values())) or \
        "output_size" in sample.kwargs


@pytest.mark.parametrize("sample", SYMBOLIC, ids=repr)
def test_rule_is_sound_at_other_sizes(sample):
    try:
        env, out, dims = symbolic_run(sample)
    except Exception as exc:  # a rule may need concrete sizes: it must say so clearly
        kinds = {k.__name__ for k in type(exc).__mro__}  # the families, or their kinds
        assert kinds & {"OpShapeError", "DataDependentError", "DataDependentQuestion"}, exc
        return
    rng = random.Random(hash(repr(sample)) & 0xFFFF)
    for binding in _bindings(env, dims, rng):
        sizes = {dims[k]: v for k, v in binding.items()}
        other = resized(sample, sizes)
        try:
            expected = describe(reference(other))
        except (RuntimeError, IndexError, ValueError, TypeError) as exc:
            if _carries_data(sample):
                continue  # index/mask/count data drawn for the example may not fit new sizes
            pytest.fail(f"guards admit {sizes} but torch rejects it: {exc}")
        assert evaluate(out, binding) == expected, (sizes, [str(g.cond) for g in env.guards])
