"""LLMs from export to runtimes: one prefill+decode program per model (StaticCache,
``seq = Dim(min=1, max=64)``), then each deploy path, in one table.

Columns: the export (seconds); greedy tokens of ``ep.module()`` against eager ``generate``
(20 tokens, a 7-token prompt); and, for ``st.to_onnx`` (onnxruntime), ``st.to_aoti``
(AOTInductor) and ``st.to_executorch`` (the ExecuTorch runtime), whether the artifact is
made and whether its first call (the prefill of the 7-token prompt) gives eager's logits.

``--aoti`` prints a table of AOTInductor packages only: ``st.to_aoti(ep)`` and torch's
``torch._inductor.aoti_compile_and_package(ep.to_torch())`` side by side, each: compile
seconds, the prefill against eager, 20 greedy tokens of one loaded package against eager
``generate``, and prompts of 0 and 65 tokens (outside ``seq``'s [1, 64]) refused.

``--more`` prints a second table per family: a DynamicCache prefill+decode program (the
cache in and out as tensors, ``seq = Dim(min=1)``, ``past = Dim(min=0)``), its 20 greedy
tokens against eager; and ``model(ids, mask, use_cache=False)`` (a bool keyword input,
``batch`` and ``seq`` dynamic) through ``to_torch().run_decompositions()``, ONNX and
ExecuTorch, each compared with eager's logits at another batch and length.

Run: .venv/bin/python benchmarks/bench_llm_deploy.py [--no-aoti] [--more] [--aoti] [llama gemma2 ...]
(tiny configs with random weights, built at run time; AOTInductor compiles take ~1-2 min.)
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import safetrace as st  # noqa: E402
from tests.llm import test_generate as G  # noqa: E402


def _export(model):
    model.generation_config.cache_implementation = "static"
    model.generation_config.use_cache = True
    wrapper = G.TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=G.CACHE)
    seq = st.Dim("seq", min=1, max=G.CACHE)
    prompt = torch.randint(0, G.VOCAB, (1, 5))
    ep = st.export(wrapper, (), {"input_ids": prompt, "cache_position": torch.arange(5)},
                   dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
    model.generation_config.cache_implementation = None
    return ep



def _onnx_close(ep, path: str, inputs: tuple, want: torch.Tensor) -> str:
    """st.to_onnx of `ep` at `path`, run by onnxruntime on `inputs` against eager's `want`."""
    import onnxruntime as ort
    st.to_onnx(ep, path)
    sess = ort.InferenceSession(path)
    feeds = dict(zip([i.name for i in sess.get_inputs()], [t.numpy() for t in inputs]))
    return _close(torch.from_numpy(sess.run(None, feeds)[0]), want)

def _close(got, want) -> str:
    got = torch.as_tensor(got)
    return "match" if got.shape == want.shape and torch.allclose(got, want, atol=1e-4) \
        else "MISMATCH"


def _fails(exc: Exception) -> str:
    return f"fails ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:60]})"


def _try(fn) -> str:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the cell names the failure
        return _fails(exc)


# a family with a config setting: mixtral's default experts (grouped_mm) call torch.histc and
# transformers' own grouped_mm_fallback op, which neither ExecuTorch nor ONNX has; batched_mm
# gathers each token's expert weights (static shapes, core ops)
VARIANTS = {"mixtral_batched_mm": ("mixtral", {"experts_implementation": "batched_mm"})}


def row(kind: str, tmp: str, aoti_on: bool = True) -> list[str]:
    family, overrides = VARIANTS.get(kind, (kind, {}))
    model = G.tiny(family, **overrides)
    t0 = time.perf_counter()
    try:
        ep = _export(model)
    except Exception as exc:  # noqa: BLE001 - the row names the failure
        return [kind, "-", _fails(exc), "no", "-", "-", "-", "-"]
    secs = time.perf_counter() - t0
    ranges = {ep.dim_names[str(k)]: (v.lower, v.upper) for k, v in ep.range_constraints.items()
              if str(k) in ep.dim_names}  # (OPT's 0-d position tensor: an unbacked size)
    seq1 = "yes" if ranges.get("seq", (None,))[0] == 1 else f"NARROWED {ranges}"
    prompt = torch.randint(0, G.VOCAB, (1, 7))
    same = _try(lambda: "identical" if G.static_tokens(ep.module(), prompt) ==
                G.eager_tokens(model, prompt) else "DIFFER")
    ids, pos = prompt, torch.arange(7)
    with torch.no_grad():
        want = model(prompt).logits

    def onnx() -> str:
        return _onnx_close(ep, f"{tmp}/{kind}.onnx", (ids, pos), want)

    def aoti() -> str:
        if not aoti_on:
            return "not run"
        t = time.perf_counter()
        pkg = st.to_aoti(ep, f"{tmp}/{kind}.pt2")
        took = time.perf_counter() - t
        runner = torch._inductor.aoti_load_package(pkg)
        with torch.no_grad():
            return f"{_close(runner(input_ids=ids, cache_position=pos), want)} ({took:.0f} s)"

    def executorch() -> str:
        from executorch.runtime import Runtime
        path = f"{tmp}/{kind}.pte"
        st.to_executorch(ep, path)
        method = Runtime.get().load_program(path).load_method("forward")
        return _close(method.execute([ids, pos])[0], want)

    # one program: the same ep.module() ran the prefill and every decode step above
    one = "no" if same.startswith("fails") else "yes"
    return [kind, f"{secs:.2f}", seq1, one, same,
            _try(executorch), _try(onnx), _try(aoti)]


