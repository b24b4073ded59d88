"""Which tensors an op writes in place, and which graph inputs a write may reach.

Used while tracing (to record writes to parameters and buffers) and by ``ep.module()``
(``written_inputs``: to give written state and constants their own storage, so running
the program never changes the model it was exported from, the caller's weights, or
another module of the same program).  Besides the schema's ``(a!)`` annotations, batch
norm in training mode updates its running statistics without declaring it (a training
flag that is not the literal False counts as training).

``written_inputs`` is an analysis, not a reading of annotations: a write reaches every
input that the written value may alias, through every op whose result may alias an
input.  An op's result is fresh only when the op has its own kernel and its schema
declares no alias, or when it is a composite known to allocate (``FRESH``); everything
else (composites such as ``type_as``, ``atleast_1d``, ``broadcast_tensors``, ``meshgrid``,
``unsafe_chunk``, which return their input or a view of it without saying so; ``lift``
and ``unsafe_split``; Python callables; control flow) counts as aliasing.  Control-flow
subgraphs are analysed too: a write inside one reaches the operands its written placeholders
stand for (map, cond, while_loop and scan: placeholders in the order of the call's operand
lists), every operand of a call of another form.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from safetrace import errors
from safetrace.trace.source import short, stack_trace

# op name -> (training flag index and name, running stat indices): unannotated writes
_RUNNING_STATS = {
    "batch_norm": (5, "training"), "native_batch_norm": (5, "training"),
    "_batch_norm_impl_index": (5, "training"), "instance_norm": (5, "use_input_stats"),
    "_native_batch_norm_legit": (5, "training"), "cudnn_batch_norm": (5, "training"),
    "miopen_batch_norm": (5, "training"),
}

# tensors without data that another tracer (torch.export, torch.compile) puts in a model's
# state while it traces that model: known by their class's name (torch._subclasses is
# never imported outside interop/)
NO_DATA = frozenset(("FakeTensor", "FunctionalTensor"))


def traced_elsewhere(t: Any) -> bool:
    """A tensor without data another tracer put there: a fake tensor not of this thread's
    own fake mode (a model built and exported under the user's FakeTensorMode is the
    user's: its state is fake on purpose), or a functional tensor."""
    name = type(t).__name__
    if name not in NO_DATA:
        return False
    return name != "FakeTensor" or getattr(t, "fake_mode", None) is not \
        torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)


def mutates(op: Any) -> bool:
    """Whether `op` may write one of its inputs in place."""
    return bool(op._schema.is_mutable) or _running_stats(op) is not None


def _running_stats(op: Any) -> tuple | None:
    """`op`'s training flag (index, name) where the overload takes running statistics
    (``_native_batch_norm_legit.no_stats`` has none: its 3rd and 4th are flags)."""
    stats = _RUNNING_STATS.get(op._opname)
    if stats is None:
        return None
    schema = op._schema.arguments
    if len(schema) <= stats[0] or schema[stats[0]].name != stats[1] or \
            schema[3].name != "running_mean":
        return None
    return stats


