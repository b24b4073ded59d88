"""A converted program's in-place buffer writes in functional form, for ``st.to_onnx``
without torch.onnx's retrace (``onnx_lean``).

A static-cache LLM program writes its cache buffers in place (``index_copy_``, ``copy_``,
``add_`` on a buffer placeholder), and torch's graph keeps those writes as they are.
torch.onnx's retrace functionalizes them: each write becomes its functional operator
(``index_copy``, ``copy``, ``add``), every later read of the buffer reads the written
value, and the buffer's last value becomes a ``BUFFER_MUTATION`` output of the program
(torch.onnx keeps the buffer an initializer and leaves that output out of the ONNX
graph).  Here the same is done on the graph itself, where it is sound without a trace:
each write's target is a buffer placeholder itself (not a view of it), the operator
writes its first argument only and has a functional overload, and no view of the buffer
taken before a write is read after it (a view would see the written values; its
functional form would not).  Anything else is left to torch.onnx's retrace.
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.interop.lazy import graph_signature

aten = torch.ops.aten


def buffer_writes(tep: Any) -> dict | None:
    """write node -> its functional overload, for every in-place write in `tep`'s graph
    ({} where nothing writes); None where some write has no sound functional form here."""
    kinds = graph_signature()
    buffers = {s.arg.name for s in tep.graph_signature.input_specs
               if s.kind == kinds.InputKind.BUFFER}
    graph = tep.graph_module.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    writes: dict = {}
    aliases: dict = {}  # node -> the buffer placeholder it is a view of
    written_at: dict = {}  # buffer placeholder -> positions of its writes
    for node in graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        schema = node.target._schema
        if schema.is_mutable:
            functional = _functional(node.target)
            target = node.args[0] if node.args else None
            if functional is None or not isinstance(target, torch.fx.Node) or \
                    target.op != "placeholder" or target.name not in buffers:
                return None
            writes[node] = functional
            written_at.setdefault(target, []).append(order[node])
            continue
        source = node.args[0] if node.args else None
        root = source if isinstance(source, torch.fx.Node) and source.name in buffers and \
            source.op == "placeholder" else aliases.get(source)
        if root is not None and any(r.alias_info is not None for r in schema.returns):
            aliases[node] = root
    for view, root in aliases.items():  # (a view read across a write of its buffer)
        made = order[view]
        later = [p for p in written_at.get(root, ()) if p > made]
        if later and any(order[u] > later[0] for u in view.users):
            return None
    if written_at and _shared(tep, {p.name for p in written_at}):
        return None
    return writes


def _shared(tep: Any, written: set) -> bool:
    """Whether a written buffer's memory is also that of another input the graph reads
    (views of one storage; st.export refuses a write to state another path views, this
    is the check of the program as given): a write through one placeholder shows in the
    other, which the functional form would not show.  (One tensor under two paths is one
    placeholder read, the other unread.)"""
    held = {**tep.state_dict, **tep.constants}
    read = {n.name for n in tep.graph_module.graph.find_nodes(op="placeholder") if n.users}
    storages: dict = {}
    for spec in tep.graph_signature.input_specs:
        value = held.get(spec.target) if spec.target is not None else None
        if not isinstance(value, torch.Tensor) or spec.arg.name not in read:
            continue
        storages.setdefault(_storage(value), []).append(spec.arg.name)
    return any(len(names) > 1 and written & set(names) for names in storages.values())


def _storage(t: torch.Tensor) -> Any:
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - no storage to read (a subclass): treated as shared
        return "unknown"
    return ptr if ptr else "no data"  # (meta and empty tensors: one key, refused)


def _functional(op: Any) -> Any:
    """``aten.<name>.<overload>`` for the in-place ``aten.<name>_.<overload>`` writing its
    first argument only; None for any other mutable operator."""
    schema = op._schema
    written = [i for i, a in enumerate(schema.arguments)
               if a.alias_info is not None and a.alias_info.is_write]
    name = schema.name.split("::")[-1]
    if written != [0] or op.namespace != "aten" or not name.endswith("_") or \
            name.startswith("_"):
        return None
    packet = getattr(aten, name[:-1], None)
    functional = getattr(packet, op._overloadname, None) if packet is not None else None
    if not isinstance(functional, torch._ops.OpOverload) or functional._schema.is_mutable:
        return None
    return functional


def functionalize(tep: Any, writes: dict) -> None:
    """Rewrite `tep` in place: each write of `writes` its functional overload (its fake
    value computed from its arguments'), each later read of a written buffer reading its
    last written value, and each written buffer's last value a ``BUFFER_MUTATION``
    output (before the user's outputs, as torch's functional programs order them)."""
    kinds = graph_signature()
    graph = tep.graph_module.graph
    current: dict = {}  # buffer placeholder -> its last written value
    owner: dict = {}  # written value -> its buffer placeholder
    for node in list(graph.nodes):
        if node.op not in ("call_function", "output"):
            continue
        if current:
            node.args = torch.fx.node.map_arg(node.args, lambda n: current.get(n, n))
            node.kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: current.get(n, n))
        functional = writes.get(node)
        if functional is None:
            continue
        buffer = owner.get(node.args[0], node.args[0])
        node.target = functional
        vals = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta["val"])
        fake = node.meta["val"]
        with fake.fake_mode:
            node.meta["val"] = functional(*vals[0], **vals[1])
        current[buffer], owner[node] = node, buffer
    out = graph.output_node()
    targets = {s.arg.name: s.target for s in tep.graph_signature.input_specs}
    written = list(current.items())
    out.args = (tuple(v for _, v in written) + tuple(out.args[0]),)
    specs = tep.graph_signature.output_specs
    specs[:0] = [kinds.OutputSpec(kinds.OutputKind.BUFFER_MUTATION,
                                  kinds.TensorArgument(v.name), targets[p.name])
                 for p, v in written]
