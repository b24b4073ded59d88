"""Attack st.load with semantically mutated saved programs; report what is not a clean refusal.

    python benchmarks/hostile_probe.py [--per-program N] [--seed S]

Saves a few real programs (static, dynamic with checks, cond, while_loop, map, scan, a
custom op, an int input, in-place state, data-dependent sizes, checks on a size read from
data that later slices rely on), then makes variants: one
JSON field of the program document changed (ints to 0/-1/2**63/huge/small, floats to
NaN/inf, strings to other node names/unicode/empty, lists emptied/duplicated/deeply nested,
keys dropped), coordinated edits of 2-3 fields (``multi``: a node's arguments and its
output metadata together, one int changed everywhere it occurs (a size and its contract),
two symbols swapped, a contract dim and a node together, or 2-3 independent edits), one
field of a tensor's header changed (shape, dtype, data_offsets), random byte flips, and
edits aimed at control-flow subgraphs (``sg``/``sg_multi``: benchmarks/hostile_subgraphs.py,
over six more bases with size work in branches and bodies; ``--classes sg`` runs only
those), and calls replaced by backend or gradient kernels of hostile arguments
(``kernel``: mkldnn_rnn_layer, *_backward; ``--classes kernel``), tied tensors, confusable
names, unlisted and device operators, symbol ranges, strided views of the inputs
(``alias``, ``names``, ``ops``, ``ranges``, ``views``, ``operands``, ``records``:
benchmarks/hostile_more.py), data offsets and lengths, state orders, huge counts,
subgraphs that call themselves, names given twice or in odd unicode, and the recorded
values of subgraph nodes, dtypes and list elements (``offsets``, ``order``, ``counts``,
``depth``, ``dups``, ``unicode``, ``recmeta``: benchmarks/hostile_extra.py, session 26;
``lists``: a node's recorded list of tensors taken past, shortened, lengthened, an element
nobody takes lied about, or dropped, session 27,
over two more bases with custom ops over varying sizes), and the program's file changed
after it loaded (``afterload``: truncated to 0 or half, rewritten or zeroed in place,
replaced, appended to; session 28: each call must compute what a copy loaded from the
file's bytes does), a control or format character in one string of the program (``text``,
session 29), the JSON text, expressions that blow up, operators spelled other ways,
references to later nodes and pytree specs (``literals``, ``exprs``, ``targets``,
``refs``, ``specs``: benchmarks/hostile_syntax.py, session 32), stored tensors with
0-size and huge dims, byte counts past int64, subgraphs reaching the main graph's state
(``zerodims``, ``overflow``, ``parent``: benchmarks/hostile_state.py, session 33), upsample
kernels given an output size and a hostile scale, ``_weight_norm`` given a ``g`` that does
not fit, ``grid_sampler`` given modes it does not know (``scales``, ``wnorm``, ``modes``:
benchmarks/hostile_scales.py, session 34), loss and FFT kernels given a ``reduction`` or
``normalization`` outside 0, 1, 2 (``enums``, session 35: one that runs is a finding),
names tied to a parameter the program writes, quantized dtypes, values recorded on other
device kinds, float8 state (``kinds``: benchmarks/hostile_kinds.py, session 36),
kernels that loop over a count of the file for each element, and variants loaded with
``mmap=True`` checked against a second mapping and a copy of the bytes (``loops``,
``mapped``: benchmarks/hostile_pages.py, session 37), splits into a hostile count of
pieces, operators whose arguments size what they allocate, in-place changes of an
input's shape (``pieces``, ``allocs``, ``inplace``: benchmarks/hostile_pieces.py, session 38),
and sizes read from data
recorded as other such sizes (``reads``: a clamped
``min(u0, 5)`` written ``u0``, symbols swapped, numbers shifted, assertions removed,
ranges narrowed: benchmarks/hostile_reads.py over four more bases, session 31); every
program that runs is printed, saved again and loaded (the same outputs), and converted
(``to_torch()``: converted or a catalogue refusal); every program that runs is called
once more with its inputs inside larger buffers of sentinels (a read or a write of the
caller's memory around them: a finding).  Each variant is loaded in a worker process
under an address-space cap and an alarm, then called at a few input sizes.
Outcomes: ``load_error``, ``ran``, ``call_refused`` (InputMismatchError / LoadError /
RuntimeAssertionError at call, or every size drawn refused by the input checks),
``call_torch`` (torch raised at call: a file whose contract admits sizes or values its
graph cannot run, which the loader should refuse or check before running), and findings:
any other exception at load or from the input checks, a hang, a MemoryError, a crash of
the worker, a write to the file, an output aliasing the file's data.  ``ran_meta_differs``:
the call ran and its outputs differ from the root graph's recorded output metadata, which
the loaded program keeps (the loader holds every node's recorded value against its own
evaluation and refuses the file where they differ: serialize/recorded.py; expected 0, each
one printed; since session 26 also every node of every graph, run node by node, held to
its recorded dtype, rank and the sizes whose symbols that run binds:
``hostile_extra.node_records``).  Custom-op programs
load with ``allow_ops=["sttest"]`` (tests/export/test_data_dependent.py's ops).
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.serialize.surgery import KEY, join, split  # noqa: E402 - (the repository's root first)


def programs() -> dict[str, bytes]:
    import torch

    import safetrace as st

    class Static(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 4)

        def forward(self, x):
            return torch.relu(self.fc(x)).sum(1)

    class Dyn(torch.nn.Module):
        def forward(self, x, y):
            torch._check(x.shape[0] >= 2)
            z = x.reshape(-1) [: x.shape[0] * 2]
            return z * 2, y[:, : x.shape[0] // 2] + 1

    class Cond(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))

    class Loop(torch.nn.Module):
        def forward(self, x):
            from torch._higher_order_ops.while_loop import while_loop
            return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                              (torch.zeros((), dtype=torch.int64), x))

    class State(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("acc", torch.zeros(5))
            self.register_buffer("n", torch.zeros((), dtype=torch.int64))

        def forward(self, x):
            self.acc.add_(x.sum(0))
            self.n.add_(1)
            return self.acc * 1, x + self.acc

    class Data(torch.nn.Module):
        def forward(self, x):
            nz = torch.nonzero(x > 0)
            k = (x > 0).sum().item()
            return nz, torch.zeros(k)

    from torch._higher_order_ops.map import map as hop_map
    from torch._higher_order_ops.scan import scan as hop_scan

    from tests.export import test_data_dependent as dd
    from tests.serialize.test_asserted_facts import CheckedCache  # (checks later sizes use)

    class Map(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3))

        def forward(self, xs):
            return hop_map(lambda x, w: (x * w).sum(0, keepdim=True), xs, self.w)

    class Scan(torch.nn.Module):
        def forward(self, init, xs):
            return hop_scan(lambda c, x: (c + x, (c * x).sum(0)), init, xs)

    class Scalar(torch.nn.Module):
        def forward(self, x, k):
            return x[:k] * k, torch.zeros(k + 1)

    n = st.Dim("n", min=0, max=32)
    made = {
        "static": st.export(Static(), (torch.randn(3, 6),)),
        "dyn": st.export(Dyn(), (torch.randn(4, 3), torch.randn(3, 8)),
                         dynamic_shapes={"x": {0: st.Dim("a", min=2, max=16)},
                                         "y": {0: st.Dim("b", max=16)}}),
        "cond": st.export(Cond(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: n}}),
        "loop": st.export(Loop(), (torch.randn(4),), dynamic_shapes={"x": {0: n}}),
        "state": st.export(State(), (torch.randn(3, 5),), dynamic_shapes={"x": {0: n}}),
        "data": st.export(Data(), (torch.randn(7),), dynamic_shapes={"x": {0: n}}),
        "map": st.export(Map(), (torch.randn(4, 3),), dynamic_shapes={"xs": {0: n}}),
        "scan": st.export(Scan(), (torch.randn(3), torch.randn(5, 3)),
                          dynamic_shapes={"init": None, "xs": {0: st.Dim("t", min=1, max=32)}}),
        "custom": st.export(dd.CustomSlice(), (torch.randn(6), torch.randn(6)),
                            dynamic_shapes={"x": {0: n}, "y": {0: n}}),
        "scalar": st.export(Scalar(), (torch.randn(8, 2), 3),
                            dynamic_shapes={"x": {0: st.Dim("m", min=1, max=32)},
                                            "k": st.Dim("k", min=1, max=8)}),
        "facts": st.export(CheckedCache(wide=16), (torch.randn(3, 4), torch.tensor(2)),
                           dynamic_shapes={"x": {0: st.Dim("f", min=1, max=32)}, "pos": None}),
    }
    import hostile_extra
    import hostile_more
    import hostile_subgraphs

    made.update(hostile_subgraphs.programs())
    made.update(hostile_extra.programs())
    made.update(hostile_more.programs())
    import hostile_reads

    made.update(hostile_reads.programs())
    return hostile_subgraphs.saved(made)


def slots(doc: object) -> list[tuple[object, object, list]]:
    out = []

    def walk(o, path):
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in list(items):
            out.append((o, k, path + [k]))
            walk(v, path + [k])

    walk(doc, [])
    return out


def node_names(doc: dict) -> list[str]:
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    return [n["name"] for n in nodes or () if isinstance(n, dict)
            and isinstance(n.get("name"), str)] or ["x"]


def nest(depth: int) -> object:
    v: object = 0
    for _ in range(depth):
        v = {"list": [v]}
    return v


def value_mutations(v: object, doc: dict, rng: random.Random) -> list[tuple[str, object]]:
    names = node_names(doc)
    syms = [s["name"] for s in doc.get("symbols") or () if isinstance(s, dict)
            and isinstance(s.get("name"), str)] or ["s0"]
    if isinstance(v, bool):
        return [("bool_flip", not v), ("bool_to_int", 2)]
    if isinstance(v, int):
        return [("int_zero", 0), ("int_neg1", -1), ("int_2_63", 2**63), ("int_neg_2_63", -2**63),
                ("int_small", rng.choice([1, 2, 3, 5, 7])), ("int_twice", 2 * v),
                ("int_2_40", 2**40), ("int_plus1", v + 1), ("int_to_str", str(v)),
                ("int_to_float", float(v) + 0.5 if abs(v) < 2**1000 else 0.5), ("int_big", 10**400)]
    if isinstance(v, float):
        return [("float_nan", float("nan")), ("float_inf", float("inf")), ("float_neg", -v)]
    if isinstance(v, str):
        return [("str_other_node", rng.choice(names)), ("str_empty", ""),
                ("str_symbol", rng.choice(syms)), ("str_expr", f"{rng.choice(syms)}*2**40"),
                ("str_unicode", v + "\u200b"), ("str_dotdot", "../" + v),
                ("str_dunder", "__class__"), ("str_target", "torch.ops.aten.empty.memory_format"),
                ("str_expr_div0", f"{rng.choice(syms)}//0"), ("str_huge_num", "9" * 5000)]
    if isinstance(v, list):
        out = [("list_empty", []), ("list_dup", v + v[:1]), ("list_nest", [v])]
        if v:
            out.append(("list_drop_last", v[:-1]))
            out.append(("list_reverse", v[::-1]))
        return out
    if isinstance(v, dict):
        out = [("dict_empty", {}), ("dict_nest", nest(200))]
        for k in list(v)[:4]:
            d = dict(v)
            del d[k]
            out.append((f"dict_drop_{k}", d))
        return out
    if v is None:
        return [("none_to_int", 0), ("none_to_str", rng.choice(names)), ("none_to_list", [])]
    return []


def json_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    head, data = split(blob)
    doc = json.loads(head["__metadata__"][KEY])
    n_slots = len(slots(doc))
    out = []
    for _ in range(count):
        d = copy.deepcopy(doc)
        ss = slots(d)
        o, k, path = ss[rng.randrange(n_slots)]
        muts = value_mutations(o[k], d, rng)
        if not muts:
            continue
        label, new = rng.choice(muts)
        o[k] = json.loads(json.dumps(new))
        h = copy.deepcopy(head)
        h["__metadata__"][KEY] = json.dumps(d)
        where = "/".join(str(p) for p in path[-4:])
        out.append((f"json:{label}@{where}", join(h, data)))
    return out


# backend and gradient kernels torch reaches only through checking wrappers (the file
# names them itself; mkldnn_rnn_layer with one-element weights corrupted the heap)
KERNELS = ("mkldnn_rnn_layer.default", "miopen_rnn.default", "cudnn_batch_norm.default",
           "quantized_lstm.data_legacy", "max_pool3d_with_indices_backward.default",
           "threshold_backward.default", "slice_backward.default", "unfold_backward.default",
           "reflection_pad2d_backward.default", "grid_sampler_2d_backward.default")


_UNPRINTABLE = ["\r", "\x1b[2K", "\x1b]0;t\x07", "\u202e", "\u2028", "\u2029", "\x85",
                "\x00", "\x0b", "\x0c", "\u200b", "\ufeff", "\x7f", "\x9b"]


def text_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """``text`` (session 29): a control, format or line-separator character put into one
    string of the program (a source line, a path, a symbol's origin, a name, a message):
    refused at load, or else ``print(ep)`` must show no such character (``resaved``)."""
    head, data = split(blob)
    doc = json.loads(head["__metadata__"][KEY])
    strings = [(p, k, path) for p, k, path in slots(doc) if isinstance(p[k], str)]
    out = []
    for _ in range(count if strings else 0):
        parent, key, path = rng.choice(strings)
        old, bad = parent[key], rng.choice(_UNPRINTABLE)
        cut = rng.randint(0, len(old))
        parent[key] = old[:cut] + bad + old[cut:]
        h = dict(head, __metadata__=dict(head["__metadata__"], **{KEY: json.dumps(doc)}))
        parent[key] = old
        out.append((f"text:{'/'.join(map(str, path))[:60]}:{bad!a}", join(h, data)))
    return out


def _kernel_arg(kind: str, tensors: list, rng: random.Random) -> object:
    kind = kind.replace("Optional[", "").rstrip("]") if kind.startswith("Optional[") else kind
    if "Tensor" in kind:
        one = {"node": rng.choice(tensors)}
        return {"list": [one] * rng.randint(1, 4)} if kind.startswith("List") else one
    if kind.startswith("List["):
        return {"list": [rng.choice((0, 1, 7, -1, 1 << 20)) for _ in range(rng.randint(0, 4))]}
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float":
        return {"float": repr(rng.choice((0.0, 0.5, -1.0, 1e30)))}
    return rng.choice((0, 1, 2, 7, -1, 1 << 20))


def kernel_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """A main-graph call replaced by a backend or gradient kernel of hostile arguments."""
    import torch

    head, data = split(blob)
    doc = json.loads(head["__metadata__"][KEY])
    calls = [i for i, n in enumerate(doc["nodes"]) if n["op"] == "call_function"
             and str(n.get("target", "")).startswith("torch.ops.aten.")]
    out = []
    for _ in range(count if calls else 0):
        d = copy.deepcopy(doc)
        at = rng.choice(calls)
        tensors = [n["name"] for n in d["nodes"][:at] if n["op"] in ("placeholder",
                   "call_function") and "tensor" in (n.get("meta", {}).get("val") or {})]
        if not tensors:
            continue
        name = rng.choice(KERNELS)
        packet, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        node = d["nodes"][at]
        node["target"] = f"torch.ops.aten.{name}"
        node["args"] = [_kernel_arg(str(a.real_type), tensors, rng)
                        for a in op._schema.arguments if not a.kwarg_only]
        node.pop("kwargs", None)
        h = copy.deepcopy(head)
        h["__metadata__"][KEY] = json.dumps(d)
        out.append((f"kernel:{packet}@{node['name']}", join(h, data)))
    return out


def _mutate_at(d: dict, slot: tuple, rng: random.Random) -> str | None:
    o, k, path = slot
    muts = value_mutations(o[k], d, rng)
    if not muts:
        return None
    label, new = rng.choice(muts)
    o[k] = json.loads(json.dumps(new))
    return f"{label}@{'/'.join(str(p) for p in path[-3:])}"


def _ints(doc: object) -> Counter:
    found: Counter = Counter()

    def walk(o):
        if isinstance(o, bool):
            return
        if isinstance(o, int):
            found[o] += 1
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(doc)
    return found


def _replace_ints(o: object, old: int, new: int, rng: random.Random, p: float) -> object:
    if isinstance(o, bool):
        return o
    if isinstance(o, int):
        return new if o == old and rng.random() < p else o
    if isinstance(o, dict):
        return {k: _replace_ints(v, old, new, rng, p) for k, v in o.items()}
    if isinstance(o, list):
        return [_replace_ints(v, old, new, rng, p) for v in o]
    return o


def multi_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """Coordinated edits of 2-3 fields of the program document."""
    head, data = split(blob)
    doc = json.loads(head["__metadata__"][KEY])
    ints = [v for v, c in _ints(doc).items() if c >= 2 and 1 <= v <= 64]
    syms = [x["name"] for x in doc.get("symbols", [])]
    out = []
    for _ in range(count):
        d = copy.deepcopy(doc)
        kind = rng.choice(["node_pair", "int_everywhere", "sym_swap", "contract_node",
                           "independent"])
        labels: list = []
        if kind == "node_pair":  # a node's arguments and its output metadata together
            nodes = [n for n in d["nodes"] if n.get("op") == "call_function"]
            if not nodes:
                continue
            node = rng.choice(nodes)
            for part in ("args", "meta"):
                ss = slots(node.get(part, {}))
                if ss:
                    labels.append(_mutate_at(d, rng.choice(ss), rng))
        elif kind == "int_everywhere":  # one int changed everywhere it occurs (or at some)
            if not ints:
                continue
            old = rng.choice(ints)
            new = rng.choice([v for v in (0, 1, 2, 3, 5, 7, old + 1, 2 * old) if v != old])
            p = rng.choice([1.0, 0.5])
            d = _replace_ints(d, old, new, rng, p)
            labels.append(f"{old}->{new}@p{p}")
        elif kind == "sym_swap":  # two symbols' names swapped everywhere, or in one part
            if len(syms) < 2:
                continue
            a, b = rng.sample(syms, 2)
            part = rng.choice(["contract", "nodes", "symbols", None])
            target = d if part is None else d[part]
            text = json.dumps(target)
            text = re.sub(rf"\b({a}|{b})\b", lambda m: b if m.group(1) == a else a, text)
            if part is None:
                d = json.loads(text)
            else:
                d[part] = json.loads(text)
            labels.append(f"{a}<->{b}@{part}")
        elif kind == "contract_node":  # a contract field and a node field together
            cs, ns = slots(d["contract"]), slots(d["nodes"])
            for ss in (cs, ns):
                if ss:
                    labels.append(_mutate_at(d, rng.choice(ss), rng))
        else:
            ss = slots(d)
            for _ in range(rng.choice([2, 3])):
                labels.append(_mutate_at(d, rng.choice(ss), rng))
                ss = slots(d)
        labels = [x for x in labels if x]
        if not labels:
            continue
        h = copy.deepcopy(head)
        h["__metadata__"][KEY] = json.dumps(d)
        out.append((f"multi:{kind}:{'+'.join(labels)}", join(h, data)))
    return out


def tensor_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    head, data = split(blob)
    keys = [k for k in head if k != "__metadata__"]
    out = []
    if not keys:
        return out
    for _ in range(count):
        h = copy.deepcopy(head)
        key = rng.choice(keys)
        t = h[key]
        field = rng.choice(["shape", "dtype", "data_offsets", "alias", "drop"])
        if field == "shape":
            label, t["shape"] = rng.choice([("shape_empty", []), ("shape_neg", [-1] + t["shape"]),
                                            ("shape_zero", [0] + t["shape"]),
                                            ("shape_swap", t["shape"][::-1]),
                                            ("shape_extra1", t["shape"] + [1]),
                                            ("shape_big", [2**62, 0])])
        elif field == "dtype":
            label = "dtype"
            t["dtype"] = rng.choice(["F16", "I64", "BOOL", "U8", "F64", "C64", "F8_E4M3",
                                     "I8", "BF16", "U64", "F4"])
        elif field == "data_offsets":
            a, b = t["data_offsets"]
            label, t["data_offsets"] = rng.choice([
                ("off_same", [a, a]), ("off_shift", [a + 1, b + 1]), ("off_neg", [-8, b]),
                ("off_past", [a, b + 8]), ("off_zero", [0, b - a])])
        elif field == "alias" and len(keys) > 1:
            other = rng.choice([k for k in keys if k != key])
            label = "alias_other"
            t.update(copy.deepcopy(h[other]))
        else:
            label = "drop"
            del h[key]
        out.append((f"tensor:{label}@{key}", join(h, data)))
    return out


def declared_outputs(blob: bytes) -> list | None:
    """(dtype, shape) the document records for each output of the root graph (a shape's
    symbolic dims as None); None where that cannot be read."""
    try:
        head, _ = split(blob)
        doc = json.loads(head["__metadata__"][KEY])
        by_name = {n["name"]: n for n in doc["nodes"]}
        out = next(n for n in doc["nodes"] if n.get("op") == "output")["args"][0]
        found = []
        for e in out["tuple"] if "tuple" in out else [out]:
            t = by_name[e["node"]]["meta"]["val"]["tensor"]
            found.append((t["dtype"], [v if isinstance(v, int) else None for v in t["shape"]]))
        return found
    except Exception:  # noqa: BLE001 - a mutated document
        return None


def meta_mismatch(res: object, declared: list | None) -> str | None:
    import torch

    leaves = [v for v in torch.utils._pytree.tree_leaves(res) if isinstance(v, torch.Tensor)]
    if declared is None or len(leaves) != len(declared):
        return None
    for i, (t, (dtype, shape)) in enumerate(zip(leaves, declared)):
        if str(t.dtype) != f"torch.{dtype}" or t.dim() != len(shape) or any(
                s is not None and s != v for s, v in zip(shape, t.shape)):
            return f"output {i}: {t.dtype} {tuple(t.shape)} vs recorded {dtype} {shape}"
    return None


def byte_variants(blob: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(count):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(("bytes:flip", bytes(b)))
    return out


# ---------------------------------------------------------------------------- worker


AFTER_LOAD = ("truncate0", "truncate_half", "rewrite", "replace", "append", "zero_pages")


def after_load(st, ep, path: str, before: bytes, change: str, draw_inputs) -> tuple:
    """``afterload``: the program loaded from ``path``, its file then truncated, rewritten
    in place, replaced, appended to or zeroed (what another process may do while it
    lives), then called: it must compute what a copy loaded from the file's bytes does
    (never a SIGBUS: the worker would die; never weights that follow the file)."""
    import torch

    ref = st.load(before, allow_ops=["sttest"]).module()
    mod = ep.module()
    rng, gen = random.Random(0), torch.Generator().manual_seed(0)
    try:
        args, kwargs, _ = draw_inputs(ep, rng, gen, use_hints=True, max_numel=1 << 14,
                                      tries=20)
    except Exception as e:  # noqa: BLE001 - no admitted input drawn
        return "call_refused", f"(every draw) {e}"[:160]
    if change == "truncate0":
        os.truncate(path, 0)
    elif change == "truncate_half":
        os.truncate(path, len(before) // 2)
    elif change in ("rewrite", "zero_pages"):
        with open(path, "r+b") as f:
            f.seek(len(before) // 3)
            f.write(bytes(len(before) - len(before) // 3) if change == "zero_pages"
                    else os.urandom(len(before) - len(before) // 3))
    elif change == "replace":
        tmp = path + ".new"
        with open(tmp, "wb") as f:
            f.write(os.urandom(len(before)))
        os.replace(tmp, path)
    elif change == "append":
        with open(path, "ab") as f:
            f.write(os.urandom(4096))
    import copy

    try:
        want = ref(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as e:  # noqa: BLE001 - the pristine copy refuses it too
        want = e
    try:
        got = mod(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as e:  # noqa: BLE001
        got = e
    if isinstance(want, Exception) or isinstance(got, Exception):
        if type(want) is type(got):
            return "call_refused", f"{type(got).__name__} (both)"
        return "FINDING changed by the file", f"{type(want).__name__} / {type(got).__name__}"
    loose = uninitialized(ep, before)
    for i, (a, b) in enumerate(zip(torch.utils._pytree.tree_leaves(got),
                                   torch.utils._pytree.tree_leaves(want))):
        if not _same(a, b, i in loose):
            return "FINDING changed by the file", f"output {i} differs after {change}"
    return "ran", change


_UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "new_empty",
                            "new_empty_strided", "empty_permuted"})


def uninitialized(ep, blob: bytes) -> set[int]:
    """Indices of the user outputs (as leaves) that may hold memory never written: made by
    ``empty`` and its kin, or computed from such a value, or by a control-flow node where a
    subgraph of the program (``blob``: its saved file) makes one: their bytes differ from
    run to run, so two runs of them are compared by dtype and shape only (session 33: not
    a finding of the loader)."""
    tainted: set = set()
    try:
        doc = json.loads(split(blob)[0]["__metadata__"][KEY])
        any_sub_empty = bool(_EMPTY_TARGET.search(json.dumps(doc.get("subgraphs", []))))
    except Exception:  # noqa: BLE001 - a mutated document: every control-flow node
        any_sub_empty = True
    for n in ep.graph.nodes:
        if n.op != "call_function":
            continue
        name = str(n.target).split(".")
        reads = [a for a in n.all_input_nodes if a.name in tainted]
        if (len(name) >= 2 and name[-2] in _UNINITIALIZED) or reads or (
                any_sub_empty and any(a.op == "get_attr" for a in n.all_input_nodes)):
            tainted.add(n.name)
    out = next(n for n in ep.graph.nodes if n.op == "output")
    flat = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    kinds = [s.kind for s in ep.graph_signature.output_specs]
    user = [a for a, k in zip(flat, kinds) if k == "user_output"]
    return {i for i, a in enumerate(user) if getattr(a, "name", None) in tainted}


_EMPTY_TARGET = re.compile(r"aten\.(new_)?empty(_like|_strided|_permuted)?\.")


def _same(a, b, loose: bool) -> bool:
    import torch

    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) == isinstance(b, torch.Tensor)
    if loose:
        return a.dtype == b.dtype and a.shape == b.shape
    return torch.equal(a, b) or (a.is_floating_point() and a.shape == b.shape
                                 and torch.allclose(a, b, equal_nan=True))


def resaved(st, ep, args, kwargs) -> tuple | None:
    """What a loaded program's users do with it (session 29): ``print(ep)`` is printable
    text (no escape or carriage return a file put there), ``st.save`` of it writes a file
    that loads and computes what the program does (on the same state), and ``to_torch()``
    converts it or refuses with a catalogue error."""
    import torch

    text = str(ep)
    if not text.replace("\n", "").replace("\t", "").isprintable():
        bad = next(c for c in text if not c.isprintable() and c not in "\n\t")
        return "FINDING print(ep)", f"prints {bad!a}"
    buf = io.BytesIO()
    st.save(ep, buf)
    try:
        ep2 = st.load(buf.getvalue(), allow_ops=["sttest"])
    except st.LoadError as e:
        return "FINDING resave refused", str(e).splitlines()[0][:160]
    outs = []
    for program in (ep2, ep):
        try:
            outs.append(program.module()(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        except Exception as e:  # noqa: BLE001
            outs.append(type(e))
    if isinstance(outs[0], type) or isinstance(outs[1], type):
        if outs[0] is not outs[1]:
            return "FINDING resave differs", f"{outs[0]} / {outs[1]}"
    else:
        loose = uninitialized(ep, buf.getvalue())
        for i, (a, b) in enumerate(zip(torch.utils._pytree.tree_leaves(outs[0]),
                                       torch.utils._pytree.tree_leaves(outs[1]))):
            if not _same(a, b, i in loose):
                return "FINDING resave differs", f"output {i} differs"
    try:
        ep.to_torch()
    except (st.LoadError, st.ExportError, NotImplementedError):
        pass  # (a refusal naming what it cannot convert)
    return None


def worker(folder: str, start: int) -> None:
    import resource
    import signal
    import traceback

    import torch

    import safetrace as st
    from safetrace.cli import draw_inputs

    import hostile_extra
    import hostile_more
    import hostile_pages
    from tests.export import test_data_dependent  # noqa: F401 - registers sttest ops

    hostile_extra.ops()

    torch.set_num_threads(1)
    files = sorted(f for f in os.listdir(folder) if f.endswith(".st"))

    class Hang(Exception):
        pass

    def alarm(*_):
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (vm + 1500 * 2**20, resource.RLIM_INFINITY))
    for i, name in enumerate(files):
        if i < start:
            continue
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            before = f.read()
        mtime = os.stat(path).st_mtime_ns
        print(json.dumps({"start": i}), flush=True)
        outcome, detail = "?", ""
        signal.alarm(20)
        try:
            try:
                # (``mapped``: NNNNN.mmap.st loads with mmap=True, benchmarks/hostile_pages.py)
                mapped = name.endswith(f".{hostile_pages.SUFFIX}.st")
                ep = st.load(path, allow_ops=["sttest"], mmap=mapped)
            except st.LoadError as e:
                outcome, detail = "load_error", str(e).splitlines()[0][:160]
            else:
                outcome = "ran"
                mod = ep.module()
                rng = random.Random(0)
                gen = torch.Generator().manual_seed(0)
                change = name.split(".")[1] if name.count(".") == 2 and not mapped else None
                if change is not None:  # (``afterload``: the file changed under the program)
                    outcome, detail = after_load(st, ep, path, before, change, draw_inputs)
                    signal.alarm(0)
                    with open(path, "wb") as f:  # (put back: not the program's write)
                        f.write(before)
                    print(json.dumps({"i": i, "name": name, "outcome": outcome,
                                      "detail": detail}), flush=True)
                    continue
                for attempt in range(3):
                    try:
                        args, kwargs, _ = draw_inputs(ep, rng, gen, use_hints=attempt == 0,
                                                      max_numel=1 << 14, tries=20)
                    except st.InputMismatchError as e:  # every size drawn refused
                        outcome, detail = "call_refused", f"(every draw) {e}"[:160]
                        break
                    except Exception as e:  # noqa: BLE001 - the checks raised
                        outcome, detail = "FINDING draw", f"{type(e).__name__}: {e}"[:160]
                        break
                    # the caller's memory around its inputs: never read, never written
                    caller = hostile_more.embedded_call(mod, args, kwargs) \
                        if attempt == 0 else None
                    if caller:
                        outcome, detail = "FINDING caller memory", caller
                        break
                    try:
                        res = mod(*args, **kwargs)
                    except (st.InputMismatchError, st.LoadError) as e:
                        outcome, detail = "call_refused", f"{type(e).__name__}: {e}"[:160]
                        continue
                    except RuntimeError as e:
                        if type(e).__name__ == "RuntimeAssertionError":
                            outcome, detail = "call_refused", str(e)[:160]
                        else:
                            outcome, detail = "call_torch", f"{type(e).__name__}: {e}"[:160]
                        continue
                    except (IndexError, ValueError, TypeError) as e:
                        outcome, detail = "call_torch", f"{type(e).__name__}: {e}"[:160]
                        continue
                    # (the loaded program keeps the file's metadata where the loader's
                    # evaluation agrees with it, or cannot work the value out)
                    wrong = meta_mismatch(res, declared_outputs(before)) or \
                        hostile_extra.node_records(ep, args, kwargs)
                    if wrong:
                        outcome, detail = "ran_meta_differs", wrong
                    if attempt == 0 and outcome == "ran" and mapped:
                        paged = hostile_pages.check(st, ep, path, before, args, kwargs, _same,
                                                    uninitialized(ep, before))
                        if paged:
                            outcome, detail = "FINDING mapped", paged
                            break
                    if attempt == 0 and outcome == "ran":
                        again = resaved(st, ep, args, kwargs)
                        if again:
                            outcome, detail = again
                            break
                    # outputs must not alias file data: write every tensor output
                    for leaf in torch.utils._pytree.tree_leaves(res):
                        if isinstance(leaf, torch.Tensor) and leaf.numel() and leaf.is_floating_point():
                            try:
                                leaf.add_(1)
                            except RuntimeError:
                                pass
        except Hang:
            outcome = "FINDING hang"
        except MemoryError as e:
            outcome, detail = "FINDING MemoryError", str(e)[:200]
        except BaseException as e:  # noqa: BLE001
            outcome = f"FINDING {type(e).__name__}"
            tb = traceback.extract_tb(e.__traceback__)
            frames = [f"{os.path.basename(fr.filename)}:{fr.lineno}" for fr in tb[-3:]]
            detail = f"{str(e)[:200]} at {frames}"
        signal.alarm(0)
        with open(path, "rb") as f:
            if f.read() != before or os.stat(path).st_mtime_ns != mtime:
                outcome = "FINDING file changed"
        print(json.dumps({"i": i, "name": name, "outcome": outcome, "detail": detail}),
              flush=True)
        if outcome == "FINDING hang":  # (the alarm may have cut an import short: the rest
            sys.exit(3)  # of this worker's files would fail on a half-imported module)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-program", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--keep", default=None, help="folder to keep the variants in")
    ap.add_argument("--programs", default=None, help="comma-separated program names")
    ap.add_argument("--classes", default=None,
                    help="comma-separated variant classes (json,multi,tensor,bytes,sg,kernel,text,"
                         "alias,names,ops,ranges,views,operands,records,offsets,order,"
                         "counts,depth,dups,unicode,recmeta,lists,afterload,reads,"
                         "literals,exprs,targets,refs,specs,zerodims,overflow,parent,scales,wnorm,"
                         "modes,enums,kinds,mapped,loops,pieces,allocs,inplace)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hostile_extra
    import hostile_kinds
    import hostile_more
    import hostile_pages
    import hostile_pieces
    import hostile_reads
    import hostile_scales
    import hostile_state
    import hostile_subgraphs
    import hostile_syntax

    if a.worker:
        worker(a.worker[0], int(a.worker[1]))
        return 0
    rng = random.Random(a.seed)
    folder = a.keep or tempfile.mkdtemp(prefix="hostile_probe_")
    os.makedirs(folder, exist_ok=True)
    labels = {}
    k = 0
    for pname, blob in programs().items():
        if a.programs and pname not in a.programs.split(","):
            continue
        n = a.per_program
        wanted = set((a.classes or "json,multi,tensor,bytes,sg,kernel,text,alias,names,ops,"
                               "ranges,views,operands,records,afterload,reads,kinds,mapped,loops,"
                               "pieces,allocs,inplace," +
                               ",".join(hostile_extra.KINDS + hostile_syntax.KINDS +
                                        hostile_state.KINDS + hostile_scales.KINDS)
                               ).split(","))
        makers = [("json", json_variants, n), ("multi", multi_variants, n),
                  ("tensor", tensor_variants, n // 4), ("bytes", byte_variants, n // 4),
                  ("kernel", kernel_variants, n // 2), ("text", text_variants, n // 4),
                  ("sg", lambda b, r, c: hostile_subgraphs.variants(b, r, c, split, join, KEY),
                   2 * n)]
        makers += [(kind, lambda b, r, c, kind=kind: hostile_more.variants(b, r, c, kind),
                    n // 4) for kind in hostile_more.KINDS]
        makers += [(kind, lambda b, r, c, kind=kind: hostile_extra.variants(b, r, c, kind),
                    n // 4) for kind in hostile_extra.KINDS]
        makers += [(kind, lambda b, r, c, kind=kind: hostile_syntax.variants(b, r, c, kind),
                    n // 4) for kind in hostile_syntax.KINDS]
        makers += [(kind, lambda b, r, c, kind=kind: hostile_state.variants(b, r, c, kind),
                    n // 4) for kind in hostile_state.KINDS]
        makers += [(kind, lambda b, r, c, kind=kind: hostile_scales.variants(b, r, c, kind),
                    n // 4) for kind in hostile_scales.KINDS]
        makers.append(("reads", lambda b, r, c: hostile_reads.variants(b, r, c), n // 2))
        makers.append(("afterload", lambda b, r, c: [
            (f"afterload:{r.choice(AFTER_LOAD)}", b) for _ in range(c)], n // 4))
        makers.append(("kinds", lambda b, r, c: hostile_kinds.variants(b, r, c), n // 2))
        makers.append(("loops", hostile_pages.loop_variants, n // 2))
        makers += [(kind, lambda b, r, c, kind=kind: hostile_pieces.variants(b, r, c, kind),
                    n // 2) for kind in hostile_pieces.KINDS]
        makers.append(("mapped", lambda b, r, c: hostile_pages.variants(
            b, r, c, [("json", json_variants), ("multi", multi_variants),
                      ("tensor", tensor_variants)]), n // 2))
        variants = [v for cls, make, c in makers if cls in wanted for v in make(blob, rng, c)]
        for label, data in variants:
            fname = f"{k:05d}.st" if not label.startswith(("afterload:", "mapped:")) else \
                f"{k:05d}.{hostile_pages.SUFFIX}.st" if label.startswith("mapped:") else \
                f"{k:05d}.{label.split(':')[1]}.st"
            with open(os.path.join(folder, fname), "wb") as f:
                f.write(data)
            labels[fname] = f"{pname}/{label}"
            k += 1
    results = {}
    start = 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=root)
    while start < k:
        proc = subprocess.run([sys.executable, __file__, "--worker", folder, str(start)],
                              capture_output=True, text=True, env=env)
        last = start
        for line in proc.stdout.splitlines():
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "start" in r:
                last = r["start"]
            else:
                results[r["name"]] = r
        dead = next((f for f in labels if f.startswith(f"{last:05d}.")), f"{last:05d}.st")
        if proc.returncode != 0 and dead not in results:
            results[dead] = {"name": dead, "i": last,
                                         "outcome": f"FINDING worker died rc={proc.returncode}",
                                         "detail": proc.stderr[-300:]}
        start = max(last + 1, start + 1) if proc.returncode != 0 else k
    counts: Counter = Counter()
    classes: Counter = Counter()
    by_class: Counter = Counter()
    for fname, r in sorted(results.items()):
        label = labels[fname]
        r["outcome"] = hostile_pieces.judged(label, hostile_scales.judged(label, r["outcome"]))
        cls = label.split("/", 1)[1].split(":")[0]
        classes[cls] += 1
        counts[r["outcome"]] += 1
        by_class[(cls, r["outcome"])] += 1
        if r["outcome"].startswith("FINDING") or r["outcome"] in ("call_torch",
                                                                 "ran_meta_differs"):
            print(f"{fname} {label}: {r['outcome']} {r['detail']}")
    print("variants per class:", dict(classes))
    print("outcomes:", dict(counts))
    print("outcomes per class:", {f"{c}/{o}": v for (c, o), v in sorted(by_class.items())})
    print("folder:", folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
