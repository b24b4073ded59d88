"""An export changes nothing another thread can see, and leaves the process as it found it
(issue 20, the export session): two exports at once give the programs of one at a time; a
bystander thread calling builtins and torch's entry points during an export sees their
usual behaviour and does not disturb the export; torch's modes come back after an export
that changes them, also after one that fails; ``torch.cond`` under any name traces."""

from __future__ import annotations

import math
import sys
import threading

import pytest
import torch

import safetrace as st
from tests.helpers import same_in_threads, while_exporting

from functorch.experimental.control_flow import cond as functorch_cond
from torch import cond as aliased_cond


class Mixed(torch.nn.Module):
    """Routes through everything a session installs: min/max/len/int/math of sizes,
    torch._check, broadcast_shapes, torch.cond, a submodule (the module-stack hooks)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = len(x)
        k = max(1, min(n, 3))
        torch._check(x.shape[0] >= 1)
        shape = torch.broadcast_shapes(x.shape, (1, 4))
        scale = int(math.sqrt(n * n))
        z = self.lin(x.expand(shape)) * scale
        z = torch.cond(y.sum() > 0, lambda a: a + 1, lambda a: a - 1, (z,))
        return z[:k]


def _export_mixed() -> st.ExportedProgram:
    n = st.Dim("n", min=1, max=64)
    return st.export(Mixed().eval(), (torch.randn(5, 4), torch.ones(2)),
                     dynamic_shapes={"x": {0: n}, "y": None})


def _fingerprint(ep: st.ExportedProgram) -> str:
    return str(ep)


def test_two_threads_export_at_once_and_match_serial_programs() -> None:
    torch.manual_seed(0)
    same_in_threads(lambda: _fingerprint(_export_mixed()), 20)


def test_program_from_a_thread_runs_right_at_other_sizes() -> None:
    box: list = []
    t = threading.Thread(target=lambda: box.append(_export_mixed()))
    t.start()
    t.join(timeout=120)
    ep = box[0]
    m = Mixed().eval()
    m.load_state_dict(ep.module().state_dict(), strict=False)
    eager = Mixed().eval()
    eager.lin.load_state_dict({k.split(".", 1)[1]: v for k, v in ep.state_dict.items()})
    for n in (1, 2, 7):
        for sign in (1.0, -1.0):
            x, y = torch.randn(n, 4), torch.full((2,), sign)
            torch.testing.assert_close(ep.module()(x, y), eager(x, y))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(65, 4), torch.ones(2))


class _Waits(torch.nn.Module):
    """A forward that lets a bystander thread run in the middle of the export."""

    def __init__(self, started: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.started, self.done = started, done
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        self.started.set()
        assert self.done.wait(timeout=120)
        return y * max(1, len(x) - 1)


def test_a_bystander_thread_sees_the_real_functions_during_an_export() -> None:
    started, done = threading.Event(), threading.Event()

    def bystander(seen: dict) -> None:
        seen["min"] = min(3, 5)
        seen["max"] = max([2, 9, 4])
        seen["len"] = len(torch.zeros(6, 2))
        seen["print"] = print is __builtins__["print"] if isinstance(
            __builtins__, dict) else print is __builtins__.print
        torch.manual_seed(123)
        seen["rand"] = torch.rand(2)
        seen["broadcast"] = torch.broadcast_shapes((2, 1), (1, 3))
        seen["compiling"] = (torch.compiler.is_compiling(), torch.compiler.is_exporting())
        a = torch.ones(2)
        seen["check"] = torch._check(True) is None
        seen["cond"] = torch.cond(a.sum() > 0, lambda v: v + 1, lambda v: v - 1, (a,))

    with while_exporting(bystander, started, done) as seen:
        n = st.Dim("n", min=1, max=32)
        ep = st.export(_Waits(started, done), (torch.randn(4, 3),), dynamic_shapes={"x": {0: n}})
    assert (seen["min"], seen["max"], seen["len"], seen["print"]) == (3, 9, 6, True)
    torch.manual_seed(123)
    torch.testing.assert_close(seen["rand"], torch.rand(2))
    assert seen["broadcast"] == torch.Size([2, 3])
    assert seen["compiling"] == (False, False)
    assert seen["check"]
    torch.testing.assert_close(seen["cond"], torch.full((2,), 2.0))
    # the export was not disturbed: it still sizes by len(x) - 1 symbolically
    m = ep.module()
    for rows in (1, 2, 9):
        x = torch.randn(rows, 3)
        expected = torch.nn.functional.linear(x, ep.state_dict["lin.weight"],
                                              ep.state_dict["lin.bias"]) * max(1, rows - 1)
        torch.testing.assert_close(m(x), expected)


class _ChangesModes(torch.nn.Module):
    def __init__(self, fail) -> None:
        super().__init__()
        self.fail = fail

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)
        torch.use_deterministic_algorithms(True, warn_only=True)
        if self.fail == "autocast":  # refused at the next op autocast changes (an export error)
            torch.set_autocast_enabled("cpu", True)
            return torch.mm(x[None], x[:, None])
        elif self.fail:
            raise ValueError("the model fails")
        return x * 2


@pytest.mark.parametrize("fail", [False, True, "autocast"])
def test_modes_are_restored_after_an_export(fail) -> None:
    before = (torch.is_grad_enabled(), torch.get_default_dtype(),
              torch.are_deterministic_algorithms_enabled(), torch.is_autocast_enabled("cpu"))
    assert before == (True, torch.float32, False, False)
    if fail == "autocast":
        with pytest.raises(st.UnsupportedOpError, match="autocast is active"):
            st.export(_ChangesModes(fail), (torch.randn(3),))
    elif fail:
        with pytest.raises(ValueError, match="the model fails"):
            st.export(_ChangesModes(fail), (torch.randn(3),))
    else:
        ep = st.export(_ChangesModes(fail), (torch.randn(3),))
        x = torch.randn(3)
        torch.testing.assert_close(ep.module()(x), x * 2)
    after = (torch.is_grad_enabled(), torch.get_default_dtype(),
             torch.are_deterministic_algorithms_enabled(), torch.is_autocast_enabled("cpu"))
    assert after == before


class _Aliased(torch.nn.Module):
    def __init__(self, cond_fn) -> None:
        super().__init__()
        self.cond_fn = cond_fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cond_fn(x.sum() > 0, lambda v: v.cos() + 1, lambda v: v.sin() - 1, (x,))


@pytest.mark.parametrize("cond_fn", [aliased_cond, functorch_cond],
                         ids=["from_torch_import_cond_as", "functorch_cond"])
def test_cond_under_another_name_exports_and_eager_cond_still_works(cond_fn) -> None:
    n = st.Dim("n", min=1, max=16)
    model = _Aliased(cond_fn)
    ep = st.export(model, (torch.randn(4),), dynamic_shapes={"x": {0: n}})
    for size in (1, 3, 16):
        for sign in (1.0, -1.0):
            x = torch.rand(size) * sign
            out = ep.module()(x)
            assert isinstance(out, torch.Tensor)
            torch.testing.assert_close(out, x.cos() + 1 if sign > 0 else x.sin() - 1)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(0))
    # torch's own cond, eager, in the same process afterwards
    x = torch.ones(3)
    torch.testing.assert_close(torch.cond(x.sum() > 0, lambda v: v + 1, lambda v: v - 1, (x,)),
                               x + 1)


def _body(v: torch.Tensor) -> torch.Tensor:
    return v.sin() * 2


class _CompilesInside(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.compile(_body)(x)
        b = torch.compile(fullgraph=True, backend="eager")(_body)(x + 1)
        return a + b


def test_torch_compile_inside_forward_is_ignored_while_exporting() -> None:
    """torch.compile in the exported code records what the function calls, as torch.export
    ignores it (torch 2.11's cond/while_loop reached under another name compile a wrapper of
    their operator the same way); on every other thread torch.compile is torch's own."""
    model = _CompilesInside()
    x = torch.randn(4)
    seen: list = []
    started, done = threading.Event(), threading.Event()

    def bystander() -> None:
        started.wait()
        seen.append(torch.compile(_body, backend="eager"))
        done.set()

    t = threading.Thread(target=bystander)
    t.start()
    n = st.Dim("n")

    class _Signals(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()
            done.wait(30)
            return model(x)

    ep = st.export(_Signals(), (x,), dynamic_shapes={"x": {0: n}})
    t.join()
    assert seen and seen[0] is not _body  # compiled as usual on the other thread
    targets = [node.target for node in ep.graph.nodes if node.op == "call_function"]
    assert torch.ops.aten.sin.default in targets
    for size in (0, 1, 5):
        v = torch.randn(size)
        torch.testing.assert_close(ep.module()(v), _body(v) + _body(v + 1))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(2, 2))
    assert torch.compile(_body, backend="eager") is not _body


