"""A torchbind object's method called in forward (issue 21; torch's
test_unflatten_constant_obj): one ``call_torchbind`` node shaped by the fake class
registered for the object's class, the object a constant of the program (torch's
``CUSTOM_OBJ`` input after ``to_torch()``), the real method's results checked against the
fake's shapes when the program runs.  No fake class, a number returned, an object the
model does not hold, and ``st.save`` of such a program: refused."""

from __future__ import annotations

import io
import os

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import check_program, same

_LIB = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorchbind_test.so")
pytestmark = pytest.mark.skipif(not os.path.exists(_LIB), reason="torch's torchbind test library")
_QUAL = "_TorchScriptTesting::_Foo"
_FULL = "__torch__.torch.classes._TorchScriptTesting._Foo"


def _foo(x: int, y: int) -> torch.ScriptObject:
    torch.ops.load_library(_LIB)
    return torch.classes._TorchScriptTesting._Foo(x, y)


def _state(obj: torch.ScriptObject) -> tuple:
    return obj.__obj_flatten__()


@pytest.fixture
def fake_foo():
    """A fake class for _Foo while the test runs: add_tensor gives `z`'s shape (the real
    method's is (x + y) * z); `shrunk` lies about it (one row)."""
    torch.ops.load_library(_LIB)

    class FakeFoo:
        shrunk = tupled = False

        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

        @classmethod
        def __obj_unflatten__(cls, flat):
            return cls(**dict(flat))

        def add_tensor(self, z):
            if FakeFoo.tupled:
                return z, z
            return z[:1] * 2 if FakeFoo.shrunk else (self.x + self.y) * z

        def add(self, k):
            return self.x + k

    registry = torch._library.fake_class_registry
    before = registry.find_fake_class(_FULL)
    torch._library.register_fake_class(_QUAL)(FakeFoo)
    try:
        yield FakeFoo
    finally:
        registry.deregister_fake_class(_QUAL)
        if before is not None:  # (another test's, registered for the process)
            torch._library.register_fake_class(_QUAL)(before)


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attr = _foo(10, 20)

    def forward(self, x):
        return x + self.attr.add_tensor(x)


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.submod = Inner()

    def forward(self, x):
        return x + self.submod(x)


def test_a_held_objects_method_is_one_node_checked_against_eager(fake_foo) -> None:
    model = Outer()
    before = _state(model.submod.attr)
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    calls = [n for n in ep.graph.nodes if n.target is torch.ops.higher_order.call_torchbind]
    assert len(calls) == 1 and calls[0].args[1] == "add_tensor"
    assert _state(model.submod.attr) == before  # (the export ran the fake only)
    check_program(ep, model, [(torch.randn(n, 3),) for n in (0, 1, 5)],
                  bad=[(torch.randn(4, 2),), (torch.randn(4, 3, 1),),
                       (torch.randn(4, 3, dtype=torch.float64),)])


def test_to_torch_lifts_the_object_as_torchs_custom_obj(fake_foo) -> None:
    model = Outer()
    tep = st.export(model, (torch.randn(2, 3),),
                    dynamic_shapes={"x": {0: Dim("b")}}).to_torch()
    (spec,) = [s for s in tep.graph_signature.input_specs
               if s.kind == torch.export.graph_signature.InputKind.CUSTOM_OBJ]
    assert spec.target == "submod.attr" and tep.constants["submod.attr"] is model.submod.attr
    x = torch.randn(6, 3)
    same(tep.module()(x), model(x))
    same(torch.export.unflatten(tep)(x), model(x))


def test_ep_constants_holds_the_object_by_its_path_as_torchs(fake_foo) -> None:
    """ep.constants: the model's own object under its attribute path, listed by the
    signature as a custom object (not a tensor constant), as torch.export's program."""
    model = Outer()
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    ref = torch.export.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    assert list(ep.constants) == list(ref.constants) == ["submod.attr"]
    assert ep.constants["submod.attr"] is ref.constants["submod.attr"] is model.submod.attr
    ours, theirs = ep.graph_signature, ref.graph_signature
    assert list(ours.lifted_custom_objs) == list(theirs.lifted_custom_objs) == ["submod.attr"]
    assert list(ours.lifted_tensor_constants) == list(theirs.lifted_tensor_constants) == []
    assert list(ours.inputs_to_lifted_custom_objs.values()) == ["submod.attr"]
    check_program(ep, model, [(torch.randn(n, 3),) for n in (0, 1, 5)],
                  bad=[(torch.randn(4, 2),)])


def test_a_result_of_other_sizes_than_the_fake_gives_stops_the_program(fake_foo) -> None:
    """The fake says one row, the real method returns all of them: the check after the
    call stops the program rather than letting it broadcast."""
    fake_foo.shrunk = True
    ep = st.export(Inner(), (torch.randn(2, 3),))
    with pytest.raises(st.RuntimeAssertionError, match="add_tensor returned a tensor"):
        ep.module()(torch.randn(2, 3))


