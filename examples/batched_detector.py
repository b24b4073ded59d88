"""One detector program for every batch size and image size.

Detectors written as torchvision's are (a list of images in, one dict of boxes per image
out) cannot keep the batch symbolic: the list is as long as the batch, so each batch size
is another program structure.  Exported with a named batch Dim, safetrace refuses and says
why (torch.export refuses too).  The fix is a wrapper that keeps the batch inside tensors:
the per-image step is `st.map` over the batch (one traced body when exported, a Python
loop eagerly), each image's detections padded to the detector's cap with a `valid` mask,
stacked.  Exported once with
`Dim.AUTO` on batch, height and width, the program runs for batches of 1, 2, 3 at other
resolutions, with empty images among them, and matches eager each time, with grad mode
on (the default) as under torch.no_grad().

Run: python examples/batched_detector.py
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import safetrace as st


class ListDetector(torch.nn.Module):
    """torchvision's calling convention: images [3, H, W] in a list, one dict per image out
    (boxes [n, 4], scores [n]; n is data, at most `detections_per_img`)."""

    detections_per_img = 5

    def __init__(self) -> None:
        super().__init__()
        self.backbone = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 1, 1))

    def forward(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        found = []
        for image in images:
            f = self.backbone(image[None])                 # [1, 1, h, w]
            w = f.shape[-1]
            scores = f.sigmoid().flatten()                 # one box per cell
            keep = torch.where(scores > 0.55)[0]           # data: how many pass
            order = scores[keep].argsort(descending=True, stable=True)
            keep = keep[order[: self.detections_per_img]]
            xy = torch.stack([keep % w, keep // w], 1).to(image.dtype) * 2
            found.append({"boxes": torch.cat([xy, xy + 2], 1), "scores": scores[keep]})
        return found


class PerImage(torch.nn.Module):
    """images [B, 3, H, W] -> each output [B, k, ...] padded to k detections, and `valid`
    [B, k]: which rows are detections.  `st.map` runs the step in a Python loop eagerly
    (torch's eager `map` compiles its body, which real detectors refuse) and is one `map`
    over the batch when exported."""

    def __init__(self, detector: torch.nn.Module) -> None:
        super().__init__()
        self.detector, self.k = detector, detector.detections_per_img

    def one(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        found = self.detector([image])[0]
        n = found["boxes"].shape[0]                        # data, at most k
        out = {key: F.pad(v, (0, 0) * (v.dim() - 1) + (0, self.k - n))
               for key, v in found.items()}
        out["valid"] = torch.arange(self.k) < n
        return out

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return st.map(self.one, images)


class AsList(torch.nn.Module):
    """The batch tensor handed over as torchvision's list of images."""

    def __init__(self, detector: torch.nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, images: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        return self.detector(list(images))


def main() -> None:
    torch.manual_seed(0)
    detector = ListDetector().eval()
    images = torch.randn(2, 3, 32, 24)
    batch, auto = st.Dim("batch"), st.Dim.AUTO

    # 1. a list as long as the batch: refused, with the reason and the fix
    try:
        st.export(AsList(detector), (images,),
                  dynamic_shapes={"images": {0: batch, 2: auto, 3: auto}})
    except st.ConstraintViolationError as err:
        first = err.problems[0]
        print("list of images, named batch, refused:", first.dim, first.cause.split(". ")[0])
    else:
        raise AssertionError("a list as long as a symbolic batch was accepted")

    # 2. the batch kept inside tensors: one program for every batch and image size
    model = PerImage(detector).eval()
    # (grad mode as eager's default: ep.module() runs the map's body per image, so the
    # outputs require grad as eager's do; under torch.no_grad() neither does)
    ep = st.export(model, (images,), dynamic_shapes={"images": {0: auto, 2: auto, 3: auto}})
    print(ep.describe_contract())
    for b, h, w in [(2, 32, 24), (1, 32, 32), (3, 48, 40), (2, 8, 8), (3, 2, 2)]:
        for blank in (False, True):  # the first image blank: nothing passes the threshold
            x = torch.randn(b, 3, h, w)
            x[0] *= 0.0 if blank else 1.0
            got, want = ep.module()(x), model(x)
            assert got.keys() == want.keys()
            for key in want:
                torch.testing.assert_close(got[key], want[key])
                assert got[key].requires_grad == want[key].requires_grad
            counts = want["valid"].sum(1).tolist()
            print(f"batch {b}, {h}x{w}: boxes per image {counts}, as eager")
    try:
        ep.module()(torch.randn(0, 3, 32, 24))     # eager cannot stack an empty batch
    except st.InputMismatchError as err:
        print(f"an empty batch is refused: {str(err).splitlines()[0]}")
    else:
        raise AssertionError("an empty batch was accepted")


if __name__ == "__main__":
    main()
