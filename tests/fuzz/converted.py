"""The fuzzer's check of ``ep.to_torch()`` (and ``st.load(st.save bytes).to_torch()``): the
program every deploy path (AOTInductor, ONNX, ExecuTorch) starts from, held to the exported
program's contract on the inputs the engine already ran through ``ep.module()``.

Per converted program (``way``: ``to_torch`` or ``load+to_torch``):
  converted       ``to_torch()`` returned a torch.export program whose ``.module()`` builds
  convert_refused a ConversionError whose fix names no defect (torch's ``cond`` refusing a
                  branch shape of a ``torch.cond`` the user wrote, a loaded program's budget
                  check, a custom op without a torch fake: the documented refusals of
                  errors/interop.py)
  convert_crash   any other exception from the conversion (a ConversionError that asks to
                  report the program or blames a control-flow operator the program does not
                  call, a raw exception, a failing ``.module()``): a defect
  convert_split34 ``st.load(...).to_torch()`` failing with ``KeyError: sym_size_int`` in
                  interop/load_checks.py (or, in a cond's branch, ``UnboundLocalError`` on
                  ``sym_size_int``: a budget check's size node taken from the outer graph):
                  the known issue of a data split's read (helper split34's), counted apart
Per input (the engine's, other sizes, 0 and 1 included; compared with eager and with what
``ep.module()`` did on it):
  ok              the converted module computes what eager computes where ep.module() does,
                  or raises where ep.module() refuses
  WRONG           another result than eager's (or a result where eager raises)
  over_rejection  the converted module raises a check (``Guard failed``, a runtime
                  assertion) where ep.module() and eager compute: narrower
  crash           another exception there (an op of the converted graph fails)
  under_rejection the converted module computes eager's result where ep.module() refuses
                  (an input outside the declared space): wider, recorded
  late_refusal    refused, but after operators of the graph ran, where ep.module() refused
                  before any (an InputMismatchError): the check could come first
  split_read_range  an over_rejection by a size read from data held to the general side's
                  range of a data split (``u0 >= 2``): the known issue helper split34 owns
                  (interop/node_checks.py), counted apart
"""

from __future__ import annotations

import copy
import io
import os
import re
import warnings

import torch

import safetrace as st
from tests.conformance.checker import compare

# SAFETRACE_FUZZ_DECOMPOSE=1 adds torch's own retrace of the converted program:
# ``ep.to_torch().run_decompositions().module()`` (an exception of torch's retrace counts
# as a documented refusal: loud; a value other than eager's is WRONG)
WAYS = ("to_torch", "load+to_torch") + (
    ("to_torch+decompose",) if os.environ.get("SAFETRACE_FUZZ_DECOMPOSE") == "1" else ())
INPUT_KINDS = ("ok", "WRONG", "over_rejection", "crash", "under_rejection", "late_refusal",
               "split_read_range")
PROGRAM_KINDS = ("converted", "convert_refused", "convert_crash", "convert_split34")
BAD = ("WRONG", "crash", "convert_crash")    # defects; over_rejection: narrower, reported

# the operators of a converted graph that check its inputs rather than compute
CHECK_OPS = {"aten.sym_size.int", "aten.sym_numel.default", "aten.sym_stride.int",
             "aten.sym_storage_offset.default", "aten._assert_scalar.default",
             "aten._assert_tensor_metadata.default", "aten.expand.default",
             "aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default",
             "aten._assert_async.msg", "aten._assert_async.default"}


def _subclasses(cls) -> set:
    return {cls.__name__}.union(*(_subclasses(c) for c in cls.__subclasses__()))


_MISMATCH = _subclasses(st.InputMismatchError)   # refusals before any operator runs


def counter(way: str, kind: str) -> str:
    """The Stats counter of `kind` for `way` (``to_torch WRONG``)."""
    return f"{way} {kind}"


def convert(ep, way: str, program):
    """-> (module as a callable of the flat inputs, graph module, None) or (None, None,
    (kind, message)) with kind convert_refused / convert_crash / convert_split34."""
    try:
        src = ep
        if way == "load+to_torch":
            buf = io.BytesIO()
            st.save(ep, buf)
            src = st.load(buf.getvalue())
        tep = src.to_torch()
        if way == "to_torch+decompose":
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tep = tep.run_decompositions()
            except Exception as e:  # noqa: BLE001 - torch's retrace refused: loud
                return None, None, ("convert_refused", f"run_decompositions: "
                                    f"{type(e).__name__}: {str(e).strip()}"[:400])
        gm = tep.module()
    except st.ConversionError as e:
        text = f"{type(e).__name__}: {str(e).strip()}"[:400]
        kind = "convert_crash" if _asks_report(str(e)) or _split_cond(str(e), program) \
            else "convert_refused"
        if way == "load+to_torch" and re.search(
                r"KeyError: sym_size_int\w*, at [\w/]*load_checks\.py|UnboundLocalError: "
                r"cannot access local variable 'sym_size_int", text):
            kind = "convert_split34"   # the known issue of a data split's read (split34)
        return None, None, (kind, text)
    except Exception as e:  # noqa: BLE001 - any other exception is the conversion's defect
        return None, None, ("convert_crash", f"{type(e).__name__}: {str(e).strip()}"[:400])
    return program.flat(gm), gm, None


