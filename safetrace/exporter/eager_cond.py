"""``ep.module()`` runs a program's ``torch.cond``, ``while_loop`` and ``map`` nodes as
torch's dense kernels do.

Under autograd (a parameter or input that requires grad) torch's eager ``cond`` first
traces both branches with fake tensors, for its autograd's schema and backward graphs.
That needs torch's fake implementation of every custom op in either branch, and an op
with only ``st.register_fake`` has none: a program whose size split put such an op in a
branch failed on every call.  The module built by ``ep.module()`` instead calls the branch
the predicate picks on the real tensors, as the dense kernel does (autograd records
through it as through any eager code, the same gradients).  A ``while_loop`` node likewise
runs its body while its condition holds, as torch's dense kernel does: torch's eager entry
reads the subgraphs' ``meta["val"]`` for its autograd schema on some releases (2.11), and
those hold safetrace's own metadata, not fake tensors.  A ``map`` node runs its body on
each slice and stacks the results, as the dense kernel does: torch's eager ``map`` under
autograd first traces its body for its backward graph, which a size computed from data
in the body (``x[x > 0]``, a count of boxes) stops, so a program that ran under
``torch.no_grad()`` failed with grad enabled; run so, autograd records through the body as
through eager code (outputs require grad exactly when eager's do).  While the program is traced
(dynamo, fake or functional tensors, a functorch transform, safetrace's own tracer) the
nodes stay torch's.  The program's graph itself is not changed.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any, Callable

import torch

__all__ = ["eager_forward"]

_COND = torch.ops.higher_order.cond
_WHILE = torch.ops.higher_order.while_loop
_MAP = torch.ops.higher_order.map_impl
_PLAIN = (torch.Tensor, torch.nn.Parameter)
# branch or program module -> ((id of its graph, node count), forward)
_FORWARDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def eager_forward(gm: torch.fx.GraphModule) -> Callable:
    """`gm`'s forward, with its cond, while_loop and map nodes run by `run_cond`,
    `run_while_loop` and `run_map` (gm.forward when it has none)."""
    key = (id(gm.graph), len(gm.graph.nodes))
    found = _FORWARDS.get(gm)
    if found is not None and found[0] == key:
        return found[1]
    if not any(n.op == "call_function" and n.target in _RUNS for n in gm.graph.nodes):
        forward = gm.forward
    else:
        graph = copy.deepcopy(gm.graph)
        for n in graph.nodes:
            if n.op == "call_function" and n.target in _RUNS:
                n.target = _RUNS[n.target]
        forward = torch.fx.GraphModule(gm, graph).forward
    _FORWARDS[gm] = (key, forward)
    return forward


def run_cond(pred: Any, true_fn: Any, false_fn: Any, operands: Any) -> Any:
    """``torch.ops.higher_order.cond(pred, true_fn, false_fn, operands)``."""
    if not _eager(pred, operands):
        return _COND(pred, true_fn, false_fn, operands)
    return _runnable(true_fn if bool(pred) else false_fn)(*operands)


def run_while_loop(cond_fn: Any, body_fn: Any, carried: Any, additional: Any) -> Any:
    """``torch.ops.higher_order.while_loop(cond_fn, body_fn, carried, additional)``."""
    if not isinstance(carried, (tuple, list)) or \
            not _eager(False, (*carried, *additional)):
        return _WHILE(cond_fn, body_fn, carried, additional)
    # (the subgraph modules themselves are called: a loaded program's loop counts its
    # iterations in their __call__, serialize/subgraphs.py)
    cond, body = cond_fn, body_fn
    values = tuple(carried)
    go = cond(*values, *additional)
    if not go:  # (the dense kernel returns copies when the body never runs)
        return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in values)
    while go:
        out = body(*values, *additional)
        if not isinstance(out, tuple) or len(out) != len(values):
            raise RuntimeError(f"while_loop: the body returned {type(out).__name__} of "
                               f"{len(out) if isinstance(out, tuple) else 1} values where "
                               f"{len(values)} are carried")
        values = out
        go = cond(*values, *additional)
    return values


def run_map(body: Any, xs: Any, pos: Any) -> Any:
    """``torch.ops.higher_order.map_impl(body, xs, pos)``: the body on each slice of the xs
    along dim 0, each of its outputs stacked, as torch's dense kernel does."""
    if not isinstance(xs, (tuple, list)) or not xs or not isinstance(pos, (tuple, list)) \
            or not all(isinstance(x, torch.Tensor) and x.dim() >= 1 for x in xs) \
            or not _eager(False, (*xs, *pos)):
        return _MAP(body, xs, pos)
    n = xs[0].shape[0]
    if n == 0 or any(x.shape[0] != n for x in xs):
        return _MAP(body, xs, pos)  # (torch's own refusal)
    # (a loaded program's body counts its slices in its own __call__, which runs its graph
    # through eager_forward: serialize/subgraphs.py)
    fn = body if hasattr(body, "st_loop") else _runnable(body)
    slices = [x.unbind(0) for x in xs]
    results = [fn(*(s[i] for s in slices), *pos) for i in range(n)]
    first = results[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(results)
    if not isinstance(first, (tuple, list)) or \
            not all(isinstance(v, torch.Tensor) for r in results for v in r):
        return _MAP(body, xs, pos)  # (not a graph's tensors: torch's kernel decides)
    stacked = [torch.stack(column) for column in zip(*results)]
    return type(first)(stacked) if isinstance(first, list) else tuple(stacked)


def _runnable(fn: Any) -> Callable:
    return eager_forward(fn) if isinstance(fn, torch.fx.GraphModule) else fn


_RUNS = {_COND: run_cond, _WHILE: run_while_loop, _MAP: run_map}


def _eager(pred: Any, operands: Any) -> bool:
    """Whether this call runs on real tensors, outside any tracing."""
    if isinstance(pred, torch.Tensor):
        if type(pred) not in _PLAIN:
            return False
    elif not isinstance(pred, bool):
        return False  # torch's SymBool: traced
    if any(isinstance(x, torch.Tensor) and type(x) not in _PLAIN for x in operands):
        return False
    return not torch.compiler.is_compiling() and \
        torch._C._len_torch_dispatch_stack() == 0 and \
        not torch._C._is_torch_function_mode_enabled() and \
        torch._C._functorch.peek_interpreter_stack() is None
