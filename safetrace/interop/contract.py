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

import operator
import re
from typing import Any

import torch

from safetrace.errors import ConversionError
from safetrace.symbolic import Expr
from safetrace.symbolic.expr import const as _const
from safetrace.symbolic.expr import sym as _sym

_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "ge": operator.ge}
_ARITH = {"floordiv": operator.floordiv, "mod": operator.mod}


class ContractEmitter:
    """Builds the fake inputs and the in-graph checks of one conversion."""

    def __init__(self, conv: Any, contract: Any, env: Any) -> None:
        self.conv = conv
        self.contract = contract
        self.env = env
        self.values: dict[str, Any] = {}        # our symbol -> torch SymInt (or int)
        self.symbol_names: dict[Any, Expr] = {}  # torch sympy symbol -> our expression
        self.bound: dict[str, tuple] = {}        # our symbol -> (leaf, dim) it is read at
        self.derived: dict[str, tuple] = {}      # symbol -> (leaf, dim, coef, offset)
        self.hints: dict[str, int] = {}
        self._plan()

    # -- symbols ---------------------------------------------------------------------------
    def _hint(self, name: str) -> int:
        if self.env is None:
            raise _error(f"no example value is known for symbol {name}")
        return int(self.env.hint(_sym(name)))

    def _range(self, name: str) -> tuple[int, int | None]:
        lo, hi = self.contract.ranges.get(name, (None, None))
        return (lo if lo is not None else 0), hi

    def _plan(self) -> None:
        """Which input dim binds each symbol, and a torch symbol for each."""
        leaves = self.contract.leaves
        for i, leaf in enumerate(leaves):
            if leaf[1] != "tensor":
                continue
            for d, size in enumerate(leaf[3]):
                if not isinstance(size, int) and size.op == "sym" and size.name not in \
                        self.bound:
                    self.bound[size.name] = (i, d)
        for i, leaf in enumerate(leaves):
            if leaf[1] != "tensor":
                continue
            for d, size in enumerate(leaf[3]):
                if isinstance(size, int) or size.op == "sym":
                    continue
                free = [s for s in size.free_symbols if s not in self.bound
                        and s not in self.derived]
                if len(free) == 1:
                    name = free[0]
                    others = {s: self._placeholder_expr(s) for s in size.free_symbols
                              if s != name}
                    if others:
                        continue  # solved later, once the other symbols are known
                    offset = size.subs({_sym(name): 0})
                    coef = size.subs({_sym(name): 1}).evaluate({}) - offset.evaluate({})
                    if coef <= 0:
                        raise _error(f"{leaf[0]}.shape[{d}] = {size}: only increasing "
                                     f"derived dims (a*d + b, a > 0) convert")
                    self.derived[name] = (i, d, coef, offset.evaluate({}))
        for name, (i, d) in self.bound.items():
            lo, hi = self._range(name)
            h = self._hint(name)
            self.hints[name] = h
            v = self.conv.make_symbol(name, h, lo, hi, f"{leaves[i][0]}.shape[{d}]")
            self.values[name] = v
            if isinstance(v, torch.SymInt):
                self.symbol_names[v.node.expr] = _sym(name)
        for name, (i, d, coef, off) in self.derived.items():
            lo, hi = self._range(name)
            h = self._hint(name)
            self.hints[name] = h
            root = self.conv.make_symbol(name, coef * h + off, coef * lo + off,
                                         None if hi is None else coef * hi + off,
                                         f"{leaves[i][0]}.shape[{d}]")
            self.values[f"__root_{name}"] = root
            self.values[name] = (root - off) // coef
            if isinstance(root, torch.SymInt):
                self.symbol_names[root.node.expr] = coef * _sym(name) + off
        for leaf in leaves:
            if leaf[1] != "tensor":
                continue
            for size in leaf[3]:
                if not isinstance(size, int):
                    missing = size.free_symbols - self.values.keys()
                    if missing:
                        raise _error(f"{leaf[0]}: the size {size} cannot be read from "
                                     f"the inputs ({', '.join(sorted(missing))} unbound)")

    def _placeholder_expr(self, name: str) -> bool:
        return name in self.bound or name in self.derived

    def size_value(self, i: int, d: int, size: Any) -> Any:
        """The torch size of leaf `i`, dim `d`: the root symbol where it binds one."""
        if isinstance(size, int):
            return size
        for name, (li, ld, _c, _o) in self.derived.items():
            if (li, ld) == (i, d):
                return self.values[f"__root_{name}"]
        return evaluate(size, self.values)

    def fake_input(self, i: int, leaf: tuple, ours: Any) -> torch.Tensor:
        sizes = [self.size_value(i, d, s) for d, s in enumerate(leaf[3])]
        device = getattr(ours, "device", torch.device("cpu"))
        return torch.empty(sizes, dtype=leaf[2], device=device)

    def stand_ins(self) -> list:
        """Real example leaves (zeros at the example sizes) for torch's guard function."""
        hints = dict(self.hints)
        out = []
        for leaf in self.contract.leaves:
            if leaf[1] == "const":
                out.append(leaf[2])
                continue
            shape = [s if isinstance(s, int) else int(s.evaluate(hints)) for s in leaf[3]]
            out.append(torch.zeros(shape, dtype=leaf[2]))
        return out

    # -- checks ----------------------------------------------------------------------------
    def emit(self, user_leaves: list) -> None:
        """The contract's checks, right after the placeholders."""
        self.sizes: dict[tuple, Any] = {}
        self.nodes: dict[Any, Any] = {}
        leaves = self.contract.leaves
        for i, ph in user_leaves:
            leaf = leaves[i]
            dims = [self._size_node(i, d, ph) if not isinstance(s, int) else s
                    for d, s in enumerate(leaf[3])]
            self.conv.call(torch.ops.aten._assert_tensor_metadata.default,
                           (ph, None, None, leaf[2]), name="assert_tensor_metadata")
            # torch's input guards never look at the rank: an identity permute raises
            # for any other rank before the graph computes anything
            self.conv.call(torch.ops.aten.permute.default, (ph, list(range(len(dims)))),
                           name="rank_check")
        self.placeholders = dict(user_leaves)
        for name, (i, d) in self.bound.items():
            self._ranges(name, _sym(name), f"{leaves[i][0]}.shape[{d}]")
        for name, (i, d, coef, off) in self.derived.items():
            where = f"{leaves[i][0]}.shape[{d}]"
            root = self._size_node(i, d, self.placeholders[i])
            self.nodes[_sym(name)] = self.conv.call(
                operator.floordiv, (self.conv.call(operator.sub, (root, off))
                                    if off else root, coef))
            if coef != 1:
                rem = self.conv.call(operator.mod, (self.conv.call(operator.sub, (root, off))
                                                    if off else root, coef))
                self._assert(self.conv.call(operator.eq, (rem, 0)),
                             f"{where} must be {coef}*d + {off} for an integer d")
            self._ranges(name, _sym(name), f"(({where} - {off}) // {coef})")
        for i, ph in user_leaves:
            leaf = leaves[i]
            for d, size in enumerate(leaf[3]):
                if isinstance(size, int) or self._binds(i, d, size):
                    continue
                got = self._size_node(i, d, ph)
                want = self.node(size)
                self._assert(self.conv.call(operator.eq, (got, want)),
                             f"{leaf[0]}.shape[{d}] must equal {self._readable(size)}")
        for cond, origin in self.contract.residual:
            if cond.free_symbols <= self.values.keys():
                self._assert(self.node(cond), f"the inputs must satisfy "
                             f"`{self._readable(cond)}`{origin}")

    def _binds(self, i: int, d: int, size: Any) -> bool:
        if size.op == "sym":
            return self.bound.get(size.name) == (i, d)
        return any((li, ld) == (i, d) for li, ld, _c, _o in self.derived.values())

    def _size_node(self, i: int, d: int, ph: Any) -> Any:
        node = self.sizes.get((i, d))
        if node is None:
            node = self.conv.call(torch.ops.aten.sym_size.int, (ph, d), name="sym_size_int")
            self.sizes[(i, d)] = node
        return node

    def _ranges(self, name: str, e: Expr, where: str) -> None:
        lo, hi = self.contract.ranges.get(name, (None, None))
        why = self.contract.origins.get(name, "")
        v = self.node(e)
        if lo is not None and lo > 0:
            self._assert(self.conv.call(operator.ge, (v, lo)), f"{where} must be >= {lo}{why}")
        if hi is not None:
            self._assert(self.conv.call(operator.le, (v, hi)), f"{where} must be <= {hi}{why}")

    def _assert(self, cond: Any, message: str) -> None:
        self.conv.call(torch.ops.aten._assert_scalar.default, (cond, message),
                       name="_assert_scalar")
        val = cond.meta["val"] if isinstance(cond, torch.fx.Node) else cond
        if isinstance(val, torch.SymBool):
            torch._check(val)  # a fact for torch's engine from here on

    def _readable(self, e: Any) -> str:
        text = str(e)
        for name, (i, d) in sorted(self.bound.items(), key=lambda kv: -len(kv[0])):
            text = _replace_word(text, name, f"{self.contract.leaves[i][0]}.shape[{d}]")
        return text

    def node(self, e: Expr) -> Any:
        """The graph node computing our expression `e` from the input sizes."""
        if e.op == "const":
            return e.value
        hit = self.nodes.get(e)
        if hit is not None:
            return hit
        call = self.conv.call
        if e.op == "sym":
            i, d = self.bound[e.name]
            node = self._size_node(i, d, self.placeholders[i])
        elif e.op in ("add", "mul", "and", "or", "min", "max"):
            fn = {"add": operator.add, "mul": operator.mul, "and": operator.and_,
                  "or": operator.or_, "min": torch.sym_min, "max": torch.sym_max}[e.op]
            parts = [self.node(a) for a in e.args]
            node = parts[0]
            for p in parts[1:]:
                node = call(fn, (node, p))
        elif e.op in _CMP:
            node = call(_CMP[e.op], tuple(self.node(a) for a in e.args))
        elif e.op in _ARITH:
            node = call(_ARITH[e.op], tuple(self.node(a) for a in e.args))
        elif e.op == "not":
            node = call(operator.not_, (self.node(e.args[0]),))
        else:  # pragma: no cover - the engine's op set is closed
            raise _error(f"no graph form for {e}")
        self.nodes[e] = node
        return node

    def root_ranges(self) -> dict:
        """torch symbol -> (lo, hi) as our contract declares it."""
        out = {}
        for name in self.bound:
            v = self.values[name]
            if isinstance(v, torch.SymInt):
                out[v.node.expr] = self._range(name)
        for name, (_i, _d, coef, off) in self.derived.items():
            v = self.values[f"__root_{name}"]
            lo, hi = self._range(name)
            if isinstance(v, torch.SymInt):
                out[v.node.expr] = (coef * lo + off, None if hi is None else coef * hi + off)
        return out

    def labels(self, dim_names: dict) -> dict[str, str]:
        """torch symbol name -> the user's Dim name (or our symbol, or a derived form)."""
        out = {}
        for name in self.bound:
            v = self.values[name]
            if isinstance(v, torch.SymInt):
                out[str(v.node.expr)] = dim_names.get(name, name)
        for name, (_i, _d, coef, off) in self.derived.items():
            v = self.values[f"__root_{name}"]
            if isinstance(v, torch.SymInt):
                label = f"{coef}*{dim_names.get(name, name)}"
                out[str(v.node.expr)] = label + (f" + {off}" if off else "")
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
        names = sorted(a.free_symbols | b.free_symbols)
        axes = []
        budget = max(2, int(20000 ** (1 / max(1, len(names)))))
        for n in names:
            lo, hi = self._range(n) if n in self.bound or n in self.derived else (0, None)
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
            return all(a.evaluate(p) == b.evaluate(p) for p in points)
        except (ZeroDivisionError, ValueError, KeyError):
            return False

    def implied(self, cond: Expr) -> bool:
        """Whether our engine derives `cond` from what the program knows."""
        if self.env is None:
            return False
        try:
            return self.env.decide(cond) is True
        except Exception:  # noqa: BLE001 - undecidable here means not implied
            return False


