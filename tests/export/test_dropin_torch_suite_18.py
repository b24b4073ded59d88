"""Behaviours of torch's own export tests met by a user who replaces
``torch.export.export(...)`` with ``st.export(...).to_torch()`` (issue 21), round 18:
refusals carry torch.export's phrase for the same situation (torch's tests match it), and
TorchScript submodules called in forward are followed through their graphs.  Our own
cases; each runs through torch.export in the same test where torch takes it."""

from __future__ import annotations

import re
import warnings
from typing import List

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import check_program, same


class Sub(nn.Module):
    def forward(self, x, y):
        return x - y


class Shifted(nn.Module):
    def forward(self, x, y):
        return x + y[1:]


class AtMost32(nn.Module):
    def forward(self, x):
        assert x.shape[0] <= 32
        return x + 2


class FirstThree(nn.Module):
    def forward(self, x, y):
        return (x + y)[:3]


class Halves(nn.Module):
    def forward(self, w):
        return w[::2]


class Flattens(nn.Module):
    def forward(self, x, y):
        return x.reshape([-1]) + y


class MatMul(nn.Module):
    def forward(self, x, y):
        return torch.matmul(x, y)


class MatMulIfSmall(nn.Module):
    def forward(self, x, y):
        if x.shape[0] < 16 and y.shape[1] % 3 == 0:
            return torch.matmul(x, y)
        return x + y


class BranchesOnCount(nn.Module):
    def forward(self, x):
        return x.cos() if x.nonzero().shape[0] > 2 else x.sin()


class ThreeShifted(nn.Module):
    def forward(self, x, y, z):
        return x + y[1:] + z[2:]


def _out_of_order() -> tuple:
    """x, y from one root written out of order; z a Dim of its own that must be that root."""
    root = Dim("_dz", min=6, max=8)
    return ({0: root - 2}, {0: root - 1}, {0: Dim("dz", min=6, max=8)})


def _additional(*examples):
    ai = torch.export.AdditionalInputs()
    for e in examples:
        ai.add(e)
    return ai


def _four(n: int = 4) -> tuple:
    return (torch.randn(n), torch.randn(n))