class _SetsNothing(torch.nn.Module):
    """Waits in forward while a bystander thread changes torch's process-wide modes."""

    def __init__(self, started: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.started, self.done = started, done

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.started.set()
        assert self.done.wait(timeout=60)
        return x * 2


def test_a_bystanders_default_dtype_and_deterministic_flags_survive_an_export() -> None:
    """The default dtype and the deterministic flags are process-wide: an export puts back
    only what its own code changed, never what another thread set meanwhile."""
    started, done = threading.Event(), threading.Event()

    def bystander() -> None:
        try:
            assert started.wait(timeout=60)
            torch.set_default_dtype(torch.float64)
            torch.use_deterministic_algorithms(True, warn_only=True)
        finally:
            done.set()

    t = threading.Thread(target=bystander)
    t.start()
    try:
        ep = st.export(_SetsNothing(started, done), (torch.randn(3),),
                       dynamic_shapes={"x": {0: st.Dim("n")}})
        t.join(timeout=60)
        after = (torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
                 torch.is_deterministic_algorithms_warn_only_enabled())
    finally:
        torch.set_default_dtype(torch.float32)
        torch.use_deterministic_algorithms(False)
    assert after == (torch.float64, True, True)
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x), x * 2)
    # and an export's own change is still undone (with no bystander, and with one)
    ep = st.export(_ChangesModes(False), (torch.randn(3),))
    assert (torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled()) == \
        (torch.float32, False)


