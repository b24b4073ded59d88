"""Hostile edits of saved programs, session 32, for benchmarks/hostile_probe.py.

``variants(blob, rng, count, kind)`` makes ``count`` variants of one class:

* ``literals``: the JSON text itself: a number written ``NaN``/``Infinity``/``-Infinity``
  or with 5,000 digits or as ``1e400``, 100,000 nested brackets, a key given twice in one
  node (the later one wins in Python's parser, the earlier in others), a lone surrogate
  escape in a name, a byte-order mark or a NUL/non-UTF-8 byte in the header, two JSON
  documents back to back, the padding of the header made of NULs, the program's
  document as a JSON number or list instead of a string;
* ``exprs``: symbolic expressions that blow up, put in a symbol's range, a range
  constraint, a contract's size or condition, or a node's recorded size: towers of
  powers, huge exponents, division and modulo by zero, 20,000 nested additions, unknown
  operators (``__import__``, ``eval``), non-integer leaves (floats, booleans, ``None``,
  dicts), symbols nobody declares;
* ``targets``: an allowed operator spelled another way: whitespace around it, other case,
  no overload or two, the packet's dunder attributes, other namespaces
  (``prims``, ``profiler``, ``_c10d_functional``), a zero-width or full-width character,
  ``builtins``/``os``/``importlib`` paths;
* ``refs``: a node's argument naming a later node, itself, a name only a subgraph has, an
  output naming a later node, a reference carrying extra keys or of another shape;
* ``specs``: the pytree specs of inputs and outputs: 20,000 nested tuples, 200,000
  children, an unknown or importable type name, a dict whose context has fewer or more
  keys than children or keys that are not strings, a namedtuple-like type naming a
  module attribute.
"""

from __future__ import annotations

import json
import random
import re

from tests.serialize.surgery import KEY, join, split

KINDS = ("literals", "exprs", "targets", "refs", "specs")


_DEEP = "@@deep@@"  # stands for text too deeply nested for json.dumps to write


def _pack(head: dict, doc: object, data: bytes, deep: str = "") -> bytes:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    if deep:
        text = text.replace(json.dumps(_DEEP), deep, 1)
    return join(head, data, doc=text)


def variants(blob: bytes, rng: random.Random, count: int, kind: str) -> list[tuple[str, bytes]]:
    make = {"literals": _literals, "exprs": _exprs, "targets": _targets, "refs": _refs,
            "specs": _specs}[kind]
    out = []
    for _ in range(count):
        head, data = split(blob)
        doc = json.loads(head["__metadata__"][KEY])
        made = make(head, doc, data, rng)
        if made is not None:
            label, new = made
            out.append((f"{kind}:{label}", new))
    return out


def _nodes(doc: dict) -> list[dict]:
    out = [n for n in doc.get("nodes") or () if isinstance(n, dict)]
    for sg in doc.get("subgraphs") or ():
        out += [n for n in sg.get("nodes") or () if isinstance(n, dict)]
    return out


# -- literals ----------------------------------------------------------------------------
_NUMBER = re.compile(r'(?<=[\[,:] )-?\d+(?=[,\]}])|(?<=[\[,:])-?\d+(?=[,\]}])')


