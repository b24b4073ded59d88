"""How export and ep.module() treat the call itself: arity, keyword names, structure."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


class One(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Two(torch.nn.Module):
    def forward(self, x, y, *, scale=1.0):
        return (x + y) * scale


# -- export: the call must fit forward's signature ------------------------------------------
def test_export_too_many_positional_names_signature_and_fix():
    x = torch.randn(3, 4)
    with pytest.raises(st.UnsupportedInputError) as info:
        st.export(One(), (x, x, x))
    msg = str(info.value)
    assert "One.forward(x)" in msg
    assert "3 positional inputs" in msg and "takes 1" in msg
    assert "st.export(model, (x,))" in msg


def test_export_unknown_keyword_names_it():
    x = torch.randn(3, 4)
    with pytest.raises(st.UnsupportedInputError) as info:
        st.export(One(), (x,), {"y": x})
    msg = str(info.value)
    assert "'y'" in msg and "One.forward(x)" in msg
    assert "st.export(model, (x,))" in msg


def test_export_missing_required_argument():
    x = torch.randn(3, 4)
    with pytest.raises(st.UnsupportedInputError) as info:
        st.export(Two(), (x,))
    msg = str(info.value)
    assert "'y'" in msg and "Two.forward(x, y, *, scale=1.0)" in msg
    assert "st.export(model, (x, y))" in msg


def test_export_argument_given_twice():
    x = torch.randn(3, 4)
    with pytest.raises(st.UnsupportedInputError, match="'x'"):
        st.export(Two(), (x, x), {"x": x})


def test_export_function_signature_checked_too():
    def f(a, b):
        return a * b

    with pytest.raises(st.UnsupportedInputError, match=r"st\.export\(f, \(a, b\)\)"):
        st.export(f, (torch.ones(2),))


def test_explain_reports_bad_call_the_same_way():
    report = st.explain(One(), (torch.ones(2), torch.ones(2)))
    assert not report.ok
    (problem,) = report.problems
    assert problem.kind == "UnsupportedInputError" and "takes 1" in problem.message


def test_export_decorated_forward_is_left_to_the_decorator():
    import functools

    def renames(f):
        @functools.wraps(f)
        def wrapper(self, *args, **kwargs):
            if "inp" in kwargs:
                kwargs["x"] = kwargs.pop("inp")
            return f(self, *args, **kwargs)
        return wrapper

    class Renamed(torch.nn.Module):
        @renames
        def forward(self, x):
            return x * 2

    ep = st.export(Renamed(), (), {"inp": torch.ones(2)})
    assert torch.equal(ep.module()(inp=torch.ones(2)), torch.full((2,), 2.0))
