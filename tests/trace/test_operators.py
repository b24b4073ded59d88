"""Python operators on proxies: every dunder the tracer maps (``names.DUNDERS``), the
reflected forms with a number on the left, the in-place forms, unary operators."""

from __future__ import annotations

import operator

import pytest
import torch

import safetrace as st
from safetrace.trace.names import DUNDERS
from tests.trace.common import check


def _floats(n):
    return torch.randn(n, 4), torch.rand(n, 4) + 0.5


def _positive(n):  # for ** with float exponents (a negative base gives NaN)
    return torch.rand(n, 4) + 0.1, torch.randn(n, 4)


def _ints(n):
    return torch.randint(-8, 8, (n, 4)), torch.randint(1, 5, (n, 4))


def _bools(n):
    return torch.rand(n, 4) > 0.5, torch.rand(n, 4) > 0.5


def _square(n):
    return torch.randn(n, 4), torch.randn(4, 4)


BINARY = [  # (operator, inputs)
    (operator.add, _floats), (operator.sub, _floats), (operator.mul, _floats),
    (operator.truediv, _floats), (operator.floordiv, _floats), (operator.mod, _floats),
    (operator.pow, _positive), (operator.eq, _floats), (operator.ne, _floats),
    (operator.lt, _floats), (operator.le, _floats), (operator.gt, _floats),
    (operator.ge, _floats), (operator.and_, _bools), (operator.or_, _bools),
    (operator.xor, _bools), (operator.and_, _ints), (operator.or_, _ints),
    (operator.xor, _ints), (operator.lshift, _ints), (operator.rshift, _ints),
    (operator.floordiv, _ints), (operator.mod, _ints), (operator.matmul, _square),
]
NUMBERS = {_floats: 1.5, _positive: 1.5, _ints: 3, _bools: True}
INPLACE = [
    (operator.iadd, _floats), (operator.isub, _floats), (operator.imul, _floats),
    (operator.itruediv, _floats), (operator.ifloordiv, _floats), (operator.imod, _floats),
    (operator.ipow, _positive), (operator.iand, _ints), (operator.ior, _ints),
    (operator.ixor, _ints), (operator.iand, _bools), (operator.ior, _bools),
]


def _id(case):
    return f"{case[0].__name__}-{case[1].__name__[1:]}"


@pytest.mark.parametrize("op,make", BINARY, ids=[_id(c) for c in BINARY])
def test_binary_operator_between_tensors(op, make):
    check(lambda a, b: op(a, b), make)


@pytest.mark.parametrize("op,make", [c for c in BINARY if c[1] is not _square],
                         ids=[_id(c) for c in BINARY if c[1] is not _square])
@pytest.mark.parametrize("side", ["number_right", "number_left"])
def test_binary_operator_with_a_number(op, make, side):
    k = NUMBERS[make]
    if op in (operator.lshift, operator.rshift) and side == "number_left":
        k = 1
    if side == "number_right":
        check(lambda a, b: op(a, k) + b * 0, make)
    else:  # reflected: k.__op__(tensor) returns NotImplemented, then tensor.__rop__(k)
        check(lambda a, b: op(k, b) + a * 0, make)


def test_reflected_matmul():
    """``b @ a`` with `b` a constant tensor met in the code (``__rmatmul__`` on the proxy)."""
    w = torch.randn(2, 4)
    check(lambda a, b: (w @ a.T).T + b.sum(), lambda n: (torch.randn(n, 4), torch.randn(n)))


@pytest.mark.parametrize("op,make", INPLACE, ids=[_id(c) for c in INPLACE])
def test_inplace_operator_on_an_intermediate(op, make):
    def f(a, b):
        y = a.clone()
        y = op(y, b)
        return y, a

    check(f, make)


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs])
def test_unary_operator(op):
    check(lambda a, b: op(a) + b, _floats)


def test_invert_of_bools_and_ints():
    check(lambda a, b: ~a | b, _bools)
    check(lambda a, b: ~a + b, _ints)


def test_every_mapped_dunder_is_exercised():
    """The table above reaches every operator the dunder table maps."""
    used = {op.__name__.strip("_") for op, _ in BINARY + INPLACE} | {
        "neg", "pos", "abs", "invert"}
    aliases = {"truediv": "truediv", "div": "truediv", "radd": "add", "rsub": "sub",
               "rmul": "mul", "rpow": "pow", "rmatmul": "matmul", "rand": "and",
               "ror": "or", "rxor": "xor"}
    for dunder in DUNDERS:
        name = dunder.strip("_")
        name = aliases.get(name, name)
        assert name in used or name.rstrip("_") in used, dunder


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod, operator.pow])
@pytest.mark.parametrize("k", [3, 1.5], ids=["int", "float"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(), (2, 3)], ids=["0d", "2d"])
def test_reflected_operator_keeps_eagers_dtype(op, k, dtype, shape):
    """``k op x`` types its result as eager does: the number promotes like a Python number
    (an int32 tensor stays int32), also for a 0-d tensor."""
    x = (torch.rand(shape) * 4 + 1).to(dtype)
    fn = lambda x: op(k, x)  # noqa: E731
    ep = st.export(fn, (x,))
    x2 = (torch.rand(shape) * 4 + 1).to(dtype)
    expected, got = fn(x2), ep.module()(x2)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected)
