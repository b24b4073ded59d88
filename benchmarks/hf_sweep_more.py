"""More architectures for the transformers coverage sweep (`benchmarks/bench_hf_sweep.py`),
added 2026-12-07 (h/models31): the ones users export a lot that the first 119 did not have;
then (h/models32) Longformer / LED as users export them (``windowed``) and 25 more.
Tiny configs built at run time, random weights, no downloads."""

from __future__ import annotations

import torch

from benchmarks.hf_sweep_kinds import (
    _BERT, _DEC, _S2S, TEXT_SIZES, VOCAB, Sweep, _cfg, _mask, _model, _tok, fixed_image, image,
    seq2seq, text)
from safetrace import Dim

_GQA = dict(_DEC, num_key_value_heads=2)
_MOE = dict(_GQA, num_experts_per_tok=2)


def clip_pair(cls_model, cls_cfg, text_kw, vision_kw, res=32, mask=True):
    """Text and image towers in one call (CLIPModel, SiglipModel): token ids of a dynamic
    batch and length, images of the same batch at the one resolution the positions fix."""
    def build():
        import transformers
        cfg = getattr(transformers, cls_cfg)(text_config=text_kw,
                                             vision_config=dict(vision_kw, image_size=res))
        model = _model(cls_model, cfg)

        def make(b, t):
            g = torch.Generator().manual_seed(b * 1000 + t)
            d = {"input_ids": _tok(b, t), "pixel_values": torch.randn(b, 3, res, res, generator=g)}
            if mask:
                d["attention_mask"] = _mask(b, t)
            return d

        def spec(batch, size):
            s = {"input_ids": {0: batch, 1: size}, "pixel_values": {0: batch}}
            if mask:
                s["attention_mask"] = {0: batch, 1: size}
            return s
        return Sweep(model, make, spec, size_dim=(2, 64), **TEXT_SIZES)
    return build


def whisper(cls_model, cls_cfg, **kw):
    """Whisper: the encoder's mel frames are fixed (2 * max_source_positions); the batch and
    the decoder's length are the dims."""
    def build():
        cfg = _cfg(cls_cfg, **kw)
        model = _model(cls_model, cfg)
        frames = 2 * cfg.max_source_positions

        def make(b, t):
            g = torch.Generator().manual_seed(b * 1000 + t)
            return {"input_features": torch.randn(b, cfg.num_mel_bins, frames, generator=g),
                    "decoder_input_ids": _tok(b, t)}

        def spec(batch, size):
            return {"input_features": {0: batch}, "decoder_input_ids": {0: batch, 1: size}}
        return Sweep(model, make, spec, size_dim=(1, 32), example=(2, 12),
                     others=[(1, 9), (3, 20), (0, 5)], outside=(2, 33))
    return build


def frames(cls_model, cls_cfg, n_feat, lo=8, hi=64, **kw):
    """Encoders on feature frames (batch, frames, features) with a mask, no decoder."""
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, n):
            g = torch.Generator().manual_seed(b * 1000 + n)
            return {"input_features": torch.randn(b, n, n_feat, generator=g),
                    "attention_mask": _mask(b, n)}

        def spec(batch, size):
            return {"input_features": {0: batch, 1: size}, "attention_mask": {0: batch, 1: size}}
        return Sweep(model, make, spec, example=(2, 24), others=[(1, 16), (3, 40), (0, 24)],
                     outside=(2, hi + 1), size_dim=(lo, hi))
    return build


