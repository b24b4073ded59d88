"""Coverage sweep of transformers architectures outside the zoo (tiny configs, random weights,
no downloads): for each, export with a dynamic batch and sequence (or height/width, or audio
samples) dim, once with named Dims and once with Dim.AUTO, and with torch.export on the same
spec; then run the program on three inputs of other sizes (batch 1 and, where eager computes
it, batch 0) against eager, and one input outside the declared space.

(The kinds of inputs are in hf_sweep_kinds.py; the entries added 2026-12-07 in hf_sweep_more.py.)

    nice python benchmarks/bench_hf_sweep.py [--no-torch] [--rows-out rows.jsonl] [models...]
    python benchmarks/bench_hf_sweep.py --from-rows rows.jsonl [more.jsonl]   # the table

Verdicts: "yes" (every input matches eager or is refused before running where it lies outside
the declared space), "WRONG" (a result differs from eager), "rejects" (an input inside the
space refused), "crash: <Exception>" (an internal exception escaped st.export).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import sys
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

import safetrace as st  # noqa: E402
from benchmarks.common import torch_spec  # noqa: E402
from benchmarks.hf_sweep_kinds import (  # noqa: E402
    _BERT, _DEC, _S2S, _VIT, _W2V, VOCAB, audio, features, fixed_image, image, seq2seq, text)
from benchmarks.hf_sweep_more import MORE  # noqa: E402
from safetrace import Dim  # noqa: E402

warnings.filterwarnings("ignore")

MODELS = {
    "roberta": text("RobertaModel", "RobertaConfig", **dict(_BERT, pad_token_id=1)),
    "xlm_roberta": text("XLMRobertaModel", "XLMRobertaConfig", **dict(_BERT, pad_token_id=1)),
    "electra": text("ElectraModel", "ElectraConfig", embedding_size=16, **_BERT),
    "albert": text("AlbertModel", "AlbertConfig", embedding_size=16, **_BERT),
    "deberta_v2": text("DebertaV2Model", "DebertaV2Config", **_BERT),
    "mpnet": text("MPNetModel", "MPNetConfig", **dict(_BERT, pad_token_id=1)),
    "clip_text": text("CLIPTextModel", "CLIPTextConfig", **dict(_BERT, eos_token_id=2)),
    "siglip_text": text("SiglipTextModel", "SiglipTextConfig", mask=False, **_BERT),
    "clip_vision": fixed_image("CLIPVisionModel", "CLIPVisionConfig", **_VIT),
    "siglip_vision": fixed_image("SiglipVisionModel", "SiglipVisionConfig", **_VIT),
    "wav2vec2": audio("Wav2Vec2Model", "Wav2Vec2Config", **_W2V),
    "hubert": audio("HubertModel", "HubertConfig", **_W2V),
    "swin": image("SwinModel", "SwinConfig", hw=(64, 128, 32), k_min=2, image_size=64, patch_size=4,
                  embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
    "convnext": image("ConvNextModel", "ConvNextConfig", hw=(32, 96, 32),
                      hidden_sizes=[8, 16], depths=[1, 1], num_stages=2),
    "segformer": image("SegformerModel", "SegformerConfig", hw=(32, 96, 32), num_encoder_blocks=2,
                       depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
                       patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                       mlp_ratios=[2, 2], decoder_hidden_size=16),
    "mobilevit": image("MobileViTModel", "MobileViTConfig", hw=(64, 128, 64), image_size=64,
                       hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]),
    "pegasus": seq2seq("PegasusModel", "PegasusConfig", **_S2S),
    "marian": seq2seq("MarianModel", "MarianConfig", **_S2S),
    "mbart": seq2seq("MBartModel", "MBartConfig", **_S2S),
    "gpt_neo": text("GPTNeoForCausalLM", "GPTNeoConfig", vocab_size=VOCAB, hidden_size=32,
                    num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]],
                    window_size=8, max_position_embeddings=64),
    "gptj": text("GPTJForCausalLM", "GPTJConfig", vocab_size=VOCAB, n_embd=32, n_layer=2,
                 n_head=4, rotary_dim=4, n_positions=64),
    "codegen": text("CodeGenForCausalLM", "CodeGenConfig", vocab_size=VOCAB, n_embd=32,
                    n_layer=2, n_head=4, rotary_dim=4, n_positions=64, n_ctx=64),
    "bloom": text("BloomForCausalLM", "BloomConfig", vocab_size=VOCAB, hidden_size=32,
                  n_layer=2, n_head=4),
    "gpt_neox": text("GPTNeoXForCausalLM", "GPTNeoXConfig", **_DEC),
    "falcon": text("FalconForCausalLM", "FalconConfig", vocab_size=VOCAB, hidden_size=32,
                   num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64),
    "phi": text("PhiForCausalLM", "PhiConfig", **_DEC),
    "stablelm": text("StableLmForCausalLM", "StableLmConfig", num_key_value_heads=4, **_DEC),
    "xlnet": text("XLNetModel", "XLNetConfig", vocab_size=VOCAB, d_model=32, n_layer=2,
                  n_head=4, d_inner=64),
    "funnel": text("FunnelModel", "FunnelConfig", vocab_size=VOCAB, d_model=32, n_head=4,
                   d_head=8, d_inner=64, block_sizes=[1, 1], num_decoder_layers=1),
    "longformer": text("LongformerModel", "LongformerConfig", attention_window=[8, 8],
                       **dict(_BERT, pad_token_id=1)),
    "big_bird": text("BigBirdModel", "BigBirdConfig", attention_type="original_full",
                     **_BERT),
    "rembert": text("RemBertModel", "RemBertConfig", input_embedding_size=16,
                    output_embedding_size=16, **_BERT),
    "dinov2": image("Dinov2Model", "Dinov2Config", hw=(32, 96, 8), image_size=32, **_VIT),
    "beit": fixed_image("BeitModel", "BeitConfig", use_relative_position_bias=True, **_VIT),
    "deit": fixed_image("DeiTModel", "DeiTConfig", **_VIT),
    "resnet": image("ResNetModel", "ResNetConfig", hw=(32, 96, 32), embedding_size=8,
                    hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic"),
    "regnet": image("RegNetModel", "RegNetConfig", hw=(32, 96, 32), embedding_size=8,
                    hidden_sizes=[8, 16], depths=[1, 1], groups_width=8),
    "wavlm": audio("WavLMModel", "WavLMConfig", num_buckets=16, max_bucket_distance=40,
                   **_W2V),
    "data2vec_audio": audio("Data2VecAudioModel", "Data2VecAudioConfig", **_W2V),
    "mpt": text("MptForCausalLM", "MptConfig", vocab_size=VOCAB, d_model=32, n_heads=4,
                n_layers=2, max_seq_len=64),
    "xglm": text("XGLMForCausalLM", "XGLMConfig", vocab_size=VOCAB, d_model=32, num_layers=2,
                 attention_heads=4, ffn_dim=64, max_position_embeddings=64),
    "biogpt": text("BioGptForCausalLM", "BioGptConfig", **_BERT),
    "ctrl": text("CTRLLMHeadModel", "CTRLConfig", vocab_size=VOCAB, n_embd=32, n_layer=2,
                 n_head=4, dff=64, n_positions=64),
    "persimmon": text("PersimmonForCausalLM", "PersimmonConfig", **_DEC),
    "olmo2": text("Olmo2ForCausalLM", "Olmo2Config", num_key_value_heads=2, **_DEC),
    "granite": text("GraniteForCausalLM", "GraniteConfig", num_key_value_heads=2, **_DEC),
    "cohere": text("CohereForCausalLM", "CohereConfig", num_key_value_heads=2, **_DEC),
    "gemma2": text("Gemma2ForCausalLM", "Gemma2Config", num_key_value_heads=2, head_dim=8,
                   sliding_window=8, **_DEC),
    "qwen3_moe": text("Qwen3MoeForCausalLM", "Qwen3MoeConfig", num_key_value_heads=2,
                      num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, **_DEC),
    "convbert": text("ConvBertModel", "ConvBertConfig", embedding_size=16, **_BERT),
    "squeezebert": text("SqueezeBertModel", "SqueezeBertConfig", embedding_size=32, **_BERT),
    "megatron_bert": text("MegatronBertModel", "MegatronBertConfig", **_BERT),
    "esm": text("EsmModel", "EsmConfig", **dict(_BERT, pad_token_id=1)),
    "ernie": text("ErnieModel", "ErnieConfig", **_BERT),
    "camembert": text("CamembertModel", "CamembertConfig", **dict(_BERT, pad_token_id=1)),
    "flaubert": text("FlaubertModel", "FlaubertConfig", vocab_size=VOCAB, emb_dim=32,
                     n_layers=2, n_heads=4, max_position_embeddings=70),
    "xlm": text("XLMModel", "XLMConfig", vocab_size=VOCAB, emb_dim=32, n_layers=2, n_heads=4,
                max_position_embeddings=70),
    "blenderbot": seq2seq("BlenderbotModel", "BlenderbotConfig", **_S2S),
    "led": seq2seq("LEDModel", "LEDConfig", attention_window=8, vocab_size=VOCAB, d_model=32,
                   encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                   max_encoder_position_embeddings=64, max_decoder_position_embeddings=64,
                   pad_token_id=1),
    "mt5": seq2seq("MT5Model", "MT5Config", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64,
                   num_layers=1, num_heads=4, relative_attention_num_buckets=8,
                   decoder_start_token_id=0),
    "mamba": text("MambaForCausalLM", "MambaConfig", mask=False, vocab_size=VOCAB,
                  hidden_size=32, num_hidden_layers=2, state_size=4, expand=2, conv_kernel=4),
    # -- added 2026-12-06 (h/hf29) --
    "starcoder2": text("Starcoder2ForCausalLM", "Starcoder2Config", num_key_value_heads=2,
                       sliding_window=8, **_DEC),
    "gpt_bigcode": text("GPTBigCodeForCausalLM", "GPTBigCodeConfig", vocab_size=VOCAB, n_embd=32,
                        n_layer=2, n_head=4, n_positions=64, multi_query=True),
    "gemma": text("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=2, head_dim=8, **_DEC),
    "gemma3_text": text("Gemma3ForCausalLM", "Gemma3TextConfig", num_key_value_heads=2, head_dim=8,
                        sliding_window=8, **_DEC),
    "phi3": text("Phi3ForCausalLM", "Phi3Config", num_key_value_heads=2, pad_token_id=0, **_DEC),
    "olmo": text("OlmoForCausalLM", "OlmoConfig", num_key_value_heads=2, **_DEC),
    "qwen3": text("Qwen3ForCausalLM", "Qwen3Config", num_key_value_heads=2, head_dim=8, **_DEC),
    "mixtral": text("MixtralForCausalLM", "MixtralConfig", num_key_value_heads=2,
                    num_local_experts=4, num_experts_per_tok=2, **_DEC),
    "glm": text("GlmForCausalLM", "GlmConfig", num_key_value_heads=2, pad_token_id=0, head_dim=8, **_DEC),
    "helium": text("HeliumForCausalLM", "HeliumConfig", num_key_value_heads=2, head_dim=8,
                   **_DEC),
    "nemotron": text("NemotronForCausalLM", "NemotronConfig", num_key_value_heads=2, head_dim=8,
                     **_DEC),
    "smollm3": text("SmolLM3ForCausalLM", "SmolLM3Config", num_key_value_heads=2, pad_token_id=0, **_DEC),
    "granitemoe": text("GraniteMoeForCausalLM", "GraniteMoeConfig", num_key_value_heads=2,
                       num_local_experts=4, num_experts_per_tok=2, **_DEC),
    "olmoe": text("OlmoeForCausalLM", "OlmoeConfig", num_key_value_heads=2, num_experts=4,
                  num_experts_per_tok=2, **_DEC),
    "ernie4_5": text("Ernie4_5ForCausalLM", "Ernie4_5Config", num_key_value_heads=2, head_dim=8,
                     **_DEC),
    "exaone4": text("Exaone4ForCausalLM", "Exaone4Config", num_key_value_heads=2, head_dim=8,
                    **_DEC),
    "rwkv": text("RwkvForCausalLM", "RwkvConfig", mask=False, vocab_size=VOCAB, hidden_size=32,
                 num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64,
                 context_length=64),
    "jamba": text("JambaForCausalLM", "JambaConfig", num_key_value_heads=2, num_experts=2,
                  num_experts_per_tok=1, attn_layer_period=2, attn_layer_offset=1,
                  expert_layer_period=2, expert_layer_offset=1, mamba_d_state=4,
                  mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4, use_mamba_kernels=False,
                  **_DEC),
    "bamba": text("BambaForCausalLM", "BambaConfig", num_key_value_heads=2,
                  attn_layer_indices=[1], mamba_n_heads=4, mamba_d_head=16, mamba_n_groups=1,
                  mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=8,
                  **_DEC),
    "falcon_mamba": text("FalconMambaForCausalLM", "FalconMambaConfig", mask=False,
                         vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, state_size=4,
                         expand=2, conv_kernel=4, use_mambapy=False),
    "recurrent_gemma": text("RecurrentGemmaForCausalLM", "RecurrentGemmaConfig",
                            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3,
                            num_attention_heads=4, num_key_value_heads=1, intermediate_size=64,
                            lru_width=32, attention_window_size=8, conv1d_width=4),
    "layoutlm": text("LayoutLMModel", "LayoutLMConfig", **_BERT),
    "canine": text("CanineModel", "CanineConfig", hidden_size=32, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                   num_hash_functions=2, num_hash_buckets=64, downsampling_rate=4),
    "mobilebert": text("MobileBertModel", "MobileBertConfig", embedding_size=16,
                       intra_bottleneck_size=16, true_hidden_size=16, num_feedforward_networks=2,
                       **_BERT),
    "modernbert": text("ModernBertModel", "ModernBertConfig", global_attn_every_n_layers=2,
                       local_attention=8, pad_token_id=0, **_BERT),
    "ibert": text("IBertModel", "IBertConfig", **dict(_BERT, pad_token_id=1)),
    "roc_bert": text("RoCBertModel", "RoCBertConfig", pronunciation_vocab_size=16,
                     shape_vocab_size=16, pronunciation_embed_dim=8, shape_embed_dim=8,
                     **_BERT),
    "data2vec_text": text("Data2VecTextModel", "Data2VecTextConfig",
                          **dict(_BERT, pad_token_id=1)),
    "xmod": text("XmodModel", "XmodConfig", languages=["en_XX"], default_language="en_XX",
                 **dict(_BERT, pad_token_id=1)),
    "splinter": text("SplinterModel", "SplinterConfig", **_BERT),
    "plbart": seq2seq("PLBartModel", "PLBartConfig", **_S2S),
    "m2m_100": seq2seq("M2M100Model", "M2M100Config", **_S2S),
    "blenderbot_small": seq2seq("BlenderbotSmallModel", "BlenderbotSmallConfig", **_S2S),
    "bigbird_pegasus": seq2seq("BigBirdPegasusModel", "BigBirdPegasusConfig",
                               attention_type="original_full", **_S2S),
    "pegasus_x": seq2seq("PegasusXModel", "PegasusXConfig", num_global_tokens=4, block_size=4,
                         **_S2S),
    "fsmt": seq2seq("FSMTModel", "FSMTConfig", src_vocab_size=VOCAB, tgt_vocab_size=VOCAB,
                    langs=["en", "de"], **_S2S),
    "prophetnet": seq2seq("ProphetNetModel", "ProphetNetConfig", vocab_size=VOCAB,
                          hidden_size=32, encoder_ffn_dim=64, decoder_ffn_dim=64,
                          num_encoder_layers=1, num_decoder_layers=1,
                          num_encoder_attention_heads=4, num_decoder_attention_heads=4,
                          max_position_embeddings=130, ngram=2, num_buckets=8,
                          relative_max_distance=16, pad_token_id=1, decoder_start_token_id=2),
    "umt5": seq2seq("UMT5Model", "UMT5Config", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64,
                    num_layers=1, num_heads=4, relative_attention_num_buckets=8,
                    decoder_start_token_id=0),
    "longt5": seq2seq("LongT5Model", "LongT5Config", vocab_size=VOCAB, d_model=32, d_kv=8,
                      d_ff=64, num_layers=1, num_heads=4, relative_attention_num_buckets=8,
                      local_radius=4, encoder_attention_type="local", decoder_start_token_id=0),
    "switch_transformers": seq2seq("SwitchTransformersModel", "SwitchTransformersConfig",
                                   vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                   num_sparse_encoder_layers=1, num_sparse_decoder_layers=1,
                                   num_heads=4, num_experts=2, relative_attention_num_buckets=8,
                                   decoder_start_token_id=0),
    "speech_to_text": features("Speech2TextModel", "Speech2TextConfig", n_feat=16,
                               input_feat_per_channel=16, input_channels=1,
                               conv_channels=32, num_conv_layers=2, conv_kernel_sizes=[5, 5],
                               max_source_positions=64, max_target_positions=64,
                               **{k: v for k, v in _S2S.items()
                                  if k != "max_position_embeddings"}),
    "sew": audio("SEWModel", "SEWConfig", squeeze_factor=2, **_W2V),
    "sew_d": audio("SEWDModel", "SEWDConfig", squeeze_factor=2, position_buckets=16,
                   max_relative_positions=32, **_W2V),
    "unispeech": audio("UniSpeechModel", "UniSpeechConfig", **_W2V),
    "unispeech_sat": audio("UniSpeechSatModel", "UniSpeechSatConfig", **_W2V),
    "wav2vec2_conformer": audio("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig",
                                position_embeddings_type="relative", conv_depthwise_kernel_size=7,
                                **_W2V),
    "yolos": fixed_image("YolosModel", "YolosConfig", pair=True, num_detection_tokens=4,
                         **_VIT),
    "blip_vision": fixed_image("BlipVisionModel", "BlipVisionConfig", **_VIT),
    "data2vec_vision": fixed_image("Data2VecVisionModel", "Data2VecVisionConfig",
                                   use_relative_position_bias=True, **_VIT),
    "vit_msn": fixed_image("ViTMSNModel", "ViTMSNConfig", **_VIT),
    "levit": fixed_image("LevitModel", "LevitConfig", res=64, patch_size=16, hidden_sizes=[16, 24, 32],
                         num_attention_heads=[1, 2, 2], depths=[1, 1, 1], key_dim=[8, 8, 8],
                         down_ops=[["Subsample", 8, 1, 4, 2, 2], ["Subsample", 8, 2, 4, 2, 2]]),
    "poolformer": image("PoolFormerModel", "PoolFormerConfig", hw=(32, 96, 32),
                        hidden_sizes=[8, 16], depths=[1, 1], num_encoder_blocks=2,
                        patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1]),
    "mobilenet_v2": image("MobileNetV2Model", "MobileNetV2Config", hw=(32, 96, 32),
                          depth_multiplier=0.25),
    "convnextv2": image("ConvNextV2Model", "ConvNextV2Config", hw=(32, 96, 32),
                        hidden_sizes=[8, 16], depths=[1, 1], num_stages=2),
    "focalnet": image("FocalNetModel", "FocalNetConfig", hw=(32, 96, 32), image_size=32,
                      patch_size=4, embed_dim=8, depths=[1, 1], focal_levels=[2, 2],
                      focal_windows=[3, 3]),
    "glpn": image("GLPNModel", "GLPNConfig", hw=(32, 96, 32), num_encoder_blocks=2,
                  depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[7, 3],
                  strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                  decoder_hidden_size=16),
    "swinv2": image("Swinv2Model", "Swinv2Config", hw=(64, 128, 32), k_min=2, image_size=64,
                    patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
    "mobilevitv2": image("MobileViTV2Model", "MobileViTV2Config", hw=(64, 128, 64),
                         image_size=64, width_multiplier=0.25),
}
MODELS.update(MORE)  # added 2026-12-07 (h/models31): benchmarks/hf_sweep_more.py


# -- checking ------------------------------------------------------------------------------
def close(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and torch.allclose(a, b, rtol=1e-4, atol=1e-5))
    if hasattr(a, "to_tuple"):
        a = a.to_tuple()
    if hasattr(b, "to_tuple"):
        b = b.to_tuple()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(close(x, y) for x, y in zip(a, b)))
    return a == b


def refused(exc) -> bool:
    """An input check of the program (before any computation), not a failure inside it."""
    name = type(exc).__name__
    return isinstance(exc, st.InputMismatchError) or name in ("FailedCondition",
                                                               "RuntimeAssertionError")


def check(sw, module, sizes, in_space) -> str:
    verdicts = []
    for b, t in sizes:
        kw = sw.make(b, t)
        try:
            with torch.no_grad():
                expected = sw.model(**copy.deepcopy(kw))
        except Exception:  # noqa: BLE001 - eager itself fails there: nothing to compare
            expected = None
        try:
            with torch.no_grad():
                got = module(**kw)
        except Exception as exc:  # noqa: BLE001 - a check or a failure inside the graph
            if expected is None or not in_space(b, t):
                verdicts.append("ok" if refused(exc) or expected is None else
                                f"raised {type(exc).__name__}")
            else:
                verdicts.append(f"rejects {(b, t)}")
            continue
        if expected is None:
            verdicts.append(f"runs where eager fails {(b, t)}")
        elif not close(expected, got):
            verdicts.append(f"WRONG {(b, t)}")
        else:
            verdicts.append("ok")
    bad = [v for v in verdicts if v != "ok"]
    return "yes" if not bad else "; ".join(bad)


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    try:
        return fn(), None, time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - the table names it
        return None, exc, time.perf_counter() - t0


def describe(exc) -> str:
    name = type(exc).__name__
    if isinstance(exc, st.ExportError):
        return f"refused ({name})"
    mod = type(exc).__module__
    return f"{name}" if mod.startswith("safetrace") else f"crash: {name}"


def sweep_one(name, torch_too=True) -> list[dict]:
    sw = MODELS[name]()
    rows = []
    for mode in ("named", "auto"):
        if mode == "named":
            batch = Dim("batch", min=1, max=64)
            size = Dim("size", min=sw.size_dim[0], max=sw.size_dim[1]) if sw.size_dim else None
        else:
            batch = size = Dim.AUTO
        spec = sw.spec(batch, size)
        ex = sw.make(*sw.example)
        row = {"model": name, "mode": mode}
        ep, err, t_st = timed(lambda: st.export(sw.model, (), ex, dynamic_shapes=spec))
        row["st"] = "yes" if err is None else describe(err)
        row["st_msg"] = "" if err is None else str(err)[:400]
        row["st_s"] = t_st
        if ep is not None:
            mod = ep.module()
            rng = ep.range_constraints if hasattr(ep, "range_constraints") else None
            row["ranges"] = str(rng)[:200] if rng is not None else ""

            def in_space(b, t, _mode=mode):
                if _mode == "auto":
                    return True         # every size the program accepts must match eager
                lo = sw.size_dim[0] if sw.size_dim else None
                return b >= 1 and (lo is None or lo <= t <= sw.size_dim[1])
            row["gen"] = check(sw, mod, [sw.example] + sw.others, in_space)
            if mode == "named":
                row["out"] = check(sw, mod, [sw.outside], lambda b, t: False)
        if torch_too:
            tspec = torch_spec(spec)
            tep, terr, t_tx = timed(lambda: torch.export.export(sw.model, (), ex,
                                                                dynamic_shapes=tspec))
            row["tx"] = "yes" if terr is None else type(terr).__name__
            row["tx_msg"] = "" if terr is None else str(terr)[:400]
            row["tx_s"] = t_tx
            if tep is not None:
                row["tx_gen"] = check(sw, tep.module(), sw.others, lambda b, t: True)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def _short(v) -> str:
    if v is None:
        return "-"
    return v if len(v) <= 40 else v[:37] + "..."


def table(rows: list[dict]) -> None:
    """One line a model: named Dims / Dim.AUTO in each cell."""
    by = {}
    for r in rows:
        by.setdefault(r["model"], {})[r["mode"]] = r
    print("| model | st exports | torch exports | st generalizes | torch generalizes | "
          "st refuses out-of-space (named) | torch/st export time |")
    print("|---|---|---|---|---|---|---|")
    for name, modes in by.items():
        n, a = modes.get("named", modes.get("-", {})), modes.get("auto", {})

        def pair(key, n=n, a=a):
            return f"{_short(n.get(key))} / {_short(a.get(key))}"

        def ratio(r):
            ok = r.get("tx") == "yes" and r.get("st") == "yes"
            return f"{r['tx_s'] / r['st_s']:.0f}x" if ok else "-"
        print(f"| {name} | {pair('st')} | {pair('tx')} | {pair('gen')} | {pair('tx_gen')} | "
              f"{_short(n.get('out'))} | {ratio(n)} / {ratio(a)} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--rows-out")
    ap.add_argument("--from-rows", nargs="+", help="print the table of saved rows (no export)")
    ap.add_argument("models", nargs="*")
    opts = ap.parse_args()
    if opts.from_rows:
        rows = {}
        for path in opts.from_rows:  # (a later file's row of a model replaces an earlier one)
            for line in open(path).read().splitlines():
                r = json.loads(line)
                rows[(r["model"], r["mode"])] = r
        table(list(rows.values()))
        return
    torch.set_num_threads(1)
    warm = torch.nn.Linear(2, 2)     # each library's one-time costs out of the first row
    st.export(warm, (torch.randn(3, 2),), dynamic_shapes=({0: Dim("b")},))
    if not opts.no_torch:
        torch.export.export(warm, (torch.randn(3, 2),),
                            dynamic_shapes=({0: torch.export.Dim("b")},))
    for name in opts.models or list(MODELS):
        t0 = time.perf_counter()
        try:
            rows = sweep_one(name, not opts.no_torch)
        except Exception as exc:  # noqa: BLE001 - the model does not build at this version
            rows = [{"model": name, "mode": "-", "st": f"build: {type(exc).__name__}",
                     "st_msg": str(exc)[:300]}]
        if opts.rows_out:
            with open(opts.rows_out, "a") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
        for r in rows:
            ratio = (f"{r['tx_s'] / r['st_s']:.1f}x" if r.get("tx") == "yes"
                     and r.get("st") == "yes" else "-")
            print(f"| {r['model']} | {r['mode']} | {r['st']} | {r.get('tx', '-')} | "
                  f"{r.get('gen', '-')} | {r.get('tx_gen', '-')} | {r.get('out', '-')} | "
                  f"{ratio} |  ({time.perf_counter() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
