"""One program for prefill and decode: tiny transformers models built from configs (random
weights, no downloads) exported with ``seq = Dim("seq", min=1)``, then 20 greedy tokens
compared with eager ``generate``.

transformers branches on ``q_length == 1`` (masking_utils ``allow_is_causal_skip``, sdpa's
``is_causal``); size splits (exporter/splits.py) keep seq == 1 in the declared space
instead of narrowing it to seq >= 2.
"""

import importlib
import importlib.util
import math
import os

import pytest
import torch

import safetrace as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if importlib.util.find_spec("transformers") is None:
    pytest.skip("needs transformers: pip install -c constraints.txt -e '.[dev]'",
                allow_module_level=True)


def __getattr__(name: str):
    """transformers' names, imported on first use (collecting the suite does not import
    transformers in every worker): ``transformers``, ``DynamicCache``,
    ``TorchExportableModuleWithStaticCache``."""
    if name == "transformers":
        return importlib.import_module("transformers")
    if name == "DynamicCache":
        return importlib.import_module("transformers").DynamicCache
    if name == "TorchExportableModuleWithStaticCache":
        return importlib.import_module("transformers.integrations.executorch") \
            .TorchExportableModuleWithStaticCache
    raise AttributeError(name)

VOCAB, CACHE, NEW = 128, 64, 20


_DEC = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128)
# family -> (config class, model class, config) — tiny, random weights
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", _DEC),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(_DEC, head_dim=8, sliding_window=16)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=32, n_layer=2, n_head=4,
                                                   n_positions=128)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", _DEC),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(_DEC, head_dim=8)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(_DEC, sliding_window=None)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(_DEC, num_local_experts=2,
                                                            num_experts_per_tok=1,
                                                            sliding_window=None)),
    "phi": ("PhiConfig", "PhiForCausalLM", dict(_DEC, num_key_value_heads=4)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", _DEC),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(_DEC, head_dim=8)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(_DEC, head_dim=8,
                                                             sliding_window=16)),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", _DEC),
    "granite": ("GraniteConfig", "GraniteForCausalLM", _DEC),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", _DEC),
    "opt": ("OPTConfig", "OPTForCausalLM", dict(hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                                                num_attention_heads=4, word_embed_proj_dim=32,
                                                max_position_embeddings=128)),
    # multi_query=True fails in eager too with the StaticCache wrapper (its cache is made
    # with num_attention_heads key/value heads)
    "falcon": ("FalconConfig", "FalconForCausalLM", dict(hidden_size=32, num_hidden_layers=2,
                                                         num_attention_heads=4,
                                                         new_decoder_architecture=False,
                                                         multi_query=False)),
}


def tiny(kind: str, **overrides) -> torch.nn.Module:
    config_cls, model_cls, config = FAMILIES[kind]
    torch.manual_seed(0)
    transformers = __getattr__("transformers")
    cfg = getattr(transformers, config_cls)(vocab_size=VOCAB, initializer_range=0.2,
                                            bos_token_id=0, eos_token_id=None, pad_token_id=0,
                                            **dict(config, **overrides))
    model = getattr(transformers, model_cls)(cfg).eval()
    model.generation_config.eos_token_id = None
    return model


def eager_tokens(model, prompt):
    # (the mask given: generate would otherwise mask every prompt token equal to pad_token_id)
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW,
                         min_new_tokens=NEW, do_sample=False, pad_token_id=0)
    return out[0, prompt.shape[1]:].tolist()


