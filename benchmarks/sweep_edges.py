"""Edge sweep: user mistakes and unusual-but-legal programs, checked against safetrace's promises.

Promises checked (README / SPEC):
  * bad input always gets a clear safetrace error naming what was wrong and how to fix it
    (input path, dim, source line, a paste-able fix), never a wrong result;
  * export never mutates the user's model or inputs (values, versions, flags, attributes);
  * inputs outside the declared space are rejected (InputMismatchError) before running;
  * every accepted input computes what eager computes; save/load round trips exactly;
  * loading never runs code and rejects bad files with LoadError, fast.

Every case records an outcome:

  ok       behaved as promised (worked, or refused with a clear safetrace error)
  note     behaviour worth knowing that is not clearly a broken promise
  BUG      wrong      an accepted input computed something else than eager
           mutation   export (or ep.module()) changed the model / inputs
           crash      a non-safetrace exception escaped from safetrace internals
           unclear    a safetrace error without the input path / dim / fix / source line
           reject     a rejection that should not happen
           silent     a mistake that should be refused was accepted

Run: .venv/bin/python benchmarks/sweep_edges.py [substring ...] [-v]
"""

from __future__ import annotations

import copy
import dataclasses
import io
import math
import os
import sys
import time
import traceback
import warnings
import zipfile
from collections import OrderedDict, namedtuple
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetrace as st  # noqa: E402
from safetrace import Dim  # noqa: E402

PKG = str(ROOT / "safetrace")
THIS = Path(__file__).name
ST_ERRORS = (st.ExportError, st.InputMismatchError, st.RuntimeAssertionError, st.LoadError)


# -- harness ------------------------------------------------------------------------------
class Finding(Exception):
    def __init__(self, kind: str, msg: str):
        super().__init__(msg)
        self.kind = kind
        self.msg = msg


class Note(Exception):
    pass


CASES: list = []


def case(cat: str):
    def deco(fn):
        CASES.append((cat, fn.__name__, fn))
        return fn
    return deco


def first_lines(text: str, n: int = 3) -> str:
    return " | ".join(str(text).strip().splitlines()[:n])


TORCH_DIR = os.path.dirname(torch.__file__)


def from_safetrace(exc: BaseException) -> bool:
    """True when the innermost frame outside torch itself is inside the safetrace package
    (an exception torch raised on arguments safetrace built counts as safetrace's)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith(TORCH_DIR) and not f.startswith("<"):
            last = f
        tb = tb.tb_next
    return last is not None and last.startswith(PKG)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {first_lines(str(exc))}"


def expect_error(fn, cls=None, contains=(), any_of=(), what="", allow_ok=False, user_error_ok=False):
    """Run fn expecting a safetrace error; classify whatever happens.

    contains: substrings (case-insensitive) every one of which the message must hold.
    any_of: groups of alternatives; each group needs one member in the message.
    Returns the message (or the value when allow_ok and nothing was raised).
    """
    try:
        value = fn()
    except ST_ERRORS as e:
        msg = str(e)
        if cls is not None and not isinstance(e, cls):
            raise Note(f"{what}: raised {type(e).__name__} (expected {cls.__name__}): {first_lines(msg)}")
        low = msg.lower()
        missing = [c for c in contains if c.lower() not in low]
        missing += ["/".join(g) for g in any_of if not any(a.lower() in low for a in g)]
        if missing:
            raise Finding("unclear", f"{what}: {type(e).__name__} lacks {missing}: {first_lines(msg)}")
        return msg
    except (Finding, Note):
        raise
    except Exception as e:  # noqa: BLE001
        if from_safetrace(e):
            raise Finding("crash", f"{what}: internal {describe(e)}\n        at {_where(e)}")
        if user_error_ok:
            return f"{type(e).__name__} from user/torch code: {first_lines(str(e), 1)}"
        raise Finding("unclear", f"{what}: non-safetrace {describe(e)} (raised at {_where(e)})")
    if allow_ok:
        return value
    raise Finding("silent", f"{what}: no error was raised")


def _where(e: BaseException) -> str:
    tb = e.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return "?"
    f = last.tb_frame.f_code.co_filename
    return f"{os.path.relpath(f, ROOT) if f.startswith(str(ROOT)) else os.path.basename(f)}:{last.tb_lineno}"


# -- comparing and snapshotting -------------------------------------------------------------
def compare(a, b, path="out", mode="exact", tol=1e-5):
    """None when equal, otherwise a description of the first difference."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{path}: eager {type(a).__name__} vs exported {type(b).__name__}"
        if a.shape != b.shape:
            return f"{path}: shape eager {list(a.shape)} vs exported {list(b.shape)}"
        if a.dtype != b.dtype:
            return f"{path}: dtype eager {a.dtype} vs exported {b.dtype}"
        if mode == "shape":
            return None
        if a.is_complex() or a.is_floating_point():
            if not torch.allclose(a.detach(), b.detach(), atol=tol, rtol=tol, equal_nan=True):
                d = (a.detach() - b.detach()).abs()
                d = d[~torch.isnan(d)] if d.numel() else d
                return f"{path}: max abs diff {float(d.max()) if d.numel() else 'nan-pattern'}"
        elif not torch.equal(a, b):
            return f"{path}: values differ: eager {a.flatten()[:6].tolist()} vs exported {b.flatten()[:6].tolist()}"
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) and not (isinstance(a, tuple) and isinstance(b, tuple)):
            return f"{path}: container eager {type(a).__name__} vs exported {type(b).__name__}"
        if len(a) != len(b):
            return f"{path}: length eager {len(a)} vs exported {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = compare(x, y, f"{path}[{i}]", mode, tol)
            if r:
                return r
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys eager {list(a)} vs exported {list(b)}"
        for k in a:
            r = compare(a[k], b[k], f"{path}[{k!r}]", mode, tol)
            if r:
                return r
        return None
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return f"{path}: type eager {type(a).__name__} vs exported {type(b).__name__}"
        for fld in dataclasses.fields(a):
            r = compare(getattr(a, fld.name), getattr(b, fld.name), f"{path}.{fld.name}", mode, tol)
            if r:
                return r
        return None
    if type(a) is not type(b):
        return f"{path}: type eager {type(a).__name__}({a!r}) vs exported {type(b).__name__}({b!r})"
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    if a != b:
        return f"{path}: eager {a!r} vs exported {b!r}"
    return None


