"""A custom op without a fake kernel, under torch's ``fake_tensor_propagate_real_tensors``.

With that flag set, torch.export (draft export) runs such an op's kernel on the example's
real values and infers its fake from the result: every size a new data-dependent size
(``u0 >= 0``), dtype and device as the kernel returned them; a result with a storage
offset or a layout that is not dense is refused.  safetrace does the same: the program
recorded so far is run on copies of the example inputs and state to get the op's real
arguments, the kernel runs on them, and what was read from that one run becomes a check
of the program, never an assumption: each size is a new data-dependent size (only
``>= 0``, which every size is), and the result's rank, dtype and device are asserted
after the op (``aten.permute`` to its own order, ``aten._assert_tensor_metadata``), so a
call whose kernel returns another rank or dtype stops there.
"""

from __future__ import annotations

import contextvars
import sys
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

from safetrace.errors import MissingFake, draft_result, missing_fake
from safetrace.meta import TensorMeta
from safetrace.rules.common import new_size
from safetrace.trace.proxy import Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.source import short, stack_trace

aten = torch.ops.aten


_FLAG = "fake_tensor_propagate_real_tensors"


def requested() -> bool:
    """Whether torch's ``fake_tensor_propagate_real_tensors`` flag is set (read where torch
    keeps it, when torch has loaded it: never imported here)."""
    config = sys.modules.get("torch._functorch.config")
    if config is None:  # (not loaded: getattr on None would raise and drop an error)
        return False
    # (torch's config module reads an attribute by a Python __getattr__ reached after a
    # failed lookup: ~17k instructions, twice per export once ``to_torch`` has loaded the
    # module; its entry's override read directly where the entry holds no other source)
    kept = _ENTRY[0]
    table = vars(config).get("_config")
    if kept is None or kept[0] is not config or kept[1] is not table or \
            type(table) is dict and table.get(_FLAG) is not kept[2]:
        kept = _ENTRY[0] = _plain_entry(config, table)
    entry = kept[3]
    if entry is None or entry.hide:
        return bool(getattr(config, _FLAG, False))
    value = entry.user_override.get()
    return bool(kept[4] if value is kept[5] else value)


# [(config module, its entry table, the flag's entry, that entry where plain or None, its
# default, torch's "unset" marker)]
_ENTRY: list = [None]


def _plain_entry(config: Any, table: Any) -> tuple:
    """``_ENTRY``'s row for `config`: the entry None where the flag's value may come from
    anything but a per-context override and a fixed default (an alias, an environment
    variable that forces it, a justknob, a deprecation warning, another torch's layout)."""
    entry = table.get(_FLAG) if type(table) is dict else None
    unset = getattr(sys.modules.get("torch.utils._config_module"), "_UNSET_SENTINEL", None)
    try:
        plain = unset is not None and type(entry.user_override) is contextvars.ContextVar and \
            entry.alias is None and entry.justknob is None and not entry.deprecated and \
            entry.env_value_force is unset and type(entry.default) is bool
        default = entry.default if entry.env_value_default is unset else \
            entry.env_value_default
    except AttributeError:  # (another torch's entry, or none)
        plain, default = False, None
    return config, table, entry, entry if plain else None, default, unset


def infer(tr: Recorder, op: Any, args: tuple, kwargs: dict, feed: Callable | None) -> Any:
    """Record `op` (no fake kernel) from one run of its kernel on the example's values."""
    where = short(stack_trace(5))
    name = op._schema.name
    # (inside a branch: no single value; a list: its length is data no check could pin)
    if feed is None or tr.scope is not tr.scopes[0] or any(
            isinstance(r.type, torch.ListType) for r in op._schema.returns):
        raise missing_fake(name, where)
    real_args, real_kwargs = _real_arguments(tr, (args, kwargs), feed(), name, where)
    try:
        with torch._C.DisableTorchFunction(), torch.no_grad():
            result = op(*real_args, **real_kwargs)
    except Exception as exc:  # the kernel's own error, as eager's; marked for strict=True
        exc.st_kernel_raised = True  # (exporter/caught.py: dynamo's class there, as torch's)
        raise
    outs = result if isinstance(result, (tuple, list)) else (result,)
    for i, t in enumerate(outs):
        if isinstance(t, torch.Tensor):
            if t.storage_offset() != 0:
                raise draft_result(name, i, "has a non-zero storage offset", where)
            if not _dense(t):
                raise draft_result(name, i, "is not dense in memory", where)
        else:  # (a number or None read from one run would be a constant of the program)
            raise missing_fake(name, where)
    n_syms = len(tr.env.symbols)
    metas = [TensorMeta(tuple(new_size(0, None, f"a size of {name}'s result")
                              for _ in range(t.dim())), t.dtype, t.device) for t in outs]
    out = type(result)(metas) if isinstance(result, (tuple, list)) else metas[0]
    value = tr.emit(op, args, kwargs, out=out, n_syms=n_syms)
    node = next(n for n in reversed(tr.scope.graph.nodes) if n.target is op)
    node.meta["st_fake_inferred"] = True  # (to_torch builds its value from ours)
    for p, t in zip(value if isinstance(value, (tuple, list)) else (value,), outs):
        if isinstance(t, torch.Tensor) and isinstance(p, Proxy):
            p.st_contig = p.st_layout = None  # (its strides are the kernel's)
            same_order = tr.emit(aten.permute.default, (p, list(range(t.dim()))), {})
            tr.emit(aten._assert_tensor_metadata.default, (same_order,),
                    {"dtype": t.dtype, "device": t.device})
    return value


