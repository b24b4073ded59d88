"""Fuzz kinds for what the other grammars' single calls on fresh contiguous float inputs
cannot see: a program called several times in sequence, on inputs of any layout and dtype.

  state    buffers written in forward: counters (``add_``, ``+=``, reassignment), a
           KV-cache-like buffer written at positions from sizes, from ``arange`` or from a
           0-d tensor's ``.item()`` (``index_copy_``, slice ``copy_``), in-place ops on
           buffer views, ``self.acc.add_(x.sum())``; a transposed and a channels-last buffer
  layout   inputs given non-contiguous, transposed, channels-last, expanded (stride 0), at a
           storage offset or with odd strides on dims of size 0 / 1 (contiguous to
           ``is_contiguous()``), as example and as later inputs; code reading strides
           (``stride()``, ``is_contiguous()`` branches, ``view``, ``contiguous``, ``reshape``)
  scalars  int / bool / half / bfloat16 / uint8 inputs with 0-d tensors and Python numbers:
           floor / trunc division and remainder with negative operands, comparisons,
           ``where``, ``clamp`` with int / float / tensor bounds, reductions over empty dims

Each program is exported once (the user's model must not change) and called ``CALLS`` times
in sequence with fresh inputs, alternating two ``ep.module()`` and a new ``ep.module()`` per
call (torch.export's rule: the program's state is the program's, shared by all its
modules); after each call its outputs, its inputs and its buffers are compared with eager's
on a deep copy of the model. A call both raise leaves eager re-synced to the program's state
(the program's writes happen at the end: a raise mid-way leaves eager's partly written).
forward takes x, y, pos, s positionally, keyword-only, in a nested dict or in a list
(``grammar.LAYOUTS``, drawn per program).

Run by ``fuzz_state`` (the suite's short run) and ``benchmarks/fuzz.py --state``.
"""

from __future__ import annotations

import copy
import io
import linecache
import random
import time
import warnings
from dataclasses import dataclass, field

import torch

import safetrace as st
from safetrace import Dim
from tests.conformance.checker import compare
from tests.fuzz.engine import (Finding, Stats, by_design, error_text, program_rngs,
                               refusal_key)
from tests.fuzz.grammar import LAYOUTS as CALL_LAYOUTS
from tests.fuzz.grammar import Program, _signature

FILENAME = "<fuzz program>"
CALLS = 4
F_ = 4        # x: (n, F_); the cache: (CACHE, F_)
CACHE = 8
DTYPES = (torch.float32, torch.int64, torch.int32, torch.bool, torch.float16, torch.bfloat16,
          torch.uint8)

INIT = f"""\
        self.register_buffer('cnt', torch.zeros(()))
        self.register_buffer('step', torch.zeros((), dtype=torch.int64))
        self.register_buffer('acc', torch.zeros({F_}))
        self.register_buffer('cache', torch.zeros({CACHE}, {F_}))
        self.register_buffer('hist', torch.zeros(3, dtype=torch.int64))
        self.register_buffer('bt', torch.arange(12.0).reshape({F_}, 3).t())
        self.register_buffer('cl', torch.arange(8.0).reshape(1, {F_}, 1, 2)
                             .contiguous(memory_format=torch.channels_last))
        self.calls = 0
        self.warm = False
"""