# -- StaticCache: the cache is the program's state (buffers written in place) -------------------
def export_static(model):
    model.generation_config.cache_implementation = "static"
    model.generation_config.use_cache = True
    wrapper = __getattr__("TorchExportableModuleWithStaticCache")(model, batch_size=1,
                                                                  max_cache_len=CACHE)
    seq = st.Dim("seq", min=1)
    prompt = torch.randint(0, VOCAB, (1, 5))
    ep = st.export(wrapper, (), {"input_ids": prompt, "cache_position": torch.arange(5)},
                   dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
    model.generation_config.cache_implementation = None
    return ep


def static_tokens(mod, prompt):
    n = prompt.shape[1]
    logits = mod(input_ids=prompt, cache_position=torch.arange(n))
    tokens = [int(logits[0, -1].argmax())]
    for pos in range(n, n + NEW - 1):
        logits = mod(input_ids=torch.tensor([[tokens[-1]]]), cache_position=torch.tensor([pos]))
        tokens.append(int(logits[0, -1].argmax()))
    return tokens


def check_static(kind):
    model = tiny(kind)
    ep = export_static(model)
    ranges = {ep.dim_names[str(k)]: (v.lower, v.upper) for k, v in ep.range_constraints.items()
              if str(k) in ep.dim_names}  # (OPT's 0-d position tensor: an unbacked size)
    # nothing narrowed; the cache's size bounds seq: its write (``index_copy_`` at
    # ``arange(seq) + length``, distinct indices into 64 slots) raises for every longer
    # prompt, in eager too (exporter/index_bounds.py; OPT's checks on the length it reads
    # say the same)
    assert ranges == {"seq": (1, CACHE)}
    if kind in ("llama", "gemma2", "gpt2"):
        assert "#   seq == 1" in str(ep)  # the q_length == 1 decision was split
    mod = ep.module()  # one module: its cache is reused by every call
    seen = set()
    for n in (7, 1):  # prompts of other lengths, one after the other on the same state
        prompt = torch.randint(0, VOCAB, (1, n))
        want = eager_tokens(model, prompt)
        seen.update(want)
        assert static_tokens(mod, prompt) == want, (kind, n)
    assert len(seen) > 1  # the comparison could fail
    prompt = torch.randint(0, VOCAB, (1, 9))
    got = mod(input_ids=prompt, cache_position=torch.arange(9))
    assert torch.allclose(got, model(prompt).logits, atol=1e-5)
    with pytest.raises(st.InputMismatchError):  # seq == 0: outside the declared space
        mod(input_ids=torch.zeros(1, 0, dtype=torch.long), cache_position=torch.arange(0))
    with pytest.raises(st.InputMismatchError):  # the same Dim, two sizes
        mod(input_ids=torch.zeros(1, 3, dtype=torch.long), cache_position=torch.arange(4))
    with pytest.raises(st.InputMismatchError):
        mod(input_ids=torch.zeros(1, 3), cache_position=torch.arange(3))
    _refuses_a_prompt_longer_than_the_cache(model, mod)


def _refuses_a_prompt_longer_than_the_cache(model, mod):
    """Eager writes the cache length, then raises IndexError at the cache write; the
    program refuses the prompt at its input check, its state untouched."""
    long = torch.zeros(1, CACHE + 1, dtype=torch.long)
    model.generation_config.cache_implementation = "static"
    wrapper = __getattr__("TorchExportableModuleWithStaticCache")(model, batch_size=1,
                                                                  max_cache_len=CACHE)
    model.generation_config.cache_implementation = None
    with pytest.raises(IndexError):
        wrapper(input_ids=long, cache_position=torch.arange(CACHE + 1))
    before = {k: v.clone() for k, v in mod.named_buffers()}  # (the cache and its length)
    assert any("cumulative_length" in k for k in before)
    with pytest.raises(st.InputMismatchError, match=rf"input_ids.shape\[1\] = {CACHE + 1}, "
                       rf"but it must be <= {CACHE} \(every larger size "):
        mod(input_ids=long, cache_position=torch.arange(CACHE + 1))
    assert all(torch.equal(v, before[k]) for k, v in mod.named_buffers())


# OPT with a StaticCache: its positions come from a 0-d tensor (an unbacked size), and sdpa's
# ``is_causal = q_length > 1 and attention_mask is None`` on it is a size test whose other
# side traces the same graph (exporter/splits.py ``same_either_way``): no check refuses the
# one-token decode
@pytest.mark.parametrize("kind", ["llama"] + [  # ~5 s each; -m slow runs the others
    pytest.param(k, marks=pytest.mark.slow) for k in FAMILIES if k != "llama"])
def test_static_cache_one_program_generates_like_eager(kind):
    check_static(kind)


# -- DynamicCache: the cache goes in and comes out as tensors --------------------------------
class WithDynamicCache(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, past_keys, past_values):
        cache = __getattr__("DynamicCache")()
        for i, (k, v) in enumerate(zip(past_keys, past_values)):
            cache.update(k, v, i)
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
        return (out.logits, [layer.keys for layer in cache.layers],
                [layer.values for layer in cache.layers])


def kv_shape(model):
    cfg = model.config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return cfg.num_hidden_layers, heads, dim


@pytest.mark.parametrize("kind", ["llama"] + [pytest.param(k, marks=pytest.mark.slow)
                                             for k in FAMILIES if k != "llama"])
def test_dynamic_cache_one_program_generates_like_eager(kind):
    model = tiny(kind)
    layers, heads, dim = kv_shape(model)

    def empty(n):
        return [torch.zeros(1, heads, n, dim) for _ in range(layers)]

    seq, past = st.Dim("seq", min=1), st.Dim("past", min=0)
    ep = st.export(WithDynamicCache(model), (torch.randint(0, VOCAB, (1, 5)), empty(3), empty(3)),
                   dynamic_shapes={"input_ids": {1: seq}, "past_keys": [{2: past}] * layers,
                                   "past_values": [{2: past}] * layers})
    assert "size split on `" in str(ep)
    ranges = {ep.dim_names[str(k)]: (v.lower, v.upper) for k, v in ep.range_constraints.items()
              if str(k) in ep.dim_names}  # (OPT's 0-d position tensor: an unbacked size)
    assert ranges == {"seq": (1, math.inf), "past": (0, math.inf)}  # nothing narrowed
    mod = ep.module()
    seen = set()
    for n in (7, 1):
        prompt = torch.randint(0, VOCAB, (1, n))
        logits, ks, vs = mod(prompt, empty(0), empty(0))
        tokens = [int(logits[0, -1].argmax())]
        for _ in range(NEW - 1):
            logits, ks, vs = mod(torch.tensor([[tokens[-1]]]), ks, vs)
            tokens.append(int(logits[0, -1].argmax()))
        want = eager_tokens(model, prompt)
        seen.update(want)
        assert tokens == want, (kind, n)
    assert len(seen) > 1  # the comparison could fail
    with pytest.raises(st.InputMismatchError):  # the past lengths must agree
        mod(torch.zeros(1, 1, dtype=torch.long), empty(2), empty(3))
    with pytest.raises(st.InputMismatchError):
        mod(torch.zeros(1, 0, dtype=torch.long), empty(0), empty(0))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_static_cache_program_lowers_to_onnx_without_torchs_retrace(kind, monkeypatch):
    """A static-cache program writes its cache in place; st.to_onnx makes the writes
    functional itself (interop/onnx_writes.py) instead of torch.onnx's retrace, and
    onnxruntime gives eager's prefill logits at other lengths (1 included) and refuses a
    prompt longer than the cache."""
    ort = pytest.importorskip("onnxruntime")
    from tests.interop.harness import count_retraces

    model = tiny(kind)
    ep = export_static(model)
    calls = count_retraces(monkeypatch)
    sess = ort.InferenceSession(st.to_onnx(ep, verbose=False).model_proto
                                .SerializeToString())
    assert calls == []
    for n in (7, 1):
        prompt = torch.randint(0, VOCAB, (1, n))
        got = sess.run(None, {"input_ids": prompt.numpy(),
                              "cache_position": torch.arange(n).numpy()})[0]
        with torch.no_grad():
            want = model(prompt).logits
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception):
        sess.run(None, {"input_ids": torch.zeros(1, CACHE + 1, dtype=torch.long).numpy(),
                        "cache_position": torch.arange(CACHE + 1).numpy()})


