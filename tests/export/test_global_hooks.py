"""Global module forward hooks (``torch.nn.modules.module.register_module_forward_hook``,
``register_module_forward_pre_hook``, with kwargs or ``always_call``) run around every
module's call in eager, the exported model's own included.  Export traced the model's
forward, which runs none of them at the root (its submodules' calls ran them): a program
silently without them.  Each program is exported with the hooks registered, run with them
removed (a program is a fixed graph), and compared with eager at other sizes, 0 and 1
included; inputs outside the declared space are rejected."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import pytest
import torch
from torch.nn.modules import module as nn_module

import safetrace as st

N = st.Dim("n", max=64)


class Inner(torch.nn.Module):
    def forward(self, x, scale=1.0):
        return x.cumsum(0) * scale


class Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x, scale=1.0):
        return self.inner(x, scale=scale) + 1


def _outer_only(hook: Callable) -> Callable:
    """`hook` at the exported model's call alone (the one export did not run)."""
    return lambda mod, *rest: hook(mod, *rest) if type(mod) is Outer else None


def _register(kind: str, m: Outer) -> list:
    reg, pre = nn_module.register_module_forward_hook, nn_module.register_module_forward_pre_hook
    if kind == "forward":
        return [reg(lambda mod, args, out: out * 3 + args[0].sum())]
    if kind == "forward at the root":
        return [reg(_outer_only(lambda mod, args, out: out * 3 + args[0].sum()))]
    if kind == "kwargs":
        return [reg(lambda mod, args, kwargs, out: out - kwargs.get("scale", 5.0),
                    with_kwargs=True)]
    if kind == "always_call":
        return [reg(lambda mod, args, out: out.flip(0) * 2, always_call=True)]
    if kind == "pre":
        return [pre(lambda mod, args: (args[0] * 2,))]
    if kind == "pre at the root":
        return [pre(_outer_only(lambda mod, args: args[0][1:]))]
    if kind == "global before own":  # (eager: the global hooks first, then the model's)
        return [pre(_outer_only(lambda mod, args: (args[0] * 2,))),
                m.register_forward_pre_hook(lambda mod, args: (args[0] - 1,)),
                reg(_outer_only(lambda mod, args, out: out * 5)),
                m.register_forward_hook(lambda mod, args, out: out + 7)]
    if kind == "size branch":
        return [reg(_outer_only(lambda mod, args, out: out[1:] if out.shape[0] > 2 else out))]
    raise AssertionError(kind)


@contextmanager
def _hooked(kind: str, m: Outer) -> Iterator[None]:
    handles = _register(kind, m)
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@pytest.mark.parametrize("kind", ["forward", "forward at the root", "kwargs", "always_call",
                                  "pre", "pre at the root", "global before own",
                                  "size branch"])
def test_global_forward_hooks_run_at_the_exported_models_call(kind: str) -> None:
    m = Outer()
    sizes = (0, 1, 2, 3, 5, 64)
    with _hooked(kind, m):
        ep = st.export(m, (torch.randn(4, 3),), dynamic_shapes=({0: N},))
        xs = [torch.randn(n, 3) for n in sizes]
        expected = [m(x) for x in xs]
    m._forward_hooks.clear()
    m._forward_pre_hooks.clear()
    assert not (m._forward_hooks or m._forward_pre_hooks)
    ours = ep.module()
    for x, want in zip(xs, expected):
        torch.testing.assert_close(ours(x), want)
    plain, got = m(xs[-2]), ours(xs[-2])  # (the hooks change the result: size 5 without)
    assert plain.shape != got.shape or not torch.allclose(plain, got)
    with pytest.raises(st.InputMismatchError):
        ours(torch.randn(65, 3))


def test_a_global_hook_with_kwargs_sees_the_kwargs_the_model_is_called_with() -> None:
    m = Outer()
    with _hooked("kwargs", m):
        ep = st.export(m, (torch.randn(4, 3),), {"scale": 2.0}, dynamic_shapes=(
            {0: N}, None))
        x = torch.randn(6, 3)
        want = m(x, scale=2.0)
    torch.testing.assert_close(ep.module()(x, scale=2.0), want)


def test_an_always_call_global_hook_runs_once_where_the_models_forward_raises() -> None:
    """Eager runs it (its output dropped) and raises again; so does the export, whose
    error stays the model's."""

    class Raises(torch.nn.Module):
        def forward(self, x):
            raise ValueError("no rows wanted")

    seen: list = []
    handle = nn_module.register_module_forward_hook(
        lambda mod, args, out: seen.append(out), always_call=True)
    try:
        with pytest.raises(ValueError, match="no rows wanted"):
            Raises()(torch.randn(2))
        assert seen == [None]
        with pytest.raises(Exception, match="no rows wanted"):
            st.export(Raises(), (torch.randn(2),))
        assert seen == [None, None]
    finally:
        handle.remove()