@dataclass
class StateProgram:
    inputs: list                 # [(name, example tensor)]; x (n, F_) float, y any, pos 0-d
    stmts: list                  # [(source, names it defines)]
    tags: list = field(default_factory=list)
    state: bool = True           # (engine.shrink's field: the buffers are always there)
    layout: str = "flat"         # how forward takes x, y, pos, s: one of grammar.LAYOUTS

    def source(self) -> str:
        args, unpack = _signature(self.layout, [n for n, _ in self.inputs])
        lines = ["class P(torch.nn.Module):", "    def __init__(self):",
                 "        super().__init__()", *INIT.rstrip("\n").splitlines(), "",
                 f"    def forward(self, {args}):", *["        " + u for u in unpack]]
        outs = []
        for src, names in self.stmts:
            lines += ["        " + ln for ln in src.splitlines()]
            outs += names
        lines.append(f"        return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        return "\n".join(lines) + "\n"

    def model(self):
        ns = {"torch": torch}
        src = self.source()
        linecache.cache[FILENAME] = (len(src), None, src.splitlines(True), FILENAME)
        exec(compile(src, FILENAME, "exec"), ns)  # noqa: S102
        return ns["P"]().eval()

    def kind_at(self, line: int) -> str | None:
        first = 6 + INIT.count("\n") + len(_signature(self.layout, [n for n, _ in
                                                                    self.inputs])[1])
        for (src, _), kind in zip(self.stmts, self.tags):
            n = src.count("\n") + 1
            if first <= line < first + n:
                return kind
            first += n
        return None

    def example(self):
        return tuple(copy.deepcopy(t) for _, t in self.inputs)

    def pack(self, flat) -> tuple:
        """(args, kwargs) of a call on the flat inputs (``grammar.Program.pack``)."""
        return Program.pack(self, flat)

    def pack_spec(self, spec):
        """The flat spec in the structure of ``pack`` (a dict by parameter name where
        there are keyword arguments)."""
        return Program.pack_spec(self, spec)


# -- statement kinds -------------------------------------------------------------------------

def state(rng, env, v):
    w = f"_p{v}"
    return rng.choice([
        f"self.cnt.add_(1)\n{v} = x * self.cnt",
        f"self.step += 1\n{v} = x * self.step",
        f"self.cnt = self.cnt + 1\n{v} = x.sum(0) * self.cnt",
        f"self.acc.add_(x.sum(0))\n{v} = self.acc.clone()",
        f"self.acc.add_(x.sum())\n{v} = self.acc * 1",
        f"self.cache.index_copy_(0, torch.arange(x.shape[0]), x)\n{v} = self.cache.sum(0)",
        f"self.cache.index_copy_(0, (torch.arange(x.shape[0]) + self.step) % {CACHE}, x)\n"
        f"self.step.add_(x.shape[0])\n{v} = self.cache[:2] * 1",
        f"{w} = x.shape[0] % 5\nself.cache[{w}:{w} + x.shape[0]] = x\n{v} = self.cache.mean(0)",
        f"{w} = int(self.step.item()) % 4\ntorch._check({w} + x.shape[0] <= {CACHE})\n"
        f"self.cache[{w}:{w} + x.shape[0]].copy_(x)\nself.step.add_(1)\n{v} = self.cache * 1",
        f"{w} = pos.item()\ntorch._check({w} >= 0)\ntorch._check({w} + x.shape[0] <= {CACHE})\n"
        f"self.cache[{w}:{w} + x.shape[0]] = x\n{v} = self.cache.sum()",
        f"{w} = pos.item()\ntorch._check({w} >= 0)\ntorch._check({w} < {CACHE})\n"
        f"self.cache[{w}] = x.sum(0)\n{v} = self.cache[{w}] * 2",
        f"self.cache.index_copy_(0, pos.reshape(1) % {CACHE}, x[:1] if x.shape[0] else "
        f"x.new_zeros(1, {F_}))\n{v} = self.cache * 1",
        f"self.cache[:, ::2].mul_(0.5)\n{v} = self.cache[0] * 1",
        f"self.cache.view(-1)[:3].add_(x.sum())\n{v} = self.cache.view(-1)[:5] * 1",
        f"self.cache.t()[0].fill_(self.cnt)\nself.cnt.add_(0.5)\n{v} = self.cache[:, 0] * 1",
        f"self.acc.narrow(0, 1, 2).sub_(self.cnt + 1)\n{v} = self.acc * 1",
        f"self.cache.copy_(self.cache.roll(1, 0))\nself.cache[0] = x.sum(0)\n{v} = self.cache * 1",
        f"self.hist[x.shape[0] % 3] += 1\n{v} = self.hist * 1",
        f"self.hist.add_((x > 0).sum())\n{v} = self.hist.float() / 2",
        f"self.acc[self.step % {F_}] = x.sum()\nself.step.add_(1)\n{v} = self.acc * 1",
        f"self.step.fill_(x.shape[0])\n{v} = x * self.step",
        f"self.cnt.copy_(x.sum())\n{v} = self.cnt * 1",
        f"self.cnt.mul_(0.5).add_(x.shape[0])\n{v} = self.cnt + 0",
        # plain Python attributes: read by the graph (refused: exporter/python_state.py)
        # or only logged (exported)
        f"self.calls += 1\n{v} = x * self.calls",
        f"self.calls += 1\n{v} = x * 2",
        f"self.calls = self.calls + x.shape[0] % 2\n{v} = x + self.calls",
        f"if not self.warm:\n    self.warm = True\n    {v} = x * 0\nelse:\n    {v} = x + 1",
        f"self.warm = True\n{v} = x * 1",
        f"self.calls += 1\nif self.calls > 2:\n    {v} = x * 3\nelse:\n    {v} = x + 1",
        f"{v} = (self.bt * 2).reshape(-1)",
        f"{v} = self.bt.contiguous().view(-1) + x.sum()",
        f"{v} = self.bt * self.bt.is_contiguous()",
        f"{v} = self.bt.sum() * self.bt.stride(0) + x",
        f"{v} = (self.bt + 1).t().view(-1)",
        f"self.bt.mul_(1.5)\n{v} = self.bt.sum(0)",
        f"self.bt[0].add_(x.shape[0])\n{v} = self.bt.flatten()",
        f"self.cl.add_(1)\n{v} = self.cl.reshape(-1) * 1",
        f"{v} = self.cl.is_contiguous(memory_format=torch.channels_last) * x",
        f"{v} = self.cl.stride(1) * x + (self.cl * 2).stride(-1)",
        f"{v} = torch.empty_like(self.cl).fill_(1.0).stride(1) * x",
        f"self.cl.view(-1, 2).mul_(2)\n{v} = self.cl.sum()" ,
        f"self.acc.copy_(self.cache[self.step % {CACHE}])\n{v} = self.acc * 1",
        f"self.cache = torch.cat([self.cache[x.shape[0]:], x])\n{v} = self.cache.sum(0)",
        f"self.cache = torch.cat([self.cache, x])[-{CACHE}:]\n{v} = self.cache * 1",
        f"self.acc = self.acc * 0.9 + x.sum(0)\n{v} = self.acc * 1",
        f"self.cache = self.cache.roll(x.shape[0], 0)\n{v} = self.cache[0] + 1",
        f"{v} = self.acc * 1\nself.acc.add_(1)",
        f"{v} = self.acc\nself.acc.mul_(2)",
        f"{v} = self.cache[:2]\nself.cache[:2] = x.sum()",
        f"self.cache[pos % {CACHE}] = x.sum(0)\n{v} = self.cache * 1",
        f"self.cache.index_put_((torch.arange(x.shape[0]) % 3,), x, accumulate=True)\n"
        f"{v} = self.cache * 1",
        f"self.hist.index_add_(0, torch.tensor([0, 2]), torch.ones(2, dtype=torch.int64) * "
        f"x.shape[0])\n{v} = self.hist * 1",
        f"self.acc.scatter_add_(0, torch.tensor([1, 1, 3]), x.sum(0)[:3])\n{v} = self.acc * 1",
        f"if x.shape[0] == 0:\n    self.acc.zero_()\nelse:\n    self.acc.add_(x[0])\n"
        f"{v} = self.acc * 1",
        f"self.acc.copy_(torch.where(self.acc > 1, self.acc - 1, self.acc + x.sum()))\n"
        f"{v} = self.acc * 1",
        f"self.cnt.add_(x.shape[0] / 2)\n{v} = self.cnt * x",
        f"self.step.add_(pos)\n{v} = self.step * 1",
        f"self.step.sub_(3).clamp_(min=-2)\n{v} = self.step + pos",
        f"self.hist.copy_(self.hist // 2 - pos)\n{v} = self.hist % 3",
        f"self.cache[:x.shape[0]].mul_(0.5).add_(x)\n{v} = self.cache.sum(1)",
        f"self.cache.narrow(0, 0, min(x.shape[0], 3)).copy_(x[:3])\n{v} = self.cache * 1",
        f"{w} = self.cache.view(2, {CACHE // 2}, {F_})\n{w}[1].add_(x.sum())\n{v} = self.cache * 1",
        f"{w} = self.cache.unsqueeze(0)\n{w}.add_(1)\n{v} = {w}.sum()",
        f"self.cache.t().mul_(2)\n{v} = self.cache.t().reshape(-1)",
        f"self.bt.t().add_(1)\n{v} = self.bt * 1",
        f"self.cl.permute(0, 2, 3, 1).sub_(1)\n{v} = self.cl.reshape(-1)",
        f"{w} = self.cl.contiguous()\n{w}.add_(5)\n{v} = self.cl.sum() + {w}.sum()",
        f"{w} = self.bt.contiguous()\n{w}.add_(5)\n{v} = self.bt.sum() + {w}.sum()",
    ])


def layout(rng, env, v):
    a = rng.choice([n for n, t in env.items() if isinstance(t, torch.Tensor) and t.ndim >= 1
                    and t.is_floating_point()] or ["x"])
    return rng.choice([
        f"{v} = {a}.view(-1)", f"{v} = {a}.reshape(-1)", f"{v} = {a}.contiguous().view(-1)",
        f"{v} = {a} * {a}.is_contiguous()",
        f"if {a}.is_contiguous():\n    {v} = {a} * 2\nelse:\n    {v} = {a} - 1",
        f"{v} = {a} * {a}.stride(0) + {a}.stride(-1)",
        f"{v} = {a} * sum({a}.stride())",
        f"{v} = {a}.clone().stride(0) * {a}",
        f"{v} = torch.empty_like({a}).fill_(1.0).stride(-1) * {a}",
        f"{v} = {a}.transpose(0, -1).contiguous().stride(0) * {a}",
        f"{v} = {a}.storage_offset() * {a}",
        f"{v} = {a}.unsqueeze(1).stride(1) * {a}",
        f"{v} = {a}.mT.is_contiguous() * {a}" if env[a].ndim >= 2 else f"{v} = {a} * 1",
        f"{v} = ({a} + 0).view(-1)", f"{v} = ({a} * 2).stride(0) * {a}",
        f"{v} = {a}.expand(2, *{a}.shape).is_contiguous() * {a}",
        f"{v} = {a}.mT.reshape(-1)" if env[a].ndim >= 2 else f"{v} = {a}.flip(0)",
        f"{v} = {a}.flatten().stride(0) * {a}",
        f"{v} = {a} * {a}.is_contiguous(memory_format=torch.channels_last)"
        if env[a].ndim == 4 else f"{v} = {a} * {a}.is_contiguous()",
        f"{v} = {a}.contiguous(memory_format=torch.channels_last).stride(1) * {a}"
        if env[a].ndim == 4 else f"{v} = {a}.contiguous().stride(0) * {a}",
        f"{a}.add_(1)\n{v} = {a} * 1",
        f"{a}.mul_(2)\n{v} = {a}.sum(0)",
        f"{v} = {a}.view({a}.shape)", f"{v} = {a}.view_as({a}) + 1",
        f"{v} = {a}.unflatten(0, (1, -1))",
        f"{v} = {a}.flatten(0, -1) if {a}.is_contiguous() else {a}.reshape(-1) * 2",
        f"{v} = {a}[::2].view(-1)", f"{v} = {a}.transpose(0, -1).view(-1)",
        f"{v} = {a}.clone().view(-1)", f"{v} = {a}.detach().view(-1)",
    ])


def scalars(rng, env, v):
    y = "y"
    t = env["y"]
    fl = t.is_floating_point()
    forms = [
        f"{y} // 3", f"{y} // -3", f"{y} % -3", f"{y} % 3", f"torch.remainder({y}, -2)",
        f"torch.fmod({y}, -3)", f"torch.div({y}, -3, rounding_mode='trunc')",
        f"torch.div({y}, 2, rounding_mode='floor')", f"{y} / 2", f"{y} // (pos + 1)",
        f"{y} // pos", f"{y} % (pos - 2)", f"-7 // (pos + 1) + {y}", f"{y} * pos",
        f"{y} + pos.item()", f"{y} * 2.5", f"{y}.clamp(-1, 2)", f"{y}.clamp(min=pos)",
        f"torch.clamp({y}, max=pos.item())", f"{y}.clamp(-1.5, 2)", f"{y}.clamp(max=pos - 2.5)",
        f"torch.where({y} > 0, {y}, 2)", f"torch.where({y} > 0, {y}, 2.5)",
        f"torch.where(pos > 1, {y}, pos)", f"torch.where({y} > 0, 1, 0)",
        f"{y} == 1", f"{y} < pos", f"{y} > 0.5", f"({y} > 0) & (pos < 2)", f"~({y} > 0)",
        f"{y}.sum(0)", f"{y}.amax(0)", f"{y}.sum(dim=())", f"{y}.prod()", f"{y}.max()",
        f"{y}.float().mean(0)", f"{y}.cumsum(0)", f"{y}.sum()", f"torch.count_nonzero({y})",
        f"{y}.any()", f"{y}.argmax()", f"{y}.min(0).values", f"{y}.sum(0, keepdim=True)",
        f"{y} + True", f"{y} * x.sum()", f"pos + 2.5", f"pos * {y}", f"pos.float() / {y}",
        f"{y} ** 2", f"2 ** {y}", f"{y}.abs()", f"-{y}", f"{y}.neg()",
        f"{y}.to(torch.float16) * 3", f"{y}.half() + x.sum()", f"{y}.bfloat16() * 1.1",
        f"{y}.sum(dtype=torch.float64)", f"{y}.float().sum(0, keepdim=True)",
        f"torch.full_like({y}, 3)", f"torch.full_like({y}, 2.7)", f"{y}.div(pos + 1)",
        f"{y}.float().floor_divide(-0.5)", f"torch.round({y}.float() / 2)",
        f"x.sum() // 1", f"x // -0.7", f"x % -0.7", f"torch.fmod(x, -0.7)",
        f"torch.clamp(x, min=pos)", f"x.clamp(2, 1)", f"x.clamp(min=pos - 3, max=pos)",
        f"{y} + torch.tensor(3)", f"{y} * torch.tensor(1.5)", f"{y} + torch.tensor(2.5, "
        f"dtype=torch.float64)", f"{y} - torch.tensor(-1, dtype=torch.int8)",
        f"torch.maximum({y}, pos)", f"torch.minimum({y}, torch.tensor(0.5))",
        f"{y}.max() if {y}.numel() else {y}.sum()", f"{y}.mean()" if fl else f"{y}.sum()",
        f"{y}.var(0)" if fl else f"{y}.float().var(0)", f"{y}.std()" if fl else f"{y} * 1",
        f"{y}.amin((0, -1))", f"{y}.logsumexp(0)" if fl else f"{y}.float().logsumexp(0)",
        f"{y} >> 1" if not fl else f"{y} * 1", f"{y} << pos" if not fl else f"{y} + pos",
        f"{y} & 3" if not fl else f"{y} - 3", f"{y}.bitwise_not()" if not fl else f"-{y}",
        f"torch.sign({y})", f"{y}.to(torch.int8) * 100", f"({y} * 100).to(torch.int8)",
        f"{y}.float() / pos", f"{y} // 0.0" if fl else f"{y} // 1.0",
        f"torch.tensor(pos.item() - 3) // 2", f"torch.scalar_tensor(pos.item()) % -1.5",
        f"{y}.new_full((2,), pos.item())", f"torch.full((2,), pos.item() // 2)",
        f"torch.arange(pos.item()) // 2", f"{y}.sum() // (pos - 2)",
        f"torch.where({y} > 0, {y}.float(), torch.tensor(float('nan')))",
        f"{y}.clamp(min=torch.tensor(1), max=torch.tensor(0))",
        f"torch.isclose({y}.float(), torch.tensor(1.0))", f"{y}.eq(pos).sum()",
    ]
    # a second operand: the 0-d input `s` (any dtype) or an earlier result
    b = rng.choice(["s", "s", *[n for n, t in env.items() if n.startswith("v") and
                                 isinstance(t, torch.Tensor) and t.ndim <= 1]])
    forms += [
        f"{y} + {b}", f"{y} * {b}", f"{b} - {y}", f"{y} / {b}", f"{y} // {b}", f"{y} % {b}",
        f"torch.div({y}, {b}, rounding_mode='floor')", f"torch.div({y}, {b}, rounding_mode='trunc')",
        f"torch.remainder({b}, {y})", f"torch.fmod({y}, {b})", f"{y} ** {b}", f"{b} ** {y}",
        f"torch.pow(2, {b})", f"torch.where({y} > {b}, {y}, {b})", f"torch.where({b} > 0, 1.5, {y})",
        f"torch.maximum({y}, {b})", f"{y}.clamp(min={b})", f"{y}.clamp(max={b})",
        f"{y}.clamp({b}, {b} + 1)", f"{y} == {b}", f"{y} < {b}", f"{y} != {b} * 2",
        f"({y} > 0) | ({b} > 0)", f"({y} > 0) ^ ({b} < 1)", f"{y} & {b}", f"{y} | {b}",
        f"{y}.add({b}, alpha=2)", f"{y}.sub({b}, alpha=-1)", f"torch.add({y}, {b}, alpha=0.5)",
        f"{y}.sum(dim=[])", f"{y}.amax(dim=())", f"{y}.prod(0)", f"{y}.cumprod(0)",
        f"{y}.mean(dtype=torch.float64)", f"torch.std_mean({y}.float(), 0)[1]",
        f"torch.var({y}.float(), 0, correction=0)", f"{y}.float().nansum(0)",
        f"{y}.sum() + {b}", f"{y}.max() * {b}" , f"{b}.item() * {y}", f"{y} * int({b})",
        f"{y} * float({b})", f"{y} + bool({b})", f"{y}.new_tensor({b}.item()) + {y}",
        f"torch.full_like({y}, {b}.item())", f"{y}.masked_fill({y} > 0, {b})",
        f"{y}.masked_fill({y} > 0, {b}.item())", f"{y}.fill_({b})" ,
        f"torch.lerp({y}.float(), {b}.float(), 0.3)", f"torch.addcmul({y}.float(), {b}, {b})",
        f"torch.heaviside({y}.float(), {b}.float())", f"torch.copysign({y}, {b})",
        f"torch.floor_divide(-{y}, 2)", f"torch.true_divide({y}, {b})", f"torch.xlogy({y}, {b})",
        f"torch.bitwise_left_shift({y}, 1)", f"{y}.logical_and({b})", f"{y}.logical_xor({b})",
        f"torch.nextafter({y}.float(), {b}.float())", f"torch.signbit({y} * {b})",
        f"torch.clamp({y}.float(), min=-0.0, max=0.0)", f"torch.round({y} * 1.5, decimals=1)",
        f"torch.trunc({y} / {b})", f"torch.frac({y} / 3)", f"{y}.abs() // -1",
    ]
    if rng.random() < 0.3:  # in place: the result keeps the written tensor's dtype, or raises
        w = f"_w{v}"
        op = rng.choice([f"add_({b})", f"add_(1.5)", f"mul_({b})", f"sub_(pos)", "div_(2)",
                         f"floor_divide_({b})", "remainder_(-3)", f"fmod_({b})", "clamp_(0.5)",
                         f"clamp_(min={b})", "fill_(2.7)", f"fill_({b})", f"copy_({b})",
                         f"masked_fill_({w} > 0, 2.7)", f"masked_fill_({w} > 0, {b})",
                         "pow_(2)", f"pow_({b})", "neg_()", "abs_()", f"lerp_({b}, 0.5)",
                         f"bitwise_and_({b})", f"logical_or_({b})", "exp_()", "round_()",
                         f"copy_({w} * 1.5)", f"index_fill_(0, torch.tensor([0]), {b})"])
        return f"{w} = {y}.clone()\n{w}.{op}\n{v} = {w}"
    return f"{v} = " + rng.choice(forms)


STATE_KINDS = {"state": state, "layout_in": layout, "scalars": scalars}


# -- inputs ----------------------------------------------------------------------------------

def _values(g, shape, dtype):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 9, shape, generator=g).to(dtype)
    if not dtype.is_floating_point:
        return torch.randint(-6, 7, shape, generator=g).to(dtype)
    return (torch.randn(shape, generator=g) * 3).to(dtype)


