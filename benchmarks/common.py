"""Helpers shared by the benchmark and probe scripts: the same spec for torch.export, the
spec with every Dim made AUTO, checks that an export left model and inputs alone, and the
probe sweeps' comparison of a program's runs with eager."""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import time
import traceback

import torch
from torch.utils import _pytree as pytree

import safetrace as st

from safetrace.dims import DerivedDim, Dim


def torch_spec(spec, cache=None):
    """safetrace's dynamic_shapes spec with its Dims replaced by torch.export.Dims."""
    from torch.export import Dim as TDim

    cache = {} if cache is None else cache
    if isinstance(spec, Dim):
        if id(spec) not in cache:
            kw = {}
            if spec.min is not None and spec.min > 0:
                kw["min"] = spec.min
            if spec.max is not None and spec.max != float("inf") and spec.max < 2**62:
                kw["max"] = spec.max
            cache[id(spec)] = TDim(spec.name, **kw)
        return cache[id(spec)]
    if isinstance(spec, DerivedDim):
        return torch_spec(spec.root, cache) * spec.coef + spec.offset
    if isinstance(spec, dict):
        return {k: torch_spec(v, cache) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(torch_spec(v, cache) for v in spec)
    if spec is Dim.AUTO:
        return TDim.AUTO
    if spec is Dim.DYNAMIC:
        return TDim.DYNAMIC
    return spec


def auto_spec(spec):
    """Every Dim (and derived Dim) of a named spec replaced by Dim.AUTO."""
    if isinstance(spec, (Dim, DerivedDim)):
        return Dim.AUTO
    if isinstance(spec, dict):
        return {k: auto_spec(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(auto_spec(v) for v in spec)
    return spec


def snap_model(m):
    """A copy of the model's state and training flags, to compare after an export."""
    sd = {k: v.detach().clone() for k, v in m.state_dict(keep_vars=True).items()}
    flags = {n: mod.training for n, mod in m.named_modules()}
    return sd, flags


def model_changed(m, snap):
    """What changed since `snap` (None when nothing)."""
    sd, flags = snap
    now = m.state_dict(keep_vars=True)
    if set(now) != set(sd):
        return f"state_dict keys changed: {set(now) ^ set(sd)}"
    for k, v in sd.items():
        w = now[k]
        if w.shape != v.shape or w.dtype != v.dtype or not torch.equal(w.detach(), v):
            return f"state {k} changed"
    for n, mod in m.named_modules():
        if flags.get(n) != mod.training:
            return f"training flag of {n or 'model'} changed"
    return None


def inputs_changed(before, after):
    """'an input tensor changed' when any tensor leaf differs, else None."""
    for x, y in zip(pytree.tree_leaves(before), pytree.tree_leaves(after)):
        if isinstance(x, torch.Tensor) and (x.shape != y.shape or x.dtype != y.dtype
                                            or not torch.equal(x, y)):
            return "an input tensor changed"
    return None


# -- the probe sweeps' run checks (sweep_models*.py) ----------------------------------

def compare(got, want, mode="values", tol=1e-4, exact=False):
    """Raise AssertionError unless `got` has eager's structure, shapes, dtypes and values
    (identical bits with `exact`; shapes only with mode != "values")."""
    lg, sg = pytree.tree_flatten(got)
    lw, sw = pytree.tree_flatten(want)
    if sg != sw:
        raise AssertionError(f"output structure {sg} vs {sw}")
    for a, b in zip(lg, lw):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise AssertionError(f"non-tensor output {type(a)}")
            if a.shape != b.shape or a.dtype != b.dtype:
                raise AssertionError(f"shape/dtype {tuple(a.shape)} {a.dtype} vs eager {tuple(b.shape)} {b.dtype}")
            if exact:
                if not torch.equal(a, b) and not (a.is_floating_point() and torch.equal(a.nan_to_num(0.123), b.nan_to_num(0.123))):
                    d = (a.double() - b.double()).abs().nan_to_num(0).max().item() if a.numel() else 0
                    raise AssertionError(f"not identical (max abs diff {d:.3g})")
            elif mode == "values":
                torch.testing.assert_close(a, b, rtol=tol, atol=tol, equal_nan=True)
        elif a != b:
            raise AssertionError(f"output {a!r} vs eager {b!r}")


def first_line(e, n=1):
    """An exception's first n lines (a violation list's first item), for table cells."""
    lines = [l for l in f"{type(e).__name__}: {e}".strip().splitlines() if l.strip()]
    if len(lines) > 1 and lines[1].lstrip().startswith("- ") and n == 1:
        lines = [f"{type(e).__name__}: {lines[1].strip()[2:]}"]
    return " / ".join(l.strip() for l in lines[:n])[:220]


def is_safetrace_error(e):
    """A clear refusal by safetrace (as opposed to an internal crash)."""
    return isinstance(e, (st.ExportError, st.InputMismatchError, st.RuntimeAssertionError))


def check_runs(model, case, module, inputs, mode, edges=()):
    """-> (marks, first problem or ''). Per input: y match, N rejected (InputMismatchError),
    W wrong, E error, M input mutated; after '/', the edge inputs, where eager may raise:
    then 'r' (rejected too) is right and 'W' (computed anyway) is wrong."""
    marks, prob = [], ""
    stateful = getattr(case, "stateful", False)
    eager = copy.deepcopy(model) if stateful else model
    for i, (args, kwargs) in enumerate(list(inputs) + list(edges)):
        if i == len(inputs):
            marks.append("/")
        edge = i >= len(inputs)
        with torch.no_grad():
            try:
                want, eager_err = eager(*copy.deepcopy(args), **copy.deepcopy(kwargs)), None
            except Exception as e:  # noqa: BLE001
                if not edge:
                    raise
                want, eager_err = None, e
            a2, k2 = copy.deepcopy(args), copy.deepcopy(kwargs)
            try:
                got = module(*a2, **k2)
            except st.InputMismatchError as e:
                marks.append("r" if eager_err is not None else "N")
                if eager_err is None:
                    prob = prob or "narrow: " + first_line(e)
                    if stateful:  # the eager copy advanced its state, the program did not
                        marks.append("-")
                        break
                continue
            except Exception as e:  # noqa: BLE001
                marks.append("e" if eager_err is not None else "E")
                prob = prob or ("run (eager fails too): " if eager_err is not None else "run: ") + first_line(e)
                continue
        if eager_err is not None:
            marks.append("W")
            prob = prob or f"WRONG: eager raises {first_line(eager_err)[:80]} but the exported program computed a result"
            continue
        if inputs_changed((args, kwargs), (a2, k2)):
            marks.append("M")
            prob = prob or "run mutated an input"
            continue
        try:
            compare(got, want, mode, getattr(case, "tol", 1e-4))
            marks.append("y")
        except AssertionError as e:
            marks.append("W")
            prob = prob or "WRONG: " + " ".join(str(e).split())[:200]
    return "".join(marks), prob


# -- the probe sweeps' driver -------------------------------------------------------------

class _Skip(Exception):
    pass


def run_case(cases, name, verbose=False, with_torch=True, roundtrip=True):
    """One probe model: named Dims, then (optionally) a save/load round trip, Dim.AUTO and
    torch.export with the same spec; a table row."""
    torch.manual_seed(0)
    case = cases[name]()
    model = case.model.eval()
    row = dict(model=name, status="ok", error="", gen="", rt="", auto="", auto_gen="", torch="", torch_gen="", t=0.0)
    t0 = time.perf_counter()
    snap = snap_model(model)
    inputs = [(case.args, case.kwargs)] + case.others
    args_b = copy.deepcopy((case.args, case.kwargs))

    # 1. named Dims
    try:
        ep = st.export(model, case.args, case.kwargs, dynamic_shapes=case.spec)
    except Exception as e:  # noqa: BLE001
        if verbose:
            traceback.print_exc()
        row.update(status="fail" if is_safetrace_error(e) else "crash", error=first_line(e, 3))
        ep = None
    if ep is not None:
        ch = model_changed(model, snap) or inputs_changed(args_b, (case.args, case.kwargs))
        if ch:
            row.update(status="mutated", error="export: " + ch)
        try:
            module = ep.module()
            gen, prob = check_runs(model, case, module, inputs, case.mode, case.edges)
        except Exception as e:  # noqa: BLE001
            gen, prob = "E", "module(): " + first_line(e)
        row["gen"] = gen
        if prob and row["status"] == "ok":
            st_ = "WRONG" if prob.startswith("WRONG") else "narrow" if prob.startswith("narrow") else (
                "mutated" if "mutated" in prob else "crash")
            row.update(status=st_, error=prob)
        ch = model_changed(model, snap)
        if ch and row["status"] == "ok":
            row.update(status="mutated", error="run: " + ch)
        if case.outside is not None:
            a, k = case.outside
            try:
                module(*a, **k)
                if row["status"] == "ok":
                    row.update(status="lax", error="out-of-spec input accepted")
                row["gen"] += "!"
            except st.InputMismatchError:
                row["gen"] += "r"
            except Exception as e:  # noqa: BLE001
                row["gen"] += "x"
                if row["status"] == "ok":
                    row.update(status="lax", error="out-of-spec input: " + first_line(e))
        # save / load round trip: identical outputs on every input
        try:
            if not roundtrip:
                raise _Skip
            buf = io.BytesIO()
            st.save(ep, buf)
            ep_l = st.load(buf.getvalue())
            m1, m2 = ep.module(), ep_l.module()
            rt = "y"
            for a, k in inputs:
                with torch.no_grad():
                    try:
                        w = m1(*copy.deepcopy(a), **copy.deepcopy(k))
                    except st.InputMismatchError:
                        continue
                    g = m2(*copy.deepcopy(a), **copy.deepcopy(k))
                compare(g, w, "values", exact=True)
            if case.outside is not None:
                try:
                    m2(*case.outside[0], **case.outside[1])
                    rt = "!"
                except st.InputMismatchError:
                    pass
        except _Skip:
            rt = "-"
        except Exception as e:  # noqa: BLE001
            if verbose:
                traceback.print_exc()
            rt = "rt: " + first_line(e)
            if row["status"] == "ok":
                row.update(status="rt" if isinstance(e, AssertionError) else "crash", error="save/load " + first_line(e))
        row["rt"] = rt
    # 2. Dim.AUTO
    try:
        ep2 = st.export(model, case.args, case.kwargs, dynamic_shapes=auto_spec(case.spec))
        row["auto"] = "ok"
        gen, prob = check_runs(model, case, ep2.module(), inputs, case.mode, case.edges)
        row["auto_gen"] = gen
        if "W" in gen or "E" in gen or "M" in gen:
            row["auto"] = prob[:120]
            if row["status"] in ("ok", "fail", "narrow"):
                row.update(status="WRONG" if "W" in gen else "crash", error="AUTO " + prob)
        elif "N" in gen:
            rep = getattr(ep2, "dims_report", None)
            row["auto"] = "specialized"
            if verbose:
                print(rep)
    except Exception as e:  # noqa: BLE001
        if verbose:
            traceback.print_exc()
        row["auto"] = first_line(e)[:120]
        if not is_safetrace_error(e) and row["status"] in ("ok", "fail"):
            row.update(status="crash", error="AUTO " + first_line(e, 3))
    ch = model_changed(model, snap)
    if ch and row["status"] == "ok":
        row.update(status="mutated", error=ch)
    row["t"] = time.perf_counter() - t0
    # 3. torch.export, same named spec
    if with_torch:
        try:
            logging.getLogger("torch").setLevel(logging.ERROR)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                tep = torch.export.export(model, case.args, case.kwargs, dynamic_shapes=torch_spec(case.spec))
            row["torch"] = "ok"
            gen, prob = check_runs(model, case, tep.module(), inputs, case.mode, case.edges)
            row["torch_gen"] = gen
        except Exception as e:  # noqa: BLE001
            row["torch"] = type(e).__name__
            row["torch_err"] = first_line(e)
        if model_changed(model, snap):
            model.load_state_dict(snap[0], strict=False)
    return row


def sweep_main(title, cases, argv, roundtrip=True):
    """Run the probe models named in argv (all by default) and print the table and summary."""
    verbose = "-v" in argv
    with_torch = "--no-torch" not in argv
    names = [a for a in argv if not a.startswith("-")] or list(cases)
    rows = []
    t0 = time.perf_counter()
    print("| model | status | error | named: gen (y ok, N rejected, W wrong, E error; r/! out-of-spec rejected/accepted)"
          " | save/load | AUTO | AUTO gen | torch.export | torch gen | st s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        try:
            r = run_case(cases, n, verbose, with_torch, roundtrip)
        except Exception as e:  # noqa: BLE001
            if verbose:
                traceback.print_exc()
            r = dict(model=n, status="build", error=first_line(e), gen="", auto="", auto_gen="", torch="", torch_gen="", t=0.0)
        rows.append(r)
        print(f"| {r['model']} | {r['status']} | {r['error'].replace('|', '/')} | {r['gen']} | {r.get('rt', '')} | {r['auto'].replace('|', '/')} "
              f"| {r['auto_gen']} | {r['torch']} | {r['torch_gen']} | {r['t']:.2f} |", flush=True)
    ok = sum(r["status"] == "ok" for r in rows)
    t_ok = sum(r["torch"] == "ok" for r in rows)
    t_gen = sum(r["torch"] == "ok" and set(r["torch_gen"].split("/")[0]) <= {"y"} for r in rows)
    bad = {s: sum(r["status"] == s for r in rows) for s in ("WRONG", "crash", "mutated", "lax", "narrow", "rt", "fail", "build")}
    print(f"\n{title}: safetrace ok {ok}/{len(rows)}, torch.export exported {t_ok}/{len(rows)} "
          f"(generalizes {t_gen}); " + ", ".join(f"{k} {v}" for k, v in bad.items() if v)
          + f"; {time.perf_counter() - t0:.0f}s")
    if with_torch:
        for r in rows:
            if r.get("torch_err"):
                print(f"  torch.export {r['model']}: {r['torch_err'][:200]}")
    return rows