def speech_text(cls_model, cls_cfg, n=800, lo=400, **kw):
    """Raw audio in, a text decoder out (SpeechT5 speech-to-text): the audio length is the
    size dim, the decoder length is its own."""
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, n):
            g = torch.Generator().manual_seed(b * 1000 + n)
            return {"input_values": torch.randn(b, n, generator=g),
                    "decoder_input_ids": _tok(b, n // lo + 4)}

        def spec(batch, size):
            dec = Dim.AUTO if size is Dim.AUTO else Dim("dec", min=2, max=64)
            return {"input_values": {0: batch, 1: size}, "decoder_input_ids": {0: batch, 1: dec}}
        return Sweep(model, make, spec, example=(2, n), outside=(2, 20), size_dim=(lo, 10 * lo),
                     others=[(1, n * 4 // 5), (3, n * 11 // 8 + 1), (0, n)])
    return build


def waveform(cls_model, cls_cfg, **kw):
    """Codecs on (batch, channels, samples) audio: the sample count is the size dim."""
    def build():
        model = _model(cls_model, _cfg(cls_cfg, **kw))

        def make(b, n):
            g = torch.Generator().manual_seed(b * 1000 + n)
            return {"input_values": torch.randn(b, 1, n, generator=g)}

        def spec(batch, size):
            return {"input_values": {0: batch, 2: size}}
        return Sweep(model, make, spec, example=(2, 400), others=[(1, 320), (3, 555), (0, 400)],
                     outside=(2, 20), size_dim=(100, 4000))
    return build


def no_decoder_cache(build):
    """T5Gemma's config turns its decoder's cache on whatever it is given: off after building,
    as a user exporting the model for one call sets it."""
    def rebuild():
        sw = build()
        sw.model.decoder.config.use_cache = False
        return sw
    return rebuild


def _backbone(**kw):
    import transformers
    return transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 16],
                                     depths=[1, 1, 1, 1], layer_type="basic",
                                     out_features=["stage2", "stage3", "stage4"], **kw)


def _tiny_backbone(cls, stages=("stage2", "stage3", "stage4"), **kw):
    import transformers
    return getattr(transformers, cls)(out_features=list(stages), **kw)


def _detr_kw(**kw):
    return dict(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
                backbone_config=_backbone(), d_model=32, encoder_layers=1, decoder_layers=1,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                decoder_ffn_dim=64, num_queries=8, **kw)


def _local_attention_only(module, args, kwargs):
    """Longformer / LED layers branch on ``is_global_attn`` (``.item()`` of the mask's
    ``> 0``): a user exporting local attention only says so, checked at run time."""
    torch._check(torch.sym_not(kwargs["is_global_attn"]))


def windowed(build_base, window=8):
    """Longformer / LED as users export them: the sequence a multiple of the attention
    window (``if padding_len > 0:`` pads others, a branch on ``seq % window``), local
    attention only (a check on each encoder layer); sizes where the chunk count is 1."""
    def build():
        sw = build_base()
        enc = getattr(sw.model, "encoder", None) or sw.model.get_encoder()
        for layer in getattr(enc, "layer", None) or enc.layers:
            layer.register_forward_pre_hook(_local_attention_only, with_kwargs=True)
        spec = sw.spec

        def windowed_spec(batch, size):
            if isinstance(size, Dim):
                size = window * Dim("k", min=1, max=64 // window)
            return spec(batch, size)
        sw.spec = windowed_spec
        sw.example, sw.others = (2, 2 * window), [(1, window), (3, 3 * window), (0, window),
                                                  (1, 64), (4, window)]
        sw.outside, sw.size_dim = (2, 64 + window), (window, 64)
        return sw
    return build


MORE = {
    "mistral": text("MistralForCausalLM", "MistralConfig", **_GQA),
    "qwen2": text("Qwen2ForCausalLM", "Qwen2Config", **_GQA),
    "llama": text("LlamaForCausalLM", "LlamaConfig", **_GQA),
    "qwen2_moe": text("Qwen2MoeForCausalLM", "Qwen2MoeConfig", num_experts=4,
                      moe_intermediate_size=16, shared_expert_intermediate_size=32, **_MOE),
    "deepseek_v3": text("DeepseekV3ForCausalLM", "DeepseekV3Config", n_routed_experts=4,
                        n_shared_experts=1, moe_intermediate_size=16, kv_lora_rank=16,
                        q_lora_rank=16, qk_rope_head_dim=8, v_head_dim=8, qk_nope_head_dim=8,
                        n_group=2, topk_group=1, first_k_dense_replace=1,
                        num_experts_per_tok=2, **_DEC),
    "deepseek_v2": text("DeepseekV2ForCausalLM", "DeepseekV2Config", n_routed_experts=4,
                        n_shared_experts=1, moe_intermediate_size=16, kv_lora_rank=16,
                        q_lora_rank=16, qk_rope_head_dim=8, v_head_dim=8, qk_nope_head_dim=8,
                        first_k_dense_replace=1, num_experts_per_tok=2, **_DEC),
    "gpt_oss": text("GptOssForCausalLM", "GptOssConfig", num_local_experts=4, head_dim=8,
                    sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                    **_MOE),
    "phimoe": text("PhimoeForCausalLM", "PhimoeConfig", num_local_experts=4, **_MOE),
    "llama4_text": text("Llama4ForCausalLM", "Llama4TextConfig", num_local_experts=2,
                        num_experts_per_tok=1, head_dim=8, intermediate_size_mlp=64,
                        attention_chunk_size=8, no_rope_layer_interval=2, **_GQA),
    "lfm2": text("Lfm2ForCausalLM", "Lfm2Config", layer_types=["conv", "full_attention"],
                 **_GQA),
    "mamba2": text("Mamba2ForCausalLM", "Mamba2Config", mask=False, vocab_size=VOCAB,
                   hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, state_size=8,
                   n_groups=1, chunk_size=8, expand=2, conv_kernel=4),
    "t5gemma": no_decoder_cache(seq2seq("T5GemmaModel", "T5GemmaConfig", vocab_size=VOCAB,
                                        encoder=dict(_GQA, head_dim=8),
                                        decoder=dict(_GQA, head_dim=8))),
    "clip": clip_pair("CLIPModel", "CLIPConfig",
                      dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64,
                           max_position_embeddings=70, eos_token_id=2),
                      dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, patch_size=8)),
    "siglip": clip_pair("SiglipModel", "SiglipConfig",
                        dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=64,
                             max_position_embeddings=70),
                        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, patch_size=8), mask=False),
    "whisper": whisper("WhisperModel", "WhisperConfig", vocab_size=VOCAB, d_model=32,
                       encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                       decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                       num_mel_bins=16, max_source_positions=16, max_target_positions=32,
                       pad_token_id=1, decoder_start_token_id=2),
    "wav2vec2_bert": frames("Wav2Vec2BertModel", "Wav2Vec2BertConfig", n_feat=32,
                            feature_projection_input_dim=32, hidden_size=32,
                            num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                            output_hidden_size=32, conv_depthwise_kernel_size=7,
                            position_embeddings_type="relative_key",
                            left_max_position_embeddings=16,
                            right_max_position_embeddings=8),
    "speecht5_asr": speech_text("SpeechT5ForSpeechToText", "SpeechT5Config", vocab_size=VOCAB,
                                hidden_size=32, encoder_layers=1, decoder_layers=1,
                                encoder_attention_heads=4, decoder_attention_heads=4,
                                encoder_ffn_dim=64, decoder_ffn_dim=64,
                                conv_dim=(16, 16, 16), conv_stride=(5, 2, 2),
                                conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                                num_conv_pos_embedding_groups=4, encoder_max_relative_position=16,
                                max_text_positions=70, max_speech_positions=600),
    "vits": text("VitsModel", "VitsConfig", vocab_size=VOCAB, hidden_size=16,
                 num_hidden_layers=1, num_attention_heads=2, ffn_dim=32, flow_size=16,
                 spectrogram_bins=17, upsample_initial_channel=16, upsample_rates=[2, 2],
                 upsample_kernel_sizes=[4, 4], resblock_kernel_sizes=[3],
                 resblock_dilation_sizes=[[1, 3]], prior_encoder_num_flows=1,
                 prior_encoder_num_wavenet_layers=1, posterior_encoder_num_wavenet_layers=1,
                 duration_predictor_num_flows=1, duration_predictor_filter_channels=16,
                 depth_separable_num_layers=1, noise_scale=0.0, noise_scale_duration=0.0,
                 window_size=2),
    "detr": image("DetrModel", "DetrConfig", hw=(64, 128, 32), k_min=2, **_detr_kw()),
    "conditional_detr": image("ConditionalDetrModel", "ConditionalDetrConfig", hw=(64, 128, 32),
                              k_min=2, **_detr_kw()),
    "dinov2_registers": image("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig",
                              hw=(32, 96, 8), image_size=32, num_register_tokens=2,
                              hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, patch_size=8),
    "vit": fixed_image("ViTModel", "ViTConfig", hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, patch_size=8),
    "efficientnet": image("EfficientNetModel", "EfficientNetConfig", hw=(32, 96, 32),
                          width_coefficient=0.25, depth_coefficient=0.25,
                          hidden_dim=320),
    "mobilenet_v1": image("MobileNetV1Model", "MobileNetV1Config", hw=(32, 96, 32),
                          depth_multiplier=0.25),
    "pvt_v2": image("PvtV2Model", "PvtV2Config", hw=(32, 96, 32), hidden_sizes=[8, 16],
                    depths=[1, 1], num_encoder_blocks=2, sr_ratios=[2, 1],
                    num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2],
                    mlp_ratios=[2, 2]),
    "bit": image("BitModel", "BitConfig", hw=(32, 96, 32), embedding_size=8,
                 hidden_sizes=[8, 16], depths=[1, 1], layer_type="preactivation", num_groups=2),
    "dpt": image("DPTModel", "DPTConfig", hw=(32, 96, 8), image_size=32, hidden_size=32,
                 num_hidden_layers=4, num_attention_heads=4, intermediate_size=64, patch_size=8,
                 backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 8, 16, 16],
                 fusion_hidden_size=16),
    "hiera": fixed_image("HieraModel", "HieraConfig", res=64, pair=True,
                   patch_size=[7, 7], patch_stride=[4, 4], patch_padding=[3, 3],
                   embed_dim=8, num_heads=[1, 2], depths=[1, 1], query_stride=[2, 2],
                   masked_unit_size=[4, 4], masked_unit_attention=[True, False],
                   num_query_pool=1),
    # -- second batch
    "rt_detr": image("RTDetrModel", "RTDetrConfig", hw=(64, 128, 32), k_min=2,
                     backbone_config=_tiny_backbone("RTDetrResNetConfig", embedding_size=8,
                                                    hidden_sizes=[8, 16, 16, 16],
                                                    depths=[1, 1, 1, 1], layer_type="basic"),
                     encoder_in_channels=[16, 16, 16], encoder_hidden_dim=32, d_model=32,
                     decoder_in_channels=[32, 32, 32], encoder_ffn_dim=64, decoder_ffn_dim=64,
                     encoder_attention_heads=4, decoder_attention_heads=4, decoder_layers=1,
                     num_queries=8),
    "deformable_detr": image("DeformableDetrModel", "DeformableDetrConfig", hw=(64, 128, 32),
                             k_min=2, num_feature_levels=3, encoder_n_points=2,
                             decoder_n_points=2, disable_custom_kernels=True,
                             two_stage_num_proposals=8, **_detr_kw()),
    "mask2former": image("Mask2FormerModel", "Mask2FormerConfig", hw=(64, 128, 32), k_min=2,
                         backbone_config=_tiny_backbone(
                             "ResNetConfig", ("stage1", "stage2", "stage3", "stage4"),
                             embedding_size=8, hidden_sizes=[8, 16, 16, 16],
                             depths=[1, 1, 1, 1], layer_type="basic"),
                         feature_size=32, mask_feature_size=32, hidden_dim=32,
                         encoder_feedforward_dim=64, encoder_layers=1, decoder_layers=2,
                         num_attention_heads=4, dim_feedforward=64, num_queries=8),
    "upernet": image("UperNetForSemanticSegmentation", "UperNetConfig", hw=(32, 96, 32),
                     backbone_config=_tiny_backbone(
                         "ConvNextConfig", ("stage1", "stage2", "stage3", "stage4"),
                         hidden_sizes=[8, 16, 16, 16], depths=[1, 1, 1, 1]),
                     hidden_size=16, use_auxiliary_head=False, num_labels=3),
    "segformer_seg": image("SegformerForSemanticSegmentation", "SegformerConfig",
                           hw=(32, 96, 32), num_encoder_blocks=2, depths=[1, 1],
                           sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[7, 3],
                           strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                           decoder_hidden_size=16, num_labels=3),
    "depth_anything": image("DepthAnythingForDepthEstimation", "DepthAnythingConfig",
                            hw=(32, 96, 8), backbone_config=_tiny_backbone(
                                "Dinov2Config", ("stage1", "stage2", "stage3", "stage4"),
                                hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                                intermediate_size=64, patch_size=8, image_size=32,
                                reshape_hidden_states=False),
                            reassemble_hidden_size=32, patch_size=8,
                            neck_hidden_sizes=[8, 8, 16, 16], fusion_hidden_size=16,
                            head_hidden_size=8),
    "owlvit": clip_pair("OwlViTModel", "OwlViTConfig",
                        dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=64,
                             max_position_embeddings=70, eos_token_id=2),
                        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, patch_size=8)),
    "moonshine": speech_text("MoonshineModel", "MoonshineConfig", n=4000, lo=2000,
                             vocab_size=VOCAB,
                             hidden_size=32, intermediate_size=64, encoder_num_hidden_layers=1,
                             decoder_num_hidden_layers=1, encoder_num_attention_heads=4,
                             decoder_num_attention_heads=4, encoder_num_key_value_heads=4,
                             decoder_num_key_value_heads=4, max_position_embeddings=70),
    "qwen3_next": text("Qwen3NextForCausalLM", "Qwen3NextConfig", head_dim=8,
                       layer_types=["linear_attention", "full_attention"],
                       linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
                       linear_num_value_heads=4, num_experts=4, moe_intermediate_size=16,
                       shared_expert_intermediate_size=16, **_MOE),
    "falcon_h1": text("FalconH1ForCausalLM", "FalconH1Config", head_dim=8, mamba_d_ssm=32,
                      mamba_n_heads=4, mamba_d_head=8, mamba_d_state=4, mamba_chunk_size=8,
                      **_GQA),
    "granitemoehybrid": text("GraniteMoeHybridForCausalLM", "GraniteMoeHybridConfig",
                             layer_types=["mamba", "attention"], mamba_n_heads=4,
                             mamba_d_head=16, mamba_d_state=4, mamba_chunk_size=8,
                             num_local_experts=4, shared_intermediate_size=32, **_MOE),
    "encodec": waveform("EncodecModel", "EncodecConfig", hidden_size=16, num_filters=4,
                        upsampling_ratios=[2, 2], codebook_size=16, codebook_dim=16,
                        num_lstm_layers=1, sampling_rate=400, target_bandwidths=[1.5]),
    # -- added 2026-12-07 (h/models32): a view's strides on dims of size 1 --
    "longformer_w8": windowed(text("LongformerModel", "LongformerConfig",
                                   attention_window=[8, 8], **dict(_BERT, pad_token_id=1))),
    "led_w8": windowed(seq2seq("LEDModel", "LEDConfig", attention_window=8, vocab_size=VOCAB,
                               d_model=32, encoder_layers=1, decoder_layers=1,
                               encoder_attention_heads=4, decoder_attention_heads=4,
                               encoder_ffn_dim=64, decoder_ffn_dim=64,
                               max_encoder_position_embeddings=64,
                               max_decoder_position_embeddings=64, pad_token_id=1)),
    # -- added 2026-12-07 (h/models32): more decoders and encoders --
    "gemma3_text": text("Gemma3ForCausalLM", "Gemma3TextConfig", head_dim=8,
                        sliding_window=8, **_GQA),
    "glm4": text("Glm4ForCausalLM", "Glm4Config", head_dim=8, pad_token_id=0, **_GQA),
    "ministral": text("MinistralForCausalLM", "MinistralConfig", head_dim=8, **_GQA),
    "arcee": text("ArceeForCausalLM", "ArceeConfig", head_dim=8, **_GQA),
    "apertus": text("ApertusForCausalLM", "ApertusConfig", head_dim=8, **_GQA),
    "bitnet": text("BitNetForCausalLM", "BitNetConfig", head_dim=8, **_GQA),
    "seed_oss": text("SeedOssForCausalLM", "SeedOssConfig", head_dim=8, **_GQA),
    "hunyuan_v1_dense": text("HunYuanDenseV1ForCausalLM", "HunYuanDenseV1Config", head_dim=8,
                             **_GQA),
    "jetmoe": text("JetMoeForCausalLM", "JetMoeConfig", vocab_size=VOCAB, hidden_size=32,
                   num_hidden_layers=2, num_key_value_heads=2, kv_channels=8,
                   intermediate_size=64, max_position_embeddings=64, num_local_experts=4,
                   num_experts_per_tok=2),
    "ernie4_5_moe": text("Ernie4_5_MoeForCausalLM", "Ernie4_5_MoeConfig", head_dim=8,
                         moe_num_experts=4, moe_k=2, moe_intermediate_size=16, **_GQA),
    "minimax": text("MiniMaxForCausalLM", "MiniMaxConfig", head_dim=8, num_local_experts=4,
                    num_experts_per_tok=2, layer_types=["linear_attention", "full_attention"],
                    block_size=8, **_GQA),
    "zamba2": text("Zamba2ForCausalLM", "Zamba2Config", vocab_size=VOCAB, hidden_size=32,
                   num_hidden_layers=2, num_attention_heads=4, mamba_d_state=4,
                   mamba_headdim=8, n_mamba_heads=8, layers_block_type=["mamba", "hybrid"],
                   hybrid_layer_ids=[1], intermediate_size=64, max_position_embeddings=64,
                   chunk_size=8),
    "doge": text("DogeForCausalLM", "DogeConfig", head_dim=8, **_GQA),
    "cwm": text("CwmForCausalLM", "CwmConfig", head_dim=8, sliding_window=8, **_GQA),
    "lfm2_moe": text("Lfm2MoeForCausalLM", "Lfm2MoeConfig", num_experts=4,
                     num_experts_per_tok=2, moe_intermediate_size=16, num_dense_layers=1,
                     layer_types=["conv", "full_attention"], **_GQA),
    "gpt2": text("GPT2LMHeadModel", "GPT2Config", vocab_size=VOCAB, n_embd=32, n_layer=2,
                 n_head=4, n_positions=64),
    "opt": text("OPTForCausalLM", "OPTConfig", vocab_size=VOCAB, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                max_position_embeddings=64, word_embed_proj_dim=32),
    "mra": text("MraModel", "MraConfig", **_BERT),
    "markuplm": text("MarkupLMModel", "MarkupLMConfig", **_BERT),
    "luke": text("LukeModel", "LukeConfig", entity_vocab_size=16, entity_emb_size=16, **_BERT),
    "roberta_prelayernorm": text("RobertaPreLayerNormModel", "RobertaPreLayerNormConfig",
                                 **dict(_BERT, pad_token_id=1)),
    "bert": text("BertModel", "BertConfig", **_BERT),
    "bart": seq2seq("BartModel", "BartConfig", **_S2S),
    "mvp": seq2seq("MvpModel", "MvpConfig", **_S2S),
    "t5": seq2seq("T5Model", "T5Config", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64,
                  num_layers=1, num_heads=4, relative_attention_num_buckets=8,
                  decoder_start_token_id=0),
}
