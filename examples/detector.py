"""A small object detector with dynamic image size and a data-dependent number of boxes.

A conv backbone scores one box per feature-map cell; post-processing keeps the boxes whose
score passes a threshold (how many is data), suppresses overlaps with a torch-only NMS
registered as a custom op (its output size is data too: `new_dynamic_size`), and returns
at most 5.  Exported once with `Dim.AUTO` height and width, the program runs at other
resolutions, including images where nothing is detected, and matches eager each time.

Run: python examples/detector.py
"""

from __future__ import annotations

import torch

import safetrace as st


@st.custom_op("example_det::nms")
def nms(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
    """Greedy non-maximum suppression: the indices kept, by decreasing score."""
    order = scores.argsort(descending=True)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    suppressed = torch.zeros(len(boxes), dtype=torch.bool)
    keep = []
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        lt = torch.maximum(boxes[i, :2], boxes[:, :2])
        rb = torch.minimum(boxes[i, 2:], boxes[:, 2:])
        inter = (rb - lt).clamp(min=0).prod(1)
        suppressed |= inter / (area[i] + area - inter) > iou
    return torch.tensor(keep, dtype=torch.int64)


@st.register_fake(nms)
def _(boxes, scores, iou):  # metadata only: how many boxes survive is data
    return boxes.new_empty((st.new_dynamic_size(max=boxes.shape[0]),), dtype=torch.int64)


class TinyDetector(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU())
        self.score = torch.nn.Conv2d(16, 1, 1)
        self.size = torch.nn.Conv2d(16, 2, 1)

    def forward(self, image: torch.Tensor):
        f = self.backbone(image)                       # [1, 16, H/4, W/4]
        h, w = f.shape[-2:]
        scores = self.score(f).sigmoid().flatten()     # one box per cell
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        centers = torch.stack([xs.flatten(), ys.flatten()], 1).to(image.dtype) * 4 + 2
        half = self.size(f).exp().flatten(2)[0].t() * 4  # [h*w, 2]
        boxes = torch.cat([centers - half, centers + half], 1)
        keep = torch.where(scores > 0.55)[0]           # data: how many pass
        boxes, scores = boxes[keep], scores[keep]
        kept = nms(boxes, scores, 0.3)[:5]
        return boxes[kept], scores[kept]


def main() -> None:
    torch.manual_seed(0)
    model = TinyDetector().eval()
    image = torch.randn(1, 3, 64, 48)
    ep = st.export(model, (image,), dynamic_shapes={"image": (1, 3, st.Dim.AUTO, st.Dim.AUTO)})
    print(ep.describe_contract())
    for h, w in [(64, 48), (32, 32), (96, 128), (8, 8), (4, 12)]:
        for scale in (1.0, 0.0):  # a blank image: nothing passes the threshold
            x = torch.randn(1, 3, h, w) * scale
            boxes, scores = ep.module()(x)
            want_boxes, want_scores = model(x)
            torch.testing.assert_close(boxes, want_boxes)
            torch.testing.assert_close(scores, want_scores)
            print(f"{h}x{w} image (scale {scale}): {len(boxes)} boxes, as eager")
    try:
        ep.module()(torch.randn(2, 3, 64, 48))        # the batch was exported as 1
    except st.InputMismatchError as err:
        print(f"a batch of 2 is refused: {str(err).splitlines()[0]}")
    else:
        raise AssertionError("a batch of 2 was accepted")


if __name__ == "__main__":
    main()