def written_args(op: Any, args: tuple | list, kwargs: dict) -> list:
    """The argument values `op` writes in place (positional or keyword)."""
    out = []
    for i, a in enumerate(op._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            v = args[i] if i < len(args) else kwargs.get(a.name)
            if v is not None:
                out.append(v)
    stats = _running_stats(op)
    if stats is not None:
        idx, name = stats
        training = args[idx] if idx < len(args) else kwargs.get(name)
        if training is not False and training is not None:  # (a computed flag may be true)
            for i in (3, 4):
                v = args[i] if i < len(args) else None
                if v is not None and all(v is not w for w in out):
                    out.append(v)
    return out


def _aliases_first_arg(node: torch.fx.Node) -> bool:
    target = node.target
    if target is operator.getitem:  # an element of split/unbind/chunk: a view of its input
        src = node.args[0]
        return isinstance(src, torch.fx.Node) and src.op == "call_function" and \
            isinstance(src.target, torch._ops.OpOverload) and _view_op(src.target)
    return isinstance(target, torch._ops.OpOverload) and _view_op(target)


def _view_op(op: Any) -> bool:
    returns = op._schema.returns
    return bool(returns) and returns[0].alias_info is not None


def base_placeholder(node: Any) -> Any:
    """The placeholder a chain of views (or in-place results) of `node` starts from."""
    for _ in range(256):
        if not isinstance(node, torch.fx.Node):
            return None
        if node.op == "placeholder":
            return node
        if node.op != "call_function" or not node.args or not _aliases_first_arg(node):
            return None
        node = node.args[0]
    return None


def storage_root(node: Any) -> Any:
    """The first node of the chain of views (or in-place results) `node` ends."""
    for _ in range(256):
        if not isinstance(node, torch.fx.Node) or node.op != "call_function" or \
                not node.args or not _aliases_first_arg(node):
            return node
        node = node.args[0]
    return node


def reads_own_memory(op: Any, target: Any, args: Any) -> None:
    """Refuse an in-place write of `target` (a node) whose other tensor arguments include
    another view of its memory when the memory's layout is not known (a vmap's output:
    eager's strides follow its batching rules): eager's overlap check (an error for a
    partial overlap of dense tensors) depends on the strides.  A written list (a custom
    op's ``Tensor(a!)[]`` argument) is each of its tensors written."""
    if isinstance(target, (list, tuple)):
        for t in target:
            reads_own_memory(op, t, args)
        return
    _reshaped_vmap_output(op, target)
    root = storage_root(target)
    if getattr(root.meta.get("val"), "st_contig", None) is not None:
        return  # (a base of known layout: its views have eager's strides, and so the check)
    for a in args:
        if isinstance(a, torch.fx.Node) and a is not target and storage_root(a) is root \
                and _view_path(a) != _view_path(target):
            raise errors.write_reads_own_memory(str(op), short(stack_trace(4)))


def _view_path(node: Any) -> tuple:
    """The views from the storage root to `node` (in-place results that keep the view
    skipped: they are their first argument; ``unsqueeze_``/``t_`` are views): two nodes
    of one path are the same elements at the same strides, a full overlap, which eager's
    check allows for every layout (``v[..., 0] *= r``, whose ``__setitem__`` copies the
    written view onto the same view taken anew)."""
    path: list = []
    for _ in range(256):
        if not isinstance(node, torch.fx.Node) or node.op != "call_function" or \
                not node.args or not _aliases_first_arg(node):
            break
        target = node.target
        returns = getattr(target, "_schema", None)
        # a view, or an in-place view (unsqueeze_, t_: the same tensor, other strides)
        if returns is None or not returns.returns[0].alias_info.is_write or \
                torch.Tag.inplace_view in target.tags:
            rest = tuple(_plain(v) for v in node.args[1:]) + \
                tuple((k, _plain(v)) for k, v in sorted(node.kwargs.items()))
            path.append((target, rest))
        node = node.args[0]
    return tuple(reversed(path))


def _plain(v: Any) -> Any:
    """A view argument as a key: a plain value as itself, a node or a symbolic size by
    identity (comparing symbolic sizes with == would record a guard)."""
    if v is None or type(v) in (int, float, bool, str):
        return (type(v), v)
    if isinstance(v, (tuple, list)):
        return tuple(_plain(x) for x in v)
    return ("id", id(v))


_MAY_COPY = ("reshape", "reshape_as", "flatten", "_reshape_alias", "contiguous")


def _reshaped_vmap_output(op: Any, target: Any) -> None:
    """Refuse an in-place write to a reshape (a view for some strides, a copy for others)
    of a tensor whose strides are vmap's in eager: the program's differ, so the write
    would reach the reshaped tensor in one and not in the other."""
    node = target
    for _ in range(256):
        if not isinstance(node, torch.fx.Node) or node.op != "call_function" or \
                not node.args or not _aliases_first_arg(node):
            return
        if getattr(node.target, "_opname", None) in _MAY_COPY and vmap_strides(node.args[0]):
            raise errors.write_through_reshape(str(op), short(stack_trace(5)))
        node = node.args[0]


def vmap_strides(node: Any) -> bool:
    """Whether ``node``'s strides may be those eager's vmap gives: a vmap output, or of
    unknown layout and computed (or viewed) from one.  (Each node looked at once: a graph
    of unknown layouts shares its inputs, and a walk of every path would be exponential.)"""
    todo, seen = [node], set()
    while todo:
        n = todo.pop()
        if not isinstance(n, torch.fx.Node) or n in seen:
            continue
        if len(seen) > 256:
            return True  # (too far to look: taken as one, the write refused)
        seen.add(n)
        if n.meta.get("st_vmap_layout"):
            return True
        if n.op != "call_function" or \
                getattr(n.meta.get("val"), "st_contig", None) is not None:
            continue  # (of known layout: eager's strides and the program's are one)
        todo.extend(n.all_input_nodes)
    return False


def writes_a_pick(target: Any) -> str | None:
    """What `target` shares memory with, when that is a value eager aliases and the trace
    computed as a new tensor (``st_picked``: what Python's ``max``/``min`` picked and the
    tensors it picked among, ``pybuiltins``; vmap's outputs that view its inputs,
    ``vmapping``): a write there would show through the other in eager only."""
    return write_target(target)[0]


def write_target(target: Any) -> tuple[str | None, Any]:
    """``(writes_a_pick(target), base_placeholder(target))`` from one walk of the chain of
    views (or in-place results) `target` ends: what an in-place write there reaches."""
    node = target
    for _ in range(256):
        if not isinstance(node, torch.fx.Node):
            return None, None
        if node.op != "call_function" or not node.args or not _aliases_first_arg(node):
            return node.meta.get("st_picked"), node if node.op == "placeholder" else None
        node = node.args[0]
    # (a chain longer than the walk: its last node counts as the root, no placeholder)
    return node.meta.get("st_picked") if isinstance(node, torch.fx.Node) else None, None


def written_placeholders(graph: torch.fx.Graph) -> set:
    """Names of the placeholders the graph writes in place (directly or through views)."""
    names = set()
    for node in graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if not mutates(node.target):
            continue
        for v in written_args(node.target, node.args, node.kwargs):
            base = base_placeholder(v)
            if base is not None:
                names.add(base.name)
    return names


_ATEN = torch.ops.aten
# composites (no kernel of their own) whose result is always a new tensor
FRESH = frozenset(op for op in (
    _ATEN.linear.default, _ATEN.matmul.default, _ATEN.bilinear.default,
    _ATEN.batch_norm.default, _ATEN.layer_norm.default, _ATEN.group_norm.default,
    _ATEN.instance_norm.default, _ATEN.conv1d.default, _ATEN.conv2d.default,
    _ATEN.conv3d.default, _ATEN.conv_transpose1d.default, _ATEN.conv_transpose2d.input,
    _ATEN.conv_transpose3d.input, _ATEN.softmax.int, _ATEN.log_softmax.int,
    _ATEN.scaled_dot_product_attention.default, _ATEN.cross_entropy_loss.default,
    _ATEN.embedding_bag.padding_idx, _ATEN.rms_norm.default,
    _ATEN.cosine_similarity.default, _ATEN.pairwise_distance.default,
) if op is not None)
# own kernels whose result may be an input (or a view of it) though the schema says not
UNDECLARED_ALIAS = frozenset(("lift", "unsafe_split", "unsafe_split_with_sizes",
                              "unsafe_chunk"))


def may_alias(op: Any) -> bool:
    """Whether the result of ATen overload `op` may share memory with an input."""
    if op in FRESH:
        return False
    if any(r.alias_info is not None for r in op._schema.returns):
        return True
    if op._opname in UNDECLARED_ALIAS or op._schema.is_mutable:
        return True
    return _composite(op)


def _composite(op: Any) -> bool:
    cached = _COMPOSITE.get(op)
    if cached is None:
        try:
            cached = bool(torch._C._dispatch_has_kernel_for_dispatch_key(
                op.name(), "CompositeImplicitAutograd"))
        except RuntimeError:
            # an operator only TorchScript registers (``aten::device(str) -> Device``, a
            # torch.device made in traced code): the dispatcher does not know it; what
            # returns no tensor shares no memory, anything else may
            cached = any("Tensor" in str(r.type) for r in op._schema.returns)
        _COMPOSITE[op] = cached
    return cached


_COMPOSITE: dict = {}


def written_inputs(graph: torch.fx.Graph) -> set:
    """Names of the placeholders of `graph` whose memory an in-place op may write, in the
    graph or in any of its control-flow subgraphs."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    written, _ = _writes(graph, 0)
    return {placeholders[i].name for i in written}


def _writes(graph: torch.fx.Graph, depth: int) -> tuple[set, set]:
    """(indices of the placeholders a write may reach, indices the outputs may alias)."""
    subs = getattr(graph, "st_submodules", {})  # (trace/hops: the graphs get_attr names)
    alias: dict = {}
    written: set = set()
    out: set = set()
    index = 0
    for node in graph.nodes:
        if node.op == "placeholder":
            alias[node] = frozenset((index,))
            index += 1
            continue
        srcs = frozenset().union(*(alias.get(a, ()) for a in node.all_input_nodes))
        if node.op == "output":
            out |= srcs
            continue
        if node.op != "call_function":
            continue  # get_attr: a subgraph, read by the call that runs it
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            if mutates(target):
                for v in written_args(target, node.args, node.kwargs):
                    written |= _union(v, alias)
            # (only its tensor arguments: a view's SymInt bounds, `x[:, :n]`, share no
            # memory, and an `n` computed from a placeholder's size must not make a write
            # to the view a write to that placeholder)
            alias[node] = _tensor_sources(target, node, alias) if may_alias(target) \
                else frozenset()
            continue
        if isinstance(target, torch._ops.HigherOrderOperator):
            for a in node.all_input_nodes:
                sub = subs.get(a.target) if a.op == "get_attr" else None
                if sub is None:
                    continue
                inside = _writes(sub.graph, depth + 1)[0] if depth <= 64 else None
                operands = _operands(node, a, sub) if inside else None
                if operands is not None:
                    # the subgraph's placeholders are the call's operands in a known
                    # order: a write reaches only the operands it writes (parameters
                    # read by a body that writes another operand stay parameters:
                    # ep.module() keeps autograd through them)
                    written |= _union([operands[i] for i in inside], alias)
                elif inside is None or inside:
                    written |= srcs  # (a write inside reaches every operand)
        alias[node] = srcs  # control flow, Python callables: unknown, so aliasing
    return written, out


_HOP = torch.ops.higher_order
# a control-flow operator -> (the positions of its subgraph arguments, the positions of the
# operand lists whose concatenation its subgraphs' placeholders are): map's body takes the
# slices of xs then the other operands; cond's branches the operands; while_loop's cond_fn
# and body_fn the carried values then the additional inputs; scan's combine_fn the carry,
# the slices of xs, then the additional inputs (a slice written is its xs written)
_OPERAND_LISTS = {_HOP.map_impl: ((0,), (1, 2)), _HOP.cond: ((1, 2), (3,)),
                  _HOP.while_loop: ((0, 1), (2, 3)), _HOP.scan: ((0,), (1, 2, 3))}
_TENSOR_ARGS: dict = {}  # op -> ((position, name) of each argument holding tensors)


def _tensor_sources(op: Any, node: torch.fx.Node, alias: dict) -> frozenset:
    """The placeholders the tensor arguments of `node` (a call of ATen overload `op`)
    may alias."""
    return frozenset(_union(_tensor_args(op, node), alias))


def _tensor_args(op: Any, node: torch.fx.Node) -> list:
    """The values `node` (a call of ATen overload `op`) passes for its tensor arguments."""
    where = _TENSOR_ARGS.get(op)
    if where is None:
        where = _TENSOR_ARGS[op] = tuple((i, a.name) for i, a in enumerate(op._schema.arguments)
                                         if "Tensor" in str(a.type))
    return [node.args[i] if i < len(node.args) else node.kwargs.get(name) for i, name in where]


def aliased_input(node: Any, graph: torch.fx.Graph) -> Any:
    """A placeholder of `graph`, or a node of another graph, whose memory an in-place write
    to `node` may reach through results that may alias their inputs (``atleast_1d(x)``,
    ``type_as``: no view in their schema, `x` itself in eager), or None."""
    todo, seen = [node], set()
    while todo:
        n = todo.pop()
        if isinstance(n, (list, tuple)):
            todo.extend(n)
            continue
        if not isinstance(n, torch.fx.Node) or n in seen:
            continue
        if len(seen) > 10_000:
            return n  # (too far to look: taken as reaching an input)
        seen.add(n)
        if n.op == "placeholder" or n.graph is not graph:
            return n
        if n.op != "call_function":
            continue
        target = n.target
        if isinstance(target, torch._ops.OpOverload):
            if may_alias(target):
                todo.extend(_tensor_args(target, n))
        else:  # (control flow, getitem, Python callables: their results may alias)
            todo.extend(n.all_input_nodes)
    return None


def _operands(node: torch.fx.Node, attr: torch.fx.Node, sub: Any) -> list | None:
    """The operands of control-flow call `node` in the order of the placeholders of its
    subgraph `sub` (read through `attr`), or None when the call is not of the known form
    (every operand then counts as written)."""
    form = _OPERAND_LISTS.get(node.target)
    if form is None or node.kwargs:
        return None
    graphs, lists = form
    args = node.args
    if len(args) != max(*graphs, *lists) + 1 or not any(args[i] is attr for i in graphs):
        return None
    operands: list = []
    for i in lists:
        if not isinstance(args[i], (list, tuple)):
            return None
        operands.extend(args[i])
    n = sum(1 for p in sub.graph.nodes if p.op == "placeholder")
    return operands if n == len(operands) else None


def _union(value: Any, alias: dict) -> set:
    out: set = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, torch.fx.Node):
            out |= alias.get(v, frozenset())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out


# -- constants made in forward ------------------------------------------------------------
# Constants lifted from one memory (a tensor made in forward from literals and a folded view
# of it, ``c.view(())``) are separate inputs of the program: a write to one would not reach
# the other, so a written memory with two lifted tensors is refused, at the write or at the
# second lift, whichever comes last.

def note_constant_storage(tr: Any, t: torch.Tensor, where: Any) -> None:
    """Record that constant `t` was lifted; refuse if its memory, written already, now has
    two lifted tensors (`where()`: the user's source line, only asked for then)."""
    with torch._C.DisableTorchFunction():  # (lifted while a branch is traced too)
        storage = t.untyped_storage()
    if storage.nbytes() == 0:
        return
    ptr = storage.data_ptr()
    ids = tr.const_storages.setdefault(ptr, set())
    ids.add(id(t))
    if len(ids) > 1 and ptr in tr.written_storages:
        raise errors.constant_written_through_alias(short(where()))


def constant_written(tr: Any, t: torch.Tensor, trace: str) -> None:
    """Real constant `t` is written in place by a recorded op: its eager value is stale
    from now on; refuse if another lifted tensor views its memory."""
    with torch._C.DisableTorchFunction():
        ptr = t.untyped_storage().data_ptr()
    tr.written_storages.add(ptr)
    if len(tr.const_storages.get(ptr, ())) > 1:
        raise errors.constant_written_through_alias(short(trace))


def state_alias(tr: Any, base: torch.fx.Node) -> tuple[str, str] | None:
    """Parameter or buffer `base` (a placeholder) is written in place: (its name, another
    one sharing its memory (registered as a view of it)), which the caller refuses: the
    program gives each its own copy, so the write would not reach the other.  None when
    no other shares it."""
    if tr.state_memory is None:  # memory -> names of the state tensors in it (once)
        tr.state_memory = {}
        with torch._C.DisableTorchFunction():
            for name, t in tr.state_tensors.items():
                try:
                    storage = t.untyped_storage()
                except Exception:  # a tensor subclass: its parts are checked apart
                    continue
                if t.device.type != "meta" and storage.nbytes():
                    tr.state_memory.setdefault(storage.data_ptr(), []).append(name)
    name = base.meta.get("target")
    t = tr.state_tensors.get(name)
    if t is None:
        return None
    with torch._C.DisableTorchFunction():
        try:
            ptr = t.untyped_storage().data_ptr()
        except Exception:
            return None
    other = next((n for n in tr.state_memory.get(ptr, ()) if n != name), None)
    return None if other is None else (name, other)


def fresh_written_constants(graph: torch.fx.Graph, made_in_forward: set) -> None:
    """A constant made in forward (``c = torch.tensor(6.)``) that the graph writes in place
    (``c.add_(2)``) is made anew by every eager call: the graph writes a clone of it, read
    everywhere the constant was, so the lifted value stays what the code made (without
    this, each call of one module added 2 again: 8, then 10)."""
    if not made_in_forward:  # (most exports: no graph walk)
        return
    written = written_inputs(graph)
    nodes = [n for n in graph.nodes if n.op == "placeholder"]
    after = next((n for n in graph.nodes if n.op != "placeholder"), None)
    for node in nodes:
        if node.target not in made_in_forward or node.name not in written:
            continue
        with graph.inserting_before(after):
            clone = graph.call_function(torch.ops.aten.clone.default, (node,))
        val = node.meta["val"]
        clone.meta["val"] = type(val)(val.st_meta, clone)
        clone.meta["stack_trace"] = node.meta.get("stack_trace", "")
        node.replace_all_uses_with(clone, delete_user_cb=lambda u: u is not clone)


def stale_value_reads(graph: torch.fx.Graph, constants: dict, reads: dict, names: dict) -> None:
    """Refuse a constant the graph writes in place whose value Python read while tracing
    (`reads`: memory -> where, ``values.read_data``): the program keeps the write (state),
    so from the next call on the value taken at export is stale.  `names`: a constant's
    attribute path, for the message."""
    written = written_inputs(graph)
    for node in graph.find_nodes(op="placeholder"):
        t = constants.get(node.target)
        if t is None or node.name not in written:
            continue
        with torch._C.DisableTorchFunction():
            ptr = t.untyped_storage().data_ptr()
        if ptr in reads:
            raise errors.constant_read_then_written(names.get(node.target, node.target),
                                                    reads[ptr])


def returns_self(op: Any) -> bool:
    """An in-place op that returns its first argument (``add_``, ``copy_``); cached per op
    by the tracer."""
    s = op._schema
    return bool(s.returns and s.arguments and s.arguments[0].alias_info is not None
                and s.arguments[0].alias_info.is_write and s.returns[0].alias_info is not None
                and len(s.returns) == 1 and str(s.returns[0].type) == "Tensor")


def input_itself(node: Any) -> Any:
    """The placeholder `node` is (through in-place results only, ``x.add_(1)``), else None:
    a view of an input is a new tensor object, whose metadata is its own."""
    for _ in range(256):
        if not isinstance(node, torch.fx.Node):
            return None
        if node.op == "placeholder":
            return node
        if node.op != "call_function" or not node.args or \
                not isinstance(node.target, torch._ops.OpOverload) or \
                not returns_self(node.target):
            return None
        node = node.args[0]
    return None


def refuse_input_reshape(tr: Any, op: str, x: Any, traced: bool) -> None:
    """``x.t_()``, ``x.unsqueeze_(0)`` on an input of the program (or a subgraph's operand):
    the caller's tensor would change shape, which no graph output gives back (a split's
    side reads it narrowed, a loaded program's checks read it after the call).  On a real
    tensor (module state, a constant the code made or holds), the trace would go on
    reading its old shape, and the program's next call would reshape it again."""
    if not traced:
        node = tr.state.get(id(x)) or tr.const_nodes.get(id(x))
        raise errors.state_reshaped_in_place(op, node.meta.get("target") if node is not None
                                             else None, short(stack_trace(4)))
    base = input_itself(x.st_node)
    if base is not None and base not in tr.state.values() and \
            base not in tr.const_nodes.values():
        raise errors.input_reshaped_in_place(op, base.name, short(stack_trace(4)))

