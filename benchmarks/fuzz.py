"""The differential fuzzer's long run (the engine is tests/fuzz/engine.py; a short fixed-seed
run is part of the test suite).

Run: python benchmarks/fuzz.py --minutes N | --programs P [--seed S] [--inputs K] [--show 5]
[--base] [--kinds raising,vmapping]  (by default the statement kinds of grammar.py, grammar_long.py,
grammar_layout.py, grammar_ops.py, grammar_reach.py, grammar_cross.py, grammar_sweep.py and
grammar_model.py, grammar_values.py, grammar_mixed.py, grammar_gaps.py, grammar_typed.py and
grammar_promote.py, grammar_outside.py; --kinds ops / reach / cross / sweep / model / values /
mixed / gaps / typed / promote / outside:
that module's only; --reach: the rule families the run's
traces reached; inputs taken as forward's
positional, keyword-only, nested-dict or list parameters, results returned as a tuple or
nested in a dict (--flat: positional only, a tuple);
--base: grammar.py's only, the programs the suite's short run draws from;
inputs of any dtype (int64 / int32 / int8 / uint8 / bool / float16 / bfloat16 / float64 besides
float32: grammar_typed.DTYPES), each typed program's first accepted input also tried with every
tensor in another dtype, which it must refuse or compute as eager (--float-inputs: float32 only,
as before session 35; --base: float32);
--state: grammar_state.py's programs instead, each called CALLS times in sequence on inputs
of any layout and dtype, outputs and buffers compared after every call; with --kinds
state / layout_in / scalars)
Prints one line: fuzz: P programs, E exported, I inputs, ok O, rejected R, over_rejection V
(+S at sizes 0/1 by design, +D size-oblivious data sizes), WRONG W, crash_after_checks C,
export_crash X (V: refusals of inputs the spec admits and eager computes that the program
does not explain; S and D: those it refuses by design, tests/fuzz/engine.py ``by_design``); then, with --show, the finding classes with a
shrunk reproducer each. Then the refusals: refused programs apart from those eager cannot run
on their example, and a table of refusal classes (error class + normalized first line),
with --torch-export P the share of a sample of each class that torch.export exports.
--to-torch SHARE (default 0.03): that share of exported programs is also converted with
``ep.to_torch()`` and ``st.load(st.save bytes).to_torch()``, whose ``.module()`` runs the
same inputs: one more line per way (converted, documented refusals, convert_crash; per
input ok, WRONG, over_rejection, crash, under_rejection, late_refusal: the classes of
tests/fuzz/converted.py), then the refusals and crashes by class; --show shrinks those
findings too.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")

import torch  # noqa: E402

from tests.fuzz.engine import classes, fuzz  # noqa: E402
from tests.fuzz.grammar import KINDS, LAYOUTS, OUTS  # noqa: E402
from tests.fuzz.grammar_cross import CROSS_KINDS  # noqa: E402
from tests.fuzz.grammar_sweep import SWEEP_KINDS  # noqa: E402
from tests.fuzz.grammar_typed import DTYPES, TYPED_KINDS  # noqa: E402
from tests.fuzz.grammar_layout import LAYOUT_KINDS  # noqa: E402
from tests.fuzz.grammar_gaps import GAP_KINDS  # noqa: E402
from tests.fuzz.grammar_long import LONG_KINDS  # noqa: E402
from tests.fuzz.hop_oracle import install as install_hop_oracle  # noqa: E402
from tests.fuzz.grammar_mixed import MIXED_KINDS  # noqa: E402
from tests.fuzz.grammar_model import MODEL_KINDS  # noqa: E402
from tests.fuzz.grammar_ops import OPS_KINDS  # noqa: E402
from tests.fuzz.grammar_outside import OUTSIDE_KINDS  # noqa: E402
from tests.fuzz.grammar_promote import PROMOTE_KINDS  # noqa: E402
from tests.fuzz.grammar_reach import REACH_KINDS  # noqa: E402
from tests.fuzz.grammar_values import VALUE_KINDS  # noqa: E402

TO_TORCH_SHARE = 0.03   # the default run's share of exported programs converted: converting
# both ways and running both modules costs about three programs' export and checks (CPU
# time, docs/benchmarks.md 2026-12-07 h/fuzz34): +17% CPU on 400 programs, torch.export's
# first import included


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--programs", type=int, default=0,
                    help="stop after this many programs instead (a fixed count: comparable "
                         "before and after a change, whatever the machine's load)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", type=int, default=24, help="input sizes per exported program")
    ap.add_argument("--show", type=int, default=0, help="print this many classes, shrunk")
    ap.add_argument("--torch-export", type=float, default=0.05,
                    help="share of refused programs also tried with torch.export")
    ap.add_argument("--refusals", type=int, default=25, help="refusal classes to list")
    ap.add_argument("--refusal-examples", type=int, default=0,
                    help="print an example program of the first N refusal classes")
    ap.add_argument("--base", action="store_true",
                    help="only the short run's statement kinds (grammar.KINDS), not "
                         "grammar_long's")
    ap.add_argument("--kinds", default="", help="comma-separated statement kinds to use")
    ap.add_argument("--flat", action="store_true",
                    help="inputs only as forward's positional parameters (else also keyword-"
                         "only, in a nested dict, in a list: grammar.LAYOUTS)")
    ap.add_argument("--reach", action="store_true",
                    help="also print, per rule family, how many of its ATen overloads the "
                         "run's traces asked for (and some it never asked)")
    ap.add_argument("--to-torch", type=float, default=TO_TORCH_SHARE,
                    help="share of exported programs also converted with ep.to_torch() and "
                         "st.load(st.save bytes).to_torch(), whose modules run on the same "
                         "inputs (tests/fuzz/converted.py; 0: none)")
    ap.add_argument("--float-inputs", action="store_true",
                    help="all inputs float32 (else, beyond --base, 60%% of inputs take "
                         "another dtype: grammar_typed.DTYPES, int / bool / half / bfloat16 / "
                         "double)")
    ap.add_argument("--program-seconds", type=float, default=60.0,
                    help="leave a program whose checks take longer (counted as timeouts: "
                         "eager's own work at a drawn input size can grow past reason, e.g. "
                         "a loop over an outer product's rows); 0: no limit")
    ap.add_argument("--state", action="store_true",
                    help="grammar_state's stateful programs called in sequence")
    ap.add_argument("--per-kind", action="store_true",
                    help="one run per statement kind of the table (each its own --programs "
                         "/ --minutes, programs of that kind's statements only): a line each, "
                         "and the key of each finding class")
    opts = ap.parse_args()
    if opts.state:
        return state_run(opts)
    table = dict(KINDS) if opts.base else {**KINDS, **LONG_KINDS, **LAYOUT_KINDS, **OPS_KINDS,
                                                  **REACH_KINDS, **CROSS_KINDS,
                                                  **SWEEP_KINDS, **MODEL_KINDS,
                                                  **VALUE_KINDS, **MIXED_KINDS,
                                                  **GAP_KINDS, **TYPED_KINDS,
                                                  **PROMOTE_KINDS, **OUTSIDE_KINDS}
    if opts.kinds == "ops":
        table = dict(OPS_KINDS)
    elif opts.kinds == "reach":
        table = dict(REACH_KINDS)
    elif opts.kinds == "cross":
        table = dict(CROSS_KINDS)
    elif opts.kinds == "sweep":
        table = dict(SWEEP_KINDS)
    elif opts.kinds == "model":
        table = dict(MODEL_KINDS)
    elif opts.kinds == "values":
        table = dict(VALUE_KINDS)
    elif opts.kinds == "mixed":
        table = dict(MIXED_KINDS)
    elif opts.kinds == "gaps":
        table = dict(GAP_KINDS)
    elif opts.kinds == "typed":
        table = dict(TYPED_KINDS)
    elif opts.kinds == "promote":
        table = dict(PROMOTE_KINDS)
    elif opts.kinds == "outside":
        table = dict(OUTSIDE_KINDS)
    elif opts.kinds:
        table = {k: table[k] for k in opts.kinds.split(",")}
    torch.set_num_threads(1)
    if opts.per_kind:
        return per_kind(opts, table)
    asked = _count_rules() if opts.reach else None
    if not opts.base:   # the oracle's while_loop and scan (torch's compile each call: ~1 s);
        install_hop_oracle()   # st.export still traces the operators (tests/fuzz/hop_oracle.py)
    stats = fuzz(seed=opts.seed, n_inputs=opts.inputs, **_limit(opts),
                 torch_export_p=opts.torch_export, kinds=table,
                 layouts=("flat",) if opts.base or opts.flat else LAYOUTS,
                 outs=("tuple",) if opts.base or opts.flat else OUTS,
                 to_torch_p=opts.to_torch,
                 dtypes=() if opts.base or opts.float_inputs else DTYPES,
                 program_seconds=opts.program_seconds or None)
    print(stats.line(), flush=True)
    print(stats.refusal_line())
    print(stats.refusals.table(opts.refusals), flush=True)
    if opts.to_torch:
        from tests.fuzz.converted import refusal_table

        print(refusal_table(stats.counts), flush=True)
        for (way, key), (program, spec, msg) in list(stats.converted.items())[
                :opts.refusal_examples]:
            print(f"\n--- {way} refused: {key}\n  spec {spec!r}\n  {msg}\n{program.source()}")
    if asked is not None:
        print(_reach_table(asked), flush=True)
    for key, _ in stats.refusals.counts.most_common(opts.refusal_examples):
        program, spec, _ = stats.refusals.examples[key]
        print(f"\n--- refused: {key}\n  spec {spec!r}\n{program.source()}")
    if opts.show:
        groups = classes(stats.findings)
        bad = sorted(groups.items(), key=lambda kv: (kv[0][0].endswith("over_rejection"),
                                                      -len(kv[1])))
        for (kind, tags), fs in bad[:opts.show]:
            print(f"\n=== {kind} {'+'.join(tags)} ({len(fs)} shrunk)")
            print(min(fs, key=lambda f: len(f.program.source())).report())


def per_kind(opts, table: dict) -> None:
    """``--per-kind``: each kind of `table` alone, its stats line and its findings' keys."""
    install_hop_oracle()
    for kind, gen in table.items():
        stats = fuzz(seed=opts.seed, n_inputs=opts.inputs, **_limit(opts),
                     torch_export_p=0.0, kinds={kind: gen}, layouts=LAYOUTS, outs=OUTS,
                     to_torch_p=opts.to_torch, dtypes=() if opts.float_inputs else DTYPES,
                     program_seconds=opts.program_seconds or None)
        print(f"[{kind} seed {opts.seed}] {stats.line()}", flush=True)
        for key in sorted({f.key() for f in stats.findings}):
            print(f"    {key}", flush=True)


