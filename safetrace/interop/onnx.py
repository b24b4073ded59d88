"""``st.to_onnx(ep, path)``: ONNX through ``torch.onnx.export(ep.to_torch())``."""

from __future__ import annotations

from typing import Any


def export_onnx(ep: Any, path: Any = None, **kwargs: Any) -> Any:
    raise NotImplementedError