def leaves(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for t in tree:
            yield from leaves(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from leaves(t)
    elif dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        for fld in dataclasses.fields(tree):
            yield from leaves(getattr(tree, fld.name))


def snap_inputs(args, kwargs):
    return [(t, t.detach().clone(), t._version, t.requires_grad, t.stride(), t.grad) for t in leaves((args, kwargs))]


def check_inputs(snap, where):
    for t, val, ver, rg, stride, grad in snap:
        if t._version != ver or not torch.equal(t.detach(), val) and not (
                t.is_floating_point() and torch.allclose(t.detach(), val, equal_nan=True)):
            raise Finding("mutation", f"{where}: an input tensor was modified in place "
                          f"(version {ver} -> {t._version})")
        if t.requires_grad != rg or t.stride() != stride or t.grad is not grad:
            raise Finding("mutation", f"{where}: input tensor flags changed (requires_grad/stride/grad)")


def _attr_snapshot(value):
    if isinstance(value, (int, float, str, bool, type(None))):
        return ("v", value)
    if isinstance(value, (list, tuple, dict, set)):
        try:
            return ("c", type(value), len(value), repr(value)[:200])
        except Exception:  # noqa: BLE001
            return ("c", type(value), len(value))
    if isinstance(value, torch.Tensor):
        return ("t", id(value), type(value), tuple(value.shape), value.device.type)
    return ("o", id(value), type(value))


def snap_model(model):
    if not isinstance(model, nn.Module):
        return None
    out = {}
    for name, m in model.named_modules():
        attrs = {k: _attr_snapshot(v) for k, v in vars(m).items()
                 if k not in ("_parameters", "_buffers", "_modules", "_forward_hooks",
                              "_forward_pre_hooks", "_state_dict_hooks", "_backward_hooks")}
        out[name] = dict(
            training=m.training, attrs=attrs,
            params={k: (id(p), p._version, p.requires_grad, p.detach().clone() if p is not None else None)
                    for k, p in m._parameters.items()},
            buffers={k: (id(b), b._version if b is not None else None,
                         b.detach().clone() if b is not None else None) for k, b in m._buffers.items()},
            modules=list(m._modules))
    return out


def check_model(model, before, where):
    if before is None:
        return
    after = snap_model(model)
    if list(after) != list(before):
        raise Finding("mutation", f"{where}: submodules changed: {set(after) ^ set(before)}")
    for name in before:
        b, a = before[name], after[name]
        if b["training"] != a["training"]:
            raise Finding("mutation", f"{where}: {name or 'model'}.training {b['training']} -> {a['training']}")
        if b["attrs"] != a["attrs"]:
            diff = {k: (b["attrs"].get(k), a["attrs"].get(k)) for k in set(a["attrs"]) | set(b["attrs"])
                    if b["attrs"].get(k) != a["attrs"].get(k)}
            shown = {k: (str(v[0])[:80], str(v[1])[:80]) for k, v in diff.items()}
            raise Finding("mutation", f"{where}: attributes of {name or 'model'} changed: {shown}")
        if list(b["params"]) != list(a["params"]) or list(b["buffers"]) != list(a["buffers"]):
            raise Finding("mutation", f"{where}: parameter/buffer names of {name or 'model'} changed: "
                          f"{list(b['buffers'])} -> {list(a['buffers'])}")
        for k in b["params"]:
            pb, pa = b["params"][k], a["params"][k]
            if pb[:3] != pa[:3] or not torch.equal(pb[3], pa[3]):
                raise Finding("mutation", f"{where}: parameter {name}.{k} changed")
        for k in b["buffers"]:
            bb, ba = b["buffers"][k], a["buffers"][k]
            if bb[:2] != ba[:2] or (bb[2] is not None and not torch.equal(bb[2], ba[2])):
                raise Finding("mutation", f"{where}: buffer {name}.{k} changed "
                              f"({None if bb[2] is None else bb[2].flatten()[:4].tolist()} -> "
                              f"{None if ba[2] is None else ba[2].flatten()[:4].tolist()})")


def roundtrip(ep):
    buf = io.BytesIO()
    st.save(ep, buf)
    return st.load(buf.getvalue())


def run_export(model, mk, ds=None, others=(), rejects=(), mode="exact", save=True, extra=None, auto_ok=False):
    """Export model(*args, **kwargs) with mk() -> (args, kwargs); compare ep.module() with
    eager (on a deepcopy of the model stepped alongside) on the example and on others
    (each a zero-arg factory); each reject factory must raise InputMismatchError."""
    torch.manual_seed(1000)
    args, kwargs = mk()
    ref = copy.deepcopy(model) if isinstance(model, nn.Module) else model
    msnap = snap_model(model)
    isnap = snap_inputs(args, kwargs)
    ep = st.export(model, args, kwargs, dynamic_shapes=ds)
    check_model(model, msnap, "export")
    check_inputs(isnap, "export")
    mod = ep.module()
    outs = []
    for i, f in enumerate([mk, *others]):
        torch.manual_seed(1000 + i)
        a, k = f()
        torch.manual_seed(1000 + i)
        a2, k2 = f()
        eo = ref(*a, **k)
        try:
            so = mod(*a2, **k2)
        except st.InputMismatchError as e:
            if auto_ok and i > 0:
                raise Note(f"Dim.AUTO dim specialized by the program (documented), input #{i} rejected: "
                           f"{first_lines(str(e), 1)}")
            raise
        d = compare(eo, so, mode=mode)
        if d:
            raise Finding("wrong", f"input #{i}: {d}")
        # in-place effects on the inputs must match too
        d = compare((a, k), (a2, k2), path="inputs-after-call", mode=mode)
        if d:
            raise Finding("wrong", f"input #{i}: {d}")
        outs.append((f, so))
    check_model(model, msnap, "ep.module() calls")
    for i, f in enumerate(rejects):
        a, k = f()
        expect_error(lambda: mod(*a, **k), st.InputMismatchError, what=f"reject #{i}")
    if extra:
        extra(ep, mod)
    if save:
        try:
            ep2 = roundtrip(ep)
        except ST_ERRORS as e:
            raise Note(f"exported fine but save/load refused: {describe(e)}")
        except Exception as e:  # noqa: BLE001
            if from_safetrace(e):
                raise Finding("crash", f"save/load round trip: internal {describe(e)} at {_where(e)}")
            raise
        mod2 = ep2.module()
        for i, (f, so) in enumerate(outs):
            torch.manual_seed(1000 + i)
            a, k = f()
            lo = mod2(*a, **k)
            d = compare(so, lo, mode=mode)
            if d and mode != "shape":
                # stateful programs: compare against eager stepped the same number of times
                raise Finding("wrong", f"loaded program, input #{i}: {d}")
    return ep


def A(*args, **kwargs):
    """A factory of fresh inputs from callables (each called for a fresh tensor)."""
    def mk():
        return (tuple(a() if callable(a) else a for a in args),
                {k: (v() if callable(v) else v) for k, v in kwargs.items()})
    return mk


def R(*shape, dtype=torch.float32, seed=0):
    def f():
        g = torch.Generator().manual_seed(seed + 7 * sum(shape) + len(shape))
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        if dtype.is_complex:
            return torch.randn(*shape, generator=g, dtype=dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return f


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *a, **k):
        return self.fn(*a, **k)


class Lin(nn.Module):
    def __init__(self, i=3, o=2):
        super().__init__()
        self.lin = nn.Linear(i, o)

    def forward(self, x):
        return self.lin(x)


def torch_seed():
    torch.manual_seed(0)


# =========================================================================================
# 1. malformed dynamic_shapes
# =========================================================================================
class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class One(nn.Module):
    def forward(self, x):
        return x * 2


@case("spec")
def spec_wrong_key():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"y": {0: Dim.AUTO}}),
                 st.SpecError, contains=["'y'", "x"], any_of=[("fix",)])


@case("spec")
def spec_missing_arg_level():
    # user forgot the per-argument level: {0: Dim} instead of {"x": {0: Dim}}
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={0: Dim("b")}),
                 st.SpecError, any_of=[("fix",), ("x",)])


@case("spec")
def spec_dim_out_of_range():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {5: Dim.AUTO}}),
                 st.SpecError, contains=["x", "5"])


@case("spec")
def spec_negative_dim_in_range():
    # {-1: Dim} is either refused clearly, or means the last dim (and must then be dynamic)
    mk = A(R(4, 3))
    try:
        ep = run_export(One(), mk, ds={"x": {-1: Dim("d")}}, others=[A(R(4, 7))], rejects=[A(R(5, 3))])
    except st.SpecError as e:
        return f"refused: {first_lines(str(e))}"
    return f"accepted, range {ep.range_constraints}"


@case("spec")
def spec_negative_dim_out_of_range():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {-3: Dim.AUTO}}),
                 st.SpecError, contains=["x", "-3"])


def _dim_ctor(fn):
    try:
        fn()
    except (ValueError, TypeError) as e:
        return f"plain {type(e).__name__} at Dim(): {e}"
    except st.SpecError as e:
        return f"SpecError: {e}"
    raise Finding("silent", "Dim() accepted it")


@case("spec")
def spec_dim_min_gt_max():
    return _dim_ctor(lambda: Dim("b", min=5, max=2))


@case("spec")
def spec_dim_non_str_name():
    return _dim_ctor(lambda: Dim(3))


@case("spec")
def spec_dim_negative_min():
    return _dim_ctor(lambda: Dim("b", min=-2))


@case("spec")
def spec_dim_name_with_space():
    x = torch.randn(4, 3)
    try:
        d = Dim("my batch")
    except (ValueError, TypeError, st.SpecError) as e:
        return f"refused at Dim(): {type(e).__name__}: {e}"
    run_export(One(), A(lambda: x.clone()), ds={"x": {0: d}}, others=[A(R(6, 3))])
    return "accepted"


@case("spec")
def spec_dim_min0_size0_and_1():
    run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=0)}}, others=[A(R(0, 3)), A(R(1, 3))])


@case("spec")
def spec_dim_min1_rejects_0():
    run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=1, max=8)}}, others=[A(R(1, 3))],
               rejects=[A(R(0, 3)), A(R(9, 3))])
    ep = st.export(One(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b", min=1, max=8)}})
    expect_error(lambda: ep.module()(torch.randn(9, 3)), st.InputMismatchError,
                 contains=["x.shape[0]", "9", "8"])


@case("spec")
def spec_dim_min_eq_max():
    try:
        run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=4, max=4)}}, rejects=[A(R(5, 3))])
    except st.ConstraintViolationError as e:
        raise Note(f"Dim('b', min=4, max=4) refused (a one-value range): {first_lines(str(e), 2)}")


@case("spec")
def spec_same_name_different_bounds():
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    expect_error(lambda: st.export(Add(), (x, y), dynamic_shapes={
        "x": {0: Dim("b", max=10)}, "y": {0: Dim("b", max=20)}}), st.SpecError, contains=["b"],
        any_of=[("x",), ("y",)])


@case("spec")
def spec_same_name_two_objects_same_bounds():
    # two Dim objects with the same name and bounds: same dim (torch.export semantics)
    run_export(Add(), A(R(4, 3), R(4, 3, seed=1)),
               ds={"x": {0: Dim("b")}, "y": {0: Dim("b")}}, others=[A(R(6, 3), R(6, 3, seed=1))])


@case("spec")
def spec_same_dim_unequal_examples():
    x, y = torch.randn(4, 3), torch.randn(5, 1)
    b = Dim("b")
    expect_error(lambda: st.export(Add(), (x, y), dynamic_shapes={"x": {0: b}, "y": {0: b}}),
                 contains=["b", "4", "5"], any_of=[("x.shape[0]", "x"), ("y.shape[0]", "y")])


@case("spec")
def spec_derived_dim():
    class M(nn.Module):
        def forward(self, x, y):
            return torch.cat([x, x]) + y
    d = Dim("d")
    run_export(M(), A(R(3, 2), R(6, 2, seed=1)), ds={"x": {0: d}, "y": {0: 2 * d}},
               others=[A(R(5, 2), R(10, 2, seed=1))], rejects=[A(R(5, 2), R(9, 2, seed=1))])


@case("spec")
def spec_derived_dim_inconsistent_example():
    d = Dim("d")
    expect_error(lambda: st.export(Fn(lambda x, y: (x.sum(), y.sum())), (torch.randn(3), torch.randn(7)),
                                   dynamic_shapes=({0: d}, {0: 2 * d})),
                 st.SpecError, any_of=[("2*d", "2 * d", "2*d"), ("7",)])


@case("spec")
def spec_derived_dim_only():
    # only the derived dim appears (no root): should work or be refused clearly
    d = Dim("d")
    try:
        run_export(One(), A(R(6, 2)), ds={"x": {0: 2 * d + 1 - 1}}, others=[A(R(8, 2))],
                   rejects=[A(R(7, 2))])
    except st.SpecError as e:
        return f"refused: {first_lines(str(e))}"
    return "accepted"


@case("spec")
def spec_derived_dim_plus_one():
    class M(nn.Module):
        def forward(self, x, y):
            return x[1:] + y
    d = Dim("d", min=1)
    run_export(M(), A(R(5, 2), R(4, 2, seed=1)), ds={"x": {0: d + 1}, "y": {0: d}},
               others=[A(R(9, 2), R(8, 2, seed=1))], rejects=[A(R(9, 2), R(7, 2, seed=1))])


@case("spec")
def spec_torch_export_dim():
    run_export(One(), A(R(4, 3)), ds={"x": {0: torch.export.Dim("b", max=16)}},
               others=[A(R(9, 3))], rejects=[A(R(17, 3))])


@case("spec")
def spec_torch_export_dim_hints():
    run_export(One(), A(R(4, 3)), ds={"x": {0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.AUTO}},
               others=[A(R(9, 5))])


