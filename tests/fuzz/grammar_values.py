"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds values``) for what
users write and the other grammars did not draw (session 31):

  sizevalues  0-d integer tensors made from sizes used as sizes, counts and indices:
              ``int(torch.tensor(n // 2 + 1))`` as a ``chunk`` / ``repeat`` count,
              ``.item()`` of them, ``x[:t]``; in narrower dtypes than int64, where eager
              wraps (``torch.tensor(n * 37).to(torch.uint8)`` is ``n * 37 % 256``), given
              where torch reads an int (``torch.arange(t)``); the
              ``while k > 1: k //= 2`` loop on a size
  usercode    reshape chains with ``-1``, ``masked_fill`` / ``where`` with masks from
              sizes, int and float arithmetic on sizes mixed into tensors (``x * (n /
              max(m, 1))``, ``x / math.sqrt(n + 1)``, ``x.pow(n % 3)``), in-place ops on
              views of a clone (``y[:, ::2].add_(1)``, ``y.view(-1)[:n].zero_()``)

Each is deterministic per seed (the rng the engine hands it).
"""

from __future__ import annotations

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two

_NARROW = ("torch.uint8", "torch.int8", "torch.int16", "torch.int32")


def sizevalues(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    m, _ = _bsize(rng, env, b)
    k = rng.choice([f"{n} // 2 + 1", f"{m} % 3 + 1", f"max({n}, 1)", f"({n} + {m}) // 2 + 1"])
    mul = rng.choice(["19", "37", "41", "1"])
    dt = rng.choice(_NARROW)
    ones = ", ".join(["1"] * (t.ndim - 1))
    forms = [
        f"{v} = {a}.chunk(int(torch.tensor({k})), {d})[0]",
        f"{v} = {a}.chunk(int(torch.tensor({k})), {d})[-1] * 2",
        f"{v} = {a}.repeat(int(torch.tensor({m} % 3 + 1)){', ' + ones if ones else ''})",
        f"_t{v} = torch.tensor({n}) * 2 + 1\n{v} = torch.arange(_t{v}.item()).float()",
        f"{v} = {a}.narrow({d}, 0, int(torch.tensor({n}) // 2))",
        f"{v} = torch.full((int(torch.tensor({m}) % 4),), 2.0)",
        f"{v} = {a}.flatten()[:torch.tensor({n} * {mul}).to({dt})]",
        f"{v} = {a}.flatten()[:torch.tensor({n}, dtype={dt}) * {mul}]",
        f"{v} = {a}.flatten()[:torch.tensor({n}, dtype={dt}) + 200]",
        f"{v} = torch.ones(torch.tensor({n} * {mul}).to({dt}).item() % 9)",
        f"{v} = torch.zeros(max(torch.tensor({m} * {mul}).to({dt}).item(), 0))",
        f"{v} = {a} * torch.tensor({n} * {mul}).to({dt})",
        f"{v} = {a}.flatten()[:int(torch.tensor({k}))] + torch.tensor({m}, dtype={dt})",
        f"_k = {n}\n{v} = {a}.sum()\nwhile _k > 1:\n    _k //= 2\n    {v} = {v} * 0.5",
        f"_k = {m} + 1\n{v} = {a}.flatten()\nwhile _k > 2:\n    _k = _k // 2\n"
        f"    {v} = {v}[:max({v}.shape[0] - 1, 0)]",
        f"{v} = {a}.split(int(torch.tensor({k})), {d})[0]",
        f"{v} = {a}[..., :torch.tensor({a}.shape[-1]) // 2]",
        f"{v} = torch.arange(torch.tensor({k})).float()",
        f"{v} = torch.ones(torch.tensor({m}) % 3, 2) + {a}.sum()",
        f"{v} = torch.arange(torch.tensor({n} * {mul}).to({dt})).float()",
    ]
    return rng.choice(forms)


def usercode(rng, env, v):
    a, b = _two(rng, env)
    if a is None:
        return None
    t = env[a]
    d = rng.randrange(t.ndim)
    n = f"{a}.shape[{d}]"
    L = f"{a}.shape[-1]"
    m, _ = _bsize(rng, env, b)
    forms = [
        f"{v} = {a}.reshape(-1, {L}).reshape({a}.shape)",
        f"{v} = {a}.flatten().view(-1, 1).expand(-1, 2).reshape(-1)",
        f"{v} = {a}.reshape({a}.shape[0], -1).t().reshape(-1)",
        f"{v} = {a}.reshape(-1)[:{a}.numel() // 2 * 2].view(-1, 2).sum(-1)",
        f"{v} = {a}.unsqueeze(-1).reshape(*{a}.shape[:-1], -1, 1).squeeze(-1)",
        f"{v} = {a}.masked_fill(torch.arange({L}) >= {m} // 2, 0.0)",
        f"{v} = torch.where(torch.arange({L}) < {m}, {a}, -{a})",
        f"{v} = {a}.masked_fill(torch.arange({L}) % max({m}, 1) == 0, float({n}))",
        f"{v} = torch.where(torch.arange({L}) >= {L} - {m}, {a}.sum(), {a})",
        f"{v} = {a} * ({n} / max({m}, 1))",
        f"{v} = {a} / math.sqrt({n} + 1)",
        f"{v} = {a} + {n} ** 0.5 - {m} // 2",
        f"{v} = {a} * float({n} % 3) + int({m} > 1)",
        f"{v} = ({a} * {n}).round() / max({n}, 1)",
        f"{v} = {a}.pow({n} % 3)",
        f"{v} = {a} * ({n} * {m} % 5) / ({m} + 1.5)",
        f"{v} = {a}.clone()\n{v}[..., ::2].add_(1)",
        f"{v} = {a}.clone()\n{v}.view(-1)[:{m}].zero_()",
        f"{v} = {a}.clone()\n{v}.transpose(0, -1)[:1].mul_(-1)",
        f"{v} = {a}.clone()\n{v}.narrow({d}, 0, min({n}, {m})).fill_(float({n}))",
        f"{v} = {a}.clone()\n{v}[{a} > 0] = float({m})",
    ]
    return rng.choice(forms)


VALUE_KINDS = {f.__name__: f for f in (sizevalues, usercode)}