LAYOUTS = ("contig", "contig", "T", "cl", "odd", "offset", "step", "expand")


def with_layout(t: torch.Tensor, how: str, g) -> torch.Tensor:
    """`t`'s values (for ``expand``: some of them repeated) in the memory layout ``how``."""
    shape = tuple(t.shape)
    if how == "T" and t.ndim >= 2:
        return t.mT.contiguous().mT
    if how == "cl" and t.ndim == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if how == "odd" and t.ndim >= 1:  # odd strides on dims of size 0 / 1 (still contiguous)
        strides, acc = [0] * t.ndim, 1
        for d in range(t.ndim - 1, -1, -1):
            strides[d] = acc if shape[d] > 1 else int(torch.randint(2, 9, (), generator=g))
            acc *= max(shape[d], 1)
        out = torch.empty_strided(shape, strides, dtype=t.dtype)
        return out.copy_(t)
    if how == "offset":
        flat = torch.empty(t.numel() + 3, dtype=t.dtype)
        return flat[3:].view(shape).copy_(t)
    if how == "step" and t.ndim >= 1:
        big = torch.empty(*shape[:-1], 2 * shape[-1], dtype=t.dtype)
        return big[..., ::2].copy_(t)
    if how == "expand" and t.ndim >= 1 and shape[0] > 0:
        return t[:1].expand(shape)
    return t


