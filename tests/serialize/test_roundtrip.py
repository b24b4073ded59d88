"""Saved and loaded programs behave exactly like the originals."""

from __future__ import annotations

import copy
import io

import pytest
import torch

import safetrace as st
from tests.helpers import assert_close
from tests.serialize.programs import CASES
from tests.serialize import surgery


def roundtrip(ep: st.ExportedProgram, tmp_path) -> st.ExportedProgram:
    path = tmp_path / "prog.st"
    st.save(ep, path)
    return st.load(path)


def _outcome(ep, args, kwargs):
    try:
        return "ok", ep.module()(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except st.InputMismatchError as err:
        return "rejected", str(err)


@pytest.mark.parametrize("name", sorted(CASES))
def test_roundtrip_is_identical(name, tmp_path):
    torch.manual_seed(0)
    case = CASES[name]()
    ep = case.export()
    ep2 = roundtrip(ep, tmp_path)
    assert ep2.graph_module.print_readable(print_output=False) == \
        ep.graph_module.print_readable(print_output=False)
    assert ep2.describe_contract() == ep.describe_contract()
    assert str(ep2) == str(ep)
    assert repr(ep2.range_constraints) == repr(ep.range_constraints)
    assert ep2.in_spec == ep.in_spec and ep2.out_spec == ep.out_spec
    assert ep2.state_dict.keys() == ep.state_dict.keys()
    for k, v in ep.state_dict.items():
        assert torch.equal(ep2.state_dict[k], v) and ep2.state_dict[k].dtype == v.dtype
    m1, m2 = ep.module(), ep2.module()
    for args, kwargs in [(case.args, case.kwargs)] + case.good:
        o1, o2 = m1(*copy.deepcopy(args), **kwargs), m2(*copy.deepcopy(args), **kwargs)
        assert_close(o1, o2)
    for k, v in m1._current_state().items():
        assert torch.equal(m2._current_state()[k], v), f"buffer {k} after mutation"
    for args, kwargs in case.bad:
        a, b = _outcome(ep, args, kwargs), _outcome(ep2, args, kwargs)
        assert a[0] == "rejected", "the case's bad input should be rejected"
        assert b == a


def test_save_to_file_object_and_bytes():
    ep = CASES["mlp"]().export()
    buf = io.BytesIO()
    st.save(ep, buf)
    ep2 = st.load(buf.getvalue())
    x = torch.randn(4, 16)
    torch.testing.assert_close(ep.module()(x), ep2.module()(x))
    buf.seek(0)
    assert st.load(buf).graph_module.print_readable(print_output=False)


def test_saved_file_is_deterministic(tmp_path):
    ep = CASES["scenario_8"]().export()
    a, b = io.BytesIO(), io.BytesIO()
    st.save(ep, a)
    st.save(ep, b)
    assert a.getvalue() == b.getvalue()


def test_loaded_program_saves_again_identically():
    ep = CASES["derived"]().export()
    a = io.BytesIO()
    st.save(ep, a)
    b = io.BytesIO()
    st.save(st.load(a.getvalue()), b)
    assert a.getvalue() == b.getvalue()


def test_parameters_stay_parameters(tmp_path):
    ep2 = roundtrip(CASES["mlp"]().export(), tmp_path)
    assert all(isinstance(v, torch.nn.Parameter) for v in ep2.state_dict.values())


def test_a_transposed_or_channels_last_buffer_keeps_its_layout_through_save_and_load():
    """The file holds state row-major; a buffer stored transposed came back contiguous, and
    the loaded program's `self.bt.contiguous()` was then the buffer itself: its in-place
    write reached the buffer (a silent wrong answer), and `self.bt.t().view(-1)` raised."""
    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bt", torch.arange(12.0).reshape(4, 3).t())
            self.register_buffer("cl", torch.arange(8.0).reshape(1, 4, 1, 2)
                                 .contiguous(memory_format=torch.channels_last))

        def forward(self, x):
            w = self.bt.contiguous()
            w.add_(5)
            return self.bt.sum() + w.sum() + x, self.bt.t().view(-1)[:3] + self.cl.sum()

    ep = st.export(T(), (torch.randn(3),))
    loaded = st.load(surgery.saved(ep))
    eager, m = T(), loaded.module()
    assert m.bt.stride() == eager.bt.stride() and m.cl.stride() == eager.cl.stride()
    for _ in range(2):
        x = torch.randn(3)
        for w, g in zip(eager(x), m(x)):
            torch.testing.assert_close(g, w)
