"""transformers architectures (tiny configs, random weights, offline); ex
benchmarks/sweep_hf.py. Each runs with dynamic batch and, where it has one, sequence length,
image size or audio length as named Dims. They are the slowest cases (``-m slow``)."""

from __future__ import annotations

import os

import torch

from safetrace import Dim
from tests.conformance.checker import Case
from tests.conformance.inputs import gen, rn

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

V = 96
SIZES = [(2, 12), (3, 7), (1, 20)]      # (batch, seq): example, two others


def _tok(b, t, vocab=V):
    return torch.randint(3, vocab, (b, t), generator=gen("tok", b, t))


def _mask(b, t):
    m = torch.ones(b, t, dtype=torch.long)
    if t > 2:
        m[0, -2:] = 0          # some left-over padding in the first row
    return m


def _tf():
    import transformers
    return transformers


def _cfg(cls, **kw):
    cfg = getattr(_tf(), cls)(**kw)
    if hasattr(cfg, "use_cache"):
        cfg.use_cache = False
    return cfg


def text(model, *, mask=True, sizes=SIZES, seq_min=2, seq_max=64, extra=None, ids="input_ids",
         static_seq=False, dec=None):
    """model(input_ids=..., attention_mask=...[, extra]) with dynamic batch and seq."""
    batch = Dim("batch", min=1, max=64)
    seq = None if static_seq else Dim("seq", min=seq_min, max=seq_max)

    def inputs(b, t):
        kw = {ids: _tok(b, t)}
        if mask:
            kw["attention_mask"] = _mask(b, t)
        if dec:
            kw["decoder_input_ids"] = _tok(b, max(t // 2 + 1, 2))
        if extra:
            kw.update(extra(b, t))
        return (), kw

    spec = {ids: {0: batch, 1: seq} if seq else {0: batch}}
    if mask:
        spec["attention_mask"] = dict(spec[ids])
    if dec:
        spec["decoder_input_ids"] = {0: batch, 1: Dim("dec_seq", min=2, max=64)}
    if static_seq:
        sizes = [(b, sizes[0][1]) for b, _ in sizes]
    return Case(model.eval(), inputs, sizes[0], spec, list(sizes[1:]))


def image(model, *, c=3, hw=(32, 32), others_hw=((48, 40), (64, 64)), dyn_hw=True,
          key="pixel_values", hw_min=16, hw_max=512, mult=None):
    """model(pixel_values=...) with dynamic batch and (optionally) H, W."""
    batch = Dim("batch", min=1, max=64)
    spec = {0: batch}
    if dyn_hw:
        if mult:
            h, w = Dim("h", min=1, max=hw_max // mult), Dim("w", min=1, max=hw_max // mult)
            spec.update({2: mult * h, 3: mult * w})
        else:
            spec.update({2: Dim("h", min=hw_min, max=hw_max), 3: Dim("w", min=hw_min, max=hw_max)})
    else:
        others_hw = (hw, hw)

    def inp(b, h, w):
        return (), {key: torch.randn(b, c, h, w, generator=gen("img", b, h, w))}

    return Case(model.eval(), inp, (2, *hw), {key: spec},
                [(3, *others_hw[0]), (1, *others_hw[1])])


def audio(model, *, n=400, others=(560, 320), key="input_values", n_min=200, n_max=4000):
    batch, ln = Dim("batch", min=1, max=64), Dim("samples", min=n_min, max=n_max)

    def inp(b, t):
        return (), {key: torch.randn(b, t, generator=gen("audio", b, t))}

    return Case(model.eval(), inp, (2, n), {key: {0: batch, 1: ln}}, [(3, others[0]), (1, others[1])])


# -- text encoders ------------------------------------------------------------------------
BERTISH = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=80)


def _enc(cfg_cls, model_cls, mask=True, **kw):
    def f():
        torch.manual_seed(0)
        cfg = _cfg(cfg_cls, **{**BERTISH, **kw})
        return text(getattr(_tf(), model_cls)(cfg), mask=mask)
    return f


def albert():
    torch.manual_seed(0)
    cfg = _cfg("AlbertConfig", **BERTISH, embedding_size=16)
    return text(_tf().AlbertModel(cfg))


def mobilebert():
    torch.manual_seed(0)
    cfg = _cfg("MobileBertConfig", **{**BERTISH, "hidden_size": 32}, embedding_size=16,
               intra_bottleneck_size=16, true_hidden_size=16, num_feedforward_networks=2)
    return text(_tf().MobileBertModel(cfg))


def funnel():
    torch.manual_seed(0)
    cfg = _cfg("FunnelConfig", vocab_size=V, block_sizes=[1, 1], d_model=32, n_head=4,
               d_head=8, d_inner=64, num_decoder_layers=1)
    return text(_tf().FunnelModel(cfg), static_seq=True)  # list(range(seq_len)) in the model


def mpnet():
    torch.manual_seed(0)
    cfg = _cfg("MPNetConfig", **{**BERTISH, "max_position_embeddings": 128},
               relative_attention_num_buckets=8)
    return text(_tf().MPNetModel(cfg))


def deberta():
    torch.manual_seed(0)
    cfg = _cfg("DebertaConfig", **BERTISH, relative_attention=True, max_relative_positions=16,
               pos_att_type=["c2p", "p2c"])
    return text(_tf().DebertaModel(cfg))


def deberta_v2():
    torch.manual_seed(0)
    cfg = _cfg("DebertaV2Config", **BERTISH, relative_attention=True, position_buckets=8,
               max_relative_positions=16, pos_att_type=["c2p", "p2c"], norm_rel_ebd="layer_norm",
               share_att_key=True)
    return text(_tf().DebertaV2Model(cfg))


def squeezebert():
    torch.manual_seed(0)
    cfg = _cfg("SqueezeBertConfig", **BERTISH, embedding_size=32, q_groups=2, k_groups=2,
               v_groups=2, post_attention_groups=2, intermediate_groups=2, output_groups=2)
    return text(_tf().SqueezeBertModel(cfg))


def longformer():
    torch.manual_seed(0)
    cfg = _cfg("LongformerConfig", **{**BERTISH, "max_position_embeddings": 200},
               attention_window=[8, 8])
    return text(_tf().LongformerModel(cfg), sizes=[(2, 16), (3, 8), (1, 24)])


def bigbird():
    torch.manual_seed(0)
    cfg = _cfg("BigBirdConfig", **BERTISH, attention_type="original_full")
    return text(_tf().BigBirdModel(cfg))


def layoutlm():
    torch.manual_seed(0)
    cfg = _cfg("LayoutLMConfig", **BERTISH, max_2d_position_embeddings=128)

    def bbox(b, t):
        g = torch.Generator().manual_seed(t)
        x0 = torch.randint(0, 50, (b, t, 2), generator=g)
        return {"bbox": torch.cat([x0, x0 + 10], -1)}
    case = text(_tf().LayoutLMModel(cfg), extra=bbox)
    case.spec["bbox"] = {0: case.spec["input_ids"][0], 1: case.spec["input_ids"][1]}
    return case


def esm():
    torch.manual_seed(0)
    cfg = _cfg("EsmConfig", **BERTISH, pad_token_id=1, position_embedding_type="rotary",
               mask_token_id=2)
    return text(_tf().EsmModel(cfg))


# -- decoders -----------------------------------------------------------------------------
DEC = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
           intermediate_size=64, max_position_embeddings=64)


def _dec(cfg_cls, model_cls, kv=True, **kw):
    def f():
        torch.manual_seed(0)
        base = dict(DEC)
        if kv:
            base["num_key_value_heads"] = 2
        cfg = _cfg(cfg_cls, **{**base, **kw})
        return text(getattr(_tf(), model_cls)(cfg))
    return f


def gpt_neo():
    torch.manual_seed(0)
    cfg = _cfg("GPTNeoConfig", vocab_size=V, hidden_size=32, num_layers=2, num_heads=4,
               attention_types=[[["global", "local"], 1]], window_size=8,
               max_position_embeddings=64, intermediate_size=64)
    return text(_tf().GPTNeoForCausalLM(cfg))


def gptj():
    torch.manual_seed(0)
    cfg = _cfg("GPTJConfig", vocab_size=V, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
               n_positions=64)
    return text(_tf().GPTJForCausalLM(cfg))


def codegen():
    torch.manual_seed(0)
    cfg = _cfg("CodeGenConfig", vocab_size=V, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
               n_positions=64, n_ctx=64)
    return text(_tf().CodeGenForCausalLM(cfg))


def bloom():
    torch.manual_seed(0)
    cfg = _cfg("BloomConfig", vocab_size=V, hidden_size=32, n_layer=2, n_head=4)
    return text(_tf().BloomForCausalLM(cfg))


def falcon():
    torch.manual_seed(0)
    cfg = _cfg("FalconConfig", vocab_size=V, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, new_decoder_architecture=False, multi_query=True,
               alibi=False, max_position_embeddings=64)
    return text(_tf().FalconForCausalLM(cfg))


def gpt_bigcode():
    torch.manual_seed(0)
    cfg = _cfg("GPTBigCodeConfig", vocab_size=V, n_embd=32, n_layer=2, n_head=4,
               n_positions=64, multi_query=True)
    return text(_tf().GPTBigCodeForCausalLM(cfg))


def xglm():
    torch.manual_seed(0)
    cfg = _cfg("XGLMConfig", vocab_size=V, d_model=32, num_layers=2, attention_heads=4,
               ffn_dim=64, max_position_embeddings=64)
    return text(_tf().XGLMForCausalLM(cfg))


def biogpt():
    torch.manual_seed(0)
    cfg = _cfg("BioGptConfig", **DEC)
    return text(_tf().BioGptForCausalLM(cfg))


def mpt():
    torch.manual_seed(0)
    cfg = _cfg("MptConfig", vocab_size=V, d_model=32, n_layers=2, n_heads=4, max_seq_len=64,
               expansion_ratio=2)
    return text(_tf().MptForCausalLM(cfg))


# -- encoder-decoders ---------------------------------------------------------------------
S2S = dict(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
           decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
           decoder_start_token_id=2)


def _s2s(cfg_cls, model_cls, **kw):
    def f():
        torch.manual_seed(0)
        cfg = _cfg(cfg_cls, **{**S2S, **kw})
        return text(getattr(_tf(), model_cls)(cfg), dec=True)
    return f


def prophetnet():
    torch.manual_seed(0)
    cfg = _cfg("ProphetNetConfig", vocab_size=V, hidden_size=32, encoder_ffn_dim=64,
               decoder_ffn_dim=64, num_encoder_layers=2, num_decoder_layers=2,
               num_encoder_attention_heads=4, num_decoder_attention_heads=4, ngram=2,
               num_buckets=8, relative_max_distance=32, max_position_embeddings=64)
    return text(_tf().ProphetNetModel(cfg), dec=True)


def mt5():
    torch.manual_seed(0)
    cfg = _cfg("MT5Config", vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2,
               num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
               decoder_start_token_id=0)
    return text(_tf().MT5Model(cfg), dec=True)


def longt5():
    torch.manual_seed(0)
    cfg = _cfg("LongT5Config", vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2,
               num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
               decoder_start_token_id=0, local_radius=4, encoder_attention_type="local")
    return text(_tf().LongT5Model(cfg), dec=True)


# -- CLIP / SigLIP ------------------------------------------------------------------------
def clip_text():
    torch.manual_seed(0)
    cfg = _cfg("CLIPTextConfig", vocab_size=V, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    return text(_tf().CLIPTextModel(cfg))


def clip_vision():
    torch.manual_seed(0)
    cfg = _cfg("CLIPVisionConfig", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, image_size=32, patch_size=8)
    return image(_tf().CLIPVisionModel(cfg), dyn_hw=False)


def siglip_text():
    torch.manual_seed(0)
    cfg = _cfg("SiglipTextConfig", vocab_size=V, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    return text(_tf().SiglipTextModel(cfg), mask=False, static_seq=False)


def siglip_vision():
    torch.manual_seed(0)
    cfg = _cfg("SiglipVisionConfig", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, image_size=32, patch_size=8)
    return image(_tf().SiglipVisionModel(cfg), dyn_hw=False)


# -- vision -------------------------------------------------------------------------------
VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           image_size=32, patch_size=8)


def _vit(cfg_cls, model_cls, dyn_hw=False, **kw):
    def f():
        torch.manual_seed(0)
        cfg = _cfg(cfg_cls, **{**VIT, **kw})
        return image(getattr(_tf(), model_cls)(cfg), dyn_hw=dyn_hw)
    return f


def dinov2():
    torch.manual_seed(0)
    cfg = _cfg("Dinov2Config", **VIT)
    return image(_tf().Dinov2Model(cfg), mult=8, hw=(40, 48), others_hw=((48, 40), (64, 64)))


def swin():
    torch.manual_seed(0)
    cfg = _cfg("SwinConfig", image_size=32, patch_size=2, embed_dim=16, depths=[1, 1],
               num_heads=[2, 2], window_size=4)
    return image(_tf().SwinModel(cfg), others_hw=((48, 40), (64, 64)))


def convnext():
    torch.manual_seed(0)
    cfg = _cfg("ConvNextConfig", hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])
    return image(_tf().ConvNextModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def convnextv2():
    torch.manual_seed(0)
    cfg = _cfg("ConvNextV2Config", hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])
    return image(_tf().ConvNextV2Model(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def resnet():
    torch.manual_seed(0)
    cfg = _cfg("ResNetConfig", embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])
    return image(_tf().ResNetModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)), hw_min=32)


