"""The tracer's special handlers, one module per concern; importing this package
registers them all in ``registry.HANDLERS``.

- ``metadata``: shape, dtype, device and layout queries, answered without a node;
- ``data``: reads of tensor data (``bool``, ``int``, ``.item()``, ``.tolist()``);
- ``index_value``: ``__index__`` of a one-element integer tensor (an unbacked size);
- ``casts``: ``x.to(...)``, ``x.float()``, ``x.cpu()``, ``x.type(dtype)``;
- ``factories``: ``torch.tensor``, ``as_tensor``, ``new_tensor``, ``full`` of a traced fill;
- ``views``: indexing, ``x.T`` / ``x.mT`` / ``x.real`` / ``x.data``, ``contiguous``;
- ``spellings``: calls whose Python signature is not their ATen op's (``x.where``,
  ``nonzero(as_tuple=True)``, ``split``);
- ``profiler``: ``record_function`` ranges, left out of the graph;
- ``grad``: grad-mode changes (``no_grad`` blocks), nodes of the graph;
- ``collectives``: torch.distributed's in-place collectives, as functional ones;
- ``runtime_asserts``: torch's assertion and range ops (``_assert_scalar``), as checks.
"""

from safetrace.trace.handlers import (casts, collectives, data, factories, grad, index_value,
                                     metadata, profiler, runtime_asserts, spellings, views)

__all__ = ["casts", "collectives", "data", "factories", "grad", "index_value", "metadata",
           "profiler", "runtime_asserts", "spellings", "views"]
