"""A dict input whose key holds a double quote, through ``to_torch().module()``.

torch writes ``module()``'s input guards as Python source with each input's path between
double quotes (``"Guard failed: d['a"b'].size()[0] == 3"``): such a key made the
converted program's ``module()`` fail with a SyntaxError in torch's generated code (as
torch.export's own program of the same model does, torch 2.13)."""

from __future__ import annotations

import pytest
import torch

import safetrace as st

KEY, OTHER = 'a"b', "c'd\"e"


class Quoted(torch.nn.Module):
    def forward(self, d):
        return d[KEY] * 2 + d[OTHER].sum(0)


def _inputs(n: int, m: int = 4) -> dict:
    return {KEY: torch.randn(n, m), OTHER: torch.randn(n, m)}


def _converted(**kw):
    n = st.Dim("n", min=0, max=16)
    ep = st.export(Quoted(), (_inputs(5),), dynamic_shapes=({KEY: {0: n}, OTHER: {0: n}},),
                   **kw)
    return ep.to_torch()


@pytest.mark.parametrize("how", ["converted", "decomposed", "copied"])
def test_module_runs_and_checks_its_inputs(how):
    tep = _converted()
    if how == "decomposed":
        tep = tep.run_decompositions({})
    elif how == "copied":
        import copy

        tep = copy.deepcopy(tep)
    m = tep.module()
    for n in (0, 1, 3, 16):  # other sizes than the example's (5), 0 and 1 too
        d = _inputs(n)
        torch.testing.assert_close(m(d), Quoted()(d))
    # out of the declared space: refused before running, the message naming the key
    with pytest.raises(AssertionError, match=r"""Guard failed: d\['a"b'\]\.size\(\)\[0\] <= 16"""):
        m(_inputs(17))
    with pytest.raises(AssertionError, match=r"""Guard failed: d\['a"b'\]\.dtype == torch\.float32"""):
        m({KEY: torch.ones(3, 4, dtype=torch.float64), OTHER: torch.randn(3, 4)})
    with pytest.raises(AssertionError, match="Guard failed"):
        m({KEY: torch.randn(3, 4), OTHER: torch.randn(2, 4)})  # the two sizes differ


def test_static_program_with_a_quoted_key():
    x = _inputs(3)
    tep = st.export(Quoted(), (x,)).to_torch()
    torch.testing.assert_close(tep.module()(x), Quoted()(x))
    with pytest.raises(AssertionError, match=r"""Guard failed: d\['a"b'\]\.size\(\)\[0\] == 3"""):
        tep.module()(_inputs(2))


def test_other_programs_keep_torchs_module():
    class Plain(torch.nn.Module):
        def forward(self, d):
            return d["k"] + 1

    tep = st.export(Plain(), ({"k": torch.randn(2)},)).to_torch()
    assert "module" not in vars(tep)
