"""Whole calls on static sizes, remembered: the plan, the overload and the rule's answer.

A call of a plain op (``torch.add(x, y)``, ``x.view(-1, 8)``, ``F.linear(x, w)``) on
tensors whose sizes are all ints takes one path through the tracer: the callable's plan
(``dispatch.py``), the overload its argument types fit with its arguments bound
(``schema.resolve``), the shape rule's answer (``rulecache.py``), then one node.  Every
step is a function of the same things: the callable, each tensor's shape, dtype and
device (its meta's ``static`` key: no value facts), whether its layout is known (a view
of unknown layout is marked) and whether it is a program state tensor, the values of
every other argument (positional or keyword, in order), and torch's default dtype.  The
first such call records what it produced (an entry: the overload, its node's arguments
with the tensors as slots, the result's static meta and layout); a later call with the
same key records the node directly (``call``).

A call is remembered only when its path was the plain one, checked on what it did
(``traced``): one op recorded by ``Tracer.emit`` through the rule (no other node but
those computing a size it reads for the first time, which a replay makes again; no new
symbol, no write, no traced-through Python body, no value or mask bookkeeping but an
integer arange's span, kept in the entry), its result one tensor (or, on static sizes,
several: one getitem node each, ``_pieces``), and every tensor of the call an argument
of its node (a tensor read as a number, ``x.view(n)`` of a 0-d tensor of known value,
is not remembered).  A call without a tensor (a factory) is keyed by its other
arguments.  A call the key does not describe (value facts, constants found in the
code, any other kind of argument) goes the whole way each time.  A ``view`` of a
tensor whose layout is not known contiguous is replayed with eager's view check run again
on the call's own tensor and sizes (``layout._check_view`` reads the example's strides and
whether the line is inside a ``try``, neither of them in the key); where the check is
decided by the tensor's exact strides alone (``layout.view_proven``: a function of the
key), the key is kept in ``PROVEN`` and its replays skip it.  A view of a tensor known
contiguous runs its check (``layout.view_check``, kept per key in ``VIEW_CHECKS``: inside
a ``try`` it makes the program depend on its inputs' layout).  The table is emptied
when a shape rule is registered or replaced (``refresh``, with the tracer's per-op table);
``tests/trace/test_memo.py`` shows each part of the key and the emptying at work.

Calls on symbolic sizes are remembered too: a tensor of symbolic sizes is keyed by its
sizes' expressions (interned: the same expression is the same object), with its dtype and
device, and such a key also holds the name of the environment's state
(``Env.state_name``, ``symbolic/history.py``: the same in any export whose environment
went through the same changes from the same configuration, e.g. a later export of the
same model with the same spec and example sizes; a name no other environment has after a
change the name cannot describe).  Everything the rule and the plan decide is a function
of those sizes and of the environment's state, so the same key gets the same answer; a
call is remembered only when it left the environment's ``epoch`` as it found it (it asked
nothing the environment had to record, and no question the facts left open, whose answer
may depend on the asking frame: a replay skips nothing).  Its entry holds the result's
sizes as expressions, made values of the replaying export's environment.  A symbolic
size given as an argument (``x.view(b, 2, -1)``) is keyed by its expression too; a node
argument that computes a size (its ``sym_size`` read, arithmetic on it) is kept as the
size (``SizeSlot``) and a replay takes the replaying scope's node for it, made there as
the general path makes it when the scope has none yet.  Exact strides on symbolic sizes
(``x.transpose(0, 1)``'s, strides.py) are keyed and kept as expressions in the same way.
Sizes of another environment, and metas with value facts, are not keyed.

``x[index]`` (``handlers/views.py``) goes through ``call`` too, its index keyed by value
(ints, sizes, None, Ellipsis, a slice by its three bounds): remembered when it lowered to
one plain op (``x[:, 0]``, ``x[..., None]``, ``x[1:n]``); an index of several views
(``x[:, None, None, :]``) is traced, each of its views keyed and replayed on its own
(``emit``, which handlers use for the op they record: casts, ``contiguous``).
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import torch

from safetrace.errors import autocast_active
from safetrace.meta import TensorMeta
from safetrace.meta.active import ACTIVE
from safetrace.trace.autocast import autocast_changes
from safetrace.trace.graph import FAST_NODES, add_getitems
from safetrace.trace.index_ranges import CHECKS
from safetrace.trace.layout import UNREAD, view_check, view_proven, view_sizes
from safetrace.trace.proxy import WRAPPER, Proxy
from safetrace.trace.recorder import Recorder
from safetrace.trace.source import LIBRARY_FILES, TRACES, short, stack_trace
from safetrace.trace.symnodes import expr_node
from safetrace.trace.memo_keys import (KWARGS, LOOSE, PLAIN, STATE, STATE_TYPES, STRIDES,
                                        VIEW, argument)
from safetrace.trace.memo_values import Strided, set_layout, span_key, strided, with_layouts
from safetrace.trace.versions import stamp

_LIMIT = 50_000  # entries (a few MB); the table starts again when full
MEMO: dict[tuple, tuple] = {}
# the keys of views of a tensor of unknown layout whose fit to its exact strides is proven
# (layout.view_proven): their replays skip eager's view check
PROVEN: set[tuple] = set()
# the key of a view of a tensor known contiguous -> the check its replays run inside a
# `try` (layout.view_check; None: it fits any strides)
VIEW_CHECKS: dict[tuple, Any] = {}
_default_dtype = torch.get_default_dtype
_cudnn = torch._C._get_cudnn_enabled  # (F.batch_norm's body passes it on: composites.py)
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
# (whether an iterable of types holds int alone: exact strides on static sizes, in C)
_INTS_ONLY = frozenset((int,)).issuperset


_VIEW_OP = torch.ops.aten.view.default
_STRIDE_CHECKED = frozenset({torch.Tensor.view, torch.Tensor.view_as, _VIEW_OP,
                             torch.ops.aten.view.dtype})


def call(tr: Recorder, func: Any, plan: Any, args: tuple, kwargs: dict) -> Any:
    """The call ``func(*args, **kwargs)`` traced by `plan`, answered from its entry when
    the same key was traced before (the node again, at this line), else traced by
    ``traced`` (which remembers it when it took the plain path); a call no key describes
    goes by its plan."""
    env = tr.env
    unsure = solid = None
    if func in _STRIDE_CHECKED and args and type(args[0]) is Proxy:
        contig = args[0].st_contig
        if contig is not True:
            # (a view of a tensor whose layout is not known contiguous: its check replays
            # the example's strides and reads whether the line is in a `try`, neither of
            # which the key holds: a replay runs the check again, on this call's tensor
            # and sizes, read by view_sizes, below; a form the replay does not check, a
            # dtype's, is traced anew: a function of the key's types, so it is asked at a
            # miss, and a hit's form is one its miss found checked)
            unsure = True
        if contig is not None:  # (known contiguous: in a `try`, the view depends on the
            solid = True        # inputs' layout, layout.py)
    # the key: the callable, the default dtype and cudnn flag, then each argument (the node of
    # each of its tensors, in order, in `nodes`: the slots of an entry); `sym` holds the
    # env whose sizes may be keyed, then a mark for each tensor of symbolic sizes (made
    # at the first argument `argument` keys: none for the usual three kinds inline below)
    parts: list = [func, _default_dtype(), _cudnn()]
    nodes: list = []
    sym: list | None = None
    state = tr.state
    for a in args:
        if type(a) is Proxy and a._st_value is None and \
                (s := a.st_meta.static) is not None and \
                ((lay := a.st_layout) is None or _INTS_ONLY(map(type, lay[0]))):
            # (a proxy of static sizes, the usual argument, or a view of it with exact
            # int strides, a transpose's: argument's first case and strides_key's answer
            # on static sizes, inline)
            if lay is not None:
                parts.append(STRIDES)
                parts.append(lay)
            if a.st_contig is not True:
                parts.append(VIEW if a.st_contig is None else LOOSE)
            parts.append(s)
            nodes.append(a.st_node)
        elif type(a) is int:  # (a size or a dim: as argument keys it)
            parts.append(int)
            parts.append(a)
        elif type(a) in STATE_TYPES and (node := state.get(id(a))) is not None:
            # (a parameter or buffer of the program, F.linear's weight: _tensor, inline)
            val = node.meta["val"]
            if (s := val.st_meta.static) is None or val.st_contig is None:
                # (symbolic sizes, or a strided state tensor: its strides decide its
                # results' layout, strides.py; as _tensor)
                return plan(tr, func, args, kwargs)
            parts.append(STATE)
            parts.append(s)
            nodes.append(node)
        elif (t := type(a)) in PLAIN:  # (F.batch_norm's training, momentum, eps: as
            parts.append(t)            # argument keys them, inline)
            parts.append(a if a or t is not float else repr(a))
        elif (t is tuple or t is list) and _INTS_ONLY(map(type, a)):
            # (F.conv2d's stride and padding, a view's sizes: _sequence's key of ints)
            inner = []
            for x in a:
                inner.append(int)
                inner.append(x)
            parts.append(t)
            parts.append(tuple(inner))
        elif not argument(a, state, parts, nodes, sym := sym or [
                env if env is not None and ACTIVE.env is env else None]):
            return plan(tr, func, args, kwargs)
    if kwargs:
        parts.append(KWARGS)
        for k, a in kwargs.items():
            parts.append(k)
            if (t := type(a)) in PLAIN:  # (dim=-1, eps=1e-5, is_causal=True: argument's
                parts.append(t)          # plain case, inline)
                parts.append(a if a or t is not float else repr(a))
            elif t in STATE_TYPES and (node := state.get(id(a))) is not None:
                # (F.layer_norm's weight=, F.batch_norm's: _tensor, inline, as above)
                val = node.meta["val"]
                if (s := val.st_meta.static) is None or val.st_contig is None:
                    return plan(tr, func, args, kwargs)
                parts.append(STATE)
                parts.append(s)
                nodes.append(node)
            elif not argument(a, state, parts, nodes, sym := sym or [
                    env if env is not None and ACTIVE.env is env else None]):
                return plan(tr, func, args, kwargs)
    if sym is not None and len(sym) > 1:
        # a symbolic size: the rule's questions were answered by the environment in the
        # state its name names (the same in any export that went through the same
        # changes, symbolic/history.py); the epoch tells whether the call changed it
        epoch = env.epoch
        parts.append(env.state_name)
    else:  # (the key holds for any export)
        epoch = None
    key = tuple(parts)
    try:
        hit = MEMO[key]
    except KeyError:
        hit = None
    if hit is None or (tr.tracing_through and func in tr.tracing_through):
        if unsure and view_sizes(func, args, kwargs) is None:  # (a form not checked)
            return plan(tr, func, args, kwargs)
        return traced(tr, (key, nodes, epoch), plan, func, args, kwargs, MEMO)
    # the call made before with the same key: its node again
    if solid and not tr.strides_queried:
        # (a view of a contiguous tensor: eager's view at other strides raises, which a
        # `try` around the line catches; its check, as the traced call ran it, is a
        # function of the key: None where the view fits any strides)
        try:
            check = VIEW_CHECKS[key]
        except KeyError:
            check = view_check(func, args, kwargs)
            if check is UNREAD:  # (a form not read here: traced anew, its check runs)
                return plan(tr, func, args, kwargs)
            if len(VIEW_CHECKS) >= _LIMIT:
                VIEW_CHECKS.clear()
            VIEW_CHECKS[key] = check
        if check is not None:
            check(tr, args[0])
    if unsure and not solid and hit[0] is _VIEW_OP and (tr.vmapped or key not in PROVEN):
        # (eager's view check, as the traced call ran it on its node's op; one proven from
        # exact strides, a function of the key, is proven again for any call of that key:
        # its sizes are not read then)
        checked = view_sizes(func, args, kwargs)
        if checked is None:  # (not met: the form is the key's, checked at its miss)
            return plan(tr, func, args, kwargs)
        if not tr.vmapped and view_proven(args[0], checked):
            if len(PROVEN) >= _LIMIT:
                PROVEN.clear()
            PROVEN.add(key)
        else:
            CHECKS[_VIEW_OP](tr, (args[0], checked), {})
    op, targs, fills, tkwargs, kfills, name, out_static, contig, sizes, span = hit
    if fills is None:  # (the node's arguments are the call's tensors, in order)
        targs = tuple(nodes)
    elif fills:
        nargs = list(targs)
        for i in fills:
            v = targs[i]
            nargs[i] = nodes[v.index] if v.__class__ is Slot else fill(v, nodes, tr)
        targs = tuple(nargs)
    if kfills:
        tkwargs = dict(tkwargs)
        for k in kfills:
            tkwargs[k] = fill(tkwargs[k], nodes, tr)
    # the user's line: source.stack_trace's answer when its tables have it (inline: the
    # frames of torch's and safetrace's code skipped, then the cached text of that
    # instruction in this module call), else its own walk
    trace = None
    f = sys._getframe(2)  # (the caller of the mode's __torch_function__)
    while f is not None:
        fc = f.f_code
        file = fc.co_filename
        if file not in LIBRARY_FILES:
            break
        if not LIBRARY_FILES[file]:
            try:  # (source.TRACES's key; a miss is rare: stack_trace fills it)
                trace = TRACES[file, fc.co_name, fc.co_firstlineno, fc.co_linetable,
                               f.f_lasti, tr.nn_layer]
            except KeyError:
                pass
            break
        f = f.f_back
    if trace is None:
        trace = stack_trace(3, tr.nn_stack)
    if _autocast_on() and autocast_changes(op, targs, tkwargs):
        raise autocast_active(short(trace), op)
    tr.n_emits += 1
    node = tr.scope.record(op, targs, tkwargs, name, trace)
    meta = node.meta
    if tr.torch_fn is not None:
        meta["torch_fn"] = tr.torch_fn
    if tr.nn_stack:
        meta["nn_module_stack"] = tr.nn_stack
    if sizes is None:  # several results (split): a getitem node each
        return _pieces(tr, node, out_static, contig)
    # (Proxy.__new__, inline: the wrapper's sizes are the entry's)
    result = meta["val"] = WRAPPER(Proxy, sizes, None, None, None, out_static[1],
                                   _STRIDED, out_static[2])
    # (an entry on symbolic sizes holds its symbolic key: sizes as expressions, made
    # values of this export's env)
    if epoch is None:  # (meta.tensor.static_meta, inline: one Python call less per op)
        result.st_meta = m = _NEW_META(TensorMeta)
        m.shape = shape = out_static[0]
        m.ndim = len(shape)
        m.dtype, m.device = out_static[1], out_static[2]
        m._bounds = m._mask_cell = m._symbolic = None
        m._bounds_epoch = 0
        m.static = out_static
    else:
        result.st_meta = _symbolic_meta(out_static, env)
    result.st_node = node
    result.st_layout = result._st_value = None  # (Proxy's slots, all set here)
    if contig is True:
        result.st_contig = True
    elif contig.__class__ is Strided and epoch is None:
        # (a transpose's exact strides on static sizes: set_layout's first case, inline)
        result.st_contig, result.st_layout = None, (contig[0], contig[1])
    else:
        set_layout(result, contig, None if epoch is None else env)
    if span is not None:  # (an integer arange's values, index_ranges.py: as it noted them)
        result.st_span = (stamp(result, tr), *(v if v.__class__ is int else
                                               env.int_cls(v, env) for v in span))
    return result


def emit(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> Any:
    """``tr.emit(op, args, kwargs)`` made by a handler (an index's views, a cast,
    ``contiguous``), keyed and replayed as a plain call is (``call``): the op and its
    arguments are the whole of what the emit depends on."""
    if tr.recording and not tr.unsourced_settled:
        return call(tr, op, _emit, args, kwargs)
    return tr.emit(op, args, kwargs)


def _emit(tr: Recorder, op: Any, args: tuple, kwargs: dict) -> Any:
    return tr.emit(op, args, kwargs)


_META, _STRIDED = torch.device("meta"), torch.strided


def _symbolic_meta(key: tuple, env: Any) -> TensorMeta:
    """The meta whose symbolic key in `env` is `key` (each expression as `env`'s value:
    the rule made it simplified in the same state)."""
    cls = env.int_cls
    meta = TensorMeta(tuple(s if s.__class__ is int else cls(s, env) for s in key[0]),
                      key[1], key[2])
    meta._symbolic = (env, key)
    return meta
_autocast_on = getattr(torch._C, "_is_any_autocast_enabled", lambda: False)
_NEW_META = object.__new__  # (TensorMeta's, as meta.tensor.static_meta makes one)


class Slot:
    """In an entry's node arguments: the call's `index`-th tensor's node."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class SizeSlot:
    """In an entry's node arguments: the node computing size `expr` in the replaying
    trace's scope (``symnodes.expr_node``, as the general path's ``sym_node`` makes it:
    shared when the scope has it, else made there)."""

    __slots__ = ("expr",)

    def __init__(self, expr: Any) -> None:
        self.expr = expr


