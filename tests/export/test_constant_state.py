"""A tensor the model holds outside its parameters and buffers (a plain attribute, an
element of a list or dict attribute, an object's attribute, a closure's or a global) that
forward writes in place is program state, as a buffer is (issue 21).

torch.export lifts such a tensor as a constant and its program holds the tensor itself:
every ``ep.module()`` writes it, so they share it, and running the program writes the
model (torch's non-strict export also writes it once while tracing: the tests zero
torch's constants after its export so both sequences start alike).  safetrace shares it
the same way, but, as for buffers (docs/deploying.md "Program state"), in a copy made once
per source tensor: every module of the program, every program exported from the same
model and ``ep.to_torch()`` run on that copy, and the model is never written (on purpose:
the one difference from torch in these tests).
"""

from __future__ import annotations

import copy
import io

import pytest
import torch
from torch import nn

import safetrace as st


class Counted(nn.Module):
    """A plain tensor attribute and a buffer, both written in place by every call."""

    def __init__(self) -> None:
        super().__init__()
        self.c = torch.zeros(3)
        self.register_buffer("b", torch.zeros(3))

    def forward(self, x):
        self.c.add_(1)
        self.b.add_(2)
        return x * self.c + self.b


def _both(model_cls, x, dim=None):
    """(safetrace's program, its model, torch's program, its model), torch's constants
    reset to the model's initial values after its tracing write."""
    ours, theirs = model_cls(), model_cls()
    spec = None if dim is None else {"x": {0: dim[0]("n", min=0, max=8)}}
    ep = st.export(ours, (x,), dynamic_shapes=spec)
    if dim is not None:
        spec = {"x": {0: dim[1]("n", min=0, max=8)}}
    ref = torch.export.export(theirs, (x,), dynamic_shapes=spec)
    for t in ref.constants.values():
        t.zero_()
    return ep, ours, ref, theirs


_DIMS = (st.Dim, torch.export.Dim)


def test_every_module_shares_a_written_tensor_attribute_as_in_torch():
    ep, model, ref, ref_model = _both(Counted, torch.randn(2, 3), _DIMS)
    xs = [torch.randn(n, 3) for n in (2, 0, 1, 5)]
    ours, theirs = (ep.module(), ep.module()), (ref.module(), ref.module())
    for i, x in enumerate(xs):  # alternating between two modules of each program
        torch.testing.assert_close(ours[i % 2](x), theirs[i % 2](x))
    torch.testing.assert_close(ep.module()(xs[0]), ref.module()(xs[0]))  # a fresh one too
    assert ep.constants["c"].tolist() == [5.0] * 3 == ref.constants["c"].tolist()
    assert ep.state_dict["b"].tolist() == [10.0] * 3
    # eager, one module of the same model: the same sequence
    eager = Counted()
    for x in (*xs, xs[0]):
        eager(x)
    torch.testing.assert_close(ep.constants["c"], eager.c)
    # torch wrote the model it exported; safetrace never does (on purpose)
    assert ref_model.c.tolist() == [5.0] * 3
    assert model.c.tolist() == [0.0] * 3 and model.b.tolist() == [0.0] * 3
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 3))
    assert ep.constants["c"].tolist() == [5.0] * 3  # refused before running


def test_to_torch_continues_from_the_program_state_and_never_writes_the_model():
    ep, model, ref, ref_model = _both(Counted, torch.randn(2, 3), _DIMS)
    x = torch.randn(1, 3)
    ep.module()(x)
    ref.module()(x)
    converted = ep.to_torch()
    for m in (converted.module(), converted.module()):  # torch's modules of our program
        torch.testing.assert_close(m(x), ref.module()(x))
    torch.testing.assert_close(ep.module()(x), ref.module()(x))  # and ours continue
    assert converted.constants["c"] is ep.constants["c"]
    assert ep.constants["c"].tolist() == [4.0] * 3
    assert model.c.tolist() == [0.0] * 3  # torch's program wrote its model: 4.0
    assert ref_model.c.tolist() == [4.0] * 3


