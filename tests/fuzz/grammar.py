"""Random shape-heavy programs for the differential fuzzer.

A program is a module (optionally with a buffer and a weight: module state) whose forward is
2–8 statements over its inputs and earlier results. Each statement kind is one generator
``kind(rng, env) -> source or None`` that reads the example values in ``env`` (name ->
tensor) to write code that eager accepts on the example; the builder keeps a statement only
if eager runs it. Kinds: pointwise and broadcasting, reductions, views and layout, slices
(constant, size-derived, negative, stepped), indexing (ints, 0-d tensors, argmax), cat /
stack / split / chunk / unbind, factories from sizes, size arithmetic (int, float, bool),
control flow on sizes (if, torch.cond, loops counted by a size), in-place writes through
views and aliases (narrow, select, unbind, split, flatten, expand, detach, masked_fill_,
index_fill_, copy_ of a number), data-dependent sizes (masks, nonzero, .item() sizes in
factories), dtype promotion (bool, int, half, uint8 with floats and Python numbers), module
state (reads, an idempotent buffer write), interpolation / pooling / padding.
The long run (benchmarks/fuzz.py) adds grammar_long.py's kinds; the suite's short run keeps
these (its programs stay the same).
"""

from __future__ import annotations

import linecache
import math
import random
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

FILENAME = "<fuzz program>"
BUF = 12       # the module's buffer: arange(BUF); its weight: (W, W)
W = 4