def _refusal_class(text: str) -> str:
    """A documented conversion refusal's class: its first line, names and numbers out."""
    first = text.splitlines()[0]
    first = re.sub(r"\b(node|symbol|variable) '?\w+'?", r"\1 N", first)
    first = re.sub(r"^ConversionError: cannot convert node N \((\w+)\): torch's FakeTensor "
                   r"propagation failed:", r"\1 fake:", first)
    return re.sub(r"\d+", "N", re.sub(r"torch\.Size\(\[[^\]]*\]\)", "S", first))[:120]


USER_HOPS = re.compile(r"\btorch\.cond\(|\.while_loop\(|\.scan\(|\.map\(|"
                       r"\bassociative_scan\(|\bvmap\(")   # (not Python's map)


def _split_cond(message: str, program) -> bool:
    """A control-flow refusal (``torch's cond cannot take this program's use of it``) of a
    program that calls no control-flow operator: the ``cond`` is the export's own (a split
    of the sizes, a branch on a size read from data), so its refusal wrongly blames the
    user: a defect of the conversion."""
    return "cannot take this program's use of it" in message and \
        not USER_HOPS.search(program.source())


def _asks_report(message: str) -> bool:
    """Whether a ConversionError's fix asks to report the program (errors/interop.py: a
    disagreement with torch's kernels, a symbol or size the conversion cannot write, an
    exception of the conversion itself), i.e. names a defect, not a documented refusal."""
    return bool(re.search(r"\breport (the|this) (program|node)\b", message))


def classify(eager, ep_outcome: str, ep_msg: str, module, gm, args):
    """-> (kind, message) of one input: the converted `module` against eager, given what
    ep.module() did on it (``ep_outcome``: run_input's ok / rejected, with its message)."""
    pa = copy.deepcopy(args)
    want, eager_err, ea = _eager(eager, args)
    try:
        with torch.no_grad():
            got = module(*pa)
    except Exception as e:  # noqa: BLE001
        text = f"{type(e).__name__}: {str(e).strip()}"[:400]
        if ep_outcome == "rejected":
            if ep_msg.split(":")[0] in _MISMATCH and _ran_ops(gm, args):
                return "late_refusal", f"{text} [ep.module(): {ep_msg[:200]}]"
            return "ok", ""
        if eager_err is not None:
            return "ok", ""          # both raise
        if re.search(r"\bu\d+ >= 2\b|\bu\d+ - 2\b", text):
            return "split_read_range", text
        if _is_check(e, text):
            return "over_rejection", text
        return "crash", text
    if eager_err is not None:
        return "WRONG", (f"eager raises {type(eager_err).__name__}: {str(eager_err)[:140]}, "
                         f"the converted program computed a result")
    d = compare(want, got, "values", 1e-4) or compare(ea, pa, "values", 1e-4, "inputs after")
    if d:
        return "WRONG", d
    if ep_outcome == "rejected":
        return "under_rejection", f"ep.module() refuses: {ep_msg[:300]}"
    return "ok", ""


def _eager(eager, args):
    from tests.fuzz.engine import _eager as run

    return run(eager, args)


def _is_check(e: BaseException, text: str) -> bool:
    """A refusal by a check of the converted program (torch's guard pre-hook, a runtime
    assertion node, a metadata assertion), not an operator failing."""
    # ("the inputs must satisfy `...`": the program's own run-time condition, as torch's
    # retrace folded it at its positive sizes (fuzz 3702: `min(n, 1) == 1` at n == 0):
    # a loud refusal of an input the program accepts, i.e. narrower)
    return bool(re.search(r"Guard failed|Runtime assertion failed|_assert_scalar|"
                          r"must be (>=|<=|equal)|must equal|Expected input|"
                          r"the inputs must satisfy `", text)) or \
        isinstance(e, AssertionError)


