"""User mistakes and unusual-but-legal programs, part 2 of 4 (ex benchmarks/sweep_edges.py);
each ``@case`` is one promise checked (see tests/conformance/edge_harness.py)."""

from __future__ import annotations

import copy
import io
from collections import OrderedDict, namedtuple

import numpy as np
import torch
import torch.nn as nn

import safetrace as st
from safetrace import Dim
from tests.conformance.edge_harness import A, Finding, Fn, Lin, Note, R, ST_ERRORS, case, check_model, compare, describe, expect_error, first_lines, run_export
from tests.conformance.edges.edges_0 import NT, One


@case("inputs")
def in_namedtuple():
    class M(nn.Module):
        def forward(self, p):
            return p.a - p.b, NT(p.b, p.a)
    run_export(M(), A(lambda: NT(torch.randn(4), torch.randn(4))),
               ds={"p": NT({0: Dim("n")}, {0: Dim("n")})},
               others=[A(lambda: NT(torch.randn(7), torch.randn(7)))],
               rejects=[A(lambda: (torch.randn(4), torch.randn(4)))])


@case("inputs")
def in_nested_dict_lists():
    class M(nn.Module):
        def forward(self, d):
            return d["a"]["b"][0] + d["a"]["b"][1] * d["c"][0]["scale"]
    def mk(n):
        return lambda: (({"a": {"b": [torch.randn(n, 2), torch.randn(n, 2)]}, "c": [{"scale": 2.0}]},), {})
    run_export(M(), mk(4), ds={"d": {"a": {"b": [{0: Dim("n")}, {0: Dim("n")}]}, "c": [{"scale": None}]}},
               others=[mk(9)])


@case("inputs")
def in_dict_key_order():
    class M(nn.Module):
        def forward(self, d):
            return d["a"] - d["b"]
    ep = st.export(M(), ({"a": torch.randn(3), "b": torch.randn(3)},))
    a, b = torch.randn(3), torch.randn(3)
    try:
        so = ep.module()({"b": b, "a": a})
    except st.InputMismatchError as e:
        return f"reordered dict keys rejected: {first_lines(str(e))}"
    d = compare(M()({"b": b, "a": a}), so)
    if d:
        raise Finding("wrong", f"dict with reordered keys: {d}")


@case("inputs")
def in_ordereddict():
    class M(nn.Module):
        def forward(self, d):
            return d["a"] - d["b"]
    run_export(M(), A(lambda: OrderedDict(a=torch.randn(3), b=torch.randn(3))))


@case("inputs")
def in_set_input():
    x = torch.randn(3)
    expect_error(lambda: st.export(Fn(lambda x, s: x * len(s)), (x, {1, 2})), st.UnsupportedInputError,
                 contains=["set"])


@case("inputs")
def in_numpy_array_input():
    expect_error(lambda: st.export(Fn(lambda x: x * 2), (np.ones(3),)), st.UnsupportedInputError,
                 contains=["ndarray"], any_of=[("torch.from_numpy", "tensor")])


@case("inputs")
def in_callable_input():
    expect_error(lambda: st.export(Fn(lambda x, f: f(x)), (torch.randn(3), torch.relu)),
                 st.UnsupportedInputError, allow_ok=True)


@case("inputs")
def in_module_input():
    # a module passed to forward: its parameters and buffers are inputs, as torch.export takes
    # them; another module of the same class and shapes is a valid input, other shapes are not
    model = Fn(lambda x, m: m(x))
    torch.manual_seed(0)
    lin, other, wider = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 4)
    before = copy.deepcopy(lin.state_dict())
    ep = st.export(model, (torch.randn(3), lin))
    if compare(lin.state_dict(), before) is not None:
        raise Finding("mutation", "export changed the module passed as an input")
    for m in (lin, other):
        x = torch.randn(3)
        if (d := compare(ep.module()(x, m), model(x, m))) is not None:
            raise Finding("wrong", f"module input: {d}")
    expect_error(lambda: ep.module()(torch.randn(3), wider), st.InputMismatchError)


@case("inputs")
def in_dtype_and_device_inputs():
    class M(nn.Module):
        def forward(self, x, dt, dev):
            return x.to(dtype=dt, device=dev)
    run_export(M(), A(R(3), torch.float64, torch.device("cpu")),
               rejects=[A(R(3), torch.float16, torch.device("cpu"))])


@case("inputs")
def in_torch_size_input():
    class M(nn.Module):
        def forward(self, x, shape):
            return x.reshape(shape)
    run_export(M(), A(R(4, 3), torch.Size([3, 4])), rejects=[A(R(4, 3), torch.Size([2, 6]))])


@case("inputs")
def in_parameter_as_input():
    p = nn.Parameter(torch.randn(3))
    run_export(One(), A(lambda: p))


