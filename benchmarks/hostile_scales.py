"""Upsample kernels called with an output size and a hostile scale, ``_weight_norm`` with a
hostile ``g`` (session 34).

Used by ``benchmarks/hostile_probe.py`` (classes ``scales``, ``wnorm``).  ``scales``:
after a main-graph tensor (a placeholder or a call's value), a file adds
``x.to(uint8 | float32).reshape(1, 1, -1)`` and an upsample ``.default`` overload over it
with an output size and a scale of its own choosing (``upsample_nearest1d(v, [9],
1e-30)``; the anti-aliased 2-d kernels over ``[1, 1, 1, n]``).  The kernels map output
index ``i`` to ``i / scale`` and cast that to an int64 unchecked (the anti-aliased ones
size a window by ``1 / scale``): a tiny scale overflowed the cast, and on a uint8 tensor
the read landed ~2**63 bytes away (the worker crashed before session 34's check in
serialize/operand_checks.py).  The added nodes carry no recorded value (a file writer's
edit); their result is unused, and still runs.  ``wnorm``: after a main-graph tensor,
``x.to(float32).reshape(a, -1)`` (``a`` 1 or 2) and ``_weight_norm`` of it with a ``g``
of ones of 1, 2 or 7 elements (or ``[1, 1]``) at dim 0, 1 or -1: the fused kernel (dim 0
or the last) reads ``g`` and writes norms of ``g``'s shape at ``v.size(dim)`` elements
unchecked (heap corruption before session 34's check).  ``modes``: after a main-graph
tensor, ``x.to(float32).reshape(1, 1, 1, -1)`` and ``grid_sampler_2d`` (or
``grid_sampler``) of it over a zero grid with an interpolation and a padding mode from
-1, 0, 1, 2, 3, 9: the kernel writes nothing for a mode it does not know (the program
returned uninitialized memory before session 34's check).  ``enums``: after a main-graph
tensor, a loss kernel over ``x.to(float32).reshape(1, -1)`` (twice) or an FFT kernel
over ``x.new_ones(2, 4)`` with a ``reduction`` / ``normalization`` from -1, 0, 1, 2, 3,
7, 2**40: a value outside 0, 1, 2 ran before session 35's check, each kernel taking it as
one of its own cases (a result no torch function computes); such a variant that runs is
a finding (``judged``: its label ends with ``!``).
"""

from __future__ import annotations

import copy
import random

from tests.serialize.surgery import header_of, join

KINDS = ("scales", "wnorm", "modes", "enums")
# loss kernels (their arguments after self and target, the reduction last) and FFT kernels
LOSSES = (("l1_loss", ()), ("mse_loss", ()), ("soft_margin_loss", ()),
          ("huber_loss", None), ("smooth_l1_loss", None), ("kl_div", None),
          ("binary_cross_entropy_with_logits", (None, None)),
          ("hinge_embedding_loss", ({"float": "1.0"},)),
          ("margin_ranking_loss", "ranked"), ("multilabel_margin_loss", "labels"))
FFTS = ("_fft_r2c", "_fft_c2c", "_fft_c2r")
ENUM_VALUES = (-1, 0, 1, 2, 3, 7, 2 ** 40)
OPS = ("upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_linear1d",
       "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa")  # (the 2-d ones over [1, n])
SCALES = (1e-30, 1e-300, 5e-324, 1e-19, 1e-15, 2.0 ** -52, 1e-6, 1e-7, 0.5, 2.0, -1.0,
          float("nan"), float("inf"))


def _call(name: str, target: str, *args: object) -> dict:
    return {"name": name, "op": "call_function", "target": f"torch.ops.aten.{target}",
            "args": list(args)}