def _literals(head: dict, doc: dict, data: bytes, rng: random.Random):
    how = rng.choice(["nan", "inf", "neginf", "digits", "e400", "deep", "dupkey", "surrogate",
                      "bom", "nul", "latin1", "twodocs", "nulpad", "doc_number", "doc_list",
                      "outer_dupkey", "outer_deep"])
    text = json.dumps(doc)
    if how in ("nan", "inf", "neginf", "digits", "e400"):
        spots = list(_NUMBER.finditer(text))
        if not spots:
            return None
        m = rng.choice(spots)
        lit = {"nan": "NaN", "inf": "Infinity", "neginf": "-Infinity", "digits": "9" * 5000,
               "e400": "1e400"}[how]
        new = text[:m.start()] + lit + text[m.end():]
        return f"{how}@{m.start()}", join(head, data, doc=new)
    if how == "deep":
        spots = list(_NUMBER.finditer(text))
        m = rng.choice(spots) if spots else None
        at = m.start() if m else 1
        new = text[:at] + "[" * 100_000 + "]" * 100_000 + text[m.end() if m else 1:]
        return f"deep@{at}", join(head, data, doc=new)
    if how == "dupkey":
        nodes = [n for n in doc.get("nodes") or () if n.get("op") == "call_function"]
        if not nodes:
            return None
        n = rng.choice(nodes)
        field, other = rng.choice([("target", '"builtins.eval"'), ("name", '"x"'),
                                   ("args", '[{"node": "%s"}]' % n["name"]),
                                   ("op", '"call_module"')])
        before = json.dumps(n)
        dup = before[:-1] + f', "{field}": {other}' + "}"
        dup_first = "{" + f'"{field}": {other}, ' + before[1:]
        new = text.replace(before, rng.choice([dup, dup_first]), 1)
        return f"dupkey_{field}@{n['name']}", join(head, data, doc=new)
    if how == "surrogate":
        names = [n["name"] for n in doc.get("nodes") or () if n.get("op") == "call_function"]
        if not names:
            return None
        old = rng.choice(names)
        new = text.replace(f'"{old}"', '"' + old + '\\ud800"')
        return f"surrogate@{old}", join(head, data, doc=new)
    if how == "outer_dupkey":
        raw = json.dumps(head)
        extra = json.dumps({KEY: json.dumps({"format": KEY, "version": [2, 2]})})[1:-1]
        raw = raw.replace('"__metadata__": {', '"__metadata__": {' + extra + ", ", 1)
        return how, join(raw.encode(), data)
    if how == "outer_deep":
        raw = json.dumps(head)[:-1] + ', "z": ' + "[" * 100_000 + "]" * 100_000 + "}"
        return how, join(raw.encode(), data)
    if how == "doc_number":
        head["__metadata__"][KEY] = 12345
        return how, join(json.dumps(head).encode(), data)
    if how == "doc_list":
        head["__metadata__"][KEY] = [text]
        return how, join(json.dumps(head).encode(), data)
    raw = json.dumps(head).encode()
    if how == "bom":
        return how, join(b"\xef\xbb\xbf" + raw, data)
    if how == "nul":
        at = rng.randrange(1, len(raw) - 1)
        return f"nul@{at}", join(raw[:at] + b"\x00" + raw[at:], data)
    if how == "latin1":
        at = raw.find(b'"', raw.find(KEY.encode()) + len(KEY) + 3) + 1
        return how, join(raw[:at] + b"\xff\xfe" + raw[at:], data)
    if how == "twodocs":
        return how, join(raw + b"{}", data)
    return how, join(raw, data, pad=b"\x00") if len(raw) % 8 else join(
        raw + b"\x00" * 8, data)


# -- exprs -------------------------------------------------------------------------------
def _tower(depth: int) -> object:
    e: object = 2
    for _ in range(depth):
        e = ["pow", 2, e]
    return e


def _deep_add(sym: str, depth: int) -> str:
    return '["add", ' * depth + json.dumps(sym) + ", 1]" * depth


def _bomb(syms: list[str], rng: random.Random) -> tuple[str, object]:
    s = rng.choice(syms) if syms else "s0"
    return rng.choice([
        ("tower5", _tower(5)), ("tower30", _tower(30)),
        ("pow_huge", ["pow", s, 10**18]), ("pow_neg", ["pow", s, -1]),
        ("pow_2_huge", ["pow", 2, ["mul", s, 10**12]]),
        ("mul_chain", ["mul", *([["add", s, 10**18]] * 200)]),
        ("floordiv0", ["floordiv", s, 0]), ("mod0", ["mod", s, 0]),
        ("floordiv_sym0", ["floordiv", s, ["sub", s, s]]),
        ("truediv0", ["truediv", s, 0]),
        ("deep20k", _deep_add(s, 20_000)), ("deep600", _deep_add(s, 600)),
        ("deep100", _deep_add(s, 100)),
        ("import", ["__import__", "os"]), ("eval", ["eval", "1"]),
        ("getattr", ["getattr", s, "__class__"]),
        ("float_leaf", ["add", s, 0.5]), ("bool_leaf", ["add", s, True]),
        ("none_leaf", ["add", s, None]), ("dict_leaf", ["add", s, {"x": 1}]),
        ("empty", []), ("op_only", ["add"]), ("unknown_sym", ["add", "q99", 1]),
        ("min_huge", ["min", *([s] * 50_000)]),
        ("big_lit", 10**300), ("neg_big_lit", -10**300),
    ])