def entry(op: Any, nargs: tuple, nkwargs: dict, name: str, out_static: tuple,
          contig: bool | None, nodes: list, sizes: Any, scope: Any = None,
          span: tuple | None = None) -> tuple | None:
    """The entry of a call that recorded node ``op(*nargs, **nkwargs)``: its arguments
    with each of the call's tensors (`nodes`) as a slot, its result's meta and wrapper
    `sizes`, and the values it spans (an integer arange's, index_ranges.py; symbolic
    ones as expressions); None unless every node argument is one of them, or (on
    symbolic sizes, `scope` given) the node of a size in `scope`, and each of them is an
    argument."""
    index = {id(n): i for i, n in enumerate(nodes)}
    used: set[int] = set()
    sizes_of: dict[int, Any] | None = None

    def template(v: Any) -> Any:
        nonlocal sizes_of
        if isinstance(v, torch.fx.Node):
            i = index.get(id(v))
            if i is None:
                if scope is None:
                    raise LookupError
                if sizes_of is None:
                    sizes_of = _sizes_of(scope)
                e = sizes_of.get(id(v))
                if e is None:  # (no size's node, or the node of two: not remembered)
                    raise LookupError
                return SizeSlot(e)
            used.add(i)
            return _SLOTS[i] if i < len(_SLOTS) else Slot(i)
        if isinstance(v, (list, tuple)):
            return type(v)(template(x) for x in v)
        return v

    try:
        targs = tuple(template(a) for a in nargs)
        tkwargs = {k: template(v) for k, v in nkwargs.items()}
    except LookupError:
        return None
    if len(used) != len(nodes):
        # a tensor given twice (x * x): its slots are one, and a later call with two
        # tensors (x * y) would get one of them twice; such calls are not remembered
        return None
    # what filling needs: which arguments hold slots (the rest are given as they are)
    fills = tuple(i for i, a in enumerate(targs) if _has_slot(a))
    if len(targs) == len(nodes) <= len(_SLOTS) and all(map(operator.is_, targs, _SLOTS)):
        fills = None  # (relu(x), linear(x, w, b): the node's arguments are the tensors)
    kfills = tuple(k for k, a in tkwargs.items() if _has_slot(a))
    return (op, targs, fills, tkwargs, kfills, name, out_static, contig, sizes, span)


