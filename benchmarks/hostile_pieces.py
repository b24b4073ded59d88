"""Hostile counts of pieces and of allocations that operators' arguments drive (session 38,
load38).

Used by ``benchmarks/hostile_probe.py`` (classes ``pieces``, ``allocs``).  Each variant
inserts a few nodes before the main graph's output, on a tensor the graph computes (its
recorded value a tensor): ``pieces``: a split into pieces (``unbind``, ``split``,
``chunk``, ``tensor_split``, ``vsplit``, ``split_with_sizes``) of that tensor or of a
zero-byte ``new_zeros([N, 0])`` of it, at a count of 2 to 2**30 (a constant count, or a
size the count is read from), then its first piece taken; ``allocs``: an operator whose
arguments size what it allocates or loops over (``histc`` bins, ``linspace`` steps,
``arange`` with a tiny step, ``bincount`` minlength, ``one_hot`` classes, ``new_full``,
``expand`` then ``clone``, ``tril_indices``, ``combinations``, ``cartesian_prod``,
``kron``, ``diag_embed``, window functions, ``randperm``, ``multinomial``, pads,
``fft`` lengths, ``col2im``, ``max_unpool2d``, ``diff``, ``repeat``, ``tile``,
``repeat_interleave``, ``nonzero_static``, ``quantile``) at a hostile count; ``inplace``:
an in-place op that changes its tensor's shape or layout (``unsqueeze_``, ``t_``,
``transpose_``, ``squeeze_``, ``swapdims_``) on an input the caller gives, maybe after a
value write (``add_``), which must be refused at load (one that runs: ``judged``, a
finding: the caller's tensor comes back of another shape).  A call that hangs, runs out
of memory or crashes is a finding (the worker's checks).
"""

from __future__ import annotations

import copy
import random

from tests.serialize.surgery import pack, parts

KINDS = ("pieces", "allocs", "inplace")
_COUNTS = (2, 7, 1000, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 25, 1 << 30)
_A = "torch.ops.aten."


def _tensors(doc: dict, float_only: bool) -> list[str]:
    out = []
    for n in doc["nodes"]:
        val = (n.get("meta") or {}).get("val")
        t = val.get("tensor") if isinstance(val, dict) else None
        if isinstance(t, dict) and isinstance(t.get("shape"), list) and t["shape"] and \
                (not float_only or t.get("dtype") in ("float32", "float64")):
            out.append(n["name"])
    return out


def _call(name: str, target: str, *args: object, **kwargs: object) -> dict:
    node = {"name": name, "op": "call_function",
            "target": target if "." in target and target.startswith("operator") else _A + target,
            "args": list(args)}
    if kwargs:
        node["kwargs"] = [[k, v] for k, v in kwargs.items()]
    return node


def _pieces(t: dict, n: int, rng: random.Random) -> tuple[str, list]:
    nodes = []
    if rng.random() < 0.5:
        nodes.append(_call("hp_z", "new_zeros.default", t, {"list": [n, 0]}))
        t = {"node": "hp_z"}
    how = rng.choice(("unbind.int", "split.Tensor", "chunk.default", "tensor_split.sections",
                      "vsplit.int", "split_with_sizes.default", "unsafe_split.Tensor",
                      "unbind_copy.int"))
    args = {"unbind.int": [0], "unbind_copy.int": [0], "split.Tensor": [1],
            "unsafe_split.Tensor": [1], "chunk.default": [n], "tensor_split.sections": [n],
            "vsplit.int": [n], "split_with_sizes.default": [{"list": [0] * min(n, 1 << 16)}]
            }[how]
    nodes += [_call("hp_parts", how, t, *args),
              _call("hp_y", "operator.getitem", {"node": "hp_parts"}, 0)]
    return how.split(".")[0], nodes


