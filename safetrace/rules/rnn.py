"""Shape rules of recurrent layers (lstm, gru, rnn_tanh, rnn_relu) and their cells.

At the ATen level the layers take a batched 3-d input (seq, N, I) (or (N, seq, I) with
batch_first); nn.RNN/LSTM/GRU add the batch dim of unbatched inputs before calling them.
The params list holds, per layer and direction, w_ih (G*H, in), w_hh (G*H, H_out), then
b_ih, b_hh with biases, then w_hr (P, H) for an LSTM with projections (G = 4 for LSTM,
3 for GRU, 1 for plain RNNs).  The checks follow the native kernels (the oneDNN CPU path
skips some of them and computes garbage instead).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, every
from safetrace.rules.registry import rule

aten = torch.ops.aten


def check_dtypes(op: str, input: TensorMeta, tensors: Sequence[TensorMeta | None]) -> None:
    for t in tensors:
        if t is not None:
            check(t.dtype == input.dtype, op, f"mat1 and mat2 must have the same dtype, but got "
                                              f"{input.dtype} and {t.dtype}")


def check_hidden(op: str, hx: TensorMeta, expected: tuple, name: str) -> None:
    check(hx.ndim == len(expected) and every(a == b for a, b in zip(hx.shape, expected)),
          op,
          f"Expected hidden {name} size {list(expected)}, got {list(hx.shape)}")


def rnn_layers(op: str, gates: int, input: TensorMeta, hx: Sequence[TensorMeta],
               params: Sequence[TensorMeta], has_biases: bool, num_layers: int,
               bidirectional: bool, batch_first: bool) -> tuple:
    """Shared by all layer ops: returns (output, h_n[, c_n])."""
    lstm = gates == 4
    check(input.ndim == 3, op, f"Dimension out of range: expected a 3-d input (seq, batch, "
                               f"feature), got {list(input.shape)}")
    seq, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    check(seq > 0, op, "Expected sequence length to be larger than 0 in RNN")
    dirs = 2 if bidirectional else 1
    h0 = hx[0]
    check(h0.ndim == 3, op, f"Expected a 3-d hidden state, got {list(h0.shape)}")
    h_out = h0.shape[2]
    hidden = hx[1].shape[2] if lstm else h_out
    proj = lstm and hidden is not h_out and hidden != h_out
    stride = (4 if has_biases else 2) + (1 if proj else 0)
    check(len(params) == stride * num_layers * dirs, op,
          f"got an incorrect number of RNN parameters: {len(params)}, expected "
          f"{stride * num_layers * dirs}")
    check_dtypes(op, input, list(params) + list(hx))
    in_size = input.shape[2]
    for layer in range(num_layers):
        for d in range(dirs):
            group = params[(layer * dirs + d) * stride:(layer * dirs + d + 1) * stride]
            w_ih, w_hh = group[0], group[1]
            expect_in = in_size if layer == 0 else dirs * h_out
            check(w_ih.ndim == 2 and w_ih.shape[0] == gates * hidden
                  and w_ih.shape[1] == expect_in, op,
                  f"layer {layer}: w_ih of shape {list(w_ih.shape)}, expected "
                  f"[{gates * hidden}, {expect_in}] (input has inconsistent input_size)")
            check(w_hh.ndim == 2 and w_hh.shape[0] == gates * hidden
                  and w_hh.shape[1] == h_out, op,
                  f"layer {layer}: w_hh of shape {list(w_hh.shape)}, expected "
                  f"[{gates * hidden}, {h_out}]")
            if has_biases:
                for b in group[2:4]:
                    check(b.ndim == 1 and b.shape[0] == gates * hidden, op,
                          f"layer {layer}: bias of shape {list(b.shape)}, expected "
                          f"[{gates * hidden}]")
            if proj:
                w_hr = group[stride - 1]
                check(w_hr.ndim == 2 and w_hr.shape[0] == h_out and w_hr.shape[1] == hidden,
                      op, f"layer {layer}: w_hr of shape {list(w_hr.shape)}, expected "
                          f"[{h_out}, {hidden}]")
    check_hidden(op, h0, (dirs * num_layers, batch, h_out), "h0")
    out_shape = (batch, seq, dirs * h_out) if batch_first else (seq, batch, dirs * h_out)
    output = input.like(out_shape)
    h_n = h0.like((dirs * num_layers, batch, h_out), input.dtype)
    if not lstm:
        return output, h_n
    check_hidden(op, hx[1], (dirs * num_layers, batch, hidden), "c0")
    return output, h_n, h0.like((dirs * num_layers, batch, hidden), input.dtype)


@rule(aten.lstm.input)
def lstm(input: TensorMeta, hx: Sequence[TensorMeta], params: Sequence[TensorMeta],
         has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
         batch_first: bool) -> tuple:
    """(output (seq, N, D*H_out), h_n (D*layers, N, H_out), c_n (D*layers, N, H))."""
    check(len(hx) == 2, "aten.lstm", "lstm expects two hidden states")
    return rnn_layers("aten.lstm", 4, input, hx, params, has_biases, num_layers,
                      bidirectional, batch_first)


@rule(aten.gru.input)
def gru(input: TensorMeta, hx: TensorMeta, params: Sequence[TensorMeta], has_biases: bool,
        num_layers: int, dropout: float, train: bool, bidirectional: bool,
        batch_first: bool) -> tuple:
    """(output (seq, N, D*H), h_n (D*layers, N, H))."""
    return rnn_layers("aten.gru", 3, input, [hx], params, has_biases, num_layers,
                      bidirectional, batch_first)


@rule(aten.rnn_tanh.input)
def rnn_tanh(input: TensorMeta, hx: TensorMeta, params: Sequence[TensorMeta],
             has_biases: bool, num_layers: int, dropout: float, train: bool,
             bidirectional: bool, batch_first: bool) -> tuple:
    """(output (seq, N, D*H), h_n (D*layers, N, H))."""
    return rnn_layers("aten.rnn_tanh", 1, input, [hx], params, has_biases, num_layers,
                      bidirectional, batch_first)


@rule(aten.rnn_relu.input)
def rnn_relu(input: TensorMeta, hx: TensorMeta, params: Sequence[TensorMeta],
             has_biases: bool, num_layers: int, dropout: float, train: bool,
             bidirectional: bool, batch_first: bool) -> tuple:
    """(output (seq, N, D*H), h_n (D*layers, N, H))."""
    return rnn_layers("aten.rnn_relu", 1, input, [hx], params, has_biases, num_layers,
                      bidirectional, batch_first)


def cell(op: str, gates: int, input: TensorMeta, hx: Sequence[TensorMeta], w_ih: TensorMeta,
         w_hh: TensorMeta, b_ih: TensorMeta | None, b_hh: TensorMeta | None) -> Any:
    """Cells take (N, I) and hidden states (N, H); H is w_hh's second dim."""
    check(input.ndim == 2, op, f"Dimension out of range: expected a 2-d input (batch, "
                               f"feature), got {list(input.shape)}")
    check(w_ih.ndim == 2 and w_hh.ndim == 2, op, "weights must be 2-d")
    check(input.shape[1] == w_ih.shape[1], op, f"input has inconsistent input_size: got "
                                               f"{input.shape[1]} expected {w_ih.shape[1]}")
    hidden = w_hh.shape[1]
    check(w_ih.shape[0] == gates * hidden and w_hh.shape[0] == gates * hidden, op,
          f"weights of shapes {list(w_ih.shape)} and {list(w_hh.shape)} do not have "
          f"{gates} * hidden_size = {gates * hidden} rows")
    for b in (b_ih, b_hh):
        if b is not None:
            check(b.ndim == 1 and b.shape[0] == gates * hidden, op,
                  f"bias of shape {list(b.shape)}, expected [{gates * hidden}]")
    for i, h in enumerate(hx):
        check(h.ndim == 2 and input.shape[0] == h.shape[0], op,
              f"Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
              f"{h.shape[0] if h.ndim else None}")
        check(h.shape[1] == hidden, op, f"hidden{i} has inconsistent hidden_size: got "
                                        f"{h.shape[1]}, expected {hidden}")
    check_dtypes(op, input, [w_ih, w_hh, b_ih, b_hh, *hx])
    return input.like((input.shape[0], hidden))


