"""The differential fuzzer: random programs (grammar.py) x random dynamic specs x input sizes,
eager PyTorch as the oracle, save/load round trips, shrinking to minimal reproducers.

Per input (an exported program called on fresh inputs):
  ok              the program's outputs (and in-place effects) equal eager's, or both raise
  rejected        InputMismatchError / RuntimeAssertionError
  over_rejection  rejected although the spec admits it (named Dims within range, all else as
                  at export) and eager handles it (a subset of rejected), for no reason the
                  program states
  small_by_design such a rejection at a named Dim's size 0 or 1 by a check the program lists
                  in ``ep.deferred_checks``: no split keeps those sizes, so the export turned
                  the refusal into run-time checks (exporter/small_splits.py
                  ``checked_below_two``), refusing them as torch.export's program runs them
                  unchecked (counted apart from over_rejection)
  oblivious_by_design  such a rejection by a run-time assertion on a size read from data
                  that the trace answered size-obliviously (as for every size >= 2, as
                  torch.export does): data making that size 0 or 1 is refused by design
  count_by_design such a rejection by the requirement that a number of pieces (``chunk``,
                  ``split``, ``unbind``) equal the example's, where the program reads the
                  pieces as a whole (a loop over them, ``len``, unpacking), or that a loop
                  ``for _ in range(n)`` or ``while k > 1`` counted by a size run as often
                  as on a traced side:
                  one graph holds one count of ops, as torch.export's guard does
                  (``count_pin``)
  vmap_by_design  such a rejection of an empty batch by ``torch.vmap``'s requirement that
                  the batch be non-empty (a map takes no empty batch; eager's functorch
                  runs some functions on one and raises for others, ``r * 2 + r.sum()``:
                  no graph can tell which, ``empty_vmap``)
  rank_by_design  such a rejection where eager's result on the input has another number
                  of dims or another dtype (or number of outputs) than the program's on
                  its example: a branch
                  whose other side returns another rank, which no one graph returns (the
                  export keeps the example's side as a check, as torch.export's guard)
  WRONG           different outputs, or a result where eager raises, or a loaded program
                  that differs from the saved one
  crash_after_checks   another exception once the input checks passed, where eager runs
Per program: exported, or a clear ExportError, or export_crash (any other exception).
A program that eager itself cannot run on its example is counted as eager_fails, not as a
refusal (there is nothing to export). Each refusal is classified by its error class and the
normalized first line of its first problem (``refusal_key``); with ``torch_export_p`` a sample
of refused programs is also given to torch.export with the same spec, which tells the gaps
("torch exports it, we do not") from refusals both make.
"""

from __future__ import annotations

import contextlib
import copy
import io
import random
import re
import signal
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace

import torch

import safetrace as st
from safetrace import Dim
from safetrace.symbolic.canon import subs
from safetrace.symbolic.expr import terms
from tests.conformance.checker import compare
from tests.fuzz.grammar import KINDS, Program, build, typed

FIELDS = ("programs", "exported", "inputs", "ok", "rejected", "over_rejection",
          "small_by_design", "oblivious_by_design", "count_by_design", "vmap_by_design",
          "rank_by_design", "WRONG", "crash_after_checks",
          "export_crash", "refused", "eager_fails")
BAD = ("WRONG", "crash_after_checks", "export_crash")
ONE_VALUE = " [the spec: a Dim with a one-value range]"
CONVERTED = ("to_torch ", "load+to_torch ", "to_torch+decompose ")   # the kinds of tests/fuzz/converted.py's findings


@dataclass
class Finding:
    kind: str
    program: Program
    spec: tuple
    args: tuple | None
    message: str

    def key(self) -> str:
        msg = re.sub(r"\d+", "N", self.message.splitlines()[0] if self.message else "")[:90]
        return f"{self.kind}: {msg}"

    def report(self) -> str:
        shapes = None if self.args is None else [tuple(a.shape) for a in self.args]
        ex = [tuple(t.shape) for _, t in self.program.inputs]
        return (f"{self.key()}\n  example shapes {ex}, spec {self.spec!r}, failing input shapes "
                f"{shapes}\n  {self.message[:300]}\n" + self.program.source())


