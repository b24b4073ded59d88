"""Sweep torch's exportdb cases (the examples shipped in torch/_export/db/examples) through
torch.export.export and through st.export(...).to_torch(), as a user switching the import
would meet them (issue 21's outside check, test_db.py's part of it).

For every case: export with both (the case's example args, kwargs and dynamic_shapes),
call both programs' .module() on the example and on inputs of other sizes (varying the
dims torch's program left symbolic; an input torch's module refuses is not counted as
valid), compare with eager, then run torch's run_decompositions() and
torch.export.unflatten() on the converted program.  Each case lands in one class:

  both-pass       ours and torch agree with eager everywhere, post-processing included
  ours-refuses    st.export raised an ExportError (kind printed) where torch exports
  ours-crashes    an exception that is not an ExportError escaped (a bug)
  wrong           a number differs from eager, or an input valid for torch is refused (critical)
  post-fails      the converted program fails run_decompositions/unflatten/module
  torch-fails     torch.export itself raises (ours is then only checked against eager)

Run:  python benchmarks/exportdb_sweep.py [-v] [case-name ...]
A benchmark script: it may import torch's internals (the library may not).
"""

from __future__ import annotations

import copy
import itertools
import sys
import traceback

import torch

import safetrace as st


def _cases():
    from torch._export.db.examples import all_examples
    return all_examples()


def _leaves(x):
    return torch.utils._pytree.tree_leaves(x)


def _same(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    for u, v in zip(la, lb):
        if isinstance(v, torch.Tensor):
            if not isinstance(u, torch.Tensor) or u.shape != v.shape:
                return False
            if not torch.allclose(u.double(), v.double(), equal_nan=True, atol=1e-5):
                return False
        elif u != v:
            return False
    return True


def _symbolic_dims(tep) -> dict[int, list[int]]:
    """For each flat user-input position, the dims torch's program left symbolic."""
    out = {}
    users = [s for s in tep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    nodes = {n.name: n for n in tep.graph.nodes if n.op == "placeholder"}
    for i, spec in enumerate(users):
        node = nodes.get(getattr(spec.arg, "name", None))
        val = node.meta.get("val") if node is not None else None
        if isinstance(val, torch.Tensor):
            dims = [d for d, s in enumerate(val.shape) if not isinstance(s, int)]
            if dims:
                out[i] = dims
    return out


def _variants(args, kwargs, dims: dict[int, list[int]]):
    """Inputs of other sizes: every symbolic dim moved together by the same rule."""
    flat, spec = torch.utils._pytree.tree_flatten((args, kwargs))
    for rule in (lambda s: s + 1, lambda s: s * 2, lambda s: max(s - 1, 0), lambda s: 1,
                 lambda s: 0):
        new = list(flat)
        changed = False
        for i, ds in dims.items():
            t = flat[i]
            shape = list(t.shape)
            for d in ds:
                shape[d] = rule(shape[d])
            if shape != list(t.shape):
                changed = True
            if t.dtype.is_floating_point:
                new[i] = torch.randn(shape, dtype=t.dtype)
            elif t.dtype == torch.bool:
                new[i] = torch.randint(0, 2, shape).bool()
            else:
                new[i] = torch.randint(0, 5, shape, dtype=t.dtype)
        if changed:
            yield torch.utils._pytree.tree_unflatten(new, spec)


def _call(module, args, kwargs):
    return module(*copy.deepcopy(args), **copy.deepcopy(kwargs))


def run_case(name, case, verbose=False):
    model = case.model
    args, kwargs = case.example_args, dict(case.example_kwargs or {})
    ds = case.dynamic_shapes
    notes = []
    try:
        eager = _call(copy.deepcopy(model), args, kwargs)
    except Exception as e:  # noqa: BLE001
        return "eager-fails", f"{type(e).__name__}: {e}"[:120]
    try:
        tep = torch.export.export(copy.deepcopy(model), args, kwargs, dynamic_shapes=ds,
                                  strict=False)
        tfail = None
    except Exception as e:  # noqa: BLE001
        tep, tfail = None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
    try:
        ours = st.export(copy.deepcopy(model), args, kwargs, dynamic_shapes=ds)
    except st.ExportError as e:
        kind = type(e).__name__
        first = str(e).splitlines()[0][:100]
        if tep is None:
            return "both-refuse", f"torch: {tfail} | ours {kind}: {first}"
        return "ours-refuses", f"{kind}: {first}"
    except Exception as e:  # noqa: BLE001
        if verbose:
            traceback.print_exc()
        return "ours-crashes", f"export: {type(e).__name__}: {str(e)[:100]}"
    try:
        conv = ours.to_torch()
    except st.ExportError as e:
        return "post-fails", f"to_torch {type(e).__name__}: {str(e).splitlines()[0][:90]}"
    except Exception as e:  # noqa: BLE001
        if verbose:
            traceback.print_exc()
        return "ours-crashes", f"to_torch: {type(e).__name__}: {str(e)[:100]}"
    # numerics at the example and at other sizes
    inputs = [(args, kwargs)]
    dims = _symbolic_dims(tep if tep is not None else conv)
    inputs += list(_variants(args, kwargs, dims))
    for i, (a, k) in enumerate(inputs):
        try:
            want = _call(copy.deepcopy(model), a, k)
        except Exception:  # noqa: BLE001
            continue  # not a valid input for eager
        if tep is not None:
            try:
                _call(tep.module(), a, k)
            except Exception:  # noqa: BLE001
                continue  # outside torch's declared space too
        for label, prog in (("st", ours), ("to_torch", conv)):
            try:
                got = _call(prog.module(), a, k)
            except Exception as e:  # noqa: BLE001
                if i == 0 or tep is not None:
                    return "wrong", f"{label} refuses input {i}: {type(e).__name__}: {str(e)[:80]}"
                notes.append(f"{label} refuses {i}")
                continue
            if not _same(got, want):
                return "wrong", f"{label} differs from eager on input {i}"
    for label, post in (("run_decompositions", lambda: conv.run_decompositions()),
                        ("unflatten", lambda: torch.export.unflatten(conv)(
                            *copy.deepcopy(args), **copy.deepcopy(kwargs)))):
        try:
            res = post()
            if label == "run_decompositions":
                got = _call(res.module(), args, kwargs)
                if not _same(got, eager):
                    return "wrong", "run_decompositions result differs"
        except Exception as e:  # noqa: BLE001
            if verbose:
                traceback.print_exc()
            return "post-fails", f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:90]}"
    if tep is None:
        return "torch-fails", f"ours passes; torch: {tfail}"
    return "both-pass", "; ".join(notes)


def main(argv):
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")]
    cases = _cases()
    rows = []
    for name, case in sorted(cases.items()):
        if names and name not in names:
            continue
        torch.manual_seed(0)
        cls, why = run_case(name, case, verbose)
        level = case.support_level.name
        rows.append((name, level, cls, why))
        print(f"{name:34} {level:17} {cls:13} {why}", flush=True)
    totals = {}
    for _, _, cls, _ in rows:
        totals[cls] = totals.get(cls, 0) + 1
    print("\ntotals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())),
          f"of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
