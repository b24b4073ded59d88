"""``ep.module()`` runs a program's ``torch.cond`` nodes as torch's dense kernel does.

Under autograd (a parameter or input that requires grad) torch's eager ``cond`` first
traces both branches with fake tensors, for its autograd's schema and backward graphs.
That needs torch's fake implementation of every custom op in either branch, and an op
with only ``st.register_fake`` has none: a program whose size split put such an op in a
branch failed on every call.  The module built by ``ep.module()`` instead calls the branch
the predicate picks on the real tensors, as the dense kernel does (autograd records
through it as through any eager code, the same gradients).  While the program is traced
(dynamo, fake or functional tensors, a functorch transform, safetrace's own tracer) the
node stays torch's cond.  The program's graph itself is not changed.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any, Callable

import torch

__all__ = ["eager_forward"]

_COND = torch.ops.higher_order.cond
_PLAIN = (torch.Tensor, torch.nn.Parameter)
# branch or program module -> ((id of its graph, node count), forward)
_FORWARDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def eager_forward(gm: torch.fx.GraphModule) -> Callable:
    """`gm`'s forward, with its cond nodes run by `run_cond` (gm.forward when it has
    none)."""
    key = (id(gm.graph), len(gm.graph.nodes))
    found = _FORWARDS.get(gm)
    if found is not None and found[0] == key:
        return found[1]
    if not any(n.op == "call_function" and n.target is _COND for n in gm.graph.nodes):
        forward = gm.forward
    else:
        graph = copy.deepcopy(gm.graph)
        for n in graph.nodes:
            if n.op == "call_function" and n.target is _COND:
                n.target = run_cond
        forward = torch.fx.GraphModule(gm, graph).forward
    _FORWARDS[gm] = (key, forward)
    return forward


def run_cond(pred: Any, true_fn: Any, false_fn: Any, operands: Any) -> Any:
    """``torch.ops.higher_order.cond(pred, true_fn, false_fn, operands)``."""
    if not _eager(pred, operands):
        return _COND(pred, true_fn, false_fn, operands)
    branch = true_fn if bool(pred) else false_fn
    run = eager_forward(branch) if isinstance(branch, torch.fx.GraphModule) else branch
    return run(*operands)


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