def _inputs(rng, n, ydesc, layouts=True):
    """(x, y, pos, s) at x's first size `n`; ydesc: (y's shape, y's dtype, s's dtype)."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    yshape, ydtype, sdtype = ydesc
    x = _values(g, (n, F_), torch.float32)
    y = _values(g, yshape, ydtype)
    pos = torch.randint(0, 5, (), generator=g)
    s = _values(g, (), sdtype)
    if layouts:
        x = with_layout(x, rng.choice(LAYOUTS), g)
        y = with_layout(y, rng.choice(LAYOUTS), g)
    return x, y, pos, s


def random_program_inputs(rng):
    n = rng.choice([0, 1, 2, 3, 5])
    yshape = rng.choice([(3,), (0,), (1,), (2, 3), (3, 1), (2, 3, 1, 1), (2, 1, 3, 3),
                         (1, 2, 2, 2), (4, 0)])
    ydtype, sdtype = rng.choice(DTYPES), rng.choice(DTYPES)
    x, y, pos, s = _inputs(rng, n, (yshape, ydtype, sdtype), layouts=rng.random() < 0.6)
    return [("x", x), ("y", y), ("pos", pos), ("s", s)], (yshape, ydtype, sdtype)


def build_state(rng, kinds=None, tries=40):
    table = kinds or STATE_KINDS
    names = list(table)
    inputs, ydesc = random_program_inputs(rng)
    p = StateProgram(inputs, [], layout=rng.choice(CALL_LAYOUTS))
    want = rng.randint(1, 5)
    model = p.model()
    env = dict(inputs)
    for _ in range(tries):
        if len(p.stmts) >= want:
            break
        kind = rng.choice(names)
        v = f"v{len(p.stmts)}"
        src = table[kind](rng, env, v)
        if src is None:
            continue
        ns = {"torch": torch, "self": model, **{k: copy.deepcopy(t) for k, t in env.items()}}
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(src, ns)  # noqa: S102
        except Exception:  # noqa: BLE001
            continue
        if not isinstance(ns.get(v), torch.Tensor):
            continue
        p.stmts.append((src, [v]))
        p.tags.append(kind)
        env[v] = ns[v]
    return p, ydesc


def random_state_spec(rng, program):
    x = program.inputs[0][1]
    y = program.inputs[1][1]
    n = x.shape[0]
    xs = {0: Dim("n", min=rng.choice([0, 0, 1, min(n, 2)]) if n else 0,
                 max=rng.choice([None, CACHE, 6]))} if rng.random() < 0.8 else None
    if xs is not None and xs[0].max < n:
        xs = {0: Dim("n", min=xs[0].min, max=CACHE)}
    ys = None
    r = rng.random()
    if y.ndim and r < 0.3:
        ys = {0: Dim.AUTO}
    elif y.ndim and r < 0.5:
        ys = {y.ndim - 1: Dim("m", max=6)} if y.shape[-1] <= 6 else None
    return (xs, ys, None, None)


# -- one program, called in sequence --------------------------------------------------------

def _call(fn, args, program=None):
    """`fn` on the flat inputs `args`, as `program`'s forward takes them."""
    pos, kw = program.pack(args) if program is not None else (args, {})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*pos, **kw)


