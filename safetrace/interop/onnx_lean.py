"""``st.to_onnx`` without torch.onnx's retrace of the whole program.

``torch.onnx.export`` starts with ``run_decompositions`` on the program it is given: a
retrace through AOT autograd (a metadata pass and a functionalizing trace, every node's
fake kernel run twice) that decomposes the operators its registry has no ONNX function
for.  On torch's own program that retrace finds the fake kernels' cache warm from the
export; on a converted one it starts cold, and it was ~60% of ``st.to_onnx`` on GPT-2.

A program converted from safetrace's is already what that retrace produces wherever
every node is an operator the registry translates: functional (no in-place operator, no
input written; a buffer written in place, as a static cache is, made functional first by
``onnx_writes``), without subgraphs, each node's fake value made from safetrace's
metadata.  There the retrace is left out and the few nodes the registry
lacks are rewritten in place, each to the operator torch's decomposition gives, with the
node's own fake value (``to`` as ``_to_copy`` or the value itself; ``min.other`` as
``minimum``; ``item`` as ``_local_scalar_dense``: a static cache's length read from data,
OPT's).  Masked attention gets its ONNX form in the graph itself (the form of
``onnx_attention``: the rows its mask masks whole set to 0), the mask's empty rows
computed once per mask, not once per attention call.  Anything else (another in-place
write, a subgraph, an operator neither the registry nor this module covers) leaves the
program as it is, for torch.onnx's retrace.

torch.onnx's own steps after its decomposition (type promotion, which runs every node's
fake kernel again, the removal of assertion nodes, the translation, the optimizer) run
unchanged: its ``decompose_with_registry`` is replaced while a ``st.to_onnx`` call runs
and returns, on that thread only, the program this module lowered as it is.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import threading
from typing import Any, Iterator

import torch

from safetrace.interop.lazy import graph_signature
from safetrace.interop.onnx_attention import empty_rows, mask_and_dropout
from safetrace.interop.onnx_writes import buffer_writes, functionalize
from safetrace.interop.shared_patch import SharedPatch

aten = torch.ops.aten
_PATCH = SharedPatch()
_HERE = threading.local()  # .programs: the programs this thread's st.to_onnx calls lowered
_SDPA = aten.scaled_dot_product_attention.default
_ASSERTS = frozenset((aten._assert_scalar.default, aten._assert_tensor_metadata.default,
                      aten.sym_constrain_range_for_size.default, aten._assert_async.default,
                      aten._assert_async.msg))  # (torch.onnx removes these after its decomposition)
_TO = frozenset((aten.to.dtype, aten.to.device, aten.to.dtype_layout, aten.to.other))
_SAME_ARGUMENTS = {aten.min.other: aten.minimum.default, aten.max.other: aten.maximum.default,
                   aten.item.default: aten._local_scalar_dense.default}  # (item: its body)


def lower(tep: Any, implemented: Any) -> bool:
    """Rewrite `tep`'s graph in place into what torch.onnx's decomposition would give it
    and return True; False, the graph untouched, where that needs torch's retrace.
    `implemented`: the operators torch.onnx's registry translates."""
    gm = tep.graph_module
    if not _plain(tep) or next(iter(gm.children()), None) is not None:
        return False
    writes = buffer_writes(tep)
    if writes is None:
        return False
    masked, traced = [], {}
    mode = _fake_mode(gm.graph)
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        target = writes.get(node, node.target)
        if node.op != "call_function":
            return False
        if target in _ASSERTS:
            continue
        if "val" not in node.meta:
            return False
        if target in _TO or target in _SAME_ARGUMENTS:
            continue
        if target not in implemented:
            sub = _decomposed(node, implemented, mode, target)
            if sub is None:
                return False
            traced[node] = sub
            continue
        if isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable:
            return False
        if target is _SDPA:
            mask, dropout = mask_and_dropout(node)
            if dropout:
                return False  # (torch.onnx's path, as before: no form with dropout)
            if mask is not None:
                masked.append(node)
    graph = gm.graph
    if writes:
        functionalize(tep, writes)
    for node in list(graph.nodes):
        if node in traced:
            _inline(graph, node, traced[node])
        elif node.op == "call_function" and node.target in _TO:
            _to(graph, node)
        elif node.op == "call_function" and node.target in _SAME_ARGUMENTS:
            node.target = _SAME_ARGUMENTS[node.target]
    empty: dict = {}  # mask node -> its rows-all-masked node
    for node in masked:
        _zero_masked_rows(graph, node, empty)
    gm.recompile()
    _name_outputs(tep)
    return True


