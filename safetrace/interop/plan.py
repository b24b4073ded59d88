"""What a conversion reads of a safetrace program alone, found once per program (``plan_of``),
and small tables the conversion reads (``interop/torch_export.py``): torch's objects are
never kept here, each conversion makes its own."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
from torch.utils import _pytree

from safetrace.exporter.contract import TensorInput
from safetrace.interop.hierarchy import fill_stacks
from safetrace.interop.lazy import graph_signature
from safetrace.interop.memos import MASK_OPS


def plan_of(ep: Any) -> tuple:
    """What a conversion reads of the program alone, made once per program (kept while its
    graph holds the same nodes, as ``_written_inputs`` keeps its answer): placeholders by
    name, input specs in torch's order (parameters, buffers, constants, user inputs;
    stable within each kind), the call nodes, their filled ``nn_module_stack``s and our
    engine's env.  Torch's objects are never kept: each conversion makes its own."""
    key = (id(ep.graph), len(ep.graph.nodes), ep.graph_signature.input_specs)
    cached = ep.__dict__.get("_st_convert_plan")
    if cached is not None and cached[0][0] == key[0] and cached[0][1] == key[1] and \
            cached[0][2] is key[2]:
        return cached[1]
    ours = {n.name: n for n in ep.graph.find_nodes(op="placeholder")}
    order = {"parameter": 0, "buffer": 1, "constant": 2, "user_input": 3}
    ordered = sorted(ep.graph_signature.input_specs, key=lambda s: order[s.kind])
    calls = [n for n in ep.graph.nodes if n.op == "call_function"]
    # (the nodes a conversion walks where the graph holds subgraphs, else None: the call
    # nodes serve; and the output node)
    walk = [n for n in ep.graph.nodes if n.op in ("call_function", "get_attr")] \
        if ep.graph.find_nodes(op="get_attr") else None
    out = next(n for n in reversed(ep.graph.nodes) if n.op == "output")
    # (then: the call nodes whose values a conversion made from ours with every size
    # known to torch already, ``fakes.builds``' KNOWN, filled by the conversions; and what
    # else a conversion finds from the plan alone, by name)
    plan = (ours, ordered, calls, dict(zip(calls, fill_stacks(calls))), _symbolic_env(ep),
            set(), {}, walk, out)
    ep.__dict__["_st_convert_plan"] = (key, plan)
    return plan


def positional(spec: Any) -> int | None:
    """How many leaves an input spec of positional leaves alone (``((x, y), {})``) holds;
    None for any other structure (pytree's unflatten then serves)."""
    try:
        if type(spec) is not _pytree.TreeSpec or spec.type is not tuple or \
                spec.num_children != 2:
            return None
        args, kwargs = spec.children()
        if args.type is not tuple or kwargs.type is not dict or kwargs.num_children or \
                not all(c.is_leaf() for c in args.children()):
            return None
        return args.num_children
    except Exception:  # noqa: BLE001 - another pytree release: its unflatten serves
        return None


def _symbolic_env(ep: Any) -> Any:
    """Our engine's env (for hints and to decide torch's guards), found on any symbolic
    size of the program; None for a fully static program."""
    for n in ep.graph.nodes:
        val = n.meta.get("val")
        meta = getattr(val, "st_meta", None)  # (a traced value's .shape: a slow path)
        for s in meta.shape if meta is not None else (val,):
            env = getattr(s, "env", None)
            if env is not None and hasattr(env, "hint"):
                return env
    return None


_KINDS: dict = {}  # a state input's kind -> torch's InputKind (`input_kind`)


def input_kind(kind: str) -> Any:
    """torch's ``InputKind`` of a state input of our `kind` (its table made once)."""
    if not _KINDS:
        kinds = graph_signature().InputKind
        _KINDS.update({"parameter": kinds.PARAMETER, "buffer": kinds.BUFFER,
                       "constant": kinds.CONSTANT_TENSOR})
    return _KINDS[kind]


_SPECIALIZED: tuple = (None, None)  # the last settings replaced, and the replacement


def specialized(settings: Any) -> Any:
    """``dataclasses.replace(settings, specialize_zero_one=True)``, made once for the
    settings object every conversion's ShapeEnv shares (~1% of a small conversion); the
    settings are frozen, so sharing the replacement is sharing a value."""
    global _SPECIALIZED
    last, made = _SPECIALIZED
    if last is not settings:
        made = dataclasses.replace(settings, specialize_zero_one=True)
        _SPECIALIZED = (settings, made)  # (one assignment: a thread sees a matched pair)
    return made


_NEW = object.__new__
# [(InputSpec, TensorArgument, InputKind.BUFFER)] once `state_spec`'s check has passed,
# [None] where it failed (torch's constructors then serve)
_DIRECT: list = []


def state_spec(kind: Any, name: str, target: str, persistent: bool | None) -> Any:
    """``InputSpec(kind, TensorArgument(name), target, persistent)`` (a state input's),
    the two dataclasses' fields written directly: their constructors and InputSpec's
    ``__post_init__`` (which checks the arg's type and a buffer's flag, both ours) cost
    ~2 µs a placeholder, for a program's every parameter and buffer.  Checked once per
    process against torch's constructors (same class, same fields in their order)."""
    classes = _DIRECT[0] if _DIRECT else _direct_specs()
    if classes is None or (persistent is None and kind is classes[2]):
        gs = graph_signature()  # (a buffer without its flag: torch's check refuses it)
        return gs.InputSpec(kind, gs.TensorArgument(name), target, persistent)
    return _made(classes, kind, name, target, persistent)


def _made(classes: tuple, kind: Any, name: str, target: str,
          persistent: bool | None) -> Any:
    # (attributes set one by one on the new objects: Python keeps them in the class's
    # shared key table; a dict assigned as __dict__ costs twice as much)
    spec_class, arg_class, _ = classes
    arg = _NEW(arg_class)
    arg.name = name
    spec = _NEW(spec_class)
    spec.kind = kind
    spec.arg = arg
    spec.target = target
    spec.persistent = persistent
    return spec


def _direct_specs() -> tuple | None:
    gs = graph_signature()
    classes = (gs.InputSpec, gs.TensorArgument, gs.InputKind.BUFFER)
    try:
        made = _made(classes, gs.InputKind.BUFFER, "b", "t", True)
        theirs = gs.InputSpec(gs.InputKind.BUFFER, gs.TensorArgument("b"), "t", True)
        ok = list(vars(theirs).items()) == list(vars(made).items()) and \
            list(vars(theirs.arg).items()) == list(vars(made.arg).items()) and \
            theirs == made
    except Exception:  # noqa: BLE001 - torch's classes changed: its constructors serve
        ok = False
    _DIRECT[:] = [classes if ok else None]
    return _DIRECT[0]


def settled(conv: Any, ordered: list, calls: list, walk: list | None) -> bool:
    """Whether conversion `conv` runs no torch kernel and no symbolic operation, so that
    its steps need none of the modes propagation runs under (the fake mode, the Python
    dispatcher, the size-oblivious setting; ~7 µs to enter and leave, ~3% of a small
    static program's conversion): a program of static sizes, no subgraph, no other path
    of a state value, inputs plain tensors with no layout asked, every state value plain
    (its fake made before the modes, as always), and every call node an ATen op whose
    value an earlier conversion of the program kept (`FakeBuilder.value`'s memo: wrapped,
    not computed).  The program's part is found once and kept in its plan's memo; a
    node once kept stays kept."""
    if conv.verify or conv.fakes.debug or conv.mode.propagate_real_tensors or \
            len(conv.state_fakes) != len(ordered) - len(conv.ep.contract.inputs):
        return False
    memo = conv.memo
    known = memo.get("settled")
    if known is None:
        known = memo["settled"] = _static_plan(conv.ep, calls, walk)
    if known is not True:
        if not known:
            return False
        kept, built = conv.static_values, conv.built
        if not all(n in kept and n in built for n in known):
            return False
        memo["settled"] = True  # (the memo and the set only grow)
    return True


def _static_plan(ep: Any, calls: list, walk: list | None) -> list | bool:
    """The program's part of `settled`: False, or the call nodes whose values must be
    kept before a conversion settles (the ATen ops; a part of a multi-output op's value,
    ``operator.getitem`` of a node whose value is a list, is taken from that list by
    `_op` with no kernel and no symbolic operation: split's, unbind's parts)."""
    c = ep.contract
    if walk is not None or vars(ep).get("state_aliases") or c.symbols or c.conditions:
        return False
    for inp in c.inputs:
        if type(inp) is not TensorInput or inp.scalar or inp.subclass or \
                inp.layout is not None or any(d.kind != "static" for d in inp.dims):
            return False
    overload, contiguous = torch._ops.OpOverload, torch.ops.aten.contiguous.default
    ops = []
    for n in calls:
        target = n.target
        if target is operator.getitem and _part_of_list(n):
            continue
        if type(target) is not overload or target is contiguous or target in MASK_OPS or \
                target in SPECIALIZING or target is torch.ops.aten.sym_size.int:
            return False
        ops.append(n)
    return ops or True


def _part_of_list(node: torch.fx.Node) -> bool:
    """``operator.getitem(op, i)`` of an ATen op's node whose value is a list or tuple."""
    src, index = node.args if len(node.args) == 2 else (None, None)
    return not node.kwargs and type(index) is int and isinstance(src, torch.fx.Node) and \
        src.op == "call_function" and type(src.target) is torch._ops.OpOverload and \
        isinstance(src.meta.get("val"), (tuple, list))


# Ops whose fake kernels (Python decompositions looping over time steps) specialize the
# sequence length: their outputs' metadata is ours instead, so the converted program
# keeps that dim dynamic (unflatten's input checks and compilers read these values); the
# conversion never takes them from a kept value (`settled`: such a program is not).
SPECIALIZING = tuple(getattr(torch.ops.aten, op).input for op in
                     ("gru", "rnn_tanh", "rnn_relu")) + tuple(
    getattr(torch.ops.aten, op).data for op in ("gru", "rnn_tanh", "rnn_relu")) + (
    torch.ops.aten.pad_sequence.default,)  # (its Python max() of lengths: one guarded side)
