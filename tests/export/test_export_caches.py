"""What an export caches between exports never outlives what it was computed from (issue
20, per-op cost): the model snapshot, the user-code rewrite and the session's table are
read again when the model, its code or its attributes change between two exports, and an
export still leaves the model exactly as it found it."""

from __future__ import annotations

import math
import os
import pickle

import pytest
import torch

import safetrace as st


class _Rewires(torch.nn.Module):
    """A forward that deletes, re-adds and reorders its attributes and state."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))
        self.factor = 3
        self.tag = "a"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.factor
        del self.factor              # removed ...
        # ... and added back after another one (with its value: a changed value the graph
        # reads is refused, tests/export/test_python_state.py)
        self.tag, self.factor = "b", f
        s = self.scale
        del self._buffers["scale"]
        self.register_buffer("scale", s * 1)  # a new tensor under the same name
        self.lin.weight = torch.nn.Parameter(self.lin.weight.detach() * 1)
        self.train(not self.training)
        return self.lin(x) * s * f


def test_export_undoes_deleted_readded_and_reordered_attributes() -> None:
    m = _Rewires().eval()
    before = dict(m.__dict__)
    keys = list(m.__dict__)
    buffers, params = dict(m._buffers), dict(m.lin._parameters)
    ep = st.export(m, (torch.randn(3, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=32)}})
    assert set(m.__dict__) == set(keys)
    assert all(m.__dict__[k] is v for k, v in before.items())
    assert m.factor == 3 and m.tag == "a" and not m.training
    assert m._buffers == buffers and all(m._buffers[k] is v for k, v in buffers.items())
    assert all(m.lin._parameters[k] is v for k, v in params.items())
    for n in (1, 5):
        x = torch.randn(n, 4)
        expected = torch.nn.functional.linear(x, m.lin.weight, m.lin.bias) * 2.0 * 3
        torch.testing.assert_close(ep.module()(x), expected)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(33, 4))


class _Sized(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[: max(1, len(x) - 1)]


def _first_rows(self: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return x[: int(math.sqrt(len(x)))]


def _check(ep: st.ExportedProgram, rows: callable) -> None:
    for n in (1, 4, 9, 16):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), x[:rows(n)])


def test_a_forward_replaced_between_exports_is_exported_as_it_is_now() -> None:
    n = st.Dim("n", min=1, max=64)
    m = _Sized()
    spec = {"x": {0: n}}
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: max(1, k - 1))
    m.forward = _first_rows.__get__(m)  # an instance attribute now
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec),
           lambda k: int(math.sqrt(k)))
    del m.forward
    _Sized.forward, old = _first_rows, _Sized.forward  # the class's method replaced
    try:
        _check(st.export(_Sized(), (torch.randn(6, 3),), dynamic_shapes=spec),
               lambda k: int(math.sqrt(k)))
    finally:
        _Sized.forward = old
    _check(st.export(_Sized(), (torch.randn(6, 3),), dynamic_shapes=spec),
           lambda k: max(1, k - 1))


def test_code_of_a_forward_changed_between_exports_is_read_again() -> None:
    n = st.Dim("n", min=1, max=64)

    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[: max(1, len(x) - 1)]

    m = M()
    spec = {"x": {0: n}}
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: max(1, k - 1))
    M.forward.__code__ = _first_rows.__code__
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec),
           lambda k: int(math.sqrt(k)))


def test_a_helper_stored_on_the_model_after_an_export_is_rewritten() -> None:
    n = st.Dim("n", min=1, max=64)

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pick = lambda x: x

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.pick(x)

    m = M()
    spec = {"x": {0: n}}
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: k)
    m.pick = lambda x: x[: max(1, len(x) - 1)]  # calls len() and max() of a size
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: max(1, k - 1))
    helpers = [lambda x: x]
    m.pick = lambda x: helpers[0](x)
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: k)
    helpers[0] = lambda x: x[: int(math.sqrt(len(x)))]  # a container's content replaced
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec),
           lambda k: int(math.sqrt(k)))



class _Picks(torch.nn.Module):
    """A submodule whose attributes are plain values (found holding no code, kept so)."""

    def __init__(self) -> None:
        super().__init__()
        self.pick, self.k = None, 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pick = getattr(self, "pick", None)
        return x if pick is None else pick(x)


def test_a_plain_submodule_given_a_helper_or_a_hook_after_an_export_is_scanned_again() -> None:
    n = st.Dim("n", min=1, max=64)
    m = torch.nn.Sequential(_Picks())
    spec = {"input": {0: n}}
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: k)
    m[0].pick = lambda x: x[: max(1, len(x) - 1)]  # the same keys, another value
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: max(1, k - 1))
    m[0].pick = None
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: k)
    del m[0].pick  # as many attributes, one key replaced by another
    m[0].other = 1
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: k)
    del m[0].other
    m[0].pick = lambda x: x[: int(math.sqrt(len(x)))]
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec),
           lambda k: int(math.sqrt(k)))
    m[0].pick = None
    m[0].register_forward_hook(lambda mod, args, out: out[: max(1, len(out) - 1)])
    _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), lambda k: max(1, k - 1))

def test_a_model_of_plain_modules_given_code_after_two_exports_is_scanned_again() -> None:
    # two exports first each time: the second skips the scan of modules found holding
    # no code (trace/usercode.py's _PLAIN), which must see each change
    n = st.Dim("n", min=1, max=64)
    m = torch.nn.Sequential(torch.nn.Sequential(_Picks()), torch.nn.Identity())
    spec = {"input": {0: n}}

    def twice(rows: callable) -> None:
        for _ in range(2):
            _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), rows)

    twice(lambda k: k)
    m[0][0].pick = lambda x: x[: max(1, len(x) - 1)]  # a nested module's value replaced
    twice(lambda k: max(1, k - 1))
    m[0][0].pick = None
    twice(lambda k: k)
    m[1].pick = lambda x: x  # an attribute added (read by nothing) ...
    twice(lambda k: k)
    del m[1].pick
    m[0][0].k = lambda x: x  # ... and as many attributes, a value now a function
    m[0][0].pick = lambda x: x[: int(math.sqrt(len(x)))]
    twice(lambda k: int(math.sqrt(k)))
    m[0][0].pick, m[0][0].k = None, 2
    twice(lambda k: k)
    handle = m[1].register_forward_hook(lambda mod, args, out: out[: max(1, len(out) - 1)])
    twice(lambda k: max(1, k - 1))  # a hook on a module the scan had found plain
    handle.remove()
    twice(lambda k: k)


class _Stateful(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.lin(x) * self.scale
        extra = getattr(self, "extra", None)
        return out if extra is None else out + extra


def test_the_state_rows_kept_from_two_exports_follow_the_models_tables() -> None:
    # two exports first each time: what is kept between exports (the state's names,
    # exporter/state_rows.py; placeholder runs, trace/graph.py) must follow each change
    m, x = _Stateful(), torch.randn(2, 3)

    def twice() -> st.ExportedProgram:
        for _ in range(2):
            ep = st.export(m, (x,))
            torch.testing.assert_close(ep.module()(x), m(x))
        return ep

    assert sorted(twice().state_dict) == ["lin.bias", "lin.weight", "scale"]
    m.lin.weight = torch.nn.Parameter(torch.randn(3, 3))  # the same key, another tensor
    assert twice().state_dict["lin.weight"] is m.lin.weight
    m.lin.bias.data = torch.randn(1)  # the same tensor, another shape
    assert twice().state_dict["lin.bias"].shape == (1,)
    m.register_buffer("extra", torch.ones(3), persistent=False)  # a non-persistent key
    ep = twice()
    assert "extra" not in ep.state_dict and ep.graph_signature.non_persistent_buffers == [
        "extra"]
    m._non_persistent_buffers_set.discard("extra")  # persistent now, nothing else changed
    assert "extra" in twice().state_dict
    m.lin.bias = None  # a value None
    assert "lin.bias" not in twice().state_dict
    m.register_buffer("extra", m.scale)  # one tensor under two names
    ep = twice()
    assert sorted(ep.state_dict) == ["lin.weight", "scale"]  # (lifted once)
    assert [s.target for s in ep.graph_signature.input_specs if s.kind == "buffer"] \
        == ["scale"]
    del m.extra
    m.lin.register_buffer("extra", torch.ones(3))  # a key moved to another module
    assert sorted(twice().state_dict) == ["lin.extra", "lin.weight", "scale"]


class _Gated(torch.nn.Module):
    """A forward that signals `entered` and waits for `go` (``self.gate()``) before it goes on."""

    def __init__(self, entered, go) -> None:
        super().__init__()
        self.entered, self.go = entered, go

    def gate(self) -> None:
        self.entered.set()
        assert self.go.wait(timeout=120)


class _Holds(_Gated):
    """Then routes through what a session installs (len/max of a size, torch._check,
    torch.cond, broadcast_shapes)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.gate()
        k = max(1, len(x) - 1)
        torch._check(x.shape[0] >= 1)
        shape = torch.broadcast_shapes(x.shape, (1, 3))
        y = torch.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, (x.expand(shape),))
        return y[:k]


