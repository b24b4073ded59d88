"""Every rule on empty tensors: each sample with a zero-size dim in each position.

Eager CPU is the reference (meta kernels skip CPU's special cases for empty inputs:
``pixel_unshuffle`` returns its input unchanged, ``bincount`` an int64 ``minlength``
vector).  The contract, per variant:

* CPU accepts: the rule gives CPU's shapes and dtypes, or rejects where the op is listed
  in STRICTER (eager skips its checks on an empty input; the rule keeps them, which can
  reject a program but never mislead one);
* CPU rejects: the rule rejects, or gives the meta kernel's answer (the CPU error is
  about data, like an index into an emptied dim, or a CPU-only dtype gap);
* where the rule models CPU rather than meta (CPU_MODELLED) or eager's check reads data
  (DATA_CHECKED), a CPU error leaves nothing more to compare;
* ops whose CPU kernels crash the process on some empty or mismatched inputs
  (CPU_CRASHES) are run only where the rule accepts.
"""

from __future__ import annotations

import collections
import os

import pytest
import torch

from safetrace.errors import DataDependentError, OpShapeError
from tests.rules.harness import Sample, describe, reference, run_rule, within, \
    zero_size_variants
from tests.rules.test_rules_vs_torch import SAMPLES

aten = torch.ops.aten

# CPU kernels that segfault or divide by zero on some empty or mismatched inputs
CPU_CRASHES = {
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten.embedding_bag.default, aten.embedding_bag.padding_idx, aten._embedding_bag.default,
    aten.native_batch_norm.default, aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats, aten._native_batch_norm_legit_no_training.default,
    aten.lstm.input, aten.gru.input, aten.rnn_tanh.input, aten.rnn_relu.input,
    aten.linalg_lstsq.default,
}

# rules that follow CPU where meta differs: a CPU error about data says nothing of meta
CPU_MODELLED = {aten.embedding_bag.default, aten.embedding_bag.padding_idx,
                aten._embedding_bag.default}

# eager's own check on these empty inputs reads tensor data (lengths given as tensors;
# class targets, which all fall outside an empty class dim unless ignored)
DATA_CHECKED = {aten.ctc_loss.Tensor, aten.nll_loss_forward.default, aten.nll_loss.default,
                aten.nll_loss2d_forward.default, aten.nll_loss2d.default,
                aten.nll_loss_nd.default, aten.cross_entropy_loss.default}

# eager accepts these empty inputs without the checks it applies to non-empty ones
# (mismatched attention batches, running stats of another channel count, a 0-by-3
# "square" matrix, zero-size kernels); the rules keep the checks
STRICTER = {
    aten.scaled_dot_product_attention.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten.conv1d.padding, aten.conv2d.padding, aten.conv3d.padding,
    *((aten.cholesky.default,) if hasattr(aten, "cholesky") else ()),  # gone in torch 2.14
    aten.batch_norm.default, aten.native_batch_norm.default,
    aten._native_batch_norm_legit.default, aten._native_batch_norm_legit.no_stats,
    aten._native_batch_norm_legit_no_training.default, aten.instance_norm.default,
    aten.lstm.input, aten.gru.input, aten.rnn_tanh.input, aten.rnn_relu.input,
}


def _skip(v: Sample) -> bool:
    if v.op is aten.linalg_lstsq.default:  # LAPACK's gelss/gelsd crash on empty inputs
        return v.kwargs.get("driver") in ("gelss", "gelsd")
    # the meta kernel divides by the key/value head count
    return bool(v.kwargs.get("enable_gqa")) and any(
        0 in getattr(t, "shape", (1,))[:-2] for t in v.args[:3])


# the first samples of each op by default (about 3,000 variants, ~20 s on one core);
# SAFETRACE_EMPTY_SAMPLES=all checks every sample (~10,000 variants)
PER_OP = os.environ.get("SAFETRACE_EMPTY_SAMPLES", "1")


def _variants() -> list[Sample]:
    out = []
    taken: collections.Counter = collections.Counter()
    for sample in SAMPLES:
        if PER_OP != "all" and taken[sample.op] >= int(PER_OP):
            continue
        taken[sample.op] += 1
        out.extend(v for v in zero_size_variants(sample) if not _skip(v))
    return out


VARIANTS = _variants()


def _run(fn, v: Sample):
    try:
        return fn(v), None
    except (OpShapeError, DataDependentError) as e:  # the rule's refusals
        return None, e
    except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError,
            ArithmeticError) as e:
        if fn is run_rule:
            raise  # anything else from a rule is an internal error
        return None, e


def _same(v: Sample, got, real) -> bool:
    return within(got, real) if v.data_dependent else describe(got) == describe(real)


def _on(v: Sample, device: str) -> Sample:
    return Sample(v.op, v.args, v.kwargs, device, v.data_dependent)


@pytest.mark.parametrize("v", VARIANTS, ids=repr)
def test_rule_on_empty_tensors_matches_eager(v):
    got, refused = _run(run_rule, v)
    if refused is not None and v.op in CPU_CRASHES:
        return  # eager might crash where the rule refuses
    real, cpu_error = _run(reference, _on(v, "cpu"))
    if cpu_error is None:
        if refused is not None:
            assert v.op in STRICTER, f"eager accepts, the rule refuses: {refused}"
        else:
            assert _same(v, got, real), (describe(got), describe(real))
        return
    if refused is not None or v.op in CPU_MODELLED or v.op in DATA_CHECKED:
        return  # the CPU error is the rule's too, or about data
    real, meta_error = _run(reference, _on(v, "meta"))
    assert meta_error is None, f"torch rejects ({cpu_error}), the rule accepts"
    assert _same(v, got, real), (describe(got), describe(real))
