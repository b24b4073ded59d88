"""Operands a kernel trusts are checked before a loaded graph calls it (session 24):
a strided view stays within the tensor it views; ctc_loss's targets are classes.

``as_strided`` takes its offset into the storage: on a tensor the caller sliced from a
larger one it viewed, and through ``add_`` wrote, the caller's memory around it (a file
viewing ``x`` as 8 elements from offset 0, called with ``big[:4]``, read and incremented
all of ``big``).  A loaded program now checks each such view before it runs.
"""

from __future__ import annotations

import functools
import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import parts, saved_abs
from tests.serialize import surgery


def _file(*nodes: dict) -> bytes:
    return surgery.calls_replaced(saved_abs(4), *nodes)


def _call(name: str, target: str, *args) -> dict:
    return {"name": name, "op": "call_function", "target": f"torch.ops.aten.{target}",
            "args": list(args)}


def _strided(size: int, offset: int, write: bool) -> bytes:
    nodes = [_call("v", "as_strided.default", {"node": "x"}, {"list": [size]}, {"list": [1]},
                   offset)]
    if write:
        nodes.append(_call("w", "add_.Tensor", {"node": "v"}, 1))
    nodes.append(_call("y", "clone.default", {"node": nodes[-1]["name"]}))
    return _file(*nodes)


@pytest.mark.parametrize("size,offset,write", [(8, 0, False), (4, 4, False), (8, 0, True)],
                         ids=["read-past", "read-after", "write-past"])
def test_a_view_past_the_given_tensor_is_refused_at_call(size, offset, write):
    mod = st.load(io.BytesIO(_strided(size, offset, write))).module()
    big = torch.arange(8.0)
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'v' \(aten.as_strided\) would "
                                                       r"view storage elements"):
        mod(big[:4])
    torch.testing.assert_close(big, torch.arange(8.0))  # (the caller's memory, unwritten)


def test_a_view_within_the_tensor_runs_as_eager():
    mod = st.load(io.BytesIO(_strided(2, 3, True))).module()
    big = torch.arange(8.0)
    x = big[2:6]  # (a view of the caller's from storage element 2: the program's, 3..4)
    torch.testing.assert_close(mod(x), torch.tensor([4.0, 5.0]))
    torch.testing.assert_close(big, torch.tensor([0.0, 1.0, 2.0, 4.0, 5.0, 5.0, 6.0, 7.0]))


def test_a_view_of_a_tensor_with_gaps_is_refused_and_a_copy_runs():
    mod = st.load(io.BytesIO(_strided(2, 0, False))).module()
    x = torch.arange(8.0)[::2]
    with pytest.raises(st.RuntimeAssertionError, match="with gaps"):
        mod(x)
    torch.testing.assert_close(mod(x.contiguous()), torch.tensor([0.0, 2.0]))


def test_the_checks_are_not_saved():
    ep = st.load(io.BytesIO(_strided(2, 0, False)))
    doc, _ = parts(surgery.saved(ep))
    assert [n["name"] for n in doc["nodes"] if n["op"] == "call_function"] == ["v", "y"]


class CTC(torch.nn.Module):
    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return torch.nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths)


def _ctc_args(targets: list) -> tuple:
    return (torch.randn(5, 1, 4).log_softmax(2), torch.tensor([targets]), torch.tensor([5]),
            torch.tensor([2]))


@functools.lru_cache(maxsize=1)
def _ctc_loaded() -> st.ExportedProgram:
    buf = io.BytesIO()
    st.save(st.export(CTC(), _ctc_args([1, 2])), buf)
    return st.load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("bad", [10**9, -5, 4], ids=["huge", "negative", "classes"])
def test_ctc_loss_targets_outside_the_classes_are_refused_at_call(bad):
    """torch's ctc_loss kernel reads log_probs at each target unchecked: 10**9 crashed the
    process (SIGSEGV), -5 and 4 read memory around log_probs."""
    mod = _ctc_loaded().module()
    with pytest.raises(st.RuntimeAssertionError, match=r"ctc_loss.*target class outside "
                                                       r"\[0, 4\)"):
        mod(*_ctc_args([1, bad]))