def test_an_export_outliving_the_one_that_installed_the_table_keeps_it() -> None:
    """Export A installs the session's table alone (in one pass); export B enters on
    another thread while A runs and goes on tracing after A has ended: B still traces
    with everything installed, and once both end the process has torch's own functions."""
    import threading

    # (eager torch.cond first: importing dynamo wraps torch.manual_seed for good)
    torch.cond(torch.tensor(True), lambda a: a + 1, lambda a: a - 1, (torch.ones(1),))
    originals = (torch.cond, torch._check, torch.broadcast_shapes, torch.manual_seed)
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    box: dict = {}
    spec = {"x": {0: st.Dim("n", min=1, max=64)}}

    def run_b() -> None:
        assert a_in.wait(timeout=120)
        try:
            box["b"] = st.export(_Holds(b_in, a_done), (torch.randn(5, 3),),
                                 dynamic_shapes=spec)
        except Exception as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    t = threading.Thread(target=run_b)
    t.start()
    go_a = threading.Event()
    a = _Holds(a_in, go_a)
    threading.Thread(target=lambda: (b_in.wait(timeout=120), go_a.set())).start()
    ep_a = st.export(a, (torch.randn(5, 3),), dynamic_shapes=spec)
    a_done.set()
    t.join(timeout=300)
    assert "error" not in box, repr(box.get("error"))
    now = (torch.cond, torch._check, torch.broadcast_shapes, torch.manual_seed)
    assert [a is b for a, b in zip(now, originals)] == [True] * 4, now
    for ep in (ep_a, box["b"]):
        for n, sign in ((1, 1.0), (4, -1.0), (9, 1.0)):
            x = torch.full((n, 3), sign)
            expected = (x + sign)[: max(1, n - 1)]
            torch.testing.assert_close(ep.module()(x), expected)


