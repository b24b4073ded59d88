"""Which out-of-contract inputs each deployed artifact refuses: one markdown row per input
class (below the minimum, above the maximum, a static dim + 1, another dtype, one dim more
or less, a shared or derived size + 1, a transposed input that the program accepts) and one
column per artifact: ep.module(), ep.to_torch().module(), the converted program after
torch.export.save/load, st.to_aoti's package (each call in a subprocess: a package without
checks may crash), st.to_onnx under onnxruntime, st.to_executorch.  "ACCEPTS": ran an input
ep.module() refuses; "WRONG": differs from ep.module() on an input it accepts.

Run: .venv/bin/python benchmarks/bench_refusals.py MODEL [--onnx] [--et] [--no-aoti]
     [--raw-aoti]   (MODEL: a zoo name, or "pair": x, y: [b, 4], w: [2*b, 4];
                     --raw-aoti: torch._inductor.aoti_compile_and_package(ep.to_torch()))
"""
import copy, os, pickle, subprocess, sys, tempfile, time, warnings
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.filterwarnings("ignore")
import logging
logging.getLogger("torch.onnx").setLevel(logging.ERROR)
import torch
from torch.utils import _pytree

if sys.argv[1] == "--worker":
    runner = torch._inductor.aoti_load_package(sys.argv[2])
    args, kwargs = torch.load(sys.argv[3])
    try:
        with torch.no_grad():
            out = runner(*args, **kwargs)
        torch.save(out, sys.argv[3] + ".out")
        print("OK")
    except Exception as e:
        print("REFUSED", type(e).__name__, str(e)[:300].replace("\n", " "))
    sys.exit(0)

import safetrace as st
from benchmarks.zoo import by_name


class Pair(torch.nn.Module):
    def forward(self, x, y, w):
        return x + y + w.reshape(-1, 2, 4).sum(1)


def case_of(name):
    if name == "pair":
        b = st.Dim("b", min=1, max=64)
        args = (torch.randn(3, 4), torch.randn(3, 4), torch.randn(6, 4))
        return Pair(), args, {}, {"x": {0: b}, "y": {0: b}, "w": {0: 2 * b}}
    c = by_name(name).factory()
    return c.model, c.args, c.kwargs, c.dynamic_shapes


def classes(ep, args, kwargs):
    """(label, args, kwargs) of out-of-contract (and two in-contract) inputs."""
    leaves, spec = _pytree.tree_flatten((args, kwargs))
    out = [("example", args, kwargs)]

    def mk(i, t):
        l2 = list(leaves)
        l2[i] = t
        a, k = _pytree.tree_unflatten(l2, spec)
        return a, k
    from safetrace.exporter.contract import TensorInput
    for i, inp in enumerate(ep.contract.inputs):
        if not isinstance(inp, TensorInput):
            continue
        t = leaves[i]
        for d, dim in enumerate(inp.dims):
            shape = list(t.shape)
            if dim.kind == "static":
                shape[d] += 1
                out.append((f"in{i} static dim{d}+1", *mk(i, _like(t, shape))))
            elif dim.kind == "bind":
                s = ep.contract.symbol(dim.symbol)
                shape0 = list(shape)
                shape0[d] = 0 if s.checked_lo > 0 else None
                if shape0[d] is not None:
                    out.append((f"in{i} dim{d}=0 (< min)", *mk(i, _like(t, shape0))))
                if s.hi is not None and s.hi < 5000:
                    sh = list(shape); sh[d] = s.hi + 1
                    out.append((f"in{i} dim{d}=max+1", *mk(i, _like(t, sh))))
            if dim.kind in ("derived", "equal") or (dim.kind == "bind" and i > 0 and any(
                    isinstance(o, TensorInput) and any(x.size == dim.size for x in o.dims)
                    for o in ep.contract.inputs[:i])):
                sh = list(shape); sh[d] += 1
                out.append((f"in{i} dim{d}+1 (relation)", *mk(i, _like(t, sh))))
        other = torch.float64 if t.dtype != torch.float64 else torch.float32
        out.append((f"in{i} dtype {other}", *mk(i, t.to(other))))
        if t.dtype == torch.int64:
            out.append((f"in{i} dtype int32", *mk(i, t.to(torch.int32))))
        out.append((f"in{i} rank+1", *mk(i, t.unsqueeze(-1))))
        out.append((f"in{i} rank-1", *mk(i, t.reshape(-1) if t.dim() == 2 else t[0])))
        if t.dim() >= 2:
            nc = t.transpose(-1, -2).contiguous().transpose(-1, -2)
            out.append((f"in{i} non-contiguous", *mk(i, nc)))
    return out


