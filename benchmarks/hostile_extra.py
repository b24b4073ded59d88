"""Hostile edits of saved programs, session 26, for benchmarks/hostile_probe.py.

``variants(blob, rng, count, kind)`` makes ``count`` variants of one class:

* ``offsets``: the safetensors layer: a tensor's ``data_offsets`` overlapping another's
  (partly or wholly), past the end of the file, reversed, huge, misaligned for its dtype;
  its byte length other than its shape asks; the header's length prefix past the file or
  short of its header; bytes appended to or cut from the data;
* ``order``: a state entry's ``order`` (the dims of a tensor dense in another order)
  repeated, out of range, negative, too long, given to a row-major tensor;
* ``counts``: huge declared counts: a tensor of 10,000 unit dims (header and state entry
  together), a node's list argument of 100,000 ints, 50,000 empty symbols, a shape of
  ``2**62`` with a zero;
* ``depth``: control flow that calls itself: a cond inside a subgraph whose branch is that
  subgraph (or one that calls it back), and a chain of 60 or 400 subgraphs each calling
  the next;
* ``dups``: one name twice: a node (the second a copy, or a different node), a subgraph
  path, a symbol, a state entry, an input's placeholder; a key twice in the JSON text
  (``nodes``, a tensor's entry of the safetensors header);
* ``unicode``: a node, symbol or state name renamed everywhere it occurs to one with a
  right-to-left override, a NUL, a lone surrogate, a newline and code, a keyword, a
  leading digit, 5,000 characters;
* ``recmeta``: the recorded value of a subgraph's node (its shape, its dtype), of a main
  graph node's dtype, of one element of a list of tensors, with or without its users'.

``node_records(ep, args, kwargs)`` is the probe's oracle for what a call computes against
what the loaded program records for every node, in every graph (``ran_meta_differs``).
"""

from __future__ import annotations

import copy
import json
import random

import torch

from tests.serialize.surgery import KEY, join, split

KINDS = ("offsets", "order", "counts", "depth", "dups", "unicode", "recmeta", "lists")


_OPS: list = []


