"""The export session's kept table of rows (``trace/rowcode.py``): the rows of torch's own
namespace are read and set there as the generated code's globals; a row deleted, or
replaced by the user, between two exports is found as the user left it, during the
export (its replacement routes the user's code) and after (put back as it was found)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


@pytest.mark.parametrize("name", ["_check", "cond", "manual_seed", "set_default_dtype"])
def test_a_torch_row_deleted_between_exports_stays_deleted(monkeypatch, name) -> None:
    model = torch.nn.Linear(3, 2).eval()
    x = torch.randn(4, 3)
    st.export(model, (x,))  # (the kept table: its code reads torch.<name> as a global)
    st.export(model, (x,))
    monkeypatch.delattr(torch, name)
    for _ in range(2):
        ep = st.export(model, (x,))
        assert not hasattr(torch, name)
    a = torch.randn(4, 3)
    torch.testing.assert_close(ep.module()(a), model(a))
    for size in (0, 1, 5):  # (a static export: other sizes refused)
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(size, 3))


def test_a_torch_row_replaced_between_exports_is_left_as_the_user_set_it(monkeypatch) -> None:
    """A user's replacement of a routed function (not torch's own: the table's check of
    its watched values fails) is traced as the Python it is, and left in place."""
    model = torch.nn.Linear(3, 2).eval()
    x = torch.randn(4, 3)
    st.export(model, (x,))
    st.export(model, (x,))
    real = torch._check
    calls = []

    def users_check(cond, message=None):  # (a wrapper a library might install)
        calls.append(cond)
        return real(cond, message)

    monkeypatch.setattr(torch, "_check", users_check)
    seen = []

    def forward(a):
        seen.append(torch._check)
        torch._check(a.shape[0] >= 2)
        return a * 2

    n = st.Dim("n", min=1, max=16)
    for _ in range(2):
        ep = st.export(forward, (x,), dynamic_shapes=({0: n},))
        assert seen[-1] is users_check and torch._check is users_check and calls
    for size in (2, 7):
        a = torch.randn(size, 3)
        torch.testing.assert_close(ep.module()(a), a * 2)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 3))
    monkeypatch.undo()
    ep = st.export(forward, (x,), dynamic_shapes=({0: n},))
    assert seen[-1] is not real and torch._check is real  # (routed again, then put back)
    torch.testing.assert_close(ep.module()(torch.randn(5, 3)).shape, (5, 3))