class _Inner(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Inner()
        self.head = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.inner(x) + self.inner(x))


def test_module_stack_of_each_node_and_nn_module_call_left_alone() -> None:
    """Each node names the modules it was called in (a second call numbered), and
    nn.Module's call is torch's own afterwards."""
    call = torch.nn.Module.__call__
    m = _Outer().eval()
    ep = st.export(m, (torch.randn(4, 3),), dynamic_shapes={"x": {0: st.Dim("n", max=16)}})
    assert torch.nn.Module.__call__ is call
    stacks = [[fqn for fqn, _ in n.meta["nn_module_stack"].values()]
              for n in ep.graph.nodes if n.op == "call_function" and "linear" in n.name]
    assert stacks == [["inner", "inner.lin"], ["inner", "inner.lin"], ["head"]]
    keys = [list(n.meta["nn_module_stack"]) for n in ep.graph.nodes
            if n.op == "call_function" and "linear" in n.name]
    assert keys[1] == ["L__self___inner@1", "L__self___inner_lin@1"]
    for n in (1, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), m(x))


class _Lengths(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[: len(x) - 1]


def test_a_builtin_shadowed_in_the_module_after_an_export_is_the_users_again() -> None:
    """The user's code calls the builtins through the rewrite only while its module leaves
    them alone: a module-level ``len`` defined between two exports is the one called."""
    import builtins

    calls: list = []

    def own_len(v: object) -> int:
        calls.append(type(v).__name__)
        return builtins.len(v)

    spec = {"x": {0: st.Dim("n", min=2, max=64)}}
    ep = st.export(_Lengths(), (torch.randn(6, 3),), dynamic_shapes=spec)
    assert calls == []
    globals()["len"] = own_len
    try:
        with pytest.raises(st.ConstraintViolationError):  # len() of a proxy: an int
            st.export(_Lengths(), (torch.randn(6, 3),), dynamic_shapes=spec)
        assert calls and set(calls) == {"Proxy"}
    finally:
        del globals()["len"]
    calls.clear()
    ep2 = st.export(_Lengths(), (torch.randn(6, 3),), dynamic_shapes=spec)
    assert calls == []
    for n in (2, 9):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), x[: n - 1])
        torch.testing.assert_close(ep2.module()(x), x[: n - 1])