def test_a_fake_result_of_another_form_than_the_schema_is_refused(fake_foo) -> None:
    """add_tensor returns one Tensor: a fake giving a tuple would make the program index
    the real tensor's rows."""
    fake_foo.tupled = True
    with pytest.raises(st.UnsupportedInputError, match="where the method's schema returns"):
        st.export(Inner(), (torch.randn(2, 3),))


def test_without_a_fake_class_it_is_refused_with_the_registration_to_paste() -> None:
    model = Inner()
    if torch._library.fake_class_registry.find_fake_class(_FULL) is not None:
        pytest.skip("a fake class for _Foo is registered in this process")
    with pytest.raises(st.UnsupportedInputError, match="no fake class is registered") as info:
        st.export(model, (torch.randn(2, 3),))
    assert '@torch._library.register_fake_class("_TorchScriptTesting::_Foo")' in info.value.fix
    assert "def add_tensor(self" in info.value.fix


class ReturnsNumber(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attr = _foo(1, 2)

    def forward(self, x):
        return x * self.attr.add(3)


def test_a_number_result_is_refused(fake_foo) -> None:
    """The real method's number would be fixed at its export value."""
    with pytest.raises(st.UnsupportedInputError, match="returns int, not tensors"):
        st.export(ReturnsNumber(), (torch.randn(2),))


_GLOBAL: list = []


class ReadsGlobalObject(nn.Module):
    def forward(self, x):
        return _GLOBAL[0].add_tensor(x)


def test_an_object_the_model_does_not_hold_is_refused(fake_foo) -> None:
    _GLOBAL[:] = [_foo(1, 1)]
    with pytest.raises(st.UnsupportedInputError, match="no module of the exported model") as info:
        st.export(ReadsGlobalObject(), (torch.randn(2),))
    assert "self.obj.add_tensor(...)" in info.value.fix


def test_saving_a_program_holding_an_object_is_refused(fake_foo) -> None:
    """The file format has no allowlisted form of a custom class object."""
    ep = st.export(Outer(), (torch.randn(2, 3),))
    with pytest.raises(st.UnsupportedInputError, match="custom class object") as info:
        st.save(ep, io.BytesIO())
    assert "torch.export.save(ep.to_torch(), path)" in info.value.fix


def test_the_program_module_exports_again_with_its_call(fake_foo) -> None:
    """ep.module() holds the object; exported again, its call_torchbind node is the same
    call, checked against eager as before."""
    model = Outer()
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    again = st.export(ep.module(), (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    assert any(n.target is torch.ops.higher_order.call_torchbind for n in again.graph.nodes)
    check_program(again, model, [(torch.randn(n, 3),) for n in (0, 1, 4)],
                  bad=[(torch.randn(4, 2),)])


class CallsInBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attr = _foo(1, 2)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: self.attr.add_tensor(t), lambda t: t * 2, (x,))


def test_a_call_inside_a_cond_branch_is_refused(fake_foo) -> None:
    with pytest.raises(st.UnsupportedInputError, match="inside a torch.cond branch"):
        st.export(CallsInBranch(), (torch.randn(3),))


@pytest.fixture
def fake_queue():
    """torch's test queue (_TensorQueue: push, pop in FIFO order) with a fake whose state
    (the queued tensors' metadata) carries from call to call within one trace."""
    torch.ops.load_library(_LIB)

    class FakeQueue:
        def __init__(self, queue) -> None:
            self.queue = queue

        @classmethod
        def __obj_unflatten__(cls, flat):
            return cls(dict(flat)["queue"])

        def push(self, t):
            self.queue.append(t)

        def pop(self):
            return self.queue.pop(0)

    registry = torch._library.fake_class_registry
    qual = "_TorchScriptTesting::_TensorQueue"
    before = registry.find_fake_class("__torch__.torch.classes._TorchScriptTesting._TensorQueue")
    torch._library.register_fake_class(qual)(FakeQueue)
    try:
        yield FakeQueue
    finally:
        registry.deregister_fake_class(qual)
        if before is not None:
            torch._library.register_fake_class(qual)(before)


class PushPop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.queue = torch.classes._TorchScriptTesting._TensorQueue(torch.zeros(1))

    def forward(self, x):
        self.queue.push(x.cos())
        return self.queue.pop() + x


def test_a_stateful_objects_calls_share_one_fake_state(fake_queue) -> None:
    """pop() returns what push() queued: its shape comes from the fake's state, changed by
    the earlier call in the same trace (each call a node, in order)."""
    torch.ops.load_library(_LIB)
    model = PushPop()
    ep = st.export(model, (torch.randn(3, 2),), dynamic_shapes={"x": {0: Dim("n")}})
    methods = [n.args[1] for n in ep.graph.nodes
               if n.target is torch.ops.higher_order.call_torchbind]
    assert methods == ["push", "pop"]
    assert model.queue.size() == 0  # (the export ran the fake only)
    check_program(ep, model, [(torch.randn(n, 2),) for n in (0, 1, 5)],
                  bad=[(torch.randn(4),)], ref=ep.to_torch())