def test_ctc_loss_padding_past_the_target_lengths_is_not_read():
    log_probs, _, input_lengths, _ = _ctc_args([1, 2])
    padded = (log_probs, torch.tensor([[3, -1]]), input_lengths, torch.tensor([1]))
    torch.testing.assert_close(_ctc_loaded().module()(*padded), CTC()(*padded))


def test_an_as_strided_scatter_view_past_the_given_tensor_is_refused_at_call():
    """as_strided_scatter writes its view into a copy of the whole storage of its input
    (the caller's buffer around it), at an offset into that storage: held to as_strided's
    rule (session 25)."""
    def blob(offset: int) -> bytes:
        return _file(_call("y", "as_strided_scatter.default", {"node": "x"},
                           {"node": "x"}, {"list": [4]}, {"list": [1]}, offset))

    big = torch.arange(8.0)
    with pytest.raises(st.RuntimeAssertionError, match=r"node 'y' \(aten.as_strided_scatter\) "
                                                       r"would view storage elements 3..6"):
        st.load(io.BytesIO(blob(3))).module()(big[2:6])
    torch.testing.assert_close(st.load(io.BytesIO(blob(0))).module()(big[:4]), big[:4])
    torch.testing.assert_close(big, torch.arange(8.0))


class Bags(torch.nn.Module):
    def __init__(self, last: bool = False):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(6, 3))
        self.last = last

    def forward(self, indices, offsets):
        return torch.nn.functional.embedding_bag(indices, self.weight, offsets, mode="sum",
                                                 include_last_offset=self.last)


@functools.lru_cache(maxsize=2)
def _bags_loaded(last: bool) -> tuple:
    model = Bags(last)
    args = (torch.tensor([0, 1, 2, 3]), torch.tensor([0, 2, 3, 4] if last else [0, 2, 3]))
    buf = io.BytesIO()
    st.save(st.export(model, args), buf)
    return model, st.load(io.BytesIO(buf.getvalue())).module()


@pytest.mark.parametrize("last", [False, True], ids=["bags", "include_last_offset"])
@pytest.mark.parametrize("offsets", [[0, -10**9, 2], [0, -5, 2], [0, 3, 1]],
                         ids=["huge", "negative", "decreasing"])
def test_embedding_bag_offsets_out_of_order_are_refused_at_call(last, offsets):
    """torch checks only the first and the last offset: [0, -10**9, 2] crashed the process
    (SIGSEGV), [0, -5, 2] read memory before the indices (with include_last_offset, silently:
    a result of values the weight does not hold)."""
    model, mod = _bags_loaded(last)
    indices = torch.tensor([0, 1, 2, 3])
    if last:
        offsets = offsets + [4]
    with pytest.raises(st.RuntimeAssertionError, match=r"aten.embedding_bag\) would run on "
                                                       r"offsets .* not non-decreasing within "
                                                       r"\[0, 4\]"):
        mod(indices, torch.tensor(offsets))
    good = torch.tensor([0, 0, 3, 4] if last else [0, 0, 3])
    torch.testing.assert_close(mod(indices, good), model(indices, good))


def test_embedding_bag_of_2d_indices_with_offsets_is_refused_at_load():
    """The kernel reads 2-d indices flat when offsets are given (the functional API builds
    them itself): [0, -10**9] crashed the process there too.  The shape rule refuses such
    a call at load; where the indices' shape is known only at call, the operand check
    reads them flat (``operand_checks._bags``)."""
    nodes = [_call("w", "ones.default", {"list": [6, 3]}),
             _call("r", "arange.start_step", 0, 4, 1),
             _call("i", "view.default", {"node": "r"}, {"list": [2, 2]}),
             _call("o", "arange.start_step", 0, -2 * 10**9, -10**9),
             _call("b", "embedding_bag.default", {"node": "w"}, {"node": "i"}, {"node": "o"}),
             {"name": "y", "op": "call_function", "target": "operator.getitem",
              "args": [{"node": "b"}, 0]}]
    with pytest.raises(st.LoadError, match=r"node 'b': .* input has to be a 1D Tensor"):
        st.load(io.BytesIO(_file(*nodes)))
