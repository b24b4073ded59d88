"""Which ATen packet a torch function or Tensor method stands for.

Most calls arrive under the ATen name (``Tensor.add``, ``torch.cat``); dunders and a few
methods have other spellings; some functions run as they are (global state).
"""

from __future__ import annotations

from typing import Any

import torch

# dunder -> (aten packet name, swap the first two operands)
DUNDERS: dict[str, tuple[str, bool]] = {
    "__add__": ("add", False), "__radd__": ("add", False), "__iadd__": ("add_", False),
    "__sub__": ("sub", False), "__rsub__": ("rsub", False), "__isub__": ("sub_", False),
    "__mul__": ("mul", False), "__rmul__": ("mul", False), "__imul__": ("mul_", False),
    "__truediv__": ("div", False), "__itruediv__": ("div_", False), "__div__": ("div", False),
    "__floordiv__": ("floor_divide", False), "__ifloordiv__": ("floor_divide_", False),
    "__mod__": ("remainder", False), "__imod__": ("remainder_", False),
    "__pow__": ("pow", False), "__ipow__": ("pow_", False), "__rpow__": ("pow", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__neg__": ("neg", False), "__pos__": ("positive", False), "__abs__": ("abs", False),
    "__invert__": ("bitwise_not", False),
    "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", False),
    "__iand__": ("bitwise_and_", False),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", False),
    "__ior__": ("bitwise_or_", False),
    "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", False),
    "__ixor__": ("bitwise_xor_", False),
    "__lshift__": ("bitwise_left_shift", False), "__rshift__": ("bitwise_right_shift", False),
    "__eq__": ("eq", False), "__ne__": ("ne", False), "__lt__": ("lt", False),
    "__le__": ("le", False), "__gt__": ("gt", False), "__ge__": ("ge", False),
}

# Tensor methods that are casts: emitted as aten.to.dtype.
CAST_METHODS: dict[str, torch.dtype] = {
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64, "short": torch.int16,
    "char": torch.int8, "byte": torch.uint8, "bool": torch.bool,
    "cfloat": torch.complex64, "cdouble": torch.complex128,
}

# Other spellings of an ATen packet.
ALIASES: dict[str, str] = {
    "concat": "cat", "concatenate": "cat", "absolute": "abs", "arccos": "acos",
    "arcsin": "asin", "arctan": "atan", "clip": "clamp", "clip_": "clamp_",
    "multiply": "mul", "divide": "div", "subtract": "sub", "greater": "gt",
    "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "swapaxes": "transpose", "swapdims": "transpose", "moveaxis": "movedim",
    "negative": "neg", "fix": "trunc", "true_divide": "div",
}

# Functions that only read or set global state: run them as they are.
PASSTHROUGH_NAMES = frozenset({
    "_set_grad_enabled", "is_grad_enabled", "is_autocast_enabled", "get_autocast_dtype",
    "get_autocast_gpu_dtype", "get_autocast_cpu_dtype", "is_autocast_cpu_enabled",
    "set_autocast_enabled", "set_autocast_dtype", "_enter_autocast", "_exit_autocast",
    "is_inference_mode_enabled", "_set_autocast_enabled", "get_default_dtype",
    "is_tensor", "is_storage", "is_floating_point_type", "_get_tracing_state",
    "result_type", "promote_types", "can_cast", "is_nonzero_type", "__init__",
    "_C._set_grad_enabled", "set_grad_enabled", "_has_compatible_shallow_copy_type",
    "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "clear_autocast_cache",
    "autocast_increment_nesting", "autocast_decrement_nesting", "_is_functional_tensor",
    "device",  # torch.device("cpu"): a constant (its namesake aten::device(str) is no op)
})


def func_name(func: Any) -> str:
    """A stable name for a torch function or Tensor method."""
    name = getattr(func, "__name__", None)
    if name is None:
        name = repr(func)
    return name


# Python types torch accepts as dtypes (torch.ones(n, dtype=bool), x.to(float))
PY_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64,
             complex: torch.complex128}