def test_deepcopy_of_a_module_takes_the_constant_along():
    ep = st.export(Counted(), (torch.randn(2, 3),))
    x = torch.randn(2, 3)
    m = ep.module()
    m(x)
    twin = copy.deepcopy(m)  # c = 1, its own from now on
    twin(x)
    twin(x)
    torch.testing.assert_close(m(x), x * 2 + 4)  # the program's: twin's writes not seen
    torch.testing.assert_close(twin(x), x * 4 + 8)
    assert ep.constants["c"].tolist() == [2.0] * 3


def test_save_records_the_written_constant_and_load_gives_it_memory_of_its_own(tmp_path):
    model = Counted()
    ep = st.export(model, (torch.randn(2, 3),))
    x = torch.randn(2, 3)
    ep.module()(x)
    ep.module()(x)
    path = tmp_path / "p.st"
    st.save(ep, path)  # the constant as the modules left it, as the buffer
    raw = bytearray(path.read_bytes())
    snapshot = bytes(raw)
    for loaded in (st.load(raw), st.load(path, mmap=True)):
        assert loaded.constants["c"].tolist() == [2.0] * 3
        first, second = loaded.module(), loaded.module()
        torch.testing.assert_close(first(x), x * 3 + 6)
        torch.testing.assert_close(second(x), x * 4 + 8)  # shared by its modules
        converted = loaded.to_torch()
        torch.testing.assert_close(converted.module()(x), x * 5 + 10)
    assert bytes(raw) == snapshot  # the caller's bytes and the file: never written
    assert path.read_bytes() == snapshot
    torch.testing.assert_close(st.load(path).module()(x), x * 3 + 6)
    assert model.c.tolist() == [0.0] * 3


class Holder:
    def __init__(self) -> None:
        self.t = torch.zeros(2)


class Held(nn.Module):
    """Tensors in a list, a dict and a plain object's attribute, one of them only read."""

    def __init__(self) -> None:
        super().__init__()
        self.ts = [torch.zeros(2), torch.ones(2)]
        self.d = {"a": torch.zeros(2)}
        self.h = Holder()

    def forward(self, x):
        self.ts[0].add_(1)
        self.d["a"].add_(x.sum())
        self.h.t.sub_(1)
        return x + self.ts[0] * self.ts[1] + 10 * self.d["a"] + 100 * self.h.t


def test_tensors_in_lists_dicts_and_objects_are_state_as_in_torch():
    """Were a copy per call (every call started from the model's values: writes dropped)."""
    xs = [torch.randn(n, 2) for n in (3, 0, 1, 4)]
    ep, model, ref, ref_model = _both(Held, xs[0], _DIMS)
    ref_model.ts[1].fill_(1.0)  # (the read-only one: torch's reset zeroed it too)
    ours, theirs = (ep.module(), ep.module()), (ref.module(), ref.module())
    eager = Held()
    for i, x in enumerate(xs):
        want = eager(x)
        torch.testing.assert_close(ours[i % 2](x), want)
        torch.testing.assert_close(theirs[i % 2](x), want)
    torch.testing.assert_close(ep.to_torch().module()(xs[0]), eager(xs[0]))
    assert [t.tolist() for t in (model.ts[0], model.d["a"], model.h.t)] == [[0.0] * 2] * 3
    assert ep.constants[next(k for k, v in ep.constants.items()
                             if torch.equal(v, torch.ones(2)))] is model.ts[1]  # read: no copy
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 2))


_GLOBAL = torch.zeros(2)


def _closure_model():
    held = torch.zeros(2)

    def step(x):
        held.add_(1)
        _GLOBAL.add_(2)
        return x + held + _GLOBAL

    class Closure(nn.Module):
        def forward(self, x):
            return step(x)

    return Closure(), held


def test_a_closure_or_global_tensor_written_is_program_state():
    """torch.export's modules share such a tensor too; its write was dropped here."""
    model, held = _closure_model()
    before = _GLOBAL.clone()
    ep = st.export(model, (torch.randn(2),))
    x = torch.randn(2)
    m1, m2 = ep.module(), ep.module()
    torch.testing.assert_close(m1(x), x + 1 + before + 2)
    torch.testing.assert_close(m2(x), x + 2 + before + 4)
    torch.testing.assert_close(ep.to_torch().module()(x), x + 3 + before + 6)
    assert held.tolist() == [0.0] * 2 and torch.equal(_GLOBAL, before)  # never written


