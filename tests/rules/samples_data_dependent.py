"""Ops whose output sizes depend on data: the rule's ranges must admit torch's answer."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
B, L = torch.bool, torch.int64


def dd(op, *args, **kwargs):
    return Sample(op, args, kwargs, device="cpu", data_dependent=True)


SAMPLES = [
    dd(aten.item.default, T(dtype=L)),
    dd(aten.item.default, T(1, 1, dtype=L)),
    dd(aten.item.default, T(dtype=B)),
    dd(aten._local_scalar_dense.default, T(dtype=torch.int32)),
    dd(aten.nonzero.default, T(4, 3)),
    dd(aten.nonzero.default, T(0, 3)),
    dd(aten.argwhere.default, T(5)),
    dd(aten.masked_select.default, T(4, 3), T(3, dtype=B)),
    dd(aten.masked_select.default, T(1, 3), T(4, 1, dtype=B)),
    dd(aten._unique2.default, T(7, dtype=L, high=3), True, True, True),
    dd(aten._unique2.default, T(2, 3, dtype=L, high=3), False, False, False),
    dd(aten._unique.default, T(6, dtype=L, high=4), True, True),
    dd(aten.unique_consecutive.default, T(6, dtype=L, high=2), True, True),
    dd(aten.unique_consecutive.default, T(3, 4, dtype=L, high=2), False, False, 0),
    dd(aten.unique_dim.default, T(5, 2, dtype=L, high=2), 0, True, True, True),
    dd(aten.repeat_interleave.Tensor, T(4, dtype=L, high=3)),
    dd(aten.repeat_interleave.Tensor, T(4, dtype=L, high=3), output_size=None),
    dd(aten.repeat_interleave.self_Tensor, T(4, 2), T(4, dtype=L, high=3), 0),
    dd(aten.repeat_interleave.self_Tensor, T(2, 2), T(4, dtype=L, high=3)),
    dd(aten.bincount.default, T(6, dtype=L, high=5)),
    dd(aten.where.default, T(3, 4, dtype=B)),
    dd(aten.where.default, T(5)),
    dd(aten.bincount.default, T(6, dtype=L, high=5), T(6), 9),
    Sample(aten.nonzero_static.default, (T(4, 3),), {"size": 5}),
    Sample(aten.nonzero_static.default, (T(7),), {"size": 0, "fill_value": 2}),
    Sample(aten.multinomial.default, (T(5),), {"num_samples": 3}),
    Sample(aten.multinomial.default, (T(2, 5), 9, True)),
]

ERROR_SAMPLES = [
    Sample(aten.item.default, (T(2, dtype=L),), device="cpu"),
    Sample(aten.bincount.default, (T(2, 2, dtype=L),), device="cpu"),
    Sample(aten.nonzero_static.default, (T(4, 3),), {"size": -1}, device="cpu"),
    Sample(aten.multinomial.default, (T(2, 2, 5), 3)),
    Sample(aten.multinomial.default, (T(2, 5), 6), device="cpu"),
    Sample(aten.multinomial.default, (T(2, 5), 0, True), device="cpu"),
]