def _halves(x: torch.Tensor) -> torch.Tensor:
    n = int(x.shape[0] * 0.5)
    return x[:max(1, n)] * math.sqrt(len(x))


class _CallsHalves(torch.nn.Module):
    def __init__(self, started: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.started, self.done = started, done

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.started.set()
        assert self.done.wait(timeout=60)
        return _halves(x)


def test_a_bystander_compiles_the_function_the_export_is_rewriting() -> None:
    """The export rewrites `_halves`'s code (its int/len/max/math stay symbolic) while a
    bystander thread runs and torch.compiles that same function object: both work."""
    started, done = threading.Event(), threading.Event()
    seen: dict = {}
    x7 = torch.randn(7, 3)

    def bystander() -> None:
        try:
            assert started.wait(timeout=60)
            seen["eager"] = _halves(x7)
            seen["compiled"] = torch.compile(_halves, backend="eager", fullgraph=True)(x7)
        except Exception as exc:  # noqa: BLE001 - reported below
            seen["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=bystander)
    t.start()
    ep = st.export(_CallsHalves(started, done), (torch.randn(6, 3),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}})
    t.join(timeout=120)
    assert "error" not in seen, repr(seen.get("error"))
    want = x7[:3] * math.sqrt(7)
    torch.testing.assert_close(seen["eager"], want)
    torch.testing.assert_close(seen["compiled"], want)
    for n in (1, 2, 9):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), x[:max(1, n // 2)] * math.sqrt(n))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(65, 3))


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


class _TwoBlockCalls(torch.nn.Module):
    def __init__(self, started: threading.Event | None = None,
                 done: threading.Event | None = None) -> None:
        super().__init__()
        self.block = _Block()
        self.started, self.done = started, done

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        if self.started is not None:
            self.started.set()
            assert self.done.wait(timeout=60)
        return self.block(y) + 1


def test_a_bystander_calls_a_preserved_submodule_during_the_export() -> None:
    """The hooks that record a preserved submodule's calls sit on the user's module, which
    another thread may call meanwhile: that call runs as eager and is not recorded."""
    started, done = threading.Event(), threading.Event()
    model = _TwoBlockCalls(started, done)
    seen: dict = {}

    def bystander() -> None:
        try:
            assert started.wait(timeout=60)
            x = torch.randn(2, 3)
            seen["out"] = (model.block(x), model.block.lin(x).relu())
        except Exception as exc:  # noqa: BLE001 - reported below
            seen["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=bystander)
    t.start()
    spec = {"x": {0: st.Dim("n", min=1, max=32)}}
    ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes=spec,
                   preserve_module_call_signature=("block",))
    t.join(timeout=60)
    assert "error" not in seen, repr(seen.get("error"))
    torch.testing.assert_close(*seen["out"])
    model.started = None
    serial = st.export(model, (torch.randn(4, 3),), dynamic_shapes=spec,
                       preserve_module_call_signature=("block",))
    assert str(ep) == str(serial)
    for n in (1, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), model(x))


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale


def test_state_swapped_for_fake_tensors_by_another_tracer_is_refused() -> None:
    """torch.export / torch.compile on another thread swap the model's state for fake
    tensors while they trace it: an export meeting one refuses (a clear error, never a
    program over fake values), and the model is left as it was."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    model = _Scaled()
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.ones(3))
    real = model.scale
    model._buffers["scale"] = fake  # what torch's non-strict trace does while it runs
    with pytest.raises(st.UnsupportedOpError, match="'scale' is a FakeTensor") as info:
        st.export(model, (torch.randn(2, 3),))
    assert "copy.deepcopy(model)" in str(info.value)
    assert model.scale is fake
    model._buffers["scale"] = real
    model.extra = fake  # read by forward only (a plain attribute): met while tracing
    model.forward = lambda x: model.lin(x) * model.extra  # type: ignore[method-assign]
    with pytest.raises(st.UnsupportedOpError, match="is a FakeTensor"):
        st.export(model, (torch.randn(2, 3),))
    del model.forward
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: st.Dim("n")}})
    for n in (0, 1, 4):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), model(x))


class _StateInput(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))


class _ReadsModuleInput(torch.nn.Module):
    def forward(self, x, m):
        return x * m.w + 1


def test_module_inputs_of_one_class_export_and_run_on_several_threads_at_once() -> None:
    """A module input's class is a pytree node while an export or call with it runs; one
    thread leaving must not take the class away from another still inside (before: the
    second thread's inputs did not flatten, or its program's spec did not unflatten)."""
    ep = st.export(_ReadsModuleInput(), (torch.randn(2, 3), _StateInput()))
    errors: list = []
    barrier = threading.Barrier(3)
    switch = sys.getswitchinterval()

    def worker(i: int) -> None:
        barrier.wait()
        for _ in range(40):
            try:
                x = torch.randn(2, 3)
                if i == 2:
                    got = ep.module()(x, _StateInput())
                else:
                    got = st.export(_ReadsModuleInput(), (x, _StateInput())).module()(
                        x, _StateInput())
                torch.testing.assert_close(got, x + 1)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    sys.setswitchinterval(1e-6)  # switch threads often: the window is a few bytecodes
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(switch)
    assert not errors, errors[:3]
    # outside every export the class is a leaf again for the user's own pytree code
    assert torch.utils._pytree.tree_leaves([_StateInput()])[0].__class__ is _StateInput


def test_a_module_input_leaves_the_users_own_pytree_registrations_as_they_were() -> None:
    """The user's pytree class registered without a serialized name shares torch's default
    name with every such class; taking a module input's class away after an export took
    that name away too, so the user's own deregistration raised KeyError."""
    from torch.utils import _pytree as pytree

    class Pair:
        def __init__(self, a):
            self.a = a

    pytree.register_pytree_node(Pair, lambda p: ([p.a], None), lambda v, c: Pair(v[0]))
    try:
        names = dict(pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE)
        x = torch.randn(2, 3)
        ep = st.export(_ReadsModuleInput(), (x, _StateInput()))
        torch.testing.assert_close(ep.module()(x, _StateInput()), x + 1)
        assert pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE == names
        assert _StateInput not in pytree.SUPPORTED_NODES
    finally:
        pytree._deregister_pytree_node(Pair)


def test_a_library_imported_after_an_export_is_shimmed_by_the_next(monkeypatch) -> None:
    """The session keeps its table of replacements between exports while every module and
    attribute it was made from is the same object: a watched module imported (or one of
    its functions replaced) after an export is seen by the next export, and put back."""
    import types

    st.export(lambda x: x + 1, (torch.randn(2),))  # (the table, made before the import)
    boxes = types.ModuleType("torchvision.ops.boxes")

    def library_trick(*args):  # (torchvision's, as the shim replaces it)
        return "first"

    boxes._batched_nms_coordinate_trick = library_trick
    monkeypatch.setitem(sys.modules, "torchvision.ops.boxes", boxes)
    seen = []

    def forward(x):
        seen.append(boxes._batched_nms_coordinate_trick)
        return x * 2

    for replaced in (False, True):
        if replaced:  # the library's function replaced between two exports
            def other_trick(*args):
                return "second"

            boxes._batched_nms_coordinate_trick = library_trick = other_trick
        ep = st.export(forward, (torch.randn(3),))
        assert seen[-1] is not library_trick  # (the exporting thread's replacement)
        # ... which is the library's current function on any thread not exporting
        assert seen[-1]() == ("second" if replaced else "first")
        assert boxes._batched_nms_coordinate_trick is library_trick  # put back
        x = torch.randn(3)
        torch.testing.assert_close(ep.module()(x), x * 2)
        with pytest.raises(st.InputMismatchError):
            ep.module()(torch.randn(5))


def test_torch_compile_replaced_between_exports_is_left_as_the_user_set_it(monkeypatch) -> None:
    """The session puts back what it replaced as it finds it at each export, also where the
    user replaced it since the last one (``torch.compile``, a row whose replacement is the
    same whatever it wraps); inside forward ``torch.compile`` stays a no-op either way."""
    model = torch.nn.Linear(3, 2).eval()
    x = torch.randn(4, 3)
    st.export(model, (x,))  # (the table and what it replaced, kept from this export)
    original = torch.compile

    def users_compile(*args, **kwargs):  # (a wrapper a library might install)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", users_compile)
    seen = []

    def forward(a):
        seen.append(torch.compile(lambda t: t * 2))  # (the function itself while exporting)
        return seen[-1](a) + 1

    for expected in (users_compile, original):
        torch.compile = expected
        ep = st.export(forward, (x,))
        assert torch.compile is expected  # (not the replacement the first export read)
        assert seen[-1](torch.ones(1)).item() == 2.0
        torch.testing.assert_close(ep.module()(x), x * 2 + 1)


def test_a_routed_torch_function_deleted_between_exports_stays_deleted(monkeypatch) -> None:
    """The session's kept table installs its rows by code made for it, which first reads
    each row's original: one deleted since the table was made (``torch.func.vmap``) makes
    it install nothing and go the general way, so the export neither fails nor puts the
    name back; given back, the next export routes it again."""
    import torch.func

    model = torch.nn.Linear(3, 2).eval()
    x = torch.randn(4, 3)
    st.export(model, (x,))  # (the table, made with torch.func.vmap in it)
    real = torch.func.vmap
    monkeypatch.delattr(torch.func, "vmap")
    ep = st.export(model, (x,))
    assert not hasattr(torch.func, "vmap")
    torch.testing.assert_close(ep.module()(x), model(x))
    monkeypatch.undo()
    seen = []

    def forward(a):
        seen.append(torch.func.vmap)
        return torch.func.vmap(lambda row: row * 2)(a)

    ep = st.export(forward, (x,))
    assert seen[-1] is not real and torch.func.vmap is real  # (routed, then put back)
    torch.testing.assert_close(ep.module()(x), x * 2)
