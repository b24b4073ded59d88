"""The shape environment: symbols with hints and ranges, replacements, guards, facts, contract.

``Env.evaluate`` turns an undecided question on backed symbols into a recorded guard (the
branch the hints take) and assumes it; on unbacked symbols it raises
``DataDependentQuestion``.  Assuming a condition narrows single-symbol ranges, replaces a
symbol that equals a linear expression with unit coefficient (union-find, the older symbol
stays the representative; unbacked symbols are replaced before backed ones), rewrites atoms
such as ``s0 % 2`` to 0, and keeps anything else as a linear fact ``f >= 0`` or a known
condition for the prover.
"""

from __future__ import annotations

import itertools
import math
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import safetrace.symbolic.decide as D
import safetrace.symbolic.floats as F
import safetrace.symbolic.log as log
import safetrace.symbolic.results as _results
from safetrace.symbolic.assume import Assuming
from safetrace.symbolic.disjunctions import narrow_disjunctions
from safetrace.symbolic.canon import and_, compare, diff, not_
from safetrace.symbolic.history import ROOT, after, described, unique
from safetrace.symbolic.expr import TRUE, Expr, const, fsym, sym, to_expr
from safetrace.symbolic.ranges import Range
from safetrace.symbolic.records import DataDependentQuestion, Guard, Settled, SymbolInfo
from safetrace.symbolic.semantics import holds_at

INF = math.inf

_EPOCHS = itertools.count(1)  # one counter for all: an epoch names one state of one Env


