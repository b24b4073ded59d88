"""``ep.module()`` in torch's own tools, compared with torch.export's ``ep.module()`` in the
same test: torch.export of it (static, dynamic, nested in a bigger module), torch.compile,
the fx Interpreter and symbolic_trace; the program's state stays shared meanwhile."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.export import Dim

import safetrace as st


class Counter(torch.nn.Module):
    """A linear layer and a buffer written in place on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.l = torch.nn.Linear(4, 3)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return self.l(x).relu() + self.calls


class Accumulate(torch.nn.Module):
    """Keyword and dict inputs, a no_grad block writing a buffer, a dict output."""

    def __init__(self) -> None:
        super().__init__()
        self.l = torch.nn.Linear(4, 4)
        self.register_buffer("acc", torch.zeros(4))

    def forward(self, x, *, scale):
        y = self.l(x) * scale["a"]
        with torch.no_grad():
            self.acc.copy_(self.acc + y.sum(0))
        return {"y": y, "acc": self.acc.clone()}


def _scale(v: float = 2.0) -> dict:
    return {"scale": {"a": torch.tensor(v)}}


def _both(model_cls, args, kwargs=None, dynamic_shapes=None):
    """(ours, torch's) programs of two equal models."""
    torch.manual_seed(0)
    ours = st.export(model_cls(), args, kwargs, dynamic_shapes=dynamic_shapes)
    torch.manual_seed(0)
    theirs = torch.export.export(model_cls(), args, kwargs, dynamic_shapes=dynamic_shapes)
    return ours, theirs


def _refused_before_compute(module, calls_buffer, *args, **kwargs):
    """The call raises and the module's state is as before (nothing computed)."""
    before = calls_buffer.clone()
    with pytest.raises((AssertionError, RuntimeError, ValueError)):
        module(*args, **kwargs)
    assert torch.equal(calls_buffer, before)


def test_static_reexport_matches_torchs_own_module():
    x = torch.randn(5, 4)
    ours, theirs = _both(Counter, (x,))
    r_ours = torch.export.export(ours.module(), (x,))
    r_theirs = torch.export.export(theirs.module(), (x,))
    assert [s.kind for s in r_ours.graph_signature.input_specs] == \
        [s.kind for s in r_theirs.graph_signature.input_specs]
    a, b = r_ours.module(), r_theirs.module()
    for _ in range(2):
        torch.testing.assert_close(a(x), b(x))
    torch.testing.assert_close(a.calls, b.calls)
    _refused_before_compute(b, b.calls, torch.randn(6, 4))  # torch keeps the static size
    _refused_before_compute(a, a.calls, torch.randn(6, 4))


@pytest.mark.parametrize("n", [1, 3, 64])
def test_dynamic_reexport_matches_torch_at_other_sizes(n):
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}}
    ours, theirs = _both(Counter, (x,), dynamic_shapes=spec)
    a = torch.export.export(ours.module(), (x,), dynamic_shapes=spec).module()
    b = torch.export.export(theirs.module(), (x,), dynamic_shapes=spec).module()
    xn = torch.randn(n, 4)
    torch.testing.assert_close(a(xn), b(xn))
    # out of the declared space: torch's re-export keeps the check, so does ours
    _refused_before_compute(b, b.calls, torch.randn(65, 4))
    _refused_before_compute(a, a.calls, torch.randn(65, 4))


def test_reexport_with_keyword_and_dict_inputs_matches_torch():
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}, "scale": {"a": None}}
    ours, theirs = _both(Accumulate, (x,), _scale(), spec)
    ra = torch.export.export(ours.module(), (x,), _scale(), dynamic_shapes=spec)
    rb = torch.export.export(theirs.module(), (x,), _scale(), dynamic_shapes=spec)
    assert [s.kind for s in ra.graph_signature.output_specs] == \
        [s.kind for s in rb.graph_signature.output_specs]
    a, b = ra.module(), rb.module()
    for n in (1, 7):
        xn = torch.randn(n, 4)
        torch.testing.assert_close(a(xn, **_scale(3.0)), b(xn, **_scale(3.0)))
    _refused_before_compute(b, b.acc, torch.randn(65, 4), **_scale())
    _refused_before_compute(a, a.acc, torch.randn(65, 4), **_scale())


def test_reexport_refuses_a_wider_range_than_the_program_accepts():
    x = torch.randn(5, 4)
    ours, theirs = _both(Counter, (x,), dynamic_shapes={"x": {0: Dim("b", min=1, max=64)}})
    wider = {"x": {0: Dim("b", min=1, max=128)}}
    for ep in (ours, theirs):  # the module's own checks make the larger sizes a guard
        with pytest.raises(Exception, match="(?i)constraint|specializ|guard|range"):
            torch.export.export(ep.module(), (x,), dynamic_shapes=wider)


class Outer(torch.nn.Module):
    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.head = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.inner(x)).tanh()