def _name_outputs(tep: Any) -> None:
    """The signature's outputs named after the nodes the graph now returns (torch.onnx
    finds the ONNX graph's outputs by these names)."""
    kinds = graph_signature()
    specs = tep.graph_signature.output_specs
    returned = tep.graph_module.graph.output_node().args[0]
    for i, (spec, node) in enumerate(zip(specs, returned)):
        if isinstance(node, torch.fx.Node) and isinstance(spec.arg, kinds.TensorArgument) \
                and spec.arg.name != node.name:
            specs[i] = kinds.OutputSpec(spec.kind, kinds.TensorArgument(node.name), spec.target)


def _decomposed(node: Any, implemented: Any, fake_mode: Any, target: Any) -> Any:
    """The graph torch's decomposition (torch.onnx's table, then the dispatcher's
    composites) makes of `node` alone (calling `target`: its own, or the functional form
    of its write), traced on its arguments' fake values; None where that graph holds
    anything the registry does not translate or that writes, or the node's arguments or
    users are not plain tensors and constants.  With the graph: the argument slots it
    reads (the nodes there when it is inlined: a write's functional form reads the
    buffer's value at that point)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if fake_mode is None:
        return None
    flat, spec = torch.utils._pytree.tree_flatten((node.args, node.kwargs))
    slots = [i for i, a in enumerate(flat) if isinstance(a, torch.fx.Node)]
    if not all(isinstance(flat[i].meta.get("val"), torch.Tensor) for i in slots):
        return None  # (a size given as a node: left to torch's retrace)
    if not isinstance(node.meta["val"], torch.Tensor) and not all(
            u.target is operator.getitem and isinstance(u.args[1], int) for u in node.users):
        return None

    def call(*tensors: Any) -> Any:
        leaves = list(flat)
        for i, t in zip(slots, tensors):
            leaves[i] = t
        args, kwargs = torch.utils._pytree.tree_unflatten(leaves, spec)
        return target(*args, **kwargs)

    try:
        with fake_mode:  # (the program's: an operator without tensor arguments too)
            sub = make_fx(call, decomposition_table=_table(implemented),
                          tracing_mode="fake")(*[flat[i].meta["val"] for i in slots])
    except Exception:  # noqa: BLE001  (whatever torch's retrace would make of it)
        return None
    for n in sub.graph.nodes:
        if n.op == "call_function" and n.target not in _ASSERTS and (
                n.target not in implemented or isinstance(
                n.target, torch._ops.OpOverload) and n.target._schema.is_mutable):
            return None
        if n.op not in ("placeholder", "call_function", "output"):
            return None
    return sub, slots


def _fake_mode(graph: Any) -> Any:
    """The fake mode of the program's values (the conversion's)."""
    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return val.fake_mode
    return None


def _inline(graph: Any, node: Any, traced: tuple) -> None:
    """`node` replaced by its decomposition's nodes (each with its fake value from the
    trace and `node`'s source line and module stack)."""
    sub, slots = traced
    flat, _ = torch.utils._pytree.tree_flatten((node.args, node.kwargs))
    env = dict(zip(sub.graph.find_nodes(op="placeholder"), [flat[i] for i in slots]))
    meta = {k: v for k, v in node.meta.items() if k != "val"}
    result = None
    with graph.inserting_before(node):
        for n in sub.graph.nodes:
            if n.op == "call_function":
                env[n] = graph.node_copy(n, env.__getitem__)
                env[n].meta = {**meta, "val": n.meta["val"]}
            elif n.op == "output":
                result = torch.fx.node.map_arg(n.args[0], env.__getitem__)
    if isinstance(node.meta["val"], torch.Tensor):
        node.replace_all_uses_with(result)
    else:
        for user in list(node.users):
            user.replace_all_uses_with(result[user.args[1]])
            graph.erase_node(user)
    graph.erase_node(node)


