"""State whose name ep.module() cannot hold: a parameter, buffer or submodule named as an
attribute of torch.fx's GraphModule (``graph``, ``code``, ``meta``, ``training``).  torch's
``module()`` fails on these with a KeyError or a missing attribute; st.export refuses them
at once, naming the attribute and the rename.  Names that only look alike export."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


def _model(kind: str, name: str) -> torch.nn.Module:
    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if kind == "submodule":
                setattr(self, name, torch.nn.Linear(3, 3))
            elif kind == "buffer":
                self.register_buffer(name, torch.ones(3))
            else:
                setattr(self, name, torch.nn.Parameter(torch.ones(3)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            v = getattr(self, name)
            return v(x) if kind == "submodule" else x + v
    return M()


@pytest.mark.parametrize("kind,name", [("submodule", "graph"), ("submodule", "meta"),
                                       ("buffer", "code"), ("parameter", "graph"),
                                       ("parameter", "training"), ("buffer", "shape_env")])
def test_a_name_the_program_module_holds_is_refused_with_the_rename(kind: str,
                                                                     name: str) -> None:
    model = _model(kind, name)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(st.errors.UnsupportedInputError) as err:
        st.export(model, (torch.randn(2, 3),))
    text = str(err.value)
    assert f"held under the name `{name}`" in text
    assert f"self.{name}_ = self.{name}" in text
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


@pytest.mark.parametrize("name", ["graphs", "code_", "metadata", "self", "run_"])
def test_names_that_only_look_alike_export_and_match_eager(name: str) -> None:
    model = _model("submodule", name)
    ep = st.export(model, (torch.randn(2, 3),),
                   dynamic_shapes={"x": (st.Dim("b", min=0), None)})
    mod = ep.module()
    for b in (0, 1, 5):
        x = torch.randn(b, 3)
        torch.testing.assert_close(mod(x), model(x))
    with pytest.raises(st.errors.InputMismatchError):
        mod(torch.randn(2, 4))