@dataclass
class Refusals:
    """Refused programs by class: count, torch.export tries / successes, one example each."""
    counts: Counter = field(default_factory=Counter)
    tried: Counter = field(default_factory=Counter)
    torch_ok: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)     # key -> (program, spec, message)

    def add(self, key: str, program, spec, message: str) -> None:
        self.counts[key] += 1
        self.examples.setdefault(key, (program, spec, message))

    def table(self, top: int = 25) -> str:
        total = sum(self.counts.values()) or 1
        rows = [f"{'count':>6} {'share':>6} {'torch.export ok':>15}  class"]
        for key, n in self.counts.most_common(top):
            t = f"{self.torch_ok[key]}/{self.tried[key]}" if self.tried[key] else "-"
            rows.append(f"{n:>6} {100 * n / total:>5.1f}% {t:>15}  {key}")
        rest = sum(self.counts.values()) - sum(n for _, n in self.counts.most_common(top))
        if rest:
            rows.append(f"{rest:>6} {100 * rest / total:>5.1f}% {'':>15}  (other classes)")
        tried, ok = sum(self.tried.values()), sum(self.torch_ok.values())
        rows.append(f"torch.export on a sample of the refused programs: {ok} of {tried} export")
        return "\n".join(rows)


@dataclass
class Stats:
    counts: Counter = field(default_factory=Counter)
    findings: list = field(default_factory=list)
    refusals: Refusals = field(default_factory=Refusals)
    converted: dict = field(default_factory=dict)  # documented conversion refusals' classes:
    # (way, class) -> (program, spec, message), one example each (tests/fuzz/converted.py)

    def line(self) -> str:
        c = self.counts
        return (f"fuzz: {c['programs']} programs, {c['exported']} exported, {c['inputs']} inputs, "
                f"ok {c['ok']}, rejected {c['rejected']}, over_rejection {c['over_rejection']} "
                f"(+{c['small_by_design']} at sizes 0/1 by design, +{c['oblivious_by_design']} "
                f"size-oblivious data sizes, +{c['count_by_design']} pinned counts, "
                f"+{c['vmap_by_design']} empty vmap batches, +{c['rank_by_design']} other "
                f"ranks or dtypes), "
                f"WRONG {c['WRONG']}, "
                f"crash_after_checks {c['crash_after_checks']}, export_crash {c['export_crash']}"
                + (f", other-dtype probes {c['dtype_probes']}" if c["dtype_probes"] else "")
                + (f", timeouts {c['timeouts']} (programs left past --program-seconds)"
                   if c["timeouts"] else "")
                + (f"\n{_converted_line(c)}" if c["to_torch programs"] else ""))

    def refusal_line(self) -> str:
        c = self.counts
        runnable = c["programs"] - c["eager_fails"]
        share = 100 * c["exported"] / runnable if runnable else 0.0
        spec = sum(n for k, n in self.refusals.counts.items() if k.endswith(ONE_VALUE))
        rest = runnable - spec
        share2 = 100 * c["exported"] / rest if rest else 0.0
        return (f"refusals: {c['refused']} refused, {c['eager_fails']} eager_fails (eager "
                f"cannot run the example: not counted); exported {share:.1f}% of the "
                f"{runnable} programs eager runs; {spec} refused for a one-value Dim range in "
                f"the spec (torch.export refuses those too): {share2:.1f}% of the others")


def _converted_line(counts) -> str:
    from tests.fuzz.converted import line

    return line(counts)


# -- specs and sizes -----------------------------------------------------------------------

def random_spec(rng, inputs):
    """Per dim: static, AUTO, DYNAMIC, a named Dim (shared between equal sizes), or derived."""
    spec, roots = [], []          # roots: (Dim, example value)
    for _, t in inputs:
        entry = {}
        for d, n in enumerate(t.shape):
            r = rng.random()
            if r < 0.3:
                continue
            if r < 0.42:
                entry[d] = Dim.AUTO
            elif r < 0.52:
                entry[d] = Dim.DYNAMIC
            else:
                same = [dim for dim, v in roots if v == n]
                derived = [(dim, v) for dim, v in roots if n in (2 * v, v + 1) and v != n]
                if same and rng.random() < 0.5:
                    entry[d] = rng.choice(same)
                elif derived and rng.random() < 0.5:
                    dim, v = rng.choice(derived)
                    entry[d] = 2 * dim if n == 2 * v else dim + 1
                else:
                    lo = rng.choice([0, 0, 1, 2, n])
                    hi = rng.choice([None, None, n, n + 3, 16])
                    dim = Dim(f"d{len(roots)}", min=min(lo, n), max=None if hi is None else max(hi, n))
                    roots.append((dim, n))
                    entry[d] = dim
        spec.append(entry or None)
    return tuple(spec), roots