def test_a_tensor_made_in_forward_stays_fresh_per_call_as_in_eager():
    class Made(nn.Module):
        def forward(self, x):
            c = torch.tensor(6.0)
            c.add_(2)
            return x + c

    ep = st.export(Made(), (torch.randn(2),))
    m = ep.module()
    x = torch.randn(2)
    for _ in range(3):
        torch.testing.assert_close(m(x), x + 8)


class Core(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = torch.zeros(2)


class Writes(nn.Module):
    def __init__(self, core) -> None:
        super().__init__()
        self.core = core

    def forward(self, x):
        self.core.c.add_(x)
        return self.core.c * 1


class Reads(nn.Module):
    def __init__(self, core) -> None:
        super().__init__()
        self.core = core

    def forward(self, x):
        return x + self.core.c


def test_programs_of_one_model_share_a_written_constant_as_in_torch():
    """The reading program does not copy the constant (nothing it runs writes it); once
    another program of the model writes it, the reader, its modules made before included,
    reads that program's copy (torch: both hold the model's tensor)."""
    x = torch.ones(2)
    core, ref_core = Core(), Core()
    reads, ref_reads = st.export(Reads(core), (x,)), torch.export.export(Reads(ref_core), (x,))
    early = reads.module()  # made before the writer exists
    assert reads.constants["core.c"] is core.c  # read only: no copy
    writes = st.export(Writes(core), (x,))
    ref_writes = torch.export.export(Writes(ref_core), (x,))
    ref_core.c.zero_()  # (torch's tracing write)
    torch.testing.assert_close(writes.module()(x), ref_writes.module()(x))
    for m in (early, reads.module()):
        torch.testing.assert_close(m(x), ref_reads.module()(x))
        assert m(x).tolist() == [2.0, 2.0]
    assert core.c.tolist() == [0.0, 0.0]  # torch wrote its model's: [1, 1]
    assert ref_core.c.tolist() == [1.0, 1.0]


def test_a_constant_written_in_a_cond_branch_is_refused_as_by_torch():
    class InBranch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c = torch.zeros(2)

        def forward(self, x):
            def yes(x):
                self.c.add_(1)
                return x + self.c

            return torch.cond(x.sum() > 0, yes, lambda x: x - self.c, (x,))

    model = InBranch()
    with pytest.raises(st.ExportError, match="branch"):
        st.export(model, (torch.ones(2),))
    with pytest.raises(Exception, match="mutation"):
        torch.export.export(InBranch(), (torch.ones(2),))
    assert model.c.tolist() == [0.0, 0.0]


def test_a_loaded_program_written_constant_stays_in_its_own_memory():
    buf = io.BytesIO()
    st.save(st.export(Counted(), (torch.randn(2, 3),)), buf)
    data = buf.getvalue()
    a, b = st.load(data), st.load(data)
    x = torch.randn(2, 3)
    a.module()(x)
    torch.testing.assert_close(b.module()(x), x * 1 + 2)  # two loads: two programs
    torch.testing.assert_close(a.module()(x), x * 2 + 4)


class Weighted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(2))


class StepsW(nn.Module):
    def __init__(self, core) -> None:
        super().__init__()
        self.core = core

    def forward(self, x):
        with torch.no_grad():
            self.core.w.add_(x)
        return x * 1


class ReadsW(nn.Module):
    def __init__(self, core) -> None:
        super().__init__()
        self.core = core

    def forward(self, x):
        return x + self.core.w


def test_a_parameter_read_by_one_program_and_written_by_another_is_shared_as_in_torch():
    x = torch.ones(2)
    core, ref_core = Weighted(), Weighted()
    reads, ref_reads = st.export(ReadsW(core), (x,)), torch.export.export(ReadsW(ref_core), (x,))
    early = reads.module()
    writes = st.export(StepsW(core), (x,))
    ref_writes = torch.export.export(StepsW(ref_core), (x,))
    writes.module()(x)
    ref_writes.module()(x)
    for m in (early, reads.module()):
        torch.testing.assert_close(m(x), ref_reads.module()(x))
    assert reads.state_dict["core.w"].tolist() == [1.0, 1.0]
    assert core.w.tolist() == [0.0, 0.0] and ref_core.w.tolist() == [1.0, 1.0]


class ReadsThenSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = torch.zeros((), dtype=torch.int64)

    def forward(self, x):
        y = x * 100 if self.step.item() > 1 else x  # eager: x twice, then x * 100
        self.step.add_(1)
        return y


def test_a_constant_whose_value_python_reads_and_the_program_writes_is_refused():
    """torch.export takes the export value and keeps the write: from the third call on its
    program answers x where eager answers x * 100.  The value would be stale: refused."""
    ref = torch.export.export(ReadsThenSteps(), (torch.ones(2),))
    ref.constants["step"].zero_()
    m, eager = ref.module(), ReadsThenSteps()
    got = [m(torch.ones(2)).tolist() for _ in range(3)]
    want = [eager(torch.ones(2)).tolist() for _ in range(3)]
    assert got == [[1.0, 1.0]] * 3 and want[2] == [100.0, 100.0]  # torch's: stale
    model = ReadsThenSteps()
    with pytest.raises(st.UnsupportedOpError, match="value of `step` is read in Python"):
        st.export(model, (torch.ones(2),))
    assert model.step.item() == 0


class Rebinds(nn.Module):
    """Tensors held outside the registry replaced (not written in place) by forward."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where
        self.c = torch.full((2,), 3.0)
        self.ts = [torch.full((2,), 3.0)]
        self.h = Holder()

    def forward(self, x):
        if self.where == "attribute":
            self.c = self.c + 1
            return x + self.c
        if self.where == "list":
            self.ts[0] = self.ts[0] + 1
            return x + self.ts[0]
        self.h.t = x * 2  # kept, never read: as a log
        return x + 1


@pytest.mark.parametrize("where", ["attribute", "list"])
def test_a_held_tensor_replaced_and_read_again_is_refused(where):
    """Eager reads the new tensor on its next call; torch.export's program keeps the
    export value silently (measured); a program cannot keep the replacement: refused."""
    ref = torch.export.export(Rebinds(where), (torch.zeros(2),)).module()
    eager = Rebinds(where)
    got = [ref(torch.zeros(2)).tolist() for _ in range(2)]
    want = [eager(torch.zeros(2)).tolist() for _ in range(2)]
    assert got == [[4.0, 4.0]] * 2 and want == [[4.0, 4.0], [5.0, 5.0]]
    model = Rebinds(where)
    with pytest.raises(st.UnsupportedOpError, match="the graph traced after that change"):
        st.export(model, (torch.zeros(2),))
    assert model.c.tolist() == [3.0, 3.0] and model.ts[0].tolist() == [3.0, 3.0]


def test_a_held_tensor_replaced_but_not_read_exports():
    model = Rebinds("object")
    ep = st.export(model, (torch.zeros(2),), dynamic_shapes={"x": {0: st.Dim("n", min=0)}})
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(ep.module()(x), x + 1)
    assert model.h.t.tolist() == [0.0, 0.0]


class _Table(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.arange(3.0)


class _SplitReads(nn.Module):
    """A submodule's constant read on both sides of a size split."""

    def __init__(self) -> None:
        super().__init__()
        self.sub = _Table()

    def forward(self, x):
        if x.shape[0] > 2:
            return x * self.sub.table
        return x + self.sub.table + torch.tensor([1.0, 2.0, 3.0])


def test_a_split_program_keys_its_constants_as_torch():
    """A program made of a size split's sides keys ep.constants by attribute path (and
    converts with those names), as torch.export's program of the model (exported at one
    size: torch refuses the split) and as an export without splits."""
    model = _SplitReads()
    ep = st.export(model, (torch.randn(4, 3),), dynamic_shapes=({0: st.Dim("b", max=16)},))
    ref = torch.export.export(model, (torch.randn(4, 3),))
    assert "sub.table" in ep.constants and "sub.table" in ref.constants
    assert ep.constants["sub.table"] is model.sub.table
    assert "sub_table" not in ep.constants
    assert "sub.table" in ep.to_torch().constants
    assert "sub.table" in ep.graph_signature.lifted_tensor_constants
    for n in (0, 1, 2, 3, 16):
        x = torch.randn(n, 3)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(17, 3))