def regnet():
    torch.manual_seed(0)
    cfg = _cfg("RegNetConfig", embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
               groups_width=8)
    return image(_tf().RegNetModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)), hw_min=32)


def mobilenet_v2():
    torch.manual_seed(0)
    cfg = _cfg("MobileNetV2Config", depth_multiplier=0.25, image_size=64)
    return image(_tf().MobileNetV2Model(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def mobilenet_v1():
    torch.manual_seed(0)
    cfg = _cfg("MobileNetV1Config", depth_multiplier=0.25, image_size=64)
    return image(_tf().MobileNetV1Model(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def efficientnet():
    torch.manual_seed(0)
    cfg = _cfg("EfficientNetConfig", width_coefficient=0.25, depth_coefficient=0.25,
               image_size=64, hidden_dim=320)
    return image(_tf().EfficientNetModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def segformer():
    torch.manual_seed(0)
    cfg = _cfg("SegformerConfig", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
               hidden_sizes=[16, 32], num_attention_heads=[1, 2], patch_sizes=[7, 3],
               strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=32)
    return image(_tf().SegformerForSemanticSegmentation(cfg), hw=(64, 64),
                 others_hw=((96, 80), (128, 64)), hw_min=32)


def poolformer():
    torch.manual_seed(0)
    cfg = _cfg("PoolFormerConfig", hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])
    return image(_tf().PoolFormerModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)),
                 hw_min=32)


def mobilevit():
    torch.manual_seed(0)
    cfg = _cfg("MobileViTConfig", image_size=64, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
               num_attention_heads=2)
    return image(_tf().MobileViTModel(cfg), hw=(64, 64), mult=32, others_hw=((96, 64), (128, 128)))


def bit():
    torch.manual_seed(0)
    cfg = _cfg("BitConfig", embedding_size=32, hidden_sizes=[32, 32, 64, 64], depths=[1, 1, 1, 1])
    return image(_tf().BitModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)), hw_min=32)