_SLOTS = tuple(Slot(i) for i in range(16))  # (a slot is never changed: shared)


def _sizes_of(scope: Any) -> dict[int, Any]:
    """id(node) -> the size expression it computes, for the nodes of `scope`'s sizes
    (None for a node held under two keys)."""
    out: dict[int, Any] = {}
    for e, node in scope.sym_nodes.items():
        if e.__class__ is not int:  # (an opaque float's node, keyed by id: not a size)
            out[id(node)] = None if id(node) in out else e
    return out


def _has_slot(v: Any) -> bool:
    if v.__class__ is Slot or v.__class__ is SizeSlot:
        return True
    return isinstance(v, (list, tuple)) and any(_has_slot(x) for x in v)


def fill(v: Any, nodes: list, tr: Recorder) -> Any:
    """A template argument with its slots replaced by the call's nodes."""
    if v.__class__ is Slot:
        return nodes[v.index]
    if v.__class__ is SizeSlot:
        node = tr.scope.sym_nodes.get(v.expr)
        return node if node is not None else expr_node(tr, v.expr, tr.env)
    if v.__class__ is list or v.__class__ is tuple:
        return type(v)(fill(x, nodes, tr) for x in v)
    return v


def traced(tr: Recorder, found: tuple, plan: Any, func: Any, args: tuple,
           kwargs: dict, table: dict) -> Any:
    """Trace a call by its plan (`found`: its ``call_key``); remember it in `table` when
    it took the plain path: one op recorded by ``Tracer.emit`` through its rule, and
    nothing else (on symbolic sizes: the environment unchanged, its epoch the key's)."""
    n_emits, n_syms, graph = tr.n_emits, len(tr.symbols), tr.scope.graph
    n_nodes, depth = _node_count(graph), len(tr.tracing_through)
    n_sizes = len(tr.scope.sym_nodes)  # (a size's nodes the call makes: a replay makes them)
    before = tr.env.epoch if tr.env is not None else None
    tr.plain_emit = None
    result = plan(tr, func, args, kwargs)
    plain = tr.plain_emit
    if plain is not None and tr.env is not None and tr.env.epoch != before and \
            found[2] is None:  # (static sizes that recorded a requirement: every time)
        return result
    if plain is not None and strided(result):  # (exact strides: a Strided layout)
        plain = with_layouts(plain, result, None if found[2] is None else tr.env)
        if plain is None:
            return result
    if plain is not None and len(plain) == 9:  # several tensors (split): static sizes only
        if found[2] is None and tr.n_emits == n_emits + 1 and plain[-1] == depth and \
                len(tr.symbols) == n_syms and tr.scope.graph is graph and \
                _pieces_of(result, plain[0]) and \
                _node_count(graph) == n_nodes + 1 + len(plain[5]):
            _, op, nargs, nkwargs, name, statics, contigs, kind, _ = plain
            made = entry(op, nargs, nkwargs, name, statics, (kind, contigs), found[1], None)
            if made is not None:
                if len(table) >= _LIMIT:
                    table.clear()
                table[found[0]] = made
        return result
    if plain is not None and tr.n_emits == n_emits + 1 and type(result) is Proxy and \
            plain[0] is result.st_node and plain[-1] == depth and \
            len(tr.symbols) == n_syms and tr.scope.graph is graph and \
            _node_count(graph) == n_nodes + 1 + len(tr.scope.sym_nodes) - n_sizes and \
            (found[2] is None or tr.env.epoch == found[2]):
        _, op, nargs, nkwargs, name, out_static, contig, _ = plain
        if found[2] is None:
            sizes = out_static[0]
        else:  # (the wrapper's example sizes, as Proxy made them: the same in this state)
            with _NO_TORCH_FUNCTION():
                sizes = tuple(result.shape)
            out_static = result.st_meta.symbolic_key(tr.env)  # (no env's values kept)
            if out_static is None:
                return result
        span = None
        if getattr(result, "st_span", None) is not None:  # (an arange's, index_ranges.py)
            span = span_key(result.st_span, tr.env if found[2] is not None else None)
            if span is None:
                return result
        made = entry(op, nargs, nkwargs, name, out_static, contig, found[1], sizes,
                     None if found[2] is None else tr.scope, span)
        if made is not None:
            if len(table) >= _LIMIT:
                table.clear()
            table[found[0]] = made
    return result


