"""Shared checks for exported programs: numerics against eager, early rejections."""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Iterable, Iterator

import pytest
import torch

import safetrace as st


def assert_close(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), f"{type(b)} is not a tensor"
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_close(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_close(a[k], b[k])
    else:
        assert a == b


def matches_eager(ep: st.ExportedProgram, model: Any, args: tuple, kwargs: dict | None = None):
    """Run eager and the exported program on the same inputs; compare outputs."""
    kwargs = kwargs or {}
    expected = model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    got = ep.module()(*args, **kwargs)
    assert_close(expected, got)
    return got


def rejects(ep: st.ExportedProgram, args: tuple, kwargs: dict | None = None,
            match: str | None = None) -> str:
    """The program refuses these inputs before computing anything."""
    with pytest.raises(st.InputMismatchError, match=match) as info:
        ep.module()(*args, **(kwargs or {}))
    return str(info.value)


def targets(ep: st.ExportedProgram) -> list[str]:
    """Names of the ATen overloads called by the graph, in order."""
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def constants_in_graph(ep: st.ExportedProgram) -> list:
    out = []
    for n in ep.graph.nodes:
        if n.op == "call_function":
            for a in list(n.args) + list(n.kwargs.values()):
                if isinstance(a, (int, float)) and not isinstance(a, bool):
                    out.append(a)
    return out


def placeholders(ep: st.ExportedProgram) -> list[str]:
    return [n.name for n in ep.graph.nodes if n.op == "placeholder"]


def unchanged(before: Iterable[torch.Tensor], after: Iterable[torch.Tensor]) -> bool:
    return all(torch.equal(a, b) for a, b in zip(before, after))


def same_in_threads(make: Any, rounds: int, threads: int = 2) -> None:
    """Run `make()` `rounds` times on each of `threads` threads started together; every
    result must equal one made before, serially (no exception, nothing else)."""
    import threading

    serial = make()
    results: dict[int, list] = {i: [] for i in range(threads)}
    barrier = threading.Barrier(threads)

    def worker(i: int) -> None:
        barrier.wait()
        for _ in range(rounds):
            try:
                results[i].append(make())
            except Exception as exc:  # noqa: BLE001 - reported below
                results[i].append(exc)

    started = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join(timeout=300)
    for i in range(threads):
        assert len(results[i]) == rounds
        for r in results[i]:
            assert not isinstance(r, Exception), repr(r)
            assert r == serial


@contextlib.contextmanager
def while_exporting(body: Any, started: Any, done: Any) -> Iterator[dict]:
    """Run `body(seen)` on a bystander thread once `started` is set (by a model's forward,
    in the middle of the export inside the ``with``), then set `done` (the forward waits on
    it); yields `seen`, what the bystander recorded.  An exception there fails the test."""
    import threading

    seen: dict = {}

    def bystander() -> None:
        assert started.wait(timeout=120)
        try:
            body(seen)
        except Exception as exc:  # noqa: BLE001 - reported below
            seen["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=bystander)
    t.start()
    try:
        yield seen
    finally:
        t.join(timeout=300)
    assert "error" not in seen, repr(seen.get("error"))
