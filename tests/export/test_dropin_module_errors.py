"""What ``ep.module()`` raises for an input outside the program's space, against torch
(issue 21): torch's unlifted module raises ``AssertionError`` ("Guard failed: ...") from
its guards and, with ``module(check_guards=False)``, ``RuntimeError`` ("Expected input at
...") from its pre-hook.  Ours is an ``InputMismatchError`` kind (a ``ValueError``) with
its own message and also an instance of the class torch raises there, so code written
against torch (``except AssertionError``, ``pytest.raises(RuntimeError)``) keeps working."""

from __future__ import annotations

import pickle

import pytest
import torch

import safetrace as st


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
        return x[1:].sum(0) * k + y


def _args(n: int = 4, k: int = 2, x: torch.Tensor | None = None) -> tuple:
    return (torch.randn(n + 1, 3) if x is None else x, torch.randn(3), k)


# name -> (inputs, our kind, the class torch's module raises with its guards (None: torch
# accepts the input: ours is stricter there), the class with check_guards=False)
BAD = {
    "static size": (_args()[:1] + (torch.randn(4), 2), "WrongSize", AssertionError,
                    RuntimeError),
    "above max": (_args(9), "OutOfRange", AssertionError, RuntimeError),
    "below min": (_args(2), "OutOfRange", AssertionError, RuntimeError),
    "specialized int": (_args(k=5), "WrongConstant", AssertionError, RuntimeError),
    # torch's program accepts these (its kernels then compute in float64 / index a
    # higher-rank x): ours refuses them, with the class its pre-hook would use
    "dtype": (_args(x=torch.randn(5, 3, dtype=torch.float64)), "WrongDtype", None, None),
    "rank": (_args(x=torch.randn(5, 3, 1)), "WrongRank", None, RuntimeError),
    "not a tensor": ((torch.randn(5, 3), 3, 2), "WrongInputType", AttributeError,
                     RuntimeError),
}


@pytest.fixture(scope="module")
def programs() -> tuple:
    dims = ({0: torch.export.Dim("b", min=3, max=8) + 1}, None, None)
    ours = st.export(Model(), _args(), dynamic_shapes=dims)
    theirs = torch.export.export(Model(), _args(), dynamic_shapes=dims)
    return ours, theirs


def _raised(module: torch.nn.Module, args: tuple) -> BaseException | None:
    try:
        module(*args)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return e
    return None


@pytest.mark.parametrize("name", BAD)
def test_module_raises_torchs_class_with_our_message(programs: tuple, name: str) -> None:
    ours, theirs = programs
    args, kind, guard_cls, hook_cls = BAD[name]
    err = _raised(ours.module(), args)
    assert type(err).__name__ == kind and isinstance(err, st.InputMismatchError), err
    assert isinstance(err, ValueError)  # (ours, as before)
    torch_err = _raised(theirs.module(), args)
    assert (torch_err is None) == (guard_cls is None), torch_err
    if guard_cls is not None:
        assert isinstance(torch_err, guard_cls)
        if guard_cls is AssertionError:
            assert str(torch_err).startswith("Guard failed: ")
            assert isinstance(err, AssertionError)
    hook_err = _raised(theirs.module(check_guards=False), args)
    assert (hook_err is None) == (hook_cls is None), hook_err
    if hook_cls is not None:
        assert isinstance(hook_err, hook_cls) and isinstance(err, hook_cls)
    # torch's words are not ours: the message stays the catalogue's
    assert "Guard failed" not in str(err) and err.cause in str(err)
    # the same through torch's keyword, and pickled (a worker's error sent back)
    again = _raised(ours.module(check_guards=False), args)
    assert type(again) is type(err) and str(again) == str(err)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)


def test_a_wrong_structure_stays_a_value_error_as_torchs(programs: tuple) -> None:
    ours, theirs = programs
    err, torch_err = _raised(ours.module(), _args()[:2]), _raised(theirs.module(), _args()[:2])
    assert type(torch_err) is ValueError  # torch's "Trying to flatten user inputs ..."
    assert isinstance(err, st.InputMismatchError) and not isinstance(err, AssertionError)


def test_the_unlifted_graph_raises_the_same_class(programs: tuple) -> None:
    """A tool that interprets the module's graph (torch.export of ``ep.module()``, fx
    passes) meets the same check, with the same classes."""
    ours, _ = programs
    err = _raised(lambda *a: torch.fx.Interpreter(ours.module()).run(*a), _args(9))
    assert type(err).__name__ == "OutOfRange" and isinstance(err, AssertionError)


def test_inside_export_the_check_is_not_torchs_class() -> None:
    """Only where the error leaves ``ep.module()``: ``ep.check_inputs`` (what AdditionalInputs
    and the CLI call) raises the catalogue's class alone."""
    ep = st.export(Model(), _args(), dynamic_shapes=({0: st.Dim("b", max=8) + 1}, None, None))
    with pytest.raises(st.InputMismatchError) as info:
        ep.check_inputs(_args(9))
    assert not isinstance(info.value, (AssertionError, RuntimeError))
