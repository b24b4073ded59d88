"""Mutations of saved programs aimed at their subgraphs (cond branches, while_loop / map /
scan bodies), for benchmarks/hostile_probe.py.

``programs()`` exports bases whose control flow does size work inside its subgraphs (a
branch that reshapes and allocates from a size, a loop body reading an outer tensor, a cond
nested in a while_loop body and in a map body, a scan with two outputs of different dtypes,
a branch whose checks on a size read from data bound its later slice);
``variants()`` edits one subgraph (or the HOP call that runs it) per variant:

* ``sg_int``: an int argument of a node inside a subgraph (a size, a dim, an index);
* ``sg_target``: a node's op inside a subgraph replaced by another one (allocations, views);
* ``sg_arg``: a node's tensor argument replaced by another node of the same subgraph;
* ``sg_outer``: a node inside a subgraph made to read a value of the outer graph (by name);
* ``sg_out``: what a subgraph returns reversed, one output dropped, duplicated, or replaced;
* ``sg_ph``: a subgraph's placeholder dropped or duplicated (the carried count);
* ``sg_meta``: a subgraph placeholder's or node's recorded dtype or shape changed;
* ``hop_args``: the HOP call's carried / operand tuple reversed, shortened, extended, or
  one entry replaced by another outer node;
* ``sg_graph``: a HOP call pointed at another subgraph (a branch swapped for a body, a
  body for a nested branch), or two subgraphs' nodes swapped;
* ``sg_insert``: a node added inside a subgraph (an allocation sized by a placeholder's
  size or a large constant, an op mixing a placeholder with an outer value) returned in
  place of one output;
* ``sg_nest``: a subgraph made to run the root's control flow again on its own
  placeholders (nested control flow, possibly recursive);
* ``sg_multi``: two of the above together.
"""

from __future__ import annotations

import copy
import io
import json
import random

KINDS = ["sg_int", "sg_target", "sg_arg", "sg_outer", "sg_out", "sg_ph", "sg_meta",
         "hop_args", "sg_graph", "sg_insert", "sg_nest"]
TARGETS = ["torch.ops.aten.zeros.default", "torch.ops.aten.view.default",
           "torch.ops.aten.expand.default", "torch.ops.aten.cat.default",
           "torch.ops.aten.repeat.default", "torch.ops.aten.mm.default",
           "torch.ops.aten.flip.default", "torch.ops.aten.sum.dim_IntList",
           "torch.ops.aten.new_zeros.default", "torch.ops.aten.arange.default",
           "torch.ops.aten.select.int", "torch.ops.aten.slice.Tensor",
           "torch.ops.aten.unsqueeze.default", "torch.ops.aten.reshape.default",
           "torch.ops.aten.index_select.default", "torch.ops.aten.full.default",
           "torch.ops.aten.add.Tensor", "torch.ops.aten.mul.Tensor", "torch.ops.aten.to.dtype"]
BIG = [0, 1, -1, 2, 3, 7, 64, 2**20, 2**40, 2**62]


def programs() -> dict[str, object]:
    import torch
    from torch._higher_order_ops.map import map as hop_map
    from torch._higher_order_ops.scan import scan as hop_scan
    from torch._higher_order_ops.while_loop import while_loop

    import safetrace as st
    from tests.serialize.test_asserted_facts import BranchChecks  # (a branch's checks)
    from tests.serialize.test_hostile_subgraph_args import TwoOutputs as CondSizes

    class LoopOuter(torch.nn.Module):
        def forward(self, x, y):
            return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + y.sum(0)),
                              (torch.zeros((), dtype=torch.int64), x))

    class Nested(torch.nn.Module):
        def forward(self, x):
            def body(i, a):
                b = torch.cond(a.sum() > 0, lambda u: u * 2, lambda u: u.flip(0), (a,))
                return i + 1, b

            return while_loop(lambda i, a: i < 2, body, (torch.zeros((), dtype=torch.int64), x))

    class MapCond(torch.nn.Module):
        def forward(self, xs, y):
            def f(x, y):
                return torch.cond(x.sum() > 0, lambda u, v: u + v, lambda u, v: u * v, (x, y))

            return hop_map(f, xs, y)

    class Scan2(torch.nn.Module):
        def forward(self, init, k, xs):
            return hop_scan(lambda c, x: (c + x * k, ((c * x).sum(0, keepdim=True),
                                                      (x > 0).sum(0, keepdim=True))), init, xs)

    n = st.Dim("n", min=0, max=32)
    t = st.Dim("t", min=1, max=32)
    return {
        "sg_cond_sizes": st.export(CondSizes(), (torch.randn(4, 3), torch.randn(2)),
                                   dynamic_shapes={"x": {0: n}, "p": None}),
        "sg_loop_outer": st.export(LoopOuter(), (torch.randn(4), torch.randn(3, 4)),
                                   dynamic_shapes={"x": {0: n},
                                                   "y": {0: st.Dim("m", max=8), 1: n}}),
        "sg_nested": st.export(Nested(), (torch.randn(4),), dynamic_shapes={"x": {0: n}}),
        "sg_map_cond": st.export(MapCond(), (torch.randn(4, 3), torch.randn(3)),
                                 dynamic_shapes={"xs": {0: t}, "y": None}),
        "sg_scan2": st.export(Scan2(), (torch.randn(3), torch.zeros((), dtype=torch.int64),
                                        torch.randn(5, 3)),
                              dynamic_shapes={"init": None, "k": None, "xs": {0: t}}),
        "sg_checks": st.export(BranchChecks(), (torch.randn(3, 4), torch.tensor(2)),
                               dynamic_shapes={"x": {0: st.Dim("r", min=1, max=32)},
                                               "pos": None}),
    }