@case("inputs")
def in_requires_grad():
    lin = Lin()
    mk = A(lambda: torch.randn(4, 3, generator=torch.Generator().manual_seed(1)).requires_grad_())
    run_export(lin, mk, ds={"x": {0: Dim.AUTO}})
    ep = st.export(lin, mk()[0])
    x1, x2 = mk()[0][0], mk()[0][0]
    lin(x1).sum().backward()
    out = ep.module()(x2)
    if not out.requires_grad:
        raise Note("ep.module() output does not require grad for a requires_grad input (eager does)")
    out.sum().backward()
    d = compare(x1.grad, x2.grad, "x.grad")
    if d:
        raise Finding("wrong", f"gradient through ep.module(): {d}")


@case("inputs")
def in_noncontiguous_transposed():
    run_export(Lin(), lambda: ((torch.randn(3, 5).t(),), {}), ds={"x": {0: Dim.AUTO}},
               others=[A(R(7, 3)), lambda: ((torch.randn(3, 2).t(),), {})])


@case("inputs")
def in_channels_last():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    mk = lambda: ((torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last),), {})  # noqa: E731
    run_export(conv, mk, ds=({0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},), others=[A(R(1, 3, 5, 9))])


@case("inputs")
def in_view_flatten_noncontiguous_call():
    # exported with a contiguous example; called with a non-contiguous input that eager handles
    class M(nn.Module):
        def forward(self, x):
            return x.reshape(-1) * 2
    run_export(M(), A(R(3, 4)), others=[lambda: ((torch.randn(4, 3).t(),), {})])


@case("inputs")
def in_view_on_noncontiguous_call():
    # .view fails in eager on a non-contiguous input: the exported program must not succeed silently
    class M(nn.Module):
        def forward(self, x):
            return x.view(-1) * 2
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        M()(x)
        eager_ok = True
    except RuntimeError:
        eager_ok = False
    try:
        out = ep.module()(x)
    except (RuntimeError, st.InputMismatchError) as e:
        return f"eager_ok={eager_ok}; exported raised {type(e).__name__}"
    if not eager_ok:
        raise Finding("wrong", f"eager raises on .view of a non-contiguous input, exported returns {list(out.shape)}")


@case("inputs")
def in_is_contiguous_branch():
    class M(nn.Module):
        def forward(self, x):
            if x.is_contiguous():
                return x * 2
            return x * 3
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        so = ep.module()(x)
    except st.InputMismatchError as e:
        return f"non-contiguous rejected: {first_lines(str(e))}"
    d = compare(M()(x), so)
    if d:
        raise Finding("wrong", f"branch on x.is_contiguous(): exported with contiguous, called with a "
                      f"transposed (non-contiguous) input of the same shape: {d}")


@case("inputs")
def in_stride_in_computation():
    class M(nn.Module):
        def forward(self, x):
            return x * x.stride(0)
    ep = st.export(M(), (torch.randn(3, 4),))
    x = torch.randn(4, 3).t()
    try:
        so = ep.module()(x)
    except st.InputMismatchError:
        return "rejected"
    d = compare(M()(x), so)
    if d:
        raise Finding("wrong", f"x.stride(0) in computation, called with transposed input: {d}")


@case("inputs")
def in_zero_size_dim():
    run_export(Lin(), A(R(0, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(5, 3)), A(R(1, 3))])


@case("inputs")
def in_zero_size_reduction():
    class M(nn.Module):
        def forward(self, x):
            return x.sum(0), x.mean(0), x.amax(1)
    run_export(M(), A(R(0, 3)), ds={"x": {0: Dim("n", min=0)}}, others=[A(R(4, 3))])


@case("inputs")
def in_zero_d_tensor():
    class M(nn.Module):
        def forward(self, x, s):
            return x * s + s
    run_export(M(), A(R(4, 3), lambda: torch.tensor(2.5)), ds={"x": {0: Dim.AUTO}, "s": ()},
               others=[A(R(7, 3), lambda: torch.tensor(-1.0))], rejects=[A(R(4, 3), lambda: torch.tensor([2.5]))])


@case("inputs")
def in_dtypes():
    class M(nn.Module):
        def forward(self, a, b, c, d, e, f):
            return a // 2 + (a / 2).sum(), b & (a > 0), c * 2, d.float().sum(), e * e.conj(), f * 3
    mk = A(R(4, dtype=torch.int64), R(4, dtype=torch.bool), R(4, dtype=torch.float16),
           R(4, dtype=torch.bfloat16), R(4, dtype=torch.complex64), R(4, dtype=torch.int8))
    run_export(M(), mk, ds={k: {0: Dim("n")} for k in "abcdef"},
               others=[A(R(9, dtype=torch.int64), R(9, dtype=torch.bool), R(9, dtype=torch.float16),
                         R(9, dtype=torch.bfloat16), R(9, dtype=torch.complex64), R(9, dtype=torch.int8))],
               rejects=[A(R(4, dtype=torch.int32), R(4, dtype=torch.bool), R(4, dtype=torch.float16),
                          R(4, dtype=torch.bfloat16), R(4, dtype=torch.complex64), R(4, dtype=torch.int8))])


