"""Statement kinds of the long fuzz run (benchmarks/fuzz.py ``--kinds promote``) for the
dtypes of numbers made from sizes and the integer arithmetic of negative values, which the
other grammars write little (session 37):

  promote     Python numbers from sizes (ints, floats, bools, differences that go negative)
              mixed into tensors of narrow and floating dtypes: eager's promotion (a
              Python or 0-d number does not widen a tensor of its category: ``uint8 * n``
              wraps; a float number makes an int tensor float), ``torch.tensor(n)`` as a
              0-d operand, ``full`` / ``where`` / ``clamp`` / ``new_full`` of size values,
              reductions of narrow ints (``sum`` widens to int64)
  negdiv      ``//``, ``%``, ``fmod``, ``remainder`` and ``div(rounding_mode=...)`` of
              tensors holding negative values by sizes, by negative sizes and by sizes
              that can be 0 (eager raises for an integer division by 0, in a ``try``
              where the program must raise too or compute eager's other branch), and
              ``arange`` from a negative start
  viewwrites  in-place arithmetic with size values on views of a clone (``y[..., :m] -=
              n``, ``y.view(-1)[::2] //= k``, ``y.diagonal().add_(n)``), in narrow dtypes

Each is deterministic per seed (the rng the engine hands it).
"""

from __future__ import annotations

from tests.fuzz.grammar import _t
from tests.fuzz.grammar_cross import _bsize, _two

_INTS = ("torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64")
_FLOATS = ("torch.float16", "torch.bfloat16", "torch.float64", "torch.float32")


def _sizes(rng, env):
    """(a, its dim, a's size at that dim, another input's size) or Nones."""
    a, b = _two(rng, env, floating=None)
    if a is None:
        return None, 0, "", ""
    d = rng.randrange(env[a].ndim)
    m, _ = _bsize(rng, env, b)
    return a, d, f"{a}.shape[{d}]", m


def promote(rng, env, v):
    a, d, n, m = _sizes(rng, env)
    if a is None:
        return None
    it, ft = rng.choice(_INTS), rng.choice(_FLOATS)
    num = rng.choice([n, f"({n} - {m})", f"{n} * 37", f"-{m}", f"{n} / 3", f"{m} / 2.5",
                      f"({n} > {m})", f"float({n})", f"{n} // 2 - 3"])
    return rng.choice([
        f"{v} = {a}.to({it}) * {num}", f"{v} = {a}.to({it}) + {num}",
        f"{v} = {a}.to({ft}) * {num}", f"{v} = {a}.to({ft}) - {num}",
        f"{v} = {a}.bool() * {num}", f"{v} = {a}.bool() + {num}",
        f"{v} = torch.tensor({num}) + {a}.to({it})",
        f"{v} = torch.tensor({num}) * {a}.to({ft})",
        f"{v} = {a}.to({it}) - torch.tensor({num}, dtype={it})",
        f"{v} = torch.full(({m},), {num})", f"{v} = torch.full((2, {n}), {num}, dtype={it})",
        f"{v} = {a}.to({it}).new_full(({m},), {num})",
        f"{v} = torch.where({a} > 0, {num}, -1)",
        f"{v} = torch.where({a}.to({it}) > 0, {a}.to({it}), {num})",
        f"{v} = {a}.to({it}).clamp(min=-{n}, max={m})",
        f"{v} = {a}.to({it}).clamp(max={n} / 2)",
        f"{v} = {a}.to({it}).sum() * {num}", f"{v} = {a}.to({it}).cumsum({d}) - {num}",
        f"{v} = {a}.to({it}).pow({n} % 3)", f"{v} = ({n} - {m}) ** {a}.to(torch.int32).abs()"
        f".clamp(max=3)",
        f"{v} = {a}.to({ft}).mean() * {num}", f"{v} = {a}.to({it}).float().mean() + {num}",
        f"{v} = ({a}.to({it}) == {num}).sum() + {n}",
        f"{v} = torch.tensor([{n}, {m}, {n} - {m}]).to({it}) * {a}.sum()",
        # (both answers one dtype: a torch.cond's branches return one, so a split joins)
        f"{v} = {a}.to({it}).max() if {a}.numel() else torch.tensor({num}).to({it})",
    ])


def negdiv(rng, env, v):
    a, d, n, m = _sizes(rng, env)
    if a is None:
        return None
    it = rng.choice(_INTS[1:])   # (signed: uint8 holds no negative values)
    x = rng.choice([f"({a} * 4).to({it}) - {n}", f"torch.arange(-{n}, {m})",
                    f"torch.arange(-{n}, {m}, dtype={it})", f"({a} * 3).floor() - {m}",
                    f"{a}.to({it}) - {m}"])
    k = rng.choice([f"max({m}, 1)", f"-max({n}, 1)", f"({n} - {m})", f"({m} - 2)", "-3"])
    zero = k.startswith("(")   # (a divisor that can be 0)
    guarded = zero and rng.random() < 0.5
    if zero and not guarded:
        k = rng.choice([f"max({k[1:-1]}, 1)", f"min({k[1:-1]}, -1)"])
    op = rng.choice([f"{x} // {k}", f"{x} % {k}", f"torch.fmod({x}, {k})",
                     f"torch.remainder({x}, {k})",
                     f"torch.div({x}, {k}, rounding_mode='floor')",
                     f"torch.div({x}, {k}, rounding_mode='trunc')", f"torch.div({x}, {k})",
                     f"{x}.floor_divide({k})", f"-{x} // {k}"])
    if guarded:   # eager raises for an integer division by 0: its except branch then
        return (f"try:\n    {v} = {op}\nexcept (RuntimeError, ZeroDivisionError):\n"
                f"    {v} = {a}.sum() * 0")
    return f"{v} = {op}"


def viewwrites(rng, env, v):
    a, d, n, m = _sizes(rng, env)
    if a is None:
        return None
    dt = rng.choice(_INTS + ("torch.float32", "torch.float16"))
    first = f"{v} = {a}.to({dt}).clone()\n"
    return first + rng.choice([
        f"{v}[..., :{m}] -= {n}", f"{v}[..., :{m}] += {n} * 40",
        f"{v}.view(-1)[::2] //= max({m}, 1)" if dt != "torch.float16" else f"{v} *= {n}",
        f"{v}.narrow({d}, 0, min({m}, {n})).mul_({m} - {n})",
        f"{v}.transpose(0, -1)[:1].sub_({n})",
        f"{v}.view(-1)[:{m}].fill_({n} - {m})",
        f"{v}.flatten()[:{n}].add_(1)",   # (flatten of a contiguous clone: a view)
        f"{v}.unsqueeze(0)[0, :1] = {n} - 5",
        f"{v}.diagonal(0, 0, -1).add_({n})" if env[a].ndim >= 2 else f"{v}.add_({n})",
        f"{v}[{v} > 0] = {m} - {n}",
    ])


PROMOTE_KINDS = {f.__name__: f for f in (promote, negdiv, viewwrites)}