class Env(Assuming):
    """Symbols, hints, ranges, replacements, guards and facts of one trace."""

    # (constant starting values are class defaults: an export makes an Env, and each
    # attribute stored in __init__ is paid by every export)
    _ns = 0
    _nu = 0
    origin_provider: Callable[[], object] | None = None
    # Report mode: called with the DataDependentQuestion instead of raising it; returns
    # the answer to assume (the assumption is recorded as a guard).
    on_undecided: Callable[[DataDependentQuestion], bool] | None = None
    # While the exporter watches (a list): every question raised, so that it can tell
    # whether the program's own code caught one (its except side is no eager path).
    raised: list[DataDependentQuestion] | None = None
    # Size-oblivious answers: the policy (installed by the layer that knows the
    # question's context) returns (answer, kind, why, asserted) or None; each answer is
    # recorded in ``settled`` and, when asserted, handed to ``on_settled`` (the tracer
    # puts a run-time assertion in the graph).
    settle_policy: Callable[[DataDependentQuestion], Any] | None = None
    on_settled: Callable[[Settled], None] | None = None
    # conditions (as text) whose size-oblivious answer the policy takes the other way:
    # a retrace of the other side of a data-dependent size test (exporter/splits.py)
    flipped: frozenset[str] = frozenset()
    # Classes of the Python values this env hands out (None: SymInt/SymBool/SymFloat);
    # a host library may use subclasses that its own runtime recognises.
    int_cls: type | None = None
    bool_cls: type | None = None
    float_cls: type | None = None
    # f(op, operands) -> a float the engine cannot express (n ** -0.5), computed by the
    # caller's graph; None: such values are specialized (their sizes guarded)
    opaque_float: Callable[[str, tuple[Any, ...]], Any] | None = None
    # > 0 while an op's own requirement is being decided (``Env.precondition``);
    # probe(answer, required) -> whether the guard is a requirement (an op's, or the
    # caller raises on the other answer, ``assert``), not a branch (eager catches it)
    precondition_depth = 0
    # (answer, required[, condition]) -> whether the guard is a requirement
    precondition_probe: Callable[..., bool] | None = None
    # () -> whether the code runs in a torch.cond branch or a loop body (zerodiv.py)
    subgraph_probe: Callable[[], bool] | None = None
    required_from = 0  # > 0: each guard's Guard.required_from (rules/common.py)
    required_sizes: tuple[Expr, ...] = ()  # with required_from: each guard's Guard.sizes
    # the state's name, shared with any env that went through the same described
    # changes (history.py): trace/memo.py keeps a computation's result under it
    state_name = ROOT
    shares_state_names = True  # (False: each change a unique name, none kept)
    positive_factors = False  # (True: pins.positive_factors; the loader's env)
    describing = 0  # > 0 inside a described method

    def __init__(self) -> None:
        self._syms: dict[str, SymbolInfo] = {}
        self.hints: dict[str, int] = {}
        self.subst: dict[Expr, Expr] = {}
        self.atoms: dict[Expr, Expr] = {}
        self.divisors: dict[Expr, int] = {}  # x -> a known divisor of x (from x % m == 0 facts)
        self.linear: list[Expr] = []
        self.known: set[Expr] = set()
        self.guards: list[Guard] = []
        self.facts: list[Guard] = []
        # conditions checked at run time but not assumed (the int range where float
        # arithmetic on a size is exact): they restrict no declared range
        self.requirements: list[Guard] = []
        self._guard_set: set[Expr] = set()
        # symbols the caller may narrow freely (Dim.AUTO sizes): a rule choosing between
        # guards prefers one that narrows these over one that narrows a declared size
        self.flexible: set[str] = set()
        # symbols of named Dims: a guard that narrows one refuses the export (a rule that
        # can compute every size exactly prefers that to a guard)
        self.named: set[str] = set()
        self.settled: list[Settled] = []
        self.cache = D.Caches()
        # New after any change an answer may depend on, and after a question the facts
        # left open (its answer depends on the asker): trace/memo.py reuses a pure
        # computation's result while the epoch is unchanged
        self.epoch = next(_EPOCHS)

    def note(self, event: tuple[Any, ...]) -> None:
        """Name the configuration the state is read under (what the environment's
        callers set outside its methods: flexible and named symbols, policies)."""
        self.state_name = after(self.state_name, ("note", event)) \
            if self.shares_state_names else unique()

    # --- symbols ----------------------------------------------------------------------
    @described(origin_at=4)
    def new_backed(self, hint: int, lo: int | None = 0, hi: int | None = None,
                   name: str | None = None, origin: object = None) -> Expr:
        """A new symbol with an example value ``hint`` in ``[lo, hi]`` (None: unbounded)."""
        if name is None:
            name = self._fresh("s")
        rng = Range(-INF if lo is None else lo, INF if hi is None else hi)
        if not isinstance(hint, int) or hint not in rng:
            raise ValueError(f"hint {hint!r} of {name} is outside its range [{rng.lo}, {rng.hi}]")
        self._add_symbol(SymbolInfo(name, True, int(hint), rng, origin, len(self._syms)))
        self.hints[name] = int(hint)
        return self._maybe_point(name)

    @described(origin_at=2)
    def new_unbacked(self, lo: int | None = None, hi: int | None = None,
                     origin: object = None, name: str | None = None) -> Expr:
        """A new data-dependent symbol (no hint) in ``[lo, hi]`` (None: unbounded)."""
        if name is None:
            name = self._fresh("u")
        rng = Range(-INF if lo is None else lo, INF if hi is None else hi)
        if rng.is_empty:
            raise ValueError(f"empty range [{rng.lo}, {rng.hi}] for {name}")
        self._add_symbol(SymbolInfo(name, False, None, rng, origin, len(self._syms)))
        return self._maybe_point(name)

    @described(origin_at=0)
    def new_unbacked_float(self, origin: object = None, name: str | None = None) -> Expr:
        """A new float read from data (no hint; any double, inf and nan included)."""
        if name is None:
            name = self._fresh("u")
        self._add_symbol(SymbolInfo(name, False, None, Range(), origin, len(self._syms),
                                    is_float=True))
        return fsym(name)

    def _fresh(self, prefix: str) -> str:
        while True:
            if prefix == "s":
                name, self._ns = f"s{self._ns}", self._ns + 1
            else:
                name, self._nu = f"u{self._nu}", self._nu + 1
            if name not in self._syms:
                return name

    def _add_symbol(self, info: SymbolInfo) -> None:
        if info.name in self._syms:
            raise ValueError(f"symbol {info.name} already exists")
        self._syms[info.name] = info
        self._bump()

    def _maybe_point(self, name: str) -> Expr:
        s = sym(name)
        rng = self._syms[name].range
        if rng.is_point:
            self._replace(s, const(int(rng.lo)))
        return s

    def _info(self, name: str) -> SymbolInfo:
        info = self._syms.get(name)
        if info is None:  # a symbol from parse(): treat as unbacked and unbounded
            info = SymbolInfo(name, False, None, Range(), None, len(self._syms))
            self._add_symbol(info)
        return info

    @property
    def symbols(self) -> dict[str, SymbolInfo]:
        """Name -> SymbolInfo for every symbol created in this env."""
        return self._syms

    @property
    def replacements(self) -> dict[Expr, Expr]:
        """Symbol -> the expression it is replaced by (fully resolved)."""
        return dict(self.subst)

    def _bump(self) -> None:
        self.cache.clear()
        self._new_epoch()

    def _new_epoch(self) -> None:
        self.epoch = next(_EPOCHS)
        if not self.describing:  # (a change no described method names: history.py)
            self.state_name = unique()

    def symbol_range(self, name: str) -> Range | None:
        """The range of a symbol, None for one this env never created."""
        info = self._syms.get(name)
        return info.range if info is not None else None

    # --- questions --------------------------------------------------------------------
    def simplify(self, expr: Expr | int) -> Expr:
        """Apply replacements and facts, in canonical form."""
        return D.simplify(self, to_expr(expr))

    def bounds(self, expr: Expr | int) -> Range:
        """Inclusive interval of ``expr`` (ints or +-inf); conditions give a bool range."""
        return D.bounds_of(self, D.simplify(self, to_expr(expr)))

    def decide(self, cond: Expr | bool) -> bool | None:
        """True/False when proven from ranges, replacements and facts; else None."""
        return D.decide(self, to_expr(cond))

    def hint(self, expr: Expr | int) -> int | bool | float:
        """Value of ``expr`` under the hints; raises DataDependentQuestion if unbacked."""
        e = to_expr(expr)
        v = D.hint_value(self, e)
        if v is None:
            raise DataDependentQuestion(self.simplify(e), None, self._hints_for(e))
        return v

    def _hints_for(self, e: Expr) -> dict[str, int]:
        return {n: self.hints[n] for n in sorted(self.simplify(e).free_symbols)
                if n in self.hints}

    def _origin(self, origin: object) -> object:
        if origin is None and self.origin_provider is not None:
            return self.origin_provider()
        return origin

    @described(origin_at=1)
    def evaluate(self, cond: Expr | bool, origin: object = None) -> bool:
        """Answer ``cond``: proven, else by the hints with a recorded guard, else raise."""
        c = to_expr(cond)
        if c.op == "const":
            return bool(c.value)
        r = D.decide(self, c)
        if r is not None:
            return r
        s = D.simplify(self, c)
        v = D.hint_value(self, s)
        if v is None:
            # (the answer may depend on who asks: see epoch; and on what the policy
            # below reads of the asking code, which no state name says)
            self.epoch, self.state_name = next(_EPOCHS), unique()
            q = DataDependentQuestion(s, self._origin(origin), self._hints_for(s))
            found = self.settle_policy(q) if self.settle_policy is not None else None
            if found is not None:
                answer, kind, why, asserted = found
                self.settle(s if answer else not_(s), kind, why, q.origin, asserted)
                return bool(answer)
            if self.on_undecided is None:
                if self.raised is not None:
                    self.raised.append(q)
                raise q
            v = bool(self.on_undecided(q))  # report mode: note it, assume an answer, go on
        taken = s if v else not_(s)
        if F.has_float(taken):  # a float decision: as an exact int condition where possible
            taken = self._exact_form(taken)
            if taken is TRUE:
                return bool(v)
        if taken not in self._guard_set:
            self._guard_set.add(taken)
            probe, req = self.precondition_probe, self.precondition_depth > 0
            pre = probe(bool(v), req) if probe is not None else req
            self.guards.append(Guard(taken, self._origin(origin), pre,
                                     0 if pre else self.required_from,
                                     () if pre else self.required_sizes))
            self._new_epoch()
            log.guarded(self, taken, self.guards[-1].origin)
        self._assume(taken)
        return bool(v)

    def _exact_form(self, c: Expr) -> Expr:
        """A condition on one symbol that involves float arithmetic, as the equivalent int
        condition (``s0*0.7 >= 3.5`` -> ``s0 >= 5``) when it is monotone in the symbol: the
        float operations are evaluated exactly as Python does at every probed size."""
        if c.op in ("and",):
            return and_(*[self._exact_form(a) for a in c.args])
        if c.op in ("feq", "eq"):  # an equality holds on the interval between two bounds
            lhs, rhs = c.args
            return and_(self._exact_form(compare("le", lhs, rhs)),
                        self._exact_form(compare("ge", lhs, rhs)))
        names = c.free_symbols
        if len(names) != 1:
            return c
        (name,) = names
        info = self._syms.get(name)
        hint = self.hints.get(name)
        if info is None or hint is None:
            return c
        ib = self._int_bounds
        d = diff(c) if c.op in ("le", "lt", "ge") else None
        way = F.cmp_direction(c, d, name, ib)
        if way is None:
            return c
        found = F.threshold(lambda v: holds_at(c, name, v), way > 0, True, hint, info.range.lo, info.range.hi)
        if found is None:
            return c
        kind, t = found
        return TRUE if kind == "true" else compare(kind, sym(name), const(t))

    def _int_bounds(self, e: Expr) -> Range:
        return D.bounds_of(self, e)

    @contextmanager
    def precondition(self) -> Iterator[None]:
        """Guards recorded inside are an op's own requirements: eager raises where one
        fails (a shape rule's check, ``torch._check``, an ``assert``), so the other side is
        no branch the program could take."""
        self.precondition_depth += 1
        try:
            yield
        finally:
            self.precondition_depth -= 1

    @described(origin_at=1)
    def require(self, cond: Expr, origin: object = None, precondition: bool = False) -> None:
        """Check ``cond`` at run time without assuming it (a limit of exactness, or with
        ``precondition`` an op's requirement no later size uses); nothing when proven."""
        c = D.simplify(self, cond)
        if D.decide(self, c) is True or any(g.cond is c for g in self.requirements):
            return
        self.requirements.append(Guard(c, origin, precondition))
        self._new_epoch()

    @described(origin_at=3)
    def settle(self, cond: Expr, kind: str, why: str, origin: object = None,
               asserted: bool = True) -> None:
        """Assume ``cond``, a condition on data-dependent sizes that the facts do not
        decide, as a size-oblivious answer (see ``Settled``)."""
        c = D.simplify(self, cond)
        if D.decide(self, c) is True:
            return
        item = Settled(c, kind, why, self._origin(origin), asserted)
        self.settled.append(item)
        self._new_epoch()
        log.settled(self, c, kind, why, item.origin, asserted)
        self.facts.append(Guard(c, item.origin))
        self._assume(c)
        narrow_disjunctions(self, c, self._assume)
        if asserted and self.on_settled is not None:
            self.on_settled(item)

    def undecided_unbacked(self, cond: Expr) -> bool:
        """True when ``cond`` is open: not settled by the facts and no hint decides it."""
        c = D.simplify(self, cond)
        return D.decide(self, c) is None and D.hint_value(self, c) is None

    @described(origin_at=1)
    def add_fact(self, cond: Expr | bool, origin: object = None) -> None:
        """Assume ``cond`` (a user check); ValueError if it is provably false."""
        c = D.simplify(self, to_expr(cond))
        r = D.decide(self, c)
        if r is False:
            raise ValueError(f"check `{c}` can never hold")
        if r is True:
            return
        v = D.hint_value(self, c)
        if v is not None and not v:
            raise ValueError(f"check `{c}` is false at the sizes traced "
                             f"({self._hints_for(c)})")
        self.facts.append(Guard(c, self._origin(origin)))
        self._new_epoch()
        self._assume(c)
        narrow_disjunctions(self, c, self._assume)

    # --- results (results.py) ---------------------------------------------------------
    solution = _results.solution
    check_binding = _results.check_binding