@case("inputs")
def in_uint8_and_float64_promotion():
    class M(nn.Module):
        def forward(self, x, y):
            return x + y, x * 1.5, y - 3
    run_export(M(), A(R(4, dtype=torch.uint8), R(4, dtype=torch.float64)))


@case("inputs")
def in_sparse_tensor():
    x = torch.randn(3, 3).to_sparse()
    expect_error(lambda: st.export(One(), (x,)), st.UnsupportedInputError, contains=["sparse"], allow_ok=True)


@case("inputs")
def in_meta_tensor():
    x = torch.randn(3, 3, device="meta")
    msg = expect_error(lambda: st.export(One(), (x,)), allow_ok=True)
    return msg if isinstance(msg, str) else "accepted a meta-device example"


@case("inputs")
def in_aliased_inputs_mutation():
    class M(nn.Module):
        def forward(self, x, y):
            x.add_(1)
            return y * 2
    x = torch.zeros(3)
    expect_error(lambda: st.export(M(), (x, x)), allow_ok=True)
    if not torch.equal(x, torch.zeros(3)):
        raise Finding("mutation", f"export mutated the example input: {x.tolist()}")


@case("inputs")
def in_args_not_tuple():
    x = torch.randn(3)
    expect_error(lambda: st.export(One(), x), st.UnsupportedInputError, contains=["tuple", "(x,)"])


@case("inputs")
def in_wrong_arg_count():
    x = torch.randn(3)
    expect_error(lambda: st.export(One(), (x, x)), any_of=[("forward",), ("argument", "positional input")],
                 user_error_ok=True)


# =========================================================================================
# 3. training mode, state, side effects
# =========================================================================================
@case("state")
def tr_dropout_training():
    m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).train()
    x = torch.randn(64, 8)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        if not m.training:
            raise Finding("mutation", "export flipped model.training")
        return f"refused clearly: {describe(e)}"
    if not m.training or not m[1].training:
        raise Finding("mutation", "export flipped model.training")
    o1, o2 = ep.module()(x), ep.module()(x)
    lin = m[0](x)
    zeros = (o1 == 0).float().mean().item()
    if torch.allclose(o1, lin):
        raise Finding("wrong", "train-mode dropout dropped from the graph (output == linear output)")
    if torch.equal(o1, o2):
        raise Finding("wrong", "train-mode dropout mask baked in (two calls give identical output)")
    kept = o1 != 0
    if not torch.allclose(o1[kept], 2 * lin[kept], atol=1e-5):
        raise Finding("wrong", "dropout scale differs from 1/(1-p)")
    return f"dropout kept in the graph (zeros {zeros:.2f})"


@case("state")
def tr_batchnorm_training():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    run_export(m, A(R(8, 4)), ds=({0: Dim("b", min=2)},), others=[A(R(5, 4)), A(R(8, 4))])
    if not m.training:
        raise Finding("mutation", "export flipped training")


@case("state")
def tr_batchnorm_eval():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    with torch.no_grad():
        m[1].running_mean.uniform_()
        m[1].running_var.uniform_(0.5, 2)
    run_export(m, A(R(2, 3, 8, 8)), ds=({0: Dim.AUTO},), others=[A(R(1, 3, 8, 8))])


@case("state")
def tr_training_branch_on_flag():
    class M(nn.Module):
        def forward(self, x):
            return x * (2 if self.training else 3)
    m = M().train()
    ep = st.export(m, (torch.randn(3),))
    if not m.training:
        raise Finding("mutation", "export flipped training")
    m.eval()
    x = torch.randn(3)
    mod = ep.module()
    d = compare(x * 2, mod(x))
    if d:
        raise Finding("wrong", f"program exported in training mode: {d}")


@case("state")
def se_print():
    class M(nn.Module):
        def forward(self, x):
            print("shape is", x.shape, file=io.StringIO())
            return x + 1
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(6, 3))])


@case("state")
def se_append_to_list_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.log = []

        def forward(self, x):
            self.log.append(x.shape[0])
            return x + 1
    m = M()
    run_export(m, A(R(4, 3)))


@case("state")
def se_counter_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x + self.calls
    m = M()
    # the program cannot carry a Python int: x + 1 on every call where eager adds 2 on its
    # second (torch.export's answer); refused, pointing at a buffer
    expect_error(lambda: st.export(m, *A(R(4, 3))()), st.UnsupportedOpError,
                 contains=["self.calls", "register_buffer"], what="counter read by the graph")
    if m.calls != 0:
        raise Finding("mutation", f"original model's attribute changed: calls={m.calls}")

    class Logged(M):
        def forward(self, x):
            self.calls += 1  # read by nothing the graph computes
            return x + 1
    run_export(Logged(), A(R(4, 3)))


