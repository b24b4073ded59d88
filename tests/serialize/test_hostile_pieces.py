"""Splits into pieces whose count is the file's (session 38, load38).

``unbind``, ``split``, ``chunk``, ``tensor_split``, ``hsplit`` / ``vsplit`` / ``dsplit``
make one tensor per piece.  A file chooses the count: a constant (``chunk(x, 2**30)`` of
a zero-size dim made 2**30 tensors, a MemoryError after minutes), or the size of a
zero-byte tensor it makes (``unbind`` of a ``[2**25, 0]`` ``new_zeros``: 2**25 tensors).
A constant count over ``max_repeat`` is refused at load; a count read from the operand's
size at call is checked before the kernel runs.  And ``split_with_sizes``'s shape rule
built its error message, listing every size, for each size it checked (quadratic: 60,001
sizes took minutes to load; ``new_zeros``' of 60,000 dims likewise)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError, RuntimeAssertionError
from tests import child
from tests.serialize import surgery
from tests.serialize.hostile_static import saved_abs

ROOT = Path(__file__).resolve().parents[2]
X = {"node": "x"}


def _call(name: str, target: str, *args: object) -> dict:
    return {"name": name, "op": "call_function", "target": target, "args": list(args)}


def _split(target: str, *args: object, zeros: list | None = None) -> bytes:
    """``Abs``'s program at ``[8, 8]``, its call replaced by ``target(t, *args)[0]``, where
    ``t`` is ``x`` or ``x.new_zeros(zeros)``."""
    nodes = []
    if zeros is not None:
        nodes.append(_call("z", "torch.ops.aten.new_zeros.default", X, {"list": zeros}))
    t = {"node": "z"} if zeros is not None else X
    nodes += [_call("parts", f"torch.ops.aten.{target}", t, *args),
              _call("y", "operator.getitem", {"node": "parts"}, 0)]
    return surgery.calls_replaced(saved_abs(8, 8), *nodes)


@pytest.mark.parametrize("target,args,zeros", [
    ("chunk.default", (1 << 30,), [0, 8]),
    ("unsafe_chunk.default", (100_000,), None),
    ("tensor_split.sections", (1 << 30,), None),
    ("vsplit.int", (1 << 20,), [1 << 20, 0]),
])
def test_a_constant_count_of_pieces_over_the_budget_is_refused_at_load(target, args, zeros):
    # (before: loaded; a call made that many tensors: a MemoryError or minutes)
    with pytest.raises(LoadError, match="max_repeat"):
        st.load(io.BytesIO(_split(target, *args, zeros=zeros)))


@pytest.mark.parametrize("target,args,zeros", [
    ("unbind.int", (0,), [5000, 0]),
    ("split.Tensor", (1,), [5000, 0]),
    ("unsafe_split.Tensor", (1, 0), [5000, 0]),
    ("split_copy.Tensor", (1,), [5000, 0]),
    ("unbind_copy.int", (), [5000, 0]),
])
def test_a_count_of_pieces_from_a_size_is_checked_before_the_kernel(target, args, zeros):
    # 5000 pieces of a zero-byte tensor, the budget 1000 (by default 65,536 against
    # 2**25 pieces: minutes and tens of GiB of tensors before)
    ep = st.load(io.BytesIO(_split(target, *args, zeros=zeros)), budgets={"max_repeat": 1000})
    with pytest.raises((RuntimeAssertionError, LoadError), match="5000 pieces"):
        ep.module()(torch.randn(8, 8))


def _rows_split() -> bytes:
    """``x[:1] * 2`` over ``Dim("n", max=4096)``, its slice written ``x.split(1)[0]`` (the
    exporter records a slice; a file may say split)."""
    class Rows(torch.nn.Module):
        def forward(self, x):
            return x[:1] * 2

    def edit(doc: dict) -> None:
        at = next(i for i, n in enumerate(doc["nodes"]) if "slice" in n.get("target", ""))
        sliced = doc["nodes"][at]
        doc["nodes"][at:at + 1] = [
            _call("parts", "torch.ops.aten.split.Tensor", X, 1),
            dict(_call(sliced["name"], "operator.getitem", {"node": "parts"}, 0),
                 meta=sliced.get("meta", {}))]

    blob = surgery.saved(Rows(), (torch.randn(5, 3),),
                         dynamic_shapes={"x": {0: st.Dim("n", min=1, max=4096)}})
    return surgery.edited(blob, edit)


def test_a_count_of_pieces_from_an_input_size_is_checked_at_call():
    loaded = st.load(io.BytesIO(_rows_split()), budgets={"max_repeat": 100})
    for n in (1, 2, 100):  # within the budget: as eager
        x = torch.randn(n, 3)
        torch.testing.assert_close(loaded.module()(x), x.split(1)[0] * 2)
    with pytest.raises(RuntimeAssertionError, match="101 pieces"):
        loaded.module()(torch.randn(101, 3))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(0, 3))


def test_splits_within_the_budget_load_and_match_eager():
    class Parts(torch.nn.Module):
        def forward(self, x):
            a, b, c = x.chunk(3, 1)
            return a + c, x.unbind(1)[-1], x.tensor_split(4, 1)[0], b

    ep = st.export(Parts(), (torch.randn(4, 6),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=0, max=64)}})
    blob = io.BytesIO()
    st.save(ep, blob)
    loaded = st.load(io.BytesIO(blob.getvalue())).module()
    for n in (4, 9):
        x = torch.randn(n, 6)
        for got, want in zip(loaded(x), Parts()(x)):
            torch.testing.assert_close(got, want)


_MANY_SIZES = """
import io, sys
import torch
import safetrace as st
from tests.serialize import surgery
from tests.serialize.hostile_static import saved_abs
n, how = int(sys.argv[1]), sys.argv[2]
if how == "split":
    parts = {"name": "parts", "op": "call_function",
             "target": "torch.ops.aten.split_with_sizes.default",
             "args": [{"node": "x"}, {"list": [0] * n + [8]}]}
    nodes = [parts, {"name": "y", "op": "call_function", "target": "operator.getitem",
                     "args": [{"node": "parts"}, 0]}]
else:
    nodes = [{"name": "y", "op": "call_function", "target": "torch.ops.aten.new_zeros.default",
              "args": [{"node": "x"}, {"list": [1] * n}]}]
ep = st.load(io.BytesIO(surgery.calls_replaced(saved_abs(8, 8), *nodes)))
print(tuple(ep.module()(torch.randn(8, 8)).shape)[:2])
"""


@pytest.mark.parametrize("how,shape", [("split", "(0, 8)"), ("zeros", "(1, 1)")])
def test_many_sizes_load_in_linear_time(how, shape):
    # 40,000 sizes (within max_repeat) of split_with_sizes, or of new_zeros (40,000 dims:
    # torch makes it): before, the shape rules built their message of every size for each
    # size checked, 4 s at 10,000 and 17 s at 20,000 on the 2-core VM (so past a minute
    # here); now under a second
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = child.run(["-c", _MANY_SIZES, "40000", how], text=True, timeout=60, cwd=ROOT,
                    env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith(shape)