def _buffers(m):
    return {n: b for n, b in m.named_buffers()}


def _resync(eager, program_buffers):
    with torch.no_grad():
        for n, b in eager.named_buffers():
            b.copy_(program_buffers[n])


def check_state_program(program, ydesc, spec, rng, stats, calls=CALLS, roundtrip_p=0.3):
    c = stats.counts
    roundtrip = rng.random() < roundtrip_p
    c["programs"] += 1
    user = program.model()
    pristine = copy.deepcopy(user)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pos, kw = program.pack(program.example())
            ep = st.export(user, pos, kw or None, dynamic_shapes=program.pack_spec(spec))
    except st.ExportError as e:
        try:
            _call(program.model(), program.example(), program)
        except Exception:  # noqa: BLE001
            c["eager_fails"] += 1
            return
        c["refused"] += 1
        stats.refusals.add(refusal_key(e, program), program, spec, str(e))
        return
    except Exception as e:  # noqa: BLE001
        c["export_crash"] += 1
        stats.findings.append(Finding("export_crash", program, spec, None, error_text(e)))
        return
    c["exported"] += 1
    before_export = {n: (b.stride(), b.storage_offset()) for n, b in pristine.named_buffers()}
    d = compare(_buffers(pristine), _buffers(user), "exact", 0, "the user's buffers after export") \
        or next((f"the user's buffer {n} now has strides {b.stride()}" for n, b in
                 user.named_buffers() if (b.stride(), b.storage_offset()) != before_export[n]),
                None) or (None if (user.calls, user.warm) == (pristine.calls, pristine.warm)
                          else f"the user's attributes now calls={user.calls} warm={user.warm}")
    if d:
        c["WRONG"] += 1
        stats.findings.append(Finding("WRONG", program, spec, None, "export changed the model: " + d))
    try:
        mods = [ep.module(), ep.module()]
    except Exception as e:  # noqa: BLE001
        c["export_crash"] += 1
        stats.findings.append(Finding("export_crash", program, spec, None, "module() " + error_text(e)))
        return
    eager = copy.deepcopy(pristine)
    x0 = program.inputs[0][1]
    lo = spec[0][0].min if spec[0] else x0.shape[0]
    hi = min(spec[0][0].max, CACHE) if spec[0] else x0.shape[0]
    history = []
    tag = ""
    for i in range(calls):
        n = rng.randint(lo, hi) if rng.random() < 0.8 else x0.shape[0]
        yshape = list(program.inputs[1][1].shape)
        for d_, e in (spec[1] or {}).items():
            yshape[d_] = rng.choice([yshape[d_], 0, 1, 2, 4]) if e is Dim.AUTO else \
                rng.randint(0, 6)
        args = _inputs(rng, n, (tuple(yshape), *ydesc[1:]), layouts=rng.random() < 0.7)
        history.append(args)
        module = mods[i % 2] if i % 3 != 2 else ep.module()
        if i == 1 and roundtrip:  # the program saved with its state now, loaded, called on
            try:
                f = io.BytesIO()
                st.save(ep, f)
                loaded = st.load(f.getvalue())
                mods = [loaded.module(), loaded.module()]
            except Exception as e:  # noqa: BLE001
                c["export_crash"] += 1
                stats.findings.append(Finding("export_crash", program, spec, None,
                                              "save/load " + error_text(e)))
                return
            c["roundtrips"] += 1
            tag = "(after save/load) "
            ep, module = loaded, mods[1]
        c["inputs"] += 1
        before = copy.deepcopy(_buffers(eager))
        ea, pa = copy.deepcopy(args), copy.deepcopy(args)
        try:
            want, eager_err = _call(eager, ea, program), None
        except Exception as e:  # noqa: BLE001
            want, eager_err = None, e
        try:
            got = _call(module, pa, program)
        except (st.InputMismatchError, st.RuntimeAssertionError) as e:
            c["rejected"] += 1
            if type(e).__name__ == "WrongLayout":
                c["layout_rejected"] += 1   # (by design: the program asked for a layout)
            elif eager_err is None and spec_admits(spec, args, program):
                why = by_design(ep, spec, [tuple(a.shape) for a in args], error_text(e, None))
                if why:
                    c[why] += 1
                    _resync(eager, _buffers(module))
                    continue
                c["over_rejection"] += 1
                if sum(f.kind == "over_rejection" for f in stats.findings) < 200:
                    stats.findings.append(Finding("over_rejection", program, spec, tuple(history),
                                                  error_text(e)))
            _resync(eager, _buffers(module))
            continue
        except Exception as e:  # noqa: BLE001
            if eager_err is None:
                c["crash_after_checks"] += 1
                stats.findings.append(Finding("crash_after_checks", program, spec,
                                              tuple(history), error_text(e)))
                return
            c["ok"] += 1
            pb = _buffers(module)
            if compare(before, pb, "exact", 0, "buffers"):
                c["partial_state"] += 1  # (the program's writes at the end: eager's mid-way)
            _resync(eager, pb)
            continue
        if eager_err is not None:
            c["WRONG"] += 1
            stats.findings.append(Finding("WRONG", program, spec, tuple(history),
                                          f"eager raises {error_text(eager_err)[:160]}, the program "
                                          f"computed a result"))
            return
        d = compare(want, got, "values", 1e-3) or compare(ea, pa, "values", 1e-3, "inputs after") \
            or compare(_buffers(eager), _buffers(module), "values", 1e-3, "buffers after") \
            or compare(_buffers(eager), _buffers(mods[0]), "values", 1e-3, "buffers (module 0)")
        if d:
            c["WRONG"] += 1
            stats.findings.append(Finding("WRONG", program, spec, tuple(history),
                                          f"call {i}: {tag}{d}"))
            return
        c["ok"] += 1