def _value(entry, root_values):
    if isinstance(entry, Dim):
        return root_values[entry.name]
    return entry.coef * root_values[entry.root.name] + entry.offset


def input_sizes(rng, inputs, spec, roots, n, contract=None, paths=None):
    """n input shapes: (shapes, admitted). Named roots take 0, 1, bounds, equal sizes, random;
    half the inputs also move the AUTO / DYNAMIC dims. In the other half an AUTO / DYNAMIC
    dim stays as at export, unless the exported `contract` relates it to named Dims: then it
    follows them (torch's semantics of AUTO / DYNAMIC: the program's relations hold; a
    named Dim is never narrowed by one). `paths`: the inputs' paths in the program (their
    names where forward takes them flat)."""
    out = []
    for i in range(n):
        vals = {}
        for dim, v in roots:
            hi = dim.max if dim.max != float("inf") else v + 6
            cands = [dim.min, min(hi, v + 6), 0, 1, v, v + 1, max(v - 1, 0),
                     rng.randint(dim.min, max(dim.min, min(hi, v + 6)))]
            cands += list(vals.values())          # equal sizes
            vals[dim.name] = rng.choice(cands)
        free = i % 2 == 1
        admitted = all(dim.min <= vals[dim.name] <= dim.max for dim, _ in roots) and not free
        shapes = []
        for (_, t), entry in zip(inputs, spec):
            shape = list(t.shape)
            for d, e in (entry or {}).items():
                if e is Dim.AUTO or e is Dim.DYNAMIC:
                    if free:
                        shape[d] = rng.choice([0, 1, 2, shape[d], shape[d] + 1, rng.randint(0, 8)])
                else:
                    shape[d] = _value(e, vals)
            shapes.append(shape)
        if admitted and contract is not None:
            follow_relations(contract, inputs, spec, shapes, paths)
        if all(s >= 0 for sh in shapes for s in sh):
            out.append((shapes, admitted))
    return out


