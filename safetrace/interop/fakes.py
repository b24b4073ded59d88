"""torch's fake values of a converted program, built from safetrace's own metadata.

Our rules already gave every node its shape (symbolic sizes proven for the whole declared
space), dtype and device; re-deriving them through torch's FakeTensor dispatch cost the
conversion about 95% of its time.  Here each tensor value is made directly: our size
expressions become torch SymInts once per distinct expression (memoized, over the torch
symbols the contract emitter made for our input symbols), and a FakeTensor wraps a meta
tensor of those sizes, with no kernel run.  A meta tensor of symbolic sizes is a view of
an empty meta storage with torch's own contiguous strides (each product made once per
conversion): ``torch.empty`` would compute its numel, storage size, strides and size
checks in torch's symbolic engine (~15 operations of ~7 µs each).  Placeholders get
``torch.empty``'s tensors (a storage of their own, of torch's size); an input of symbolic
sizes is made as a view of its own empty storage resized to that size, where a check made
once per process and rank finds it torch.empty's tensor to torch's tools (``own_views``;
not in a process's first conversion, whose inputs are torch.empty's).  A size from data
(``x[mask]``'s rows, ``nonzero``'s count: a bare symbol of ours torch has none of) becomes
a fresh unbacked torch symbol, size-like, with our range, as torch's kernel makes it.

A value's ``requires_grad`` is torch.export's: False on every node but the placeholders
(torch's tracer records each node's value detached).  Its storage is not torch's: a value
of symbolic sizes (or a view of one) has an empty storage (``untyped_storage().nbytes()``
0, where torch's is ``itemsize * numel`` or its view's input's), and values of one shape
share one meta tensor, hence one storage, so storage identity says nothing about aliasing
here.  Placeholders and values of static sizes have torch's storage size (a static view:
its own extent, not its input's).  Matching torch exactly (a storage resized per distinct
shape, views on their input's storage) cost 10-20% of the conversion on transformers.

Strides are not part of our metadata (the graph's values never depend on them): a value
is contiguous unless it is a view whose strides follow from its input's by a simple rule
(permute, transpose, expand, slice, select, unsqueeze, squeeze, split, unbind, aliases,
as_strided), as torch's kernels give them.  Tools that retrace the program
(``run_decompositions``, hence ONNX and ExecuTorch, AOTInductor) compute their own from
the placeholders, whose values are exact.

``ep.to_torch(verify=True)`` runs torch's kernels instead and compares every shape with
ours (the test suite does so); control-flow operators, non-ATen operators and ops whose
new data-dependent size is not a bare symbol always run torch's kernels.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from safetrace.interop.contract import evaluate
from safetrace.interop.lazy import fake_tensor
from safetrace.interop.zero_folds import FOLDING, note_fold
from safetrace.interop.symops import sym_op
from safetrace.interop.unbacked import unbacked_symint
from safetrace.interop.view_strides import squeezed_strides, view_strides
from safetrace.interop.view_probe import RESIZE, probe, storage_nbytes
from safetrace.symbolic import Expr, to_expr
from safetrace.symbolic.expr import sym as _sym

_META = torch.device("meta")
_FAKE_KEY = torch._C._TorchDispatchModeKey.FAKE
_NO_SUBCLASS_FUNCTION = torch._C.DisableTorchFunctionSubclass
_NAMESPACES = ("aten", "prims")
_PARAMETER, _TENSOR, _STRIDED = torch.nn.Parameter, torch.Tensor, torch.strided


class FakeBuilder:
    """Makes the fake values of one conversion (one ShapeEnv, one FakeTensorMode)."""

    def __init__(self, conv: Any) -> None:
        module = fake_tensor()
        self.conv = conv
        self.fake_class = module.FakeTensor
        self.debug = module.FakeTensorConfig.debug  # (its constructor records a traceback then)
        self.states: dict[Any, tuple] = {}   # device -> a fresh FakeTensor's attributes
        self.sizes: dict[Any, Any] = {}    # our size (object id / Expr) -> torch size
        # (torch sizes, strides, dtype) -> a meta tensor: making one with symbolic sizes
        # costs ~100 symbolic operations in torch's engine, wrapping one a few µs
        self.metas: dict[tuple, torch.Tensor] = {}
        self.bases: dict[torch.dtype, torch.Tensor] = {}  # dtype -> an empty meta tensor
        self.by_ours: dict[tuple, torch.Tensor] = {}  # (our sizes' ids, dtype) -> the same
        self.elems: dict[int, Any] = {}    # id of a value made here -> its meta tensor
        self.exprs: dict[Expr, Any] = {}   # our Expr -> torch SymInt
        self.stride_memo: dict[tuple, list] = {}  # torch sizes -> contiguous strides
        self.keep: list = []  # what the memos' keys are made from (`_key`: identities)
        self.own_ranks: dict[tuple, int] = {}  # (sizes, dtype) -> static inputs made of it
        # id(our shape) -> (the shape, its sizes' key in `by_ours`): the program's (`tensor`)
        self.shape_keys: dict[int, tuple] = conv.memo.setdefault("shape_keys", {})
        self.built = 0                     # values made here (for the benchmark)
        _CONVERSIONS[0] += 1

    # -- sizes -----------------------------------------------------------------------------
    def expr_of(self, s: Any) -> Expr:
        return to_expr(s.env.simplify(s.expr) if hasattr(s, "env") else s)

    def known(self, val: Any) -> bool:
        """Whether every symbol in `val`'s sizes has a torch symbol already (else the op
        creates one: a data-dependent size, which torch's kernel must bind)."""
        values, sizes = self.conv.emitter.values, self.sizes
        for part in val if isinstance(val, (tuple, list)) else (val,):
            if part is None:
                continue
            meta = getattr(part, "st_meta", None)
            if meta is None:
                return False
            for s in meta.shape:
                if s.__class__ is int or (id(s.expr) if hasattr(s, "expr") else s) in sizes:
                    continue  # (a size made already)
                if not self.expr_of(s).free_symbols <= values.keys():
                    return False
        return True

    def born(self, val: Any) -> bool:
        """torch symbols for the sizes `val` takes from data (our bare symbols torch has
        none of yet: ``nonzero``'s count, ``x[mask]``'s rows), made as torch's kernels make
        them: a fresh unbacked size, size-like, here with our range (torch's kernel for a
        boolean-mask index costs milliseconds: it runs ``nonzero`` and a broadcast in its
        symbolic engine).  The caller records the op's ``unbacked_bindings``.  False where
        no size is new or one is not a bare symbol (torch's kernel runs then)."""
        values = self.conv.emitter.values
        new: dict[str, Any] = {}
        for part in val if isinstance(val, (tuple, list)) else (val,):
            meta = getattr(part, "st_meta", None)
            if meta is None:
                return False
            for s in meta.shape:
                if s.__class__ is int:
                    continue
                e = self.expr_of(s)
                if e.free_symbols <= values.keys():
                    continue
                if e.op != "sym" or not hasattr(s, "env"):
                    return False
                new[e.name] = s.env.symbol_range(e.name)
        if not new:
            return False
        for name, rng in sorted(new.items()):
            lo = 0 if rng is None or rng.lo == -math.inf else max(0, int(rng.lo))
            hi = None if rng is None or rng.hi == math.inf else int(rng.hi)
            if hi is not None and hi < lo:
                return False
            u = unbacked_symint(self.conv.shape_env, lo, hi)
            values[name] = u
            self.conv.emitter.symbol_names[u.node.expr] = _sym(name)
        return True

    def size(self, s: Any) -> Any:
        if s.__class__ is int:
            return s
        key = id(s.expr) if hasattr(s, "expr") else s
        hit = self.sizes.get(key)
        if hit is None:
            hit = self.torch_expr(self.expr_of(s))
            self.sizes[key] = hit
        return hit

    def torch_expr(self, e: Expr) -> Any:
        """Our expression as a torch value, each distinct sub-expression built once."""
        if e.op == "const":
            return e.value
        hit = self.exprs.get(e)
        if hit is None:
            if e.op == "sym":
                hit = self.conv.emitter.values[e.name]
            elif e.op in ("add", "mul", "floordiv"):
                # (as ``evaluate`` folds them: left to right, Python's operators)
                parts = [self.torch_expr(a) for a in e.args]
                hit = parts[0]
                for p in parts[1:]:
                    hit = sym_op(e.op, hit, p)
            else:
                hit = evaluate(e, self.conv.emitter.values)
                if e.op in FOLDING:  # (min, max, mod...: a size torch may fold at 0)
                    note_fold(self.conv, e, hit)
            self.exprs[e] = hit
        return hit

    def seed(self, ours: Expr, theirs: Any) -> None:
        """torch's value for one of our expressions (a derived dim's own root symbol)."""
        self.exprs.setdefault(ours, theirs)

    # -- values ----------------------------------------------------------------------------
    def tensor(self, val: Any, strides: Any = None) -> Any:
        meta = val.st_meta
        if strides is not None:
            return self.make([self.size(s) for s in meta.shape], strides, meta.dtype,
                             meta.device)
        # a contiguous value: its meta tensor found by our sizes' identities (the torch
        # sizes and their key are made once per distinct shape); the identities of a
        # shape's sizes kept per program by the shape (a tuple, held by the program's
        # node: each conversion found the same ones, ~80 opcodes a value)
        shape = meta.shape
        hit = self.shape_keys.get(id(shape))
        if hit is not None and hit[0] is shape:
            key = (hit[1], meta.dtype)
        else:
            # (a list comprehension: a generator's resume per size costs more)
            ids = tuple([s if s.__class__ is int else id(s.expr) if hasattr(s, "expr")
                         else s for s in shape])
            if len(self.shape_keys) > 100_000:
                self.shape_keys.clear()
            self.shape_keys[id(shape)] = (shape, ids)
            key = (ids, meta.dtype)
        elem = self.by_ours.get(key)
        if elem is None:
            fake = self.make([self.size(s) for s in meta.shape], None, meta.dtype,
                             meta.device)
            self.by_ours[key] = self.elems[id(fake)]
            return fake
        self.built += 1
        fake = self.wrap(elem, meta.device)
        self.elems[id(fake)] = elem
        return fake

    def make(self, sizes: list, strides: Any, dtype: torch.dtype, device: Any,
             own: bool = False) -> Any:
        """A fake tensor of these sizes (torch values), strides (None: contiguous), dtype
        and device; `own`: a placeholder's, on a storage of its own (torch's size)."""
        key = None
        if not own:
            key = (_keys(sizes), None if strides is None else _keys(strides), dtype)
            elem = self.metas.get(key)
        elif strides is None and all(s.__class__ is int for s in sizes):
            # an input of static sizes: its meta tensor the process's for its form and
            # rank among this conversion's such inputs (as `statics` keeps the state's:
            # a storage of its own within the program; torch.empty per conversion
            # otherwise, ~10k instructions)
            form = (tuple(sizes), dtype)
            rank = self.own_ranks[form] = self.own_ranks.get(form, -1) + 1
            elem = _INPUT_ELEMS.get((form, rank))
            if elem is None:
                if len(_INPUT_ELEMS) > 4096:
                    _INPUT_ELEMS.clear()
                elem = _INPUT_ELEMS[(form, rank)] = self.meta_tensor(sizes, None, dtype, True)
            self.built += 1
            fake = self.wrap(elem, device, False, _FLAGGED)
            self.elems[id(fake)] = elem
            return fake
        if own or elem is None:
            elem = self.meta_tensor(sizes, strides, dtype, own)
            if not own:
                self.metas[key] = elem
                self.keep.append((sizes, strides))
        self.built += 1
        fake = self.wrap(elem, device)
        self.elems[id(fake)] = elem
        return fake

    def meta_tensor(self, sizes: list, strides: Any, dtype: torch.dtype, own: bool) -> Any:
        # made outside the fake mode (else it would make a fake tensor), and outside the
        # Python dispatcher (under it a meta kernel's Python registration runs, twice as
        # slow for the same tensor); subclasses' __torch_function__ off: torch's argument
        # parser looks it up on each SymInt of a size list (a fresh name string each time,
        # so a type-cache miss, and on torch.SymInt a failed lookup that formats an
        # AttributeError: ~4k instructions a symbolic size), where only a plain meta
        # tensor and SymInts take part
        old = torch._C._unset_dispatch_mode(_FAKE_KEY)
        try:
            with torch._C._DisablePythonDispatcher(), _NO_SUBCLASS_FUNCTION():
                if own and strides is None:
                    if all(s.__class__ is int for s in sizes) or not _CONVERSIONS[0] > 1 \
                            or not own_views(len(sizes)):
                        return torch.empty(sizes, dtype=dtype, device=_META)
                    # an input of symbolic sizes: torch.empty's tensor (strides, storage
                    # size) from the memoized arithmetic, on a storage of its own
                    elem = torch.empty(0, dtype=dtype, device=_META).as_strided(
                        sizes, self.contiguous(sizes))
                    RESIZE(elem, storage_nbytes(sizes, dtype))
                    return elem
                if all(s.__class__ is int for s in sizes) and (
                        strides is None or all(s.__class__ is int for s in strides)):
                    return torch.empty_strided(
                        sizes, _strides(sizes) if strides is None else strides,
                        dtype=dtype, device=_META)
                # torch.empty / empty_strided of symbolic sizes compute numel, the storage
                # size, the strides and size checks in torch's symbolic engine (~15
                # operations of ~7 µs each); a view of an empty storage computes none of
                # them (meta storage is never bounds-checked).  The strides are torch's
                # own, each product made once per conversion.
                if strides is None:
                    strides = self.contiguous(sizes)
                # (one empty storage per dtype for this conversion's symbolic layouts:
                # values of one layout share theirs already; meta storage holds no data)
                base = self.bases.get(dtype)
                if base is None:
                    base = self.bases[dtype] = torch.empty(0, dtype=dtype, device=_META)
                return base.as_strided(sizes, strides)
        finally:
            if old is not None:
                torch._C._set_dispatch_mode(old)

    def wrap(self, elem: torch.Tensor, device: Any, grad: bool = False,
             kept: dict | None = None) -> Any:
        """``FakeTensor(mode, elem, device)`` (`grad`: then ``requires_grad_(True)``).
        torch's constructor runs once per device; later values copy the attributes it gave
        (the mode, the device, empty memos) onto the same subclass wrapping: the
        constructor's Python checks cost ~6 µs a value, a few milliseconds on a program of
        a few hundred values."""
        state = self.states.get(device)
        if state is None:
            state = self._first_state(device)
        if state is None:
            fake = self.fake_class(self.conv.mode, elem, device)
            if not self.debug:
                mutable = (torch._C._set_warn_deprecated_on_mutable_data_ptr
                           if self.conv.mode._allow_unsafe_data_ptr_access
                           else torch._C._set_throw_on_mutable_data_ptr)
                self.states[device] = (dict(fake.__dict__), fake.fake_device, mutable, {})
                if device.type == "cpu":  # (a CPU device's is the same in every conversion)
                    _CPU_STATES[self._state_key(device)] = self.states[device][:3] + (None,)
            return fake.requires_grad_(True) if grad else fake
        fields, normalized, mutable, flagged = state
        fake = torch.Tensor._make_subclass(self.fake_class, elem, grad or elem.requires_grad,
                                           dispatch_device=True,
                                           device_for_backend_keys=normalized)
        # (the constructor's mutable-data-pointer flag is its storage's, which the new
        # value shares with `elem`: set once per elem and setter, ~1.4k instructions a
        # call; `kept`: the process's tables, for elems of its caches, by setter)
        if kept is not None:
            flagged = kept[mutable]
        if flagged.get(id(elem)) is not elem:
            mutable(fake)
            if len(flagged) > 8192:
                flagged.clear()
            flagged[id(elem)] = elem
        # (a copy of the attributes set as the new value's dict: ~0.2 µs, where updating
        # the empty dict it has inserts each of the ~20 attributes, ~1.3 µs)
        fake.__dict__ = fields.copy()
        return fake

    def _state_key(self, device: Any) -> tuple:
        mode = self.conv.mode
        return (device, mode._allow_unsafe_data_ptr_access, mode.allow_meta)

    def _first_state(self, device: Any) -> tuple | None:
        """The attributes torch's constructor gave a CPU value of an earlier conversion
        (with this conversion's mode): its checks and device normalization give the same
        on a CPU device each time (~20 µs once per conversion).  None: the constructor
        runs (another device, whose index torch reads from the current device)."""
        if self.debug or device.type != "cpu":
            return None
        made = _CPU_STATES.get(self._state_key(device))
        if made is None:
            return None
        fields, normalized, mutable, _ = made
        fields = dict(fields)
        fields["fake_mode"] = self.conv.mode
        state = self.states[device] = (fields, normalized, mutable, {})
        return state

    def contiguous(self, sizes: list, key: tuple | None = None) -> list:
        """torch's contiguous strides of `sizes` (``empty_tensor_restride``: each stride the
        next one times ``max(next size, 1)``, symops' ``stride``), memoized by suffix:
        across a program most tensors share their trailing sizes."""
        if key is None:
            key = _keys(sizes)
        hit = self.stride_memo.get(key)
        if hit is None:
            if len(sizes) <= 1:
                hit = [1] * len(sizes)
            else:
                rest = self.contiguous(sizes[1:], key[1:])
                a, b = rest[0], sizes[1]
                hit = [a * max(b, 1) if a.__class__ is int and b.__class__ is int else
                       sym_op("stride", a, b)] + rest
            self.stride_memo[key] = hit
            self.keep.append(sizes)
        return hit

    def static(self, value: torch.Tensor) -> Any:
        """A parameter's, buffer's or constant's value (static shape, its strides)."""
        if not _plain(value):
            return self.conv.mode.from_tensor(value, static_shapes=True)
        fake = self.make(list(value.shape), list(value.stride()), value.dtype, value.device,
                         own=True)
        if value.requires_grad:
            fake.requires_grad_(True)
        return fake

    def statics(self, values: dict) -> dict:
        """``static`` of each of `values` (key -> tensor) that is a plain strided tensor,
        made together before the conversion enters its modes (no dispatch mode to set
        aside per value), each on a storage of its own and marked as requiring grad in the
        same call that wraps it (``_make_subclass``'s flag: what ``requires_grad_`` sets).
        The others are left to ``static``, under the conversion's mode.

        A value's meta tensor is the process's for its (sizes, strides, dtype) and its rank
        among this program's values of that form (the 2nd ``[8]`` float buffer: the 2nd
        such meta tensor): within a program each value has a storage of its own, as
        torch's placeholders do, and ``empty_strided`` runs once per form and rank in a
        process instead of once per value and conversion (~6k instructions a value,
        with freeing it).  Only programs converted from the process share a meta storage,
        never two values of one program."""
        out = {}
        ranks: dict[tuple, int] = {}
        elems, cache = self.elems, _STATIC_ELEMS
        wrap = self.wrap
        for key, value in values.items():
            t = type(value)  # (`_plain`, inline for a Parameter or Tensor)
            if not ((t is _PARAMETER or t is _TENSOR) and value.layout is _STRIDED and
                    not value.is_quantized or t is not _PARAMETER and t is not _TENSOR and
                    _plain(value)):
                continue
            form = (value.shape, value.stride(), value.dtype)
            rank = ranks[form] = ranks.get(form, -1) + 1
            elem = cache.get((form, rank))
            if elem is None:
                if len(cache) > 4096:
                    cache.clear()
                elem = cache[(form, rank)] = torch.empty_strided(
                    form[0], form[1], dtype=form[2], device=_META)
            fake = out[key] = wrap(elem, value.device, value.requires_grad, _FLAGGED)
            elems[id(fake)] = elem
        self.built += len(out)
        return out

    def same_view(self, fake: Any) -> Any:
        """The value of an identity view of `fake` (the contract's rank check, an
        ``expand`` to sizes all -1): of an input made here, the input's own meta tensor
        serves."""
        elem = self.elems.get(id(fake))
        if elem is not None:
            return self.wrap(elem, fake.device)
        return self.make(list(fake.shape), list(fake.stride()), fake.dtype, fake.device)

    def value(self, target: Any, args: tuple, kwargs: dict, ours: Any,
              memo: dict | None = None, node: Any = None) -> Any:
        """The fake value of `target(*args, **kwargs)` (new-graph arguments) from ours.

        `memo` (the program's plan's, kept across its conversions), `node` (ours): a value
        whose sizes and strides all came out plain ints is kept there as its meta tensor,
        and a later conversion wraps that instead of deriving its strides and layout again
        (the same each time: a conversion of one program makes the same values in the same
        order).  The meta tensor is shared by these conversions' values as one
        conversion's values of one form share theirs (storage identity says nothing)."""
        if isinstance(ours, (tuple, list)):
            if memo is not None:
                hit = memo.get(node)
                if hit is not None:
                    return self._from_memo(hit)
            strides = view_strides(target, args, kwargs, len(ours)) or [None] * len(ours)
            out = [None if p is None else self.tensor(p, s) for p, s in zip(ours, strides)]
            made = type(ours)(out) if isinstance(ours, tuple) else out
            if memo is not None:
                kept = []
                for p, s, f in zip(ours, strides, out):
                    if p is None:
                        kept.append(None)
                    elif p.st_meta.static is None or not (s is None or _ints(s)):
                        return made
                    else:
                        kept.append((self.elems[id(f)], p.st_meta.device))
                memo[node] = (type(made), tuple(kept))
            return made
        # (`static`: our meta's (sizes, dtype, device) while every size is an int; a value
        # of symbolic sizes is never kept, and is not looked for)
        meta = ours.st_meta
        if memo is not None and meta.static is not None:
            hit = memo.get(node)
            if hit is not None:
                return self._from_memo(hit)
        else:
            memo = None
        strides = view_strides(target, args, kwargs, None)
        stride = strides[0] if strides else None
        if stride is not None and len(stride) != len(ours.shape) and \
                target._opname == "squeeze":   # (a size torch holds symbolic, ours 1)
            dropped = squeezed_strides(args, kwargs, len(ours.shape))
            stride = stride if dropped is None else dropped
        made = self.tensor(ours, stride)
        if memo is not None and (stride is None or _ints(stride)):
            memo[node] = (None, ((self.elems[id(made)], meta.device),))
        return made

    def _from_memo(self, hit: tuple) -> Any:
        kind, parts = hit
        out = []
        for part in parts:
            if part is None:
                out.append(None)
                continue
            elem, device = part
            fake = self.wrap(elem, device, False, _FLAGGED)  # (static: the program's)
            self.elems[id(fake)] = elem
            out.append(fake)
        self.built += len(parts)
        return out[0] if kind is None else kind(out)


