"""The one conformance checker: every case table under tests/conformance/ runs through it.

For a case (a model, a ``make(*sizes)`` input factory, sizes, a ``dynamic_shapes`` spec):

1. ``st.export`` with the spec (and, with ``static=True``, once more without one);
2. export leaves the model (values, versions, attributes, training flags) and the example
   inputs (values, versions, strides, flags) alone;
3. ``ep.module()`` computes what eager computes on the example, the other sizes, the
   declared edges and the *bounds* derived from the spec: every named Dim at its min, at 0
   and 1 and at its max where the spec admits them (other sizes as in the example). An edge
   or bound input that eager rejects must be rejected too; one that eager handles must not be;
4. inputs outside the declared space (the case's own, each named Dim one past its range, the
   first tensor with one more dim or another dtype) raise ``st.InputMismatchError`` before
   any operator runs (counted with a dispatch mode);
5. a ``st.save`` / ``st.load`` round trip gives bit-identical outputs and the same refusals.

A broken promise raises :class:`Problem` with its kind (``WRONG``, ``narrow``, ``lax``,
``mutation``, ``crash``, ``refused``, ``roundtrip``) and a one-line description.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import io
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils import _pytree as pytree

import safetrace as st
from safetrace.dims import DerivedDim, Dim

ST_ERRORS = (st.ExportError, st.InputMismatchError, st.RuntimeAssertionError, st.LoadError)
BOUND_MAX = 128          # a Dim's max is tried (and max + 1 refused) only up to this size
BOUND_NUMEL = 60_000     # bound inputs bigger than this (elements in all) are not run: cost


class Problem(AssertionError):
    """A broken promise: ``kind`` names which one."""

    def __init__(self, kind: str, msg: str):
        super().__init__(f"{kind}: {msg}")
        self.kind = kind
        self.msg = msg


@dataclass
class Given:
    """Inputs written out instead of built from sizes (an outside input of another kind)."""

    args: tuple
    kwargs: dict


@dataclass
class Case:
    """One conformance case; sizes are tuples (``make(*s)``) or dicts (``make(**s)``)."""

    model: Any
    make: Callable[..., tuple]       # sizes -> (args, kwargs)
    ex: Any                          # the example's sizes
    spec: Any                        # dynamic_shapes (named Dims); may be a zero-arg callable
    others: list = field(default_factory=list)    # other sizes inside the declared space
    outside: list = field(default_factory=list)   # sizes outside it (must be refused)
    edges: list = field(default_factory=list)     # boundary sizes: eager may refuse some
    mode: str = "values"             # or "shapes"
    tol: float = 1e-4
    stateful: bool = False           # buffers change per call: one sequence on copies
    static: bool = False             # also export without a spec (example sizes only)
    bounds: bool = True              # derive bound and out-of-range sizes from the spec
    bad: Callable | None = None      # (args, kwargs) -> [(label, args, kwargs)] to refuse
    roundtrip: bool = True
    note: str = ""
    grad: bool = False               # run with grad enabled, as at export (reads the grad mode)

    def inputs(self, sizes) -> tuple[tuple, dict]:
        if isinstance(sizes, Given):
            return sizes.args, sizes.kwargs
        out = self.make(**sizes) if isinstance(sizes, dict) else self.make(*sizes)
        if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
            out = (tuple(out) if isinstance(out, (tuple, list)) else (out,), {})
        return out


def first_lines(e: BaseException | str, n: int = 2) -> str:
    text = f"{type(e).__name__}: {e}" if isinstance(e, BaseException) else str(e)
    return " / ".join(ln.strip() for ln in text.strip().splitlines()[:n] if ln.strip())[:300]


# -- comparing ---------------------------------------------------------------------------

def compare(a, b, mode="values", tol=1e-4, path="out") -> str | None:
    """None when eager's ``a`` and the program's ``b`` agree, else the first difference."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{path}: eager {type(a).__name__} vs exported {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return (f"{path}: eager {list(a.shape)} {a.dtype} vs exported "
                    f"{list(b.shape)} {b.dtype}")
        if mode == "shapes":
            return None
        if mode == "exact":
            same = torch.equal(a, b) or (a.is_floating_point() and torch.equal(
                a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5)))
            return None if same else f"{path}: not bit-identical"
        a, b = a.detach(), b.detach()
        if a.is_floating_point() or a.is_complex():
            if not torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
                d = (a - b).abs().nan_to_num(0)
                return f"{path}: max abs diff {float(d.max()) if d.numel() else 'nan pattern'}"
        elif not torch.equal(a, b):
            return f"{path}: values eager {a.flatten()[:6].tolist()} vs {b.flatten()[:6].tolist()}"
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path}: keys eager {list(a)} vs exported {list(b)}"
        for k in a:
            if (r := compare(a[k], b[k], mode, tol, f"{path}[{k!r}]")):
                return r
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) and not (isinstance(a, tuple) and isinstance(b, tuple)):
            return f"{path}: eager {type(a).__name__} vs exported {type(b).__name__}"
        if len(a) != len(b):
            return f"{path}: length eager {len(a)} vs exported {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (r := compare(x, y, mode, tol, f"{path}[{i}]")):
                return r
        return None
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return f"{path}: eager {type(a).__name__} vs exported {type(b).__name__}"
        for f in dataclasses.fields(a):
            if (r := compare(getattr(a, f.name), getattr(b, f.name), mode, tol,
                             f"{path}.{f.name}")):
                return r
        return None
    if type(a) is not type(b):
        return f"{path}: eager {type(a).__name__} {a!r} vs exported {type(b).__name__} {b!r}"
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{path}: eager {a!r} vs exported {b!r}"


