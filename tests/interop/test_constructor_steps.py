"""torch's getitem pass inside a conversion's constructor runs only where it changes
something: two getitems of one graph reading one index of one node are merged as torch
merges them; a graph whose getitems are all distinct is left as it is."""

from __future__ import annotations

import operator

import torch
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec,
                                          OutputKind, OutputSpec, TensorArgument)

from safetrace.interop import construct


def _graph(duplicate: bool) -> tuple:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    parts = g.call_function(torch.ops.aten.split.Tensor, (x, 2))
    a = g.call_function(operator.getitem, (parts, 0))
    b = g.call_function(operator.getitem, (parts, 0 if duplicate else 1))
    out = g.call_function(torch.ops.aten.add.Tensor, (a, b))
    g.output((out,))
    signature = ExportGraphSignature(
        [InputSpec(InputKind.USER_INPUT, TensorArgument("x"), None)],
        [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(out.name), None)])
    return torch.fx.GraphModule(torch.nn.Module(), g), signature


def _getitems(gm) -> int:
    return len(gm.graph.find_nodes(op="call_function", target=operator.getitem))


def test_duplicate_getitems_are_merged_and_distinct_ones_kept():
    gm, signature = _graph(duplicate=True)
    construct._getitems_pass(gm, signature, [])
    assert _getitems(gm) == 1
    x = torch.arange(4.0)
    torch.testing.assert_close(gm(x)[0], x[:2] * 2)
    gm, signature = _graph(duplicate=False)
    construct._getitems_pass(gm, signature, [])
    assert _getitems(gm) == 2
