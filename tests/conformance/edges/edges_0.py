"""User mistakes and unusual-but-legal programs, part 1 of 4 (ex benchmarks/sweep_edges.py);
each ``@case`` is one promise checked (see tests/conformance/edge_harness.py)."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import torch
import torch.nn as nn

import safetrace as st
from safetrace import Dim
from tests.conformance.edge_harness import A, Finding, Fn, Note, R, ST_ERRORS, case, compare, describe, expect_error, first_lines, run_export

THIS = __file__.rsplit('/', 1)[-1]   # error messages name the user's file


# =========================================================================================
# 1. malformed dynamic_shapes
# =========================================================================================
class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class One(nn.Module):
    def forward(self, x):
        return x * 2


@case("spec")
def spec_wrong_key():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"y": {0: Dim.AUTO}}),
                 st.SpecError, contains=["'y'", "x"], any_of=[("fix",)])


@case("spec")
def spec_missing_arg_level():
    # user forgot the per-argument level: {0: Dim} instead of {"x": {0: Dim}}
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={0: Dim("b")}),
                 st.SpecError, any_of=[("fix",), ("x",)])


@case("spec")
def spec_dim_out_of_range():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {5: Dim.AUTO}}),
                 st.SpecError, contains=["x", "5"])


@case("spec")
def spec_negative_dim_in_range():
    # {-1: Dim} is either refused clearly, or means the last dim (and must then be dynamic)
    mk = A(R(4, 3))
    try:
        ep = run_export(One(), mk, ds={"x": {-1: Dim("d")}}, others=[A(R(4, 7))], rejects=[A(R(5, 3))])
    except st.SpecError as e:
        return f"refused: {first_lines(str(e))}"
    return f"accepted, range {ep.range_constraints}"


@case("spec")
def spec_negative_dim_out_of_range():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {-3: Dim.AUTO}}),
                 st.SpecError, contains=["x", "-3"])


def _dim_ctor(fn):
    try:
        fn()
    except (ValueError, TypeError) as e:
        return f"plain {type(e).__name__} at Dim(): {e}"
    except st.SpecError as e:
        return f"SpecError: {e}"
    raise Finding("silent", "Dim() accepted it")


@case("spec")
def spec_dim_min_gt_max():
    return _dim_ctor(lambda: Dim("b", min=5, max=2))


@case("spec")
def spec_dim_non_str_name():
    return _dim_ctor(lambda: Dim(3))


@case("spec")
def spec_dim_negative_min():
    return _dim_ctor(lambda: Dim("b", min=-2))


@case("spec")
def spec_dim_name_with_space():
    x = torch.randn(4, 3)
    try:
        d = Dim("my batch")
    except (ValueError, TypeError, st.SpecError) as e:
        return f"refused at Dim(): {type(e).__name__}: {e}"
    run_export(One(), A(lambda: x.clone()), ds={"x": {0: d}}, others=[A(R(6, 3))])
    return "accepted"


@case("spec")
def spec_dim_min0_size0_and_1():
    run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=0)}}, others=[A(R(0, 3)), A(R(1, 3))])


@case("spec")
def spec_dim_min1_rejects_0():
    run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=1, max=8)}}, others=[A(R(1, 3))],
               rejects=[A(R(0, 3)), A(R(9, 3))])
    ep = st.export(One(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b", min=1, max=8)}})
    expect_error(lambda: ep.module()(torch.randn(9, 3)), st.InputMismatchError,
                 contains=["x.shape[0]", "9", "8"])


@case("spec")
def spec_dim_min_eq_max():
    try:
        run_export(One(), A(R(4, 3)), ds={"x": {0: Dim("b", min=4, max=4)}}, rejects=[A(R(5, 3))])
    except st.ConstraintViolationError as e:
        raise Note(f"Dim('b', min=4, max=4) refused (a one-value range): {first_lines(str(e), 2)}")


@case("spec")
def spec_same_name_different_bounds():
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    expect_error(lambda: st.export(Add(), (x, y), dynamic_shapes={
        "x": {0: Dim("b", max=10)}, "y": {0: Dim("b", max=20)}}), st.SpecError, contains=["b"],
        any_of=[("x",), ("y",)])


@case("spec")
def spec_same_name_two_objects_same_bounds():
    # two Dim objects with the same name and bounds: same dim (torch.export semantics)
    run_export(Add(), A(R(4, 3), R(4, 3, seed=1)),
               ds={"x": {0: Dim("b")}, "y": {0: Dim("b")}}, others=[A(R(6, 3), R(6, 3, seed=1))])


@case("spec")
def spec_same_dim_unequal_examples():
    x, y = torch.randn(4, 3), torch.randn(5, 1)
    b = Dim("b")
    expect_error(lambda: st.export(Add(), (x, y), dynamic_shapes={"x": {0: b}, "y": {0: b}}),
                 contains=["b", "4", "5"], any_of=[("x.shape[0]", "x"), ("y.shape[0]", "y")])


@case("spec")
def spec_derived_dim():
    class M(nn.Module):
        def forward(self, x, y):
            return torch.cat([x, x]) + y
    d = Dim("d")
    run_export(M(), A(R(3, 2), R(6, 2, seed=1)), ds={"x": {0: d}, "y": {0: 2 * d}},
               others=[A(R(5, 2), R(10, 2, seed=1))], rejects=[A(R(5, 2), R(9, 2, seed=1))])


@case("spec")
def spec_derived_dim_inconsistent_example():
    d = Dim("d")
    expect_error(lambda: st.export(Fn(lambda x, y: (x.sum(), y.sum())), (torch.randn(3), torch.randn(7)),
                                   dynamic_shapes=({0: d}, {0: 2 * d})),
                 st.SpecError, any_of=[("2*d", "2 * d", "2*d"), ("7",)])


@case("spec")
def spec_derived_dim_only():
    # only the derived dim appears (no root): should work or be refused clearly
    d = Dim("d")
    try:
        run_export(One(), A(R(6, 2)), ds={"x": {0: 2 * d + 1 - 1}}, others=[A(R(8, 2))],
                   rejects=[A(R(7, 2))])
    except st.SpecError as e:
        return f"refused: {first_lines(str(e))}"
    return "accepted"


@case("spec")
def spec_derived_dim_plus_one():
    class M(nn.Module):
        def forward(self, x, y):
            return x[1:] + y
    d = Dim("d", min=1)
    run_export(M(), A(R(5, 2), R(4, 2, seed=1)), ds={"x": {0: d + 1}, "y": {0: d}},
               others=[A(R(9, 2), R(8, 2, seed=1))], rejects=[A(R(9, 2), R(7, 2, seed=1))])


@case("spec")
def spec_torch_export_dim():
    run_export(One(), A(R(4, 3)), ds={"x": {0: torch.export.Dim("b", max=16)}},
               others=[A(R(9, 3))], rejects=[A(R(17, 3))])


@case("spec")
def spec_torch_export_dim_hints():
    run_export(One(), A(R(4, 3)), ds={"x": {0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.AUTO}},
               others=[A(R(9, 5))])


@case("spec")
def spec_for_int_input_dim():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(M(), (x, 3), dynamic_shapes={"x": None, "n": {0: Dim.AUTO}}),
                 st.SpecError, contains=["n"])


@case("spec")
def spec_for_int_input_none():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    run_export(M(), A(R(4, 3), 3), ds={"x": {0: Dim.AUTO}, "n": None}, others=[A(R(6, 3), 3)],
               rejects=[A(R(4, 3), 4)])


@case("spec")
def spec_for_int_input_Dim():
    class M(nn.Module):
        def forward(self, x, n):
            return x * n
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x, 3), dynamic_shapes={"x": None, "n": Dim("n")}),
                       allow_ok=True, contains=["n"])
    return msg if isinstance(msg, str) else "accepted (int made dynamic?)"


@case("spec")
def spec_list_vs_tuple():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    # inputs are a list, the spec a tuple of per-tensor specs
    run_export(M(), A([torch.randn(4, 3), torch.randn(4, 3)]),
               ds={"xs": ({0: Dim("b")}, {0: Dim("b")})},
               others=[lambda: (([torch.randn(6, 3), torch.randn(6, 3)],), {})])


@case("spec")
def spec_list_for_args():
    run_export(Add(), A(R(4, 3), R(4, 3, seed=1)), ds=[{0: Dim("b")}, {0: Dim("b")}],
               others=[A(R(7, 3), R(7, 3, seed=1))])


@case("spec")
def spec_nested_length_mismatch():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    xs = [torch.randn(4, 3), torch.randn(4, 3)]
    expect_error(lambda: st.export(M(), (xs,), dynamic_shapes={"xs": [{0: Dim.AUTO}] * 3}),
                 st.SpecError, contains=["xs"], any_of=[("3",), ("2",)])


@case("spec")
def spec_for_kwargs():
    class M(nn.Module):
        def forward(self, x, *, y):
            return x + y
    run_export(M(), A(R(4, 3), y=R(4, 3, seed=1)), ds={"x": {0: Dim("b")}, "y": {0: Dim("b")}},
               others=[A(R(6, 3), y=R(6, 3, seed=1))], rejects=[A(R(6, 3), y=R(5, 3, seed=1))])


@case("spec")
def spec_kwargs_missing_in_spec():
    class M(nn.Module):
        def forward(self, x, y=None):
            return x + y
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x,), {"y": y}, dynamic_shapes={"x": {0: Dim.AUTO}}),
                       allow_ok=True)
    return "accepted (y static)" if not isinstance(msg, str) else msg


@case("spec")
def spec_string_entry():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: "batch"}}),
                 st.SpecError, contains=["x", "batch"])


@case("spec")
def spec_bool_entry():
    # True is an int subclass: must not be read as a static size 1
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: True}}),
                       st.SpecError, contains=["x"])
    return msg


@case("spec")
def spec_float_entry():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: 4.0}}),
                 st.SpecError, contains=["x"])


@case("spec")
def spec_static_int_mismatch():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {0: 5}}),
                 st.SpecError, contains=["x", "5", "4"])


@case("spec")
def spec_string_dim_key():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes={"x": {"0": Dim.AUTO}}),
                 st.SpecError, contains=["x"])


@case("spec")
def spec_not_a_container():
    x = torch.randn(4, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes=Dim("b")),
                 st.SpecError, any_of=[("fix", "keyed by argument name")])


@case("spec")
def spec_shapes_collection_foreign_tensor():
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[torch.randn(4, 3)] = (Dim.DYNAMIC, 3)
    expect_error(lambda: st.export(One(), (x,), dynamic_shapes=sc), st.SpecError)


@case("spec")
def spec_shapes_collection_aliased_input():
    # the same tensor object passed twice; shapes collection keyed by it
    class M(nn.Module):
        def forward(self, x, y):
            return x * 2 + y
    x = torch.randn(4, 3)
    sc = st.ShapesCollection()
    sc[x] = (Dim.DYNAMIC, 3)
    ep = st.export(M(), (x, x), dynamic_shapes=sc)
    a, b = torch.randn(6, 3), torch.randn(6, 3)
    d = compare(M()(a, b), ep.module()(a, b))
    if d:
        raise Finding("wrong", d)


@case("spec")
def spec_star_args():
    class M(nn.Module):
        def forward(self, *xs):
            return sum(xs)
    run_export(M(), A(R(4, 3), R(4, 3, seed=1)), ds={"xs": ({0: Dim("b")}, {0: Dim("b")})},
               others=[A(R(7, 3), R(7, 3, seed=1))])


@case("spec")
def spec_dynamic_specialized_fix_pastes():
    # Dim.DYNAMIC on a dim the program makes static: the error's dynamic_shapes= fix must work
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.ones(4, 3))

        def forward(self, x):
            return x + self.b
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x,), dynamic_shapes={"x": {0: Dim.DYNAMIC}}),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"],
                       any_of=[(THIS, "self.b"),])
    _paste_fix(M(), (x,), msg)


def _paste_fix(model, args, msg):
    import re
    block = re.search(r"Suggested fix[^\n]*\n((?:[ \t]+\S[^\n]*\n?)+)", msg)
    if block:
        code = "\n".join(line.strip() for line in block.group(1).splitlines())
        ns = {"Dim": Dim, "st": st, "torch": torch}
        try:
            exec(code, ns)
            ds = ns["dynamic_shapes"]
        except Exception as e:  # noqa: BLE001
            raise Finding("unclear", f"suggested fix block does not run: {describe(e)}: {code!r}")
        try:
            st.export(model, args, dynamic_shapes=ds)
        except ST_ERRORS as e:
            raise Finding("unclear", f"suggested fix {code!r} still fails: {describe(e)}")
        return
    mt = re.search(r"dynamic_shapes\s*=\s*", msg)
    if mt is None:
        raise Finding("unclear", f"no ready-to-paste dynamic_shapes= value: {first_lines(msg)}")
    tail = msg[mt.end():]
    depth, end = 0, None
    for j, ch in enumerate(tail):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
            if depth == 0:
                end = j + 1
                break
    if end is None:
        raise Finding("unclear", f"fix not paste-able: {first_lines(msg)}")
    text = tail[:end]
    try:
        ds = eval(text, {"Dim": Dim, "st": st, "torch": torch})
    except Exception as e:  # noqa: BLE001
        raise Finding("unclear", f"suggested fix {text!r} does not evaluate: {describe(e)}")
    try:
        st.export(model, args, dynamic_shapes=ds)
    except ST_ERRORS as e:
        raise Finding("unclear", f"suggested fix {text!r} still fails: {describe(e)}")


@case("spec")
def spec_named_dim_narrowed_fix_pastes():
    class M(nn.Module):
        def forward(self, x):
            return x[:3] * 2

    class Narrowing(nn.Module):  # (x[:3] alone is min(b, 3) rows: no narrowing)
        def forward(self, x):
            return x[:3] + torch.ones(3, 3)
    x = torch.randn(5, 3)
    # (max_splits=0: by default the narrowing is a size split, exporter/splits.py)
    msg = expect_error(lambda: st.export(Narrowing(), (x,),
                                         dynamic_shapes={"x": {0: Dim("b", min=1)}},
                                         max_splits=0),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"],
                       any_of=[(THIS, "x[:3]")])
    _paste_fix(Narrowing(), (x,), msg)
    run_export(M(), A(x), ds={"x": {0: Dim("b", min=1)}}, others=[A(R(n, 3)) for n in (1, 2, 3, 7)],
               rejects=[A(R(0, 3))])


@case("spec")
def spec_dim_named_like_internal_symbol():
    # Dim names that look like safetrace's own symbols (s0, s1, u0)
    run_export(Add(), A(R(4, 3), R(4, 5, seed=1)[:0] if False else R(4, 3, seed=1)),
               ds={"x": {0: Dim("s1"), 1: Dim("u0")}, "y": {0: Dim("s1"), 1: Dim.AUTO}},
               others=[A(R(6, 2), R(6, 2, seed=1))], rejects=[A(R(6, 2), R(5, 2, seed=1))])


@case("spec")
def spec_dim_max_zero():
    try:
        run_export(One(), A(R(0, 3)), ds={"x": {0: Dim("b", min=0, max=0)}}, rejects=[A(R(1, 3))])
    except st.ConstraintViolationError as e:
        raise Note(f"Dim('b', min=0, max=0) refused (a one-value range): {first_lines(str(e), 2)}")


@case("spec")
def spec_static_entries_tuple_style():
    run_export(One(), A(R(4, 3)), ds={"x": (Dim.STATIC, None)}, rejects=[A(R(5, 3)), A(R(4, 4))])


@case("spec")
def spec_for_none_input():
    class M(nn.Module):
        def forward(self, x, m=None):
            return x if m is None else x + m
    x = torch.randn(4, 3)
    msg = expect_error(lambda: st.export(M(), (x, None), dynamic_shapes={"x": {0: Dim.AUTO}, "m": {0: Dim.AUTO}}),
                       allow_ok=True, contains=["m"])
    return msg if isinstance(msg, str) else "accepted"


# =========================================================================================
# 2. unusual inputs
# =========================================================================================
@case("inputs")
def in_int_float_bool_str_none():
    class M(nn.Module):
        def forward(self, x, n, f, b, s, z):
            y = x * n + f
            if b:
                y = -y
            if s == "relu":
                y = torch.relu(y)
            return y if z is None else y + z
    mk = A(R(4, 3), 3, 0.5, True, "relu", None)
    run_export(M(), mk, rejects=[A(R(4, 3), 4, 0.5, True, "relu", None),
                                  A(R(4, 3), 3, 0.25, True, "relu", None),
                                  A(R(4, 3), 3, 0.5, False, "relu", None),
                                  A(R(4, 3), 3, 0.5, True, "gelu", None),
                                  A(R(4, 3), 3, 0.5, True, "relu", R(4, 3))])
    ep = st.export(M(), *mk())
    expect_error(lambda: ep.module()(torch.randn(4, 3), 4, 0.5, True, "relu", None), st.InputMismatchError,
                 contains=["n", "3", "4"])


@case("inputs")
def in_int_called_with_float_equal():
    # 1 == 1.0 == True: the specialized value compares equal but the program's result differs
    class M(nn.Module):
        def forward(self, x, n):
            return x.sum() + torch.full((2,), n)
    ep = st.export(M(), (torch.randn(3), 1))
    for other in (1.0, True):
        x = torch.randn(3)
        try:
            so = ep.module()(x, other)
        except st.InputMismatchError:
            continue
        d = compare(M()(x, other), so)
        if d:
            raise Finding("wrong", f"n specialized to int 1, called with {other!r}: {d}")


@case("inputs")
def in_float_neg_zero():
    class M(nn.Module):
        def forward(self, x, s):
            return x / s
    ep = st.export(M(), (torch.ones(3), 0.0))
    x = torch.ones(3)
    try:
        so = ep.module()(x, -0.0)
    except st.InputMismatchError:
        return "-0.0 rejected"
    d = compare(M()(x, -0.0), so)
    if d:
        raise Finding("wrong", f"exported with s=0.0, called with s=-0.0 (accepted): {d}")


@case("inputs")
def in_float_nan():
    class M(nn.Module):
        def forward(self, x, s):
            return torch.nan_to_num(x * s, nan=1.0)
    ep = st.export(M(), (torch.ones(3), float("nan")))
    try:
        ep.module()(torch.ones(3), float("nan"))
    except st.InputMismatchError as e:
        raise Finding("reject", f"exported with s=nan, calling with s=nan again is rejected: {first_lines(str(e))}")


@case("inputs")
def in_unregistered_dataclass():
    @dataclasses.dataclass
    class Pt:
        a: torch.Tensor
        b: torch.Tensor

    class M(nn.Module):
        def forward(self, p):
            return p.a + p.b
    expect_error(lambda: st.export(M(), (Pt(torch.randn(3), torch.randn(3)),)), st.UnsupportedInputError,
                 contains=["Pt", "register_dataclass"], any_of=[("p",)])


@dataclasses.dataclass
class RegPt:
    a: torch.Tensor
    b: torch.Tensor
    k: int = 2


st.register_dataclass(RegPt)


@case("inputs")
def in_registered_dataclass_dynamic():
    class M(nn.Module):
        def forward(self, p):
            return p.a * p.k + p.b
    run_export(M(), A(lambda: RegPt(torch.randn(4, 3), torch.randn(4, 3))),
               ds={"p": RegPt(a={0: Dim("b")}, b={0: Dim("b")}, k=None)},
               others=[A(lambda: RegPt(torch.randn(6, 3), torch.randn(6, 3)))],
               rejects=[A(lambda: RegPt(torch.randn(6, 3), torch.randn(6, 3), 3))])


NT = namedtuple("NT", ["a", "b"])