def cvt():
    torch.manual_seed(0)
    cfg = _cfg("CvtConfig", embed_dim=[8, 16, 32], num_heads=[1, 2, 2], depth=[1, 1, 1])
    return image(_tf().CvtModel(cfg), hw=(64, 64), others_hw=((96, 80), (128, 64)), hw_min=32)


def swinv2():
    torch.manual_seed(0)
    cfg = _cfg("Swinv2Config", image_size=32, patch_size=2, embed_dim=16, depths=[1, 1],
               num_heads=[2, 2], window_size=4)
    return image(_tf().Swinv2Model(cfg), others_hw=((48, 40), (64, 64)))


# -- audio --------------------------------------------------------------------------------
W2V = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=V,
           do_stable_layer_norm=False, feat_extract_norm="group")


def _w2v(cfg_cls, model_cls, **kw):
    def f():
        torch.manual_seed(0)
        cfg = _cfg(cfg_cls, **{**W2V, **kw})
        return audio(getattr(_tf(), model_cls)(cfg))
    return f


def ast():
    torch.manual_seed(0)
    cfg = _cfg("ASTConfig", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, patch_size=8, max_length=32, num_mel_bins=16,
               frequency_stride=8, time_stride=8)
    batch = Dim("batch", min=1, max=64)
    return Case(_tf().ASTModel(cfg).eval(), lambda b: ((), {"input_values": rn(b, 32, 16)}), (2,),
                {"input_values": {0: batch}}, [(3,), (1,)])


