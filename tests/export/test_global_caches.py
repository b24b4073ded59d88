"""Caches outside the model that forward fills while exporting (a module-level dict of
position tables, an ``lru_cache`` function): after export they hold no traced values, so
eager code reading them afterwards runs as before (torch.export leaves FakeTensors there,
which eager then returns as its results)."""

from __future__ import annotations

import functools

import pytest
import torch

import safetrace as st

_TABLES: dict = {}
_SEEN: list = []


def _table(n: int, dtype: torch.dtype) -> torch.Tensor:
    key = (n, dtype)
    if key not in _TABLES:
        _TABLES[key] = torch.arange(n, dtype=dtype) * 2
    return _TABLES[key]


@functools.lru_cache(maxsize=8)
def _ramp(n: int) -> torch.Tensor:
    return torch.linspace(0, 1, n)


class UsesCaches(torch.nn.Module):
    def __init__(self, which: str) -> None:
        super().__init__()
        self.which = which

    def forward(self, x):
        if self.which == "dict":
            return x + _table(x.shape[0], x.dtype)
        if self.which == "list":
            _SEEN.append(x.sum())
            return x * 2
        return x * _ramp(x.shape[0])


@pytest.mark.parametrize("which", ["dict", "list", "lru"])
def test_eager_reads_the_caches_after_an_export_as_before(which):
    _TABLES.clear()
    _SEEN.clear()
    _TABLES["kept"] = torch.ones(1)  # the user's own entries stay
    x = torch.randn(3)
    ep = st.export(UsesCaches(which), (x,))
    assert all(type(v) is torch.Tensor for v in [*_TABLES.values(), *_SEEN])
    assert "kept" in _TABLES and _SEEN == []
    eager = UsesCaches(which)
    for _ in range(2):  # eager after the export, then the program: both real results
        want = eager(x)
        assert type(want) is torch.Tensor
        torch.testing.assert_close(ep.module()(x), want)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(4))


def test_torch_export_leaves_fake_tensors_in_such_a_cache():
    _TABLES.clear()
    torch.export.export(UsesCaches("dict"), (torch.randn(3),))
    assert any(type(v) is not torch.Tensor for v in _TABLES.values())
    _TABLES.clear()


_SWAPPED: object = {}


def _doubled(x):
    return x * 2


def test_a_module_name_rebound_from_a_container_to_none_between_exports():
    """A module-level name held a dict at one export and ``None`` at the next (the
    namespace the same size): the export no longer fails asking ``None`` for its cache
    size."""
    global _SWAPPED
    st.export(_doubled, (torch.randn(2),))
    _SWAPPED = None
    try:
        st.export(_doubled, (torch.randn(2),))
    finally:
        _SWAPPED = {}


_LAST_ROWS = None


class _Warms(torch.nn.Module):
    """Warmed by its first call (``mode`` "cold" -> "warm"); once warm, keeps its input's
    row count in a module global."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "cold"

    def forward(self, x):
        global _LAST_ROWS
        if self.mode == "warm":
            _LAST_ROWS = x.shape[0]
        self.mode = "warm"
        return x * 2


def test_a_global_set_only_by_a_retrace_holds_no_traced_value_after() -> None:
    """The export skips its last look at the module namespaces where it found them as
    they were and no trace ran since (on any thread): a trace made after that look (here
    the retrace with ``self.mode`` at its new value, which sets a global to a traced size,
    watched by its own look too) leaves the global put back."""
    global _LAST_ROWS
    _LAST_ROWS = None
    m = _Warms()
    n = st.Dim("n", min=1, max=64)
    for _ in range(2):
        ep = st.export(m, (torch.randn(6, 3),), dynamic_shapes={"x": {0: n}})
        assert _LAST_ROWS is None and m.mode == "cold"
        x = torch.randn(4, 3)
        torch.testing.assert_close(ep.module()(x), x * 2)