@case("spec")
def spec_for_int_input_dim():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(M(), (x, 3), dynamic_shapes={"x": None, "n": {0: Dim.AUTO}}),
                 st.SpecError, contains=["n"])


@case("spec")
def spec_for_int_input_none():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    run_export(M(), A(R(4, 3), 3), ds={"x": {0: Dim.AUTO}, "n": None}, others=[A(R(6, 3), 3)],
               rejects=[A(R(4, 3), 4)])


@case("spec")
def spec_for_int_input_Dim():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x, 3), dynamic_shapes={"x": None, "n": Dim("n")}),
                       allow_ok=True, contains=["n"])
    return msg if isinstance(msg, str) else "accepted (int made dynamic?)"


@case("spec")
def spec_list_vs_tuple():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    # inputs are a list, the spec a tuple of per-tensor specs
    run_export(M(), A([torch.randn(4, 3), torch.randn(4, 3)]),
               ds={"xs": ({0: Dim("b")}, {0: Dim("b")})},
               others=[lambda: (([torch.randn(6, 3), torch.randn(6, 3)],), {})])


@case("spec")
def spec_list_for_args():
    run_export(Add(), A(R(4, 3), R(4, 3, seed=1)), ds=[{0: Dim("b")}, {0: Dim("b")}],
               others=[A(R(7, 3), R(7, 3, seed=1))])


@case("spec")
def spec_nested_length_mismatch():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    xs = [torch.randn(4, 3), torch.randn(4, 3)]
    expect_error(lambda: st.export(M(), (xs,), dynamic_shapes={"xs": [{0: Dim.AUTO}] * 3}),
                 st.SpecError, contains=["xs"], any_of=[("3",), ("2",)])


@case("spec")
def spec_for_kwargs():
    class M(nn.Module):
        def forward(self, x, *, y):
            return x + y
    run_export(M(), A(R(4, 3), y=R(4, 3, seed=1)), ds={"x": {0: Dim("b")}, "y": {0: Dim("b")}},
               others=[A(R(6, 3), y=R(6, 3, seed=1))], rejects=[A(R(6, 3), y=R(5, 3, seed=1))])


@case("spec")
def spec_kwargs_missing_in_spec():
    class M(nn.Module):
        def forward(self, x, y=None):
            return x + y
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x,), {"y": y}, dynamic_shapes={"x": {0: Dim.AUTO}}),
                       allow_ok=True)
    return "accepted (y static)" if not isinstance(msg, str) else msg


@case("spec")
def spec_string_entry():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: "batch"}}),
                 st.SpecError, contains=["x", "batch"])


@case("spec")
def spec_bool_entry():
    # True is an int subclass: must not be read as a static size 1
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: True}}),
                       st.SpecError, contains=["x"])
    return msg


@case("spec")
def spec_float_entry():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: 4.0}}),
                 st.SpecError, contains=["x"])


@case("spec")
def spec_static_int_mismatch():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: 5}}),
                 st.SpecError, contains=["x", "5", "4"])


@case("spec")
def spec_string_dim_key():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {"0": Dim.AUTO}}),
                 st.SpecError, contains=["x"])


@case("spec")
def spec_not_a_container():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes=Dim("b")),
                 st.SpecError, any_of=[("fix", "keyed by argument name")])


@case("spec")
def spec_shapes_collection_foreign_tensor():
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[torch.randn(4, 3)] = (Dim.DYNAMIC, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes=sc), st.SpecError)


@case("spec")
def spec_shapes_collection_aliased_input():
    # the same tensor object passed twice; shapes collection keyed by it
    class M(nn.Module):
        def forward(self, x, y):
            return x * 2 + y
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[x] = (Dim.DYNAMIC, 3)
    ep = st.export(M(), (x, x), dynamic_shapes=sc)
    a, b = torch.randn(6, 3), torch.randn(6, 3)
    d = compare(M()(a, b), ep.module()(a, b))
    if d:
        raise Finding("wrong", d)


@case("spec")
def spec_star_args():
    class M(nn.Module):
        def forward(self, *xs):
            return sum(xs)
    run_export(M(), A(R(4, 3), R(4, 3, seed=1)), ds={"xs": ({0: Dim("b")}, {0: Dim("b")})},
               others=[A(R(7, 3), R(7, 3, seed=1))])


@case("spec")
def spec_dynamic_specialized_fix_pastes():
    # Dim.DYNAMIC on a dim the program makes static: the error's dynamic_shapes= fix must work
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.ones(4, 3))

        def forward(self, x):
            return x + self.b
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x,), dynamic_shapes={"x": {0: Dim.DYNAMIC}}),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"],
                       any_of=[(THIS, "self.b"),])
    _paste_fix(M(), (x,), msg)


def _paste_fix(model, args, msg):
    import re
    block = re.search(r"Suggested fix[^\n]*\n((?:[ \t]+\S[^\n]*\n?)+)", msg)
    if block:
        code = "\n".join(line.strip() for line in block.group(1).splitlines())
        ns = {"Dim": Dim, "st": st, "torch": torch}
        try:
            exec(code, ns)
            ds = ns["dynamic_shapes"]
        except Exception as e:  # noqa: BLE001
            raise Finding("unclear", f"suggested fix block does not run: {describe(e)}: {code!r}")
        try:
            st.export(model, args, dynamic_shapes=ds)
        except ST_ERRORS as e:
            raise Finding("unclear", f"suggested fix {code!r} still fails: {describe(e)}")
        return
    mt = re.search(r"dynamic_shapes\s*=\s*", msg)
    if mt is None:
        raise Finding("unclear", f"no ready-to-paste dynamic_shapes= value: {first_lines(msg)}")
    tail = msg[mt.end():]
    depth, end = 0, None
    for j, ch in enumerate(tail):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
            if depth == 0:
                end = j + 1
                break
    if end is None:
        raise Finding("unclear", f"fix not paste-able: {first_lines(msg)}")
    text = tail[:end]
    try:
        ds = eval(text, {"Dim": Dim, "st": st, "torch": torch})
    except Exception as e:  # noqa: BLE001
        raise Finding("unclear", f"suggested fix {text!r} does not evaluate: {describe(e)}")
    try:
        st.export(model, args, dynamic_shapes=ds)
    except ST_ERRORS as e:
        raise Finding("unclear", f"suggested fix {text!r} still fails: {describe(e)}")


@case("spec")
def spec_named_dim_narrowed_fix_pastes():
    class M(nn.Module):
        def forward(self, x):
            return x[:3] * 2
    x = torch.randn(5, 3)
    msg = expect_error(lambda: st.export(M(), (x,), dynamic_shapes={"x": {0: Dim("b", min=1)}}),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"],
                       any_of=[(THIS, "x[:3]")])
    _paste_fix(M(), (x,), msg)


@case("spec")
def spec_dim_named_like_internal_symbol():
    # Dim names that look like safetrace's own symbols (s0, s1, u0)
    run_export(Add(), A(R(4, 3), R(4, 5, seed=1)[:0] if False else R(4, 3, seed=1)),
               ds={"x": {0: Dim("s1"), 1: Dim("u0")}, "y": {0: Dim("s1"), 1: Dim.AUTO}},
               others=[A(R(6, 2), R(6, 2, seed=1))], rejects=[A(R(6, 2), R(5, 2, seed=1))])


@case("spec")
def spec_dim_max_zero():
    try:
        run_export(One(), A(R(0, 3)), ds={"x": {0: Dim("b", min=0, max=0)}}, rejects=[A(R(1, 3))])
    except st.ConstraintViolationError as e:
        raise Note(f"Dim('b', min=0, max=0) refused (a one-value range): {first_lines(str(e), 2)}")


@case("spec")
def spec_static_entries_tuple_style():
    run_export(One(), A(R(4, 3)), ds={"x": (Dim.STATIC, None)}, rejects=[A(R(5, 3)), A(R(4, 4))])


@case("spec")
def spec_for_none_input():
    class M(nn.Module):
        def forward(self, x, m=None):
            return x if m is None else x + m
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x, None), dynamic_shapes={"x": {0: Dim.AUTO}, "m": {0: Dim.AUTO}}),
                       allow_ok=True, contains=["m"])
    return msg if isinstance(msg, str) else "accepted"


# =========================================================================================
# 2. unusual inputs
# =========================================================================================
@case("inputs")
def in_int_float_bool_str_none():
    class M(nn.Module):
        def forward(self, x, n, f, b, s, z):
            y = x * n + f
            if b:
                y = -y
            if s == "relu":
                y = torch.relu(y)
            return y if z is None else y + z
    mk = A(R(4, 3), 3, 0.5, True, "relu", None)
    run_export(M(), mk, rejects=[A(R(4, 3), 4, 0.5, True, "relu", None),
                                  A(R(4, 3), 3, 0.25, True, "relu", None),
                                  A(R(4, 3), 3, 0.5, False, "relu", None),
                                  A(R(4, 3), 3, 0.5, True, "gelu", None),
                                  A(R(4, 3), 3, 0.5, True, "relu", R(4, 3))])
    ep = st.export(M(), *mk())
    expect_error(lambda: ep.module()(torch.randn(4, 3), 4, 0.5, True, "relu", None), st.InputMismatchError,
                 contains=["n", "3", "4"])


@case("inputs")
def in_int_called_with_float_equal():
    # 1 == 1.0 == True: the specialized value compares equal but the program's result differs
    class M(nn.Module):
        def forward(self, x, n):
            return x.sum() + torch.full((2,), n)
    ep = st.export(M(), (torch.randn(3), 1))
    for other in (1.0, True):
        x = torch.randn(3)
        try:
            so = ep.module()(x, other)
        except st.InputMismatchError:
            continue
        d = compare(M()(x, other), so)
        if d:
            raise Finding("wrong", f"n specialized to int 1, called with {other!r}: {d}")


@case("inputs")
def in_float_neg_zero():
    class M(nn.Module):
        def forward(self, x, s):
            return x / s
    ep = st.export(M(), (torch.ones(3), 0.0))
    x = torch.ones(3)
    try:
        so = ep.module()(x, -0.0)
    except st.InputMismatchError:
        return "-0.0 rejected"
    d = compare(M()(x, -0.0), so)
    if d:
        raise Finding("wrong", f"exported with s=0.0, called with s=-0.0 (accepted): {d}")