def saved(made: dict) -> dict[str, bytes]:
    import safetrace as st

    out = {}
    for name, ep in made.items():
        buf = io.BytesIO()
        st.save(ep, buf)
        out[name] = buf.getvalue()
    return out


# ------------------------------------------------------------------------------ helpers


def _refs(o: object, out: list) -> list:
    """Every {"node": name} dict inside o (to edit in place)."""
    if isinstance(o, dict):
        if set(o) == {"node"}:
            out.append(o)
        for v in o.values():
            _refs(v, out)
    elif isinstance(o, list):
        for v in o:
            _refs(v, out)
    return out


def _int_slots(o: object, out: list) -> list:
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
    for k, v in list(items):
        if isinstance(v, int) and not isinstance(v, bool):
            out.append((o, k))
        else:
            _int_slots(v, out)
    return out


def _calls(nodes: list) -> list:
    return [n for n in nodes if n.get("op") == "call_function"]


def _hops(nodes: list) -> list:
    return [n for n in nodes if str(n.get("target", "")).startswith("torch.ops.higher_order")]


def _names(nodes: list, op: str | None = None) -> list[str]:
    return [n["name"] for n in nodes if op is None or n.get("op") == op]


def _output(nodes: list) -> dict:
    return next(n for n in nodes if n.get("op") == "output")


def _out_list(nodes: list) -> list:
    args = _output(nodes)["args"][0]
    return args["tuple"] if isinstance(args, dict) and "tuple" in args else [args]


def _tensor_meta(node: dict) -> dict | None:
    val = node.get("meta", {}).get("val")
    return val.get("tensor") if isinstance(val, dict) else None


def _size_refs(nodes: list) -> list:
    """Values usable as a size inside the graph: symint placeholders and sym_size nodes."""
    out = []
    for n in nodes:
        val = n.get("meta", {}).get("val")
        if isinstance(val, dict) and "symint" in val:
            out.append({"node": n["name"]})
    return out


def _tuple_arg(hop: dict) -> list | None:
    tuples = [a for a in hop.get("args", []) if isinstance(a, dict) and "tuple" in a]
    return tuples[0]["tuple"] if tuples else None


# ---------------------------------------------------------------------------- mutations


