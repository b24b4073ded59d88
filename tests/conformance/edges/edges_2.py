"""User mistakes and unusual-but-legal programs, part 3 of 4 (ex benchmarks/sweep_edges.py);
each ``@case`` is one promise checked (see tests/conformance/edge_harness.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import safetrace as st
from safetrace import Dim
from tests.conformance.edge_harness import A, Finding, Fn, Lin, Note, R, ST_ERRORS, case, compare, describe, expect_error, first_lines, run_export

THIS = __file__.rsplit('/', 1)[-1]   # error messages name the user's file


@case("state")
def se_autocast_inside():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.lin(x)
    try:
        run_export(M(), A(R(4, 8)), save=False)
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"


@case("state")
def se_grad_mode_state_restored():
    class M(nn.Module):
        def forward(self, x):
            torch.set_grad_enabled(False)
            return x + 1
    before = torch.is_grad_enabled()
    try:
        st.export(M(), (torch.randn(3),))
    except ST_ERRORS:
        pass
    after = torch.is_grad_enabled()
    torch.set_grad_enabled(before)
    if after != before:
        raise Note("forward's torch.set_grad_enabled(False) leaked out of export (as it would in eager)")


@case("state")
def se_exporting_flags_restored_after_failure():
    class M(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
    try:
        st.export(M(), (torch.randn(3),))
    except ST_ERRORS:
        pass
    if torch.compiler.is_exporting() or torch.compiler.is_compiling():
        raise Finding("mutation", "is_exporting()/is_compiling() still True after a failed export")
    if torch.overrides._get_current_function_mode_stack():
        raise Finding("mutation", "a TorchFunctionMode is still active after a failed export")


# =========================================================================================
# 4. data-dependent code, randomness, numpy
# =========================================================================================
def _dd(fn, x, contains=(THIS,), any_of=(), cls=st.DataDependentError):
    return expect_error(lambda: st.export(Fn(fn), (x,)), cls, contains=contains, any_of=any_of)


@case("data")
def dd_if_sum_positive():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    _dd(f, torch.randn(4), contains=(THIS, "x.sum() > 0"), any_of=[("torch.where", "fix")])


@case("data")
def dd_item_float():
    # an unbacked float (issue 15 item 1): the graph computes with it, like torch.export
    run_export(Fn(lambda x: x * x.max().item()), A(R(4)), ds=({0: Dim.AUTO},),
               others=[A(R(7)), A(R(1))])


@case("data")
def dd_item_int_slice():
    run_export(Fn(lambda x, z: z[: torch.count_nonzero(x).item()]),
               A(R(5), R(6)), ds=({0: Dim.AUTO}, {0: Dim.AUTO}), others=[A(R(9), R(3))])


@case("data")
def dd_tolist():
    # a float tensor's .tolist(): unbacked floats that the graph computes with (issue 15)
    run_export(Fn(lambda x: x * sum(x.tolist())), A(R(4)), others=[A(R(4, seed=3))],
               rejects=[A(R(5))])


@case("data")
def dd_int_of_tensor():
    _dd(lambda x: x[: int(x.argmax())], torch.randn(4), contains=(THIS,), any_of=[("check", "fix")])


@case("data")
def dd_nonzero_python_branch():
    def f(x):
        nz = x.nonzero()
        if nz.shape[0] > 2:
            return nz.sum()
        return nz.sum() * 0
    _dd(f, torch.randn(6), contains=(THIS, "st.check"))


@case("data")
def dd_numpy():
    _dd(lambda x: torch.from_numpy(x.numpy() * 2), torch.randn(4), contains=(THIS,))


@case("data")
def dd_numpy_constant_ok():
    run_export(Fn(lambda x: x + torch.from_numpy(np.arange(4, dtype=np.float32))), A(R(4)))


@case("data")
def dd_tensor_of_shape():
    # a tensor built from a dynamic size must follow the size, not the example
    run_export(Fn(lambda x: x.sum(0) / torch.tensor(x.shape[0])), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_tensor_of_shape_list():
    run_export(Fn(lambda x: torch.tensor(x.shape) * 1), A(R(4, 3)), ds=({0: Dim.AUTO, 1: Dim.AUTO},),
               others=[A(R(7, 5))])


@case("data")
def dd_math_sqrt_of_size():
    run_export(Fn(lambda x: x / math.sqrt(x.shape[-1])), A(R(2, 16)), ds=({0: Dim.AUTO, 1: Dim.AUTO},),
               others=[A(R(3, 9))], save=False, auto_ok=True)


@case("data")
def dd_size_pow_half():
    run_export(Fn(lambda x: x * x.shape[-1] ** -0.5), A(R(2, 16)), ds=({1: Dim.AUTO},),
               others=[A(R(2, 9))], save=False, auto_ok=True)


@case("data")
def dd_int_of_size():
    run_export(Fn(lambda x: x[: int(x.shape[0]) // 2] * len(x)), A(R(5, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(8, 3)), A(R(3, 3))], auto_ok=True)


@case("data")
def dd_range_over_size():
    def f(x):
        out = 0
        for i in range(x.shape[0]):
            out = out + x[i]
        return out
    run_export(Fn(f), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(6, 3))], auto_ok=True)


@case("data")
def dd_range_over_size_dynamic():
    def f(x):
        out = 0
        for i in range(x.shape[0]):
            out = out + x[i]
        return out
    msg = expect_error(lambda: st.export(Fn(f), (torch.randn(4, 3),), dynamic_shapes=({0: Dim.DYNAMIC},)),
                       st.ConstraintViolationError, contains=["x.shape[0]"], any_of=[(THIS,)])
    return first_lines(msg, 2)


@case("data")
def dd_fstring_size_key():
    table = {4: 2.0, 6: 3.0}
    run_export(Fn(lambda x: x * table[x.shape[0]]), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(6, 3))], auto_ok=True)


@case("data")
def dd_shape_output_int():
    run_export(Fn(lambda x: (x * 2, x.shape[0], x.size(), x.numel())), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_randn_fresh_each_call():
    f = Fn(lambda x: x + torch.randn(x.shape))
    ep = st.export(f, (torch.zeros(4, 3),), dynamic_shapes=({0: Dim.AUTO},))
    o1, o2 = ep.module()(torch.zeros(4, 3)), ep.module()(torch.zeros(4, 3))
    if torch.equal(o1, o2):
        raise Finding("wrong", "torch.randn baked into the graph as a constant (two calls identical)")
    o3 = ep.module()(torch.zeros(6, 3))
    if o3.shape != (6, 3):
        raise Finding("wrong", f"randn shape {o3.shape}")


@case("data")
def dd_rand_like_dropout_functional():
    f = Fn(lambda x: F.dropout(x, 0.5, training=True) + torch.rand_like(x) * 0)
    ep = st.export(f, (torch.ones(64, 8),))
    o1, o2 = ep.module()(torch.ones(64, 8)), ep.module()(torch.ones(64, 8))
    if torch.equal(o1, o2):
        raise Finding("wrong", "F.dropout(training=True) mask baked in")
    if set(o1.unique().tolist()) - {0.0, 2.0}:
        raise Finding("wrong", f"dropout values {o1.unique().tolist()[:5]}")


@case("data")
def dd_manual_seed_inside():
    def f(x):
        torch.manual_seed(123)
        return x + torch.randn(x.shape)
    state = torch.get_rng_state()
    try:
        ep = st.export(Fn(f), (torch.zeros(3),))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    finally:
        rs_after = torch.get_rng_state()
    torch.set_rng_state(state)
    eo = f(torch.zeros(3))
    torch.manual_seed(999)
    so = ep.module()(torch.zeros(3))
    d = compare(eo, so)
    if d:
        raise Finding("wrong", f"torch.manual_seed inside forward is not in the graph: {d}")
    if not torch.equal(state, rs_after):
        raise Note("export changed the global RNG state (forward calls manual_seed)")


@case("data")
def dd_generator_inside():
    def f(x):
        g = torch.Generator().manual_seed(7)
        return x + torch.randn(x.shape, generator=g)
    try:
        ep = st.export(Fn(f), (torch.zeros(3),))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    d = compare(f(torch.zeros(3)), ep.module()(torch.zeros(3)))
    if d:
        raise Finding("wrong", f"seeded local Generator ignored: {d}")


@case("data")
def dd_export_does_not_consume_rng():
    torch.manual_seed(5)
    st.export(Fn(lambda x: x + torch.randn(3)), (torch.zeros(3),))
    a = torch.rand(1)
    torch.manual_seed(5)
    b = torch.rand(1)
    if not torch.equal(a, b):
        raise Note("export consumed the global RNG (traced randn drew numbers)")


# =========================================================================================
# 5. unusual outputs
# =========================================================================================
@dataclasses.dataclass
class Out:
    y: torch.Tensor
    n: int


st.register_dataclass(Out)


@case("outputs")
def out_int_none_str():
    run_export(Fn(lambda x: (x + 1, 3, None, "hi", 2.5, True)), A(R(3)))


@case("outputs")
def out_dataclass_nested_dict():
    run_export(Fn(lambda x: {"a": Out(x * 2, 7), "b": [x, {"c": x.sum()}]}), A(R(4)),
               ds=({0: Dim.AUTO},), others=[A(R(6))])


@case("outputs")
def out_unregistered_dataclass():
    @dataclasses.dataclass
    class O2:
        y: torch.Tensor

    expect_error(lambda: st.export(Fn(lambda x: O2(x * 2)), (torch.randn(3),)), allow_ok=True,
                 contains=["O2"])


@case("outputs")
def out_input_itself():
    f = Fn(lambda x: x)
    ep = run_export(f, A(R(4)), ds=({0: Dim.AUTO},), others=[A(R(6))])
    x = torch.randn(4)
    if ep.module()(x) is not x:
        raise Note("returning the input returns a copy, eager returns the same tensor")


@case("outputs")
def out_alias_view_of_input():
    f = Fn(lambda x: x[0])
    ep = st.export(f, (torch.randn(4, 3),))
    x = torch.randn(4, 3)
    o = ep.module()(x)
    o.mul_(0)
    if not torch.equal(x[0], torch.zeros(3)):
        raise Note("returned view of the input does not alias the input (eager does)")


@case("outputs")
def out_parameter():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))

        def forward(self, x):
            return self.w, x + self.w
    run_export(M(), A(R(3)))


@case("outputs")
def out_buffer_and_dtype():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.arange(3))

        def forward(self, x):
            return self.b, x.dtype, x.device, x.shape
    run_export(M(), A(R(3)))


@case("outputs")
def out_same_tensor_twice():
    run_export(Fn(lambda x: (x * 2,) * 2), A(R(3)))


@case("outputs")
def out_empty():
    run_export(Fn(lambda x: ()), A(R(3)))


# =========================================================================================
# 6. calling ep.module() wrongly
# =========================================================================================
class KW(nn.Module):
    def forward(self, x, y, *, scale=1.0, mask=None):
        return x * scale + y if mask is None else (x + y) * mask


def _kw_ep():
    b = Dim("b", max=32)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    return st.export(KW(), (x, y), {"scale": 2.0, "mask": torch.ones(4, 3)},
                     dynamic_shapes={"x": {0: b}, "y": {0: b}, "scale": None, "mask": {0: b}})


@case("call")
def call_kwargs_any_order():
    ep = _kw_ep()
    x, y, m = torch.randn(5, 3), torch.randn(5, 3), torch.rand(5, 3)
    d = compare(KW()(x, y, scale=2.0, mask=m), ep.module()(x, y, mask=m, scale=2.0))
    if d:
        raise Finding("wrong", d)


@case("call")
def call_too_few_args():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, any_of=[("y",), ("argument", "positional")])


@case("call")
def call_too_many_args():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3),
                                     scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, any_of=[("3 positional", "three", "expected 2", "got 3"), ])


@case("call")
def call_wrong_kwarg_name():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, maks=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["maks"], any_of=[("mask",)])


@case("call")
def call_missing_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0),
                 st.InputMismatchError, contains=["mask"])


@case("call")
def call_positional_as_kwarg():
    ep = _kw_ep()
    x, y, m = torch.randn(4, 3), torch.randn(4, 3), torch.ones(4, 3)
    msg = expect_error(lambda: ep.module()(x, y=y, scale=2.0, mask=m), st.InputMismatchError,
                       allow_ok=True, contains=["y"])
    if isinstance(msg, str):
        return f"refused: {first_lines(msg, 1)}"
    return "accepted"


@case("call")
def call_wrong_dtype():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3).double(), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "float32", "float64"])


@case("call")
def call_wrong_device():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3, device="meta"), torch.randn(4, 3), scale=2.0,
                                     mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "device", "meta"])


@case("call")
def call_wrong_rank():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3, 1), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x", "dims"])


@case("call")
def call_wrong_static_dim():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 5), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x.shape[1]", "5", "3"])


@case("call")
def call_unequal_dynamic():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(6, 3), torch.randn(5, 3), scale=2.0, mask=torch.ones(6, 3)),
                 st.InputMismatchError, contains=["y.shape[0]", "x.shape[0]"])


@case("call")
def call_out_of_range():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(33, 3), torch.randn(33, 3), scale=2.0, mask=torch.ones(33, 3)),
                 st.InputMismatchError, contains=["x.shape[0]", "33", "32"])


@case("call")
def call_extra_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3), z=1),
                 st.InputMismatchError, contains=["z"])


@case("call")
def call_changed_scalar_kwarg():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=3.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["scale", "2.0", "3.0"])


@case("call")
def call_none_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(torch.randn(4, 3), torch.randn(4, 3), scale=2.0, mask=None),
                 st.InputMismatchError, contains=["mask"])


@case("call")
def call_numpy_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(np.ones((4, 3), np.float32), torch.randn(4, 3), scale=2.0,
                                     mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x"], any_of=[("ndarray", "numpy")])


@case("call")
def call_int_for_tensor():
    ep = _kw_ep()
    expect_error(lambda: ep.module()(3, torch.randn(4, 3), scale=2.0, mask=torch.ones(4, 3)),
                 st.InputMismatchError, contains=["x"], any_of=[("tensor",)])


@case("call")
def call_list_instead_of_tuple():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    ep = st.export(M(), ((torch.randn(3), torch.randn(3)),))
    expect_error(lambda: ep.module()([torch.randn(3), torch.randn(3)]), st.InputMismatchError,
                 contains=["xs"], any_of=[("list",)], allow_ok=True)


@case("call")
def call_tensor_for_list():
    class M(nn.Module):
        def forward(self, xs):
            return xs[0] + xs[1]
    ep = st.export(M(), ([torch.randn(3), torch.randn(3)],))
    expect_error(lambda: ep.module()(torch.randn(2, 3)), st.InputMismatchError, contains=["xs"])


@case("call")
def call_under_no_grad_and_inference_mode():
    lin = Lin()
    ep = st.export(lin, (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    x = torch.randn(5, 3)
    with torch.no_grad():
        a = ep.module()(x)
    with torch.inference_mode():
        b = ep.module()(x)
    d = compare(lin(x).detach(), a) or compare(lin(x).detach(), b)
    if d:
        raise Finding("wrong", d)


@case("call")
def call_export_twice_run_both():
    m = Lin()
    ep1 = st.export(m, (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    ep2 = st.export(m, (torch.randn(2, 3),))
    x = torch.randn(4, 3)
    d = compare(m(x), ep1.module()(x)) or compare(m(torch.randn(2, 3) * 0), ep2.module()(torch.zeros(2, 3)))
    if d:
        raise Finding("wrong", d)
    expect_error(lambda: ep2.module()(x), st.InputMismatchError, contains=["x.shape[0]"])


@case("call")
def call_module_to_float64():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module().to(torch.float64)
    if m.lin.weight.dtype != torch.float32:
        raise Finding("mutation", "ep.module().to(float64) converted the original model's weights")
    x = torch.randn(4, 3)
    try:
        out = mod(x)
    except st.InputMismatchError as e:
        return f"float32 input after .to(float64): {first_lines(str(e), 1)}"
    except Exception as e:  # noqa: BLE001
        return f"float32 input after .to(float64): {describe(e)}"
    return f"float32 input after .to(float64) ran, out dtype {out.dtype}"


@case("call")
def call_module_load_state_dict():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module()
    m2 = Lin()
    mod.load_state_dict(m2.state_dict())
    x = torch.randn(4, 3)
    d = compare(m2(x), mod(x))
    if d:
        raise Finding("wrong", f"after load_state_dict: {d}")
    if list(mod.state_dict()) != list(m.state_dict()):
        raise Finding("wrong", "state_dict keys differ")