@case("inputs")
def in_float_nan():
    class M(nn.Module):
        def forward(self, x, s):
            return torch.nan_to_num(x * s, nan=1.0)
    ep = st.export(M(), (torch.ones(3), float("nan")))
    try:
        ep.module()(torch.ones(3), float("nan"))
    except st.InputMismatchError as e:
        raise Finding("reject", f"exported with s=nan, calling with s=nan again is rejected: {first_lines(str(e))}")


@case("inputs")
def in_unregistered_dataclass():
    @dataclasses.dataclass
    class Pt:
        a: torch.Tensor
        b: torch.Tensor

    class M(nn.Module):
        def forward(self, p):
            return p.a + p.b
    expect_error(lambda: st.export(M(), (Pt(torch.randn(3), torch.randn(3)),)), st.UnsupportedInputError,
                 contains=["Pt", "register_dataclass"], any_of=[("p",)])


@dataclasses.dataclass
class RegPt:
    a: torch.Tensor
    b: torch.Tensor
    k: int = 2


st.register_dataclass(RegPt)


@case("inputs")
def in_registered_dataclass_dynamic():
    class M(nn.Module):
        def forward(self, p):
            return p.a * p.k + p.b
    run_export(M(), A(lambda: RegPt(torch.randn(4, 3), torch.randn(4, 3))),
               ds={"p": RegPt(a={0: Dim("b")}, b={0: Dim("b")}, k=None)},
               others=[A(lambda: RegPt(torch.randn(6, 3), torch.randn(6, 3)))],
               rejects=[A(lambda: RegPt(torch.randn(6, 3), torch.randn(6, 3), 3))])


NT = namedtuple("NT", ["a", "b"])


@case("inputs")
def in_namedtuple():
    class M(nn.Module):
        def forward(self, p):
            return p.a - p.b, NT(p.b, p.a)
    run_export(M(), A(lambda: NT(torch.randn(4), torch.randn(4))),
               ds={"p": NT({0: Dim("n")}, {0: Dim("n")})},
               others=[A(lambda: NT(torch.randn(7), torch.randn(7)))],
               rejects=[A(lambda: (torch.randn(4), torch.randn(4)))])


@case("inputs")
def in_nested_dict_lists():
    class M(nn.Module):
        def forward(self, d):
            return d["a"]["b"][0] + d["a"]["b"][1] * d["c"][0]["scale"]
    def mk(n):
        return lambda: (({"a": {"b": [torch.randn(n, 2), torch.randn(n, 2)]}, "c": [{"scale": 2.0}]},), {})
    run_export(M(), mk(4), ds={"d": {"a": {"b": [{0: Dim("n")}, {0: Dim("n")}]}, "c": [{"scale": None}]}},
               others=[mk(9)])


@case("inputs")
def in_dict_key_order():
    class M(nn.Module):
        def forward(self, d):
            return d["a"] - d["b"]
    ep = st.export(M(), ({"a": torch.randn(3), "b": torch.randn(3)},))
    a, b = torch.randn(3), torch.randn(3)
    try:
        so = ep.module()({"b": b, "a": a})
    except st.InputMismatchError as e:
        return f"reordered dict keys rejected: {first_lines(str(e))}"
    d = compare(M()({"b": b, "a": a}), so)
    if d:
        raise Finding("wrong", f"dict with reordered keys: {d}")


@case("inputs")
def in_ordereddict():
    class M(nn.Module):
        def forward(self, d):
            return d["a"] - d["b"]
    run_export(M(), A(lambda: OrderedDict(a=torch.randn(3), b=torch.randn(3))))


@case("inputs")
def in_set_input():
    x = torch.randn(3)
    expect_error(lambda: st.export(Fn(lambda x, s: x * len(s)), (x, {1, 2})), st.UnsupportedInputError,
                 contains=["set"])


@case("inputs")
def in_numpy_array_input():
    expect_error(lambda: st.export(Fn(lambda x: x * 2), (np.ones(3),)), st.UnsupportedInputError,
                 contains=["ndarray"], any_of=[("torch.from_numpy", "tensor")])


@case("inputs")
def in_callable_input():
    expect_error(lambda: st.export(Fn(lambda x, f: f(x)), (torch.randn(3), torch.relu)),
                 st.UnsupportedInputError, allow_ok=True)


@case("inputs")
def in_module_input():
    lin = nn.Linear(3, 2)
    expect_error(lambda: st.export(Fn(lambda x, m: m(x)), (torch.randn(3), lin)), st.UnsupportedInputError,
                 contains=["Linear"])


@case("inputs")
def in_dtype_and_device_inputs():
    class M(nn.Module):
        def forward(self, x, dt, dev):
            return x.to(dtype=dt, device=dev)
    run_export(M(), A(R(3), torch.float64, torch.device("cpu")),
               rejects=[A(R(3), torch.float16, torch.device("cpu"))])


@case("inputs")
def in_torch_size_input():
    class M(nn.Module):
        def forward(self, x, shape):
            return x.reshape(shape)
    run_export(M(), A(R(4, 3), torch.Size([3, 4])), rejects=[A(R(4, 3), torch.Size([2, 6]))])


@case("inputs")
def in_parameter_as_input():
    p = nn.Parameter(torch.randn(3))
    run_export(One(), A(lambda: p))


@case("inputs")
def in_requires_grad():
    lin = Lin()
    mk = A(lambda: torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).requires_grad_())
    run_export(lin, mk, ds={"x": {0: Dim.AUTO}})
    ep = st.export(lin, mk()[0])
    x1, x2 = mk()[0][0], mk()[0][0]
    lin(x1).sum().backward()
    out = ep.module()(x2)
    if not out.requires_grad:
        raise Note("ep.module() output does not require grad for a requires_grad input (eager does)")
    out.sum().backward()
    d = compare(x1.grad, x2.grad, "x.grad")
    if d:
        raise Finding("wrong", f"gradient through ep.module(): {d}")


@case("inputs")
def in_noncontiguous_transposed():
    run_export(Lin(), lambda: ((torch.randn(3, 5).t(),), {}), ds={"x": {0: Dim.AUTO}},
               others=[A(R(7, 3)), lambda: ((torch.randn(3, 2).t(),), {})])


@case("inputs")
def in_channels_last():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    mk = lambda: ((torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last),), {})  # noqa: E731
    run_export(conv, mk, ds=({0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},), others=[A(R(1, 3, 5, 9))])


@case("inputs")
def in_view_flatten_noncontiguous_call():
    # exported with a contiguous example; called with a non-contiguous input that eager handles
    class M(nn.Module):
        def forward(self, x):
            return x.reshape(-1) * 2
    run_export(M(), A(R(3, 4)), others=[lambda: ((torch.randn(4, 3).t(),), {})])


@case("inputs")
def in_view_on_noncontiguous_call():
    # .view fails in eager on a non-contiguous input: the exported program must not succeed silently
    class M(nn.Module):
        def forward(self, x):
            return x.view(-1) * 2
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        M()(x)
        eager_ok = True
    except RuntimeError:
        eager_ok = False
    try:
        out = ep.module()(x)
    except (RuntimeError, st.InputMismatchError) as e:
        return f"eager_ok={eager_ok}; exported raised {type(e).__name__}"
    if not eager_ok:
        raise Finding("wrong", f"eager raises on .view of a non-contiguous input, exported returns {list(out.shape)}")


@case("inputs")
def in_is_contiguous_branch():
    class M(nn.Module):
        def forward(self, x):
            if x.is_contiguous():
                return x * 2
            return x * 3
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        so = ep.module()(x)
    except st.InputMismatchError as e:
        return f"non-contiguous rejected: {first_lines(str(e))}"
    d = compare(M()(x), so)
    if d:
        raise Finding("wrong", f"branch on x.is_contiguous(): exported with contiguous, called with a "
                      f"transposed (non-contiguous) input of the same shape: {d}")


@case("inputs")
def in_stride_in_computation():
    class M(nn.Module):
        def forward(self, x):
            return x * x.stride(0)
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        so = ep.module()(x)
    except st.InputMismatchError:
        return "rejected"
    d = compare(M()(x), so)
    if d:
        raise Finding("wrong", f"x.stride(0) in computation, called with transposed input: {d}")


@case("inputs")
def in_zero_size_dim():
    run_export(Lin(), A(R(0, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(5, 3)), A(R(1, 3))])


@case("inputs")
def in_zero_size_reduction():
    class M(nn.Module):
        def forward(self, x):
            return x.sum(0), x.mean(0), x.amax(1)
    run_export(M(), A(R(0, 3)), ds={"x": {0: Dim("n", min=0)}}, others=[A(R(4, 3))])


@case("inputs")
def in_zero_d_tensor():
    class M(nn.Module):
        def forward(self, x, s):
            return x * s + s
    run_export(M(), A(R(4, 3), lambda: torch.tensor(2.5)), ds={"x": {0: Dim.AUTO}, "s": ()},
               others=[A(R(7, 3), lambda: torch.tensor(-1.0))], rejects=[A(R(4, 3), lambda: torch.tensor([2.5]))])


@case("inputs")
def in_dtypes():
    class M(nn.Module):
        def forward(self, a, b, c, d, e, f):
            return a // 2 + (a / 2).sum(), b & (a > 0), c * 2, d.float().sum(), e * e.conj(), f * 3
    mk = A(R(4, dtype=torch.int64), R(4, dtype=torch.bool), R(4, dtype=torch.float16),
           R(4, dtype=torch.bfloat16), R(4, dtype=torch.complex64), R(4, dtype=torch.int8))
    run_export(M(), mk, ds={k: {0: Dim("n")} for k in "abcdef"},
               others=[A(R(9, dtype=torch.int64), R(9, dtype=torch.bool), R(9, dtype=torch.float16),
                         R(9, dtype=torch.bfloat16), R(9, dtype=torch.complex64), R(9, dtype=torch.int8))],
               rejects=[A(R(4, dtype=torch.int32), R(4, dtype=torch.bool), R(4, dtype=torch.float16),
                          R(4, dtype=torch.bfloat16), R(4, dtype=torch.complex64), R(4, dtype=torch.int8))])


