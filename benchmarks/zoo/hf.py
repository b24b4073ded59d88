"""transformers architectures of the zoo: tiny configs, random weights, no downloads."""

from __future__ import annotations

import torch

from safetrace import Dim

from benchmarks.zoo import Case, Entry

VOCAB = 96


def _tok(b, t, vocab=VOCAB):
    g = torch.Generator().manual_seed(b * 1000 + t)
    return torch.randint(3, vocab, (b, t), generator=g)


def _mask(b, t):
    m = torch.ones(b, t, dtype=torch.long)
    if t > 2:
        m[0, -2:] = 0          # some left-over padding in the first row
    return m


def _text(model, sizes, outside, *, mask=True, seq_max=64, seq_min=2, extra=None):
    """Case for a model called as model(input_ids=..., attention_mask=...)."""
    batch, seq = Dim("batch", min=1, max=64), Dim("seq", min=seq_min, max=seq_max)

    def inputs(b, t):
        kw = {"input_ids": _tok(b, t)}
        if mask:
            kw["attention_mask"] = _mask(b, t)
        if extra:
            kw.update(extra(b, t))
        return (), kw

    spec = {"input_ids": {0: batch, 1: seq}}
    if mask:
        spec["attention_mask"] = {0: batch, 1: seq}
    ex, o1, o2 = (inputs(*s) for s in sizes)
    return Case(model.eval(), ex[0], ex[1], spec, [o1, o2], outside=inputs(*outside))


def _cfg(cls, **kw):
    import transformers
    cfg = getattr(transformers, cls)(**kw)
    cfg.use_cache = False
    return cfg


SIZES = [(2, 12), (3, 7), (1, 20)]


def bert() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BertConfig", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    return _text(tf.BertModel(cfg, add_pooling_layer=True), SIZES, (2, 65))


def distilbert() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("DistilBertConfig", vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4,
               hidden_dim=64, max_position_embeddings=64)
    return _text(tf.DistilBertModel(cfg), SIZES, (2, 65))


def gpt2() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("GPT2Config", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return _text(tf.GPT2LMHeadModel(cfg), SIZES, (2, 65))


def _decoder(cls_cfg, cls_model, **extra) -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg(cls_cfg, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
               max_position_embeddings=64, **extra)
    return _text(getattr(tf, cls_model)(cfg), SIZES, (2, 65))


def llama() -> Case:
    return _decoder("LlamaConfig", "LlamaForCausalLM")


def mistral() -> Case:
    return _decoder("MistralConfig", "MistralForCausalLM", sliding_window=None)


def qwen2() -> Case:
    return _decoder("Qwen2Config", "Qwen2ForCausalLM")


def opt() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("OPTConfig", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32,
               max_position_embeddings=64)
    return _text(tf.OPTForCausalLM(cfg), SIZES, (2, 65))


def _t5cfg():
    return _cfg("T5Config", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                decoder_start_token_id=0)


def t5_encoder() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    return _text(tf.T5EncoderModel(_t5cfg()), SIZES, (2, 1))


def t5() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    case = _text(tf.T5Model(_t5cfg()), SIZES, (2, 1),
                 extra=lambda b, t: {"decoder_input_ids": _tok(b, t // 2 + 1)})
    case.dynamic_shapes["decoder_input_ids"] = {0: case.dynamic_shapes["input_ids"][0],
                                                1: Dim("dec_seq", min=2, max=64)}
    return case


def bart() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BartConfig", vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
               encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
               decoder_ffn_dim=64, max_position_embeddings=64)
    return _text(tf.BartModel(cfg), SIZES, (2, 65))


def vit() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("ViTConfig", image_size=32, patch_size=8, num_channels=3, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    batch = Dim("batch", min=1, max=256)
    r = torch.randn
    return Case(tf.ViTModel(cfg).eval(), (), {"pixel_values": r(2, 3, 32, 32)},
                {"pixel_values": {0: batch}},
                [((), {"pixel_values": r(3, 3, 32, 32)}), ((), {"pixel_values": r(1, 3, 32, 32)})],
                outside=((), {"pixel_values": r(2, 3, 32, 40)}))


def whisper_encoder() -> Case:
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("WhisperConfig", vocab_size=VOCAB, num_mel_bins=16, d_model=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, encoder_layers=2,
               encoder_attention_heads=4, decoder_layers=1, decoder_attention_heads=4,
               encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=30,
               max_target_positions=32)
    enc = tf.WhisperModel(cfg).get_encoder()
    batch = Dim("batch", min=1, max=64)
    r = torch.randn
    return Case(enc.eval(), (), {"input_features": r(2, 16, 60)},
                {"input_features": {0: batch}},
                [((), {"input_features": r(3, 16, 60)}), ((), {"input_features": r(1, 16, 60)})],
                outside=((), {"input_features": r(2, 16, 62)}))


def _hf(name, fn, fast=False):
    return Entry(name, fn, fast=fast, family="transformers")


ENTRIES = [
    _hf("bert", bert, fast=True),
    _hf("distilbert", distilbert),
    _hf("gpt2", gpt2),
    _hf("llama", llama),
    _hf("mistral", mistral),
    _hf("qwen2", qwen2),
    _hf("opt", opt),
    _hf("t5_encoder", t5_encoder),
    _hf("t5", t5),
    _hf("bart", bart),
    _hf("vit", vit),
    _hf("whisper_encoder", whisper_encoder),
]