# -- snapshots: export and runs leave model and inputs alone --------------------------------

def _tensors(tree):
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def snap_inputs(tree):
    return [(t, t.detach().clone(), t._version, t.requires_grad, t.stride()) for t in _tensors(tree)]


def check_inputs(snap, where: str) -> None:
    for t, val, ver, rg, stride in snap:
        if t._version != ver or compare(val, t.detach(), "exact"):
            raise Problem("mutation", f"{where} modified an input tensor in place")
        if t.requires_grad != rg or t.stride() != stride:
            raise Problem("mutation", f"{where} changed an input tensor's flags or strides")


def _attr(v):
    if isinstance(v, (int, float, str, bool, type(None))):
        return v
    if isinstance(v, (list, tuple, dict, set)):
        return (type(v), len(v))
    return (type(v), id(v))


_SKIP = {"_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks",
         "_state_dict_hooks", "_backward_hooks"}


def snap_model(model):
    if not isinstance(model, nn.Module):
        return None
    return {name: (m.training, {k: _attr(v) for k, v in vars(m).items() if k not in _SKIP},
                   {k: (id(p), p._version, p.detach().clone()) for k, p in
                    list(m._parameters.items()) + list(m._buffers.items()) if p is not None})
            for name, m in model.named_modules()}


def check_model(model, before, where: str) -> None:
    if before is None:
        return
    after = snap_model(model)
    if list(after) != list(before):
        raise Problem("mutation", f"{where} changed the submodules")
    for name, (tr, attrs, state) in before.items():
        tr2, attrs2, state2 = after[name]
        what = name or "the model"
        if tr != tr2:
            raise Problem("mutation", f"{where} changed {what}.training")
        if attrs != attrs2:
            keys = [k for k in set(attrs) | set(attrs2) if attrs.get(k) != attrs2.get(k)]
            raise Problem("mutation", f"{where} changed attributes {keys} of {what}")
        if list(state) != list(state2):
            raise Problem("mutation", f"{where} changed the parameters/buffers of {what}")
        for k, (i, ver, val) in state.items():
            i2, ver2, val2 = state2[k]
            if i != i2 or ver != ver2 or compare(val, val2, "exact"):
                raise Problem("mutation", f"{where} changed {what}.{k}")


