"""Samples for padding: constant_pad_nd, pad (every mode), reflection/replication pads."""

import torch

from tests.rules.harness import Sample, T

aten = torch.ops.aten
L, B = torch.int64, torch.bool


def C(*args, **kwargs):
    """Run on CPU: meta padding kernels are laxer than the CPU ones for some inputs."""
    return Sample(*args, device="cpu", **kwargs)


S = C

SAMPLES = [
    S(aten.constant_pad_nd.default, (T(2, 3), [1, 2])),
    S(aten.constant_pad_nd.default, (T(2, 3), [1, 2, 0, 3])),
    S(aten.constant_pad_nd.default, (T(2, 3), [-2, -1])),
    S(aten.constant_pad_nd.default, (T(2, 3), [-1, 0, -1, 1])),
    S(aten.constant_pad_nd.default, (T(), [])),
    S(aten.constant_pad_nd.default, (T(2, 3), [])),
    S(aten.constant_pad_nd.default, (T(2, 3, dtype=L), [1, 1], 2.5)),
    S(aten.constant_pad_nd.default, (T(0, 3), [1, 1, 1, 1])),
    S(aten.constant_pad_nd.default, (T(4, dtype=B), [2, 0], True)),
    S(aten.pad.default, (T(2, 3), [1, 2])),
    S(aten.pad.default, (T(2, 3), [1, 2], "constant", 1.0)),
    S(aten.pad.default, (T(2, 3), [1, 1, 1, 1], "constant")),
    S(aten.pad.default, (T(2, 3), [1, 2], "reflect")),
    S(aten.pad.default, (T(2, 3), [1, 2], "reflect", 0.0)),
    S(aten.pad.default, (T(1, 2, 3), [1, 1, 1, 1], "replicate")),
    S(aten.pad.default, (T(1, 1, 2, 3), [1, 1, 1, 1, 1, 1], "replicate")),
    S(aten.pad.default, (T(1, 2, 3), [-1, -1], "replicate")),
    S(aten.pad.default, (T(1, 2, 3), [5, 5], "replicate")),
    S(aten.pad.default, (T(1, 2, 3, dtype=L), [1, 1], "reflect")),
    S(aten.pad.default, (T(0, 2, 3), [1, 1], "reflect")),
    S(aten.pad.default, (T(1, 2, 3), [1, 1], "circular")),
    S(aten.pad.default, (T(1, 2, 3), [3, 1], "circular")),
    S(aten.pad.default, (T(2, 3), [1, 1], "circular")),
    S(aten.pad.default, (T(1, 2, 3), [-2, -1], "circular")),
    S(aten.pad.default, (T(2, 2, 3), [1, 1, 1, 1], "circular")),
    S(aten.pad.default, (T(1, 2, 3, dtype=B), [1, 1], "circular")),
    S(aten._pad_circular.default, (T(1, 2, 3), [1, 1])),
    S(aten._pad_circular.default, (T(2, 3), [1, 1])),
    S(aten._pad_circular.default, (T(1, 2, 3), [1, 1, 1, 1])),
    S(aten._pad_circular.default, (T(1, 2, 3), [-2, -1])),
    S(aten._pad_circular.default, (T(1, 2, 3), [1, 1, 1])),
    S(aten.reflection_pad1d.default, (T(2, 3), [2, 2])),
    S(aten.reflection_pad1d.default, (T(0, 2, 3), [2, 2])),
    S(aten.reflection_pad1d.default, (T(2, 5), [-1, -2])),
    S(aten.reflection_pad1d.default, (T(2, 3, dtype=L), [1, 0])),
    S(aten.reflection_pad2d.default, (T(1, 2, 3), [1, 1, 1, 1])),
    S(aten.reflection_pad2d.default, (T(1, 1, 2, 3), [-2, -1, 1, 1])),
    S(aten.reflection_pad2d.default, (T(0, 1, 2, 3), [1, 1, 1, 1])),
    S(aten.reflection_pad3d.default, (T(1, 2, 3, 4), [1, 1, 1, 1, 1, 1])),
    S(aten.reflection_pad3d.default, (T(2, 1, 2, 3, 4), [0, 3, 1, 0, 1, 1])),
    S(aten.replication_pad1d.default, (T(2, 3), [5, 5])),
    S(aten.replication_pad1d.default, (T(4, 2, 3, dtype=L), [0, 1])),
    S(aten.replication_pad2d.default, (T(2, 3, 4), [-4, 0, 0, 0])),
    S(aten.replication_pad2d.default, (T(1, 2, 3, 4), [1, 2, 3, 4])),
    S(aten.replication_pad3d.default, (T(2, 3, 4, 5), [-5, 0, -4, 0, 0, 0])),
    S(aten.replication_pad3d.default, (T(1, 1, 2, 3, 4), [1, 1, 1, 1, 1, 1])),
    S(aten.pad_sequence.default, ([T(3, 2), T(5, 2), T(0, 2)],)),
    S(aten.pad_sequence.default, ([T(3, 2, 4), T(1, 2, 4)], True, -1.0)),
    S(aten.pad_sequence.default, ([T(2), T(4, dtype=L)], False, 0.0, "left")),
    S(aten.pad_sequence.default, ([T(3, 2), T(4, 1), T(2)], True)),
]

