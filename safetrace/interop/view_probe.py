"""An input of symbolic sizes made as a view of its own empty storage resized to torch's
size (``storage_nbytes``, ``RESIZE``: ``FakeBuilder.meta_tensor``'s), and the check behind
``fakes.own_views`` (made once per process and rank) that compares it with ``torch.empty``'s."""

from __future__ import annotations

from typing import Any

import torch

from safetrace.interop.symbols import backed_symint, conversion_env
from safetrace.interop.symops import sym_op

_META = torch.device("meta")


def storage_nbytes(sizes: list, dtype: torch.dtype) -> Any:
    """torch.empty's storage size of a contiguous tensor: ``itemsize * (0 + numel)``, the
    numel a product from 1, in that order (the expression's form depends on it)."""
    numel: Any = 1
    for s in sizes:
        numel = sym_op("mul", numel, s)
    return sym_op("mul", dtype.itemsize, sym_op("add", 0, numel))


def _resize(elem: torch.Tensor, nbytes: Any) -> None:
    torch.ops.inductor.resize_storage_bytes_.default(elem, nbytes)


RESIZE = _resize


def probe(rank: int, fast: bool, contiguous: Any) -> list:
    """What torch's tools see of an input of this rank made by ``torch.empty`` (`fast`
    False) or as ``FakeBuilder.meta_tensor`` makes it (a view of an empty storage resized
    to torch's size), on scratch ShapeEnvs: ``fakes.own_views`` compares the two."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.utils._sympy.value_ranges import ValueRanges


    out: list = []
    for shape in range(4):  # (a ShapeEnv each: a guard one made would hide another's)
        env = conversion_env()
        mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
        a = backed_symint(env, 8, "x.shape[0]", ValueRanges(1, 1024))
        b = backed_symint(env, 5, "x.shape[1]", ValueRanges(0, 64))
        c = backed_symint(env, 3, "y.shape[0]", ValueRanges(2, 99))
        sizes = ([a, 3, b, 2][:rank], [2 * a + 1, b, c, 1][:rank],
                 [a, sym_op("mul", b, c), 4, c][:rank], [2, a, 1, b][-rank:])[shape]
        with torch._C._DisablePythonDispatcher():
            if fast:
                elem = torch.empty(0, dtype=torch.float16, device=_META).as_strided(
                    sizes, contiguous(sizes))
                RESIZE(elem, storage_nbytes(sizes, torch.float16))
            else:
                elem = torch.empty(sizes, dtype=torch.float16, device=_META)
        x = FakeTensor(mode, elem, torch.device("cpu"))
        row = [_text(x.shape), _text(x.stride()), x.storage_offset(),
               _text([x.untyped_storage().nbytes()]), x.dtype, x.layout, x.requires_grad,
               x._is_view(), x._base is None]
        with mode, enable_python_dispatcher():
            row.append(x.is_contiguous())
            if rank == 4:
                row.append(x.is_contiguous(memory_format=torch.channels_last))
            for y in (x + 1, x.reshape(-1), x.transpose(0, -1).contiguous(), x.sum(0),
                      x.unsqueeze(0).expand(2, *x.shape), x.clone(),
                      x.view(-1) if rank == 1 else x.flatten(1)):
                row += [_text(y.shape), _text(y.stride()), y.is_contiguous()]
        row.append(sorted({str(g.expr) for g in env.guards}))  # (a conjunction: its set)
        out.append(row)
    return out


def _text(values: Any) -> list:
    return [str(v.node.expr) + f"|{v.node.hint}|{v.node._optimized_summation}"
            if isinstance(v, torch.SymInt) else v for v in values]