def _like(t, shape):
    if t.dtype.is_floating_point:
        return torch.randn(shape, dtype=t.dtype)
    return torch.zeros(shape, dtype=t.dtype)


def run(fn, a, k):
    try:
        with torch.no_grad():
            return "ok", fn(*copy.deepcopy(a), **copy.deepcopy(k))
    except Exception as e:
        return "refuses", e


def verdict(status, got, want_status, want):
    if status != "ok":
        return "refuses"
    if want_status != "ok":
        return "ACCEPTS"
    g = [t for t in _pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    w = [t for t in _pytree.tree_leaves(want) if isinstance(t, torch.Tensor)]
    same = len(g) == len(w) and all(a.shape == b.shape and torch.allclose(
        a.float(), b.float(), rtol=1e-3, atol=1e-3) for a, b in zip(g, w))
    return "ok" if same else "WRONG"


def aoti_outcome(pkg, a, k, want_status, want, tmp):
    p = os.path.join(tmp, "in.pt")
    torch.save((a, k), p)
    r = subprocess.run([sys.executable, __file__, "--worker", pkg, p], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        return f"CRASH rc={r.returncode}"
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "?"
    if line.startswith("REFUSED"):
        err = r.stderr.strip().splitlines()
        msg = next((l for l in err if "Error" in l or "error" in l), "")
        return "refuses" + (f" [{msg[:140]}]" if msg else "")
    got = torch.load(p + ".out")
    return verdict("ok", got, want_status, want)


def main():
    name = sys.argv[1]
    flags = set(sys.argv[2:])
    model, args, kwargs, ds = case_of(name)
    with torch.no_grad():
        ep = st.export(model, args, kwargs, dynamic_shapes=ds)
    tep = ep.to_torch()
    tmp = tempfile.mkdtemp()
    torch.export.save(tep, os.path.join(tmp, "t.pt2"))
    loaded = torch.export.load(os.path.join(tmp, "t.pt2"))
    pkg = None
    if "--no-aoti" not in flags:
        t0 = time.time()
        if "--raw-aoti" in flags:
            pkg = torch._inductor.aoti_compile_and_package(ep.to_torch(), package_path=os.path.join(tmp, "m.pt2"))
        else:
            pkg = st.to_aoti(ep, os.path.join(tmp, "m.pt2"))
        print(f"# aoti compile {time.time() - t0:.1f}s", flush=True)
    sess = None
    if "--onnx" in flags:
        import onnxruntime as ort
        st.to_onnx(ep, os.path.join(tmp, "m.onnx"))
        sess = ort.InferenceSession(os.path.join(tmp, "m.onnx"))
    et = None
    if "--et" in flags:
        from executorch.runtime import Runtime
        try:
            st.to_executorch(ep, os.path.join(tmp, "m.pte"))
            et = Runtime.get().load_program(os.path.join(tmp, "m.pte")).load_method("forward")
        except Exception as e:
            print("# executorch:", type(e).__name__, str(e)[:200])
    ours = copy.deepcopy(ep.module())
    print(f"| {name} | input | ep.module | to_torch | save/load | AOTI | ONNX | ExecuTorch |")
    for label, a, k in classes(ep, args, kwargs):
        ws, want = run(ours, a, k)
        row = ["ok" if ws == "ok" else "refuses"]
        for fn in (tep.module(), loaded.module()):
            s, g = run(fn, a, k)
            row.append(verdict(s, g, ws, want))
        row.append(aoti_outcome(pkg, a, k, ws, want, tmp) if pkg else "-")
        if sess is not None:
            leaves = [t for t in _pytree.tree_leaves((a, k)) if isinstance(t, torch.Tensor)]
            try:
                got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), leaves)})
                row.append(verdict("ok", [torch.from_numpy(g) for g in got], ws, want))
            except Exception as e:
                row.append("refuses [" + str(e).replace("\n", " ")[:100] + "]")
        else:
            row.append("-")
        if et is not None:
            leaves = [t for t in _pytree.tree_leaves((a, k)) if isinstance(t, torch.Tensor)]
            try:
                got = et.execute(leaves)
                row.append(verdict("ok", list(got), ws, want))
            except Exception as e:
                row.append("refuses [" + str(e).replace("\n", " ")[:80] + "]")
        else:
            row.append("-")
        print(f"| {name} | {label} | " + " | ".join(row) + " |", flush=True)


main()