def _allocs(t: dict, n: int, rng: random.Random) -> tuple[str, list]:
    f = {"float": "1e-12"}
    i64 = _call("hp_i", "_to_copy.default", t, dtype={"dtype": "int64"})
    ai = _call("hp_ai", "abs.default", {"node": "hp_i"})
    flat = _call("hp_f", "flatten.using_ints", t)
    made = {
        "histc": [_call("hp_y", "histc.default", t, n)],
        "linspace": [_call("hp_y", "linspace.default", 0, 1, n)],
        "arange": [_call("hp_y", "arange.start_step", 0, n, f)],
        "bincount": [i64, ai, _call("hp_fl", "flatten.using_ints", {"node": "hp_ai"}),
                     _call("hp_y", "bincount.default", {"node": "hp_fl"}, None, n)],
        "one_hot": [i64, ai, _call("hp_y", "one_hot.default", {"node": "hp_ai"}, n)],
        "new_full": [_call("hp_y", "new_full.default", t, {"list": [n, n]}, 1)],
        "expand": [flat, _call("hp_e", "expand.default", {"node": "hp_f"}, {"list": [n, -1]}),
                   _call("hp_y", "clone.default", {"node": "hp_e"})],
        "tril_indices": [_call("hp_y", "tril_indices.default", n, n)],
        "combinations": [flat, _call("hp_y", "combinations.default", {"node": "hp_f"},
                                     min(n, 64))],
        "cartesian": [flat, _call("hp_y", "cartesian_prod.default",
                                  {"list": [{"node": "hp_f"}] * min(n, 16)})],
        "kron": [_call("hp_k", "kron.default", t, t), _call("hp_y", "kron.default",
                                                             {"node": "hp_k"}, t)],
        "diag_embed": [_call("hp_y", "diag_embed.default", t, n)],
        "hann": [_call("hp_y", "hann_window.default", n)],
        "randperm": [_call("hp_y", "randperm.default", n)],
        "multinomial": [flat, _call("hp_a", "abs.default", {"node": "hp_f"}),
                        _call("hp_y", "multinomial.default", {"node": "hp_a"}, n, True)],
        "pad": [_call("hp_y", "constant_pad_nd.default", t, {"list": [n, n]}, 0)],
        "fft": [_call("hp_y", "fft_fft.default", t, n)],
        "diff": [_call("hp_y", "diff.default", t, n)],
        "repeat": [_call("hp_y", "repeat_interleave.self_int", t, n)],
        "nonzero_static": [_call("hp_y", "nonzero_static.default", t, size=n)],
        "quantile": [flat, _call("hp_q", "full.default", {"list": [n]}, {"float": "0.5"}),
                     _call("hp_y", "quantile.default", {"node": "hp_f"}, {"node": "hp_q"})],
    }
    how = rng.choice(sorted(made))
    return how, made[how]


_RESHAPING = (("unsqueeze_.default", 0), ("t_.default",), ("transpose_.default", 0, -1),
              ("squeeze_.dim", 0), ("swapdims_.default", -1, 0), ("squeeze_.default",))


def _inplace(doc: dict, rng: random.Random) -> str | None:
    given = {s.get("name") for s in doc.get("inputs") or () if isinstance(s, dict) and
             s.get("kind") == "user_input"}
    inputs = [n for n in _tensors(doc, False) if n in given]
    if not inputs:
        return None
    target, *args = rng.choice(_RESHAPING)
    x = {"node": rng.choice(inputs)}
    nodes = []
    if rng.random() < 0.3:
        nodes.append(_call("hp_w", "add_.Scalar", x, 1))
        x = {"node": "hp_w"}
    nodes.append(_call("hp_y", target, x, *args))
    d = doc["nodes"]
    d[len(d) - 1:len(d) - 1] = nodes
    return target.split(".")[0]


def judged(label: str, outcome: str) -> str:
    """``outcome`` of the variant ``label``: an ``inplace`` variant that ran left the
    caller's tensor of another shape or layout (a finding)."""
    if label.split("/", 1)[-1].startswith("inplace:") and outcome in (
            "ran", "call_refused", "ran_meta_differs"):
        return f"FINDING an input reshaped in place {outcome}"
    return outcome


def variants(blob: bytes, rng: random.Random, count: int, kind: str) -> list:
    doc, tensors = parts(blob)
    if kind == "inplace":
        out = []
        for _ in range(count):
            d = copy.deepcopy(doc)
            how = _inplace(d, rng)
            if how is not None:
                out.append((f"inplace:{how}", pack(d, tensors)))
        return out
    sites = _tensors(doc, kind == "allocs")
    out = []
    for _ in range(count if sites else 0):
        d = copy.deepcopy(doc)
        n = rng.choice(_COUNTS)
        how, nodes = (_pieces if kind == "pieces" else _allocs)(
            {"node": rng.choice(sites)}, n, rng)
        d["nodes"][len(d["nodes"]) - 1:len(d["nodes"]) - 1] = nodes
        out.append((f"{kind}:{how}:{n}", pack(d, tensors)))
    return out