class _ReadsSeed(_Gated):
    """Then reads the generator's seed (refused while exporting)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.gate()
        return x * torch.initial_seed()


def test_an_export_entering_during_another_keeps_the_rng_refusal_after_it_ends() -> None:
    """Export B enters while export A holds the session's table and reads the seed after A
    has ended: still refused (B counts the generator's replacements A installed, so A's
    leaving does not restore them under B)."""
    import threading

    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    box: dict = {}

    def run_b() -> None:
        assert a_in.wait(timeout=120)
        try:
            st.export(_ReadsSeed(b_in, a_done), (torch.randn(2, 3),))
            box["b"] = "exported"
        except Exception as exc:  # noqa: BLE001 - checked below
            box["b"] = exc

    t = threading.Thread(target=run_b)
    t.start()
    go_a = threading.Event()
    threading.Thread(target=lambda: (b_in.wait(timeout=120), go_a.set())).start()
    st.export(_Holds(a_in, go_a), (torch.randn(5, 3),))
    a_done.set()
    t.join(timeout=300)
    assert isinstance(box["b"], st.UnsupportedOpError), box["b"]
    assert "torch.initial_seed()" in str(box["b"])
    assert torch.initial_seed is not None and torch.initial_seed() == torch.initial_seed()


def _passthrough(f):
    import functools

    @functools.wraps(f)
    def wrapper(*a, **k):
        return f(*a, **k)
    return wrapper


def test_two_decorated_forwards_keep_their_own_signatures() -> None:
    # every wrapper a decorator makes shares one code object; each follows its own
    # __wrapped__ to its own argument names
    class Add(torch.nn.Module):
        @_passthrough
        def forward(self, x, y):
            return x + y

    class MatMul(torch.nn.Module):
        @_passthrough
        def forward(self, p, q):
            return p @ q

    a = torch.randn(3, 4)
    n = st.Dim("n", max=64)
    st.export(Add(), (a, a), dynamic_shapes={"x": {0: n}, "y": {0: n}})
    ep = st.export(MatMul(), (a, a.T), dynamic_shapes={"p": {0: st.Dim("m", max=64)},
                                                       "q": None})
    for rows in (0, 1, 7):
        p = torch.randn(rows, 4)
        torch.testing.assert_close(ep.module()(p, a.T), p @ a.T)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(65, 4), a.T)


class _Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_static_exports_share_their_contract_and_checks_and_refuse_their_own() -> None:
    m = _Scale()
    x = torch.randn(3, 4)
    a, b = st.export(m, (x,)), st.export(m, (x,))
    assert a.contract is b.contract  # (static inputs only: one contract, built once)
    torch.testing.assert_close(a.module()(x), x * 2)
    assert b.leaf_checks() is a.leaf_checks()
    other = {"size": st.export(m, (torch.randn(5, 4),)),
             "dtype": st.export(m, (x.double(),)),
             "dynamic": st.export(m, (x,), dynamic_shapes={"x": {0: st.Dim("n")}})}
    assert all(ep.contract is not a.contract for ep in other.values())
    for bad in (torch.randn(5, 4), x.double(), torch.randn(3, 5)):
        with pytest.raises(st.InputMismatchError):
            b.module()(bad)
    with pytest.raises(st.InputMismatchError):
        other["size"].module()(x)
    with pytest.raises(st.InputMismatchError):
        other["dtype"].module()(x)
    for n in (0, 1, 6):
        y = torch.randn(n, 4)
        torch.testing.assert_close(other["dynamic"].module()(y), y * 2)
    assert other["dynamic"].leaf_checks() is not a.leaf_checks()
    back = pickle.loads(pickle.dumps(a.contract))  # (the kept checks are not pickled)
    assert back == a.contract and "_derived" not in back.__dict__


class _FlipsInner(torch.nn.Module):
    """Changes only a submodule's training flag and one buffer's tensor (same keys)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inner.training = not self.inner.training
        self.inner._buffers["running_mean"] = self.inner.running_mean + 1
        return x + 1


def test_a_change_of_one_flag_or_buffer_in_a_submodule_is_undone() -> None:
    m = _FlipsInner().eval()
    mean = m.inner.running_mean
    ep = st.export(m, (torch.randn(2, 4),))
    assert m.inner.running_mean is mean and not m.inner.training and not m.training
    assert [s.target for s in ep.graph_signature.output_specs
            if s.kind == "buffer_mutation"] == ["inner.running_mean"]