# name -> (model, args, dynamic_shapes (a function: a fresh spec each time), torch's phrase,
#          which both refusals contain)
WORDING = {
    "static size": (Sub, _four(), lambda: ((5,), None),
                    r"Static shape constraint of 5 does not match input size of 4, for "),
    "named range": (Sub, _four(8), lambda: ((Dim("a", min=2, max=5),), None),
                    r"8 not in range \[2, 5\]"),
    "hint range": (Sub, _four(), lambda: ((Dim.STATIC(min=6, max=8),), None),
                   r"Received user-specified min/max range of \[6, 8\], conflicting with the "
                   r"inferred min/max range of \[4, 4\].* for inputs\['x'\]\.shape\[0\]"),
    "specialized": (Sub, _four(), lambda: ((Dim.STATIC,), (Dim("dy"),)),
                    r"Constraints violated \(dy\)!(.*\n)*.*You marked dy as dynamic but your "
                    r"code specialized it to be a constant \(4\)"),
    "narrowed": (AtMost32, (torch.randn(16),), lambda: ((Dim("a", min=3, max=64),),),
                 r"Constraints violated \(a\)!(.*\n)*.*Not all values of a = .* in the "
                 r"specified range 3 <= a <= 64 satisfy the generated guard(.*\n)*.*"
                 r"Suggested fixes:(.*\n)*.*a = Dim\('a', min=3, max=32\)"),
    "related": (Shifted, (torch.randn(5), torch.randn(6)),
                lambda: ((Dim("dx", min=3, max=6),), (Dim("dy", min=4, max=7),)),
                r"Constraints violated \(dy\)!(.*\n)*.*The values of dy.*must always be "
                r"related to the values of dx.*by.*dy = dx \+ 1"),
    "derived sizes": (Shifted, (torch.randn(5), torch.randn(6)),
                      lambda: ((Dim("dx", min=3, max=6),), (Dim("dx", min=3, max=6) * 2,)),
                      r"Expected input.*size.* to be equal to 2\*dx, where dx = 5, but got 6"),
    "derived form": (Halves, (torch.randn(10),), lambda: ((Dim("dx", min=3, max=6) * 2 + 1,),),
                     r"Expected shape.*= 10 of input Tensor to be of the form 2\*dx \+ 1, "
                     r"where dx is an integer"),
    "derived root": (Flattens, (torch.randn(6, 2), torch.randn(12)),
                     lambda: ((Dim("dy", min=6) - 6, 2), (Dim("dy", min=6),)),
                     r"Specializations unexpectedly required \(dy\)!(.*\n)*.*solving the "
                     r"guards generated for dy - 6.*resulted in a specialized value of 6"
                     r"(.*\n)*.*Suggested fixes(.*\n)*.*dy = 12"),
    "related root": (ThreeShifted, (torch.randn(5), torch.randn(6), torch.randn(7)),
                     lambda: _out_of_order(),
                     r"Constraints violated \(dz\)!(.*\n)*.*The values of dz.*must always be "
                     r"related to the values of _dz - 2.*by.*(.*\n)*.*Suggested fixes:(.*\n)*"
                     r".*dz = _dz"),
    "equal": (MatMul, (torch.randn(10, 2, 3), torch.randn(10, 3, 4)),
              lambda: (tuple(Dim(n) for n in ("b", "m", "k1")),
                       tuple(Dim(n) for n in ("b", "k2", "n"))),
              r"Constraints violated \(k2\)!(.*\n)*.*k2.*and.*k1.*must always be equal"
              r"(.*\n)*.*Suggested fixes:(.*\n)*.*k2 = k1"),
    "guard": (MatMulIfSmall, (torch.randn(10, 2, 3), torch.randn(10, 3, 4)),
              lambda: (tuple(Dim(n) for n in ("b", "m", "k")),
                       tuple(Dim(n) for n in ("b", "k", "n"))),
              r"Constraints violated.*!(.*\n)*.*Not all values of k.*satisfy the generated "
              r"guard(.*\n)*.*Suggested fixes:(.*\n)*.*b = Dim\('b', max=15\)"),
    "data-dependent": (BranchesOnCount, (torch.tensor([2, 3, 5]),), lambda: None,
                       r"Could not guard on data-dependent expression"),
    "additional": (FirstThree, _four(),
                   lambda: _additional(_four(), _four(2)),
                   r"Expected input.*to be >= 3, but got 2"),
}


@pytest.mark.parametrize("name", list(WORDING))
def test_a_refusal_carries_torch_exports_phrase(name: str) -> None:
    model, args, spec, phrase = WORDING[name]
    with pytest.raises(st.ExportError) as info:
        st.export(model(), args, dynamic_shapes=spec())
    assert re.search(phrase, str(info.value)), str(info.value)
    assert info.value.fix  # and our own fix
    if name == "derived root":  # (no fix suggested for the derived dim itself)
        assert "dy - 6 = 6" not in str(info.value)


@pytest.mark.slow  # (torch.export's refusals: ~3 s together)
@pytest.mark.parametrize("name", list(WORDING))
def test_torch_exports_refusal_has_that_phrase(name: str) -> None:
    model, args, spec, phrase = WORDING[name]
    with pytest.raises(Exception) as info:
        torch.export.export(model(), args, dynamic_shapes=spec())
    assert re.search(phrase, str(info.value)), str(info.value)


def test_an_int_inputs_spec_place_is_the_input_itself() -> None:
    with pytest.raises(st.errors.SpecExampleError, match=r"dynamic_shapes for n is Dim\.DYNAMIC") as e:
        st.export(lambda x, n: x * n, (torch.randn(3), 8),
                  dynamic_shapes=(None, Dim.DYNAMIC(min=2, max=6)))
    assert ".shape" not in str(e.value).split("(as torch")[0]


