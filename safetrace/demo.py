"""A tour of the export programming model: the SPEC's scenarios, one exported graph each.

Run with ``make demo`` (or ``python -m safetrace.demo``).
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any, Callable

import torch

import safetrace as st

TOUR: list[tuple[str, Callable[[], Any]]] = []


def scenario(title: str) -> Callable:
    def register(fn: Callable) -> Callable:
        TOUR.append((title, fn))
        return fn

    return register


def show(ep: Any) -> None:
    print(textwrap.indent(ep.graph_module.print_readable(print_output=False), "    "))


def expect_error(fn: Callable, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:  # the tour prints what the user would see
        print(f"    -> {type(exc).__name__}: " + str(exc).replace("\n", "\n       "))
    else:
        raise AssertionError("expected an error")


@scenario("1. constants are specialized and folded: a=3; b=a+7 puts 10 in the graph")
def s1() -> None:
    class M(torch.nn.Module):
        def forward(self, x, a):
            b = a + 7
            return x + b

    ep = st.export(M(), (torch.randn(3, 4), 3))
    show(ep)
    print("    calling with a=4 instead of 3:")
    expect_error(ep.module(), torch.randn(3, 4), 4)


class Lists(torch.nn.Module):
    def forward(self, xs, cs):
        return xs[0] + xs[1] + sum(cs)


@scenario("2. containers are flattened: 2 tensors + [3, 4, 5] -> 5 inputs, constant 12")
def s2() -> None:
    show(st.export(Lists(), ([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5])))


@dataclasses.dataclass
class Data:
    xs: list
    cs: list


class UsesData(torch.nn.Module):
    def forward(self, d):
        return d.xs[0] + d.xs[1] + sum(d.cs)


@scenario("3. a dataclass input needs one line: st.register_dataclass(Data)")
def s3() -> None:
    d = Data([torch.randn(2, 2), torch.randn(2, 2)], [3, 4, 5])
    expect_error(st.export, UsesData(), (d,))
    st.register_dataclass(Data)
    show(st.export(UsesData(), (d,)))


class SumOfShapes(torch.nn.Module):
    def forward(self, xs, ys):
        n = sum(y.shape[0] for y in ys)
        return xs[0] + xs[1] + n


@scenario("4. shapes are specialized: tensors of sizes 3, 4, 5 -> 12")
def s4() -> None:
    ys = [torch.randn(3), torch.randn(4), torch.randn(5)]
    show(st.export(SumOfShapes(), ([torch.randn(2, 2), torch.randn(2, 2)], ys)))


class CatShape(torch.nn.Module):
    def forward(self, xs, ys):
        z = torch.cat(ys)
        return xs[0] + xs[1] + z.shape[0]


@scenario("5. shapes propagate through ops: cat of 3, 4, 5 has 12 rows")
def s5() -> None:
    ys = [torch.randn(3), torch.randn(4), torch.randn(5)]
    show(st.export(CatShape(), ([torch.randn(2, 2), torch.randn(2, 2)], ys)))


class Branch(torch.nn.Module):
    def forward(self, xs, ys):
        z = torch.cat(ys)
        if z.shape[0] > 20:
            return xs[0] * z.sum()
        else:
            return xs[1] - z.mean()


@scenario("6. a branch on a shape follows the example: 3,4,5 -> else; 6,7,8 -> then")
def s6() -> None:
    xs = [torch.randn(2, 2), torch.randn(2, 2)]
    for sizes in ((3, 4, 5), (6, 7, 8)):
        print(f"    sizes {sizes}:")
        show(st.export(Branch(), (xs, [torch.randn(s) for s in sizes])))


def main() -> None:
    torch.manual_seed(0)
    for title, fn in TOUR:
        print("=" * 88)
        print(title)
        print("=" * 88)
        fn()
    print(f"Tour complete: {len(TOUR)} scenarios.")


if __name__ == "__main__":
    main()