ERROR_SAMPLES = [
    S(aten.constant_pad_nd.default, (T(2, 3), [1, 2, 3])),
    S(aten.constant_pad_nd.default, (T(2, 3), [1, 2, 3, 4, 5, 6])),
    S(aten.constant_pad_nd.default, (T(2, 3), [-2, -2])),
    S(aten.pad.default, (T(2, 3), [1, 2], "reflect", 1.0)),
    S(aten.pad.default, (T(3), [1, 2], "reflect")),
    S(aten.pad.default, (T(1, 2, 3), [1, 1, 1, 1, 1, 1], "replicate")),
    S(aten.pad.default, (T(1, 1, 2, 3), [1, 1], "replicate")),
    S(aten.pad.default, (T(1, 2, 3, 4), [1, 1], "circular")),
    S(aten.pad.default, (T(1, 2, 3), [4, 1], "circular")),
    S(aten.pad.default, (T(1, 2, 3), [-3, -1], "circular")),
    S(aten.pad.default, (T(1, 2, 3), [1, 1], "foo")),
    S(aten.pad.default, (T(1, 2, 3), [1, 1, 1], "reflect")),
    S(aten.pad.default, (T(2, 3), [1, 1, 1, 1, 1, 1], "constant")),
    S(aten.pad.default, (T(1, 2, 3), [1, 1, 1], "constant")),
    S(aten.pad.default, (T(1, 2, 3), [-2, -2], "replicate")),
    S(aten.pad.default, (T(1, 2, 3, dtype=B), [5, 5], "replicate")),
    S(aten.pad.default, (T(1, 2, 3, dtype=B), [1, 1], "reflect")),
    S(aten.pad.default, (T(2, 0, 3), [1, 1], "reflect")),
    S(aten._pad_circular.default, (T(3), [1, 1])),
    S(aten._pad_circular.default, (T(1, 2, 3), [4, 1])),
    S(aten.reflection_pad1d.default, (T(2, 3), [3, 2])),
    S(aten.reflection_pad1d.default, (T(2, 0, 3), [2, 2])),
    S(aten.reflection_pad1d.default, (T(2, 3), [-1, -2])),
    S(aten.reflection_pad1d.default, (T(3), [1, 1])),
    S(aten.reflection_pad1d.default, (T(2, 3), [1])),
    S(aten.reflection_pad1d.default, (T(2, 3, dtype=B), [1, 1])),
    S(aten.reflection_pad2d.default, (T(1, 2, 3), [1, 1, 2, 1])),
    S(aten.reflection_pad2d.default, (T(1, 2, 3), [-2, -1, -1, -1])),
    S(aten.reflection_pad2d.default, (T(1, 0, 2, 3), [1, 1, 1, 1])),
    S(aten.reflection_pad2d.default, (T(1, 2, 3), [1, 1, 1])),
    S(aten.reflection_pad3d.default, (T(1, 2, 3), [1, 1, 1, 1, 1, 1])),
    S(aten.reflection_pad3d.default, (T(1, 2, 3, 4), [1, 1, 1, 1, 2, 2])),
    S(aten.replication_pad1d.default, (T(2, 3), [-3, 0])),
    S(aten.replication_pad1d.default, (T(2, 3, dtype=B), [1, 1])),
    S(aten.replication_pad2d.default, (T(2, 3, 4), [-4, 0, -3, 0])),
    S(aten.replication_pad3d.default, (T(2, 3, 4, 5), [-5, 0, -4, 0, -3, 0])),
    S(aten.replication_pad3d.default, (T(2, 3, 4), [1, 1, 1, 1, 1, 1])),
    S(aten.pad_sequence.default, ([],)),
    S(aten.pad_sequence.default, ([T(3, 2), T(5, 3)],)),
    S(aten.pad_sequence.default, ([T(3, 2), T(5, 2)], False, 0.0, "middle")),
]
