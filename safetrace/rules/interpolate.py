"""Shape rules of upsampling (the ops behind torch.nn.functional.interpolate).

Every op maps (N, C, *spatial) to (N, C, *output_size).  The ``.vec`` overloads take
either output_size or scale_factors; a scale gives ``floor(size * scale)``:

* an integer-valued scale (2.0) gives ``size * 2``: exact, no guard;
* a plain int size is computed as torch does, in double precision then truncated;
* a symbolic size gives the floor of the double product exactly as torch computes it
  (the engine's SymFloat follows IEEE double), with no guard.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from safetrace.meta import TensorMeta
from safetrace.rules.common import check, every
from safetrace.rules.registry import rule
from safetrace.symbolic import SymFloat

aten = torch.ops.aten


def scaled_size(size: Any, scale: float) -> Any:
    """floor(size * scale) for an input size and a float scale factor, as torch computes it
    (a double product, truncated; sizes are >= 0, so truncating is flooring).

    A symbolic size keeps Python's float semantics (the engine's SymFloat): the result is
    ``(size*p)//q`` where that provably equals the double product's floor, else the exact
    float expression ``int(size*scale // 1)``; neither guards the size.
    """
    if isinstance(scale, SymFloat):  # a scale computed from sizes: the kernel's own double
        return math.trunc(size * scale)  # product, truncated, as an exact float expression
    if float(scale).is_integer():
        return size * int(scale)
    if isinstance(size, int):
        return int(size * scale)
    return math.floor(size * scale)


# the dtypes each CPU kernel computes (torch 2.13): another one raises NotImplementedError
# at every call ('"compute_indices_weights_linear" not implemented for 'Byte''), which a
# loaded file's uint8 upsample_linear1d reached (hostile_probe's ``scales``, session 36)
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_CPU_DTYPES = {"linear1d": _FLOATS, "trilinear3d": _FLOATS,
               "bilinear2d_aa": (torch.uint8, torch.float32, torch.float64),
               "bicubic2d_aa": (torch.uint8, torch.float32, torch.float64)}


def upsample(op: str, n: int, input: TensorMeta, output_size: Sequence | None) -> TensorMeta:
    """Check input and output sizes like the kernels; (N, C, *output_size)."""
    kind = op.rsplit("upsample_", 1)[-1]
    dtypes = _CPU_DTYPES.get(kind, (torch.uint8, *_FLOATS))
    check(input.device.type != "cpu" or input.dtype in dtypes, op,
          f"\"{op.removeprefix('aten.')}\" not implemented for '{input.dtype}' on the CPU "
          f"(its kernel computes {', '.join(str(d).removeprefix('torch.') for d in dtypes)})")
    check(output_size is not None and len(output_size) == n, op,
          f"It is expected output_size equals to {n}, but got size "
          f"{None if output_size is None else len(output_size)}")
    assert output_size is not None
    check(input.ndim == n + 2, op, f"It is expected input_size equals to {n + 2}, but got size "
                                   f"{input.ndim}")
    check(every(s != 0 for s in input.shape[1:]), op, f"Non-empty {n + 2}D data tensor expected "
                                                    f"but got a tensor with sizes "
                                                    f"{list(input.shape)}")
    check(every([*(s > 0 for s in input.shape[2:]), *(s > 0 for s in output_size)]), op,
          f"Input and output sizes should be greater than 0, but got input "
          f"{list(input.shape[2:])} and output {list(output_size)}")
    return input.like(tuple(input.shape[:2]) + tuple(output_size))


def upsample_vec(op: str, n: int, input: TensorMeta, output_size: Sequence | None,
                 scale_factors: Sequence[float] | None) -> TensorMeta:
    """The .vec overloads: exactly one of output_size and scale_factors."""
    check((output_size is None) != (scale_factors is None), op,
          "Must specify exactly one of output_size and scale_factors")
    if scale_factors is not None:
        check(len(scale_factors) == n, op, f"expected {n} scale factors, got "
                                           f"{len(scale_factors)}")
        check(input.ndim == n + 2, op, f"It is expected input_size equals to {n + 2}, but got "
                                       f"size {input.ndim}")
        output_size = [scaled_size(s, f) for s, f in zip(input.shape[2:], scale_factors)]
    else:
        assert output_size is not None
        check(len(output_size) == n, op, f"expected output_size of {n} values, got "
                                         f"{list(output_size)}")
    return upsample(op, n, input, output_size)


def _register(packet: Any, n: int, align: bool) -> None:
    """Register packet.default and packet.vec (align: the op takes align_corners)."""
    name = packet.__name__
    op = f"aten.{name}"
    if align:
        def default(self: TensorMeta, output_size: Sequence, align_corners: bool,
                    *scales: float | None, **kw: Any) -> TensorMeta:
            return upsample(op, n, self, output_size)

        def vec(input: TensorMeta, output_size: Sequence | None, align_corners: bool,
                scale_factors: Sequence[float] | None) -> TensorMeta:
            return upsample_vec(op, n, input, output_size, scale_factors)
    else:
        def default(self: TensorMeta, output_size: Sequence,  # type: ignore[misc]
                    *scales: float | None, **kw: Any) -> TensorMeta:
            return upsample(op, n, self, output_size)

        def vec(input: TensorMeta, output_size: Sequence | None,  # type: ignore[misc]
                scale_factors: Sequence[float] | None) -> TensorMeta:
            return upsample_vec(op, n, input, output_size, scale_factors)
    default.__name__ = default.__qualname__ = name
    vec.__name__ = vec.__qualname__ = f"{name}_vec"
    default.__doc__ = f"{name}: (N, C, *{n} spatial) -> (N, C, *output_size)."
    vec.__doc__ = f"{name}.vec: output_size, or floor(size * scale) per spatial dim."
    rule(packet.default)(default)
    rule(packet.vec)(vec)


# op, spatial dims, takes align_corners
UPSAMPLE_OPS = [
    (aten.upsample_nearest1d, 1, False),
    (aten.upsample_nearest2d, 2, False),
    (aten.upsample_nearest3d, 3, False),
    (aten._upsample_nearest_exact1d, 1, False),
    (aten._upsample_nearest_exact2d, 2, False),
    (aten._upsample_nearest_exact3d, 3, False),
    (aten.upsample_linear1d, 1, True),
    (aten.upsample_bilinear2d, 2, True),
    (aten.upsample_bicubic2d, 2, True),
    (aten.upsample_trilinear3d, 3, True),
    (aten._upsample_bilinear2d_aa, 2, True),
    (aten._upsample_bicubic2d_aa, 2, True),
]

for _packet, _n, _align in UPSAMPLE_OPS:
    _register(_packet, _n, _align)


# -- grid_sample, affine_grid -----------------------------------------------------------------


def grid_sample_shape(op: str, input: TensorMeta, grid: TensorMeta, interpolation_mode: int,
                      ndim: int | None = None) -> TensorMeta:
    """input (N, C, *in_spatial), grid (N, *out_spatial, k) -> (N, C, *out_spatial)."""
    check(input.dtype == grid.dtype, op, f"grid_sampler(): expected input and grid to have "
          f"same dtype, but input has {input.dtype} and grid has {grid.dtype}")
    ranks, what = ((4, 5), "4D or 5D") if ndim is None else ((ndim,), f"{ndim}D")
    check(input.ndim in ranks and input.ndim == grid.ndim, op, f"grid_sampler(): expected "
          f"{what} input and grid with same number of dimensions, but got input with sizes "
          f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    check(input.shape[0] == grid.shape[0], op, f"grid_sampler(): expected grid and input to "
          f"have same batch size, but got input with sizes {list(input.shape)} and grid with "
          f"sizes {list(grid.shape)}")
    k = input.ndim - 2
    check(grid.shape[-1] == k, op, f"grid_sampler(): expected grid to have size {k} in last "
          f"dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        check(input.shape[i] != 0, op, f"grid_sampler(): expected input to have non-empty "
              f"spatial dimensions, but input has sizes {list(input.shape)} with dimension {i} "
              f"being empty")
    if input.ndim == 5:
        check(interpolation_mode != 2, op, "grid_sampler(): bicubic interpolation only "
                                           "supports 4D input")
    check(input.dtype.is_floating_point, op, f'"grid_sampler_{k}d_cpu" not implemented for '
                                             f"'{input.dtype}'")
    return input.like(shape=tuple(input.shape[:2]) + tuple(grid.shape[1:-1]))


@rule(aten.grid_sampler.default)
def grid_sampler(input: TensorMeta, grid: TensorMeta, interpolation_mode: int,
                 padding_mode: int, align_corners: bool) -> TensorMeta:
    """F.grid_sample: 4-d or 5-d input sampled at the grid's points."""
    return grid_sample_shape("aten.grid_sampler", input, grid, interpolation_mode)


@rule(aten.grid_sampler_2d.default)
def grid_sampler_2d(input: TensorMeta, grid: TensorMeta, interpolation_mode: int,
                    padding_mode: int, align_corners: bool) -> TensorMeta:
    """(N, C, H, W) sampled at grid (N, H', W', 2) -> (N, C, H', W')."""
    return grid_sample_shape("aten.grid_sampler_2d", input, grid, interpolation_mode, 4)


@rule(aten.grid_sampler_3d.default)
def grid_sampler_3d(input: TensorMeta, grid: TensorMeta, interpolation_mode: int,
                    padding_mode: int, align_corners: bool) -> TensorMeta:
    """(N, C, D, H, W) sampled at grid (N, D', H', W', 3) -> (N, C, D', H', W')."""
    return grid_sample_shape("aten.grid_sampler_3d", input, grid, interpolation_mode, 5)


@rule(aten.affine_grid_generator.default)
def affine_grid_generator(theta: TensorMeta, size: Sequence[Any],
                          align_corners: bool) -> TensorMeta:
    """theta (N, k, k+1) and size (N, C, *spatial) -> (N, *spatial, k), in theta's dtype."""
    op = "aten.affine_grid_generator"
    check(len(size) in (4, 5), op, "AffineGridGenerator needs 4d (spatial) or 5d (volumetric) "
                                   "inputs.")
    k = len(size) - 2
    n = size[0]
    ok = theta.ndim == 3 and theta.shape[0] == n and theta.shape[2] == k + 1
    check(ok, op, f"Expected size for first two dimensions of batch2 tensor to be: "
                  f"[{n}, {k + 1}] but got: {list(theta.shape[:2])}.")
    check(theta.shape[1] == k, op, f"shape '{[n, *size[2:], k]}' is invalid for the affine "
                                   f"matrices of shape {list(theta.shape)}")
    return theta.like(shape=(n, *size[2:], k))
