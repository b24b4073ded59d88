"""Samples of recurrent layers and cells (rnn.py)."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
f64 = torch.float64


def params(i, h, layers, dirs, gates, bias=True, proj=0, dtype=torch.float32):
    """The flat params list of an RNN module, as ATen receives it."""
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            inp = i if layer == 0 else dirs * (proj or h)
            out += [T(gates * h, inp, dtype=dtype), T(gates * h, proj or h, dtype=dtype)]
            if bias:
                out += [T(gates * h, dtype=dtype), T(gates * h, dtype=dtype)]
            if proj:
                out += [T(proj, h, dtype=dtype)]
    return out


LSTM, GRU, TANH, RELU = aten.lstm.input, aten.gru.input, aten.rnn_tanh.input, aten.rnn_relu.input

SAMPLES = [
    Sample(LSTM, (T(5, 2, 4), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(2, 5, 4), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, True)),
    Sample(LSTM, (T(5, 2, 4), [T(4, 2, 6), T(4, 2, 6)], params(4, 6, 2, 2, 4), True, 2, 0.0,
                  False, True, False)),
    Sample(LSTM, (T(5, 2, 4), [T(4, 2, 3), T(4, 2, 6)], params(4, 6, 2, 2, 4, proj=3), True,
                  2, 0.0, False, True, False)),
    Sample(LSTM, (T(2, 5, 4), [T(1, 2, 3), T(1, 2, 6)], params(4, 6, 1, 1, 4, False, 3),
                  False, 1, 0.0, False, False, True)),
    Sample(LSTM, (T(5, 2, 4), [T(2, 2, 6), T(2, 2, 6)], params(4, 6, 2, 1, 4, False), False,
                  2, 0.0, False, False, False)),
    Sample(LSTM, (T(5, 0, 4), [T(1, 0, 6), T(1, 0, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(3, 2, 4, dtype=f64), [T(1, 2, 6, dtype=f64), T(1, 2, 6, dtype=f64)],
                  params(4, 6, 1, 1, 4, dtype=f64), True, 1, 0.0, False, False, False)),
    Sample(GRU, (T(5, 2, 4), T(2, 2, 6), params(4, 6, 1, 2, 3), True, 1, 0.0, False, True,
                 False)),
    Sample(GRU, (T(2, 5, 4), T(3, 2, 6), params(4, 6, 3, 1, 3), True, 3, 0.0, False, False,
                 True)),
    Sample(GRU, (T(1, 1, 1), T(4, 1, 2), params(1, 2, 2, 2, 3, False), False, 2, 0.5, True,
                 True, False)),
    Sample(TANH, (T(5, 2, 4), T(2, 2, 6), params(4, 6, 2, 1, 1), True, 2, 0.0, False, False,
                  False)),
    Sample(RELU, (T(2, 5, 4), T(2, 2, 6), params(4, 6, 1, 2, 1, False), False, 1, 0.0, False,
                  True, True)),
    Sample(aten.lstm_cell.default, (T(2, 4), [T(2, 6), T(2, 6)], T(24, 4), T(24, 6), T(24),
                                    T(24))),
    Sample(aten.lstm_cell.default, (T(0, 4), [T(0, 6), T(0, 6)], T(24, 4), T(24, 6))),
    Sample(aten.gru_cell.default, (T(2, 4), T(2, 6), T(18, 4), T(18, 6), T(18), T(18))),
    Sample(aten.gru_cell.default, (T(3, 1, dtype=f64), T(3, 2, dtype=f64), T(6, 1, dtype=f64),
                                   T(6, 2, dtype=f64))),
    Sample(aten.rnn_tanh_cell.default, (T(2, 4), T(2, 6), T(6, 4), T(6, 6), T(6), T(6))),
    Sample(aten.rnn_relu_cell.default, (T(0, 4), T(0, 6), T(6, 4), T(6, 6))),
]

ERROR_SAMPLES = [
    Sample(LSTM, (T(5, 4), [T(1, 6), T(1, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0, False,
                  False, False)),
    Sample(LSTM, (T(5, 2, 5), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(5, 2, 4), [T(1, 3, 6), T(1, 3, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(5, 2, 4), [T(2, 2, 6), T(2, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(5, 2, 4), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4)[:3], True, 1,
                  0.0, False, False, False)),
    Sample(LSTM, (T(5, 2, 4), [T(1, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0, False, False,
                  False)),
    Sample(LSTM, (T(0, 2, 4), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4), True, 1, 0.0,
                  False, False, False)),
    Sample(LSTM, (T(5, 2, 4, dtype=f64), [T(1, 2, 6), T(1, 2, 6)], params(4, 6, 1, 1, 4), True,
                  1, 0.0, False, False, False), device="cpu"),
    Sample(GRU, (T(5, 4), T(1, 6), params(4, 6, 1, 1, 3), True, 1, 0.0, False, False, False)),
    Sample(GRU, (T(5, 2, 4), T(1, 2, 7), params(4, 6, 1, 1, 3), True, 1, 0.0, False, False,
                 False)),
    Sample(aten.lstm_cell.default, (T(4), [T(6), T(6)], T(24, 4), T(24, 6))),
    Sample(aten.lstm_cell.default, (T(2, 5), [T(2, 6), T(2, 6)], T(24, 4), T(24, 6))),
    Sample(aten.lstm_cell.default, (T(2, 4), [T(3, 6), T(2, 6)], T(24, 4), T(24, 6))),
    Sample(aten.gru_cell.default, (T(4), T(6), T(18, 4), T(18, 6))),
    Sample(aten.gru_cell.default, (T(2, 4), T(2, 7), T(18, 4), T(18, 6))),
    Sample(aten.rnn_relu_cell.default, (T(2, 4), T(2, 6), T(6, 5), T(6, 6))),
]
