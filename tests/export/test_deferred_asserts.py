"""torch.export's ``prefer_deferred_runtime_asserts_over_guards=True`` (issue 21): where
the program needs less than a named Dim declares, the export succeeds and the program's
input checks refuse the rest at run time, before computing (sound), instead of a
ConstraintViolationError."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class Relation(torch.nn.Module):
    """Needs x.shape[0] == y.shape[0] of two independently declared Dims."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Narrow(torch.nn.Module):
    """Needs n >= 2 where the declaration allows 1; a different graph at 1, eager raising."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0] // 2, 2, -1).sum(1)


def _specs():
    return {"x": {0: st.Dim("a", max=32)}, "y": {0: st.Dim("b", max=32)}}


def test_without_the_option_the_relation_is_refused() -> None:
    with pytest.raises(st.ConstraintViolationError):
        st.export(Relation(), (torch.randn(4), torch.randn(4)), dynamic_shapes=_specs(),
                  max_splits=0)


def test_a_relation_becomes_a_run_time_check() -> None:
    """(torch 2.13 still refuses this relation with the option: it unifies equalities
    before deferring; the run-time check is sound, so ours exports.)"""
    args = (torch.randn(4), torch.randn(4))
    ep = st.export(Relation(), args, dynamic_shapes=_specs(),
                   prefer_deferred_runtime_asserts_over_guards=True)
    assert ep.deferred_checks
    for n in (0, 1, 7, 32):
        x, y = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(ep.module()(x, y), x + y)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3), torch.randn(5))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(33), torch.randn(33))


def test_a_narrowed_range_becomes_a_run_time_check_and_survives_save_load() -> None:
    n = st.Dim("n", min=1, max=64)
    ep = st.export(Narrow(), (torch.randn(8, 3),), dynamic_shapes={"x": {0: n}},
                   prefer_deferred_runtime_asserts_over_guards=True, max_splits=0)
    import io
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(buf.getvalue())
    for rows in (2, 4, 10):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(ep.module()(x), Narrow()(x))
        torch.testing.assert_close(loaded.module()(x), Narrow()(x))
    for rows in (0, 1, 3, 65):  # what the traced program cannot compute: refused first
        for module in (ep.module(), loaded.module()):
            with pytest.raises(st.InputMismatchError):
                module(torch.randn(rows, 3))