HF = {
    # text encoders
    "roberta": _enc("RobertaConfig", "RobertaModel"),
    "xlm_roberta": _enc("XLMRobertaConfig", "XLMRobertaModel"),
    "camembert": _enc("CamembertConfig", "CamembertModel"),
    "electra": _enc("ElectraConfig", "ElectraModel", embedding_size=16),
    "albert": albert,
    "deberta": deberta,
    "deberta_v2": deberta_v2,
    "mpnet": mpnet,
    "mobilebert": mobilebert,
    "squeezebert": squeezebert,
    "funnel": funnel,
    "layoutlm": layoutlm,
    "longformer": longformer,
    "bigbird": bigbird,
    "roformer": _enc("RoFormerConfig", "RoFormerModel", embedding_size=32),
    "convbert": _enc("ConvBertConfig", "ConvBertModel", embedding_size=32),
    "ernie": _enc("ErnieConfig", "ErnieModel"),
    "data2vec_text": _enc("Data2VecTextConfig", "Data2VecTextModel"),
    "xlm_roberta_xl": _enc("XLMRobertaXLConfig", "XLMRobertaXLModel"),
    "esm": esm,
    # decoders
    "gpt_neo": gpt_neo,
    "gpt_neox": _dec("GPTNeoXConfig", "GPTNeoXForCausalLM", kv=False, rotary_pct=0.5),
    "gptj": gptj,
    "codegen": codegen,
    "phi": _dec("PhiConfig", "PhiForCausalLM", kv=False),
    "phi3": _dec("Phi3Config", "Phi3ForCausalLM", pad_token_id=0),
    "gemma": _dec("GemmaConfig", "GemmaForCausalLM", head_dim=8),
    "gemma2": _dec("Gemma2Config", "Gemma2ForCausalLM", head_dim=8, sliding_window=8),
    "gemma3_text": _dec("Gemma3TextConfig", "Gemma3ForCausalLM", head_dim=8, sliding_window=8),
    "falcon": falcon,
    "bloom": bloom,
    "stablelm": _dec("StableLmConfig", "StableLmForCausalLM"),
    "starcoder2": _dec("Starcoder2Config", "Starcoder2ForCausalLM", sliding_window=None),
    "olmo": _dec("OlmoConfig", "OlmoForCausalLM"),
    "olmo2": _dec("Olmo2Config", "Olmo2ForCausalLM"),
    "mixtral": _dec("MixtralConfig", "MixtralForCausalLM", num_local_experts=4,
                    num_experts_per_tok=2, sliding_window=None),
    "qwen2_moe": _dec("Qwen2MoeConfig", "Qwen2MoeForCausalLM", num_experts=4,
                      num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=32),
    "qwen3": _dec("Qwen3Config", "Qwen3ForCausalLM", head_dim=8),
    "cohere": _dec("CohereConfig", "CohereForCausalLM"),
    "granite": _dec("GraniteConfig", "GraniteForCausalLM"),
    "persimmon": _dec("PersimmonConfig", "PersimmonForCausalLM", kv=False),
    "gpt_bigcode": gpt_bigcode,
    "xglm": xglm,
    "biogpt": biogpt,
    "mpt": mpt,
    # encoder-decoders
    "marian": _s2s("MarianConfig", "MarianMTModel", decoder_vocab_size=V),
    "pegasus": _s2s("PegasusConfig", "PegasusModel"),
    "mbart": _s2s("MBartConfig", "MBartModel"),
    "m2m100": _s2s("M2M100Config", "M2M100Model"),
    "blenderbot": _s2s("BlenderbotConfig", "BlenderbotModel"),
    "blenderbot_small": _s2s("BlenderbotSmallConfig", "BlenderbotSmallModel"),
    "plbart": _s2s("PLBartConfig", "PLBartModel"),
    "led": _s2s("LEDConfig", "LEDModel", max_encoder_position_embeddings=64,
                max_decoder_position_embeddings=64, attention_window=[8, 8]),
    "prophetnet": prophetnet,
    "mt5": mt5,
    "longt5": longt5,
    # CLIP / SigLIP
    "clip_text": clip_text,
    "clip_vision": clip_vision,
    "siglip_text": siglip_text,
    "siglip_vision": siglip_vision,
    # vision
    "deit": _vit("DeiTConfig", "DeiTModel"),
    "beit": _vit("BeitConfig", "BeitModel", use_relative_position_bias=True),
    "data2vec_vision": _vit("Data2VecVisionConfig", "Data2VecVisionModel"),
    "dinov2": dinov2,
    "yolos": _vit("YolosConfig", "YolosModel", image_size=[32, 32], num_detection_tokens=4),
    "swin": swin,
    "swinv2": swinv2,
    "convnext": convnext,
    "convnextv2": convnextv2,
    "resnet": resnet,
    "regnet": regnet,
    "mobilenet_v1": mobilenet_v1,
    "mobilenet_v2": mobilenet_v2,
    "efficientnet": efficientnet,
    "segformer": segformer,
    "poolformer": poolformer,
    "mobilevit": mobilevit,
    "bit": bit,
    # audio
    "wav2vec2": _w2v("Wav2Vec2Config", "Wav2Vec2Model"),
    "hubert": _w2v("HubertConfig", "HubertModel"),
    "wavlm": _w2v("WavLMConfig", "WavLMModel", num_buckets=16, max_bucket_distance=32),
    "data2vec_audio": _w2v("Data2VecAudioConfig", "Data2VecAudioModel", feat_extract_norm="layer",
                           conv_pos_kernel_size=5, num_conv_pos_embeddings=5),
    "sew": _w2v("SEWConfig", "SEWModel", squeeze_factor=2),
    "unispeech": _w2v("UniSpeechConfig", "UniSpeechModel"),
    "ast": ast,
}