# -- a TorchScript submodule called in forward: its graph, followed node by node ------------
class Gate(nn.Module):
    """Branches on a size; writes a buffer; reads a parameter of a child."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = nn.Buffer(torch.zeros(1))

    def forward(self, x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
        self.calls.add_(1)
        if x.shape[0] > 2:
            return self.lin(x).relu() * scale + self.calls
        return torch.cat([x, x], 0).sum(0, keepdim=True) - self.calls


class HoldsGate(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) + 1


@pytest.mark.slow  # (~3 s each; suite_17's CallsCompiled cases follow a graph by default)
@pytest.mark.parametrize("compile_", ["script", "trace"])
def test_a_torchscript_submodule_runs_its_graph_with_its_state(compile_: str) -> None:
    """A scripted Gate branches on the batch size (the program splits on it, checked at
    run time); a traced one runs the branch its trace froze, for every size, as eager's
    traced module does.  The buffer write is the program's, counted as in eager."""
    x = torch.randn(3, 4)

    def make():
        torch.manual_seed(0)
        if compile_ == "script":
            return HoldsGate(torch.jit.script(Gate()))
        traced = torch.jit.trace(Gate(), (x,), check_trace=False)
        traced.calls.zero_()  # (tracing ran the module)
        return HoldsGate(traced)

    model = make()
    ep = st.export(model, (x,), dynamic_shapes=({0: Dim("n", max=64)},))
    assert float(model.inner.calls) == 0.0  # exporting wrote nothing
    sizes = (1, 2, 3, 7) if compile_ == "script" else (3, 7)
    check_program(ep, make(), [(torch.randn(n, 4),) for n in sizes], [(torch.randn(2, 5),)])
    # (the program's buffer now counts the calls above: a fresh program for torch's side)
    conv = st.export(make(), (x,), dynamic_shapes=({0: Dim("n", max=64)},)).to_torch()
    conv, eager = conv.module(), make()
    for n in sizes:
        y = torch.randn(n, 4)
        same(conv(y), eager(y))


class Loops(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(x.shape[0]):
            x = x + i
        while x.shape[1] > 100 and x.sum() < 0:  # (the size decides: never entered)
            x = x + 1
        if x.shape[1] in [4, 8]:
            warnings.warn("width {} seen".format(x.shape[1]))
        return x.to(x.dtype)


class RaisesOnTwo(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] == 2:
            raise ValueError("two rows")
        return x


class HoldsOne(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) * 2


def test_a_torchscript_loop_unrolls_as_python_and_a_size_it_reads_is_checked() -> None:
    model = HoldsOne(torch.jit.script(Loops()))
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match="width 4 seen"):  # (eager's warning, while tracing)
        ep = st.export(model, (x,))
    check_program(ep, model, [(torch.randn(3, 4),)], [(torch.randn(4, 4),)])
    with pytest.raises(st.ConstraintViolationError, match="specialized to 3"):
        st.export(model, (x,), dynamic_shapes=({0: Dim("n")},))


def test_a_torchscript_node_it_does_not_follow_is_refused_naming_it() -> None:
    model = HoldsOne(torch.jit.script(RaisesOnTwo()))
    with pytest.raises(Exception, match="two rows"):
        model(torch.randn(2, 4))  # eager raises too
    with pytest.raises(st.UnsupportedInputError, match="prim::RaiseException") as info:
        st.export(model, (torch.randn(2, 4),))
    assert "submodule `inner`" in str(info.value)
    assert "model.inner = <the module before torch.jit.script>" in info.value.fix
    with pytest.raises(st.ConstraintViolationError, match="x.shape\\[0\\] != 2"):
        st.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: Dim("n")},))
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: Dim.DYNAMIC},))
    check_program(ep, model, [(torch.randn(n, 4),) for n in (0, 1, 5)], [(torch.randn(2, 4),)])