class _SeedPlusX(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.initial_seed() % 7


def test_the_session_table_follows_a_torch_function_replaced_and_put_back() -> None:
    """The session keeps its table of torch's entry points between exports while what it
    read is the same objects.  A user's own ``torch.initial_seed`` is the user's code (left
    alone: traced as Python), and torch's, put back, is routed again (the read refused);
    a table kept from an export made before either change would route the user's
    function, or let torch's seed become a constant of the graph."""
    x = torch.randn(2, 3)
    st.export(torch.nn.Linear(3, 3), (x,))  # (a table made, safetrace's modules loaded)
    real = torch.initial_seed
    torch.initial_seed = lambda: 3  # the user's own function of that name
    try:
        ep = st.export(_SeedPlusX(), (x,))
    finally:
        torch.initial_seed = real
    assert torch.equal(ep.module()(x), x + 3)
    with pytest.raises(st.UnsupportedOpError, match="initial_seed"):
        st.export(_SeedPlusX(), (x,))
    assert torch.initial_seed is real


def test_a_users_broadcast_shapes_is_the_users_while_exporting() -> None:
    """A user's own ``torch.broadcast_shapes`` is left in place (traced as Python, as eager
    runs it); torch's, put back, is the tracer's rule again."""
    x = torch.randn(2, 3)
    st.export(torch.nn.Linear(3, 3), (x,))
    real = torch.broadcast_shapes
    torch.broadcast_shapes = lambda *shapes: (4, 3)  # the user's own, of another answer
    try:
        ep = st.export(lambda x: x.new_zeros(torch.broadcast_shapes(x.shape, (3,))), (x,))
    finally:
        torch.broadcast_shapes = real
    assert ep.module()(x).shape == (4, 3)  # (torch's answer: (2, 3))
    ep = st.export(lambda x: x.new_zeros(torch.broadcast_shapes(x.shape, (3,))), (x,))
    assert ep.module()(x).shape == (2, 3) and torch.broadcast_shapes is real


_REPLACED_AT_FIRST_EXPORT = """
import torch, safetrace as st
class SeedPlusX(torch.nn.Module):
    def forward(self, x):
        return x + torch.initial_seed() % 7
x = torch.randn(2, 3)
real = torch.initial_seed
torch.initial_seed = lambda: 3  # in place while the first export loads safetrace's tracer
try:
    ep = st.export(SeedPlusX(), (x,))
finally:
    torch.initial_seed = real
assert torch.equal(ep.module()(x), x + 3)  # the user's own function, traced as Python
try:
    st.export(SeedPlusX(), (x,))
except st.UnsupportedOpError as err:
    assert "torch.initial_seed()" in str(err), err
    print("refused")
assert torch.initial_seed is real and torch.initial_seed() == real()
"""


@pytest.mark.slow  # (a fresh interpreter: torch's import, ~4 s)
def test_a_torch_function_replaced_at_the_first_export_is_not_taken_for_torchs() -> None:
    """safetrace knows torch's own generator functions by their code, not by the value in
    place when its tracer is first imported: a user's function there at the first export
    is the user's (traced), and torch's, put back, is refused as always (else the seed
    would become a constant of the graph)."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _REPLACED_AT_FIRST_EXPORT], cwd=root,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused"], out.stdout


_CHECK_REPLACED_AT_IMPORT = """
import threading, torch
real_check, real_vmap = torch._check, torch.vmap
import safetrace as st
# a user's functions in place while the first export loads safetrace's tracer
torch._check = lambda cond, message=None: None
torch.vmap = lambda f, *a, **k: f
st.export(torch.nn.Linear(3, 3), (torch.randn(2, 3),))
torch._check, torch.vmap = real_check, real_vmap  # ... and torch's put back
seen = []

def bystander():
    try:
        torch._check(False)  # torch's own on a thread that is not exporting: raises
        seen.append("no error")
    except RuntimeError:
        seen.append("RuntimeError")
    seen.append(torch.vmap(torch.sum)(torch.ones(2, 3)).shape == (2,))

class M(torch.nn.Module):
    def forward(self, x):
        t = threading.Thread(target=bystander)
        t.start()
        t.join()
        torch._check(x.shape[0] != 3)  # torch's, routed: a check of the program
        return x * 2

ep = st.export(M(), (torch.randn(4, 3),), dynamic_shapes=({0: st.Dim("b")},),
               prefer_deferred_runtime_asserts_over_guards=True)
assert seen == ["RuntimeError", True], seen
try:
    ep.module()(torch.randn(3, 3))
    print("accepted")
except st.InputMismatchError:
    print("refused")
"""


@pytest.mark.slow  # (a fresh interpreter: torch's import, ~4 s)
def test_check_and_vmap_replaced_at_the_first_export_are_not_taken_for_torchs() -> None:
    """torch._check and torch.vmap are known by their code too (trace/torch_own.py): a
    user's function in place when the first export loads the tracer is never what a
    bystander thread gets for torch's once torch's is back, and torch's check is still
    a check of the program."""
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _CHECK_REPLACED_AT_IMPORT], cwd=root,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "refused"


class _Times2(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class _Plus1(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


class _Tree(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = _Times2()
        self.seq = torch.nn.Sequential(torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(self.a(x))


def _stacks(ep: st.ExportedProgram) -> list:
    return [list((n.meta.get("nn_module_stack") or {}).values()) for n in ep.graph.nodes
            if n.op == "call_function"]


def test_what_is_kept_of_the_module_tree_follows_a_submodule_replaced_between_exports() -> None:
    """The module tree's facts kept between exports (pytree.walk_of: nn_module_stack keys,
    paths and class names, whether a submodule is a torch.compile wrapper, the user's
    module namespaces) are made again when a submodule is replaced by one of another class,
    moved, held twice by a container, or wrapped by torch.compile."""
    m, x = _Tree().eval(), torch.randn(3, 4)
    assert _stacks(st.export(m, (x,)))[0] == [("a", f"{__name__}._Times2")]
    m.a = _Plus1()  # another class at the same path
    ep = st.export(m, (x,))
    assert _stacks(ep)[0] == [("a", f"{__name__}._Plus1")]
    torch.testing.assert_close(ep.module()(x), torch.relu(x + 1))
    relu = m.seq[0]
    m.seq.append(relu)  # one module held twice by the container: its second place
    ep = st.export(m, (x,))
    assert [s[-1][0] for s in _stacks(ep)] == ["a", "seq.0", "seq.1"]
    m.a = torch.compile(_Times2())  # a torch.compile wrapper: traced as what it wraps
    ep = st.export(m, (x,))
    torch.testing.assert_close(ep.module()(x), torch.relu(x * 2))
    assert isinstance(m.a, torch.nn.Module) and type(m.a).__name__ == "OptimizedModule"
    assert _stacks(st.export(_Tree().eval(), (x,)))[0] == [("a", f"{__name__}._Times2")]


def test_an_export_after_load_state_dict_reads_the_new_buffers() -> None:
    # (perf20's find: the program-owned copy of a buffer was made once per model tensor, so
    # an export after an in-place change of the model read the old values: off by 5.0)
    m, x = torch.nn.BatchNorm1d(3).eval(), torch.randn(2, 3)
    first = st.export(m, (x,)).module()
    first(x)  # (the program takes its own copy of the buffers)
    m.load_state_dict({**m.state_dict(), "running_mean": torch.full((3,), 5.0)})
    torch.testing.assert_close(st.export(m, (x,)).module()(x), m(x))
    torch.testing.assert_close(first(x), m(x))  # (programs of one model share its buffers)


class _Counts(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.zeros(1))

    def forward(self, x):
        self.n.add_(1)
        return x * self.n


def test_a_new_export_keeps_the_writes_of_the_models_earlier_programs() -> None:
    m, x = _Counts(), torch.ones(2)
    first = st.export(m, (x,)).module()
    first(x), first(x)  # (the programs' shared buffer: 2, the model's still 0)
    second = st.export(m, (x,)).module()
    torch.testing.assert_close(second(x), x * 3)  # as torch's programs of one model
    torch.testing.assert_close(first(x), x * 4)
    assert m.n.item() == 0  # export and its programs never write the model


class _Listed(torch.nn.Module):
    """A submodule holding a list of numbers: found holding no code, but a list may hold
    some later, so it is scanned again at each export."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes = [1, 2]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_plain_and_rescanned_modules_given_a_hook_after_two_exports_are_scanned_again() -> None:
    # the second export of each pair checks the modules kept plain in one loop
    # (trace/usercode.py's _plain_rows) and scans the others again
    n = st.Dim("n", min=1, max=64)
    m = torch.nn.Sequential(_Listed(), torch.nn.Identity())
    spec = {"input": {0: n}}

    def twice(rows: callable) -> None:
        for _ in range(2):
            _check(st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec), rows)

    twice(lambda k: k)
    handle = m[1].register_forward_hook(lambda mod, args, out: out[: max(1, len(out) - 1)])
    twice(lambda k: max(1, k - 1))  # on a module kept plain
    handle.remove()
    twice(lambda k: k)
    handle = m[0].register_forward_hook(lambda mod, args, out: out[: int(math.sqrt(len(out)))])
    twice(lambda k: int(math.sqrt(k)))  # on a module scanned again
    handle.remove()
    twice(lambda k: k)


