"""Dynamic int inputs (issue 21): ``Dim.DYNAMIC`` / ``Dim.AUTO`` / a named Dim on an int
argument makes it a symbolic int, read at run time and checked (an int, in its range, in
its relations), as torch.export's SymInt placeholders; ``AdditionalInputs`` whose ints
differ do the same.  ``to_torch()`` gives torch's ``Sym(...)`` placeholder.  Numerics
against eager (and torch.export where it takes the case) at other values, 0 and 1
included; values outside the declared space are refused before running."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program

D = torch.export.Dim


class Head(nn.Module):
    def forward(self, x, n):
        return x[:n] * n, n + 1


class Repeat(nn.Module):
    def forward(self, x, k):
        return x.repeat(k, 1).sum(0) / k, torch.arange(k)


class Window(nn.Module):
    def forward(self, x, start, length):
        return x.narrow(0, start, length).cos()


def _x(rows: int = 8) -> torch.Tensor:
    return torch.randn(rows, 3)


# name -> (model, example, spec, other inputs, inputs outside the space, torch exports it)
CASES = {
    "dynamic-head": (Head, (_x(), 4), (None, D.DYNAMIC),
                     [(_x(), 0), (_x(), 1), (_x(), 8)],
                     [(_x(), -1), (_x(), True), (_x(), 2.0), (_x(), torch.tensor(3))], True),
    "named-range": (Head, (_x(), 4), (None, st.Dim("n", min=1, max=8)),
                    [(_x(), 1), (_x(), 8)], [(_x(), 0), (_x(), 9)], False),
    "repeat": (Repeat, (_x(2), 3), (None, D.DYNAMIC), [(_x(2), 1), (_x(2), 7)],
               [(_x(2), 0.5)], True),
    # (start + length <= 10 is a run-time check of Dim.DYNAMIC ints)
    "window": (Window, (_x(10), 2, 5), {"x": None, "start": D.DYNAMIC, "length": D.DYNAMIC},
               [(_x(10), 0, 0), (_x(10), 0, 10), (_x(10), 9, 1), (_x(10), 3, 7)],
               [(_x(10), 5, 6), (_x(10), -1, 2), (_x(11), 0, 1)], True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamic_int_input(name: str) -> None:
    make, example, spec, others, bad, torch_exports = CASES[name]
    model = make()
    ep = st.export(model, example, dynamic_shapes=spec)
    # torch's program refuses 0 and 1 (it specializes them): compared where it runs
    ref = torch.export.export(model, example, dynamic_shapes=spec) if torch_exports else None
    check_program(ep, model, [example] + [a for a in others if min(a[1:]) >= 2], bad,
                  ref=ref)
    check_program(ep, model, [a for a in others if min(a[1:]) < 2])
    ints = [n for n in ep.graph.nodes if n.op == "placeholder" and
            not isinstance(n.meta.get("val"), (torch.Tensor, int))]
    assert ints, "the int is a symbolic placeholder"


def test_torch_refuses_a_named_dim_on_an_int_where_safetrace_takes_it() -> None:
    with pytest.raises(ValueError, match="input integers"):
        torch.export.export(Head(), (_x(), 4), dynamic_shapes=(None, D("n", max=8)))
    ep = st.export(Head(), (_x(), 4), dynamic_shapes=(None, st.Dim("n", max=8)))
    check_program(ep, Head(), [(_x(), 8), (_x(), 0)], [(_x(), 9)])


class Loop(nn.Module):
    def forward(self, x, k):
        for _ in range(k):  # the trace needs k's value: it is specialized
            x = x * 2
        return x


def test_a_specialized_int() -> None:
    ep = st.export(Loop(), (_x(), 3), dynamic_shapes=(None, D.AUTO))  # AUTO: static then
    check_program(ep, Loop(), [(_x(), 3)], [(_x(), 4)])
    with pytest.raises(st.ConstraintViolationError, match="k"):
        st.export(Loop(), (_x(), 3), dynamic_shapes=(None, D.DYNAMIC))


@pytest.mark.parametrize("kind", ["safetrace", "torch"])
def test_additional_inputs_whose_ints_differ(kind: str) -> None:
    ai = st.AdditionalInputs() if kind == "safetrace" else torch.export.AdditionalInputs()
    ai.add((_x(), 2))
    ai.add((_x(), 6))
    ep = st.export(Head(), (_x(), 4), dynamic_shapes=ai)
    tai = torch.export.AdditionalInputs()
    tai.add((_x(), 2))
    tai.add((_x(), 6))
    ref = torch.export.export(Head(), (_x(), 4), dynamic_shapes=tai)
    check_program(ep, Head(), [(_x(), 2), (_x(), 6)], [(_x(), -2), (_x(9), 4)], ref=ref)
    check_program(ep, Head(), [(_x(), 0), (_x(), 1)])


def test_to_torch_save_load_and_decompositions_keep_the_int_symbolic(tmp_path) -> None:
    ep = st.export(Head(), (_x(), 4), dynamic_shapes=(None, D.DYNAMIC))
    tep = ep.to_torch()
    assert "Sym(" in str(tep.graph_module.print_readable(print_output=False))
    st.save(ep, tmp_path / "p.st")
    programs = [tep, st.load(tmp_path / "p.st"), ep.run_decompositions()]
    for n in (0, 1, 5, 8):
        x = _x()
        for p in programs:
            out, nxt = p.module()(x, n)
            torch.testing.assert_close(out, x[:n] * n)
            assert nxt == n + 1
    with pytest.raises(Exception):
        tep.module()(_x(), -1)
