"""Shape rules of torch's functional collectives (``torch.ops._c10d_functional``), the
nodes torch.export records for ``torch.distributed._functional_collectives`` and for
``torch.distributed``'s in-place collectives.  Every rank holds the same shapes: a result
is its input's shape, with the first dim multiplied (all-gather), divided (reduce-scatter)
or given by the output split sizes (all-to-all) by the group's size.  ``wait_tensor``
returns its input.  The operators exist only where torch was built with distributed
support, so the rules are keyed by qualified name and registered on first call."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from safetrace.meta import TensorMeta
from safetrace.rules.common import check


def all_reduce(input: TensorMeta, *args: Any, **kwargs: Any) -> TensorMeta:
    """all_reduce, broadcast, wait_tensor: the input's shape."""
    return input.like()


def all_reduce_coalesced(inputs: Sequence[TensorMeta], *args: Any, **kwargs: Any) -> list[TensorMeta]:
    """The coalesced forms: one result per input, each of its input's shape."""
    return [t.like() for t in inputs]


def all_gather_into_tensor(input: TensorMeta, group_size: int, group_name: str) -> TensorMeta:
    """all_gather_into_tensor: the ranks' inputs stacked along dim 0."""
    check(input.ndim >= 1, "_c10d_functional.all_gather_into_tensor",
          "all_gather_into_tensor needs a tensor with at least one dim")
    return input.like((input.shape[0] * group_size,) + tuple(input.shape[1:]))


def reduce_scatter_tensor(input: TensorMeta, reduce_op: str, group_size: int,
               group_name: str) -> TensorMeta:
    """reduce_scatter_tensor: this rank's 1/group_size of dim 0 (which it divides)."""
    op = "_c10d_functional.reduce_scatter_tensor"
    check(input.ndim >= 1, op, "reduce_scatter_tensor needs a tensor with at least one dim")
    check(input.shape[0] % group_size == 0, op,
          f"input dimension 0 ({input.shape[0]}) must be a multiple of group_size "
          f"{group_size}")
    return input.like((input.shape[0] // group_size,) + tuple(input.shape[1:]))


def all_to_all_single(input: TensorMeta, output_split_sizes: Sequence[Any] | None,
                input_split_sizes: Sequence[Any] | None, group_name: str) -> TensorMeta:
    """all_to_all_single: dim 0 is the sum of the output split sizes (0 for an empty
    list, as torch's meta kernel gives); the input's split sizes sum to its dim 0."""
    op = "_c10d_functional.all_to_all_single"
    check(input.ndim >= 1, op, "all_to_all_single needs a tensor with at least one dim")
    if input_split_sizes is not None and len(input_split_sizes):
        total: Any = 0
        for s in input_split_sizes:
            total = total + s
        check(total == input.shape[0], op, f"the input split sizes sum to {total}, not to "
                                           f"the input's dim 0 ({input.shape[0]})")
    if output_split_sizes is None:
        return input.like()
    out: Any = 0  # (an empty list: dim 0 is 0, as torch's meta kernel gives)
    for s in output_split_sizes:
        out = out + s
    return input.like((out,) + tuple(input.shape[1:]))


NAMED_RULES: dict[str, Callable[..., Any]] = {
    "_c10d_functional::all_reduce": all_reduce,
    "_c10d_functional::broadcast": all_reduce,
    "_c10d_functional::wait_tensor": all_reduce,
    "_c10d_functional::all_reduce_coalesced": all_reduce_coalesced,
    "_c10d_functional::all_gather_into_tensor": all_gather_into_tensor,
    "_c10d_functional::reduce_scatter_tensor": reduce_scatter_tensor,
    "_c10d_functional::all_to_all_single": all_to_all_single,
}