_HELPER_MODULE = '''
import torch


def keep_all(x):
    return x


HELP = keep_all


class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return HELP(self.lin(x))
'''


def test_a_function_added_to_a_submodules_module_between_exports_is_rewritten(
        tmp_path, monkeypatch) -> None:
    """What the user code of a model reaches is kept with its walk (the classes of its
    modules, the closure of their defining modules) while each module defining them gives
    the answer it gave: a function added to a submodule's module after an export (and made
    the one its forward calls) is found and rewritten by the next export, its ``len()``/
    ``max()`` of a size kept symbolic."""
    (tmp_path / "st_helper_module.py").write_text(_HELPER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import st_helper_module as mod

    m = torch.nn.Sequential(mod.Sub()).eval()
    spec = {"input": {0: st.Dim("n", min=1, max=64)}}
    for _ in range(2):  # (the second export: everything from the caches)
        ep = st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec)
        for k in (1, 4, 9):
            x = torch.randn(k, 3)
            torch.testing.assert_close(ep.module()(x), m(x))
    exec("def drop_last(x):\n    return x[: max(1, len(x) - 1)]\n", vars(mod))
    mod.HELP = mod.drop_last
    ep = st.export(m, (torch.randn(6, 3),), dynamic_shapes=spec)
    for k in (1, 4, 9):
        x = torch.randn(k, 3)
        torch.testing.assert_close(ep.module()(x), m(x))
        assert len(m(x)) == max(1, k - 1)


