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


# -- ep.module(): a call whose structure differs from the export -----------------------------
class Pair(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class Seq(torch.nn.Module):
    def forward(self, xs, d):
        return xs[0] + xs[1] + d["a"]


def _mismatch(ep, *args, **kwargs):
    with pytest.raises(st.InputMismatchError) as info:
        ep.module()(*args, **kwargs)
    return str(info.value)


def test_module_too_many_or_too_few_positional_inputs():
    x = torch.randn(2, 3)
    ep = st.export(Pair(), (x, x))
    msg = _mismatch(ep, x, x, x)
    assert "expected 2 positional inputs (x, y), got 3" in msg and "module(x, y)" in msg
    assert "TreeSpec" not in msg
    assert "expected 2 positional inputs (x, y), got 1" in _mismatch(ep, x)


def test_module_keyword_names_differ():
    x = torch.randn(2, 3)
    ep = st.export(Pair(), (x,), {"y": x})
    msg = _mismatch(ep, x, z=x)
    assert "expected keyword inputs ['y'], got ['z']" in msg and "module(x, y=y)" in msg


def test_module_container_type_and_length_differ():
    x = torch.randn(2, 3)
    ep = st.export(Seq(), ((x, x), {"a": x}))
    msg = _mismatch(ep, [x, x, x], {"a": x})
    assert "input `xs` was a tuple of 2 at export, got a list of 3" in msg
    msg = _mismatch(ep, x, {"a": x})
    assert "input `xs` was a tuple of 2 at export, got a tensor of shape [2, 3]" in msg
    msg = _mismatch(ep, (x, x), {"a": x, "b": x})
    assert "input `d` was a dict with keys ['a'] at export, got a dict with keys ['a', 'b']" \
        in msg


def test_module_nested_difference_names_the_path():
    x = torch.randn(2, 3)

    class Nested(torch.nn.Module):
        def forward(self, d):
            return d["xs"][0] + d["xs"][1][0]

    ep = st.export(Nested(), ({"xs": [x, [x]]},))
    msg = _mismatch(ep, {"xs": [x, x]})
    assert "input `d['xs'][1]` was a list of 1 at export, got a tensor of shape [2, 3]" in msg


def test_module_var_positional_names():
    x = torch.randn(2, 3)

    class Var(torch.nn.Module):
        def forward(self, *xs):
            return xs[0] + xs[1]

    ep = st.export(Var(), (x, x))
    assert "expected 2 positional inputs (xs[0], xs[1]), got 3" in _mismatch(ep, x, x, x)


def test_list_inputs_are_checked_without_losing_any_mismatch():
    """The fast structure check for flat lists of inputs: same answers as the full walk."""
    def f(x, xs, k=None):
        return x + xs[0] * xs[1] + (0 if k is None else k)

    args = (torch.randn(3), [torch.randn(3), torch.randn(3)])
    ep = st.export(f, args, {"k": torch.randn(3)})
    m = ep.module()
    a = (torch.randn(3), [torch.randn(3), torch.randn(3)])
    k = torch.randn(3)
    torch.testing.assert_close(m(*a, k=k), f(*a, k=k))
    bad_calls = [
        ((a[0], tuple(a[1])), {"k": k}),              # tuple for list
        ((a[0], a[1][:1]), {"k": k}),                 # shorter list
        ((a[0], [a[1], a[1][0]]), {"k": k}),          # nested list
        ((a[0], [a[1][0], 2.0]), {"k": k}),           # a number for a tensor
        ((a[0], a[1]), {}),                           # missing keyword
        ((a[0], a[1]), {"k": [k]}),                   # a list for a tensor
    ]
    for args_, kwargs_ in bad_calls:
        with pytest.raises(st.InputMismatchError):
            m(*args_, **kwargs_)