class Appends(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts: List[torch.Tensor] = []
        for i in range(3):
            parts.append(x * i)
        return torch.cat(parts)


class Inserts(Appends):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts: List[torch.Tensor] = [x]
        parts.insert(0, x * 2)
        return torch.cat(parts)


def test_a_torchscript_list_is_written_in_place_or_refused() -> None:
    """``append`` writes the graph's list itself; another write to a list (``insert``)
    would land in the copy torch.ops makes of a Python list: refused, never a program
    missing the element."""
    model = HoldsOne(torch.jit.script(Appends()))
    ep = st.export(model, (torch.randn(2, 3),), dynamic_shapes=({0: Dim("n")},))
    check_program(ep, model, [(torch.randn(n, 3),) for n in (0, 1, 4)], [(torch.randn(2, 4),)])
    with pytest.raises(st.UnsupportedInputError, match="aten::insert"):
        st.export(HoldsOne(torch.jit.script(Inserts())), (torch.randn(2, 3),))


class Builds(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        zeros = torch.zeros(x.shape[0], 4, dtype=torch.float64)
        return x.double() + zeros + torch.arange(x.shape[1]).to(torch.float64)


def test_a_torchscript_factory_takes_the_traced_sizes_and_dtype_codes() -> None:
    """Factories have no tensor input (sizes as symbolic ints); TorchScript's int-coded
    dtype comes back as torch.float64."""
    model = HoldsOne(torch.jit.script(Builds()))
    ep = st.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: Dim("n")},))
    check_program(ep, model, [(torch.randn(n, 4),) for n in (0, 1, 5)], [(torch.randn(2, 5),)])


class WritesNumbers(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.new_zeros(x.size(1))
        y[0] = 1.5                                   # aten::tensor.float, then copy_
        tail: List[int] = x.shape[1:]                # aten::slice.t
        return x.reshape([-1] + tail) * y + torch.tensor([x.shape[0], 2]).sum() + \
            len(list(x.shape)) + tail[0]


class FillsWithATensor(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full([2], x.sum())              # aten::ScalarImplicit


def test_torchscript_interpreter_operators_run_as_python_or_are_refused() -> None:
    """``aten::tensor`` / ``aten::list`` / ``aten::slice.t`` / ``aten::ScalarImplicit`` are
    TorchScript's interpreter's own (not in PyTorch's dispatcher): recorded as nodes they
    made programs that failed on every call (operator aten::tensor.float does not exist). aten::tensor,
    aten::list and list slices run as Python's; any other on tensors is refused naming it."""
    model = HoldsOne(torch.jit.script(WritesNumbers()))
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("n"), 1: Dim("m", min=1)},))
    check_program(ep, model, [(torch.randn(n, m),) for n, m in ((0, 1), (1, 5), (4, 2))],
                  [(torch.randn(2, 0),)])
    with pytest.raises(st.UnsupportedInputError, match="aten::ScalarImplicit"):
        st.export(HoldsOne(torch.jit.script(FillsWithATensor())), (torch.randn(2, 3),))


class ReadsItsSize(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(0)
        return x.view(n, -1).sum(1) * n + x.size(1) / 2


def test_a_traced_modules_size_as_a_tensor_stays_the_size() -> None:
    """torch.jit.trace records a size read as prim::NumToTensor (then aten::Int where it is
    used as a number): a 0-dim int64 tensor of the traced size, read back without a data
    read, so the program follows every size as eager's traced module does."""
    model = HoldsOne(torch.jit.trace(ReadsItsSize(), torch.randn(3, 4)))
    ep = st.export(model, (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("n", min=1), 1: Dim("m")},))
    check_program(ep, model, [(torch.randn(n, m),) for n, m in ((1, 2), (5, 3), (2, 0))])


class StepsOverRows(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros_like(x[0])
        for i in range(1, x.shape[0], 2):            # aten::__range_length, __derive_index
            acc = acc + x[i] * i
        return acc


def test_a_torchscript_range_loop_counts_as_pythons() -> None:
    """range(lo, hi, step)'s trip count and indices are TorchScript number operators
    (refused as a missing shape rule before): the loop unrolls as Python's, its count
    checked on the inputs."""
    model = HoldsOne(torch.jit.script(StepsOverRows()))
    ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim("m")},))
    check_program(ep, model, [(torch.randn(n, m),) for n, m in ((4, 0), (5, 2), (4, 7))],
                  [(torch.randn(6, 3),), (torch.randn(3, 3),)])