# ((sizes, strides, dtype), rank among a program's values of that form) -> a meta tensor
# of that form (``statics``: a state value's own storage within its program)
_STATIC_ELEMS: dict[tuple, torch.Tensor] = {}

# ((sizes, dtype), rank among a conversion's user inputs of static sizes of that form) -> a
# contiguous meta tensor of that form (``make``: an input's own storage within its program)
_INPUT_ELEMS: dict[tuple, torch.Tensor] = {}

# the mutable-data-pointer setter -> {id of an elem of sizes all ints (the tables above,
# a program's kept values) whose storage it flagged: the elem}: `wrap` sets it once
_FLAGGED: dict[Any, dict] = {torch._C._set_warn_deprecated_on_mutable_data_ptr: {},
                             torch._C._set_throw_on_mutable_data_ptr: {}}

# (a CPU device, the mode's data-pointer and meta settings) -> the attributes torch's
# FakeTensor constructor gave a value (its mode: the conversion's, replaced), normalized
# device, mutable-data-pointer setter
_CPU_STATES: dict[tuple, tuple] = {}




# Conversions begun in this process.  Its first converts with torch.empty's inputs: the
# check behind `own_views` (torch's fake kernels run cold on scratch ShapeEnvs) costs ~0.4 s
# of CPU in a fresh process, two orders more than the view saves an input, so a process
# that converts once (st.to_onnx in a script) never pays it; from the second on it runs
# once per rank.  (A count raced by two threads only moves the check by one conversion.)
_CONVERSIONS = [0]