def test_nested_in_a_bigger_module_exports_as_torchs_does():
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}}
    ours, theirs = _both(Counter, (x,), dynamic_shapes=spec)
    torch.manual_seed(1)
    outer_a = Outer(ours.module())
    torch.manual_seed(1)
    outer_b = Outer(theirs.module())
    ra = torch.export.export(outer_a, (x,), dynamic_shapes=spec)
    rb = torch.export.export(outer_b, (x,), dynamic_shapes=spec)
    assert sorted(ra.state_dict) == sorted(rb.state_dict)
    # exporting the bigger module never ran the program on real data
    assert float(outer_a.inner.calls) == float(outer_b.inner.calls) == 0.0
    a, b = ra.module(), rb.module()
    for n in (1, 9):
        xn = torch.randn(n, 4)
        torch.testing.assert_close(a(xn), b(xn))
    # (torch's program of the bigger module holds the module's own buffer, ours as theirs)
    assert float(outer_a.inner.calls) == float(outer_b.inner.calls) == 2.0
    # and the nested program module still runs on real tensors afterwards
    out = outer_a(torch.randn(2, 4))
    assert type(out) is torch.Tensor and float(outer_a.inner.calls) == 3.0


def test_reexport_does_not_touch_the_programs_state():
    x = torch.randn(5, 4)
    ep = st.export(Counter(), (x,))
    m = ep.module()
    m(x)
    torch.export.export(m, (x,))
    assert all(type(t) is torch.Tensor or type(t) is torch.nn.Parameter
               for t in [*m.parameters(), *m.buffers()])
    out = m(x)
    assert type(out) is torch.Tensor and float(m.calls) == 2.0
    assert float(ep.module().calls) == 2.0  # a fresh module sees the same state


def test_torch_compile_fullgraph_keeps_checks_and_shared_state():
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}}
    ours, theirs = _both(Counter, (x,), dynamic_shapes=spec)
    torch._dynamo.reset()
    try:
        a = torch.compile(ours.module(), backend="eager", fullgraph=True)
        b = torch.compile(theirs.module(), backend="eager", fullgraph=True)
        for n in (3, 5, 11):
            xn = torch.randn(n, 4)
            torch.testing.assert_close(a(xn), b(xn))
        assert float(ours.module().calls) == 3.0  # every module of the program sees it
        # (a refusal is a graph break: fullgraph=False compiles run it as Python)
        lenient = torch.compile(ours.module(), backend="eager")
        with pytest.raises(st.InputMismatchError):
            lenient(torch.randn(65, 4))
        assert float(ours.module().calls) == 3.0
    finally:
        torch._dynamo.reset()


def test_fx_interpreter_and_symbolic_trace_run_the_program():
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}, "scale": {"a": None}}
    ours, theirs = _both(Accumulate, (x,), _scale(), spec)
    m, t = ours.module(), theirs.module()
    xn = torch.randn(7, 4)
    got = torch.fx.Interpreter(m).run(xn, _scale()["scale"])
    want = torch.fx.Interpreter(t).run(xn, _scale()["scale"])
    torch.testing.assert_close(got, want)
    with pytest.raises(st.InputMismatchError):  # the checks are the graph's first call
        torch.fx.Interpreter(m).run(torch.randn(7, 5), _scale()["scale"])
    traced = torch.fx.symbolic_trace(m)
    torch.testing.assert_close(traced(xn, **_scale())["y"], t(xn, **_scale())["y"])
    with pytest.raises(st.InputMismatchError):  # a traced copy keeps the checks
        traced(torch.randn(65, 4), **_scale())


def test_module_prints_its_unlifted_code_and_copies_like_torchs():
    x = torch.randn(5, 4)
    ours, theirs = _both(Counter, (x,))
    m, t = ours.module(), theirs.module()
    assert "def forward(self, x)" in m.code and "self.l.weight" in m.code
    assert "self.l.weight" in str(m)
    assert sorted(m.state_dict()) == sorted(t.state_dict())
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    m(x)
    twin = copy.deepcopy(m)
    twin(x)
    assert (float(m.calls), float(twin.calls)) == (1.0, 2.0)  # a copy owns its state
    twin.load_state_dict(t.state_dict())
    torch.testing.assert_close(twin.l.weight, t.l.weight)
    assert float(ours.module().calls) == 1.0


def test_a_call_that_does_not_bind_is_an_input_mismatch():
    ep = st.export(Accumulate(), (torch.randn(2, 4),), _scale())
    m = ep.module()
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(2, 4))  # the keyword argument is missing
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(2, 4), torch.randn(2, 4), **_scale())


@pytest.mark.slow  # (dynamo traces both modules)
def test_strict_reexport_matches_torch():
    x = torch.randn(5, 4)
    spec = {"x": {0: Dim("b", min=1, max=64)}}
    ours, theirs = _both(Counter, (x,), dynamic_shapes=spec)
    a = torch.export.export(ours.module(), (x,), dynamic_shapes=spec, strict=True).module()
    b = torch.export.export(theirs.module(), (x,), dynamic_shapes=spec, strict=True).module()
    for n in (1, 9):
        xn = torch.randn(n, 4)
        torch.testing.assert_close(a(xn), b(xn))
    _refused_before_compute(b, b.calls, torch.randn(65, 4))
    _refused_before_compute(a, a.calls, torch.randn(65, 4))