@rule(aten.lstm_cell.default)
def lstm_cell(input: TensorMeta, hx: Sequence[TensorMeta], w_ih: TensorMeta, w_hh: TensorMeta,
              b_ih: TensorMeta | None = None, b_hh: TensorMeta | None = None) -> tuple:
    """(h (N, H), c (N, H))."""
    check(len(hx) == 2, "aten.lstm_cell", "lstm_cell expects two hidden states")
    out = cell("aten.lstm_cell", 4, input, hx, w_ih, w_hh, b_ih, b_hh)
    return out, out


@rule(aten.gru_cell.default)
def gru_cell(input: TensorMeta, hx: TensorMeta, w_ih: TensorMeta, w_hh: TensorMeta,
             b_ih: TensorMeta | None = None, b_hh: TensorMeta | None = None) -> TensorMeta:
    """h (N, H)."""
    return cell("aten.gru_cell", 3, input, [hx], w_ih, w_hh, b_ih, b_hh)


@rule(aten.rnn_tanh_cell.default)
def rnn_tanh_cell(input: TensorMeta, hx: TensorMeta, w_ih: TensorMeta, w_hh: TensorMeta,
                  b_ih: TensorMeta | None = None, b_hh: TensorMeta | None = None) -> TensorMeta:
    """h (N, H)."""
    return cell("aten.rnn_tanh_cell", 1, input, [hx], w_ih, w_hh, b_ih, b_hh)


@rule(aten.rnn_relu_cell.default)
def rnn_relu_cell(input: TensorMeta, hx: TensorMeta, w_ih: TensorMeta, w_hh: TensorMeta,
                  b_ih: TensorMeta | None = None, b_hh: TensorMeta | None = None) -> TensorMeta:
    """h (N, H)."""
    return cell("aten.rnn_relu_cell", 1, input, [hx], w_ih, w_hh, b_ih, b_hh)
