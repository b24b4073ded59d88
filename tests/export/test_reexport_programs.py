"""st.export of a program's own module: torch.export's ``ep.module()`` and ours after
``to_torch()``.  Such a module's code calls torch's run-time assertion ops
(``aten._assert_scalar`` of a condition on a size read from data) and the range ops;
each is the check it was written from, so the re-export stands where torch.export's
re-export of the same module stands, checks the same inputs and computes eager's result."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class Filled(torch.nn.Module):
    """A size read from data, bounded by checks, then used as a size."""

    def forward(self, x, y):
        b = x.item()
        torch._check(b >= 1)
        torch._check(b <= 6)
        return torch.full((b, 2), 1.0) * y.sum()


class Ranged(torch.nn.Module):
    """torch's range op called directly (eager checks the value too)."""

    def forward(self, x):
        b = x.item()
        torch.ops.aten.sym_constrain_range_for_size.default(b, min=2, max=5)
        torch.ops.aten.sym_constrain_range.default(b, max=4)
        return torch.zeros(b) + 1


def _modules(model, args):
    """The module of torch.export's program and of ours converted to torch's."""
    return {"torch": torch.export.export(model, args).module(),
            "ours": st.export(model, args).to_torch().module()}


def _outcome(fn, *args):
    try:
        return fn(*args)
    except (RuntimeError, AssertionError, st.InputMismatchError):
        return "refused"


@pytest.mark.parametrize("which", ["torch", "ours"])
def test_reexport_keeps_data_checks(which):
    model, y = Filled(), torch.randn(2)
    module = _modules(model, (torch.tensor([3]), y))[which]
    again = st.export(module, (torch.tensor([3]), y))
    theirs = torch.export.export(module, (torch.tensor([3]), y)).module()
    for v in (1, 6):
        x = torch.tensor([v])
        torch.testing.assert_close(again.module()(x, y), model(x, y))
        torch.testing.assert_close(again.module()(x, y), theirs(x, y))
    for v in (0, 7):  # eager's checks fail: refused by both, before any result
        x = torch.tensor([v])
        assert _outcome(again.module(), x, y) == "refused"
        assert _outcome(theirs, x, y) == "refused"


@pytest.mark.slow
def test_reexport_converted_again_by_torch():
    """The re-export, converted, exported once more by torch.export: still checked."""
    y = torch.randn(2)
    module = st.export(Filled(), (torch.tensor([3]), y)).to_torch().module()
    again = st.export(module, (torch.tensor([3]), y))
    twice = torch.export.export(again.to_torch().module(), (torch.tensor([3]), y)).module()
    assert twice(torch.tensor([4]), y).shape == (4, 2)
    assert _outcome(twice, torch.tensor([0]), y) == "refused"


@pytest.mark.parametrize("which", ["torch", "ours"])
def test_reexport_of_range_ops(which):
    model = Ranged()
    module = _modules(model, (torch.tensor([3]),))[which]
    again = st.export(module, (torch.tensor([3]),)).module()
    theirs = torch.export.export(module, (torch.tensor([3]),)).module()
    for v in (2, 3, 4):
        x = torch.tensor([v])
        torch.testing.assert_close(again(x), model(x))
        torch.testing.assert_close(again(x), theirs(x))
    for v in (1, 5, 0):  # outside [2, 4]: eager's op raises, both programs refuse
        x = torch.tensor([v])
        assert _outcome(model, x) == "refused"
        assert _outcome(again, x) == "refused"
        assert _outcome(theirs, x) == "refused"


def test_assertion_op_in_user_code():
    """``aten._assert_scalar`` written by hand: a fact for the trace (export reads no
    data, so the example's value does not decide it), checked at run time as eager's."""

    class Asserted(torch.nn.Module):
        def forward(self, x):
            b = x.item()
            torch.ops.aten._assert_scalar.default(b >= 5, "b must be >= 5")
            return torch.zeros(b)

    args = (torch.tensor([6]),)
    ours = st.export(Asserted(), args).module()
    theirs = torch.export.export(Asserted(), args).module()
    for v in (5, 9):
        assert ours(torch.tensor([v])).shape == theirs(torch.tensor([v])).shape == (v,)
    for v in (4, 0):
        assert _outcome(ours, torch.tensor([v])) == _outcome(theirs, torch.tensor([v])) \
            == "refused"


