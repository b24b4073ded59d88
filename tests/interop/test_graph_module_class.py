"""A converted program's graph module shares one class with the other converted programs
until its code is first generated (interop/construct.py: torch's constructor makes a class
per instance for its code generation to write ``forward`` and ``__call__`` on); from then
on it has a class of its own, so a graph changed and recompiled in one program never
changes another's, whatever the order of their first calls, prints, copies and pickles."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from torch.testing import assert_close

import safetrace as st


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


def _export():
    torch.manual_seed(0)
    model = Net().eval()
    ep = st.export(model, (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("b")}})
    return model, ep


def _run(tep, x):
    """The program's own graph module on the state and `x` (torch's lifted calling
    convention: parameters first)."""
    params = [tep.state_dict[s.target] for s in tep.graph_signature.input_specs
              if s.target is not None]
    return tep.graph_module(*params, x)[0]


def _double_output(tep) -> None:
    """Change `tep`'s graph (its output times 2) and recompile it, as a user's pass does."""
    gm = tep.graph_module
    out = next(n for n in gm.graph.nodes if n.op == "output")
    value = out.args[0][0]
    with gm.graph.inserting_before(out):
        doubled = gm.graph.call_function(torch.ops.aten.mul.Tensor, (value, 2))
    out.args = ((doubled,),)
    gm.recompile()


@pytest.mark.parametrize("first", ["changed", "other"])
def test_a_changed_graph_stays_its_program_own(first):
    model, ep = _export()
    a, b = ep.to_torch(), ep.to_torch()
    assert type(a.graph_module) is type(b.graph_module)  # (no code generated yet)
    x = torch.randn(3, 4)
    if first == "other":
        assert_close(_run(b, x), model(x))
    _double_output(a)
    assert_close(_run(a, x), 2 * model(x))
    assert_close(_run(b, x), model(x))
    assert "mul" in a.graph_module.code and "mul" not in b.graph_module.code
    assert type(a.graph_module) is not type(b.graph_module)
    assert type(a.graph_module).__name__ == type(b.graph_module).__name__ == "GraphModule"
    c = ep.to_torch()  # (a later conversion: the shared class still holds torch's lazy code)
    assert_close(_run(c, x), model(x))


def test_copies_pickles_and_prints_before_the_first_call():
    model, ep = _export()
    x = torch.randn(2, 4)
    for make in (lambda g: copy.deepcopy(g), lambda g: pickle.loads(pickle.dumps(g)),
                 lambda g: (str(g), g)[1]):
        tep = ep.to_torch()
        other = ep.to_torch()
        made = make(tep.graph_module)
        params = [tep.state_dict[s.target] for s in tep.graph_signature.input_specs
                  if s.target is not None]
        assert_close(made(*params, x)[0], model(x))
        assert_close(_run(other, x), model(x))
        assert type(made) is not type(other.graph_module)


def test_converted_module_runs_as_eager_at_other_sizes_and_refuses_outside():
    model, ep = _export()
    mod = ep.to_torch().module()
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        assert_close(mod(x), model(x))
    with pytest.raises(Exception):  # (torch's guard: the static dim must be 4)
        mod(torch.randn(2, 5))