@case("state")
def se_cache_tensor_on_self():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = None

        def forward(self, x):
            y = x * 2
            self.cache = y
            return y + 1
    m = M()
    x = torch.randn(4, 3)
    st.export(m, (x,))
    if m.cache is not None:
        try:
            m.cache + 1
            real = "usable"
        except Exception as e:  # noqa: BLE001
            real = f"unusable: {describe(e)}"
        raise Finding("mutation", f"export left model.cache = {type(m.cache).__name__} "
                      f"(shape {tuple(m.cache.shape)}, {real}) on the user's model")


@case("state")
def se_register_buffer_in_forward():
    class M(nn.Module):
        def forward(self, x):
            if not hasattr(self, "seen"):
                self.register_buffer("seen", torch.zeros(()))
            return x + 1
    m = M()
    st.export(m, (torch.randn(3),))
    if hasattr(m, "seen") or "seen" in m._buffers:
        raise Finding("mutation", f"export left a buffer 'seen' ({type(m.seen).__name__}) registered on the model")


@case("state")
def se_global_list():
    LOG = []

    class M(nn.Module):
        def forward(self, x):
            LOG.append(x)
            return x + 1
    st.export(M(), (torch.randn(3),))
    if LOG:
        t = LOG[0]
        raise Note(f"a traced value escaped to a global list: {type(t).__name__} (same as eager tracers)")


@case("state")
def se_buffer_inplace_counter():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros((), dtype=torch.int64))
            self.register_buffer("acc", torch.zeros(3))

        def forward(self, x):
            self.count += 1
            self.acc.add_(x.sum(0))
            return x * self.count + self.acc
    m = M()
    ep = run_export(m, A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(6, 3)), A(R(2, 3))])
    if int(m.count) != 0:
        raise Finding("mutation", f"original model's buffer changed: count={int(m.count)}")
    if list(ep.graph_signature.buffers_to_mutate.values() if isinstance(ep.graph_signature.buffers_to_mutate, dict)
            else ep.graph_signature.buffers_to_mutate) == []:
        raise Finding("wrong", "buffers_to_mutate empty")


@case("state")
def se_buffer_reassign():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("h", torch.zeros(3))

        def forward(self, x):
            self.h = self.h + x.sum(0)
            return x * self.h
    m = M()
    run_export(m, A(R(4, 3)), others=[A(R(4, 3, seed=1))])


@case("state")
def se_param_inplace():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            with torch.no_grad():
                self.w.mul_(2)
            return x * self.w
    m = M()
    x = torch.randn(3)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        check_model(m, None, "")
        if not torch.equal(m.w.detach(), torch.ones(3)):
            raise Finding("mutation", "parameter changed by a refused export")
        return f"refused: {describe(e)}"
    if not torch.equal(m.w.detach(), torch.ones(3)):
        raise Finding("mutation", f"export mutated the parameter: {m.w.tolist()}")
    ref = copy.deepcopy(m)
    so = ep.module()(x)
    d = compare(ref(x), so)
    if not torch.equal(m.w.detach(), torch.ones(3)):
        raise Finding("mutation", f"ep.module() mutated the model's parameter (shared): {m.w.tolist()}")
    if d:
        raise Finding("wrong", d)


@case("state")
def se_input_add_():
    class M(nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(2, 3))])


@case("state")
def se_input_setitem():
    class M(nn.Module):
        def forward(self, x):
            x[0] = 0
            return x.sum(0)
    run_export(M(), A(R(4, 3)), ds={"x": {0: Dim.AUTO}}, others=[A(R(2, 3))])


@case("state")
def se_input_mutation_returned():
    class M(nn.Module):
        def forward(self, x):
            return x.mul_(3)
    run_export(M(), A(R(4, 3)))


@case("state")
def se_no_grad_inside():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            with torch.no_grad():
                y = self.lin(x)
            return y + x
    m = M()
    x = torch.randn(2, 3, requires_grad=True)
    ep = run_export(m, lambda: ((x.detach().clone().requires_grad_(),), {}))
    out_e, out_s = m(x), ep.module()(x.detach().clone().requires_grad_())
    if out_e.requires_grad != out_s.requires_grad:
        raise Note(f"requires_grad of output: eager {out_e.requires_grad}, exported {out_s.requires_grad}")


@case("state")
def se_enable_grad_inside():
    class M(nn.Module):
        def forward(self, x):
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                y = (x ** 2).sum()
            return y
    msg = expect_error(lambda: run_export(M(), A(R(3))), allow_ok=True)
    if isinstance(msg, str):
        return msg
    with torch.no_grad():
        run_export(M(), A(R(3)))