@functools.lru_cache(maxsize=2)
def _table(implemented: frozenset) -> dict:
    """torch.onnx's decomposition table for this registry."""
    from torch.onnx._internal.exporter import _decomp

    return _decomp.create_onnx_friendly_decomposition_table(set(implemented))


def _plain(tep: Any) -> bool:
    """Only inputs the graph reads (no token, no object) and only the user's outputs (no
    input or buffer written)."""
    kinds = graph_signature()
    reads = (kinds.InputKind.USER_INPUT, kinds.InputKind.PARAMETER, kinds.InputKind.BUFFER,
             kinds.InputKind.CONSTANT_TENSOR)
    sig = tep.graph_signature
    return all(s.kind in reads for s in sig.input_specs) and \
        all(s.kind == kinds.OutputKind.USER_OUTPUT for s in sig.output_specs)


def _to(graph: Any, node: Any) -> None:
    """``x.to(...)`` as torch's decomposition leaves it: ``x`` itself where the dtype stays
    (ONNX has no devices or layouts, and nothing in this graph writes), else
    ``_to_copy(x, dtype=...)``; the node's own fake value either way."""
    source = node.args[0]
    dtype = node.meta["val"].dtype
    returned = any(user.op == "output" for user in node.users)
    if source.meta["val"].dtype == dtype and not returned:
        node.replace_all_uses_with(source)
    else:
        with graph.inserting_before(node):
            copy = graph.call_function(aten._to_copy.default, (source,), {"dtype": dtype})
        copy.meta = dict(node.meta)
        node.replace_all_uses_with(copy)
    graph.erase_node(node)


def _zero_masked_rows(graph: Any, node: Any, empty: dict) -> None:
    """After ``scaled_dot_product_attention``, 0 on the rows its mask masks whole
    (``onnx_attention``: torch's ONNX function averages there, torch's kernels give 0)."""
    mask, _ = mask_and_dropout(node)
    meta = {k: v for k, v in node.meta.items() if k != "val"}
    if mask not in empty:
        with graph.inserting_before(mask.next):  # (right after the mask, in order)
            empty[mask] = empty_rows(mask, mask.meta["val"].dtype,
                                     lambda op, *args: _call(graph, op, args, meta))
    with graph.inserting_after(node):
        zeroed = _call(graph, aten.where.ScalarSelf, (empty[mask], 0.0, node), meta)
    node.replace_all_uses_with(zeroed, delete_user_cb=lambda user: user is not zeroed)


def _call(graph: Any, op: Any, args: tuple, meta: dict) -> Any:
    """A new node of `op` with its fake value computed from its arguments' in their
    fake mode."""
    node = graph.call_function(op, args)
    node.meta.update(meta)
    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    fake = next(v for v in vals if isinstance(v, torch.Tensor))
    with fake.fake_mode:
        node.meta["val"] = op(*vals)
    return node


@contextlib.contextmanager
def as_decomposed(tep: Any) -> Iterator[None]:
    """While active, this thread's ``torch.onnx.export`` of `tep` takes it as already
    decomposed (any other program, or another thread's export, is decomposed by torch)."""
    from torch.onnx._internal.exporter import _fx_passes

    programs = _HERE.__dict__.setdefault("programs", [])
    programs.append(tep)
    try:
        with _PATCH.applied(_fx_passes, "decompose_with_registry", _decompose):
            yield
    finally:
        programs.pop()


def can_skip() -> bool:
    """torch.onnx decomposes through the function ``as_decomposed`` replaces."""
    try:
        from torch.onnx._internal.exporter import _fx_passes
    except ImportError:
        return False
    return callable(getattr(_fx_passes, "decompose_with_registry", None))


def _decompose(program: Any, registry: Any) -> Any:
    if any(program is p for p in getattr(_HERE, "programs", ())):
        return program
    return _PATCH.original(program, registry)

