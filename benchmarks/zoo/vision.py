"""Vision architectures of the zoo: timm (one small model per family) and torchvision
(classification, segmentation, video, optical flow), random weights, no downloads.

Every case has a named Dim for the batch and ``Dim.AUTO`` for height and width (and the
clip length of video models), as real users export vision models; the other sizes change
the batch (1 included) and the resolution.  Models whose position tables fix the input
size change the batch only (both exporters must then specialize H and W).

timm and torchvision do not import beside the main venv's torch 2.13 (the registry's
torchvision wheel is built for another torch): these entries need the zoo venv, see
``NEEDS``; without it they are skipped with that message.
"""

from __future__ import annotations

import importlib.util

import torch

from safetrace import Dim

from benchmarks.zoo import Case, Entry

NEEDS = ("the vision zoo needs timm and torchvision, which do not import beside torch 2.13: "
         "python -m venv /work/zoo/.venv && /work/zoo/.venv/bin/pip install torch==2.14.1 "
         "torchvision==0.29.1 timm==1.0.31 pytest hypothesis sympy numpy safetensors, then run "
         "PYTHONPATH=$PWD /work/zoo/.venv/bin/python benchmarks/bench_zoo.py --family timm")


def available() -> bool:
    """True when timm and torchvision import (the zoo venv)."""
    if importlib.util.find_spec("timm") is None or importlib.util.find_spec("torchvision") is None:
        return False
    try:
        import torchvision  # noqa: F401 - a wheel built for another torch fails here
    except Exception:  # noqa: BLE001
        return False
    return True


# (batch, height, width) of the example and of the two other inputs.  H != W in the example:
# torch.export's duck sizing would otherwise tie H to W and reject every non-square input.
SIZES = ((2, 64, 96), (1, 96, 64), (3, 128, 128))
FIXED = ((2, 64, 64), (1, 64, 64), (3, 64, 64))


def _image(b, h, w, c=3):
    g = torch.Generator().manual_seed(b * 10007 + h * 101 + w)
    return torch.randn(b, c, h, w, generator=g)


def _init_norms(model):
    """Non-trivial running statistics, so that eval-mode BatchNorm is not an identity."""
    g = torch.Generator().manual_seed(1)
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm) and mod.running_mean is not None:
            mod.running_mean.copy_(torch.rand(mod.running_mean.shape, generator=g) * 0.2 - 0.1)
            mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=g) + 0.5)
    return model


def _image_case(model, sizes=SIZES, channels=3, fixed=False) -> Case:
    sizes = FIXED if fixed else sizes
    batch = Dim("batch", min=1, max=64)
    spec = ({0: batch, 2: Dim.AUTO, 3: Dim.AUTO},)   # by position: forward(x) / (input)
    (b, h, w), o1, o2 = sizes
    return Case(_init_norms(model).eval(), (_image(b, h, w, channels),), {}, spec,
                [((_image(*o, c=channels),), {}) for o in (o1, o2)],
                outside=((_image(b, h, w, channels + 1),), {}))


def _timm(name, sizes=SIZES, fixed=False, **kw):
    def factory() -> Case:
        import timm
        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False, num_classes=10, **kw)
        return _image_case(model, sizes, fixed=fixed)
    return factory


def _tv(builder, sizes=SIZES, fixed=False, module="torchvision.models", **kw):
    def factory() -> Case:
        mod = importlib.import_module(module)
        torch.manual_seed(0)
        return _image_case(getattr(mod, builder)(weights=None, **kw), sizes, fixed=fixed)
    return factory


def tv_vit() -> Case:
    """torchvision's VisionTransformer (vit_b_16's architecture, 2 layers, width 64): its
    class-token table fixes the image size, so only the batch varies."""
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    m = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64,
                          mlp_dim=128, num_classes=10)
    return _image_case(m, fixed=True)


def tv_swin() -> Case:
    """torchvision's swin_t architecture at width 48 (its windows pad any resolution)."""
    from torchvision.models.swin_transformer import SwinTransformer
    torch.manual_seed(0)
    m = SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2],
                        num_heads=[3, 6, 12, 24], window_size=[7, 7], num_classes=10)
    return _image_case(m)