def decided_bool(tr: Recorder, x: Proxy) -> bool | None:
    """``bool(x)`` of a one-element traced tensor, under the flag: its value in the example
    (the graph so far run on copies of the example's inputs and state), with a check of
    the program that the value is the same when it runs (a call whose data gives the other
    answer stops there, as the traced side would be wrong for it); None when it cannot be
    had here."""
    if tr.real_feed is None or tr.scope is not tr.scopes[0] or \
            any(not isinstance(s, int) or s != 1 for s in x.st_meta.shape):
        return None
    try:
        (real,) = _real_arguments(tr, (x,), tr.real_feed(), "", "")
    except MissingFake:
        return None
    with torch._C.DisableTorchFunction():
        value = bool(real)
    held = x if value else tr.emit(aten.eq.Scalar, (x, 0), {})
    tr.emit(aten._assert_async.msg, (held, f"bool() of a tensor was {value} in the example, "
                                            f"and the program was exported for that value "
                                            f"(torch's fake_tensor_propagate_real_tensors)"),
            {})
    return value


def _real_arguments(tr: Recorder, tree: Any, inputs: dict, name: str, where: str) -> Any:
    """`tree` with each traced tensor or size replaced by its value in a run of the graph
    recorded so far on copies of the example's inputs and state."""
    for t, node in tr.const_nodes.items():
        if node not in inputs:
            found = next((c for c in tr.constants.values() if id(c) == t), None)
            if found is not None:
                inputs[node] = found
    wanted = [a.st_node if isinstance(a, Proxy) else tr.sym_node(a)
              for a in pytree.tree_leaves(tree) if isinstance(a, Proxy) or _is_sym(a)]
    values = _run_prefix(tr.scopes[0].graph, inputs, set(wanted))
    if values is None:
        raise missing_fake(name, where)

    def real(a: Any) -> Any:
        if isinstance(a, Proxy):
            return values[a.st_node]
        if _is_sym(a):
            return values[tr.sym_node(a)]
        return a

    return pytree.tree_map(real, tree)


def _dense(t: torch.Tensor) -> bool:
    """Its elements fill its storage span without gaps or overlaps, in some dim order (an
    empty tensor has nothing to place)."""
    if t.numel() == 0:
        return True
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    step = 1
    for st, n in dims:
        if st != step:
            return False
        step *= n
    return True


def _is_sym(a: Any) -> bool:
    return hasattr(a, "env") and hasattr(a, "expr")


def _run_prefix(graph: torch.fx.Graph, inputs: dict, wanted: set) -> dict | None:
    """The values of the graph's nodes, in order, until every node of `wanted` has one;
    None when one of them cannot be had here (it needs an input without an example value,
    or a subgraph).  (A value read here only feeds what becomes a check of the program.)"""
    values: dict = {}
    left = set(wanted)
    # (the generator is put back: a random op run here draws nothing the program sees)
    generator = torch.default_generator
    state = generator.get_state()
    try:
        return _run_nodes(graph, inputs, values, left)
    finally:
        generator.set_state(state)


def _run_nodes(graph: torch.fx.Graph, inputs: dict, values: dict, left: set) -> dict | None:
    with torch._C.DisableTorchFunction(), torch.no_grad():
        for node in graph.nodes:
            if not left:
                break
            if node.op == "placeholder":
                if node in inputs:
                    v = inputs[node]
                    values[node] = v.clone() if isinstance(v, torch.Tensor) else v
            elif node.op == "call_function" and not isinstance(
                    node.target, torch._ops.HigherOrderOperator):
                try:  # (a node on an input without a value here is left without one)
                    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                                         lambda n: values[n])
                except KeyError:
                    continue
                values[node] = node.target(*args, **kwargs)
            left.discard(node)
    return values if not left else None