def spec_admits(spec, args, program) -> bool:
    """Whether the input lies in the declared space: sizes within the named Dims, other dims
    as at export (AUTO dims may move: their rejection is not counted)."""
    for (_, ex), s, a in zip(program.inputs, spec, args):
        for d in range(ex.ndim):
            e = (s or {}).get(d)
            if e is Dim.AUTO:
                if a.shape[d] != ex.shape[d]:
                    return False
            elif isinstance(e, Dim):
                if not e.min <= a.shape[d] <= e.max:
                    return False
            elif a.shape[d] != ex.shape[d]:
                return False
    return True


def fuzz_state(seed=0, programs=None, seconds=None, kinds=None, calls=CALLS, roundtrip_p=0.3):
    stats = Stats()
    for prng in program_rngs(seed, programs, seconds, stats):
        program, ydesc = build_state(prng, kinds)
        if not program.stmts:
            continue
        spec = random_state_spec(prng, program)
        check_state_program(program, ydesc, spec, prng, stats, calls, roundtrip_p)
    return stats


def replay(f: Finding, program=None):
    """The outcome of a finding's call sequence on `program` (default: the finding's):
    the first differing call's message, or None."""
    program = program or f.program
    pos, kw = program.pack(program.example())
    ep = st.export(program.model(), pos, kw or None, dynamic_shapes=program.pack_spec(f.spec))
    eager, mod = program.model(), ep.module()
    for args in f.args:
        ea, pa = copy.deepcopy(args), copy.deepcopy(args)
        try:
            want = _call(eager, ea, program)
        except Exception as e:  # noqa: BLE001
            want = e
        try:
            got = _call(mod, pa, program)
        except Exception as e:  # noqa: BLE001
            got = e
        if isinstance(want, Exception) or isinstance(got, Exception):
            if isinstance(want, Exception) != isinstance(got, Exception):
                return f"eager {want!r:.100} vs program {got!r:.100}"
            _resync(eager, _buffers(mod))
            continue
        d = compare(want, got, "values", 1e-3) or compare(ea, pa, "values", 1e-3, "inputs") \
            or compare(_buffers(eager), _buffers(mod), "values", 1e-3, "buffers")
        if d:
            return d
    return None


def shrink_state(f: Finding) -> Finding:
    """Drop statements while a difference persists on the same call sequence."""
    program = f.program
    changed = True
    while changed:
        changed = False
        for i in range(len(program.stmts) - 1, -1, -1):
            cand = StateProgram(program.inputs, program.stmts[:i] + program.stmts[i + 1:],
                                program.tags[:i] + program.tags[i + 1:], layout=program.layout)
            if not cand.stmts:
                continue
            try:
                _call(cand.model(), cand.example(), cand)
                if replay(f, cand):
                    program, changed = cand, True
            except Exception:  # noqa: BLE001
                continue
    return Finding(f.kind, program, f.spec, f.args, f.message)
