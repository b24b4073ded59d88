"""Benchmark: the symbolic engine vs sympy on shape-code expressions.

One workload, run with both engines on the same generated expression stream: build an
expression typical of shape code (sums of sizes, products, conv/pool output sizes
``(s + 2*p - d*(k-1) - 1)//st + 1``), canonicalize it, bound it, decide a comparison on it,
and evaluate it at the example sizes.  sympy runs on a smaller prefix of the stream and is
scaled per expression.  The last line is ``speedup_vs_sympy: <ratio>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from safetrace.symbolic import Env, Expr, eq, ge, gt, le, lt  # noqa: E402

N_SYMBOLS = 8
HINTS = [3 + 5 * i for i in range(N_SYMBOLS)]


def params(i: int) -> tuple[int, ...]:
    """Deterministic parameters of the i-th expression (mostly distinct expressions)."""
    return (i % N_SYMBOLS, (i // 8) % N_SYMBOLS, i % 4, 1 + i % 7, 1 + (i // 3) % 3,
            1 + (i // 5) % 2, i % 997, i % 5)


def workload_ours(n: int) -> int:
    """Build, simplify, bound, decide and evaluate n expressions with safetrace.symbolic."""
    env = Env()
    syms = [env.new_backed(h, lo=1) for h in HINTS]
    binding = {f"s{i}": h for i, h in enumerate(HINTS)}
    checksum = 0
    for i in range(n):
        a, b, p, k, st, d, c, kind = params(i)
        x, y = syms[a], syms[b]
        if kind == 0:
            e = (x + 2 * p - d * (k - 1) - 1) // st + 1
            cond = ge(e, 1)
        elif kind == 1:
            e = x + y + c
            cond = gt(e, 10)
        elif kind == 2:
            e = x * y * (c + 1)
            cond = eq(e, x * (c + 1) * y)
        elif kind == 3:
            e = ((x + 2 * p - k) // st + 1) * y + c
            cond = lt(e, x * y + c + 4)
        else:
            e = (x * st + c) // st - x
            cond = le(e, c)
        e = env.simplify(e)
        r = env.bounds(e)
        decided = env.decide(cond)
        v = e.evaluate(binding)
        checksum += v + (r.lo if r.lo != -float("inf") else 0) + (decided is True)
    return checksum


def workload_sympy(n: int) -> int:
    """The same stream with sympy: expand, sign/assumption queries, relational, subs."""
    import sympy
    syms = sympy.symbols(f"s0:{N_SYMBOLS}", integer=True, positive=True)
    binding = dict(zip(syms, HINTS))
    checksum = 0
    for i in range(n):
        a, b, p, k, st, d, c, kind = params(i)
        x, y = syms[a], syms[b]
        if kind == 0:
            e = (x + 2 * p - d * (k - 1) - 1) // st + 1
            cond = sympy.Ge(e, 1)
        elif kind == 1:
            e = x + y + c
            cond = sympy.Gt(e, 10)
        elif kind == 2:
            e = x * y * (c + 1)
            cond = sympy.Eq(e, x * (c + 1) * y)
        elif kind == 3:
            e = ((x + 2 * p - k) // st + 1) * y + c
            cond = sympy.Lt(e, x * y + c + 4)
        else:
            e = (x * st + c) // st - x
            cond = sympy.Le(e, c)
        e = sympy.expand(e)
        lo_known = e.is_nonnegative
        decided = cond if isinstance(cond, bool) else bool(cond == sympy.true)
        v = int(e.xreplace(binding))
        checksum += v + (lo_known is True) + (decided is True)
    return checksum


def timed(fn: Callable[[int], Any], n: int) -> float:
    """Seconds for one run of fn(n)."""
    t = time.perf_counter()
    fn(n)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300_000)
    ap.add_argument("--sympy-n", type=int, default=3_000)
    args = ap.parse_args()
    ours_full = timed(workload_ours, args.n)
    ours_sample = timed(workload_ours, args.sympy_n)
    sym_sample = timed(workload_sympy, args.sympy_n)
    per_ours = ours_full / args.n
    per_sym = sym_sample / args.sympy_n
    rows = [("safetrace.symbolic", args.n, ours_full, per_ours),
            ("safetrace.symbolic (sample)", args.sympy_n, ours_sample,
             ours_sample / args.sympy_n),
            ("sympy (sample)", args.sympy_n, sym_sample, per_sym),
            ("sympy (scaled)", args.n, per_sym * args.n, per_sym)]
    print(f"{'engine':<30}{'exprs':>10}{'seconds':>12}{'us/expr':>12}")
    for name, n, secs, per in rows:
        print(f"{name:<30}{n:>10}{secs:>12.3f}{per * 1e6:>12.2f}")
    print(f"speedup_vs_sympy: {per_sym / per_ours:.1f}")


if __name__ == "__main__":
    main()