@case("inputs")
def in_uint8_and_float64_promotion():
    class M(nn.Module):
        def forward(self, x, y):
            return x + y, x * 1.5, y - 3
    run_export(M(), A(R(4, dtype=torch.uint8), R(4, dtype=torch.float64)))


@case("inputs")
def in_sparse_tensor():
    x = torch.randn(3, 3).to_sparse()
    expect_error(lambda: st.export(One(), (x,)), st.UnsupportedInputError, contains=["sparse"], allow_ok=True)


@case("inputs")
def in_meta_tensor():
    x = torch.randn(3, 3, device="meta")
    msg = expect_error(lambda: st.export(One(), (x,)), allow_ok=True)
    return msg if isinstance(msg, str) else "accepted a meta-device example"


@case("inputs")
def in_aliased_inputs_mutation():
    class M(nn.Module):
        def forward(self, x, y):
            x.add_(1)
            return y * 2
    x = torch.zeros(3)
    expect_error(lambda: st.export(M(), (x, x)), allow_ok=True)
    if not torch.equal(x, torch.zeros(3)):
        raise Finding("mutation", f"export mutated the example input: {x.tolist()}")


@case("inputs")
def in_args_not_tuple():
    x = torch.randn(3)
    expect_error(lambda: st.export(One(), x), st.UnsupportedInputError, contains=["tuple", "(x,)"])


@case("inputs")
def in_wrong_arg_count():
    x = torch.randn(3)
    expect_error(lambda: st.export(One(), (x, x)), any_of=[("forward",), ("argument",)], user_error_ok=True)


# =========================================================================================
# 3. training mode, state, side effects
# =========================================================================================
@case("state")
def tr_dropout_training():
    m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).train()
    x = torch.randn(64, 8)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        if not m.training:
            raise Finding("mutation", "export flipped model.training")
        return f"refused clearly: {describe(e)}"
    if not m.training or not m[1].training:
        raise Finding("mutation", "export flipped model.training")
    o1, o2 = ep.module()(x), ep.module()(x)
    lin = m[0](x)
    zeros = (o1 == 0).float().mean().item()
    if torch.allclose(o1, lin):
        raise Finding("wrong", "train-mode dropout dropped from the graph (output == linear output)")
    if torch.equal(o1, o2):
        raise Finding("wrong", "train-mode dropout mask baked in (two calls give identical output)")
    kept = o1 != 0
    if not torch.allclose(o1[kept], 2 * lin[kept], atol=1e-5):
        raise Finding("wrong", "dropout scale differs from 1/(1-p)")
    return f"dropout kept in the graph (zeros {zeros:.2f})"


@case("state")
def tr_batchnorm_training():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    run_export(m, A(R(8, 4)), ds=({0: Dim("b", min=2)},), others=[A(R(5, 4)), A(R(8, 4))])
    if not m.training:
        raise Finding("mutation", "export flipped training")


@case("state")
def tr_batchnorm_eval():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    with torch.no_grad():
        m[1].running_mean.uniform_()
        m[1].running_var.uniform_(0.5, 2)
    run_export(m, A(R(2, 3, 8, 8)), ds=({0: Dim.AUTO},), others=[A(R(1, 3, 8, 8))])


@case("state")
def tr_training_branch_on_flag():
    class M(nn.Module):
        def forward(self, x):
            return x * (2 if self.training else 3)
    m = M().train()
    ep = st.export(m, (torch.randn(3),))
    if not m.training:
        raise Finding("mutation", "export flipped training")
    m.eval()
    x = torch.randn(3)
    mod = ep.module()
    d = compare(x * 2, mod(x))
    if d:
        raise Finding("wrong", f"program exported in training mode: {d}")


@case("state")
def se_print():
    class M(nn.Module):
        def forward(self, x):
            print("shape is", x.shape, file=io.StringIO())
            return x + 1
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(6, 3))])


@case("state")
def se_append_to_list_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.log = []

        def forward(self, x):
            self.log.append(x.shape[0])
            return x + 1
    m = M()
    run_export(m, A(R(4, 3)))


@case("state")
def se_counter_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x + self.calls
    m = M()
    run_export(m, A(R(4, 3)))


@case("state")
def se_cache_tensor_on_self():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = None

        def forward(self, x):
            y = x * 2
            self.cache = y
            return y + 1
    m = M()
    x = torch.randn(4, 3)
    st.export(m, (x,))
    if m.cache is not None:
        try:
            m.cache + 1
            real = "usable"
        except Exception as e:  # noqa: BLE001
            real = f"unusable: {describe(e)}"
        raise Finding("mutation", f"export left model.cache = {type(m.cache).__name__} "
                      f"(shape {tuple(m.cache.shape)}, {real}) on the user's model")


@case("state")
def se_register_buffer_in_forward():
    class M(nn.Module):
        def forward(self, x):
            if not hasattr(self, "seen"):
                self.register_buffer("seen", torch.zeros(()))
            return x + 1
    m = M()
    st.export(m, (torch.randn(3),))
    if hasattr(m, "seen") or "seen" in m._buffers:
        raise Finding("mutation", f"export left a buffer 'seen' ({type(m.seen).__name__}) registered on the model")


@case("state")
def se_global_list():
    LOG = []

    class M(nn.Module):
        def forward(self, x):
            LOG.append(x)
            return x + 1
    st.export(M(), (torch.randn(3),))
    if LOG:
        t = LOG[0]
        raise Note(f"a traced value escaped to a global list: {type(t).__name__} (same as eager tracers)")


@case("state")
def se_buffer_inplace_counter():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros((), dtype=torch.int64))
            self.register_buffer("acc", torch.zeros(3))

        def forward(self, x):
            self.count += 1
            self.acc.add_(x.sum(0))
            return x * self.count + self.acc
    m = M()
    ep = run_export(m, A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(6, 3)), A(R(2, 3))])
    if int(m.count) != 0:
        raise Finding("mutation", f"original model's buffer changed: count={int(m.count)}")
    if list(ep.graph_signature.buffers_to_mutate.values() if isinstance(ep.graph_signature.buffers_to_mutate, dict)
            else ep.graph_signature.buffers_to_mutate) == []:
        raise Finding("wrong", "buffers_to_mutate empty")


@case("state")
def se_buffer_reassign():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("h", torch.zeros(3))

        def forward(self, x):
            self.h = self.h + x.sum(0)
            return x * self.h
    m = M()
    run_export(m, A(R(4, 3)), others=[A(R(4, 3, seed=1))])


@case("state")
def se_param_inplace():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            with torch.no_grad():
                self.w.mul_(2)
            return x * self.w
    m = M()
    x = torch.randn(3)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        check_model(m, None, "")
        if not torch.equal(m.w.detach(), torch.ones(3)):
            raise Finding("mutation", "parameter changed by a refused export")
        return f"refused: {describe(e)}"
    if not torch.equal(m.w.detach(), torch.ones(3)):
        raise Finding("mutation", f"export mutated the parameter: {m.w.tolist()}")
    ref = copy.deepcopy(m)
    so = ep.module()(x)
    d = compare(ref(x), so)
    if not torch.equal(m.w.detach(), torch.ones(3)):
        raise Finding("mutation", f"ep.module() mutated the model's parameter (shared): {m.w.tolist()}")
    if d:
        raise Finding("wrong", d)


@case("state")
def se_input_add_():
    class M(nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(2, 3))])


@case("state")
def se_input_setitem():
    class M(nn.Module):
        def forward(self, x):
            x[0] = 0
            return x.sum(0)
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(2, 3))])


@case("state")
def se_input_mutation_returned():
    class M(nn.Module):
        def forward(self, x):
            return x.mul_(3)
    run_export(M(), A(R(4, 3)))


@case("state")
def se_no_grad_inside():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            with torch.no_grad():
                y = self.lin(x)
            return y + x
    m = M()
    x = torch.randn(2, 3, requires_grad=True)
    ep = run_export(m, lambda: ((x.detach().clone().requires_grad_(),), {}))
    out_e, out_s = m(x), ep.module()(x.detach().clone().requires_grad_())
    if out_e.requires_grad != out_s.requires_grad:
        raise Note(f"requires_grad of output: eager {out_e.requires_grad}, exported {out_s.requires_grad}")


@case("state")
def se_enable_grad_inside():
    class M(nn.Module):
        def forward(self, x):
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                y = (x ** 2).sum()
            return y
    msg = expect_error(lambda: run_export(M(), A(R(3))), allow_ok=True)
    if isinstance(msg, str):
        return msg
    with torch.no_grad():
        run_export(M(), A(R(3)))


@case("state")
def se_autocast_inside():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.lin(x)
    try:
        run_export(M(), A(R(4, 8)), save=False)
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"


@case("state")
def se_grad_mode_state_restored():
    class M(nn.Module):
        def forward(self, x):
            torch.set_grad_enabled(False)
            return x + 1
    before = torch.is_grad_enabled()
    try:
        st.export(M(), (torch.randn(3),))
    except ST_ERRORS:
        pass
    after = torch.is_grad_enabled()
    torch.set_grad_enabled(before)
    if after != before:
        raise Note("forward's torch.set_grad_enabled(False) leaked out of export (as it would in eager)")