@dataclass
class Program:
    inputs: list                 # [(name, example tensor)]
    stmts: list                  # [(source, names it defines)]
    state: bool = False
    tags: list = field(default_factory=list)   # kinds, parallel to stmts
    layout: str = "flat"         # how forward takes the inputs: one of LAYOUTS
    outs: str = "tuple"          # how forward returns its results: one of OUTS

    def source(self) -> str:
        args, unpack = _signature(self.layout, [n for n, _ in self.inputs])
        lines = ["class P(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        if self.state:
            lines += [f"        self.register_buffer('buf', torch.arange({BUF}.0))",
                      f"        self.w = torch.nn.Parameter(torch.linspace(-1, 1, {W * W})"
                      f".reshape({W}, {W}))"]
        lines += ["", f"    def forward(self, {args}):"] + ["        " + u for u in unpack]
        outs = []
        for src, names in self.stmts:
            lines += ["        " + ln for ln in src.splitlines()]
            outs += names
        lines.append("        return " + _returned(self.outs, outs))
        return "\n".join(lines) + "\n"

    def model(self):
        ns = {"torch": torch, "F": F, "math": math}
        src = self.source()
        # the source lines in messages and graphs, as for a module written in a file
        linecache.cache[FILENAME] = (len(src), None, src.splitlines(True), FILENAME)
        exec(compile(src, FILENAME, "exec"), ns)  # noqa: S102
        return ns["P"]().eval()

    def kind_at(self, line: int) -> str | None:
        """The statement kind that wrote source line `line` (1-based) of ``source()``."""
        first = 6 + 2 * self.state + len(_signature(self.layout, [n for n, _ in self.inputs])[1])
        for (src, _), kind in zip(self.stmts, self.tags):
            n = src.count("\n") + 1
            if first <= line < first + n:
                return kind
            first += n
        return None

    def example(self):
        return tuple(t.clone() for _, t in self.inputs)

    # -- the inputs as forward takes them (``layout``); the engine's inputs stay flat ------

    def pack(self, flat) -> tuple:
        """(args, kwargs) of a call of the model on the flat inputs `flat`."""
        return _pack(self.layout, [n for n, _ in self.inputs], list(flat))

    def flat(self, fn):
        """`fn` (the model or its exported module) as a callable of the flat inputs."""
        if self.layout == "flat":
            return fn
        return lambda *flat: _call(fn, self.pack(flat))

    def pack_spec(self, spec, by_name: bool = False):
        """The flat `spec` (one entry per input) in the structure of ``pack``: a tuple per
        positional argument (with ``by_name``: a dict by parameter name) and keyword
        arguments by name."""
        names = [n for n, _ in self.inputs]
        args, kwargs = _pack(self.layout, names, list(spec))
        if self.layout == "flat" and not by_name:
            return tuple(spec)
        if not kwargs and not by_name:
            return tuple(args)
        params = _params(self.layout, names)
        return {**dict(zip(params, args)), **kwargs}

    def paths(self) -> list:
        """Each flat input's path as the exported program names it (``inp['rest'][0]``)."""
        names = [n for n, _ in self.inputs]
        if self.layout in ("flat", "kwonly"):
            return names
        if self.layout == "dict":
            return ["inp['x']"] + [f"inp['rest'][{i}]" for i in range(len(names) - 1)]
        return [f"xs[{i}]" for i in range(len(names))]


LAYOUTS = ("flat", "kwonly", "dict", "list")
OUTS = ("tuple", "nested")


def _returned(outs, names):
    """forward's return expression: a tuple of the results, or (``nested``) a dict of the
    first and the rest as a tuple holding a list (``{'first': v0, 'rest': (v1, [v2])}``)."""
    if outs == "tuple" or not names:
        return f"({', '.join(names)}{',' if len(names) == 1 else ''})"
    rest = names[1:]
    inner = f"({rest[0]}, [{', '.join(rest[1:])}])" if rest else "()"
    return f"{{'first': {names[0]}, 'rest': {inner}}}"


def _signature(layout, names):
    """(forward's parameters, the lines that unpack them into the input names)."""
    if layout == "flat":
        return ", ".join(names), []
    if layout == "kwonly":    # the first positional, the rest keyword-only
        return ", ".join(names[:1] + ["*"] + names[1:]) if len(names) > 1 \
            else f"*, {names[0]}", []
    if layout == "dict":      # {'x': x, 'rest': [y, z]}
        return "inp", [f"{names[0]} = inp['x']"] + (
            [f"{', '.join(names[1:])}, = inp['rest']"] if len(names) > 1 else [])
    return "xs", [f"{', '.join(names)}, = xs"]   # list: [x, y, z]


def _params(layout, names):
    return {"flat": names, "kwonly": names[:1] if len(names) > 1 else [], "dict": ["inp"],
            "list": ["xs"]}[layout]


def _pack(layout, names, flat):
    if layout == "flat":
        return tuple(flat), {}
    if layout == "kwonly":
        if len(names) == 1:
            return (), {names[0]: flat[0]}
        return (flat[0],), dict(zip(names[1:], flat[1:]))
    if layout == "dict":
        return ({"x": flat[0], "rest": list(flat[1:])},), {}
    return (list(flat),), {}


def _call(fn, packed):
    args, kwargs = packed
    return fn(*args, **kwargs)


def _t(env, rng, min_ndim=1, floating=None):
    names = [n for n, v in env.items() if isinstance(v, torch.Tensor) and v.ndim >= min_ndim
             and (floating is None or v.is_floating_point() == floating)]
    return rng.choice(names) if names else None


def _d(rng, a, env):
    return rng.randrange(env[a].ndim)


def _size(rng, env, a=None):
    """A size expression of some tensor: `a.shape[d]`, `len(a)`, `a.size(-1)`, `a.numel()`."""
    a = a or _t(env, rng)
    if a is None:
        return None, 0
    v = env[a]
    d = rng.randrange(v.ndim)
    form = rng.choice([f"{a}.shape[{d}]", f"{a}.size({d - v.ndim})", f"len({a})", f"{a}.numel()"])
    if form.startswith("len"):
        return form, v.shape[0]
    if form.endswith("numel()"):
        return form, v.numel()
    return form, v.shape[d]


def pointwise(rng, env, v):
    a = _t(env, rng, 0, True)
    if a is None:
        return None
    e = rng.choice([f"{a} * {rng.choice([2, -1, 0.5])} + 1", f"torch.relu({a})",
                    f"{a}.exp().clamp(max=10)", f"{a}.abs().sqrt()", f"torch.tanh({a}) - {a}",
                    f"{a}.sigmoid() * {a}"])
    return f"{v} = {e}"


def broadcast(rng, env, v):
    a, b = _t(env, rng, 0), _t(env, rng, 0)
    if a is None:
        return None
    try:
        torch.broadcast_shapes(env[a].shape, env[b].shape)
    except RuntimeError:
        b = f"{b}.sum()"
    op = rng.choice(["+", "*", "-"])
    return f"{v} = {a} {op} {b}" if rng.random() < 0.7 else f"{v} = torch.maximum({a}, {b})"


def reduce(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    d = _d(rng, a, env)
    return f"{v} = " + rng.choice([f"{a}.sum({d}, keepdim={rng.random() < 0.5})", f"{a}.mean({d})",
                                   f"{a}.amax({d})", f"{a}.argmax({d})", f"{a}.cumsum({d})",
                                   f"{a}.softmax({d})", f"{a}.var({d}, correction=0)", f"{a}.sum()"])


def view(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    t = env[a]
    d = _d(rng, a, env)
    perm = list(range(t.ndim))
    rng.shuffle(perm)
    return f"{v} = " + rng.choice([
        f"{a}.reshape(-1)", f"{a}.flatten({d})", f"{a}.unsqueeze({d})", f"{a}.transpose(0, -1)",
        f"{a}.permute({', '.join(map(str, perm))})", f"{a}.squeeze({d})",
        f"{a}.reshape({a}.shape[0], -1)", f"{a}.view(-1, {a}.shape[-1])", f"{a}.t()" if t.ndim <= 2
        else f"{a}.mT", f"{a}.expand(2, *{a}.shape)", f"{a}.flip({d})", f"{a}.roll(1, {d})",
        f"{a}.repeat({', '.join(['2'] + ['1'] * (t.ndim - 1))})", f"{a}.contiguous()"])


def _bound(rng, s, n):
    return rng.choice(["", "0", "1", "-1", "2", f"{s} // 2", f"{s} - 1", f"-{s} // 2",
                       f"{s} + 1", str(n), f"{s} - 2"])


def slicing(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    d = _d(rng, a, env)
    s = f"{a}.shape[{d}]"
    lo, hi = _bound(rng, s, env[a].shape[d]), _bound(rng, s, env[a].shape[d])
    step = rng.choice(["", "", ":2", ":3"])
    return f"{v} = {a}[{':, ' * d}{lo}:{hi}{step}]"


def indexing(rng, env, v):
    a = _t(env, rng, 1)
    if a is None or env[a].shape[0] == 0:
        return None
    return f"{v} = " + rng.choice([f"{a}[0]", f"{a}[-1]", f"{a}[..., None]", f"{a}[torch.tensor(0)]",
                                   f"{a}[{a}.flatten().argmax() % {a}.shape[0]]",
                                   f"{a}[torch.arange({a}.shape[0]) % 2 == 0]",
                                   f"{a}.index_select(0, torch.arange({a}.shape[0] // 2))",
                                   f"{a}.narrow(0, 0, {a}.shape[0] // 2)", f"{a}.diagonal()"
                                   if env[a].ndim >= 2 else f"{a}[1:]"])


def join(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    b = _t(env, rng, 1)
    d = _d(rng, a, env)
    ok = env[b].ndim == env[a].ndim and all(x == y for i, (x, y) in enumerate(
        zip(env[a].shape, env[b].shape)) if i != d)
    return f"{v} = " + rng.choice([f"torch.cat([{a}, {b if ok else a}], {d})",
                                   f"torch.cat([{a}, {a}[:{rng.randint(0, 3)}]], 0)",
                                   f"torch.stack([{a}, {a} * 2], {d})",
                                   f"torch.cat([{a}, {a}.flip(0)]).reshape(2, -1)"])


def pieces(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    d = _d(rng, a, env)
    n, i = rng.randint(1, 4), rng.choice([0, -1, 1])
    return f"{v} = " + rng.choice([f"{a}.chunk({n}, {d})[{i}]", f"{a}.split({n}, {d})[{i}]",
                                   f"{a}.unbind({d})[{i}]", f"torch.ones(len({a}.chunk({n}, {d})))",
                                   f"torch.cat({a}.split({n}, {d})[::-1], {d})",
                                   f"torch.stack([p.sum() for p in {a}.chunk({n}, {d})])"])


def factory(rng, env, v):
    s, _ = _size(rng, env)
    if s is None:
        return None
    return f"{v} = " + rng.choice([f"torch.zeros({s}, 3)", f"torch.arange({s})",
                                   f"torch.full(({s},), 2.0)", f"torch.linspace(0, 1, {s})",
                                   f"torch.arange({s} * 2).reshape({s}, 2)", f"torch.eye({s})",
                                   f"torch.ones({s}, dtype=torch.bool)"])


def size_math(rng, env, v):
    s, n = _size(rng, env)
    s2, _ = _size(rng, env)
    if s is None:
        return None
    e = rng.choice([f"{s} + 1", f"{s} * 2", f"{s} // 2", f"{s} % 3 + 1", f"max({s}, 2)",
                    f"min({s}, 3)", f"int({s} * 0.7)", f"round({s} / 3)", f"int({s} ** 0.5)",
                    f"max(0, {s} - {s2})", f"abs({s} - 3)", f"-(-{s} // 2)",
                    f"int({s} * 1.1)", f"{s} * ({s2} > 2)", f"int({s} == {s2}) + 1"])
    return f"{v} = torch.ones({e})"


def control(rng, env, v):
    a = _t(env, rng, 1)
    if a is None:
        return None
    s, n = _size(rng, env, a)
    s2, _ = _size(rng, env)
    cond = rng.choice([f"{s} > {n}", f"{s} > {max(n - 1, 0)}", f"{s} == {s2}", f"{s} % 2 == 0",
                       f"{s} * 0.7 >= 3.5", f"{s} >= {s2}", f"bool({s})", f"{s} < 4"])
    other = rng.choice([f"{a}[:1]", f"{a} * 0", f"{a}.flip(0)", f"{a}.sum(0, keepdim=True)"])
    if rng.random() < 0.2:   # the same decision as a torch.cond: both branches traced
        same = rng.choice([f"t * 0", f"t.flip(0)", f"t.abs()", f"-t"])
        return (f"{v} = torch.cond({cond}, lambda t: t * 2, lambda t: {same}, "
                f"({a},))")
    if rng.random() < 0.15:  # a loop whose count is a size (at most a few rounds)
        return f"{v} = {a}.clone()\nfor _ in range(min({s}, 3)):\n    {v} = {v} + 1"
    return f"if {cond}:\n    {v} = {a} * 2\nelse:\n    {v} = {other}"


def inplace(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None or env[a].shape[0] == 0:
        return None
    w = v + "a"
    return rng.choice([
        f"{v} = {a}.clone()\n{v}[:1] = 0.5",
        f"{v} = {a}.clone()\n{v}.add_(1)",
        f"{v} = {a}.clone()\n{w} = {v}[0]\n{v}.mul_(2)",
        f"{v} = {a}.clone()\n{w} = {v}[torch.tensor(0)]\n{v}.zero_()",
        f"{v} = {a}.clone()\n{v}.view(-1)[:2] = 3.0",
        f"{v} = {a}.clone()\n{w} = {v}.transpose(0, -1)\n{w}.sub_(1)",
        f"{v} = {a}.clone()\n{w} = {v}.unsqueeze(0)\n{v}.clamp_(max=0.5)",
        f"{v} = {a}.clone()\n{v}[{v} > 0] = 0.0",
        f"{v} = {a}.clone()\n{w} = {v}[{v}.flatten().argmax() % {v}.shape[0]]\n{v}[:1] = 7.0",
        # writes through views: each must show through the base and every other alias
        f"{v} = {a}.clone()\n{w} = {v}.narrow(0, 0, 1)\n{w}.mul_(3)",
        f"{v} = {a}.clone()\n{v}.select(0, -1).fill_(2.0)",
        f"{v} = {a}.clone()\n{w} = {v}.unbind(0)[0]\n{w}.add_(5)",
        f"{v} = {a}.clone()\n{w} = {v}.split(1, 0)[0]\n{w}.neg_()",
        f"{v} = {a}.clone()\n{w} = {v}.flatten()\n{w}[-1:] = 9.0",
        f"{v} = {a}.clone()\n{v}[..., :1] += 1",
        f"{v} = {a}.clone()\n{w} = {v}.detach()\n{w}.copy_({a} * 2)",
        f"{v} = {a}.clone()\n{v}.masked_fill_({v} < 0, 0.25)",
        f"{v} = {a}.clone()\n{w} = {v}.expand(2, *{v}.shape)\n{v}.sub_({w}[0])",
        f"{v} = {a}.clone()\n{v}.copy_(1.5)",
        f"{v} = {a}.clone()\n{v}.index_fill_(0, torch.tensor([0]), -1.0)",
    ])


def data_dependent(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    return f"{v} = " + rng.choice([f"{a}[{a} > 0]", f"{a}.nonzero()", f"torch.masked_select({a}, {a} > 0)",
                                   f"{a}.flatten()[:({a} > 0).sum().item()]",
                                   f"torch.count_nonzero({a}).reshape(1)",
                                   f"{a}.nonzero()[:, 0].float()",
                                   f"torch.unique(({a} > 0).int())",
                                   f"torch.zeros(({a} > 0).sum().item(), 2)",
                                   f"torch.arange(({a} > 0).sum().item()) * 2",
                                   f"{a}.flatten().new_ones(({a} < 0).sum().item())",
                                   f"{a}[{a} > 0].sum(0, keepdim=True)",
                                   f"{a}.flatten()[{a}.flatten() > 0][:2]"])


def dtype(rng, env, v):
    a = _t(env, rng, 0)
    if a is None:
        return None
    return f"{v} = " + rng.choice([f"{a}.to(torch.int64) + 1.5", f"({a} > 0) + {a}",
                                   f"({a} > 0).sum(0)", f"{a}.double() * 2", f"({a} * 3).int() // 2",
                                   f"{a}.to(torch.int32) * True", f"torch.where({a} > 0, {a}, 0)",
                                   f"{a}.half().float()", f"{a} / 2", f"{a}.long() % 3",
                                   f"({a} > 0) * 2.5", f"({a} > 0) & ({a} < 1)",
                                   f"{a}.long() * {a}", f"torch.where({a} > 0, 1, 0.5)",
                                   f"{a}.to(torch.uint8).int() - 1", f"{a}.bool().float()",
                                   f"({a} * 4).long() // 3 * 1.0"])


def state(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    return f"{v} = " + rng.choice([f"{a} + self.buf[:{a}.shape[-1]]",
                                   f"{a}.flatten()[:4].sum() * self.buf[:3]",
                                   f"{a}[..., :{W}] @ self.w" if env[a].shape[-1] >= W
                                   else f"{a} * self.buf[0]",
                                   f"torch.cat([{a}.flatten(), self.buf])[:{BUF}]",
                                   f"{a} * self.w.sum()",
                                   # an idempotent write of module state (a buffer mutation
                                   # that repeated calls agree on)
                                   f"self.buf.clamp_(max={BUF}) + {a}.sum()",
                                   f"{a} + self.w.abs().max() * self.buf[-1]"])


def nn_ops(rng, env, v):
    a = _t(env, rng, 3, True)
    if a is None:
        return None
    x = a if env[a].ndim == 3 else f"{a}.flatten(0, -3)"
    return f"{v} = " + rng.choice([
        f"F.interpolate({x}, scale_factor={rng.choice([0.5, 1.7, 2, 1 / 3, 2.3])}, mode="
        f"'{rng.choice(['nearest', 'linear', 'area'])}')",
        f"F.max_pool1d({x}, 2, ceil_mode={rng.random() < 0.5})", f"F.avg_pool1d({x}, 3, 2, 1)",
        f"F.pad({x}, ({rng.randint(-1, 2)}, {rng.randint(0, 2)}))", f"F.adaptive_avg_pool1d({x}, 2)",
        f"F.pixel_unshuffle({x}[None], 1)", f"{x}.unfold(-1, 2, 1)"])


KINDS = {f.__name__: f for f in (pointwise, broadcast, reduce, view, slicing, indexing, join,
                                 pieces, factory, size_math, control, inplace, data_dependent,
                                 dtype, state, nn_ops)}


def random_inputs(rng):
    """1–3 float inputs of 1–4 dims (sizes 0–7, equal sizes likely)."""
    pool = [rng.randint(0, 7) for _ in range(3)] + [rng.choice([1, 2, 3, 4])]
    out = []
    for i in range(rng.randint(1, 3)):
        shape = [rng.choice(pool) for _ in range(rng.randint(1, 4))]
        g = torch.Generator().manual_seed(rng.randrange(2**31))
        out.append(("xyz"[i], torch.randn(*shape, generator=g)))
    return out


def typed(t: torch.Tensor, dtype) -> torch.Tensor:
    """Float32 normal values `t` as a tensor of `dtype`: integers of a few units (signed
    ones negative too; uint8 small and non-negative), bools by sign, floats cast."""
    if dtype == torch.float32:
        return t
    if dtype.is_floating_point:
        return t.to(dtype)
    if dtype == torch.bool:
        return t > 0
    if dtype == torch.uint8:
        return (t * 4).round().abs().to(dtype)
    return (t * 4).round().to(dtype)


def build(rng: random.Random, kinds=None, tries=40, avoid=(), layouts=("flat",),
          outs=("tuple",), dtypes=()) -> Program:
    """A program of 2–8 statements, each checked against eager on the example; statements
    containing an ``avoid`` substring are not used (known open bugs, for the short run).
    ``kinds``: names of ``KINDS``, or a table name -> generator (the long run's, with
    grammar_long.LONG_KINDS). ``layouts``: how forward may take its inputs (``LAYOUTS``; one
    layout draws nothing, so the short run's programs stay as they were); ``outs``: how it may
    return its results (``OUTS``; one draws nothing); ``dtypes``: the dtypes an input may
    take besides float32 (``typed``; none: all float32, as the short run's)."""
    table = kinds if isinstance(kinds, dict) else KINDS
    kinds = list(kinds or KINDS)
    p = Program(random_inputs(rng), [], state=rng.random() < 0.3)
    if dtypes:   # inputs of other dtypes (the typed run's; none drawn without it), some 0-d
        p.inputs = [(n, typed(t if rng.random() < 0.85 else t.flatten()[:1].sum(),
                              rng.choice(dtypes)) if rng.random() < 0.6 else t)
                    for n, t in p.inputs]
    p.layout = rng.choice(layouts) if len(layouts) > 1 else layouts[0]
    p.outs = rng.choice(outs) if len(outs) > 1 else outs[0]
    want = rng.randint(2, 8)
    model_ns = p.model()
    env = dict(p.inputs)
    for _ in range(tries):
        if len(p.stmts) >= want:
            break
        kind = rng.choice(kinds)
        if kind == "state" and not p.state:
            continue
        v = f"v{len(p.stmts)}"
        src = table[kind](rng, env, v)
        if src is None or any(a in src for a in avoid):
            continue
        ns = {"torch": torch, "F": F, "math": math, "self": model_ns, **{k: t.clone() for k, t in env.items()}}
        try:
            with torch.no_grad():
                exec(src, ns)  # noqa: S102
        except Exception:  # noqa: BLE001 - eager refuses it on the example: try another
            continue
        names = [n for n in (v, v + "a") if n in ns]
        if not all(isinstance(ns[n], torch.Tensor) for n in names):
            continue
        p.stmts.append((src, names))
        p.tags.append(kind)
        env.update({n: ns[n] for n in names})
        env.update({k: ns[k] for k in list(env) if k in ns})   # in-place effects
    return p