def dynamic_cache_tokens(model) -> str:
    """20 greedy tokens of one DynamicCache program (prompts of 7 and 1) against eager."""
    layers, heads, dim = G.kv_shape(model)

    def empty(n):
        return [torch.zeros(1, heads, n, dim) for _ in range(layers)]

    seq, past = st.Dim("seq", min=1), st.Dim("past", min=0)
    ep = st.export(G.WithDynamicCache(model), (torch.randint(0, G.VOCAB, (1, 5)), empty(3),
                                               empty(3)),
                   dynamic_shapes={"input_ids": {1: seq}, "past_keys": [{2: past}] * layers,
                                   "past_values": [{2: past}] * layers})
    mod = ep.module()
    for n in (7, 1):
        prompt = torch.randint(0, G.VOCAB, (1, n))
        logits, ks, vs = mod(prompt, empty(0), empty(0))
        tokens = [int(logits[0, -1].argmax())]
        for _ in range(G.NEW - 1):
            logits, ks, vs = mod(torch.tensor([[tokens[-1]]]), ks, vs)
            tokens.append(int(logits[0, -1].argmax()))
        if tokens != G.eager_tokens(model, prompt):
            return f"DIFFER (prompt {n})"
    return "identical"


def bool_keyword_cells(model, kind: str, tmp: str) -> list[str]:
    """``model(ids, mask, use_cache=False)``: export, then run_decompositions / ONNX /
    ExecuTorch, each against eager's logits at batch 3, length 7 (exported at 2 x 5)."""
    batch, seq = st.Dim("batch", min=1, max=8), st.Dim("seq", min=1, max=G.CACHE)
    ids, mask = torch.randint(0, G.VOCAB, (2, 5)), torch.ones(2, 5, dtype=torch.long)
    try:
        # (the mask by keyword: gpt2's and falcon's second parameter is the cache)
        spec = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq},
                "use_cache": None}
        ep = st.export(model, (ids,), {"attention_mask": mask, "use_cache": False},
                       dynamic_shapes=spec)
    except Exception as exc:  # noqa: BLE001 - the row names the failure
        return [_fails(exc)] * 4
    ids, mask = torch.randint(0, G.VOCAB, (3, 7)), torch.ones(3, 7, dtype=torch.long)
    mask[1, :2] = 0  # one row left-padded
    with torch.no_grad():
        want = model(ids, attention_mask=mask, use_cache=False).logits

    def program() -> str:
        with torch.no_grad():
            return _close(ep.module()(ids, attention_mask=mask, use_cache=False).logits, want)

    def decompose() -> str:
        tep = ep.to_torch().run_decompositions()
        with torch.no_grad():
            return _close(tep.module()(ids, attention_mask=mask, use_cache=False).logits, want)

    def onnx() -> str:
        return _onnx_close(ep, f"{tmp}/{kind}-bool.onnx", (ids, mask), want)

    def executorch() -> str:
        from executorch.runtime import Runtime
        path = f"{tmp}/{kind}-bool.pte"
        st.to_executorch(ep, path)
        method = Runtime.get().load_program(path).load_method("forward")
        return _close(method.execute([ids, mask, False])[0], want)

    return [_try(program), _try(decompose), _try(onnx), _try(executorch)]


def more_row(kind: str, tmp: str) -> list[str]:
    family, overrides = VARIANTS.get(kind, (kind, {}))
    model = G.tiny(family, **overrides)
    return [kind, _try(lambda: dynamic_cache_tokens(model)), *bool_keyword_cells(model, kind, tmp)]