@case("state")
def se_exporting_flags_restored_after_failure():
    class M(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
    try:
        st.export(M(), (torch.randn(3),))
    except ST_ERRORS:
        pass
    if torch.compiler.is_exporting() or torch.compiler.is_compiling():
        raise Finding("mutation", "is_exporting()/is_compiling() still True after a failed export")
    if torch.overrides._get_current_function_mode_stack():
        raise Finding("mutation", "a TorchFunctionMode is still active after a failed export")


# =========================================================================================
# 4. data-dependent code, randomness, numpy
# =========================================================================================
def _dd(fn, x, contains=(THIS,), any_of=(), cls=st.DataDependentError):
    return expect_error(lambda: st.export(Fn(fn), (x,)), cls, contains=contains, any_of=any_of)


@case("data")
def dd_if_sum_positive():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    _dd(f, torch.randn(4), contains=(THIS, "x.sum() > 0"), any_of=[("torch.where", "fix")])


@case("data")
def dd_item_float():
    _dd(lambda x: x * x.max().item(), torch.randn(4), contains=(THIS,))


@case("data")
def dd_item_int_slice():
    run_export(Fn(lambda x, z: z[: torch.count_nonzero(x).item()]),
               A(R(5), R(6)), ds=({0: Dim.AUTO}, {0: Dim.AUTO}), others=[A(R(9), R(3))])


@case("data")
def dd_tolist():
    _dd(lambda x: x * sum(x.tolist()), torch.randn(4), contains=(THIS,))


@case("data")
def dd_int_of_tensor():
    _dd(lambda x: x[: int(x.argmax())], torch.randn(4), contains=(THIS,), any_of=[("check", "fix")])


@case("data")
def dd_nonzero_python_branch():
    def f(x):
        nz = x.nonzero()
        if nz.shape[0] > 2:
            return nz.sum()
        return nz.sum() * 0
    _dd(f, torch.randn(6), contains=(THIS, "st.check"))


@case("data")
def dd_numpy():
    _dd(lambda x: torch.from_numpy(x.numpy() * 2), torch.randn(4), contains=(THIS,))


@case("data")
def dd_numpy_constant_ok():
    run_export(Fn(lambda x: x + torch.from_numpy(np.arange(4, dtype=np.float32))), A(R(4)))


@case("data")
def dd_tensor_of_shape():
    # a tensor built from a dynamic size must follow the size, not the example
    run_export(Fn(lambda x: x.sum(0) / torch.tensor(x.shape[0])), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_tensor_of_shape_list():
    run_export(Fn(lambda x: torch.tensor(x.shape) * 1), A(R(4, 3)), ds=({0: Dim.AUTO, 1: Dim.AUTO},),
               others=[A(R(7, 5))])


@case("data")
def dd_math_sqrt_of_size():
    run_export(Fn(lambda x: x / math.sqrt(x.shape[-1])), A(R(2, 16)), ds=({0: Dim.AUTO, 1: Dim.AUTO},),
               others=[A(R(3, 9))], save=False, auto_ok=True)


@case("data")
def dd_size_pow_half():
    run_export(Fn(lambda x: x * x.shape[-1] ** -0.5), A(R(2, 16)), ds=({1: Dim.AUTO},),
               others=[A(R(2, 9))], save=False, auto_ok=True)


@case("data")
def dd_int_of_size():
    run_export(Fn(lambda x: x[: int(x.shape[0]) // 2] * len(x)), A(R(5, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(8, 3)), A(R(3, 3))], auto_ok=True)


@case("data")
def dd_range_over_size():
    def f(x):
        out = 0
        for i in range(x.shape[0]):
            out = out + x[i]
        return out
    run_export(Fn(f), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(6, 3))], auto_ok=True)


@case("data")
def dd_range_over_size_dynamic():
    def f(x):
        out = 0
        for i in range(x.shape[0]):
            out = out + x[i]
        return out
    msg = expect_error(lambda: st.export(Fn(f), (torch.randn(4, 3),), dynamic_shapes=({0: Dim.DYNAMIC},)),
                       st.ConstraintViolationError, contains=["x.shape[0]"], any_of=[(THIS,)])
    return first_lines(msg, 2)


@case("data")
def dd_fstring_size_key():
    table = {4: 2.0, 6: 3.0}
    run_export(Fn(lambda x: x * table[x.shape[0]]), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(6, 3))], auto_ok=True)


@case("data")
def dd_shape_output_int():
    run_export(Fn(lambda x: (x * 2, x.shape[0], x.size(), x.numel())), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_randn_fresh_each_call():
    f = Fn(lambda x: x + torch.randn(x.shape))
    ep = st.export(f, (torch.zeros(4, 3),), dynamic_shapes=({0: Dim.AUTO},))
    o1, o2 = ep.module()(torch.zeros(4, 3)), ep.module()(torch.zeros(4, 3))
    if torch.equal(o1, o2):
        raise Finding("wrong", "torch.randn baked into the graph as a constant (two calls identical)")
    o3 = ep.module()(torch.zeros(6, 3))
    if o3.shape != (6, 3):
        raise Finding("wrong", f"randn shape {o3.shape}")


@case("data")
def dd_rand_like_dropout_functional():
    f = Fn(lambda x: F.dropout(x, 0.5, training=True) + torch.rand_like(x) * 0)
    ep = st.export(f, (torch.ones(64, 8),))
    o1, o2 = ep.module()(torch.ones(64, 8)), ep.module()(torch.ones(64, 8))
    if torch.equal(o1, o2):
        raise Finding("wrong", "F.dropout(training=True) mask baked in")
    if set(o1.unique().tolist()) - {0.0, 2.0}:
        raise Finding("wrong", f"dropout values {o1.unique().tolist()[:5]}")


@case("data")
def dd_manual_seed_inside():
    def f(x):
        torch.manual_seed(123)
        return x + torch.randn(x.shape)
    state = torch.get_rng_state()
    try:
        ep = st.export(Fn(f), (torch.zeros(3),))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    finally:
        rs_after = torch.get_rng_state()
    torch.set_rng_state(state)
    eo = f(torch.zeros(3))
    torch.manual_seed(999)
    so = ep.module()(torch.zeros(3))
    d = compare(eo, so)
    if d:
        raise Finding("wrong", f"torch.manual_seed inside forward is not in the graph: {d}")
    if not torch.equal(state, rs_after):
        raise Note("export changed the global RNG state (forward calls manual_seed)")


@case("data")
def dd_generator_inside():
    def f(x):
        g = torch.Generator().manual_seed(7)
        return x + torch.randn(x.shape, generator=g)
    try:
        ep = st.export(Fn(f), (torch.zeros(3),))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    d = compare(f(torch.zeros(3)), ep.module()(torch.zeros(3)))
    if d:
        raise Finding("wrong", f"seeded local Generator ignored: {d}")


@case("data")
def dd_export_does_not_consume_rng():
    torch.manual_seed(5)
    st.export(Fn(lambda x: x + torch.randn(3)), (torch.zeros(3),))
    a = torch.rand(1)
    torch.manual_seed(5)
    b = torch.rand(1)
    if not torch.equal(a, b):
        raise Note("export consumed the global RNG (traced randn drew numbers)")


# =========================================================================================
# 5. unusual outputs
# =========================================================================================
@dataclasses.dataclass
class Out:
    y: torch.Tensor
    n: int


st.register_dataclass(Out)


@case("outputs")
def out_int_none_str():
    run_export(Fn(lambda x: (x + 1, 3, None, "hi", 2.5, True)), A(R(3)))


@case("outputs")
def out_dataclass_nested_dict():
    run_export(Fn(lambda x: {"a": Out(x * 2, 7), "b": [x, {"c": x.sum()}]}), A(R(4)),
               ds=({0: Dim.AUTO},), others=[A(R(6))])


@case("outputs")
def out_unregistered_dataclass():
    @dataclasses.dataclass
    class O2:
        y: torch.Tensor

    expect_error(lambda: st.export(Fn(lambda x: O2(x * 2)), (torch.randn(3),)), allow_ok=True,
                 contains=["O2"])


@case("outputs")
def out_input_itself():
    f = Fn(lambda x: x)
    ep = run_export(f, A(R(4)), ds=({0: Dim.AUTO},), others=[A(R(6))])
    x = torch.randn(4)
    if ep.module()(x) is not x:
        raise Note("returning the input returns a copy, eager returns the same tensor")


@case("outputs")
def out_alias_view_of_input():
    f = Fn(lambda x: x[0])
    ep = st.export(f, (torch.randn(4, 3),))
    x = torch.randn(4, 3)
    o = ep.module()(x)
    o.mul_(0)
    if not torch.equal(x[0], torch.zeros(3)):
        raise Note("returned view of the input does not alias the input (eager does)")


@case("outputs")
def out_parameter():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))

        def forward(self, x):
            return self.w, x + self.w
    run_export(M(), A(R(3)))


@case("outputs")
def out_buffer_and_dtype():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.arange(3))

        def forward(self, x):
            return self.b, x.dtype, x.device, x.shape
    run_export(M(), A(R(3)))


@case("outputs")
def out_same_tensor_twice():
    run_export(Fn(lambda x: (x * 2,) * 2), A(R(3)))


@case("outputs")
def out_empty():
    run_export(Fn(lambda x: ()), A(R(3)))


# =========================================================================================
# 6. calling ep.module() wrongly
# =========================================================================================
class KW(nn.Module):
    def forward(self, x, y, *, scale=1.0, mask=None):
        return x * scale + y if mask is None else (x + y) * mask


def _kw_ep():
    b = Dim("b", max=32)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    return st.export(KW(), (x, y), {"scale": 2.0, "mask": torch.ones(4, 3)},
                     dynamic_shapes={"x": {0: b}, "y": {0: b}, "scale": None, "mask": {0: b}})


@case("call")
def call_kwargs_any_order():
    ep = _kw_ep()
    x, y, m = torch.randn(5, 3), torch.randn(5, 3), torch.rand(5, 3)
    d = compare(KW()(x, y, scale=2.0, mask=m), ep.module()(x, y, mask=m, scale=2.0))
    if d:
        raise Finding("wrong", d)


@case("call")
def call_too_few_args():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, any_of=[("y",), ("argument", "positional")])


@case("call")
def call_too_many_args():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3),
                                     scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, any_of=[("3 positional", "three", "expected 2", "got 3"), ])


@case("call")
def call_wrong_kwarg_name():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, maks=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["maks"], any_of=[("mask",)])


@case("call")
def call_missing_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0),
                 st.InputMismatchError, contains=["mask"])


@case("call")
def call_positional_as_kwarg():
    ep = _kw_ep()
    x, y, m = torch.randn(4, 3), torch.randn(4, 3), torch.ones(4, 3)
    msg = expect_error(lambda: ep.module()(x, y=y, scale=2.0, mask=m), st.InputMismatchError,
                       allow_ok=True, contains=["y"])
    if isinstance(msg, str):
        return f"refused: {first_lines(msg, 1)}"
    return "accepted"


