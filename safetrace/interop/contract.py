"""The input contract in a converted program: torch symbols for our input symbols, fake
inputs of our symbolic shapes, and the checks as ``aten._assert_scalar`` graph nodes.

The checks mirror ``exporter/checks.py`` one for one: dtype and rank
(``aten._assert_tensor_metadata``), each symbol's range where it is bound, every other
occurrence of a symbol or a derived dim as an equality, and the residual guards.  A symbol
that appears only inside derived dims (``x: [2*d]`` and ``d`` alone nowhere) gets a torch
symbol of its own for the first such dim, and ``d`` is recovered from it by division, as
our checks do: torch's input guards could not solve for it.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

import torch

from safetrace.errors import interop as EI
from safetrace.exporter.contract import ConstInput, TensorInput
from safetrace.exporter.declared_ranges import checked_bounds
from safetrace.rules.kernel_checks import kernel_checked
from safetrace.interop.divisions import contract_ranges, guarded_divisions
from safetrace.interop.lazy import value_ranges
from safetrace.interop.symops import sym_op
from safetrace import symbolic as S
from safetrace.symbolic import Expr
from safetrace.symbolic.expr import const as _const
from safetrace.symbolic.expr import fconst as _fconst
from safetrace.symbolic.expr import sym as _sym
from safetrace.symbolic import floats as F_
from safetrace.symbolic.semantics import PY_FNS, Algebra, lower
from safetrace.trace.graph import one_line

# our ops as torch's: size arithmetic on SymInts / graph nodes (Python's semantics, as
# ours); the math functions torch has no symbolic form of stay out (no_torch_form)
_NO_TORCH = frozenset(("fexp", "flog", "flog2", "flog10"))


@functools.cache
def _torch_fns(graph: bool) -> dict[str, Any]:
    """(made once: the same table for every expression of every conversion)"""
    fns = {op: fn for op, fn in PY_FNS.items() if op not in _NO_TORCH}
    fns.update({"min": torch.sym_min, "max": torch.sym_max, "trunc": torch.sym_int,
                "float": torch.sym_float, "fsqrt": torch.sym_sqrt, "fmin": torch.sym_min,
                "fmax": torch.sym_max})
    if not graph:
        fns["not"] = torch.sym_not
    return fns


# torch's sympy functions of floats -> ours (Python semantics on both sides)
_FLOAT_FUNS = {"TruncToInt": lambda a: F_.fun("trunc", a),
               "RoundToInt": lambda a: F_.fun("round", a),
               "ToFloat": lambda a: F_.fun("float", a),
               "FloorToInt": F_.floor, "CeilToInt": F_.ceil}


_LABELS: dict[tuple, str] = {}  # (our expression, (symbol, label)...) -> its label text


class ContractEmitter:
    """Builds the fake inputs and the in-graph checks of one conversion, from the
    program's typed contract (``safetrace.exporter.contract.Contract``)."""

    def __init__(self, conv: Any, contract: Any, env: Any) -> None:
        self.conv = conv
        self.contract = contract
        self.env = env
        self.values: dict[str, Any] = {}        # our symbol -> torch SymInt (or int)
        self.symbol_names: dict[Any, Expr] = {}  # torch sympy symbol -> our expression
        self.roots: dict[tuple, Any] = {}        # (input, dim) -> its torch root SymInt
        self.root_range: dict[Any, tuple] = {}   # torch symbol -> our (lo, hi) for it
        self.hints: dict[str, int] = {}
        self.derived: list[tuple] = []           # (our derived size, its torch root)
        # (every (input, its value, dim, dim's entry) of a tensor input: read by each
        # step below, made once per conversion; and the symbols int inputs bind)
        self.dims = [(i, inp, d, dim) for i, inp in enumerate(contract.inputs)
                     if isinstance(inp, TensorInput) for d, dim in enumerate(inp.dims)]
        self.scalar_symbols = {dim.symbol for _, inp, _, dim in self.dims if inp.scalar}
        self._plan()

    # -- symbols ---------------------------------------------------------------------------
    def _hint(self, name: str) -> int:
        if self.env is not None:
            try:
                return int(self.env.hint(_sym(name)))
            except Exception:  # noqa: BLE001 - a loaded program has no example values
                pass
        lo, hi = self._range(name)
        return max(lo, min(2, hi)) if hi is not None else max(lo, 2)

    def _range(self, name: str) -> tuple[int, int | None]:
        s = self.contract.symbol(name)
        if s is None:
            return 0, None
        return s.checked_lo, s.hi

    def _new_root(self, i: int, d: int, hint: int, lo: int, hi: int | None,
                  ours: Expr) -> Any:
        inp = self.contract.inputs[i]
        v = self.conv.make_symbol(str(ours), hint, lo, hi, inp.where(d))
        self.roots[(i, d)] = v
        if isinstance(v, torch.SymInt):
            self.symbol_names[v.node.expr] = ours
            self.root_range[v.node.expr] = (lo, hi)
        return v

    def _plan(self) -> None:
        """A torch symbol for every dim that binds one of ours (``bind``: the symbol,
        ``derived``: the dim's size, ours recovered by division, as our checks do), and for
        every ``unchecked`` dim (sizes no input determines: unchecked in torch too)."""
        for i, inp, d, dim in self._dims():
            if dim.kind == "bind":
                h = self._hint(dim.symbol)
                self.hints[dim.symbol] = h
                lo, hi = self._range(dim.symbol)
                self.values[dim.symbol] = self._new_root(i, d, h, lo, hi, _sym(dim.symbol))
        for i, inp, d, dim in self._dims():
            if dim.kind == "derived":
                name, a, b = dim.symbol, dim.coef, dim.offset
                if a <= 0:
                    raise EI.derived_not_increasing(inp.where(d), dim.size)
                h = self._hint(name)
                self.hints[name] = h
                lo, hi = self._range(name)
                root = self._new_root(i, d, a * h + b, a * lo + b,
                                      None if hi is None else a * hi + b, dim.size)
                # (symops' direct path: torch's SymInt operators cost ~15 µs each)
                self.values[name] = sym_op("floordiv", sym_op("sub", root, b), a)
                self.derived.append((dim.size, root))
        for i, inp, d, dim in self._dims():
            if dim.kind == "unchecked":
                h = int(self.env.hint(dim.size)) if self.env is not None else 2
                self._new_root(i, d, h, 0, None, dim.size)

    def _dims(self) -> list:
        return self.dims

    def derived_roots(self) -> list[tuple]:
        """(our size expression, torch's root symbol) of each derived input dim."""
        return list(self.derived)

    def size_value(self, i: int, d: int, dim: Any) -> Any:
        if dim.kind == "static":
            return dim.size
        if (i, d) in self.roots:
            return self.roots[(i, d)]
        return evaluate(dim.size, self.values)

    def fake_input(self, i: int, inp: Any, ours: Any) -> torch.Tensor:
        if inp.scalar:  # an int input declared dynamic: a SymInt placeholder, as torch's
            return self.size_value(i, 0, inp.dims[0])
        sizes = [self.size_value(i, d, dim) for d, dim in enumerate(inp.dims)]
        meta = getattr(ours, "st_meta", ours)
        device = getattr(meta, "device", torch.device("cpu"))
        return self.conv.fakes.make(sizes, None, inp.dtype, device, own=True)

    def stand_ins(self) -> list:
        """Real example leaves (zeros at the example sizes) for torch's guard function."""
        out = []
        for i, inp in enumerate(self.contract.inputs):
            if isinstance(inp, ConstInput):
                out.append(inp.value)
                continue
            shape = []
            for d, dim in enumerate(inp.dims):
                v = self.size_value(i, d, dim)
                shape.append(v if isinstance(v, int) else int(v.node.hint))
            out.append(shape[0] if inp.scalar else torch.zeros(shape, dtype=inp.dtype))
        return out

    # -- checks ----------------------------------------------------------------------------
    def emit(self, user_leaves: list) -> None:
        """The contract's checks, right after the placeholders (the order of ours)."""
        self.sizes: dict[tuple, Any] = {}
        self.nodes: dict[Any, Any] = {}
        self.placeholders = dict(user_leaves)
        c = self.contract
        # (the checks' messages, one line each, kept per program: the contract's texts
        # are the same in every conversion, and rendering them cost ~1% of a conversion)
        kept = self.conv.memo.get("messages")
        if kept is None or kept[0] is not c:
            kept = self.conv.memo["messages"] = (c, {})
        texts = self.texts = kept[1]
        for i, ph in user_leaves:
            inp = c.inputs[i]
            if inp.scalar or inp.subclass:  # an int: torch's guards check its type; a
                continue  # tensor subclass would run the checks through its dispatch
            # torch's input guards never look at the rank: an identity ``expand`` (every
            # size -1) raises for any other rank before the graph computes anything (more
            # dims: too few sizes; fewer: a -1 in a new leading dim); the metadata check
            # reads its result, so that dead-code elimination and run_decompositions keep
            # it (an unused view was dropped).  (Not a permute: torch's own tests count
            # the permutes of a decomposed program, a Linear's one.  Sizes in the check
            # itself would do, but torch's fake kernel compares a list with a torch.Size:
            # never equal.)
            ranked = self.conv.call(torch.ops.aten.expand.default,
                                    (ph, [-1] * len(inp.dims)), name="rank_check")
            checked = self.conv.call(torch.ops.aten._assert_tensor_metadata.default,
                                     (ranked, None, None, inp.dtype),
                                     name="assert_tensor_metadata")
            # (no value: code that reads every node's ``val`` as a tensor, as torch's
            # tests of fake inputs do, meets only the nodes of the user's program)
            del checked.meta["val"]
            if inp.layout is not None:
                self._layout(i, inp, ph)
        for i, inp, d, dim in self._dims():
            if dim.kind == "bind":
                self.nodes[_sym(dim.symbol)] = self._size_node(i, d)
        for i, inp, d, dim in self._dims():
            if dim.kind == "derived":
                size = self._size_node(i, d)
                shifted = self.conv.call(operator.sub, (size, dim.offset)) if dim.offset \
                    else size
                self.nodes[_sym(dim.symbol)] = self.conv.call(
                    operator.floordiv, (shifted, dim.coef), value=self.values[dim.symbol])
            if dim.kind in ("derived", "equal"):
                self._assert(self.conv.call(operator.eq, (self._size_node(i, d),
                                                          self.node(dim.size))),
                             texts.get(("eq", i, d)) or self._text(
                                 ("eq", i, d), f"{inp.where(d)} must equal "
                                 f"{c.where_text(dim.size)}{dim.why or ''}"))
        for s in c.symbols:
            if s.where is None:
                continue
            v = self.node(_sym(s.name))
            if s.checked_lo > 0 or s.name in self.scalar_symbols:  # an int may be negative
                self._assert(self.conv.call(operator.ge, (v, s.lo)),
                             texts.get(("ge", s.name)) or self._text(
                                 ("ge", s.name), f"{s.where} must be >= {s.lo}{s.origin}"))
            if s.hi is not None:
                self._assert(self.conv.call(operator.le, (v, s.hi)),
                             texts.get(("le", s.name)) or self._text(
                                 ("le", s.name), f"{s.where} must be <= {s.hi}{s.origin}"))
        if not c.conditions:
            return
        bound = {s.name for s in c.symbols if s.where is not None}
        ranges = contract_ranges(c)
        for cond in c.conditions:
            if cond.cond.free_symbols <= bound and not self._kernels_own(cond):
                self._assert(self.node(guarded_divisions(cond.cond, ranges)),
                             f"the inputs must satisfy "
                             f"`{c.where_text(cond.cond)}`{cond.origin}")

    def _kernels_own(self, cond: Any) -> bool:
        """A check torch's kernel makes (``rules/kernel_checks``) that the example breaks
        (exported as torch.export exports it): no assert, which torch's tools would
        evaluate false at the example while retracing; the kernel raises, as in torch's."""
        if not kernel_checked(cond.origin):
            return False
        try:
            return not cond.cond.evaluate(self.hints)
        except (KeyError, ValueError, ZeroDivisionError):
            return False

    def _layout(self, i: int, inp: Any, ph: Any) -> None:
        """The program asked for a memory layout: ``x.is_contiguous()`` (with
        ``exact_strides``: row-major strides on every dim and storage offset 0), as
        ``exporter/checks.py`` checks it, from ``sym_stride`` nodes (torch's own programs
        never check strides: its program runs the traced side for any layout)."""
        call, fake = self.conv.call, ph.meta["val"]
        conds, acc, numel = [], 1, 1
        for d in reversed(range(len(inp.dims))):
            dim = inp.dims[d]
            size = dim.size if dim.kind == "static" else self._size_node(i, d)
            if not inp.exact_strides and type(size) is int and size == 1:
                continue  # (is_contiguous() ignores a dim of size 1)
            stride = call(torch.ops.aten.sym_stride.int, (ph, d), name="sym_stride_int",
                          value=fake.stride(d))
            same = call(operator.eq, (stride, acc))
            if not inp.exact_strides and type(size) is not int:
                same = call(operator.or_, (call(operator.eq, (size, 1)), same))
            conds.append(same)
            if type(size) is int:
                acc = acc * max(size, 1) if type(acc) is int else \
                    (acc if size <= 1 else call(operator.mul, (acc, size)))
                numel = numel * size if type(numel) is int else call(operator.mul, (numel, size))
            else:
                acc = call(torch.sym_max, (size, 1)) if type(acc) is int and acc == 1 else \
                    call(operator.mul, (acc, call(torch.sym_max, (size, 1))))
                numel = size if type(numel) is int and numel == 1 else \
                    call(operator.mul, (numel, size))
        if inp.exact_strides:
            offset = call(torch.ops.aten.sym_storage_offset.default, (ph,),
                          name="sym_storage_offset", value=fake.storage_offset())
            conds.append(call(operator.eq, (offset, 0)))
        if not conds:
            return
        ok = conds[0]
        for c in conds[1:]:
            ok = call(operator.and_, (ok, c))
        if not inp.exact_strides and not (type(numel) is int and numel != 0):
            ok = call(operator.or_, (call(operator.eq, (numel, 0)), ok))
        kind = "row-major strides and storage offset 0" if inp.exact_strides else \
            "a contiguous tensor"
        self._assert(ok, f"{inp.path}: expected {kind}; the program asked for a memory "
                         f"layout{inp.layout}. Fix: pass {inp.path}.contiguous()")

    def _size_node(self, i: int, d: int) -> Any:
        node = self.sizes.get((i, d))
        if node is None and self.contract.inputs[i].scalar:
            node = self.sizes[(i, d)] = self.placeholders[i]  # the int is its own value
        if node is None:
            ph = self.placeholders[i]
            # (``size(d)``: the one size, where ``.shape[d]`` makes a SymInt of each)
            node = self.conv.call(torch.ops.aten.sym_size.int, (ph, d), name="sym_size_int",
                                  value=ph.meta["val"].size(d))
            self.sizes[(i, d)] = node
        return node

    def _text(self, key: tuple, message: str) -> str:
        """`message` as one line (``_assert``'s form), kept for the program under `key`."""
        text = self.texts[key] = one_line(message)
        return text

    def _assert(self, cond: Any, message: str) -> None:
        # (one line without quotes: compilers paste it into C++; an input's path holds the
        # user's dict keys; one_line of a line is the line)
        self.conv.call(torch.ops.aten._assert_scalar.default, (cond, one_line(message)),
                       name="_assert_scalar")
        val = cond.meta["val"] if isinstance(cond, torch.fx.Node) else cond
        if isinstance(val, torch.SymBool) and self.conv.verify:
            # a fact for torch's kernels from here on (only they ask torch's engine; tools
            # that retrace the program learn it again from the assert node)
            torch._check(val)

    def node(self, e: Expr) -> Any:
        """The graph node computing our expression `e` from the input sizes."""
        return expr_node(e, self.nodes, self.conv.call)

    def root_ranges(self) -> dict:
        """torch symbol -> (lo, hi) as our contract declares it."""
        return dict(self.root_range)

    def with_derived_ranges(self, ranges: dict) -> dict:
        """`ranges` (torch symbol -> ValueRanges) and an entry per derived input dim
        (``dx + 1``), the root's range carried through it, as torch.export's program has."""
        bound_sympy = value_ranges().bound_sympy

        out = dict(ranges)
        for i, ph in self.placeholders.items():
            for d, size in enumerate(getattr(ph.meta.get("val"), "shape", ())):
                expr = size.node.expr if isinstance(size, torch.SymInt) else None
                if expr is not None and not expr.is_Symbol and expr.free_symbols and \
                        expr.free_symbols <= ranges.keys() and expr not in out:
                    # (and the bounds our checks put on it: a declared range, as torch's)
                    lo, hi = checked_bounds(self.contract.conditions,
                                            self.contract.inputs[i].dims[d].size)
                    vr = bound_sympy(expr, ranges)
                    if lo is not None or hi is not None:
                        vr = vr & value_ranges().ValueRanges(
                            vr.lower if lo is None else lo, vr.upper if hi is None else hi)
                    out[expr] = vr
        return out

    def labels(self, dim_names: dict) -> dict[str, str]:
        """torch symbol name -> the user's Dim name (or our symbol, or a derived form)."""
        out = {}
        for sym_, ours in self.symbol_names.items():
            if sym_ in self.root_range:
                names = tuple((n, dim_names.get(n, n)) for n in
                              sorted(ours.free_symbols, key=len, reverse=True))
                text = _LABELS.get((ours, names))
                if text is None:  # (a regular expression per name: made once per label)
                    text = str(ours)
                    for name, label in names:
                        text = _replace_word(text, name, label)
                    if len(_LABELS) > 10_000:
                        _LABELS.clear()
                    _LABELS[(ours, names)] = text
                # (a symbol's name: sympy's printer costs ~0.1 ms a call)
                out[getattr(sym_, "name", None) or str(sym_)] = text
        return out

    def same_in_torch(self, ours: Expr, theirs: Any) -> bool:
        """Whether torch's engine proves our size expression equal to its own."""
        from torch.fx.experimental.symbolic_shapes import statically_known_true

        if not ours.free_symbols <= self.values.keys():
            return False
        try:
            return bool(statically_known_true(evaluate(ours, self.values) == theirs))
        except Exception:  # noqa: BLE001 - not provable here
            return False

    def agree(self, a: Expr, b: Expr) -> bool:
        """Two size expressions neither engine simplifies into each other (``ceil`` written
        two ways): equal on every point of the declared ranges when those hold at most
        ~20k points, else on a grid of their low and high ends."""
        return self._agree_on(a.free_symbols | b.free_symbols, a.evaluate, b.evaluate)

    def agree_sympy(self, ours: Expr, theirs: Any) -> bool:
        """`agree` for a torch size whose expression has no form in ours: torch's sympy
        expression evaluated at the same points (its symbols are ours, matched)."""
        import sympy

        if isinstance(theirs, torch.SymInt):
            theirs = theirs.node.expr
        if not isinstance(theirs, sympy.Expr):
            return False
        mapped = {s: self.symbol_names.get(s) for s in theirs.free_symbols}
        if any(m is None for m in mapped.values()):
            return False
        names = set(ours.free_symbols)
        for m in mapped.values():
            names |= m.free_symbols

        def value(p: dict) -> Any:
            got = theirs.xreplace({s: sympy.Integer(m.evaluate(p)) for s, m in
                                   mapped.items()})
            if not got.is_number:
                raise ValueError(got)
            return int(got) if got.is_integer else float(got)

        return self._agree_on(names, ours.evaluate, value)

    def _agree_on(self, symbols: Any, a: Any, b: Any) -> bool:
        names = sorted(symbols)
        axes = []
        budget = max(2, int(20000 ** (1 / max(1, len(names)))))
        for n in names:
            lo, hi = self._range(n)
            top = lo + budget - 1 if hi is None else min(hi, lo + budget - 1)
            values = list(range(lo, top + 1))
            if hi is not None and hi > top:
                values += list(range(max(top + 1, hi - budget // 4), hi + 1))
            elif hi is None:
                values += [2 ** k + j for k in range(12, 40, 3) for j in (-1, 0, 1)]
            axes.append(values)
        points = [{}]
        for n, values in zip(names, axes):
            points = [dict(p, **{n: v}) for p in points for v in values]
            if len(points) > 200000:
                return False
        try:
            return all(a(p) == b(p) for p in points)
        except (ZeroDivisionError, ValueError, KeyError, TypeError):
            return False

    def implied(self, cond: Expr) -> bool:
        """Whether our engine derives `cond` from what the program knows."""
        if self.env is None:
            return False
        try:
            return self.env.decide(cond) is True
        except Exception:  # noqa: BLE001 - undecidable here means not implied
            return False


def expr_node(e: Expr, nodes: dict, call: Any, leaf: Any = None) -> Any:
    """The graph node computing our expression `e`: `nodes` holds (and caches) the nodes
    already known, `leaf(e)` may supply one more (or None); `call` appends a node."""
    def known(x: Expr) -> Any:
        return leaf(x) if leaf is not None else None

    def symbol(x: Expr) -> Any:
        if x.op in ("const", "fconst"):
            return x.value
        hit = nodes.get(x)
        if hit is None:
            hit = known(x)
            if hit is None:
                raise EI.unread_symbol(x.name)
            nodes[x] = hit
        return hit

    try:
        return lower(e, Algebra(symbol, lambda fn, args, _x: call(fn, args), _torch_fns(True),
                                lookup=known), nodes)
    except KeyError as err:
        if err.args and err.args[0] in _NO_TORCH:  # exp/log of a size: no torch form
            raise EI.no_torch_form(e) from None
        raise


def evaluate(e: Expr, values: dict) -> Any:
    """Our expression over torch SymInts (Python arithmetic builds torch's expression)."""
    def symbol(x: Expr) -> Any:
        return x.value if x.op in ("const", "fconst") else values[x.name]

    try:
        return lower(e, Algebra(symbol, fns=_torch_fns(False)))
    except KeyError as err:
        if err.args and err.args[0] in _NO_TORCH:  # exp/log of a size: no torch form
            raise EI.no_torch_form(e) from None
        raise


def from_sympy(expr: Any, names: dict) -> Expr | None:
    """torch's sympy guard as our expression (None when it has no form in ours)."""
    import sympy

    from torch.utils._sympy import functions as F

    def go(x: Any) -> Expr:
        if isinstance(x, int):
            return _const(x)
        if x in names:
            return names[x]
        if isinstance(x, sympy.logic.boolalg.BooleanTrue):
            return _const(True)
        if isinstance(x, sympy.logic.boolalg.BooleanFalse):
            return _const(False)
        if isinstance(x, sympy.Integer):
            return _const(int(x))
        if isinstance(x, sympy.Add):
            return _fold(operator.add, [go(a) for a in x.args])
        if isinstance(x, sympy.Mul):
            return _fold(operator.mul, [go(a) for a in x.args])
        if isinstance(x, F.FloorDiv):
            return go(x.args[0]) // go(x.args[1])
        if isinstance(x, (F.PythonMod, F.Mod, sympy.Mod)):
            return go(x.args[0]) % go(x.args[1])
        if isinstance(x, sympy.Eq):
            return S.eq(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.Ne):
            return S.ne(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.StrictLessThan):
            return S.lt(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.LessThan):
            return S.le(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.StrictGreaterThan):
            return S.gt(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.GreaterThan):
            return S.ge(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.And):
            return S.and_(*[go(a) for a in x.args])
        if isinstance(x, sympy.Or):
            return S.or_(*[go(a) for a in x.args])
        if isinstance(x, sympy.Not):
            return S.not_(go(x.args[0]))
        kind = type(x).__name__
        if kind in ("IntTrueDiv", "FloatTrueDiv"):
            return F_.fbin("fdiv", go(x.args[0]), go(x.args[1]))
        if kind in _FLOAT_FUNS:
            return _FLOAT_FUNS[kind](go(x.args[0]))
        if isinstance(x, sympy.Float):
            return _fconst(float(x))
        # torch has Min/Max classes of its own beside sympy's
        if type(x).__name__ == "Min":
            return S.min_(*[go(a) for a in x.args])
        if type(x).__name__ == "Max":
            return S.max_(*[go(a) for a in x.args])
        raise KeyError(x)

    try:
        return go(expr)
    except (KeyError, TypeError, ValueError):
        return None


def _fold(fn: Any, xs: list) -> Expr:
    acc = xs[0]
    for x in xs[1:]:
        acc = fn(acc, x)
    return acc


def _replace_word(text: str, word: str, by: str) -> str:
    return re.sub(rf"\b{re.escape(word)}\b", by, text)



def shared_custom_meta(ours: list, graph: torch.fx.Graph) -> None:
    """When every op of our program carries the same ``custom`` metadata of a region (the
    whole forward ran under ``torch._dynamo.disable``, which torch.export records there),
    the nodes the conversion adds (the input checks) get it too, as torch.export's checks
    do.  (A tag the user set on a node of a GraphModule stays on that node alone.)"""
    if not ours or "_torchdynamo_disable" not in (ours[0].meta.get("custom") or {}):
        return  # (read first: most programs have no such region)
    customs = [n.meta.get("custom") for n in ours]
    if not customs or "_torchdynamo_disable" not in (customs[0] or {}) or \
            any(c != customs[0] for c in customs):
        return
    for node in graph.nodes:
        if node.op == "call_function" and "custom" not in node.meta:
            node.meta["custom"] = dict(customs[0])
