"""The search for the user's functions an export may run is skipped when the last export
of the same modules found none holding code and nothing it read has changed (issue 20:
``trace/pycalls.py`` keeps its answer with the walk's facts, ``usercode.same_search``
checks it).  A forward whose code, function or class methods change after two exports
(the kept answer in use) is searched again: its ``len()``/``int()`` of a size stays
symbolic, and its numerics match eager at other sizes.  So is one whose submodule's method,
or a helper function that method calls, is given new code in place (the cache of what a
class or a function reaches is kept while every function it met has the same code)."""

from __future__ import annotations

import builtins
import math
import types

import pytest
import torch

import safetrace as st


def _rows(self: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return x[: int(math.sqrt(len(x)))]


class _Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * 2  # (no name the rewrite redirects)


_SPEC = {"x": {0: st.Dim("n", min=1, max=64)}}


def _export_twice(m: torch.nn.Module) -> None:
    for _ in range(2):  # (the second export: the kept answer, no search)
        ep = st.export(m, (torch.randn(6, 3),), dynamic_shapes=_SPEC)
        for k in (1, 2, 4, 9):
            x = torch.randn(k, 3)
            torch.testing.assert_close(ep.module()(x), m(x))


def _check_now(m: torch.nn.Module) -> None:
    ep = st.export(m, (torch.randn(6, 3),), dynamic_shapes=_SPEC)
    for k in (1, 4, 9, 16, 25):
        x = torch.randn(k, 3)
        out = ep.module()(x)
        assert len(out) == int(math.sqrt(k))  # (not the example's 2 rows)
        torch.testing.assert_close(out, m(x))
    with pytest.raises(Exception):  # (out of the declared space: refused before running)
        ep.module()(torch.randn(65, 3))


def test_a_forward_given_new_code_after_two_exports_is_searched_again() -> None:
    class M(_Plain):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    m = M()
    _export_twice(m)
    M.forward.__code__ = _rows.__code__
    _check_now(m)


def test_a_forward_replaced_on_the_class_after_two_exports_is_searched_again() -> None:
    class M(_Plain):
        pass

    m = M()
    _export_twice(m)
    # (a function of its own namespace: not among what the classes' modules define)
    M.forward = types.FunctionType(_rows.__code__, {"math": math, "__builtins__": builtins})
    _check_now(m)


def _nested(inner_forward):
    """An Outer module calling an Inner one whose forward is `inner_forward`: classes made
    anew per test (the search's caches are per class)."""
    class Inner(torch.nn.Module):
        forward = inner_forward

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Inner()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) - 1

    return Inner, Outer()


def test_a_submodule_method_replaced_after_two_exports_is_searched_again() -> None:
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1

    inner, m = _nested(forward)
    _export_twice(m)
    inner.forward.__code__ = _rows.__code__
    _check_now(m)


def _plain_rows(x: torch.Tensor) -> torch.Tensor:
    return x * 1  # (no name the rewrite redirects; given _rows's code below)


def _helper_rows(x: torch.Tensor) -> torch.Tensor:
    return x[: int(math.sqrt(len(x)))]


def test_a_helper_a_submodule_calls_given_new_code_after_two_exports_is_searched_again() -> None:
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _plain_rows(x) + 1  # (a module-level helper, reached by its name)

    _, m = _nested(forward)
    _export_twice(m)
    saved = _plain_rows.__code__
    try:
        _plain_rows.__code__ = _helper_rows.__code__
        _check_now(m)
    finally:
        _plain_rows.__code__ = saved