@case("call")
def call_wrong_dtype():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3).double(), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "float32", "float64"])


@case("call")
def call_wrong_device():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3, device="meta"), torch.randn(4, 3), scale=2.0,
                                     mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "device", "meta"])


@case("call")
def call_wrong_rank():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3, 1), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "dims"])


@case("call")
def call_wrong_static_dim():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 5), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x.shape[1]", "5", "3"])


@case("call")
def call_unequal_dynamic():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(6, 3), torch.randn(5, 3), scale=2.0, mask=torch.ones(6, 3)),
                 st.InputMismatchError, contains=["y.shape[0]", "x.shape[0]"])


@case("call")
def call_out_of_range():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(33, 3), torch.randn(33, 3), scale=2.0, mask=torch.ones(33, 3)),
                 st.InputMismatchError, contains=["x.shape[0]", "33", "32"])


@case("call")
def call_extra_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3), z=1),
                 st.InputMismatchError, contains=["z"])


@case("call")
def call_changed_scalar_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=3.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["scale", "2.0", "3.0"])


@case("call")
def call_none_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, mask=None),
                 st.InputMismatchError, contains=["mask"])


@case("call")
def call_numpy_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(np.ones((4, 3), np.float32), torch.randn(4, 3), scale=2.0,
                                     mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x"], any_of=[("ndarray", "numpy")])


@case("call")
def call_int_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(3, torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x"], any_of=[("tensor",)])


@case("call")
def call_list_instead_of_tuple():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    ep = st.export(M(), ((torch.randn(3), torch.randn(3)),))
    expect_error(lambda: ep.module()([torch.randn(3), torch.randn(3)]), st.InputMismatchError,
                 contains=["xs"], any_of=[("list",)], allow_ok=True)


@case("call")
def call_tensor_for_list():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    ep = st.export(M(), ([torch.randn(3), torch.randn(3)],))
    expect_error(lambda: ep.module()(torch.randn(2, 3)), st.InputMismatchError, contains=["xs"])


@case("call")
def call_under_no_grad_and_inference_mode():
    lin = Lin()
    ep = st.export(lin, (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    x = torch.randn(5, 3)
    with torch.no_grad():
        a = ep.module()(x)
    with torch.inference_mode():
        b = ep.module()(x)
    d = compare(lin(x).detach(), a) or compare(lin(x).detach(), b)
    if d:
        raise Finding("wrong", d)


@case("call")
def call_export_twice_run_both():
    m = Lin()
    ep1 = st.export(m, (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    ep2 = st.export(m, (torch.randn(2, 3),))
    x = torch.randn(4, 3)
    d = compare(m(x), ep1.module()(x)) or compare(m(torch.randn(2, 3) * 0), ep2.module()(torch.zeros(2, 3)))
    if d:
        raise Finding("wrong", d)
    expect_error(lambda: ep2.module()(x), st.InputMismatchError, contains=["x.shape[0]"])


@case("call")
def call_module_to_float64():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module().to(torch.float64)
    if m.lin.weight.dtype != torch.float32:
        raise Finding("mutation", "ep.module().to(float64) converted the original model's weights")
    x = torch.randn(4, 3)
    try:
        out = mod(x)
    except st.InputMismatchError as e:
        return f"float32 input after .to(float64): {first_lines(str(e), 1)}"
    except Exception as e:  # noqa: BLE001
        return f"float32 input after .to(float64): {describe(e)}"
    return f"float32 input after .to(float64) ran, out dtype {out.dtype}"


@case("call")
def call_module_load_state_dict():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module()
    m2 = Lin()
    mod.load_state_dict(m2.state_dict())
    x = torch.randn(4, 3)
    d = compare(m2(x), mod(x))
    if d:
        raise Finding("wrong", f"after load_state_dict: {d}")
    if list(mod.state_dict()) != list(m.state_dict()):
        raise Finding("wrong", "state_dict keys differ")


@case("call")
def call_module_shares_params():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module()
    with torch.no_grad():
        m.lin.weight.mul_(2)
    x = torch.randn(4, 3)
    d = compare(m(x), mod(x))
    if d:
        raise Note(f"ep.module() does not share weights as documented: {d}")


@case("call")
def call_deepcopy_module():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = copy.deepcopy(ep.module())
    x = torch.randn(4, 3)
    d = compare(m(x), mod(x))
    if d:
        raise Finding("wrong", d)


@case("call")
def call_module_load_state_dict_leaks_to_model():
    m = Lin()
    w0 = m.lin.weight.detach().clone()
    ep = st.export(m, (torch.randn(4, 3),))
    ep.module().load_state_dict(Lin().state_dict())
    if not torch.equal(m.lin.weight.detach(), w0):
        raise Finding("mutation", "ep.module().load_state_dict(other) overwrote the ORIGINAL model's weights "
                      "(ep.module() shares parameter tensors and load_state_dict copies in place)")


@case("call")
def call_module_half_leaks_to_model():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    ep.module().half()
    if m.lin.weight.dtype != torch.float32:
        raise Finding("mutation", f"ep.module().half() converted the ORIGINAL model's weights to {m.lin.weight.dtype}")


@case("call")
def call_module_train_flag():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    ep = st.export(m, (torch.randn(2, 4),))
    mod = ep.module()
    try:
        mod.train()
    except Exception as e:  # noqa: BLE001
        return f"mod.train() refused: {describe(e)}"
    x = torch.randn(2, 4)
    d = compare(m(x), mod(x))
    if d:
        raise Finding("wrong", d)
    return "mod.train() accepted; still computes the eval-mode program"


@case("state")
def se_frozen_param_inplace_leaks():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3), requires_grad=False)

        def forward(self, x):
            self.w.mul_(2)
            return x * self.w
    m = M()
    x = torch.randn(3)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    if not torch.equal(m.w, torch.ones(3)):
        raise Finding("mutation", f"export mutated the frozen parameter: {m.w.tolist()}")
    ref = copy.deepcopy(m)
    e1, s1 = ref(x), ep.module()(x)
    if not torch.equal(m.w, torch.ones(3)):
        raise Finding("mutation", f"calling ep.module() mutated the original model's frozen parameter in place "
                      f"(w = {m.w.tolist()}); mutated parameters are not in buffers_to_mutate / not copied")
    d = compare(e1, s1)
    if d:
        raise Finding("wrong", d)


@case("data")
def dd_shape_int_output_dynamic():
    run_export(Fn(lambda x: (x * 2, x.shape[0], x.numel())), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_torch_size_output_dynamic():
    run_export(Fn(lambda x: (x * 2, x.shape)), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(7, 3))])


@case("explain")
def explain_continues_after_data_dependent_branch():
    class M(nn.Module):
        def forward(self, x, y):
            if x.sum() > 0:
                x = x * 2
            return x[:3] + y
    r = st.explain(M(), (torch.randn(5, 3), torch.randn(3, 3)),
                   dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})
    text = str(r)
    if "y.shape[0]" not in text.split("Dims")[0]:
        raise Finding("unclear", "st.explain stops at the data-dependent `if x.sum() > 0` and does not report the "
                      f"later constraint violation on y.shape[0] (README: it assumes an answer and keeps tracing); "
                      f"report: {first_lines(text, 3)}")


@case("spec")
def spec_two_violations_paste():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.ones(4, 3))

        def forward(self, x, y):
            return (x + self.b) + y[:4]
    x, y = torch.randn(4, 3), torch.randn(6, 3)
    msg = expect_error(lambda: st.export(M(), (x, y), dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim("n", min=1)}}),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"])
    _paste_fix(M(), (x, y), msg)


# =========================================================================================
# 7. explain
# =========================================================================================
@case("explain")
def explain_data_dependent_and_violation():
    class M(nn.Module):
        def forward(self, x, y):
            if x.sum() > 0:
                x = x * 2
            return x[:3] + y
    r = st.explain(M(), (torch.randn(5, 3), torch.randn(3, 3)),
                   dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})
    text = str(r)
    if r.ok:
        raise Finding("silent", "explain reported ok")
    for want in ("x.sum() > 0", "dynamic_shapes="):
        if want not in text:
            raise Finding("unclear", f"explain report lacks {want!r}: {first_lines(text, 6)}")


@case("explain")
def explain_bad_spec():
    r = st.explain(One(), (torch.randn(4, 3),), dynamic_shapes={"y": {0: Dim.AUTO}})
    if r.ok:
        raise Finding("silent", "explain ok on a bad spec")
    if "'y'" not in str(r):
        raise Finding("unclear", f"explain lacks the bad key: {first_lines(str(r), 4)}")


@case("explain")
def explain_internal_errors_hidden():
    # explain swallows every exception; an internal crash would show as a 'problem'
    @dataclasses.dataclass
    class P:
        a: torch.Tensor
    r = st.explain(Fn(lambda p: p.a), (P(torch.randn(3)),))
    text = str(r)
    for bad in ("AttributeError", "KeyError", "IndexError", "TypeError", "AssertionError"):
        if bad in text:
            raise Finding("crash", f"explain report shows an internal {bad}: {first_lines(text, 4)}")
    if r.ok:
        raise Finding("silent", "explain ok on an unregistered dataclass input")