@pytest.mark.slow
def test_opt_static_cache_program_converts_and_lowers_to_onnx():
    """OPT's one program (its cache length read from data: one symbol, checked >= 0)
    converts with to_torch (20 tokens as eager, through torch's own module) and lowers to
    ONNX with eager's prefill logits."""
    ort = pytest.importorskip("onnxruntime")
    model = tiny("opt")
    ep = export_static(model)
    assert "seq == 1 traces the same graph as seq >= 2" in str(ep)  # no cond left
    tep = ep.to_torch()
    prompt = torch.randint(0, VOCAB, (1, 7))
    with torch.no_grad():
        assert static_tokens(tep.module(), prompt) == eager_tokens(model, prompt)
        want = model(prompt).logits
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        st.to_onnx(ep, f"{tmp}/opt.onnx")
        sess = ort.InferenceSession(f"{tmp}/opt.onnx")
        got = sess.run(None, {"input_ids": prompt.numpy(),
                              "cache_position": torch.arange(7).numpy()})[0]
    torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_opt_static_cache_refuses_a_prompt_longer_than_the_cache_before_running():
    """Eager raises IndexError for every prompt longer than the static cache (its write
    ``index_copy_`` at ``arange(seq) + cache_len``); OPT's program asserts ``cache_len >= 0``
    and ``seq + cache_len <= 64`` on the length it reads, so its contract bounds seq by 64:
    the input check refuses such a prompt before the cache length is written, in the
    program, in torch's program and in the ONNX model."""
    ort = pytest.importorskip("onnxruntime")
    model = tiny("opt")
    ep = export_static(model)
    assert "every larger size fails the program's run-time check" in ep.describe_contract()
    long = torch.zeros(1, CACHE + 1, dtype=torch.long)
    model.generation_config.cache_implementation = "static"
    wrapper = __getattr__("TorchExportableModuleWithStaticCache")(model, batch_size=1,
                                                                  max_cache_len=CACHE)
    with pytest.raises(IndexError):
        wrapper(input_ids=long, cache_position=torch.arange(CACHE + 1))
    mod = ep.module()
    before = {k: v.clone() for k, v in mod.state_dict().items()}
    with pytest.raises(st.InputMismatchError, match=rf"input_ids.shape\[1\] = {CACHE + 1}, "
                       rf"but it must be <= {CACHE} \(every larger size fails"):
        mod(input_ids=long, cache_position=torch.arange(CACHE + 1))
    assert all(torch.equal(v, before[k]) for k, v in mod.state_dict().items())
    prompt = torch.randint(0, VOCAB, (1, CACHE))  # the full cache still runs
    with torch.no_grad():
        torch.testing.assert_close(mod(input_ids=prompt, cache_position=torch.arange(CACHE)),
                                   model(prompt).logits, rtol=1e-4, atol=1e-4)
    tep = ep.to_torch()  # torch's program gets the bound too
    assert [(r.lower, r.upper) for r in tep.range_constraints.values() if r.lower == 1] \
        == [(1, CACHE)]
    sess = ort.InferenceSession(st.to_onnx(ep, verbose=False).model_proto.SerializeToString())
    with pytest.raises(Exception, match=rf"safetrace input check: input_ids.shape\[1\] must "
                       rf"be <= {CACHE}"):
        sess.run(None, {"input_ids": long.numpy(),
                        "cache_position": torch.arange(CACHE + 1).numpy()})