def _pieces_of(result: Any, node: torch.fx.Node) -> bool:
    """Whether `result` is the proxies of `node`'s results, one getitem each, in order."""
    if not isinstance(result, (tuple, list)):
        return False
    for i, p in enumerate(result):
        if type(p) is not Proxy or p.st_node.target is not operator.getitem or \
                p.st_node.args != (node, i):
            return False
    return True


def _pieces(tr: Recorder, node: torch.fx.Node, statics: tuple, layout: tuple) -> Any:
    """The proxies of a replayed op's several results (`statics`: their static metas;
    `layout`: the kind of list and named tuple type of the result, and their layouts),
    one getitem node each, as ``Tracer.wrap`` makes them."""
    (kind, named), contigs = layout
    trace = node.meta["stack_trace"]
    items = []
    # (the getitem nodes made in one call; each result's meta as static_meta makes it,
    # and a strided piece's layout as set_layout's first case, inline)
    for i, (item, out_static) in enumerate(zip(
            add_getitems(tr.scope.graph, node, len(statics), trace), statics)):
        p = item.meta["val"] = WRAPPER(Proxy, out_static[0], None, None, None,
                                       out_static[1], _STRIDED, out_static[2])
        p.st_meta = m = _NEW_META(TensorMeta)
        m.shape = shape = out_static[0]
        m.ndim = len(shape)
        m.dtype, m.device = out_static[1], out_static[2]
        m._bounds = m._mask_cell = m._symbolic = None
        m._bounds_epoch = 0
        m.static = out_static
        p.st_node = item
        p._st_value = None  # (Proxy's slots, all set here)
        contig = contigs[i]
        if contig is True:
            p.st_contig, p.st_layout = True, None
        elif contig.__class__ is Strided:
            p.st_contig, p.st_layout = None, (contig[0], contig[1])
        else:
            p.st_layout = None
            set_layout(p, contig)
        items.append(p)
    node.meta["val"] = items if kind is list else tuple(items)
    return named(items) if named is not None else node.meta["val"]


def _node_count(graph: torch.fx.Graph) -> int:
    return graph._len if FAST_NODES else len(graph.nodes)  # (fx's count, one call less)


def refresh() -> None:
    """Forget every entry (a shape rule was registered or replaced)."""
    MEMO.clear()
    PROVEN.clear()
    VIEW_CHECKS.clear()