def _ran_ops(gm, args) -> bool:
    """Whether the converted graph ran an operator that computes (not one of CHECK_OPS)
    before it raised on `args` (the flat user inputs: its placeholders' order)."""
    ran: list = []

    class Record(torch.fx.Interpreter):
        def run_node(self, n):
            ran.append(n)
            return super().run_node(n)

    try:
        with torch.no_grad():
            Record(gm).run(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 - the refusal: what ran before it is the question
        pass
    else:
        return False   # the graph ran through (the refusal was a pre-hook's)
    return any(n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
               and str(n.target) not in CHECK_OPS for n in ran[:-1])


def check_converted(program, spec, ep, runs, stats, finding):
    """Convert `ep` both ways and run each converted module on `runs` ([(args, ep.module()'s
    outcome, its message)]); counts in ``stats.counts``, findings by `finding(kind, args,
    message)` (kind: ``<way> <kind>``)."""
    c = stats.counts
    eager = program.flat(program.model())
    for way in WAYS:
        c[counter(way, "programs")] += 1
        module, gm, err = convert(ep, way, program)
        if err is not None:
            c[counter(way, err[0])] += 1
            if err[0] == "convert_refused":
                c[f"{way} refused: {_refusal_class(err[1])}"] += 1
                stats.converted.setdefault((way, _refusal_class(err[1])),
                                           (program, spec, err[1]))
            if err[0] == "convert_crash":
                c[f"{way} crashed: {_refusal_class(err[1])}"] += 1
                finding(counter(way, "convert_crash"), None, err[1])
            continue
        c[counter(way, "converted")] += 1
        for args, outcome, msg in runs:
            kind, text = classify(eager, outcome, msg, module, gm, args)
            c[counter(way, "inputs")] += 1
            c[counter(way, kind)] += 1
            if kind != "ok" and kind != "split_read_range":
                finding(counter(way, kind), args, text)


def line(counts) -> str:
    """One line per way: the converted programs and the inputs by kind."""
    rows = []
    for way in WAYS:
        k = {x: counts[counter(way, x)] for x in ("programs", "inputs", *PROGRAM_KINDS,
                                                   *INPUT_KINDS)}
        rows.append(f"{way}: {k['programs']} programs, {k['converted']} converted, "
                    f"{k['convert_refused']} refused (documented), convert_crash "
                    f"{k['convert_crash']} (+{k['convert_split34']} data-split reads, split34); "
                    f"{k['inputs']} inputs, ok {k['ok']}, WRONG "
                    f"{k['WRONG']}, over_rejection {k['over_rejection']} (+"
                    f"{k['split_read_range']} data-split read ranges), crash "
                    f"{k['crash']}, under_rejection {k['under_rejection']}, late_refusal "
                    f"{k['late_refusal']}")
    return "\n".join(rows)


def fails(f, program) -> bool:
    """Whether `program` (a shrinking candidate) still shows converted finding `f` (its kind
    ``<way> <kind>``; the same input, or for convert_crash the same error class)."""
    from tests.fuzz.engine import export, run_input

    way, kind = f.kind.rsplit(" ", 1)
    try:
        eager = program.flat(program.model())
        with torch.no_grad():
            eager(*program.example())
    except Exception:  # noqa: BLE001 - no longer a valid program on its example
        return False
    ep, _ = export(program, f.spec)
    if ep is None:
        return False
    module, gm, err = convert(ep, way, program)
    if kind == "convert_crash":   # (the same error: its first words, names and numbers out)
        return err is not None and err[0] == kind and \
            _refusal_class(err[1])[:75] == _refusal_class(f.message)[:75]
    if err is not None or f.args is None:
        return False
    outcome, msg = run_input(eager, program.flat(ep.module()), f.args)
    if outcome not in ("ok", "rejected"):
        return False
    return classify(eager, outcome, msg, module, gm, f.args)[0] == kind


def refusal_table(counts, top: int = 8) -> str:
    """The documented conversion refusals and the conversion crashes by class, per way,
    most frequent first."""
    rows = []
    for way in WAYS:
        for what in ("refused", "crashed"):
            got = sorted(((n, k.split(": ", 1)[1]) for k, n in counts.items()
                          if k.startswith(f"{way} {what}: ")), reverse=True)
            rows += [f"  {way} {what} {n:>4}  {k}" for n, k in got[:top]]
    return "\n".join(rows)


def converts_like_eager(model, example, spec, others, outside, way="to_torch"):
    """A reproducer's check (tests/fuzz/test_to_torch_*.py): `model` exported at the
    `example` shapes with `spec`, converted (``way``: ``to_torch``, or ``load`` for
    ``st.load(st.save bytes).to_torch()``), computes eager's values (outputs and inputs
    after) at the example and the `others` (each a list of input shapes; sizes 0 and 1
    among them) where ep.module() does and refuses where it refuses, and refuses the
    `outside` shapes as ep.module() does. Returns how many it computed."""
    ep = st.export(model, tuple(torch.randn(*s) for s in example), dynamic_shapes=spec)
    if way == "load":
        buf = io.BytesIO()
        st.save(ep, buf)
        ep = st.load(buf.getvalue())
    module, computed = ep.to_torch().module(), 0
    for shapes in [example, *others]:
        args = tuple(torch.randn(*s) for s in shapes)
        outcome, msg = run_input_of(model, ep.module(), args)
        kind, text = classify(model, outcome, msg, module, module, args)
        assert kind == "ok", (shapes, kind, text)
        computed += outcome == "ok"
    bad = tuple(torch.randn(*s) for s in outside)
    assert run_input_of(model, ep.module(), bad)[0] == "rejected", outside
    try:
        module(*bad)
    except Exception as e:  # noqa: BLE001
        assert _is_check(e, str(e)), e
    else:
        raise AssertionError(f"the converted module computes {outside}")
    return computed


def run_input_of(model, module, args):
    from tests.fuzz.engine import run_input

    return run_input(model, module, args)