def _mutate(d: dict, kind: str, rng: random.Random) -> str | None:
    subs = d["subgraphs"]
    sg = rng.choice(subs)
    nodes = sg["nodes"]
    path = sg["path"]
    calls = _calls(nodes)
    if kind == "sg_int":
        slots = _int_slots([n.get("args", []) for n in calls] + [n.get("kwargs", [])
                                                                for n in calls], [])
        if not slots:
            return None
        o, k = rng.choice(slots)
        old = o[k]
        o[k] = rng.choice(BIG + [old + 1, 2 * old, -old])
        return f"{path}:{old}->{o[k]}"
    if kind == "sg_target":
        plain = [n for n in calls if "higher_order" not in n["target"]
                 and n["target"] != "operator.getitem"]
        if not plain:
            return None
        n = rng.choice(plain)
        pool = TARGETS + [c["target"] for s in subs for c in _calls(s["nodes"])]
        old, n["target"] = n["target"], rng.choice(pool)
        return f"{path}/{n['name']}:{old.split('.')[-2]}->{n['target'].split('.')[-2]}"
    if kind in ("sg_arg", "sg_outer"):
        refs = _refs([n.get("args", []) for n in calls], [])
        if not refs:
            return None
        r = rng.choice(refs)
        if kind == "sg_arg":
            new = rng.choice(_names(nodes))
        else:
            outer = [n["name"] for s in [{"nodes": d["nodes"]}] + subs if s is not sg
                     for n in s["nodes"] if n.get("op") != "output"]
            new = rng.choice(outer)
        old, r["node"] = r["node"], new
        return f"{path}:{old}->{new}"
    if kind == "sg_out":
        outs = _out_list(nodes)
        how = rng.choice(["reverse", "drop", "dup", "replace"])
        if how == "reverse":
            outs.reverse()
        elif how == "drop" and outs:
            outs.pop(rng.randrange(len(outs)))
        elif how == "dup" and outs:
            outs.append(copy.deepcopy(rng.choice(outs)))
        elif outs:
            outs[rng.randrange(len(outs))] = {"node": rng.choice(_names(nodes))}
        return f"{path}:{how}"
    if kind == "sg_ph":
        phs = [n for n in nodes if n.get("op") == "placeholder"]
        if not phs:
            return None
        ph = rng.choice(phs)
        if rng.random() < 0.5:
            nodes.remove(ph)
            return f"{path}:drop {ph['name']}"
        extra = copy.deepcopy(ph)
        extra["name"] = ph["name"] + "_extra"
        nodes.insert(nodes.index(ph) + 1, extra)
        return f"{path}:dup {ph['name']}"
    if kind == "sg_meta":
        metas = [(n, m) for n in nodes if (m := _tensor_meta(n)) is not None]
        if not metas:
            return None
        n, m = rng.choice(metas)
        how = rng.choice(["dtype", "add_dim", "drop_dim", "dim_const", "dim_twice"])
        if how == "dtype":
            m["dtype"] = rng.choice(["int64", "bool", "float64", "float16", "int32"])
        elif how == "add_dim":
            m["shape"] = m["shape"] + [rng.choice([1, 2, 5])]
        elif how == "drop_dim" and m["shape"]:
            m["shape"] = m["shape"][1:]
        elif how == "dim_const" and m["shape"]:
            m["shape"][0] = rng.choice([0, 1, 5, 2**40])
        elif m["shape"]:
            m["shape"][0] = ["mul", 2, m["shape"][0]]
        return f"{path}/{n['name']}:{how}"
    if kind == "hop_args":
        graphs = [d["nodes"]] + [s["nodes"] for s in subs]
        hops = [h for g in graphs for h in _hops(g)]
        if not hops:
            return None
        hop = rng.choice(hops)
        items = _tuple_arg(hop)
        if items is None:
            return None
        owner = next(g for g in graphs if hop in g)
        how = rng.choice(["reverse", "drop", "dup", "replace"])
        if how == "reverse":
            items.reverse()
        elif how == "drop" and items:
            items.pop()
        elif how == "dup" and items:
            items.append(copy.deepcopy(rng.choice(items)))
        elif items:
            cands = [n["name"] for n in owner if n.get("op") in ("placeholder", "call_function")
                     and n is not hop]
            items[rng.randrange(len(items))] = {"node": rng.choice(cands)}
        return f"{hop['name']}:{how}"
    if kind == "sg_graph":
        if len(subs) < 2:
            return None
        a, b = rng.sample(subs, 2)
        if rng.random() < 0.5:
            a["nodes"], b["nodes"] = b["nodes"], a["nodes"]
            return f"swap {a['path']}<->{b['path']}"
        attrs = [n for g in [d["nodes"]] + [s["nodes"] for s in subs] for n in g
                 if n.get("op") == "get_attr"]
        if not attrs:
            return None
        n = rng.choice(attrs)
        old, n["target"] = n["target"], b["path"].split(".")[-1]
        return f"get_attr {old}->{n['target']}"
    if kind == "sg_insert":
        phs = [n for n in nodes if n.get("op") == "placeholder" and _tensor_meta(n)]
        outs = _out_list(nodes)
        if not phs or not outs:
            return None
        ph = rng.choice(phs)
        meta = copy.deepcopy(ph["meta"])
        how = rng.choice(["alloc_size", "alloc_big", "outer"])
        if how == "alloc_size":
            sizes = _size_refs(nodes) or [rng.choice([3, 2**20])]
            size = rng.choice(sizes)
            k = rng.choice([1, 2, 3, 5])
            new = {"name": "st_extra", "op": "call_function",
                   "target": "torch.ops.aten.zeros.default",
                   "args": [{"list": [copy.deepcopy(size) for _ in range(k)]}], "meta": meta}
        elif how == "alloc_big":
            new = {"name": "st_extra", "op": "call_function",
                   "target": "torch.ops.aten.zeros.default",
                   "args": [{"list": [rng.choice([2**20, 2**31, 2**40]), 4]}], "meta": meta}
        else:
            outer = [n["name"] for n in d["nodes"] if n.get("op") == "placeholder"]
            new = {"name": "st_extra", "op": "call_function",
                   "target": rng.choice(["torch.ops.aten.add.Tensor", "torch.ops.aten.mul.Tensor"]),
                   "args": [{"node": ph["name"]}, {"node": rng.choice(outer)}], "meta": meta}
        nodes.insert(nodes.index(_output(nodes)), new)
        outs[rng.randrange(len(outs))] = {"node": "st_extra"}
        return f"{path}:{how}"
    if kind == "sg_nest":
        return _nest(d, sg, rng)
    return None


