"""A model that pads like TensorFlow's 'same' convolutions, from the input's size (as
transformers' MobileNetV1/V2 do): its golden refusal and fix are in test_messages.py and
test_papercuts.py; the message names lines of this file, so keep them where they are."""

from __future__ import annotations

import torch


class TfSamePadding(torch.nn.Module):
    """`n` stride-2 3x3 convs, each padding by the parity of its input's height: the
    program holds for heights that stay even through every stride (multiples of 2**n)."""

    def __init__(self, n: int = 3):
        super().__init__()
        torch.manual_seed(0)
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(2, 2, 3, stride=2) for _ in range(n))

    def forward(self, x):
        for conv in self.convs:
            height = int(x.shape[-2])
            pad = 1 if height % 2 == 0 else 2
            x = conv(torch.nn.functional.pad(x, (1, 1, pad // 2, pad - pad // 2)))
        return x