class NonZero(torch.nn.Module):
    def forward(self, x):
        return torch.is_nonzero(x)


@pytest.mark.parametrize("example", [0, 1])
def test_reexport_of_a_bool_read_from_data(example):
    """Our converted ``is_nonzero`` reads the bool as ``item(ne(x, 0)) == 1``: traced again,
    ``== 1`` of that bool is Python's (``True == 1``), for either example."""
    args = (torch.tensor(example),)
    module = st.export(NonZero(), args).to_torch().module()
    again = st.export(module, args).module()
    theirs = torch.export.export(module, args).module()
    for v in (0, 1, 7):
        x = torch.tensor(v)
        assert again(x) is NonZero()(x) or again(x) == NonZero()(x)
        assert again(x) == theirs(x) == (v != 0)


class Inner(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n = Inner()
        self.l = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.l(self.n(x))


@pytest.mark.parametrize("which", ["torch", "ours"])
def test_preserved_names_on_a_program_module_are_left_out(which):
    """A program's module no longer calls its submodules: torch.export leaves a preserved
    name out there (no signature kept), and so does st.export; a plain module still
    refuses a name it does not hold, as torch's AttributeError does."""
    args = (torch.randn(2, 3),)
    model = Outer()
    if which == "torch":
        module = torch.export.export(model, args, preserve_module_call_signature=("n",)).module()
    else:
        module = st.export(model, args, preserve_module_call_signature=("n",)).to_torch().module()
    ours = st.export(module, args, preserve_module_call_signature=("n",))
    theirs = torch.export.export(module, args, preserve_module_call_signature=("n",))
    assert all(e.signature is None for e in theirs.module_call_graph if e.fqn == "n")
    assert all(e.signature is None for e in ours.to_torch().module_call_graph if e.fqn == "n")
    torch.testing.assert_close(ours.module()(args[0]), model(args[0]))
    torch.testing.assert_close(ours.module()(args[0]), theirs.module()(args[0]))
    with pytest.raises(AttributeError):
        torch.export.export(model, args, preserve_module_call_signature=("m",))
    with pytest.raises(st.ExportError, match="not a submodule"):
        st.export(model, args, preserve_module_call_signature=("m",))


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x, y):
        return self.linear(x) * y


class TakesModule(torch.nn.Module):
    def forward(self, x, y, m):
        return m(x, y) + x + y


def test_reexport_with_a_module_input():
    """torch's program module registers a module input's class with torch's pytree for
    its call and takes it away after: st.export of that module leaves the registry as
    it found it (was: KeyError on the way out) and computes eager's result."""
    from torch.utils import _pytree

    args = (torch.randn(3), torch.randn(3), Scaled())
    module = torch.export.export(TakesModule(), args, strict=False).module()
    ours = st.export(module, args).module()
    theirs = torch.export.export(module, args, strict=False).module()
    assert Scaled not in _pytree.SUPPORTED_NODES
    other = (torch.randn(3), torch.randn(3), Scaled())
    torch.testing.assert_close(ours(*other), TakesModule()(*other))
    torch.testing.assert_close(ours(*other), theirs(*other))


class NoGradChild(torch.nn.Module):
    def forward(self, a, b):
        with torch.no_grad():
            return a + b