def _nest(d: dict, sg: dict, rng: random.Random) -> str | None:
    """Copy the root's first HOP call (its get_attrs and getitems) into sg, its operands
    mapped to sg's placeholders, its first result returned in place of sg's first output."""
    root = d["nodes"]
    hops = _hops(root)
    nodes = sg["nodes"]
    phs = [n["name"] for n in nodes if n.get("op") == "placeholder"]
    if not hops or not phs:
        return None
    hop = copy.deepcopy(rng.choice(hops))
    names = {r["node"] for r in _refs(hop.get("args", []), [])}
    attrs = {n["name"]: n for n in root if n.get("op") == "get_attr" and n["name"] in names}
    placed = []
    for r in _refs(hop.get("args", []), []):
        if r["node"] in attrs:
            r["node"] = "nest_" + r["node"]
        else:
            r["node"] = rng.choice(phs) if rng.random() < 0.8 else phs[0]
    recursive = rng.random() < 0.3
    for name, a in attrs.items():
        g = {"name": "nest_" + name, "op": "get_attr", "target": a["target"]}
        placed.append(g)
        src = next(s for s in d["subgraphs"] if s["path"] == a["target"])
        if recursive:  # the nested graph is sg itself: it runs the same HOP again
            src = sg
        d["subgraphs"].append({"path": f"{sg['path']}.{a['target']}",
                               "nodes": copy.deepcopy(src["nodes"])})
    hop["name"] = "nest_hop"
    first = next((copy.deepcopy(n) for n in root if n.get("target") == "operator.getitem"
                  and n["args"][0] == {"node": next(h for h in hops)["name"]}), None)
    at = nodes.index(_output(nodes))
    nodes[at:at] = placed + [hop]
    if first is not None:
        first["name"] = "nest_get"
        first["args"][0] = {"node": "nest_hop"}
        nodes.insert(at + len(placed) + 1, first)
        outs = _out_list(nodes)
        if outs:
            outs[0] = {"node": "nest_get"}
    return f"{sg['path']}:{'recursive' if recursive else 'nest'}"


def variants(blob: bytes, rng: random.Random, count: int, split, join, key) -> list:
    head, data = split(blob)
    doc = json.loads(head["__metadata__"][key])
    if not doc.get("subgraphs"):
        return []
    out = []
    for _ in range(count):
        d = copy.deepcopy(doc)
        kinds = [rng.choice(KINDS)] if rng.random() < 0.8 else rng.sample(KINDS, 2)
        labels = []
        for kind in kinds:
            try:
                got = _mutate(d, kind, rng)
            except (KeyError, IndexError, TypeError, StopIteration, ValueError):
                got = None
            if got:
                labels.append(f"{kind}:{got}")
        if not labels:
            continue
        h = copy.deepcopy(head)
        h["__metadata__"][key] = json.dumps(d)
        tag = "sg_multi" if len(labels) > 1 else "sg"
        out.append((f"{tag}:{'+'.join(labels)}", join(h, data)))
    return out