def follow_relations(contract, inputs, spec, shapes, paths=None):
    """Set the AUTO / DYNAMIC dims that `contract` writes as expressions of named Dims'
    symbols to their values at the named Dims of `shapes` (in place)."""
    dims = {inp.path: inp.dims for inp in contract.inputs if hasattr(inp, "dims")}
    known = {}   # symbol -> value, read from the named Dims
    names = paths or [n for n, _ in inputs]
    for name, entry, shape in zip(names, spec, shapes):
        for d, e in (entry or {}).items():
            cd = dims.get(name, ())[d] if d < len(dims.get(name, ())) else None
            if cd is None or e is Dim.AUTO or e is Dim.DYNAMIC or isinstance(cd.size, int):
                continue
            t = dict(terms(cd.size))
            linear = [(m, k) for m, k in t.items() if m]
            if len(linear) == 1 and len(linear[0][0]) == 1 and linear[0][0][0].op == "sym":
                (m, k), c = linear[0], t.get((), 0)
                if (shape[d] - c) % k == 0:
                    known.setdefault(str(m[0].name), (shape[d] - c) // k)
    for name, entry, shape in zip(names, spec, shapes):
        for d, e in (entry or {}).items():
            cd = dims.get(name, ())[d] if d < len(dims.get(name, ())) else None
            if cd is None or not (e is Dim.AUTO or e is Dim.DYNAMIC) or \
                    isinstance(cd.size, int) or not cd.size.free_symbols <= set(known):
                continue
            v = subs(cd.size, known)
            if v.op == "const":
                shape[d] = int(v.value)


def dim_values(spec, shapes) -> dict:
    """The named Dims' values (root names) that `shapes` give under `spec`."""
    out = {}
    for entry, shape in zip(spec, shapes):
        for d, e in (entry or {}).items():
            if isinstance(e, Dim) and e is not Dim.AUTO and e is not Dim.DYNAMIC:
                out[e.name] = shape[d]
            elif hasattr(e, "root") and (shape[d] - e.offset) % e.coef == 0:
                out[e.root.name] = (shape[d] - e.offset) // e.coef
    return out


def small_by_design(ep, spec, shapes, message: str) -> bool:
    """Whether a rejection (`message`) is one of the checks the program lists as deferred
    (``ep.deferred_checks``: sizes below 2 of named Dims no split keeps, refused at call by
    design) at an input where a named Dim is 0 or 1: the check's source location or its
    condition is the rejection's."""
    checks = getattr(ep, "deferred_checks", None) or ()
    if not checks or not any(v < 2 for v in dim_values(spec, shapes).values()):
        return False
    origin = re.search(r"\(from `.*?` at [^)]*\)", message)
    cond = re.search(r"violate `(.*?)`", message)
    return any((origin and origin.group(0) in c) or (cond and f"`{cond.group(1)}`" in c)
               for c in checks)


def by_design(ep, spec, shapes, message: str) -> str | None:
    """The counter of a rejection of an admitted input eager computes that the program
    makes by design (``small_by_design``, ``oblivious_by_design``), else None."""
    if small_by_design(ep, spec, shapes, message):
        return "small_by_design"
    if message.startswith("RuntimeAssertionError") and "(size-oblivious" in message:
        return "oblivious_by_design"
    if count_pin(message):
        return "count_by_design"
    if empty_vmap(message):
        return "vmap_by_design"
    return None


def empty_vmap(message: str) -> bool:
    """Whether a rejection is ``torch.vmap``'s requirement of a non-empty batch
    (trace/vmapping.py ``_mapped``): a size below 1 refused at a line that calls vmap, or
    a batch of another size's (``y.reshape(-1, 2)`` on the even side of ``numel() % 2``:
    ``(n % 2 != 0) or (n >= 2)``, fuzz seed 301)."""
    m = re.search(r"\(from `(.*?)` at ", message)
    return bool(m and re.search(r"\bvmap\(", m.group(1)) and
                re.search(r"= 0, but it must be >= 1|violate `[^`]* >= 1`|violate `[^`]*"
                          r"\) or \([^`]* >= \d+\)`", message))


_PIECES = re.compile(r"\.(chunk|split|unbind|tensor_split|unsafe_split|unsafe_chunk)\(")
_WHOLE = re.compile(r"\bfor\b|\blen\(|\*\w|\bsum\(|\blist\(|\btuple\(")


def count_pin(message: str) -> bool:
    """Whether a rejection is a failed ``count == N`` requirement of a line that makes
    pieces and reads them as a whole (a Python loop or ``len`` of them): their number is
    the example's in a graph (trace/pieces.py pins it only there); or any requirement of
    a ``while`` line on sizes (``while k > 1: k //= 2``): unrolled, its count is a traced
    side's (a range of sizes, ``abs(n - 3) <= 3``, or the bound a ``Dim.DYNAMIC`` took); or a
    requirement of a line that picks a dim by its size (``x.shape.index(max(x.shape))``):
    the op's dim is one Python int in a graph, the example's (as torch.export's guard)."""
    if re.match(r"(FailedCondition|OutOfRange): .*?\(from `while [^`]*` at ", message, re.S):
        return True
    m = re.match(r"FailedCondition: the inputs violate `(.*)`, required \(from `(.*?)` at ",
                 message, re.S)
    if not m:
        return False
    cond, line = m.group(1), m.group(2)
    if re.search(r"\bfor \w+ in range\(", line):   # a loop counted by a size (a statement
        # or a comprehension): unrolled; its count is the example's, or a traced side's
        # range of counts (`min(n, 3) >= 3`, or an `or` of such parts)
        return all(re.search(r" (==|>=|<=|>|<) \d+\)?$", part) for part in cond.split(" or "))
    if re.search(r"\.shape\.index\(", line):   # a dim chosen among sizes (`x.amax(dim=x.shape
        # .index(max(x.shape)))`): a graph's op takes one dim, the example's (seed 3404)
        return True
    return bool(re.search(r" == \d+$", cond) and _PIECES.search(line) and _WHOLE.search(line))


def make_args(shapes, seed, dtypes=None):
    """Inputs of `shapes` (float32 normal values; with `dtypes`, each input's as
    ``grammar.typed`` makes the example's)."""
    g = torch.Generator().manual_seed(seed)
    args = tuple(torch.randn(list(s), generator=g) for s in shapes)
    if dtypes is None:
        return args
    return tuple(typed(a, d) for a, d in zip(args, dtypes))


# -- one program ---------------------------------------------------------------------------

def error_text(e: BaseException, limit: int | None = 400) -> str:
    """The class and message of `e`, cut at `limit` characters (None: whole, for the
    classification of a rejection: a long condition pushes its `(from ...)` line out)."""
    return f"{type(e).__name__}: {str(e).strip()}"[:limit]


def run_input(eager, module, args):
    """-> (outcome, message) for one input: ok / rejected / WRONG / crash_after_checks."""
    pa = copy.deepcopy(args)
    want, eager_err, ea = _eager(eager, args)
    try:
        with torch.no_grad():
            got = module(*pa)
    except (st.InputMismatchError, st.RuntimeAssertionError) as e:
        return "rejected", error_text(e, None)
    except Exception as e:  # noqa: BLE001
        if eager_err is not None:
            return "ok", "both raise"
        return "crash_after_checks", error_text(e)
    if eager_err is not None:
        return "WRONG", f"eager raises {error_text(eager_err)[:160]}, the program computed a result"
    d = compare(want, got, "values", 1e-4) or compare(ea, pa, "values", 1e-4, "inputs after")
    return ("WRONG", d) if d else ("ok", "")


def _eager(eager, args):
    """-> (eager's result, None, its inputs after) or (None, its error, its inputs after).
    Eager's ``torch.cond`` on a tensor predicate compiles the branches with dynamo, whose
    caches grow over a long run: an error dynamo raises (not the program's) is retried
    once on fresh caches."""
    for attempt in (0, 1):
        ea = copy.deepcopy(args)
        try:
            with torch.no_grad():
                return eager(*ea), None, ea
        except Exception as e:  # noqa: BLE001
            if attempt or not type(e).__module__.startswith("torch._dynamo"):
                return None, e, ea
            torch._dynamo.reset()
    raise AssertionError("unreachable")  # pragma: no cover


def _eager_out(eager, args):
    """Eager's result (in a list), or None where eager raises."""
    try:
        with torch.no_grad():
            return [eager(*copy.deepcopy(args))]
    except Exception:  # noqa: BLE001
        return None


def _ranks(out) -> list:
    """The number of dims and the dtype of each tensor of a result (None for other
    values): a branch whose other side returns another dtype is no torch.cond either."""
    from torch.utils import _pytree as pytree

    return [(t.ndim, t.dtype) if isinstance(t, torch.Tensor) else None
            for t in pytree.tree_leaves(out)]


def _eager_handles(eager, args) -> bool:
    """Eager computes a result (a rejection of an input eager also fails on is right)."""
    try:
        with torch.no_grad():
            eager(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001
        return False
    return True


def refusal_key(e: BaseException, program=None) -> str:
    """The class of a refusal: the error class and the first line of its first problem, with
    names, numbers and source locations normalized away; with the program, the statement kind
    the message points at (``[size_math]``)."""
    msg = str(e)
    problems = [ln[4:] for ln in msg.splitlines() if ln.startswith("  - ")]
    first = problems[0] if problems else (msg.strip().splitlines() or [""])[0]
    kind = ""
    lines = [int(n) for n in re.findall(r"<fuzz program>:(\d+)", first)]
    if program is not None:
        kind = f" [{program.kind_at(lines[-1]) or '?'}]" if lines else " [no source line]"
    one = re.search(r"\(Dim\('\w+'(?:, min=(\d+))?, max=(\d+)\)\) was specialized", first)
    if one and int(one.group(1) or 0) == int(one.group(2)):
        kind = ONE_VALUE   # the spec's own problem, refused as torch.export refuses it
    first = re.sub(r" ?\(from (`.*?` at )?(<[^>]*>|[^ `()]+):\d+\)", "", first)
    first = re.sub(r" at (<[^>]*>|[\w./]+\.py):\d+( `[^`]*`)?", "", first)
    first = re.sub(r"Dim\('\w+'[^)]*\)", "Dim", first)
    first = re.sub(r"\b[a-z]\w*(\[['\w]+\])*\.shape\[\d+\]", "S", first)
    first = re.sub(r"\b[sud]\d+\b", "s", first)
    first = re.sub(r"\d+(\.\d+)?", "N", first)
    return f"{type(e).__name__}: {' '.join(first.split())[:110]}{kind}"


def eager_runs(program) -> bool:
    try:
        with torch.no_grad():
            program.flat(program.model())(*program.example())
    except Exception:  # noqa: BLE001
        return False
    return True


def export(program, spec):
    """-> (ep, None) or (None, 'refused' / 'export_crash' message)."""
    ep, err, _ = export_classified(program, spec)
    return ep, err


def export_classified(program, spec):
    """-> (ep, None, None), (None, 'refused', refusal key) or (None, export_crash message, None)."""
    try:
        args, kwargs = program.pack(program.example())
        return st.export(program.model(), args, kwargs or None,
                         dynamic_shapes=program.pack_spec(spec, by_name=_by_name(program))), \
            None, None
    except st.ExportError as e:
        return None, "refused", refusal_key(e, program)
    except Exception as e:  # noqa: BLE001
        return None, error_text(e), None


def _by_name(program) -> bool:
    """Whether a program's spec is written as a dict by parameter name (else a tuple, one
    entry per positional argument): one or the other for each program, fixed by its first
    input's rank (shrinking keeps it)."""
    return program.layout != "flat" and program.inputs[0][1].ndim % 2 == 1


def _torch_spec(spec):
    """Our spec in torch.export's spelling (the same names, ranges and derived dims)."""
    from torch.export import Dim as TDim

    roots: dict = {}

    def conv(e):
        if e is Dim.AUTO:
            return TDim.AUTO
        if e is Dim.DYNAMIC:
            return TDim.DYNAMIC
        if isinstance(e, Dim):
            if e.name not in roots:
                roots[e.name] = TDim(e.name, min=e.min,
                                     max=None if e.max == float("inf") else e.max)
            return roots[e.name]
        out = conv(e.root)
        out = out * e.coef if e.coef != 1 else out
        return out + e.offset if e.offset else out

    return tuple(None if entry is None else {d: conv(v) for d, v in entry.items()}
                 for entry in spec)


def torch_exports(program, spec) -> bool:
    """Whether torch.export exports the program with the same spec (the reference)."""
    import logging

    import torch.export as te

    quiet = logging.getLogger("torch")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:   # a failing torch.export prints the partial graph: keep the run's output readable
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args, kwargs = program.pack(program.example())
            te.export(program.model(), args, kwargs or None, strict=False,
                      dynamic_shapes=program.pack_spec(_torch_spec(spec), _by_name(program)))
    except Exception:  # noqa: BLE001
        return False
    finally:
        quiet.setLevel(level)
    return True


def check_program(program, spec, roots, rng, stats, n_inputs, roundtrip_p, torch_export_p=0.0,
                  to_torch_p=0.0):
    c = stats.counts
    c["programs"] += 1
    ep, err, key = export_classified(program, spec)
    if ep is None and err == "refused":
        if not eager_runs(program):
            c["eager_fails"] += 1
            return
        c["refused"] += 1
        stats.refusals.add(key, program, spec, err)
        if torch_export_p and rng.random() < torch_export_p:
            stats.refusals.tried[key] += 1
            stats.refusals.torch_ok[key] += torch_exports(program, spec)
        return
    if ep is None:
        if err != "refused":
            c["export_crash"] += 1
            stats.findings.append(Finding("export_crash", program, spec, None, err))
        return
    c["exported"] += 1
    try:   # building the module (subgraphs compiled) is part of exporting
        eager, module = program.flat(program.model()), program.flat(ep.module())
    except Exception as e:  # noqa: BLE001
        c["export_crash"] += 1
        stats.findings.append(Finding("export_crash", program, spec, None, "module() " + error_text(e)))
        return
    accepted, runs = [], []    # runs: (args, outcome, message) for the converted check
    ranks = None
    for shapes, admitted in input_sizes(rng, program.inputs, spec, roots, n_inputs,
                                             ep.contract, program.paths()):
        args = make_args(shapes, rng.randrange(2**31), [t.dtype for _, t in program.inputs])
        c["inputs"] += 1
        outcome, msg = run_input(eager, module, args)
        c[outcome] += 1
        if outcome in ("ok", "rejected"):
            runs.append((args, outcome, msg))
        if outcome == "rejected" and admitted and (out := _eager_out(eager, args)) is not None:
            why = by_design(ep, spec, shapes, msg)
            if why is None:
                if ranks is None:   # (the program's: eager's on the example)
                    ex = _eager_out(eager, program.example())
                    ranks = False if ex is None else _ranks(ex)
                why = "rank_by_design" if ranks is not False and _ranks(out) != ranks \
                    else None
            if why:
                c[why] += 1
                continue
            c["over_rejection"] += 1
            if sum(f.kind == "over_rejection" for f in stats.findings) < 200:
                stats.findings.append(Finding("over_rejection", program, spec, args, msg))
        elif outcome in BAD:
            stats.findings.append(Finding(outcome, program, spec, args, msg))
        elif outcome == "ok" and not msg:
            accepted.append(args)
    if accepted and any(t.dtype != torch.float32 for _, t in program.inputs):
        _dtype_probe(eager, module, accepted[0], program, spec, stats)
    if accepted and rng.random() < roundtrip_p:
        _roundtrip(program, spec, ep, module, accepted, stats)
    if to_torch_p and runs and rng.random() < to_torch_p:   # (drawn last: the run's other
        # draws are those of a run without it)
        from tests.fuzz.converted import check_converted

        check_converted(program, spec, ep, runs, stats, lambda kind, args, msg:
                        stats.findings.append(Finding(kind, program, spec, args, msg)))


OTHER_DTYPE = {torch.float32: torch.float64, torch.float64: torch.float32,
               torch.float16: torch.bfloat16, torch.bfloat16: torch.float16,
               torch.int64: torch.int32, torch.int32: torch.int64, torch.int16: torch.int64,
               torch.int8: torch.uint8, torch.uint8: torch.int8, torch.bool: torch.uint8}


def _dtype_probe(eager, module, args, program, spec, stats):
    """An accepted input of a typed program with each tensor in another dtype (outside the
    declared space): refused, or eager's result (``dtype_probes``; a program that runs it
    to another result is WRONG)."""
    c = stats.counts
    other = tuple(a.to(OTHER_DTYPE.get(a.dtype, torch.float64)) for a in args)
    c["dtype_probes"] += 1
    outcome, msg = run_input(eager, module, other)
    if outcome in BAD:
        c[outcome] += 1
        stats.findings.append(Finding(outcome, program, spec, other, "other dtypes: " + msg))


def _roundtrip(program, spec, ep, module, accepted, stats):
    """A save/load round trip of `ep`: the loaded program's outputs on up to four accepted
    inputs equal `module`'s bit for bit."""
    c = stats.counts
    buf = io.BytesIO()
    try:
        st.save(ep, buf)
        loaded = program.flat(st.load(buf.getvalue()).module())
    except Exception as e:  # noqa: BLE001
        c["export_crash"] += 1
        stats.findings.append(Finding("export_crash", program, spec, None, "save/load " + error_text(e)))
        return
    c["roundtrips"] += 1
    for args in accepted[:4]:
        try:
            with torch.no_grad():
                d = compare(module(*copy.deepcopy(args)), loaded(*copy.deepcopy(args)),
                            "exact")
        except Exception as e:  # noqa: BLE001
            d = error_text(e)
        if d:
            c["WRONG"] += 1
            stats.findings.append(Finding("WRONG", program, spec, args, "save/load: " + d))
            break


def fuzz(seed=0, programs=None, seconds=None, n_inputs=24, kinds=None, roundtrip_p=0.25,
         avoid=(), torch_export_p=0.0, layouts=("flat",), outs=("tuple",), to_torch_p=0.0,
         dtypes=(), program_seconds=None):
    """Run until `programs` programs or `seconds` elapsed; returns Stats. ``layouts``: how
    forward may take its inputs (grammar.LAYOUTS: flat, keyword-only, a nested dict, a
    list); ``outs``: how it may return its results (grammar.OUTS); ``to_torch_p``: the share
    of exported programs also converted with ``to_torch()`` and ``st.load(...).to_torch()``
    and run on the same inputs (tests/fuzz/converted.py); ``dtypes``: the dtypes an input
    may take besides float32 (grammar.build); ``program_seconds``: a program whose checks
    take longer is left (counted ``timeouts``: an input size where eager's own work grows
    past reason, e.g. a loop over an outer product's rows; main thread only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # torch's degrees-of-freedom warnings on empty dims
        return _fuzz(seed, programs, seconds, n_inputs, kinds, roundtrip_p, avoid,
                     torch_export_p, layouts, outs, to_torch_p, dtypes, program_seconds)


class ProgramTimeout(BaseException):
    """A program's checks ran past ``program_seconds`` (a BaseException: the library's and
    the engine's ``except Exception`` must not take it for the program's own error)."""


@contextlib.contextmanager
def _time_limit(seconds):
    if not seconds or not hasattr(signal, "SIGALRM") or \
            threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise ProgramTimeout(f"checks ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



def program_rngs(seed, programs, seconds, stats):
    """One random generator per program of a run: until `programs` are counted in `stats`
    or `seconds` have passed (either None: no such limit)."""
    rng = random.Random(seed)
    t_end = None if seconds is None else time.monotonic() + seconds
    while (programs is None or stats.counts["programs"] < programs) and \
            (t_end is None or time.monotonic() <= t_end):
        yield random.Random(rng.randrange(2**62))

def _fuzz(seed, programs, seconds, n_inputs, kinds, roundtrip_p, avoid, torch_export_p,
          layouts, outs, to_torch_p=0.0, dtypes=(), program_seconds=None):
    stats = Stats()
    for prng in program_rngs(seed, programs, seconds, stats):
        program = build(prng, kinds, avoid=avoid, layouts=layouts, outs=outs, dtypes=dtypes)
        if not program.stmts:
            continue
        spec, roots = random_spec(prng, program.inputs)
        try:
            with _time_limit(program_seconds):
                check_program(program, spec, roots, prng, stats, n_inputs, roundtrip_p,
                              torch_export_p, to_torch_p)
        except ProgramTimeout:
            stats.counts["timeouts"] += 1
    return stats


# -- shrinking -----------------------------------------------------------------------------

def _fails(f: Finding, program) -> bool:
    if f.kind.startswith(CONVERTED):
        from tests.fuzz.converted import fails

        return fails(f, program)
    try:
        model = program.flat(program.model())
        with torch.no_grad():
            model(*program.example())
    except Exception:  # noqa: BLE001 - no longer a valid program on its example
        return False
    ep, err = export(program, f.spec)
    if f.kind == "export_crash" and f.message.startswith("module() ") and ep is not None:
        try:
            ep.module()
        except Exception as e:  # noqa: BLE001
            return error_text(e).split(":")[0] == f.message[9:].split(":")[0]
        return False
    if f.kind == "export_crash":
        return ep is None and err != "refused" and err.split(":")[0] == f.message.split(":")[0]
    if ep is None or f.args is None:
        return False
    if f.message.startswith("save/load"):
        return _roundtrip_differs(ep, f.args, program)
    eager = program.flat(program.model())
    outcome, _ = run_input(eager, program.flat(ep.module()), f.args)
    if f.kind == "over_rejection":
        return outcome == "rejected" and _eager_handles(eager, f.args)
    return outcome == f.kind


def _roundtrip_differs(ep, args, program) -> bool:
    """Whether the saved and loaded program's outputs on `args` differ from `ep`'s (a
    shrunk save/load finding must still differ, not merely run)."""
    buf = io.BytesIO()
    try:
        st.save(ep, buf)
        loaded = program.flat(st.load(buf.getvalue()).module())
        with torch.no_grad():
            return compare(program.flat(ep.module())(*copy.deepcopy(args)),
                           loaded(*copy.deepcopy(args)),
                           "exact") is not None
    except Exception:  # noqa: BLE001 - a crash is another finding
        return False


def shrink(f: Finding) -> Finding:
    """Drop statements while the failure (same kind, same input) persists."""
    program = f.program
    changed = True
    while changed:
        changed = False
        for i in range(len(program.stmts) - 1, -1, -1):
            cand = replace(program, stmts=program.stmts[:i] + program.stmts[i + 1:],
                           tags=program.tags[:i] + program.tags[i + 1:])
            if cand.stmts and _fails(f, cand):
                program, changed = cand, True
    if program.state and _fails(f, replace(program, state=False)):
        program = replace(program, state=False)
    return Finding(f.kind, program, f.spec, f.args, f.message)


def classes(findings, per_key=4):
    """{(kind, statement kinds of the shrunk reproducer): [shrunk findings]}, shrinking up to
    ``per_key`` findings of each message key."""
    out: dict = {}
    seen: Counter = Counter()
    for f in findings:
        if seen[f.key()] >= per_key:
            continue
        seen[f.key()] += 1
        s = shrink(f)
        out.setdefault((s.kind, tuple(sorted(set(s.program.tags)))), []).append(s)
    return out


__all__ = ["BAD", "FIELDS", "KINDS", "Finding", "Refusals", "Stats", "by_design", "classes",
           "fuzz", "refusal_key", "shrink", "small_by_design", "torch_exports"]