def ops() -> None:
    """Register this module's custom ops (namespace ``sttest``, which the probe allows)
    once per process: the programs' makers and the worker that loads them."""
    if _OPS:
        return

    @torch.library.custom_op("sttest::halves26", mutates_args=())
    def halves(x: torch.Tensor) -> list[torch.Tensor]:
        return [x[: x.shape[0] // 2].clone(), x[x.shape[0] // 2:].clone()]

    @halves.register_fake
    def _(x):
        h = x.shape[0] // 2
        return [x.new_empty(h, *x.shape[1:]), x.new_empty(x.shape[0] - h, *x.shape[1:])]

    @torch.library.custom_op("sttest::twice26", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x])

    @twice.register_fake
    def _(x):
        return x.new_empty(2 * x.shape[0], *x.shape[1:])

    _OPS.extend([halves, twice])


def programs() -> dict:
    """Bases whose records the loader cannot work out: a custom op's list of tensors over
    sizes that vary, and a custom op over such sizes in a cond branch."""
    import torch

    import safetrace as st

    ops()
    halves, twice = _OPS

    class Halves(torch.nn.Module):
        def forward(self, x):
            a, b = halves(x)
            return a * 2, b.sum(0)

    class Branch(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda a: twice(a) + 1,
                              lambda a: torch.cat([a, a]) - 1, (x,))

    dyn = {"x": (st.Dim("h", min=0, max=32), None)}
    return {"x_halves": st.export(Halves(), (torch.randn(6, 3),), dynamic_shapes=dyn),
            "x_branch": st.export(Branch(), (torch.randn(6, 3),), dynamic_shapes=dyn)}


def variants(blob: bytes, rng: random.Random, count: int, kind: str) -> list[tuple[str, bytes]]:
    make = {"offsets": _offsets, "order": _order, "counts": _counts, "depth": _depth,
            "dups": _dups, "unicode": _unicode, "recmeta": _recmeta, "lists": _lists}[kind]
    out = []
    for _ in range(count):
        head, data = split(blob)
        doc = json.loads(head["__metadata__"][KEY])
        made = make(head, doc, data, rng)
        if made is not None:
            label, new = made
            out.append((f"{kind}:{label}", new))
    return out


def _tensors(head: dict) -> list[str]:
    return sorted(k for k in head if k != "__metadata__")


# -- offsets -----------------------------------------------------------------------------
def _offsets(head: dict, doc: dict, data: bytes, rng: random.Random):
    keys = _tensors(head)
    how = rng.choice(["overlap", "same", "past", "reversed", "huge", "misaligned", "short",
                      "long", "prefix_past", "prefix_short", "append", "cut"])
    if how == "prefix_past":
        return how, join(head, data, length=len(json.dumps(head)) + len(data) + 4096)
    if how == "prefix_short":
        return how, join(head, data, length=max(0, len(json.dumps(head)) // 2))
    if how == "append":
        return how, join(head, data + bytes(rng.randrange(1, 64)), doc=doc)
    if how == "cut" and data:
        return how, join(head, data[:max(0, len(data) - rng.randrange(1, 16))], doc=doc)
    if not keys or how == "cut":
        return None
    key = rng.choice(keys)
    t = head[key]
    a, b = t["data_offsets"]
    other = head[rng.choice([k for k in keys if k != key] or keys)]["data_offsets"]
    if how == "same" and other == [a, b]:
        return None
    if how == "overlap":
        shift = max(1, (b - a) // 2)
        t["data_offsets"] = [other[0] + shift, other[0] + shift + (b - a)]
    elif how == "same":
        t["data_offsets"] = list(other)
    elif how == "past":
        t["data_offsets"] = [len(data) - (b - a) // 2, len(data) - (b - a) // 2 + (b - a)]
    elif how == "reversed":
        t["data_offsets"] = [b, a]
    elif how == "huge":
        t["data_offsets"] = rng.choice([[2**63 - 8, 2**63], [2**64 - 8, 2**64 - 4],
                                        [a, a + 2**62]])
    elif how == "misaligned":
        k = rng.choice([1, 2, 3])
        t["data_offsets"] = [a + k, b + k]
    elif how == "short":
        t["data_offsets"] = [a, max(a, b - rng.choice([1, 4]))]
    else:
        t["data_offsets"] = [a, b + rng.choice([1, 4])]
    return f"{how}@{key}", join(head, data, doc=doc)


# -- order -------------------------------------------------------------------------------
def _order(head: dict, doc: dict, data: bytes, rng: random.Random):
    entries = [e for e in doc.get("state") or () if isinstance(e, dict)]
    if not entries:
        return None
    e = rng.choice(entries)
    rank = len(e.get("shape") or ())
    e["order"] = rng.choice([[0] * max(rank, 2), list(range(rank))[::-1] + [0],
                             [rank + 3] + list(range(rank))[1:], [-1] + list(range(1, rank)),
                             list(range(rank)), [], list(range(rank))[::-1] or [0],
                             list(range(2000))])
    return f"{json.dumps(e['order'])[:20]}@{e.get('name')}", join(head, data, doc=doc)


# -- counts ------------------------------------------------------------------------------
def _counts(head: dict, doc: dict, data: bytes, rng: random.Random):
    how = rng.choice(["unit_dims", "long_list", "symbols", "big_zero"])
    keys = _tensors(head)
    if how in ("unit_dims", "big_zero") and keys:
        key = rng.choice(keys)
        t = head[key]
        new = [1] * 10000 + list(t["shape"]) if how == "unit_dims" else [2**62, 0]
        if how == "big_zero":
            t["data_offsets"] = [t["data_offsets"][0], t["data_offsets"][0]]
        t["shape"] = new
        name = key.split(":", 1)[1]
        for e in doc.get("state") or ():
            if isinstance(e, dict) and e.get("name") == name:
                e["shape"] = new
        return f"{how}@{key}", join(head, data, doc=doc)
    if how == "long_list":
        nodes = [n for n in doc["nodes"] if any(isinstance(a, dict) and "list" in a
                                                 for a in n.get("args") or ())]
        if not nodes:
            return None
        n = rng.choice(nodes)
        i = next(i for i, a in enumerate(n["args"]) if isinstance(a, dict) and "list" in a)
        n["args"][i] = {"list": [rng.choice([0, 1, -1])] * 100_000}
        return f"{how}@{n['name']}", join(head, data, doc=doc)
    doc["symbols"] = list(doc.get("symbols") or ()) + [
        {"name": f"z{i}", "lo": 0, "hi": None} for i in range(50_000)]
    return how, join(head, data, doc=doc)


# -- depth -------------------------------------------------------------------------------
def _hop(doc: dict) -> tuple | None:
    """(the main graph's first cond node, the get_attr nodes it takes)."""
    nodes = doc["nodes"]
    by = {n["name"]: n for n in nodes}
    for n in nodes:
        if str(n.get("target", "")).endswith("higher_order.cond"):
            attrs = [by[a["node"]] for a in n["args"] if isinstance(a, dict) and
                     a.get("node") in by and by[a["node"]]["op"] == "get_attr"]
            if len(attrs) == 2:
                return n, attrs
    return None


def _call_into(sg: dict, path: str, tag: str) -> None:
    """Make subgraph ``sg`` call ``path`` (a cond of a True predicate on its first
    placeholder) before it returns."""
    nodes = sg["nodes"]
    first = next(n["name"] for n in nodes if n["op"] == "placeholder")
    get = {"name": f"g_{tag}", "op": "get_attr", "target": path}
    call = {"name": f"c_{tag}", "op": "call_function", "target": "torch.ops.higher_order.cond",
            "args": [True, {"node": get["name"]}, {"node": get["name"]},
                     {"list": [{"node": first}]}]}
    at = next(i for i, n in enumerate(nodes) if n["op"] != "placeholder")
    nodes[at:at] = [get, call]


def _depth(head: dict, doc: dict, data: bytes, rng: random.Random):
    subs = doc.get("subgraphs") or []
    if not subs:
        return None
    how = rng.choice(["self", "mutual", "chain60", "chain400"])
    if how == "self" or (how == "mutual" and len(subs) < 2):
        sg = rng.choice(subs)
        _call_into(sg, sg["path"], "self")
        return f"self@{sg['path']}", join(head, data, doc=doc)
    if how == "mutual":
        a, b = rng.sample(subs, 2)
        _call_into(a, b["path"], "ab")
        _call_into(b, a["path"], "ba")
        return f"mutual@{a['path']},{b['path']}", join(head, data, doc=doc)
    n = 60 if how == "chain60" else 400
    base = rng.choice(subs)
    chain = []
    for i in range(n):
        sg = copy.deepcopy(base)
        sg["path"] = f"chain_{i}"
        if i + 1 < n:
            _call_into(sg, f"chain_{i + 1}", f"k{i}")
        chain.append(sg)
    _call_into(base, "chain_0", "k")
    doc["subgraphs"] = subs + chain
    return f"{how}@{base['path']}", join(head, data, doc=doc)


# -- dups --------------------------------------------------------------------------------
def _dups(head: dict, doc: dict, data: bytes, rng: random.Random):
    how = rng.choice(["node_copy", "node_other", "subgraph", "symbol", "state", "input",
                      "json_key", "header_key"])
    nodes = doc["nodes"]
    calls = [i for i, n in enumerate(nodes) if n["op"] == "call_function"]
    if how in ("node_copy", "node_other") and calls:
        i = rng.choice(calls)
        twin = copy.deepcopy(nodes[i] if how == "node_copy" else nodes[rng.choice(calls)])
        twin["name"] = nodes[i]["name"]
        nodes.insert(i + 1, twin)
        return f"{how}@{nodes[i]['name']}", join(head, data, doc=doc)
    if how == "subgraph" and doc.get("subgraphs"):
        sg = copy.deepcopy(rng.choice(doc["subgraphs"]))
        other = rng.choice(doc["subgraphs"])
        other_copy = copy.deepcopy(other)
        other_copy["path"] = sg["path"]
        doc["subgraphs"].append(other_copy)
        return f"{how}@{sg['path']}", join(head, data, doc=doc)
    if how == "symbol" and doc.get("symbols"):
        s = copy.deepcopy(rng.choice(doc["symbols"]))
        if isinstance(s, dict):
            s["hi"] = 2**40
        doc["symbols"].append(s)
        return how, join(head, data, doc=doc)
    if how == "state" and doc.get("state"):
        doc["state"].append(copy.deepcopy(rng.choice(doc["state"])))
        return how, join(head, data, doc=doc)
    if how == "input" and len(doc.get("inputs") or ()) > 1:
        a, b = rng.sample(doc["inputs"], 2)
        b["name"] = a["name"]
        return f"{how}@{a['name']}", join(head, data, doc=doc)
    if how == "json_key":
        text = json.dumps(doc)
        extra = json.dumps({"nodes": [n for n in nodes if n["op"] != "call_function"]})[1:-1]
        text = text[:-1] + ", " + extra + "}"
        head["__metadata__"][KEY] = text
        return how, join(head, data)
    keys = _tensors(head)
    if how == "header_key" and keys:
        key = rng.choice(keys)
        text = json.dumps(head)
        dup = json.dumps({key: {**head[key], "data_offsets": [0, 0], "shape": [0]}})[1:-1]
        return f"{how}@{key}", join(text[:-1] + ", " + dup + "}", data)
    return None


# -- unicode -----------------------------------------------------------------------------
NAMES = ("x\u202eedoc", "x\x00y", "x\ud800", "x\nimport os", "def", "None", "1abc",
         "a" * 5000, "\u0661", "x.y", "x-y", "\ufeffx")


def _rename_all(o, old: str, new: str):
    if isinstance(o, dict):
        return {(new if k == old else k): _rename_all(v, old, new) for k, v in o.items()}
    if isinstance(o, list):
        return [_rename_all(v, old, new) for v in o]
    if isinstance(o, str):
        return new if o == old else o
    return o


def _unicode(head: dict, doc: dict, data: bytes, rng: random.Random):
    new = rng.choice(NAMES)
    how = rng.choice(["node", "symbol", "state"])
    if how == "symbol" and doc.get("symbols"):
        old = rng.choice(doc["symbols"])["name"]
        text = json.dumps(doc)
        import re
        esc = json.dumps(new)[1:-1]
        text = re.sub(rf"\b{re.escape(old)}\b", lambda _: esc, text)
        head["__metadata__"][KEY] = text
        return f"symbol:{new[:12]!r}", join(head, data)
    if how == "state" and doc.get("state"):
        old = rng.choice(doc["state"])["name"]
        doc = _rename_all(doc, old, new)
        for prefix in ("state:", "constant:"):
            if prefix + old in head:
                head[prefix + new] = head.pop(prefix + old)
        return f"state:{new[:12]!r}", join(head, data, doc=doc)
    names = [n["name"] for n in doc["nodes"] if n["op"] in ("call_function", "placeholder")]
    if not names:
        return None
    old = rng.choice(names)
    doc["nodes"] = _rename_all(doc["nodes"], old, new)
    doc["inputs"] = _rename_all(doc.get("inputs"), old, new)
    return f"node:{new[:12]!r}", join(head, data, doc=doc)


# -- recmeta -----------------------------------------------------------------------------
_DTYPES = ("float64", "float16", "int64", "int32", "bool", "bfloat16", "complex64", "uint8")


def _recmeta(head: dict, doc: dict, data: bytes, rng: random.Random):
    graphs = [("main", doc["nodes"])] + [(s["path"], s["nodes"])
                                         for s in doc.get("subgraphs") or ()]
    sites = []
    for path, nodes in graphs:
        for n in nodes:
            val = (n.get("meta") or {}).get("val") or {}
            if n["op"] == "call_function" and "tensor" in val:
                sites.append((path, nodes, n, val["tensor"]))
            for e in val.get("list") or ():
                if isinstance(e, dict) and "tensor" in e:
                    sites.append((path, nodes, n, e["tensor"]))
    subs = [s for s in sites if s[0] != "main"]
    if not sites:
        return None
    path, nodes, node, rec = rng.choice(subs if subs and rng.random() < 0.6 else sites)
    what = rng.choice(["dtype", "shape"] if rec.get("shape") else ["dtype"])
    if what == "dtype":
        new = rng.choice([d for d in _DTYPES if d != rec.get("dtype")])
        rec["dtype"] = new
    else:
        d = rng.randrange(len(rec["shape"]))
        syms = [s["name"] for s in doc.get("symbols") or ()]
        new = rng.choice([0, 1, 1000] + ([["mul", 1000, rng.choice(syms)]] if syms else []))
        rec["shape"][d] = new
    if rng.random() < 0.5:  # (its users' records alike)
        ref = json.dumps({"node": node["name"]})
        for n in nodes:
            val = (n.get("meta") or {}).get("val") or {}
            if n is not node and "tensor" in val and ref in json.dumps(n.get("args")):
                if what == "dtype":
                    val["tensor"]["dtype"] = new
                elif len(val["tensor"]["shape"]) > d:
                    val["tensor"]["shape"][d] = new
    return f"{what}={json.dumps(new)}@{path}/{node['name']}", join(head, data, doc=doc)


# -- lists (session 27) -------------------------------------------------------------------
def _lists(head: dict, doc: dict, data: bytes, rng: random.Random):
    """A node recorded as a list of tensors (a custom op's ``List[Tensor]``, ``split``):
    a getitem past it, an element record dropped or added, the getitems of an element
    dropped and its record changed (nothing takes it), or the list record dropped."""
    graphs = [doc["nodes"]] + [s["nodes"] for s in doc.get("subgraphs") or ()]
    sites = [(nodes, n) for nodes in graphs for n in nodes
             if isinstance(((n.get("meta") or {}).get("val") or {}).get("list"), list)
             and n["op"] == "call_function"]
    if not sites:
        return None
    nodes, node = rng.choice(sites)
    items = node["meta"]["val"]["list"]
    ref = {"node": node["name"]}
    takers = [n for n in nodes if n.get("target") == "operator.getitem"
              and (n.get("args") or [None])[0] == ref]
    how = rng.choice(["past", "drop", "add", "untaken", "unrecorded"])
    if how == "past" and takers:
        rng.choice(takers)["args"][1] = len(items) + rng.choice([0, 1, 5])
    elif how == "drop" and items:
        items.pop(rng.randrange(len(items)))
    elif how == "add" and items:
        items.append(json.loads(json.dumps(rng.choice(items))))
    elif how == "untaken" and items and takers:
        gone = rng.choice(takers)
        mark = json.dumps({"node": gone["name"]})
        if any(mark in json.dumps([n.get("args"), n.get("kwargs")]) for n in nodes):
            return None  # (used: dropping it would break the graph)
        rec = items[gone["args"][1] % len(items)].get("tensor")
        if not rec or not rec.get("shape"):
            return None
        nodes.remove(gone)
        syms = [x["name"] for x in doc.get("symbols") or ()]
        rec["shape"][0] = rng.choice([0, 1000] + ([["mul", 1000, syms[0]]] if syms else []))
    elif how == "unrecorded":
        node["meta"].pop("val")
    else:
        return None
    return f"{how}@{node['name']}", join(head, data, doc=doc)


# -- the oracle ----------------------------------------------------------------------------
def node_records(ep, args: tuple, kwargs: dict) -> str | None:
    """Run the loaded program node by node (its subgraphs' too) and hold each node's value
    against what the program records for it: dtype, rank, and each size whose symbols the
    same graph run binds (a recorded bare symbol takes the first value it is seen with).
    The first difference, else None (also where the program cannot be run this way)."""
    import torch
    from torch.utils import _pytree

    from safetrace.symbolic.expr import to_expr

    try:
        gm = ep.graph_module
        user = _pytree.tree_leaves((args, kwargs))
        state = getattr(ep, "_state", None) or ep.state_dict
        flat = []
        for s in ep.graph_signature.input_specs:
            if s.kind in ("parameter", "buffer"):
                flat.append(state[s.target])
            elif s.kind == "constant":
                flat.append(ep.lifted_constants[s.target])
            else:
                flat.append(user[s.leaf])
    except Exception:  # noqa: BLE001 - not a program this oracle can run
        return None
    found: list = []

    def meta_of(v):
        return getattr(v, "st_meta", v)

    def compare(node, rec, out, bound):
        rec = meta_of(rec)
        if isinstance(rec, (list, tuple)) and isinstance(out, (list, tuple)):
            for r, o in zip(rec, out):
                compare(node, r, o, bound)
            return
        shape = getattr(rec, "shape", None)
        if shape is None or not isinstance(out, torch.Tensor) or not hasattr(rec, "dtype"):
            return
        if rec.dtype != out.dtype or len(shape) != out.dim():
            found.append(f"{node.name}: {out.dtype}{list(out.shape)} vs recorded "
                         f"{rec.dtype}{list(shape)}")
            return
        for s, v in zip(shape, out.shape):
            if isinstance(s, int):
                if s != v:
                    found.append(f"{node.name}: {list(out.shape)} vs recorded {list(shape)}")
                    return
                continue
            e = to_expr(s.expr)
            names = {str(x) for x in e.free_symbols}
            if e.op == "sym" and e.name not in bound:
                bound[e.name] = int(v)
                continue
            if names <= bound.keys():
                try:
                    want = e.evaluate(bound)
                except Exception:  # noqa: BLE001
                    continue
                if want != v:
                    found.append(f"{node.name}: dim {v} vs recorded {e} = {want}")
                    return

    class Run(torch.fx.Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.bound: dict = {}

        def run_node(self, n):
            out = super().run_node(n)
            if n.op in ("placeholder", "call_function") and "val" in n.meta and not found:
                compare(n, n.meta["val"], out, self.bound)
            return out

    subs = [m for m in gm.modules() if isinstance(m, torch.fx.GraphModule) and m is not gm]
    kept = []
    try:
        for m in subs:
            kept.append((m, m.__dict__.get("forward")))
            m.forward = lambda *a, m=m: Run(m).run(*a)
        with torch.no_grad():
            Run(gm).run(*flat)
    except Exception:  # noqa: BLE001 - a refusal or torch's error: not this oracle's
        pass
    finally:
        for m, f in kept:
            if f is None:
                m.__dict__.pop("forward", None)
            else:
                m.forward = f
    return found[0] if found else None
