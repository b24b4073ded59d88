"""The kinds of inputs of the transformers coverage sweep (`benchmarks/bench_hf_sweep.py`):
one builder per kind (token ids, encoder-decoder token ids, images, fixed-resolution images,
raw audio, filter-bank frames) makes a `Sweep` from a tiny config at run time (random
weights, no downloads), and the shared tiny config dicts."""

from __future__ import annotations

import torch

from safetrace import Dim

VOCAB = 96


# -- the models ----------------------------------------------------------------------------
class Sweep:
    """One architecture: model, inputs at (batch, size), the spec made from two dims."""

    def __init__(self, model, make, spec, example, others, outside, size_dim):
        self.model, self.make, self.spec = model.eval(), make, spec
        self.example, self.others, self.outside = example, others, outside
        self.size_dim = size_dim        # (min, max) of the named size dim


def _cfg(cls, **kw):
    import transformers
    cfg = getattr(transformers, cls)(**kw)
    if hasattr(cfg, "use_cache"):
        cfg.use_cache = False
    return cfg


def _model(cls, cfg):
    import transformers
    torch.manual_seed(0)
    return getattr(transformers, cls)(cfg)


def _tok(b, t):
    g = torch.Generator().manual_seed(b * 1000 + t)
    return torch.randint(3, VOCAB, (b, t), generator=g)


def _mask(b, t):
    m = torch.ones(b, t, dtype=torch.long)
    if t > 2 and b > 0:
        m[0, -2:] = 0
    return m


TEXT_SIZES = dict(example=(2, 12), others=[(1, 9), (3, 20), (0, 5)], outside=(2, 65))


def text(cls_model, cls_cfg, mask=True, seq=(2, 64), sizes=TEXT_SIZES, **kw):
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, t):
            d = {"input_ids": _tok(b, t)}
            if mask:
                d["attention_mask"] = _mask(b, t)
            return d

        def spec(batch, size):
            s = {"input_ids": {0: batch, 1: size}}
            if mask:
                s["attention_mask"] = {0: batch, 1: size}
            return s
        return Sweep(model, make, spec, size_dim=seq, **sizes)
    return build


def seq2seq(cls_model, cls_cfg, **kw):
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, t):
            return {"input_ids": _tok(b, t), "attention_mask": _mask(b, t),
                    "decoder_input_ids": _tok(b, t // 2 + 1)}

        def spec(batch, size):
            dec = Dim.AUTO if size is Dim.AUTO else Dim("dec", min=2, max=64)
            return {"input_ids": {0: batch, 1: size}, "attention_mask": {0: batch, 1: size},
                    "decoder_input_ids": {0: batch, 1: dec}}
        return Sweep(model, make, spec, size_dim=(2, 64), **TEXT_SIZES)
    return build


def image(cls_model, cls_cfg, hw=(32, 64, 32), sizes=None, channels=3, k_min=1, **kw):
    """hw: (example size, max size, step): the size dim is H = W = step * k, k >= k_min."""
    ex, hi, step = hw

    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, s):
            g = torch.Generator().manual_seed(b * 1000 + s)
            return {"pixel_values": torch.randn(b, channels, s, s, generator=g)}

        def spec(batch, size):
            if size is Dim.AUTO:
                return {"pixel_values": {0: batch, 2: size, 3: size}}
            k = Dim("k", min=k_min, max=hi // step)
            return {"pixel_values": {0: batch, 2: step * k, 3: step * k}}
        others = sizes or [(1, ex + step), (3, ex), (0, ex)]
        return Sweep(model, make, spec, example=(2, ex), others=others,
                     outside=(2, ex + step // 2), size_dim=None)
    return build


def fixed_image(cls_model, cls_cfg, res=32, pair=False, **kw):
    """Vision transformers with learned positions at one resolution: a batch dim only.
    pair: the config takes image_size as [H, W]."""
    def build():
        model = _model(cls_model, _cfg(cls_cfg, image_size=[res, res] if pair else res, **kw))

        def make(b, s):
            g = torch.Generator().manual_seed(b * 1000 + s)
            return {"pixel_values": torch.randn(b, 3, s, s, generator=g)}

        def spec(batch, size):
            return {"pixel_values": {0: batch}}
        return Sweep(model, make, spec, example=(2, res), others=[(1, res), (3, res), (0, res)],
                     outside=(2, res + 8), size_dim=None)
    return build


def audio(cls_model, cls_cfg, **kw):
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, n):
            g = torch.Generator().manual_seed(b * 1000 + n)
            return {"input_values": torch.randn(b, n, generator=g)}

        def spec(batch, size):
            return {"input_values": {0: batch, 1: size}}
        return Sweep(model, make, spec, example=(2, 400), others=[(1, 320), (3, 555), (0, 400)],
                     outside=(2, 20), size_dim=(100, 4000))
    return build


def features(cls_model, cls_cfg, n_feat=16, **kw):
    """Speech models on filter-bank frames (batch, frames, features): frames is the size dim."""
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, n):
            g = torch.Generator().manual_seed(b * 1000 + n)
            return {"input_features": torch.randn(b, n, n_feat, generator=g),
                    "attention_mask": _mask(b, n),
                    "decoder_input_ids": _tok(b, n // 4 + 1)}

        def spec(batch, size):
            dec = Dim.AUTO if size is Dim.AUTO else Dim("dec", min=2, max=64)
            return {"input_features": {0: batch, 1: size}, "attention_mask": {0: batch, 1: size},
                    "decoder_input_ids": {0: batch, 1: dec}}
        return Sweep(model, make, spec, example=(2, 24), others=[(1, 16), (3, 40), (0, 24)],
                     outside=(2, 65), size_dim=(8, 64))
    return build


_BERT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=70)
_DEC = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=64)
_S2S = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
            decoder_start_token_id=2)
_VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            patch_size=8)
_W2V = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2),
            conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
