"""An LLM as one prefill + decode program: export, save, load in a fresh process, generate.

A llama-style model from a config (random weights, no download) with a static KV cache is
exported once with `seq = Dim("seq", min=1)`: the same program takes the prompt (seq > 1)
and then one token at a time (seq == 1), its cache held as the program's buffers.  The
program is saved, loaded by a fresh Python process (loading runs no code from the file),
and its greedy tokens are compared with eager `generate`.

Run: python examples/llm_generate.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import torch

import safetrace as st

LOAD_AND_GENERATE = r"""
import sys, torch, safetrace as st
ep = st.load(sys.argv[1])
prompt = torch.tensor([[int(t) for t in sys.argv[2].split(",")]])
mod = ep.module()                        # one module: its cache is reused call after call
n = prompt.shape[1]
logits = mod(input_ids=prompt, cache_position=torch.arange(n))          # prefill
tokens = [int(logits[0, -1].argmax())]
for pos in range(n, n + int(sys.argv[3]) - 1):                          # decode
    logits = mod(input_ids=torch.tensor([[tokens[-1]]]), cache_position=torch.tensor([pos]))
    tokens.append(int(logits[0, -1].argmax()))
print(",".join(map(str, tokens)))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="folder for llama.st (default: a temp dir)")
    parser.add_argument("--tokens", type=int, default=20)
    ns = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, eos_token_id=None)
    model = transformers.LlamaForCausalLM(cfg).eval()
    model.generation_config.cache_implementation = "static"
    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=64)

    seq = st.Dim("seq", min=1)  # prefill (seq > 1) and decode (seq == 1): one program
    prompt = torch.randint(0, 128, (1, 5))
    ep = st.export(wrapper, (), {"input_ids": prompt, "cache_position": torch.arange(5)},
                   dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
    print(ep.describe_contract())

    out = pathlib.Path(ns.out or tempfile.mkdtemp())
    path = out / "llama.st"
    st.save(ep, path)
    print(f"saved {path} ({path.stat().st_size} bytes)")

    # a fresh process loads the file and generates
    run = subprocess.run([sys.executable, "-c", LOAD_AND_GENERATE, str(path),
                          ",".join(map(str, prompt[0].tolist())), str(ns.tokens)],
                         capture_output=True, text=True, check=True)
    tokens = [int(t) for t in run.stdout.strip().split(",")]

    model.generation_config.cache_implementation = None
    eager = model.generate(prompt, max_new_tokens=ns.tokens, min_new_tokens=ns.tokens,
                           do_sample=False, pad_token_id=0)[0, prompt.shape[1]:].tolist()
    assert tokens == eager, (tokens, eager)
    print(f"{ns.tokens} greedy tokens from the loaded program match eager generate: {tokens}")

    # outside the declared space: refused before computing
    try:
        st.load(path).module()(input_ids=torch.zeros(1, 0, dtype=torch.long),
                               cache_position=torch.arange(0))
    except st.InputMismatchError as err:
        print(f"an empty prompt is refused: {str(err).splitlines()[0]}")
    else:
        raise AssertionError("an empty prompt was accepted")


if __name__ == "__main__":
    main()