def _expr_slots(doc: dict) -> list[tuple[object, object, str]]:
    out: list = []
    for i, s in enumerate(doc.get("symbols") or ()):
        if isinstance(s, dict):
            out += [(s, k, f"symbols/{i}/{k}") for k in ("lo", "hi", "hint") if k in s]
    for i, r in enumerate(doc.get("range_constraints") or ()):
        if isinstance(r, list) and len(r) == 3:
            out += [(r, 1, f"range/{i}/lo"), (r, 2, f"range/{i}/hi")]
    con = doc.get("contract") or {}
    for i, inp in enumerate(con.get("inputs") or ()):
        for j, d in enumerate(inp.get("dims") or ()):
            out.append((d, "size", f"contract/{i}/{j}"))
    for i, c in enumerate(con.get("conditions") or ()):
        if isinstance(c, dict):
            out += [(c, k, f"cond/{i}/{k}") for k in c if k in ("expr", "lhs", "rhs")]
    for n in _nodes(doc):
        val = (n.get("meta") or {}).get("val")
        if isinstance(val, dict) and "tensor" in val:
            shape = val["tensor"].get("shape") or []
            out += [(shape, j, f"{n['name']}/shape/{j}") for j in range(len(shape))]
        elif isinstance(val, dict) and "symint" in val:
            out.append((val, "symint", f"{n['name']}/symint"))
        for j, a in enumerate(n.get("args") or ()):
            if isinstance(a, (int, str)) and not isinstance(a, bool) and n.get("op") == \
                    "call_function":
                out.append((n["args"], j, f"{n['name']}/arg{j}"))
    return out


def _exprs(head: dict, doc: dict, data: bytes, rng: random.Random):
    slots = _expr_slots(doc)
    if not slots:
        return None
    syms = [s["name"] for s in doc.get("symbols") or () if isinstance(s, dict)]
    o, k, where = rng.choice(slots)
    label, bomb = _bomb(syms, rng)
    o[k] = _DEEP if isinstance(bomb, str) and bomb.startswith("[") else bomb
    return f"{label}@{where}", _pack(head, doc, data, bomb if o[k] == _DEEP else "")


# -- targets -----------------------------------------------------------------------------
def _respell(t: str, rng: random.Random) -> tuple[str, str]:
    parts = t.split(".")
    op = parts[-2] if len(parts) >= 4 else "add"
    return rng.choice([
        ("space_after", t + " "), ("space_before", " " + t),
        ("tab_inside", t.replace(".", ".\t", 1)),
        ("upper", t.upper()), ("title_ns", t.replace("aten", "Aten")),
        ("no_overload", ".".join(parts[:-1])), ("two_overloads", t + ".default"),
        ("dunder_call", t + ".__call__"), ("dunder_class", t + ".__class__"),
        ("packet_dunder", ".".join(parts[:-1]) + ".__getattribute__"),
        ("ops_dunder", "torch.ops.__getattr__"), ("ns_dict", "torch.ops.aten.__dict__"),
        ("prims", f"torch.ops.prims.{op}.default"),
        ("profiler", "torch.ops.profiler._record_function_enter.default"),
        ("c10d", "torch.ops._c10d_functional.all_reduce.default"),
        ("zero_width", t.replace("aten", "at\u200ben")),
        ("full_width", t.replace("a", "\uff41", 1)),
        ("builtins", "builtins.eval"), ("os", "os.system"),
        ("importlib", "importlib.import_module"),
        ("torch_load", "torch.load"), ("getattr_chain", "operator.attrgetter"),
        ("operator_dunder", "operator.__builtins__"), ("empty_parts", t.replace(".", "..", 1)),
        ("trailing_dot", t + "."), ("torch_fn", "torch.add"),
        ("torch_private", "torch._C._set_grad_enabled"),
        ("sys", "sys.exit"), ("nul", t + "\x00"),
    ])


def _targets(head: dict, doc: dict, data: bytes, rng: random.Random):
    nodes = [n for n in _nodes(doc) if n.get("op") == "call_function"
             and isinstance(n.get("target"), str)]
    if not nodes:
        return None
    n = rng.choice(nodes)
    label, new = _respell(n["target"], rng)
    n["target"] = new
    return f"{label}@{n['name']}", _pack(head, doc, data)