def variants(blob: bytes, rng: random.Random, count: int, kind: str = "scales"
             ) -> list[tuple[str, bytes]]:
    head, doc, data = header_of(blob)
    tensors = [n["name"] for n in doc["nodes"] if n["op"] in ("placeholder", "call_function")
               and "tensor" in ((n.get("meta") or {}).get("val") or {})]
    out = []
    for i in range(count if tensors else 0):
        d = copy.deepcopy(doc)
        if kind == "modes":
            src, op = rng.choice(tensors), rng.choice(("grid_sampler_2d", "grid_sampler"))
            im, pm = rng.choice((-1, 0, 1, 2, 3, 9)), rng.choice((-1, 0, 1, 2, 3, 9))
            p = f"hm{i}_"
            added = [_call(f"{p}to", "to.dtype", {"node": src}, {"dtype": "float32"}),
                     _call(f"{p}v", "reshape.default", {"node": f"{p}to"},
                           {"list": [1, 1, 1, -1]}),
                     _call(f"{p}g", "new_zeros.default", {"node": f"{p}v"},
                           {"list": [1, 1, 3, 2]}),
                     _call(f"{p}gs", f"{op}.default", {"node": f"{p}v"}, {"node": f"{p}g"},
                           im, pm, False)]
            at = next(j for j, n in enumerate(d["nodes"]) if n["op"] == "output")
            d["nodes"][at:at] = added
            out.append((f"modes:{op}({im},{pm})@{src}", join(copy.deepcopy(head), data, doc=d)))
            continue
        if kind == "enums":
            out.append(_enum_variant(d, head, data, rng, tensors, i))
            continue
        if kind == "wnorm":
            src, rows = rng.choice(tensors), rng.choice((1, 2))
            g, dim = rng.choice(([1], [2], [7], [1, 1])), rng.choice((0, 1, -1))
            p = f"hw{i}_"
            added = [_call(f"{p}to", "to.dtype", {"node": src}, {"dtype": "float32"}),
                     _call(f"{p}v", "reshape.default", {"node": f"{p}to"},
                           {"list": [rows, -1]}),
                     _call(f"{p}g", "new_ones.default", {"node": f"{p}v"}, {"list": g}),
                     _call(f"{p}wn", "_weight_norm.default", {"node": f"{p}v"},
                           {"node": f"{p}g"}, dim)]
            at = next(j for j, n in enumerate(d["nodes"]) if n["op"] == "output")
            d["nodes"][at:at] = added
            out.append((f"wnorm:_weight_norm([{rows},-1],{g},{dim})@{src}",
                        join(copy.deepcopy(head), data, doc=d)))
            continue
        src, op = rng.choice(tensors), rng.choice(OPS)
        dtype, size, scale = rng.choice(("uint8", "float32")), rng.choice((1, 3, 9, 17)), \
            rng.choice(SCALES)
        p = f"hs{i}_"
        corners = [rng.random() < 0.5] if "linear" in op or "cubic" in op else []
        two = op.endswith("2d_aa")
        added = [_call(f"{p}to", "to.dtype", {"node": src}, {"dtype": dtype}),
                 _call(f"{p}flat", "reshape.default", {"node": f"{p}to"},
                       {"list": [1, 1, 1, -1] if two else [1, 1, -1]}),
                 _call(f"{p}up", f"{op}.default", {"node": f"{p}flat"},
                       {"list": [1, size] if two else [size]}, *corners,
                       *([None] if two else []), {"float": repr(scale)})]
        at = next(j for j, n in enumerate(d["nodes"]) if n["op"] == "output")
        d["nodes"][at:at] = added
        out.append((f"scales:{op}({dtype},[{size}],{scale!r})@{src}",
                    join(copy.deepcopy(head), data, doc=d)))
    return out


def _enum_variant(d: dict, head: dict, data: bytes, rng: random.Random, tensors: list,
                  i: int) -> tuple[str, bytes]:
    src, value, p = rng.choice(tensors), rng.choice(ENUM_VALUES), f"he{i}_"
    added = [_call(f"{p}to", "to.dtype", {"node": src}, {"dtype": "float32"})]
    if rng.random() < 0.6:
        op, rest = rng.choice(LOSSES)
        what = "reduction"
        added.append(_call(f"{p}v", "reshape.default", {"node": f"{p}to"}, {"list": [1, -1]}))
        v = {"node": f"{p}v"}
        if rest == "ranked":  # (self, other, target, margin, reduction)
            args: list = [v, v, v, {"float": "0.0"}, value]
        elif rest == "labels":  # (self, target of class indices: zeros, reduction)
            added.append(_call(f"{p}i", "to.dtype", v, {"dtype": "int64"}))
            added.append(_call(f"{p}t", "mul.Scalar", {"node": f"{p}i"}, 0))
            args = [v, {"node": f"{p}t"}, value]
        elif rest is None:  # (self, target, reduction, one more)
            args = [v, v, value, False if op == "kl_div" else {"float": "1.0"}]
        else:
            args = [v, v, *rest, value]
        added.append(_call(f"{p}z", f"{op}.default", *args))
    else:
        op, what = rng.choice(FFTS), "normalization"
        added.append(_call(f"{p}v", "new_ones.default", {"node": f"{p}to"}, {"list": [2, 4]}))
        v = {"node": f"{p}v"}
        if op == "_fft_r2c":
            added.append(_call(f"{p}z", "_fft_r2c.default", v, {"list": [1]}, value, True))
        else:
            added.append(_call(f"{p}c", "_fft_r2c.default", v, {"list": [1]}, 0, True))
            c = {"node": f"{p}c"}
            added.append(_call(f"{p}z", f"{op}.default", c, {"list": [1]}, value,
                               True if op == "_fft_c2c" else 4))
    at = next(j for j, n in enumerate(d["nodes"]) if n["op"] == "output")
    d["nodes"][at:at] = added
    mark = "" if value in (0, 1, 2) else "!"
    return (f"enums:{op}({what}={value}){mark}@{src}", join(copy.deepcopy(head), data, doc=d))


def judged(label: str, outcome: str) -> str:
    """``outcome`` of the variant ``label``, made a finding where an ``enums`` variant of a
    value outside 0, 1, 2 ran (its kernel computed what no torch function does)."""
    kind = label.split("/", 1)[-1]
    if kind.startswith("enums:") and "!@" in kind and outcome == "ran":
        return "FINDING out-of-set value ran"
    return outcome