def _segmentation(builder):
    def factory() -> Case:
        from torchvision.models import segmentation
        torch.manual_seed(0)
        kw = {"aux_loss": False} if builder != "lraspp_mobilenet_v3_large" else {}
        m = getattr(segmentation, builder)(weights=None, weights_backbone=None, num_classes=5, **kw)
        return _image_case(m)
    return factory


def tv_r3d_18() -> Case:
    """3D ResNet on clips (batch, 3, time, H, W): batch named, time/H/W under Dim.AUTO."""
    from torchvision.models import video
    torch.manual_seed(0)
    m = _init_norms(video.r3d_18(weights=None, num_classes=10)).eval()

    def clip(b, t, h, w):
        return torch.randn(b, 3, t, h, w, generator=torch.Generator().manual_seed(b + t + h + w))

    spec = ({0: Dim("batch", min=1, max=64), 2: Dim.AUTO, 3: Dim.AUTO, 4: Dim.AUTO},)
    return Case(m, (clip(2, 4, 32, 48),), {}, spec,
                [((clip(1, 6, 48, 32),), {}), ((clip(3, 3, 40, 40),), {})],
                outside=((torch.randn(2, 4, 4, 32, 48),), {}))


def tv_raft_small() -> Case:
    """RAFT (small) optical flow between two frames, 2 refinement steps; H and W must be
    multiples of 8 and at least 128 (its correlation pyramid), the frames share the batch."""
    from torchvision.models import optical_flow
    torch.manual_seed(0)

    class Flow(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.raft = optical_flow.raft_small(weights=None)

        def forward(self, a, b):
            return self.raft(a, b, num_flow_updates=2)[-1]

    m = _init_norms(Flow()).eval()
    batch = Dim("batch", min=1, max=16)
    spec = {"a": {0: batch, 2: Dim.AUTO, 3: Dim.AUTO}, "b": {0: batch, 2: Dim.AUTO, 3: Dim.AUTO}}

    def pair(b, h, w):
        return (_image(b, h, w), _image(b, h, w) * 0.5 + 0.1)

    return Case(m, pair(2, 128, 192), {}, spec, [(pair(1, 192, 128), {}), (pair(3, 136, 136), {})],
                outside=((_image(2, 128, 192), _image(3, 128, 192)), {}))


# timm: one small model per architecture family (name in the zoo, timm name, options).
TIMM = [
    ("timm_resnet", "resnet10t", {}),
    ("timm_efficientnet", "efficientnet_b0", {}),
    ("timm_tf_efficientnet", "tf_efficientnet_b0", {}),          # TF "same" padding
    ("timm_mobilenetv3", "mobilenetv3_small_050", {}),
    ("timm_mobilenetv4", "mobilenetv4_conv_small", {}),
    ("timm_convnext", "convnext_atto", {}),
    ("timm_vit", "vit_tiny_patch16_224", {"dynamic_img_size": True}),
    ("timm_deit", "deit_tiny_patch16_224", {"dynamic_img_size": True}),
    ("timm_deit3", "deit3_small_patch16_224", {"dynamic_img_size": True, "depth": 4}),
    ("timm_flexivit", "flexivit_small", {"dynamic_img_size": True, "depth": 4}),
    ("timm_eva02", "eva02_tiny_patch14_224", {"dynamic_img_size": True},
     ((2, 56, 84), (1, 84, 56), (3, 112, 112))),
    ("timm_swin", "swin_tiny_patch4_window7_224",
     {"dynamic_img_size": True, "strict_img_size": False, "embed_dim": 48,
      "depths": (2, 2, 2, 2)}),
    # MobileViT resizes a feature map whose size is odd at the 2x2 patch unfold (a branch per
    # stage on H/8, H/16, H/32): multiples of 64 take one path at every stage
    ("timm_mobilevit", "mobilevit_xxs", {}, ((2, 64, 128), (1, 128, 64), (3, 192, 192))),
    ("timm_maxvit", "maxvit_nano_rw_256", {"img_size": 128},
     ((2, 128, 128), (1, 128, 128), (3, 128, 128))),
    ("timm_regnet", "regnetx_002", {}),
    ("timm_inception", "inception_v3", {}, ((2, 96, 128), (1, 128, 96), (3, 160, 160))),
    ("timm_efficientvit_mit", "efficientvit_b0", {}),
    ("timm_efficientvit_msra", "efficientvit_m0", {}),
    ("timm_densenet", "densenet121", {}),
    ("timm_ghostnet", "ghostnet_050", {}),
    ("timm_mnasnet", "mnasnet_small", {}),
    ("timm_hrnet", "hrnet_w18_small", {}),
    ("timm_dla", "dla34", {}),
    ("timm_pvt_v2", "pvt_v2_b0", {}),
    ("timm_poolformer", "poolformer_s12", {}),
    ("timm_edgenext", "edgenext_xx_small", {}),
    ("timm_fastvit", "fastvit_t8", {}),
    ("timm_repvit", "repvit_m1", {}),
    ("timm_rexnet", "rexnet_100", {}),
    ("timm_lcnet", "lcnet_050", {}),
    ("timm_hgnetv2", "hgnetv2_b0", {}),
    ("timm_mobileone", "mobileone_s0", {}),
    ("timm_tiny_vit", "tiny_vit_5m_224", {}, ((2, 64, 64), (1, 64, 64), (3, 64, 64))),
    ("timm_caformer", "caformer_s18", {}),
    ("timm_levit", "levit_128s", {"img_size": 64}, None, True),                  # attention biases: fixed
    ("timm_mixer", "mixer_s16_224", {"img_size": 64}, None, True),   # token MLP: fixed
    ("timm_xcit", "xcit_nano_12_p16_224", {}),
    ("timm_cait", "cait_xxs24_224", {"img_size": 64, "depth": 4}, None, True),
    ("timm_res2net", "res2net50_14w_8s", {}),
    ("timm_resnest", "resnest14d", {}),
    ("timm_cspnet", "cspresnet50", {}),
    ("timm_vovnet", "ese_vovnet19b_dw", {}),
    ("timm_xception", "xception41", {}),
    ("timm_dpn", "dpn48b", {}),
    ("timm_gernet", "gernet_s", {}),
    ("timm_twins", "twins_pcpvt_small", {}),
    ("timm_focalnet", "focalnet_tiny_srf", {}),
    ("timm_davit", "davit_tiny", {}),
    ("timm_inception_next", "inception_next_atto", {}),
    ("timm_starnet", "starnet_s050", {}),
    ("timm_mambaout", "mambaout_femto", {}),
    ("timm_efficientformerv2", "efficientformerv2_s0", {"img_size": 64}, None, True),
    ("timm_sknet", "skresnet18", {}),
]

# torchvision classification (builder, options).
TORCHVISION = [
    ("tv_resnet18", "resnet18", {}),
    ("tv_mobilenet_v3", "mobilenet_v3_small", {}),
    ("tv_efficientnet", "efficientnet_b0", {}),
    ("tv_convnext", "convnext_tiny", {}),
    ("tv_regnet", "regnet_y_400mf", {}),
    ("tv_shufflenet", "shufflenet_v2_x0_5", {}),
    ("tv_squeezenet", "squeezenet1_1", {}),
    ("tv_densenet", "densenet121", {}),
    ("tv_mnasnet", "mnasnet0_5", {}),
    ("tv_googlenet", "googlenet", {"aux_logits": False, "init_weights": True}),
]


def _timm_entries() -> list[Entry]:
    out = []
    for row in TIMM:
        name, model, kw = row[:3]
        sizes = row[3] if len(row) > 3 and row[3] is not None else SIZES
        fixed = len(row) > 4 and row[4]
        note = "fixed resolution (position tables)" if fixed else ""
        out.append(Entry(name, _timm(model, sizes, fixed, **kw), family="timm", note=note))
    return out


def _tv_entries() -> list[Entry]:
    out = [Entry(name, _tv(b, **kw), family="torchvision") for name, b, kw in TORCHVISION]
    out.append(Entry("tv_vit", tv_vit, family="torchvision",
                     note="fixed resolution (class-token table)"))
    out.append(Entry("tv_swin", tv_swin, family="torchvision"))
    for b in ("fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"):
        out.append(Entry(f"tv_{b.split('_')[0]}", _segmentation(b), family="torchvision",
                         note="segmentation"))
    out.append(Entry("tv_r3d_18", tv_r3d_18, family="torchvision", note="video"))
    out.append(Entry("tv_raft_small", tv_raft_small, family="torchvision", note="optical flow"))
    return out


ENTRIES = _timm_entries() + _tv_entries()
