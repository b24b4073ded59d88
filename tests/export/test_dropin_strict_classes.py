"""``strict=True`` (issue 21; torch's test_sdpa_gqa, test_real_tensor_size_mismatch and
test_real_tensor_alias_dtype_mismatch in their strict variants): where an op raises while
tracing (a call eager rejects, or a custom op whose fake kernel its kernel contradicts),
torch.export's strict trace raises dynamo's ``TorchRuntimeError``.  st.export traces the
same way either way, and with ``strict=True`` its error is an instance of that class too
(also after pickling), its own kind and eager's class kept; without it, nothing changes."""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.exc import TorchRuntimeError

import safetrace as st


class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def _heads(q_heads: int) -> tuple:
    return torch.randn(1, q_heads, 4, 8), torch.randn(1, 8, 4, 8), torch.randn(1, 8, 4, 8)


@torch.library.custom_op("st_strict::transposed", mutates_args={})
def _transposed(a: torch.Tensor) -> torch.Tensor:
    return a + 1


@_transposed.register_fake
def _(a):
    m, n = a.shape
    return torch.empty(n, m)  # (wrong where m != n)


class Custom(nn.Module):
    def forward(self, a):
        return torch.ops.st_strict.transposed(a)


def test_a_call_eager_rejects_raises_dynamos_class_under_strict() -> None:
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        Attention()(*_heads(33))  # eager's own
    with pytest.raises(TorchRuntimeError, match="must divide the number of heads") as got:
        st.export(Attention(), _heads(33), strict=True)
    assert isinstance(got.value, st.OpShapeError) and isinstance(got.value, RuntimeError)
    again = pickle.loads(pickle.dumps(got.value))
    assert isinstance(again, TorchRuntimeError) and isinstance(again, st.OpShapeError)
    for strict in (False, None):
        with pytest.raises(st.OpShapeError) as plain:
            st.export(Attention(), _heads(33), strict=strict)
        assert not isinstance(plain.value, TorchRuntimeError)
    # (a good call: exported as without strict=; the batch dynamic, checked at 0, 1 and 3:
    # at batch 0 eager returns zeros without attending, the shape the program computes)
    batch = {0: torch.export.Dim.DYNAMIC}
    ep = st.export(Attention(), _heads(32), strict=True, dynamic_shapes=(batch,) * 3)
    for n in (0, 1, 3):
        args = tuple(t.expand(n, -1, -1, -1).clone() for t in _heads(32))
        torch.testing.assert_close(ep.module()(*args), Attention()(*args))
        torch.testing.assert_close(ep.to_torch().module()(*args), Attention()(*args))
    # a query batch of 1 over empty keys and values: eager's zeros have the query's batch,
    # attending would broadcast to 0; the program refuses it before computing
    q, k, v = _heads(32)
    with pytest.raises(st.InputMismatchError):
        ep.module()(q, k[:0], v[:0])
    assert Attention()(q, k[:0], v[:0]).shape[0] == 1
    with pytest.raises(st.InputMismatchError):
        ep.module()(*_heads(16))


def test_a_fake_kernel_found_wrong_raises_dynamos_class_under_strict() -> None:
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        with pytest.raises(TorchRuntimeError, match="fake kernel") as got:
            st.export(Custom(), (torch.randn(4, 8),), strict=True)
        assert isinstance(got.value, torch._subclasses.fake_tensor.MetadataMismatchError)
        with pytest.raises(st.ExportError) as plain:
            st.export(Custom(), (torch.randn(4, 8),))
        assert not isinstance(plain.value, TorchRuntimeError)


@pytest.mark.slow  # (torch's strict trace: dynamo)
def test_torch_strict_raises_the_same_class() -> None:
    with pytest.raises(TorchRuntimeError, match="must divide the number of heads"):
        torch.export.export(Attention(), _heads(33), strict=True)
    with pytest.raises(TorchRuntimeError, match="must divide the number of heads"):
        st.export(Attention(), _heads(33), strict=True)


@torch.library.custom_op("st_strict::returns_input", mutates_args={})
def _returns_input(x: torch.Tensor) -> torch.Tensor:
    return x  # (torch's custom op machinery refuses an output that aliases an input)


class ReturnsInput(nn.Module):
    def forward(self, x):
        return torch.ops.st_strict.returns_input(x) * 2


def test_a_custom_op_kernels_own_error_is_dynamos_class_under_strict() -> None:
    """No fake kernel: the kernel runs on the example (real-tensor propagation) and raises
    eager's RuntimeError; under strict=True that error is dynamo's class too, as torch's
    (test_real_tensor_errors_on_aliasing_custom_op), and pickles as such."""
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        with pytest.raises(TorchRuntimeError, match="must not also be an input") as got:
            st.export(ReturnsInput(), (torch.randn(3),), strict=True)
        assert isinstance(pickle.loads(pickle.dumps(got.value)), TorchRuntimeError)
        with pytest.raises(RuntimeError, match="must not also be an input") as plain:
            st.export(ReturnsInput(), (torch.randn(3),))
        assert not isinstance(plain.value, TorchRuntimeError)