@functools.cache
def own_views(rank: int) -> bool:
    """Whether an input of this rank, made as a view of its own empty storage resized to
    torch's size, is ``torch.empty``'s tensor to torch's tools: the same sizes, strides,
    storage size, flags, and the same values and ShapeEnv guards from a few operations
    tools run on inputs (contiguity tests, reshapes, a transposed copy, reductions),
    compared with torch.empty's on scratch ShapeEnvs (checked once per process and rank;
    sizes plain symbols, a product and a sum).  The guards are compared as a set: on a
    rank-4 input torch.empty's tensor records the same ones in another order (its
    channels-last test first asks another size), one of them twice."""
    if rank < 1 or rank > 4 or not hasattr(torch.ops.inductor, "resize_storage_bytes_"):
        return False
    try:
        return probe(rank, False, _contiguous) == probe(rank, True, _contiguous)
    except Exception:  # noqa: BLE001 - torch's internals moved: torch.empty serves
        return False


def _contiguous(sizes: list) -> list:
    """``FakeBuilder.contiguous`` of a bare builder (`own_views`' check)."""
    builder = FakeBuilder.__new__(FakeBuilder)
    builder.stride_memo, builder.keep = {}, []
    return builder.contiguous(sizes)


def _ints(strides: list) -> bool:
    """Every one of `strides` a plain int."""
    for v in strides:
        if v.__class__ is not int:
            return False
    return True


