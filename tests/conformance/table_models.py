"""The architecture case tables (ex benchmarks/sweep_models.py and sweep_models2.py):
name -> factory of a checker.Case."""

from __future__ import annotations

from tests.conformance.models.arch_0 import (
    convnextv2, detr, espcn, fcos, ghostnet, hrnet_fuse, mobilenet_same, retina_anchors, sam_window, stn, unet_interp, unet_pad, vit_interp, vit_interp_size,
)
from tests.conformance.models.arch_1 import (
    alibi, audio_frontend, bilstm_mask, clip_like, fcn_vae, kv_cache, llama_ref, mlm_tied, moe, packed_lstm, sliding_window, t5_bias, tabular, transfo_xl,
)
from tests.conformance.models.arch_2 import (
    box_norm, capsnet, conformer, ctc_greedy, dcn, dgcnn, dlinear, fft_conv, gat, gpt_fast, gru_decoder, linear_attn, nerf, sasrec, sqrt_pool,
)
from tests.conformance.models.arch2_0 import (
    ddim_step, deeplabv3plus, dit, dit_hw, fpn_panet, pixelcnn, pixelcnn_functional, sd_unet, vqvae, yolov8, yolov8_float_stride,
)
from tests.conformance.models.arch2_1 import (
    bifpn, centernet, graph_transformer, mae, mlp_mixer, nerf_pe, pointnet2_sa, rtdetr_select, swin_mask,
)
from tests.conformance.models.arch2_2 import (
    autoformer, informer, local_attn, mamba2_ssd, mamba2_ssd_torchbool, performer, retnet, rwkv_v2, wavenet,
)
from tests.conformance.models.arch2_3 import (
    ctc_loss, hf_bert_cls, hf_bert_mlm, hf_gpt2_lm, hf_llama_lm, lstm_lm, nn_transformer, nn_transformer_causal, squeezeformer, tabtransformer, two_tower,
)


ARCH = {
    # vision
    "convnextv2": convnextv2,
    "ghostnet": ghostnet,
    "unet_pad": unet_pad,
    "unet_interp": unet_interp,
    "hrnet_fuse": hrnet_fuse,
    "fcos": fcos,
    "retina_anchors": retina_anchors,
    "detr": detr,
    "vit_interp": vit_interp,
    "vit_interp_size": vit_interp_size,
    "sam_window": sam_window,
    "espcn": espcn,
    "mobilenet_same": mobilenet_same,
    "stn": stn,
    "fcn_vae": fcn_vae,
    "capsnet": capsnet,
    # sequence / language
    "moe": moe,
    "llama_ref": llama_ref,
    "kv_cache": kv_cache,
    "alibi": alibi,
    "t5_bias": t5_bias,
    "sliding_window": sliding_window,
    "clip_like": clip_like,
    "transfo_xl": transfo_xl,
    "mlm_tied": mlm_tied,
    "linear_attn": linear_attn,
    "fft_conv": fft_conv,
    "bilstm_mask": bilstm_mask,
    "packed_lstm": packed_lstm,
    "gru_decoder": gru_decoder,
    "audio_frontend": audio_frontend,
    "conformer": conformer,
    "ctc_greedy": ctc_greedy,
    # other
    "tabular": tabular,
    "sasrec": sasrec,
    "dcn": dcn,
    "nerf": nerf,
    "dgcnn": dgcnn,
    "gat": gat,
    "dlinear": dlinear,
    "gpt_fast": gpt_fast,
    "box_norm": box_norm,
    "sqrt_pool": sqrt_pool,
}

ARCH2 = {
    # diffusion / generative
    "sd_unet": sd_unet,
    "dit": dit,
    "dit_hw": dit_hw,
    "vqvae": vqvae,
    "ddim_step": ddim_step,
    "pixelcnn": pixelcnn,
    "pixelcnn_functional": pixelcnn_functional,
    # detection / segmentation / vision
    "yolov8": yolov8,
    "yolov8_float_stride": yolov8_float_stride,
    "deeplabv3plus": deeplabv3plus,
    "fpn_panet": fpn_panet,
    "bifpn": bifpn,
    "centernet": centernet,
    "rtdetr_select": rtdetr_select,
    "swin_mask": swin_mask,
    "mlp_mixer": mlp_mixer,
    "mae": mae,
    # points / graphs / fields
    "pointnet2_sa": pointnet2_sa,
    "graph_transformer": graph_transformer,
    "nerf_pe": nerf_pe,
    # sequence / time series
    "autoformer": autoformer,
    "informer": informer,
    "wavenet": wavenet,
    "mamba2_ssd": mamba2_ssd,
    "mamba2_ssd_torchbool": mamba2_ssd_torchbool,
    "rwkv_v2": rwkv_v2,
    "retnet": retnet,
    "performer": performer,
    "local_attn": local_attn,
    "squeezeformer": squeezeformer,
    # tabular / retrieval / losses
    "tabtransformer": tabtransformer,
    "two_tower": two_tower,
    "ctc_loss": ctc_loss,
    "nn_transformer": nn_transformer,
    "nn_transformer_causal": nn_transformer_causal,
    "lstm_lm": lstm_lm,
    "hf_bert_mlm": hf_bert_mlm,
    "hf_bert_cls": hf_bert_cls,
    "hf_gpt2_lm": hf_gpt2_lm,
    "hf_llama_lm": hf_llama_lm,
}