class _Chain(torch.nn.Module):
    """Runs its children in order, whatever their names (None children skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = _Times2()
        self.seq = torch.nn.Sequential(_Plus1())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for child in self.children():
            x = child(x)
        return x


def test_the_module_walk_kept_between_exports_follows_renamed_moved_and_none_children() -> None:
    """The module walk is made again from the kept one's paths while each module's children
    keep their names (pytree.walk_of): a child renamed, set to None, moved into another
    container, or of another class since gives the paths and program of the model as it
    is now, refused outside the example's sizes as before."""
    m, x = _Chain().eval(), torch.randn(3, 4)

    def paths(ep: st.ExportedProgram) -> list:
        return [s[-1][0] for s in _stacks(ep)]

    def export() -> st.ExportedProgram:
        return st.export(m, (x,), dynamic_shapes={"x": {0: st.Dim.DYNAMIC}})

    def same(ep: st.ExportedProgram) -> None:
        for n in (0, 1, 5):
            y = torch.randn(n, 4)
            torch.testing.assert_close(ep.module()(y), m(y))
        with pytest.raises(st.errors.InputMismatchError):  # (checked before running)
            ep.module()(torch.randn(3, 5))

    ep = export()
    assert paths(ep) == ["a", "seq.0"]
    same(ep)
    # renamed in place (the same modules in the same order: only the name differs)
    m._modules = {("first" if k == "a" else k): v for k, v in m._modules.items()}
    ep = export()
    assert paths(ep) == ["first", "seq.0"]
    same(ep)
    a = m.first
    del m.first
    m.b = a  # renamed (the same module object, at a new path, after the others)
    ep = export()
    assert paths(ep) == ["seq.0", "b"]
    same(ep)
    m.b = None  # a child set to None: not walked
    ep = export()
    assert paths(ep) == ["seq.0"]
    same(ep)
    del m.b
    m.seq.append(a)  # moved into the container
    ep = export()
    assert paths(ep) == ["seq.0", "seq.1"]
    same(ep)
    a.__class__ = _Plus1  # the same object, of another class
    ep = export()
    assert _stacks(ep)[1][-1] == ("seq.1", f"{__name__}._Plus1")
    same(ep)
    torch.testing.assert_close(ep.module()(x), x + 2)