def evaluate(e: Expr, values: dict) -> Any:
    """Our expression over torch SymInts (Python arithmetic builds torch's expression)."""
    if e.op == "const":
        return e.value
    if e.op == "sym":
        return values[e.name]
    args = [evaluate(a, values) for a in e.args]
    if e.op in ("add", "mul", "min", "max", "and", "or"):
        fn = {"add": operator.add, "mul": operator.mul, "min": torch.sym_min,
              "max": torch.sym_max, "and": operator.and_, "or": operator.or_}[e.op]
        acc = args[0]
        for a in args[1:]:
            acc = fn(acc, a)
        return acc
    if e.op in _CMP:
        return _CMP[e.op](*args)
    if e.op in _ARITH:
        return _ARITH[e.op](*args)
    if e.op == "not":
        return torch.sym_not(args[0])
    raise _error(f"no torch form for {e}")


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
            return Expr.eq(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.Ne):
            return Expr.ne(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.StrictLessThan):
            return Expr.lt(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.LessThan):
            return Expr.le(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.StrictGreaterThan):
            return Expr.gt(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.GreaterThan):
            return Expr.ge(go(x.args[0]), go(x.args[1]))
        if isinstance(x, sympy.And):
            return Expr.and_(*[go(a) for a in x.args])
        if isinstance(x, sympy.Or):
            return Expr.or_(*[go(a) for a in x.args])
        if isinstance(x, sympy.Not):
            return Expr.not_(go(x.args[0]))
        # torch has Min/Max classes of its own beside sympy's
        if type(x).__name__ == "Min":
            return Expr.min(*[go(a) for a in x.args])
        if type(x).__name__ == "Max":
            return Expr.max(*[go(a) for a in x.args])
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


def _error(message: str) -> Exception:
    return ConversionError(message)
