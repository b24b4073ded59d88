"""A custom op given a torchbind object the model holds (``torch.ops.ns.op(self.obj, x)``,
issue 21; torch's test_torchbind.py): one node of the op, its first argument the object's
constant placeholder (torch's ``CUSTOM_OBJ`` input after ``to_torch()``), its result shaped
by the op's fake (or Python Meta kernel) run on the object's fake, one fake per object for
the whole trace (a queue's pushes then pops).  A number the fake reads from the object's
state, and an object without a fake class: refused with the fix.  Our own cases, torch's
test library (libtorchbind_test.so) and its fakes of the ops."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import check_program, same
from tests.export.test_dropin_torchbind import _LIB, _foo, fake_foo, fake_queue  # noqa: F401

pytestmark = pytest.mark.skipif(not __import__("os").path.exists(_LIB),
                                reason="torch's torchbind test library")
T = "_TorchScriptTesting"


@pytest.fixture(autouse=True)
def op_fakes():
    """torch's own fakes of the test library's ops (registered once for the process)."""
    torch.ops.load_library(_LIB)
    from torch._library import simple_registry
    from torch.testing._internal import torchbind_impls

    if simple_registry.singleton.find(f"{T}::queue_pop").fake_impl.kernel is None:
        torchbind_impls.register_fake_operators()


class TakesFoo(nn.Module):
    def __init__(self, op: str) -> None:
        super().__init__()
        self.attr = _foo(10, 20)
        self.op = op

    def forward(self, x):
        r = getattr(torch.ops._TorchScriptTesting, self.op)(self.attr, x)
        return x + r if isinstance(r, torch.Tensor) else x * r[0] - r[-1]


class Queues(nn.Module):
    def __init__(self, size: bool = False) -> None:
        super().__init__()
        self.tq = torch.classes._TorchScriptTesting._TensorQueue(torch.zeros(1))
        self.size = size

    def forward(self, x):
        ops = torch.ops._TorchScriptTesting
        ops.queue_push(self.tq, x.cos())
        ops.queue_push(self.tq, x.sin() * 2)
        first = ops.queue_pop(self.tq)
        if self.size:
            return first + ops.queue_size(self.tq)
        return first - ops.queue_pop(self.tq)


def _calls(ep) -> list:
    return [(str(n.target), n.args[0].op) for n in ep.graph.nodes
            if n.op == "call_function" and str(n.target).startswith(T)]


@pytest.mark.parametrize("op", ["takes_foo", "takes_foo_list_return"])
def test_a_custom_op_given_a_held_object_is_one_node_of_it(fake_foo, op) -> None:
    model = TakesFoo(op)
    before = model.attr.__obj_flatten__()
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    assert _calls(ep) == [(f"{T}.{op}.default", "placeholder")]
    assert model.attr.__obj_flatten__() == before  # (the export ran the fake only)
    check_program(ep, model, [(torch.randn(n, 3),) for n in (0, 1, 5)],
                  bad=[(torch.randn(4, 2),), (torch.randn(4, 3, dtype=torch.float64),)])
    tep = ep.to_torch()
    (spec,) = [s for s in tep.graph_signature.input_specs
               if s.kind == torch.export.graph_signature.InputKind.CUSTOM_OBJ]
    assert spec.target == "attr" and tep.constants["attr"] is model.attr
    for n in (0, 1, 4):
        x = torch.randn(n, 3)
        same(tep.module()(x), model(x))
        same(torch.export.unflatten(tep)(x), model(x))


@pytest.mark.slow
def test_the_node_is_torchs(fake_foo) -> None:
    model = TakesFoo("takes_foo_list_return")
    ref = torch.export.export(model, (torch.randn(2, 3),), strict=False)
    ep = st.export(model, (torch.randn(2, 3),))
    assert _calls(ep) == _calls(ref)
    check_program(ep, model, [(torch.randn(2, 3),)], bad=[(torch.randn(3, 3),)], ref=ref)
    check_program(ep.to_torch().run_decompositions(), model, [(torch.randn(2, 3),)])


def test_a_queues_ops_share_one_fake_state_in_order(fake_queue) -> None:
    model = Queues()
    ep = st.export(model, (torch.randn(3, 2),), dynamic_shapes={"x": {0: Dim("n")}})
    assert [t for t, _ in _calls(ep)] == [f"{T}.queue_{k}.default"
                                          for k in ("push", "push", "pop", "pop")]
    assert model.tq.size() == 0  # (the export ran the fakes only)
    check_program(ep, model, [(torch.randn(n, 2),) for n in (0, 1, 5)],
                  bad=[(torch.randn(4),)], ref=ep.to_torch())
    assert model.tq.size() == 0


def test_a_number_read_from_the_objects_state_is_refused(fake_queue) -> None:
    """queue_size's fake returns the fake queue's length: a constant in the program, where
    the real queue's length is whatever the calls before left (torch.export fixes it)."""
    fake_queue.size = lambda self: len(self.queue)
    with pytest.raises(st.UnsupportedInputError, match="its fake returns int, not tensors") \
            as info:
        st.export(Queues(size=True), (torch.randn(3, 2),))
    assert f"custom op `{T}.queue_size.default` on a TorchScript" in str(info.value)


def test_an_object_without_a_fake_class_is_refused_with_the_registration() -> None:
    with pytest.raises(st.UnsupportedInputError, match="no fake class is registered") as info:
        st.export(TakesFoo("takes_foo"), (torch.randn(2, 3),))
    assert '@torch._library.register_fake_class("_TorchScriptTesting::_Foo")' in info.value.fix


class TakesObject(nn.Module):
    def forward(self, x, cc):
        return x + cc.add_tensor(x) * torch.ops._TorchScriptTesting.takes_foo(cc, x)


def test_an_object_passed_as_an_input_is_taken_as_it_is(fake_foo) -> None:
    """torch's test_input_as_custom_op_argument: the object is an input of the program
    (torch's CustomObjArgument after to_torch()), the very object the export saw."""
    cc, model = _foo(10, 20), TakesObject()
    ep = st.export(model, (torch.randn(2, 3), cc), dynamic_shapes={"x": {0: Dim("b")}, "cc": None})
    assert _calls(ep) == [(f"{T}.takes_foo.default", "placeholder")]
    check_program(ep, model, [(torch.randn(n, 3), cc) for n in (0, 1, 5)],
                  bad=[(torch.randn(4, 2), cc), (torch.randn(4, 3), _foo(10, 20))])
    with pytest.raises(st.InputMismatchError, match="got another object than the _Foo object"):
        ep.module()(torch.randn(2, 3), _foo(10, 20))
    tep = ep.to_torch()
    (spec,) = [s for s in tep.graph_signature.input_specs if s.arg.name == "cc"]
    assert type(spec.arg).__name__ == "CustomObjArgument"
    x = torch.randn(4, 3)
    same(tep.module()(x, cc), model(x, cc))
    same(st.export(ep.module(), (x, cc)).module()(x, cc), model(x, cc))
    with pytest.raises(st.UnsupportedInputError, match="st.save cannot write cc"):
        st.save(ep, __import__("io").BytesIO())


@pytest.mark.slow
def test_an_object_input_against_torch(fake_foo) -> None:
    cc, model, x = _foo(10, 20), TakesObject(), torch.randn(2, 3)
    ref = torch.export.export(model, (x, cc), strict=False)
    check_program(st.export(model, (x, cc)), model, [(x, cc)], ref=ref)