class NoGradParent(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m1 = NoGradChild()

    def forward(self, a, b):
        return self.m1(a, b)


@pytest.mark.parametrize("which", ["torch", "ours"])
def test_reexported_grad_region_unflattens(which):
    """A program's module calls its no_grad region's graph (a higher-order op's body):
    traced again, that graph is no module call of the user's, so torch's unflatten of
    the re-export runs (was: the region's output placed in a module 'submod_1')."""
    args = (torch.ones(3, 3), torch.ones(3, 3))
    if which == "torch":
        module = torch.export.export(NoGradParent(), args).module()
    else:
        module = st.export(NoGradParent(), args).to_torch().module()
    ours = st.export(module, args).to_torch()
    theirs = torch.export.export(module, args)
    x = (torch.randn(3, 3), torch.randn(3, 3))
    expected = NoGradParent()(*x)
    torch.testing.assert_close(torch.export.unflatten(ours)(*x), expected)
    torch.testing.assert_close(torch.export.unflatten(theirs)(*x), expected)
    assert not ours.module()(*x).requires_grad


class CondOnInts(torch.nn.Module):
    """torch.cond whose branches read an int input (a size, with Dim.DYNAMIC)."""

    def forward(self, x, trigger, target):
        return torch.cond(trigger == 1, lambda: x + target, lambda: x * target, ())


class CondIntOperand(torch.nn.Module):
    """An int given as a cond operand, as torch's converted programs pass one."""

    def forward(self, x, n):
        return torch.cond(x.sum() > 0, lambda a, k: a + k, lambda a, k: a * k, (x, n))


def test_cond_with_number_operands_matches_torch():
    D = torch.export.Dim.DYNAMIC
    args = (torch.randn(2), 0, 2)
    shapes = (None, D, D)
    ours = st.export(CondOnInts(), args, dynamic_shapes=shapes)
    theirs = torch.export.export(CondOnInts(), args, dynamic_shapes=shapes)
    again = st.export(ours.to_torch().module(), args, dynamic_shapes=shapes).module()
    for call in [(torch.randn(2), 1, 5), (torch.randn(2), 0, 0), (torch.randn(2), 3, 1)]:
        expected = CondOnInts()(*call)
        torch.testing.assert_close(ours.module()(*call), expected)
        torch.testing.assert_close(theirs.module()(*call), expected)
        torch.testing.assert_close(again(*call), expected)
    # written by hand, an int operand is refused by eager's torch.cond and both exports
    # (torch's own programs pass sizes so, from the branches' closures: the operator
    # takes them, and the re-export above read them as the closure would)
    args2 = (torch.randn(3), 4)
    with pytest.raises(RuntimeError, match="tensor leaves"):
        CondIntOperand()(*args2)
    with pytest.raises(RuntimeError, match="tensor leaves"):
        torch.export.export(CondIntOperand(), args2, dynamic_shapes=(None, D))
    with pytest.raises(st.ExportError, match="operands must be tensors"):
        st.export(CondIntOperand(), args2, dynamic_shapes=(None, D))


class SizesOnly(torch.nn.Module):
    """Outputs computed from an input's size alone (a no_grad block among them)."""

    def forward(self, x):
        n = x.shape[0] + 2
        m = n + 2
        with torch.no_grad():
            y = n * 4
        return m, y


def test_reexport_of_sizes_only_program():
    """Our converted program's own input checks are dropped when it is traced again; the
    size read for the outputs afterwards is still in the graph (was: a node of no graph,
    and to_torch failed with KeyError)."""
    dx = torch.export.Dim("dx")
    module = st.export(SizesOnly(), (torch.randn(6),), dynamic_shapes=((dx,),)) \
        .to_torch().module()
    again = st.export(module, (torch.randn(6),), dynamic_shapes=((dx,),))
    theirs = torch.export.export(module, (torch.randn(6),), dynamic_shapes=((dx,),)).module()
    for n in (2, 9):
        x = torch.randn(n)
        assert again.module()(x) == again.to_torch().module()(x) == theirs(x) == \
            SizesOnly()(x)


class AssertsEqual(torch.nn.Module):
    def forward(self, q, k):
        torch._assert(k.shape[0] == q.shape[0], "q and k must agree")
        return q + k.sum(), k * 2


def test_torch_assert_relating_dims():
    """``torch._assert`` of a relation between two input sizes: eager raises where it
    fails, so the program checks it at run time with nothing assumed: two named Dims it
    relates stay independent (torch.export refuses that spec: sound, stricter), and the
    converted module's guard code, exported again, is that requirement too."""
    D = torch.export.Dim
    args = (torch.randn(4), torch.randn(4))
    named = ((D("a", max=100),), (D("b", max=100),))
    with pytest.raises(Exception, match="must always be equal"):
        torch.export.export(AssertsEqual(), args, dynamic_shapes=named)
    ours_named = st.export(AssertsEqual(), args, dynamic_shapes=named)
    again_named = st.export(ours_named.to_torch().module(), args, dynamic_shapes=named)
    assert _outcome(again_named.module(), torch.randn(3), torch.randn(5)) == "refused"
    shapes = ((D.DYNAMIC,), (D.DYNAMIC,))
    ep = st.export(AssertsEqual(), args, dynamic_shapes=shapes)
    theirs = torch.export.export(AssertsEqual(), args, dynamic_shapes=shapes).module()
    again = st.export(ep.to_torch().module(), args, dynamic_shapes=shapes)
    for program in (ep.module(), again.module(), again.to_torch().module(), theirs):
        for n in (1, 7):
            x = (torch.randn(n), torch.randn(n))
            torch.testing.assert_close(program(*x), AssertsEqual()(*x))
        assert _outcome(program, torch.randn(3), torch.randn(5)) == "refused"
    with pytest.raises(AssertionError):
        AssertsEqual()(torch.randn(3), torch.randn(5))


class FillsPrefix(torch.nn.Module):
    """A write into the first n columns: the op requires n <= m (eager raises past it)."""

    def forward(self, mask, fill):
        mask = mask.clone()
        mask[:, :fill.shape[-1]] = fill
        return mask


def test_reexport_of_a_guard_with_min_relating_named_dims():
    # the converted module's guard `n == min(m, n)` calls torch.sym_min: Python's min
    # would compare m and n, a branch on the re-export's sizes (refused as a relation)
    D = torch.export.Dim
    args = (torch.randn(2, 4), torch.randn(2, 3))
    spec = ({1: D("m")}, {1: D("n")})
    module = st.export(FillsPrefix(), args, dynamic_shapes=spec).to_torch().module()
    theirs = torch.export.export(module, args, dynamic_shapes=spec).module()
    again = st.export(module, args, dynamic_shapes=spec)
    for program in (module, again.module(), again.to_torch().module(), theirs):
        for m, n in ((4, 3), (5, 5), (7, 1), (3, 0)):
            if program is theirs and m == n:
                continue  # (torch's re-export guards m != n: over-restrictive, not ours)
            x = (torch.randn(2, m), torch.randn(2, n))
            torch.testing.assert_close(program(*x), FillsPrefix()(*x))
        assert _outcome(program, torch.randn(2, 3), torch.randn(2, 5)) == "refused"


def test_reexport_of_a_row_read_keeps_the_named_dim():
    # x[0] needs a row: the converted module's guard `x.size()[0] >= 1` traced again is
    # that requirement, checked at run time (torch's re-export accepts it too)
    class FirstRow(torch.nn.Module):
        def forward(self, x):
            return x[0] + x.shape[0], x.shape[0]

    spec = {"x": (torch.export.Dim("a"), torch.export.Dim("b"))}
    module = st.export(FirstRow(), (torch.ones(2, 3),), dynamic_shapes=spec).to_torch().module()
    torch.export.export(module, (torch.ones(2, 3),), dynamic_shapes=spec)
    again = st.export(module, (torch.ones(2, 3),), dynamic_shapes=spec)
    for n in (1, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(again.module()(x), FirstRow()(x))
    assert _outcome(again.module(), torch.randn(0, 3)) == "refused"