_REFUSES = """
import sys, torch
runner = torch._inductor.aoti_load_package(sys.argv[1])
n = int(sys.argv[2])
try:
    with torch.no_grad():
        runner(input_ids=torch.zeros(1, n, dtype=torch.long), cache_position=torch.arange(n))
except Exception as exc:
    print("refused", type(exc).__name__)
else:
    print("RUNS")
"""


def _refuses(pkg: str, n: int) -> str:
    """Whether the package at `pkg` refuses a prompt of `n` tokens (outside seq's [1, 64]),
    in a child process: a package without the check may crash its process."""
    import signal
    import subprocess

    out = subprocess.run([sys.executable, "-c", _REFUSES, pkg, str(n)], capture_output=True,
                         text=True, timeout=600)
    if out.returncode < 0:
        return f"CRASH ({signal.Signals(-out.returncode).name})"
    if out.returncode:
        return f"CRASH (exit {out.returncode})"
    words = out.stdout.split()
    return f"refused ({words[1]})" if words[:1] == ["refused"] else "RUNS"


def aoti_cells(ep, model, make, tmp: str, tag: str) -> list[str]:
    """One AOTInductor package of `ep` made by `make(path)`: compile seconds, the prefill's
    logits against eager, 20 greedy tokens against eager ``generate`` (the cache is the
    package's state: one loaded runner does the prefill and every decode step), and
    prompts of 0 and 65 tokens (out of ``seq``'s [1, 64]) refused."""
    t = time.perf_counter()
    try:
        pkg = make(f"{tmp}/{tag}.pt2")
    except Exception as exc:  # noqa: BLE001 - the row names the failure
        return [_fails(exc)] + ["-"] * 4
    took = time.perf_counter() - t
    prompt = torch.randint(0, G.VOCAB, (1, 7))
    with torch.no_grad():
        want = model(prompt).logits
    load = torch._inductor.aoti_load_package

    def prefill() -> str:
        with torch.no_grad():
            return _close(load(pkg)(input_ids=prompt, cache_position=torch.arange(7)), want)

    def tokens() -> str:
        with torch.no_grad():
            got = G.static_tokens(load(pkg), prompt)
        return "identical" if got == G.eager_tokens(model, prompt) else "DIFFER"

    return [f"{took:.0f}", _try(prefill), _try(tokens), _try(lambda: _refuses(pkg, 0)),
            _try(lambda: _refuses(pkg, G.CACHE + 1))]


def aoti_row(kind: str, tmp: str) -> list[str]:
    """``--aoti``: ``st.to_aoti(ep)`` and torch's own ``aoti_compile_and_package`` of
    ``ep.to_torch()``, each checked as `aoti_cells` says."""
    family, overrides = VARIANTS.get(kind, (kind, {}))
    model = G.tiny(family, **overrides)
    ep = _export(model)

    def ours(path):
        return st.to_aoti(ep, path)

    def torchs(path):
        return torch._inductor.aoti_compile_and_package(ep.to_torch(), package_path=path)

    return [kind, *aoti_cells(ep, model, ours, tmp, f"{kind}-st"),
            *aoti_cells(ep, model, torchs, tmp, f"{kind}-torch")]


def main(kinds: list[str]) -> None:
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    aoti_on = "--no-aoti" not in kinds
    more = "--more" in kinds
    aoti = "--aoti" in kinds
    kinds = [k for k in kinds if not k.startswith("--")]
    if aoti:
        cells = "compile s | prefill vs eager | 20 tokens vs eager | seq 0 | seq 65"
        print(f"| model | st.to_aoti: {cells} | aoti_compile_and_package(ep.to_torch()): "
              f"{cells} |")
        print("|---" * 11 + "|")
        with tempfile.TemporaryDirectory() as tmp:
            for kind in kinds or ["llama", "gemma2", "gpt2"]:
                print("| " + " | ".join(aoti_row(kind, tmp)) + " |", flush=True)
        return
    if more:
        print("| model | DynamicCache: 20 tokens vs eager | use_cache=False: ep.module() "
              "| run_decompositions | ONNX | ExecuTorch |")
        print("|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            for kind in kinds or ["llama", "gemma2", "gpt2"]:
                print("| " + " | ".join(more_row(kind, tmp)) + " |", flush=True)
        return
    print("| model | export s | prefill seq>=1 | one program | 20 tokens vs eager | ExecuTorch "
          "| ONNX | AOTInductor (compile s) |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds or ["llama", "gemma2", "gpt2"]:
            print("| " + " | ".join(row(kind, tmp, aoti_on)) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