def _count_rules() -> set:
    """The ATen overloads whose rule the tracer looks up from now on (once per op: the
    tracer caches what it learns of an op, trace/opinfo.py)."""
    from safetrace.trace import opinfo

    asked: set = set()
    lookup = opinfo.get_rule

    def counting(op):
        asked.add(op)
        return lookup(op)

    opinfo.get_rule = counting
    opinfo.OP_INFO.clear()
    return asked


def _reach_table(asked: set) -> str:
    """Per rule family (rules/<family>.py): overloads asked / registered, least reached
    first, with a few never asked."""
    from collections import defaultdict

    from safetrace.rules.registry import FAMILY

    fams: dict = defaultdict(lambda: [0, 0, []])
    for op, fam in FAMILY.items():
        row = fams[fam.rsplit(".", 1)[-1]]
        row[1] += 1
        if op in asked:
            row[0] += 1
        elif len(row[2]) < 6 and op._overloadname in ("default", "Tensor", "dim", "int"):
            row[2].append(str(op).removeprefix("aten."))
    rows = [f"reach: {sum(r[0] for r in fams.values())} of {len(FAMILY)} ATen overloads "
            f"with a rule asked by the run's traces"]
    for fam, (n, total, never) in sorted(fams.items(), key=lambda kv: kv[1][0] / kv[1][1]):
        rows.append(f"  {fam:<16} {n:>4} / {total:<4} never: {', '.join(never)}")
    return "\n".join(rows)


def _limit(opts) -> dict:
    """--programs, else --minutes."""
    if opts.programs:
        return {"programs": opts.programs, "seconds": None}
    return {"programs": None, "seconds": opts.minutes * 60}


def state_run(opts) -> None:
    from tests.fuzz.grammar_state import STATE_KINDS, fuzz_state, shrink_state

    table = {k: STATE_KINDS[k] for k in opts.kinds.split(",")} if opts.kinds else None
    torch.set_num_threads(1)
    stats = fuzz_state(seed=opts.seed, kinds=table, **_limit(opts))
    c = stats.counts
    print(stats.line() + f", layout_rejected {c['layout_rejected']} (by design), "
          f"partial_state {c['partial_state']} (a raise both make, eager's writes half done)",
          flush=True)
    print(stats.refusal_line())
    print(stats.refusals.table(opts.refusals), flush=True)
    shown: set = set()
    for f in stats.findings:
        if len(shown) >= opts.show or f.key() in shown or f.kind == "over_rejection":
            continue
        shown.add(f.key())
        s = shrink_state(f) if f.args else f
        print(f"\n=== {s.key()}\n  spec {s.spec!r}\n  {s.message[:300]}\n{s.program.source()}")


if __name__ == "__main__":
    main()
