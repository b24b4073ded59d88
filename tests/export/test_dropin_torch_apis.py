"""torch's own APIs handed safetrace's program instead of torch.export's (issue 21).

They used to fail with "must be an instance of 'ExportedProgram', got 'ExportedProgram'"
(save, AOTInductor, ONNX, ExecuTorch) or an AttributeError deep inside (unflatten).  Each
is now an export error that names the API and the fix, ``ep.to_torch()``; the same call
with ``ep.to_torch()`` works.  Other code (a re-export, torch.compile, copy, isinstance
against other classes) still sees safetrace's class as it is."""

from __future__ import annotations

import copy
import importlib.util

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _program() -> tuple[nn.Module, st.ExportedProgram]:
    model = _model()
    ep = st.export(model, (torch.randn(5, 3),),
                   dynamic_shapes=({0: torch.export.Dim("b", max=64)},))
    check_program(ep, model, [(torch.randn(n, 3),) for n in (5, 0, 1, 64)],
                  [(torch.randn(65, 3),), (torch.randn(5, 4),)])
    return model, ep


def _to_edge(ep, tmp):
    from executorch.exir import to_edge
    return to_edge(ep)


# name -> (the API's name in the message, the call)
APIS = {
    "save": ("torch.export.save", lambda ep, tmp: torch.export.save(ep, tmp / "p.pt2")),
    "unflatten": ("torch.export.unflatten", lambda ep, tmp: torch.export.unflatten(ep)),
    "aoti": ("torch._inductor.aoti_compile_and_package",
             lambda ep, tmp: torch._inductor.aoti_compile_and_package(ep)),
    "onnx": ("torch.onnx.export", lambda ep, tmp: torch.onnx.export(ep, dynamo=True)),
    "executorch": ("executorch.exir", _to_edge),
}


@pytest.mark.parametrize("name", sorted(APIS))
def test_a_torch_api_handed_our_program_points_to_to_torch(name: str, tmp_path) -> None:
    if name == "executorch" and importlib.util.find_spec("executorch") is None:
        pytest.skip("executorch is not installed (make test installs it)")
    api, call = APIS[name]
    _, ep = _program()
    with pytest.raises(st.UnsupportedInputError, match=rf"{api}(.|\n)*Fix: (.|\n)*"
                                                      rf"ep\.to_torch\(\)") as info:
        call(ep, tmp_path)
    assert str(info.value).count("'ExportedProgram'") == 0  # never "X, got X"


def test_the_same_calls_with_to_torch_work(tmp_path) -> None:
    model, ep = _program()
    tep = ep.to_torch()
    torch.export.save(tep, tmp_path / "p.pt2")
    loaded = torch.export.load(tmp_path / "p.pt2")
    unflat = torch.export.unflatten(tep)
    for n in (5, 1, 0, 64):
        x = torch.randn(n, 3)
        for run in (loaded.module(), unflat, ep.module()):
            torch.testing.assert_close(run(x), model(x))
    with pytest.raises(Exception):  # torch's program refuses what ours refuses
        loaded.module()(torch.randn(65, 3))


def test_reading_an_attribute_only_torchs_program_has() -> None:
    _, ep = _program()
    with pytest.raises(st.UnsupportedInputError, match=r"`ExportedProgram.verifiers` is an "
                                                      r"attribute of torch.export"):
        ep.verifiers  # noqa: B018
    with pytest.raises(st.UnsupportedInputError, match="backward_signature"):
        ep.graph_signature.backward_signature  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        ep.no_such_thing  # noqa: B018
    assert not hasattr(ep, "no_such_thing")


def test_other_code_sees_our_class() -> None:
    model, ep = _program()
    assert isinstance(ep, st.ExportedProgram) and ep.__class__ is type(ep)
    assert not isinstance(ep, torch.export.ExportedProgram)
    twin = copy.deepcopy(ep)
    x = torch.randn(7, 3)
    torch.testing.assert_close(twin.module()(x), model(x))
    torch.testing.assert_close(torch.compile(ep.module(), backend="eager")(x), model(x))
    again = torch.export.export(ep.to_torch().module(), (x,))
    torch.testing.assert_close(again.module()(x), model(x))


def test_our_api_handed_torchs_program_points_to_what_was_meant(tmp_path) -> None:
    """The other way round: st.export and st.save handed torch.export's program.  st.export
    raises a ValueError as torch.export does for it (torch's: "Expected `mod` to be an
    instance of `torch.nn.Module`"; it was torch's own RuntimeError from calling the
    program), st.save an export error (it was an AttributeError, ``_state``); each names
    the call to make, and neither names one class twice."""
    model = _model()
    theirs = torch.export.export(model, (torch.randn(5, 3),))
    with pytest.raises(ValueError):
        torch.export.export(theirs, (torch.randn(5, 3),))
    with pytest.raises(st.UnsupportedInputError) as info:
        st.export(theirs, (torch.randn(5, 3),))
    assert isinstance(info.value, ValueError) and "ep.module()" in info.value.fix
    with pytest.raises(st.UnsupportedInputError) as saved:
        st.save(theirs, tmp_path / "m.st")
    assert "torch.export.save(ep, path)" in saved.value.fix
    for err in (info.value, saved.value):
        text = str(err)
        assert "torch.export.ExportedProgram" in text and "got 'ExportedProgram'" not in text
    # what the fix says works, and computes what the model does
    ep = st.export(theirs.module(), (torch.randn(5, 3),))
    x = torch.randn(5, 3)
    torch.testing.assert_close(ep.module()(x), model(x))
    torch.export.save(theirs, tmp_path / "m.pt2")