# -- refs --------------------------------------------------------------------------------
def _refs(head: dict, doc: dict, data: bytes, rng: random.Random):
    nodes = doc.get("nodes") or []
    calls = [i for i, n in enumerate(nodes) if n.get("op") == "call_function" and n.get("args")]
    if not calls:
        return None
    i = rng.choice(calls)
    n = nodes[i]
    later = [m["name"] for m in nodes[i + 1:] if m.get("op") != "output"]
    sub_names = [m["name"] for sg in doc.get("subgraphs") or () for m in sg.get("nodes") or ()]
    how = rng.choice(["self", "later", "subgraph_name", "extra_key", "node_list", "node_int",
                      "node_dict", "output_later", "kwargs_self"])
    ref: object
    if how == "self":
        ref = {"node": n["name"]}
    elif how == "later":
        if not later:
            return None
        ref = {"node": rng.choice(later)}
    elif how == "subgraph_name":
        if not sub_names:
            return None
        ref = {"node": rng.choice(sub_names)}
    elif how == "extra_key":
        ref = {"node": nodes[0]["name"], "__class__": "os.system"}
    elif how == "node_list":
        ref = {"node": [nodes[0]["name"]]}
    elif how == "node_int":
        ref = {"node": 0}
    elif how == "node_dict":
        ref = {"node": {"node": nodes[0]["name"]}}
    elif how == "kwargs_self":
        kw = n.setdefault("kwargs", [])
        if isinstance(kw, dict):
            kw["out"] = {"node": n["name"]}
        else:
            kw.append(["out", {"node": n["name"]}])
        return f"{how}@{n['name']}", _pack(head, doc, data)
    else:
        out = next((m for m in nodes if m.get("op") == "output"), None)
        if out is None or not out.get("args"):
            return None
        first = next(m for m in nodes if m.get("op") == "call_function")
        first["args"] = [{"node": n["name"] if n is not first else nodes[-2]["name"]}] + list(
            first.get("args") or [])[1:]
        return f"{how}@{first['name']}", _pack(head, doc, data)
    j = rng.randrange(len(n["args"]))
    n["args"][j] = ref
    return f"{how}@{n['name']}/{j}", _pack(head, doc, data)


# -- specs -------------------------------------------------------------------------------
def _deep_spec(depth: int) -> str:
    return '{"type": "tuple", "context": null, "children": [' * depth + "null" + "]}" * depth


def _specs(head: dict, doc: dict, data: bytes, rng: random.Random):
    which = rng.choice(["in_spec", "out_spec"])
    spec = doc.get(which)
    if not isinstance(spec, dict):
        return None
    how = rng.choice(["deep20k", "wide200k", "type_os", "type_unknown", "type_namedtuple",
                      "dict_fewer_keys", "dict_more_keys", "dict_int_keys", "context_huge",
                      "children_dict", "child_int", "type_none", "deep_dict_context"])
    deep = ""
    if how == "deep20k":
        doc[which], deep = _DEEP, _deep_spec(20_000)
    elif how == "wide200k":
        doc[which] = {"type": "tuple", "context": None, "children": [None] * 200_000}
    elif how in ("type_os", "type_unknown", "type_namedtuple", "type_none"):
        spec["type"] = {"type_os": "os.system", "type_unknown": "mymod.Thing",
                        "type_namedtuple": "collections.namedtuple",
                        "type_none": None}[how]
    elif how in ("dict_fewer_keys", "dict_more_keys", "dict_int_keys"):
        kids = spec.get("children") or [None]
        keys = {"dict_fewer_keys": [], "dict_more_keys": ["a", "b", "c", "d"][:len(kids) + 1],
                "dict_int_keys": [0, 1.5, None, [1]][:len(kids)]}[how]
        doc[which] = {"type": "dict", "context": {"list": keys}, "children": kids}
    elif how == "context_huge":
        spec["context"] = {"list": ["k"] * 300_000}
    elif how == "children_dict":
        spec["children"] = {"a": None}
    elif how == "child_int":
        spec["children"] = [7] + list(spec.get("children") or [])[1:]
    else:
        spec["context"], deep = _DEEP, '{"list": [' * 20_000 + '"k"' + "]}" * 20_000
    return f"{how}@{which}", _pack(head, doc, data, deep)
