"""Programs whose ``assert`` statements their own ``try`` catches, kept out of the test
modules: pytest rewrites the assert statements of those (``if not c: raise
AssertionError(...)``), which would hide the statement the exporter recognizes."""

import torch


def caught_assert_on_a_value(x):
    v0 = torch.ones(int(x.abs().clamp(max=4).max().item()) + 1)
    try:
        assert v0.shape[0] > 1
        v1 = v0 * 2
    except AssertionError:
        v1 = v0 - 1
    return v0, v1