@case("explain")
def explain_ok_model():
    r = st.explain(Lin(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    if not r.ok:
        raise Finding("reject", f"explain not ok: {first_lines(str(r), 4)}")


@case("explain")
def explain_does_not_mutate():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.zeros(()))

        def forward(self, x):
            self.c += 1
            if x.sum() > 0:
                return x
            return x * self.c
    m = M().train()
    snap = snap_model(m)
    st.explain(m, (torch.randn(3),))
    check_model(m, snap, "explain")


# =========================================================================================
# 8. saved programs: hostile / broken files
# =========================================================================================
def _good_bytes():
    ep = st.export(Lin(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b", max=64)}})
    buf = io.BytesIO()
    st.save(ep, buf)
    return buf.getvalue()


def _load_expect(data, what, **kw):
    t0 = time.perf_counter()
    msg = expect_error(lambda: st.load(data, **kw), st.LoadError, what=what)
    dt = time.perf_counter() - t0
    if dt > 3:
        raise Finding("unclear", f"{what}: LoadError took {dt:.1f}s")
    return msg


def _rezip(data, edit):
    zin = zipfile.ZipFile(io.BytesIO(data))
    members = {i.filename: (i, zin.read(i.filename)) for i in zin.infolist()}
    members = edit(members)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, (info, payload) in members.items():
            ct = zipfile.ZIP_DEFLATED if name.endswith(".json") else zipfile.ZIP_STORED
            z.writestr(zipfile.ZipInfo(name), payload, compress_type=ct)
    return out.getvalue()


@case("load")
def load_roundtrip_bytes_path_fileobj():
    data = _good_bytes()
    p = Path("/tmp/probe_edges/rt.st")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    x = torch.randn(7, 3)
    a = st.load(data).module()(x)
    b = st.load(str(p)).module()(x)
    c = st.load(p).module()(x)
    with open(p, "rb") as fh:
        e = st.load(fh).module()(x)
    for o in (b, c, e):
        d = compare(a, o)
        if d:
            raise Finding("wrong", d)
    expect_error(lambda: st.load(data).module()(torch.randn(65, 3)), st.InputMismatchError,
                 contains=["x.shape[0]", "64"])


@case("load")
def load_empty():
    _load_expect(b"", "empty bytes")


@case("load")
def load_not_zip():
    _load_expect(b"\x89PNG\r\n\x1a\n" + b"0" * 100, "png bytes")


@case("load")
def load_truncations():
    data = _good_bytes()
    bad = []
    for cut in sorted({1, 4, 22, 30, len(data) // 4, len(data) // 2, len(data) - 30, len(data) - 1}):
        try:
            _load_expect(data[:cut], f"truncated at {cut}")
        except Finding as f:
            bad.append(f.msg)
    if bad:
        raise Finding("crash" if any("internal" in b for b in bad) else "unclear", "; ".join(bad[:3]))


@case("load")
def load_byte_flips():
    data = bytearray(_good_bytes())
    import random
    rnd = random.Random(0)
    bad = []
    silently_loaded = 0
    for _ in range(150):
        d = bytearray(data)
        for _ in range(rnd.choice([1, 2, 8])):
            d[rnd.randrange(len(d))] = rnd.randrange(256)
        try:
            ep = st.load(bytes(d))
        except st.LoadError:
            continue
        except Exception as e:  # noqa: BLE001
            bad.append(f"{describe(e)} at {_where(e)}")
            continue
        silently_loaded += 1
        try:
            ep.module()(torch.randn(5, 3))
        except ST_ERRORS:
            pass
        except Exception as e:  # noqa: BLE001
            bad.append(f"loaded, then running raised {describe(e)} at {_where(e)}")
    if bad:
        raise Finding("crash", f"{len(bad)} of 150 flipped files: " + "; ".join(sorted(set(bad))[:3]))
    return f"{silently_loaded} flipped files loaded (flips in tensor bytes / slack)"


@case("load")
def load_extra_member_and_traversal():
    data = _good_bytes()
    _load_expect(_rezip(data, lambda m: {**m, "evil.py": (None, b"print(1)")}), "extra member")
    _load_expect(_rezip(data, lambda m: {**m, "../x": (None, b"1")}), "path traversal member")
    _load_expect(_rezip(data, lambda m: {k: v for k, v in m.items() if k.endswith(".json")}), "missing tensors")


@case("load")
def load_json_bomb():
    # program.json deflated from 300 MiB of spaces: must be refused from the declared size, fast
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("program.json", "w", force_zip64=True) as fh:
            chunk = b" " * (1 << 20)
            for _ in range(300):
                fh.write(chunk)
        z.writestr("tensors.safetensors", b"")
    _load_expect(out.getvalue(), "json bomb")


@case("load")
def load_lying_size_header():
    # central directory says program.json is small; its deflated stream expands to much more
    data = _good_bytes()
    zin = zipfile.ZipFile(io.BytesIO(data))
    prog = zin.read("program.json")
    big = prog[:-1] + b" " * (5 << 20) + b"}"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("program.json"), big, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr(zipfile.ZipInfo("tensors.safetensors"), zin.read("tensors.safetensors"))
    raw = bytearray(out.getvalue())
    # patch the uncompressed size in the central directory entry for program.json
    cd = raw.rfind(b"PK\x01\x02", 0, raw.rfind(b"PK\x01\x02"))
    raw[cd + 24:cd + 28] = (len(prog)).to_bytes(4, "little")
    lh = raw.find(b"PK\x03\x04")
    raw[lh + 22:lh + 26] = (len(prog)).to_bytes(4, "little")
    _load_expect(bytes(raw), "lying size")


@case("load")
def load_max_tensor_bytes():
    _load_expect(_good_bytes(), "max_tensor_bytes=8", max_tensor_bytes=8)


@case("load")
def load_hostile_json_fields():
    import json
    data = _good_bytes()
    prog = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("program.json"))
    bad = []

    def try_prog(p, what):
        blob = json.dumps(p).encode()
        d = _rezip(data, lambda m: {**m, "program.json": (None, blob)})
        try:
            _load_expect(d, what)
        except Finding as f:
            bad.append(f"[{f.kind}] {f.msg}")

    for key in list(prog):
        p = copy.deepcopy(prog)
        del p[key]
        try_prog(p, f"missing {key!r}")
    for key, val in [("format", "other"), ("version", [2, 0]), ("version", "1.0"), ("nodes", {}),
                     ("nodes", [{"name": "__import__('os')", "op": "placeholder"}]), ("symbols", [[1]]),
                     ("state", [1, 2]), ("contract", None), ("in_spec", 7)]:
        p = copy.deepcopy(prog)
        p[key] = val
        try_prog(p, f"{key}={val!r}")
    # node target pointing at an arbitrary callable
    p = copy.deepcopy(prog)
    for n in p["nodes"]:
        if n.get("op") == "call_function":
            n["target"] = "os.system"
            break
    try_prog(p, "target os.system")
    p = copy.deepcopy(prog)
    for n in p["nodes"]:
        if n.get("op") == "call_function":
            n["target"] = "builtins.eval"
            break
    try_prog(p, "target builtins.eval")
    if bad:
        raise Finding("crash" if any("internal" in b for b in bad) else "unclear",
                      f"{len(bad)} hostile JSON edits: " + " ;; ".join(bad[:4]))


@case("load")
def load_nonexistent_and_directory():
    msgs = []
    for target in ("/tmp/probe_edges/does_not_exist.st", "/tmp/probe_edges"):
        try:
            st.load(target)
        except st.LoadError as e:
            msgs.append(f"LoadError: {first_lines(str(e), 1)}")
        except OSError as e:
            msgs.append(f"{type(e).__name__}")
        except Exception as e:  # noqa: BLE001
            raise Finding("crash", f"st.load({target!r}): {describe(e)} at {_where(e)}")
    return "; ".join(msgs)


@case("load")
def load_wrong_type():
    expect_error(lambda: st.load(12345), st.LoadError, allow_ok=False, user_error_ok=True)


@case("load")
def save_roundtrip_dataclass_namedtuple_kwargs():
    class M(nn.Module):
        def forward(self, p, t, *, d):
            return Out(p.a + t.a + d["k"], 3), NT(t.b, p.b)
    mk = lambda n: lambda: ((RegPt(torch.randn(n), torch.randn(n)), NT(torch.randn(n), torch.randn(n))),  # noqa: E731
                            {"d": {"k": torch.randn(n)}})
    run_export(M(), mk(4), ds={"p": RegPt({0: Dim("n")}, {0: Dim("n")}, None),
                               "t": NT({0: Dim("n")}, {0: Dim("n")}), "d": {"k": {0: Dim("n")}}},
               others=[mk(9)])


@case("load")
def save_then_mutate_model():
    # a saved program must hold the weights as they were at save time
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    buf = io.BytesIO()
    st.save(ep, buf)
    x = torch.randn(4, 3)
    expected = m(x).detach().clone()
    with torch.no_grad():
        m.lin.weight.zero_()
    d = compare(expected, st.load(buf.getvalue()).module()(x))
    if d:
        raise Finding("wrong", d)


@case("load")
def save_to_bad_path():
    ep = st.export(Lin(), (torch.randn(4, 3),))
    try:
        st.save(ep, "/tmp/probe_edges/no/such/dir/f.st")
    except OSError as e:
        return f"{type(e).__name__}"
    except Exception as e:  # noqa: BLE001
        raise Finding("crash" if from_safetrace(e) else "unclear", describe(e))


# -- runner --------------------------------------------------------------------------------
def main(argv):
    verbose = "-v" in argv
    filt = [a for a in argv if not a.startswith("-")]
    rows = []
    t_all = time.perf_counter()
    for cat, name, fn in CASES:
        if filt and not any(f in name for f in filt):
            continue
        t0 = time.perf_counter()
        torch_seed()
        try:
            detail = fn()
            status, kind = "ok", ""
            detail = "" if detail is None else str(detail)
        except Finding as f:
            status, kind, detail = "BUG", f.kind, f.msg
        except Note as n:
            status, kind, detail = "note", "", str(n)
        except ST_ERRORS as e:
            status, kind, detail = "BUG", "reject", f"refused a legal program/input: {describe(e)}"
        except Exception as e:  # noqa: BLE001
            if from_safetrace(e):
                status, kind, detail = "BUG", "crash", f"internal {describe(e)} at {_where(e)}"
            else:
                status, kind = "harness", ""
                detail = f"{describe(e)} at {_where(e)}"
                if verbose:
                    traceback.print_exc()
        dt = time.perf_counter() - t0
        rows.append((cat, name, status, kind, detail, dt))
        print(f"{status:7} {kind:9} {cat:8} {name:44} {dt * 1000:7.0f}ms  {detail[:400]}", flush=True)
    print()
    counts = {}
    for r in rows:
        key = r[2] + (f"/{r[3]}" if r[3] else "")
        counts[key] = counts.get(key, 0) + 1
    print(f"cases: {len(rows)}  " + "  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"total time: {time.perf_counter() - t_all:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
