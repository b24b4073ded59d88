"""Run-time check nodes are impure to torch.fx: ``eliminate_dead_code()`` (a user's pass,
a compiler's) keeps them, though nothing reads their result."""

import torch
import pytest

import safetrace as st


class _Bounded(torch.nn.Module):
    def forward(self, x):
        n = x.nonzero().shape[0]
        torch._check(n <= 3)
        return x * 2


def _checks(gm):
    return [n for n in gm.graph.nodes
            if n.op == "call_function" and getattr(n.target, "__name__", "") in
            ("assert_sym", "check")]


def test_a_data_dependent_assert_survives_dead_code_elimination():
    ep = st.export(_Bounded(), (torch.tensor([1.0, 0.0, 1.0, 0.0]),))
    gm = ep.module()
    before = _checks(gm)
    assert before
    gm.graph.eliminate_dead_code()
    gm.recompile()
    assert _checks(gm) == before
    for n in (0, 1, 3):  # eager's answer where the check holds
        x = torch.cat([torch.ones(n), torch.zeros(4 - n)])  # (a size the program fixes)
        torch.testing.assert_close(gm(x), x * 2)
    with pytest.raises(Exception, match="u0 <= 3"):
        gm(torch.ones(4))


def test_a_loaded_programs_call_checks_survive_dead_code_elimination(tmp_path):
    ep = st.export(_Bounded(), (torch.tensor([1.0, 0.0, 1.0, 0.0]),))
    path = tmp_path / "bounded.st"
    st.save(ep, path)
    gm = st.load(path).module()
    before = _checks(gm)
    assert before
    gm.graph.eliminate_dead_code()
    assert _checks(gm) == before
