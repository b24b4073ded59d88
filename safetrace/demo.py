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
        if fn is st.export and len(args) == 4:  # (model, args, kwargs, dynamic_shapes)
            fn(args[0], args[1], args[2], dynamic_shapes=args[3])
        else:
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


class AddMM(torch.nn.Module):
    def forward(self, x, y, z):
        return x + y @ z


@scenario("7. dynamic dims unify: x + y @ z with every dim Dim.DYNAMIC")
def s7() -> None:
    from safetrace import Dim

    x, y, z = torch.randn(3, 5), torch.randn(3, 4), torch.randn(4, 5)
    sc = st.ShapesCollection()
    for t in (x, y, z):
        sc[t] = (Dim.DYNAMIC, Dim.DYNAMIC)
    ep = st.export(AddMM(), (x, y, z), dynamic_shapes=sc)
    show(ep)
    print(textwrap.indent(ep.describe_contract(), "    "))
    a = torch.randn(6, 6)
    print("    6x6 inputs run:", bool((ep.module()(a, torch.eye(6), -a) == 0).all()))
    print("    a 7 where 6 is required fails early:")
    expect_error(ep.module(), a, torch.eye(7), -a)


class CatMM(torch.nn.Module):
    def forward(self, x, y, zs):
        return x + y @ torch.cat(zs)


@scenario("8. relations propagate: cat of dynamic tensors has s4 + s6 rows")
def s8() -> None:
    from safetrace import Dim

    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    ep = st.export(CatMM(), (torch.randn(3, 5), torch.randn(3, 6),
                             [torch.randn(2, 5), torch.randn(4, 5)]),
                   dynamic_shapes=(dyn, dyn, [dyn, dyn]))
    show(ep)


class SliceCatMM(torch.nn.Module):
    def forward(self, x, y, zs):
        return x[:3] + y @ torch.cat(zs)


@scenario("9. a dim the code specializes cannot be Dim.DYNAMIC: the error and its fix")
def s9() -> None:
    from safetrace import Dim

    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    args = (torch.randn(7, 5), torch.randn(3, 6), [torch.randn(2, 5), torch.randn(4, 5)])
    expect_error(st.export, SliceCatMM(), args, None, (dyn, dyn, [dyn, dyn]))
    ep = st.export(SliceCatMM(), args, dynamic_shapes=(dyn, (3, Dim.DYNAMIC), [dyn, dyn]))
    show(ep)
    print(f"    range constraints: {ep.range_constraints}")
    print("    y with 6 rows, then x with 2 rows:")
    expect_error(ep.module(), torch.randn(7, 5), torch.randn(6, 6), args[2])
    expect_error(ep.module(), torch.randn(2, 5), args[1], args[2])


class WithState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.randn(4, 4))

    def forward(self, x, y):
        return x @ self.w + y


@scenario("10. state is static and makes the dims it meets static (Dim.AUTO decides)")
def s10() -> None:
    from safetrace import Dim

    auto = (Dim.AUTO, Dim.AUTO)
    ep = st.export(WithState(), (torch.randn(6, 4), torch.randn(6, 4)),
                   dynamic_shapes={"x": auto, "y": auto})
    show(ep)
    for where, fate in ep.dims_report.items():
        print(f"    {where}: {fate}")


class CountSlice(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        c = torch.count_nonzero(x).item()
        return z[:c]


@scenario("11. data-dependent values: c = count_nonzero(x).item(); z[:c] needs no checks")
def s11() -> None:
    ep = st.export(CountSlice(), (torch.randn(6), torch.randn(6)))
    show(ep)
    x = torch.tensor([1.0, 0.0, 2.0, 0.0, 0.0, 3.0])
    print("    3 nonzeros ->", tuple(ep.module()(x, torch.zeros(6)).shape))


@st.custom_op("demo::count_nonzero_int")
def count_nonzero_int(x: torch.Tensor) -> int:
    return int(torch.count_nonzero(x).item())


@st.register_fake(count_nonzero_int)
def _fake_count(x: torch.Tensor) -> Any:
    u = st.new_dynamic_size()
    st.check(u >= 0)
    st.check(u <= x.numel())
    return u


class CustomCount(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        return z[:count_nonzero_int(x)]


@scenario("12. a custom op whose fake promises 0 <= u <= numel: exports with dynamic shapes")
def s12() -> None:
    from safetrace import Dim

    n = Dim("n")
    ep = st.export(CustomCount(), (torch.randn(6), torch.randn(6)),
                   dynamic_shapes={"x": (n,), "y": (n,)})
    show(ep)
    x = torch.tensor([1.0, 0.0, 2.0, 0.0, 5.0, 0.0, 0.0, 3.0])
    print("    8 elements, 4 nonzeros ->", tuple(ep.module()(x, torch.zeros(8)).shape))
    save_load_run(ep, (x, torch.zeros(8)))



def _without_load_checks(ep: Any) -> str:
    return "\n".join(line for line in ep.graph_module.print_readable(
        print_output=False).splitlines() if "safetrace.serialize." not in line)


def save_load_run(ep: Any, args: tuple) -> None:
    """Ship it: save to one file, load it back (no code runs from the file), run it."""
    import os
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "count_slice.pt2z")
        st.save(ep, path)
        try:
            st.load(path)  # a custom op runs only where the caller trusts it by name
        except st.LoadError as err:
            print("    st.load(path) refuses a custom op it was not told to trust:")
            print("      " + str(err).splitlines()[0][:100] + " ...")
        loaded = st.load(path, allow_ops=["demo::count_nonzero_int"])
        size = os.path.getsize(path)
    # (the loader adds run-time checks of what it cannot work out at load, never saved)
    same = _without_load_checks(loaded) == _without_load_checks(ep)
    out = loaded.module()(*args)
    ok = torch.equal(out, ep.module()(*args))
    mod = loaded.module()
    t0 = time.perf_counter()
    for _ in range(100):
        mod(*args)
    per_call = (time.perf_counter() - t0) / 100 * 1e6
    print(f"    saved ({size} bytes), loaded: same graph {same}, same outputs {ok}, "
          f"{per_call:.0f} us per call")
    print("    the loaded program checks its inputs like the original:")
    expect_error(mod, torch.zeros(8), torch.zeros(9))


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