# -- running -------------------------------------------------------------------------------

class _Ops(TorchDispatchMode):
    """Counts the operators that reach dispatch (a refusal must come before any)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def _call(fn, args, kwargs, seed=0):
    torch.manual_seed(seed)
    with torch.set_grad_enabled(GRAD[0]):
        return fn(*args, **kwargs)


GRAD = [False]   # runs are under no_grad unless a case reads the grad mode (``grad=True``)


def refuses(module, args, kwargs, what: str) -> None:
    """``module`` raises InputMismatchError on these inputs, before running any operator."""
    a, k = copy.deepcopy((args, kwargs))
    counter = _Ops()
    try:
        with counter:
            module(*a, **k)
    except st.InputMismatchError:
        if counter.ops:
            raise Problem("lax", f"{what}: refused only after running {counter.ops[:3]}")
        return
    except Exception as e:  # noqa: BLE001
        raise Problem("lax", f"{what}: raised {first_lines(e)} instead of InputMismatchError")
    raise Problem("lax", f"{what}: out-of-spec input accepted")


def run_pair(eager, module, args, kwargs, *, what, edge=False, mode="values", tol=1e-4):
    """Eager and the program on copies of the same inputs. Returns the program's output, or
    None when both refused (``edge`` inputs only: eager may refuse them)."""
    ea, ek = copy.deepcopy((args, kwargs))
    try:
        want = _call(eager, ea, ek)
    except Exception as e:  # noqa: BLE001
        if not edge:
            raise
        eager_err = e
    else:
        eager_err = None
    pa, pk = copy.deepcopy((args, kwargs))
    try:
        got = _call(module, pa, pk)
    except st.InputMismatchError as e:
        if eager_err is None:
            raise Problem("narrow", f"{what}: an input eager handles was refused: {first_lines(e)}")
        return None
    except Exception as e:  # noqa: BLE001
        if eager_err is None:
            kind = "refused" if isinstance(e, st.RuntimeAssertionError) else "crash"
            raise Problem(kind, f"{what}: the program raised {first_lines(e)}") from e
        return None
    if eager_err is not None:
        raise Problem("WRONG", f"{what}: eager raises {first_lines(eager_err, 1)} but the "
                      "program computed a result")
    if (d := compare(want, got, mode, tol)):
        raise Problem("WRONG", f"{what}: {d}")
    if (d := compare((ea, ek), (pa, pk), mode, tol, "inputs after the call")):
        raise Problem("WRONG", f"{what}: in-place effects differ: {d}")
    return got


def roundtrip(ep):
    """Save and load, trusting the custom operators this process registered that the
    program calls (transformers' ``grouped_mm_fallback`` in its MoE models), as a user who
    trusts them passes them to ``st.load``."""
    buf = io.BytesIO()
    st.save(ep, buf)
    custom = sorted({f"{n.target.namespace}::{n.target._schema.name.split('::', 1)[1]}"
                     for gm in ep.graph_module.modules() if isinstance(gm, torch.fx.GraphModule)
                     for n in gm.graph.nodes
                     if isinstance(n.target, torch._ops.OpOverload)
                     and n.target.namespace not in ("aten", "prims")})
    return st.load(buf.getvalue(), allow_ops=custom) if custom else st.load(buf.getvalue())


def generic_outside(args, kwargs):
    """Out-of-spec variants of any input: the first tensor with one more dim, another dtype."""
    leaves, tree = pytree.tree_flatten((args, kwargs))
    i = next((i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)), None)
    if i is None:
        return []
    t = leaves[i]
    other = {torch.float32: torch.float64, torch.int64: torch.int32, torch.bool: torch.uint8,
             torch.float64: torch.float32}.get(t.dtype, torch.float32)
    out = []
    for label, v in (("one more dim", t.unsqueeze(0)), (f"dtype {other}", t.to(other))):
        l2 = list(leaves)
        l2[i] = v
        out.append((label, *pytree.tree_unflatten(l2, tree)))
    return out


def _state_versions(ep) -> list:
    """The version counters of the program's state (an in-place write moves one)."""
    return [t._version for t in ep.state_dict.values() if isinstance(t, torch.Tensor)]


def check_program(model, spec, example, inputs=(), edges=(), outside=(), *, mode="values",
                  tol=1e-4, stateful=False, save=True, generic=True, extra_outside=()):
    """The checker's core on materialized inputs ((args, kwargs) pairs). Returns the program."""
    args, kwargs = example
    msnap, isnap = snap_model(model), snap_inputs((args, kwargs))
    try:
        ep = st.export(model, args, kwargs, dynamic_shapes=spec)
    except ST_ERRORS as e:
        raise Problem("refused", first_lines(e, 3)) from e
    except Exception as e:  # noqa: BLE001
        raise Problem("crash", f"export: {first_lines(e, 3)}") from e
    check_model(model, msnap, "export")
    check_inputs(isnap, "export")
    module = ep.module()
    # eager runs on a copy: models that cache things on themselves (anchors per input size)
    # must not look like the program changed them
    eager = copy.deepcopy(model) if isinstance(model, nn.Module) else model
    runs = [(a, "example" if j == 0 else f"input #{j}", False)
            for j, a in enumerate([example, *inputs])]
    runs += [(a, f"edge #{j}", True) for j, a in enumerate(edges)]
    versions = _state_versions(ep)
    results = []
    for (a, k), what, edge in runs:
        results.append(((a, k), run_pair(eager, module, a, k, what=what, edge=edge, mode=mode,
                                         tol=tol)))
    check_model(model, msnap, "running the program")
    bad = [(f"outside #{j}", a, k) for j, (a, k) in enumerate(outside)] + list(extra_outside)
    if generic:
        bad += generic_outside(args, kwargs)
    for what, a, k in bad:
        refuses(module, a, k, what)
    if save:
        try:
            loaded = roundtrip(ep).module()
        except Exception as e:  # noqa: BLE001
            raise Problem("roundtrip", f"save/load: {first_lines(e)}") from e
        # a program whose state the runs above left as it was gives what it gave there (same
        # copies, same seed); otherwise its module runs again, on the state that was saved
        fresh = ep.module() if stateful else \
            None if _state_versions(ep) == versions else module
        for (a, k), got in results:
            if got is None:
                continue
            want = got if fresh is None else _call(fresh, *copy.deepcopy((a, k)))
            if (d := compare(want, _call(loaded, *copy.deepcopy((a, k))), "exact")):
                raise Problem("roundtrip", f"loaded program: {d}")
        for what, a, k in bad:
            refuses(loaded, a, k, f"loaded program, {what}")
    return ep


# -- the bounds a spec declares -------------------------------------------------------------

def _pair(spec, value, out):
    """Collect (Dim or DerivedDim, size) for every named entry of ``spec`` over ``value``."""
    if spec is None or isinstance(spec, (int, type(Dim.AUTO))):
        return
    if isinstance(value, torch.Tensor):
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for d, entry in items:
            if isinstance(entry, (Dim, DerivedDim)) and -value.dim() <= d < value.dim():
                out.append((entry, value.shape[d]))
    elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
        for s, v in zip(spec, value):
            _pair(s, v, out)
    elif isinstance(value, dict) and isinstance(spec, dict):
        for key, s in spec.items():
            if key in value:
                _pair(s, value[key], out)


def spec_sizes(model, spec, args, kwargs) -> dict | None:
    """{root Dim name: implied size} for these inputs; None when they disagree."""
    if isinstance(spec, st.ShapesCollection) or spec is None:
        return {}
    fn = model.forward if isinstance(model, nn.Module) else model
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = None
    pairs: list = []
    if isinstance(spec, dict) and bound is not None and all(isinstance(k, str) for k in spec):
        _pair(spec, dict(bound), pairs)
    elif isinstance(spec, (list, tuple)):
        values = list(bound.values()) if bound is not None else [*args, *kwargs.values()]
        _pair(spec, values, pairs)
    sizes: dict = {}
    for entry, n in pairs:
        root, coef, off = ((entry.root, entry.coef, entry.offset) if isinstance(entry, DerivedDim)
                           else (entry, 1, 0))
        if (n - off) % coef:
            return None
        v = (n - off) // coef
        if sizes.setdefault(root.name, (root, v))[1] != v:
            return None
    return {k: v for k, v in sizes.items()}


def _numel(tree) -> int:
    return sum(t.numel() for t in _tensors(tree))


def derive_bounds(case: Case, spec) -> tuple[list, list]:
    """(bound sizes inside the spec, sizes one past a named Dim's range), by probing which
    size position moves which named Dim."""
    base = spec_sizes(case.model, spec, *case.inputs(case.ex))
    if not base:
        return [], []
    keys = list(case.ex) if isinstance(case.ex, dict) else list(range(len(case.ex)))
    inside, outside, seen = [], [], set()

    def moved(sizes, key, v):
        s = dict(sizes) if isinstance(sizes, dict) else list(sizes)
        s[key] = v
        return s if isinstance(sizes, dict) else tuple(s)

    for key in keys:
        v0 = case.ex[key]
        if not isinstance(v0, int) or isinstance(v0, bool):
            continue
        # the smallest step of this position that moves exactly one named Dim
        for step in (1, 2, 4, 8, 16):
            try:
                probe = spec_sizes(case.model, spec, *case.inputs(moved(case.ex, key, v0 + step)))
            except Exception:  # noqa: BLE001 - the factory does not take this size
                probe = None
            changed = [n for n in base if probe and probe.get(n, base[n])[1] != base[n][1]]
            if changed:
                break
        if len(changed) != 1:
            continue
        root, r0 = base[changed[0]]
        moves = probe[changed[0]][1] - r0
        if moves <= 0:
            continue
        hi = root.max if root.max <= BOUND_MAX else None
        targets = {root.min, 0, 1} | ({hi} if hi is not None else set())
        wanted = [(t, True) for t in sorted(targets) if root.min <= t <= root.max]
        wanted += [(root.min - 1, False)] if root.min >= 1 else []
        wanted += [(hi + 1, False)] if hi is not None and root.max == hi else []
        for target, ok in wanted:
            if ((target - r0) * step) % moves:
                continue
            v = v0 + (target - r0) * step // moves
            if v < 0:
                continue
            sizes = moved(case.ex, key, v)
            if sizes in [case.ex, *case.others] or repr(sizes) in seen:
                continue
            try:
                inp = case.inputs(sizes)
                got = spec_sizes(case.model, spec, *inp)
            except Exception:  # noqa: BLE001
                continue
            if (not got or got[changed[0]][1] != target or _numel(inp) > BOUND_NUMEL
                    or any(got[n][1] != base[n][1] for n in base if n != changed[0])):
                continue
            seen.add(repr(sizes))
            (inside if ok else outside).append(sizes)
    return inside, outside


def check(case: Case) -> Any:
    """Run one case through every check (see the module docstring); returns the program."""
    torch.manual_seed(0)
    GRAD[0] = case.grad
    spec = case.spec() if callable(case.spec) else case.spec
    if isinstance(case.model, nn.Module):
        case.model.eval()
    bounds, beyond = derive_bounds(case, spec) if case.bounds and not case.stateful else ([], [])
    example = case.inputs(case.ex)
    bad = case.bad(*example) if case.bad else []
    if case.static:
        check_program(case.model, None, example, mode=case.mode, tol=case.tol,
                      stateful=case.stateful, save=False, extra_outside=bad)
    return check_program(
        case.model, spec, example, [case.inputs(s) for s in case.others],
        [case.inputs(s) for s in [*case.edges, *bounds]],
        [case.inputs(s) for s in [*case.outside, *beyond]],
        mode=case.mode, tol=case.tol, stateful=case.stateful, save=case.roundtrip,
        extra_outside=bad)
