"""torch's ``fake_tensor_propagate_real_tensors`` flag (issue 21): with it set, torch.export
refuses a custom op whose fake kernel disagrees with its kernel (sizes, dtype, aliasing) or
whose kernel writes or returns an argument its schema does not declare; st.export runs the
program once on the example inputs and refuses the same ops, naming the op and the fix.
Each case against torch.export under the same flag."""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch._functorch.config  # (tests may import it; the library never does)
from torch import nn
from torch.export import Dim

import safetrace as st
from safetrace.errors import FakeKernelMismatch

from tests.export.dropin_check import same


@torch.library.custom_op("st_realk::swapped", mutates_args=())
def swapped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b


swapped.register_fake(lambda a, b: a.new_empty(a.shape[1], a.shape[0]))


@torch.library.custom_op("st_realk::wrong_dtype", mutates_args=())
def wrong_dtype(a: torch.Tensor) -> torch.Tensor:
    return a * 2


wrong_dtype.register_fake(lambda a: a.new_empty(a.shape, dtype=torch.int32))


@torch.library.custom_op("st_realk::fake_alias", mutates_args=())
def fake_alias(a: torch.Tensor) -> torch.Tensor:
    return a * 2


fake_alias.register_fake(lambda a: a)


@torch.library.custom_op("st_realk::bumps", mutates_args=())
def bumps(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.add_(1)
    return x.clone()


bumps.register_fake(lambda x, y: x.clone())


@torch.library.custom_op("st_realk::bumps_declared", mutates_args={"y"})
def bumps_declared(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.add_(1)
    return x.clone()


bumps_declared.register_fake(lambda x, y: x.clone())


@torch.library.custom_op("st_realk::bumps_list", mutates_args=())
def bumps_list(xs: list[torch.Tensor]) -> torch.Tensor:
    x, y = xs
    y.add_(1)
    return x.clone()


bumps_list.register_fake(lambda xs: xs[0].clone())


@torch.library.custom_op("st_realk::bumps_list_declared", mutates_args={"xs"})
def bumps_list_declared(xs: list[torch.Tensor]) -> torch.Tensor:
    x, y = xs
    y.add_(1)
    return x.clone()


bumps_list_declared.register_fake(lambda xs: xs[0].clone())


class CallList(torch.nn.Module):
    def __init__(self, op: Callable) -> None:
        super().__init__()
        self.op = op

    def forward(self, xs):
        return self.op(xs)


@torch.library.custom_op("st_realk::adds", mutates_args=())
def adds(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


adds.register_fake(lambda x, y: x + y)


class Call(torch.nn.Module):
    def __init__(self, op: Callable) -> None:
        super().__init__()
        self.op = op

    def forward(self, *xs):
        return self.op(*xs)


def _real(fn: Callable) -> None:
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        fn()


R = torch.randn
DYNAMIC = (({0: Dim("d0"), 1: Dim("d1")},) * 2,)  # (forward(*xs): one entry, for xs)
REFUSED = [
    ("fake sizes swapped", swapped, (R(4, 8), R(4, 8)), None, r"shape \(4, 8\)",
     "size mismatch"),
    ("fake sizes swapped, dynamic", swapped, (R(4, 8), R(4, 8)), DYNAMIC,
     r"shape \(4, 8\)", "size mismatch"),
    ("fake dtype", wrong_dtype, (R(4, 4),), None, "torch.int32", "metadata mismatch"),
    ("fake returns its input", fake_alias, (R(4, 4),), None, "an alias", "aliasing mismatch"),
    ("kernel writes an undeclared argument", bumps, (R(8), R(8)), None, "argument 'y'",
     "argument 'y'"),
]


@pytest.mark.parametrize("name, op, args, spec, words, torch_words", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_refused_as_torch_refuses(name, op, args, spec, words, torch_words) -> None:
    with pytest.raises(Exception, match=torch_words) as theirs:
        _real(lambda: torch.export.export(Call(op), args, dynamic_shapes=spec))
    with pytest.raises(FakeKernelMismatch, match=words) as info:
        _real(lambda: st.export(Call(op), args, dynamic_shapes=spec))
    assert "docs/errors.md#fake-mismatch" in str(info.value)
    # code catching torch's refusal (a RuntimeError; MetadataMismatchError for the fake
    # kernel's own mismatches) catches ours
    assert isinstance(info.value, type(theirs.value))


def test_list_argument_written() -> None:
    """A kernel writing an element of a list argument: refused as torch refuses it when
    the schema does not declare it (it was an internal error), exported when it does."""
    args = ([R(8), R(8)],)
    with pytest.raises(RuntimeError, match="argument 'xs'"):
        _real(lambda: torch.export.export(CallList(bumps_list), args))
    with pytest.raises(FakeKernelMismatch, match="argument 'xs'"):
        _real(lambda: st.export(CallList(bumps_list), args))
    _real(lambda: torch.export.export(CallList(bumps_list_declared), args))
    ep = st.export(CallList(bumps_list_declared), ([R(8), R(8)],))
    for _ in range(2):
        got = [R(8), R(8)]
        want_in = [t.clone() for t in got]
        want = bumps_list_declared(want_in)
        out = ep.module()(got)
        assert torch.equal(out, want) and torch.equal(got[1], want_in[1])


@pytest.mark.parametrize("op, args, spec", [
    (swapped, (R(4, 4), R(4, 4)), None),  # (equal sizes: the swap is not seen, as in torch)
    (swapped, (R(4, 4), R(4, 4)), DYNAMIC),
    (bumps_declared, (R(8), R(8)), None),
    (adds, (torch.full((8,), torch.nan), torch.full((8,), torch.nan)), None),  # NaN == NaN
], ids=["equal sizes", "equal sizes, dynamic", "declared write", "nan inputs"])
def test_exported_as_torch_exports(op, args, spec) -> None:
    _real(lambda: torch.export.export(Call(op), args, dynamic_shapes=spec))
    kept = [a.clone() for a in args]
    ep = st.export(Call(op), args, dynamic_shapes=spec)
    _real(lambda: st.export(Call(op), args, dynamic_shapes=spec))
    for a, b in zip(args, kept):  # the check ran on copies: the inputs are unchanged
        torch.testing.assert_close(a, b, equal_nan=True)
    want = [a.clone() for a in args]
    got = [a.clone() for a in args]
    torch.testing.assert_close(ep.module()(*got), Call(op)(*want), equal_nan=True)
    torch.testing.assert_close(got, want, equal_nan=True)  # the declared write happened


def test_without_the_flag_the_fake_is_trusted_as_in_torch() -> None:
    args = (R(4, 8), R(4, 8))
    torch.export.export(Call(swapped), args)
    assert st.export(Call(swapped), args).graph is not None



def test_the_flag_is_read_at_each_export_however_it_is_set() -> None:
    """The flag read from torch's config entry (an attribute read there costs a Python
    __getattr__ after a failed lookup): each export in one process sees the flag as torch
    reads it, set by ``patch``, by assignment, or by another thread's ``patch`` (torch's
    overrides are per context: this thread does not see it)."""
    import threading

    config = torch._functorch.config
    args = (R(4, 8), R(4, 8))

    def refused() -> bool:
        try:
            st.export(Call(swapped), args)
        except FakeKernelMismatch:
            return True
        return False

    assert not refused()
    with config.patch(fake_tensor_propagate_real_tensors=True):
        assert refused()
        seen: list = []
        other = threading.Thread(target=lambda: seen.append(refused()))
        other.start()
        other.join()
        assert seen == [False]
    assert not refused()
    with config.patch(fake_tensor_propagate_real_tensors=False):  # (put back on exit)
        config.fake_tensor_propagate_real_tensors = True
        assert refused()
        config.fake_tensor_propagate_real_tensors = False
        assert not refused()
    assert not refused()

# -- a custom op without a fake kernel: inferred from one run of its kernel ---------------
# (torch's test_draft_export_infers_fake_kernel, test_draft_export_fake_kernel_inference_errors)
@torch.library.custom_op("st_draft::outer", mutates_args=())
def outer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


@torch.library.custom_op("st_draft::as_int", mutates_args=())
def as_int(x: torch.Tensor) -> torch.Tensor:
    """int64 for inputs of one row, float otherwise: the inferred dtype holds only there."""
    return x.long() if x.shape[0] == 1 else x * 1


@torch.library.custom_op("st_draft::offset", mutates_args=())
def offset(x: torch.Tensor) -> torch.Tensor:
    return x.expand(8, x.shape[1]).contiguous()[4]


@torch.library.custom_op("st_draft::strided", mutates_args=())
def strided(x: torch.Tensor) -> torch.Tensor:
    return torch.ones(3, 3).diagonal()


_LIB = torch.library.Library("st_draft", "FRAGMENT")
_LIB.define("first_row(Tensor x) -> Tensor")
_LIB.impl("first_row", lambda x: x[0].clone(), "CPU")


class OuterAndRow(nn.Module):
    def forward(self, x, y):
        a = torch.ops.st_draft.outer(x + 1, y)
        return a.sum(0), torch.ops.st_draft.first_row(a * 2)


def test_missing_fake_inferred_from_the_kernel_as_torch() -> None:
    args = (R(1, 3), R(2, 1))
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = st.export(OuterAndRow(), args)
        ref = torch.export.export(OuterAndRow(), args)
    sizes = [n.meta["val"].shape for n in ep.graph.nodes
             if n.op == "call_function" and n.target._schema.name.startswith("st_draft::")]
    assert all(isinstance(s, torch.SymInt) for shape in sizes for s in shape), sizes
    for prog in (ep, ep.to_torch(), ref):
        for _ in range(2):
            fresh = (R(1, 3), R(2, 1))
            same(prog.module()(*fresh), OuterAndRow()(*fresh))


class IntOf(nn.Module):
    def forward(self, x):
        return torch.ops.st_draft.as_int(x)


def test_the_inferred_dtype_is_checked_when_the_program_runs() -> None:
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = st.export(IntOf(), (R(1, 3),), dynamic_shapes=({0: Dim("n")},))
    same(ep.module()(torch.ones(1, 3)), IntOf()(torch.ones(1, 3)))
    with pytest.raises(RuntimeError, match="[Dd]type"):  # the kernel returns float here
        ep.module()(torch.ones(2, 3))


@pytest.mark.parametrize("op, words", [(offset, "non-zero storage offset"),
                                       (strided, "not dense in memory")],
                         ids=["storage offset", "not dense"])
def test_a_kernel_result_no_fake_can_describe_is_refused_as_torch(op, words) -> None:
    args = (R(1, 3),)
    with pytest.raises(RuntimeError, match=words):
        _real(lambda: torch.export.export(Call(op), args))
    with pytest.raises(FakeKernelMismatch, match=words):
        _real(lambda: st.export(Call(op), args))


def test_without_the_flag_a_missing_fake_is_refused() -> None:
    with pytest.raises(st.ExportError, match="no fake implementation"):
        st.export(OuterAndRow(), (R(1, 3), R(2, 1)))


# -- bool() of data, decided by the example's value (torch's test_real_tensor_bool_cast) --
class SignBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return bool(x.eq(0.5).any()), x - 1


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["positive", "negative"])
def test_bool_of_data_is_the_examples_and_checked_at_run_time(sign) -> None:
    x = torch.full((4,), sign)
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = st.export(SignBranch(), (x,))
        ref = torch.export.export(SignBranch(), (x,))
    for prog in (ep, ep.to_torch(), ref):
        same_side = torch.rand(4) * sign + sign
        same(prog.module()(same_side), SignBranch()(same_side))
        with pytest.raises(RuntimeError):  # the other side's data: refused when it runs
            prog.module()(-same_side)
    with pytest.raises(st.ExportError, match="bool"):  # without the flag: refused
        st.export(SignBranch(), (x,))


@torch.library.custom_op("st_draft::pieces", mutates_args=())
def pieces(x: torch.Tensor) -> list[torch.Tensor]:
    return [t.clone() for t in x.unbind(0)]


def test_a_list_result_without_a_fake_stays_refused() -> None:
    """Its length is data the program could not check: no fake is inferred for it."""
    with pytest.raises(st.ExportError, match="no fake implementation"):
        _real(lambda: st.export(Call(pieces), (R(3, 2),)))


@torch.library.custom_op("st_draft::with_count", mutates_args=())
def with_count(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    return x * 2, int((x > 0).sum())


def test_a_number_result_without_a_fake_stays_refused() -> None:
    """Its value in the example would become a constant of the program: refused."""
    with pytest.raises(st.ExportError, match="no fake implementation"):
        _real(lambda: st.export(Call(with_count), (R(3, 2),)))


class NoisyBranch(nn.Module):
    def forward(self, x):
        noise = torch.rand(3)
        if (x + noise).sum() > -100:
            return torch.ops.st_draft.outer(x, noise).sum(0)
        return x


def test_inferring_runs_on_copies_and_leaves_the_generator_alone() -> None:
    x = torch.zeros(1, 3)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = st.export(NoisyBranch(), (x,))
    assert torch.equal(torch.get_rng_state(), before)  # (the program's own draws: none)
    assert torch.equal(x, torch.zeros(1, 3))
    torch.manual_seed(1)
    got = ep.module()(torch.ones(1, 3))
    torch.manual_seed(1)
    same(got, NoisyBranch()(torch.ones(1, 3)))