def _strides(sizes: list) -> list:
    out, step = [], 1
    for s in reversed(sizes):
        out.append(step)
        step *= max(s, 1)
    return out[::-1]


def _key(s: Any) -> Any:
    """A size's or stride's part of a builder's memo key: an int itself, a SymInt its
    expression's identity (no replacement), as a negative number (sizes and strides are
    >= 0): sympy's ``__hash__`` is a Python call, ~1.2k instructions, and a suffix memo
    hashes each suffix.  The builder keeps every keyed value alive (``keep``), so an id
    is not reused within its conversion."""
    return ~id(s.node._expr) if isinstance(s, torch.SymInt) else s


def _keys(values: list) -> tuple:
    """``tuple([_key(s) for s in values])``, `_key` inline for ints and SymInts."""
    return tuple([s if s.__class__ is int else ~id(s.node._expr) if s.__class__ is _SYMINT
                  else _key(s) for s in values])


_SYMINT = torch.SymInt


def builds(target: Any, ours: Any, builder: FakeBuilder) -> Any:
    """Whether `target`'s value is made from ours (an ATen op returning tensors whose
    sizes torch has symbols for: ``KNOWN``, or gets them from ``builder.born``: ``BORN``);
    else (False) torch's kernel runs."""
    if not isinstance(target, torch._ops.OpOverload) or target.namespace not in _NAMESPACES:
        return False
    some = False  # (a loop: all() over generators closed early costs ~10k instructions)
    for p in ours if isinstance(ours, (tuple, list)) else (ours,):
        if p is not None:
            if not hasattr(p, "st_meta"):
                return False
            some = True
    if not some:
        return False
    return KNOWN if builder.known(ours) else BORN if builder.born(ours) else False


KNOWN, BORN = "known", "born"  # (builds' answers: both true)


def detached(val: Any) -> Any:
    """`val` with each tensor requiring grad detached (the same storage): a node's value
    as torch.export records it."""
    if isinstance(val, torch.Tensor):
        return val.detach() if val.requires_grad else val
    if isinstance(val, (tuple, list)) and any(isinstance(v, torch.Tensor) and
                                              v.requires_grad for v in val):
        return type(val)(detached(v) for v in val)
    return val


def _plain(value: torch.Tensor) -> bool:
    """A dense strided tensor, a Parameter or a fake value (a model built under the user's
    FakeTensorMode: ours stands for it); else torch's ``from_tensor`` makes its value."""
    return (type(value) in (torch.Tensor, torch.nn.Parameter) or _fake(value)) and \
        value.layout == torch.strided and not value.is_quantized


def _fake(value: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor)

