"""Check messages a compiler can paste into C++ (fast: nothing is compiled).

Inductor writes each ``_assert_async`` / ``_assert_scalar`` message of a graph into the C++
it generates as ``"<message>"``, unescaped (its kernels' ``throw std::runtime_error`` and
AOTInductor's wrapper).  A line break, a double quote or a backslash there is a compile
error: session 32 found every AOTInductor package of our static-cache LLMs failing so
(the index check's message spans lines), and only a slow test compiled one.  Here every
string a check node of ``ep.to_torch()``'s graphs carries (the program's graph and each
``torch.cond`` branch) is checked to be one line without quotes or backslashes, on programs
with each kind of check: the input contract (derived dims, a dict input whose key holds a
quote and a backslash), an index check before a state write (a static KV cache), the user's
``torch._check`` with a multi-line quoted message (in the program and in a cond branch);
and what ``st.to_aoti`` hands inductor is checked the same way, for a converted program
whose messages were not (inductor's compile replaced by a stub that records its input).
Each converted program still computes eager's values at other sizes (1 included) and
refuses an input outside its contract before running.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.testing import assert_close

import safetrace as st

_CHECKS = (torch.ops.aten._assert_async.msg, torch.ops.aten._assert_scalar.default)
# (a dict key with a backslash: its path, in the contract's messages, holds two; torch's own
# guard code for ``module()`` cannot take a key with a double quote)
_KEY = "a\\b"


def _check_messages(gm: torch.fx.GraphModule) -> list[str]:
    """The string arguments of every check node in `gm`'s graph and its subgraphs."""
    out = []
    for mod in gm.modules():
        if isinstance(mod, torch.fx.GraphModule):
            for node in mod.graph.nodes:
                if node.op == "call_function" and node.target in _CHECKS:
                    out += [a for a in (*node.args, *node.kwargs.values())
                            if isinstance(a, str)]
    return out


def _c_safe(message: str) -> bool:
    """`message` is the same text inside a C string literal: printable, one line, no ``"``
    or ``\\``."""
    return message.isprintable() and '"' not in message and "\\" not in message


class StaticCache(torch.nn.Module):
    """An attention layer over a static KV cache, written as transformers' StaticCache
    writes it: the length set from ``cache_position[0]``, then the keys and values at
    ``arange(seq) + length`` (an index check moved before the first state write)."""

    def __init__(self, d: int = 8, slots: int = 6) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.register_buffer("k", torch.zeros(1, slots, d))
        self.register_buffer("v", torch.zeros(1, slots, d))
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x, cache_position):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        self.length.copy_(cache_position[0])
        index = torch.arange(x.shape[1]) + self.length
        self.k.index_copy_(1, index, k)
        self.v.index_copy_(1, index, v)
        self.length.add_(x.shape[1])
        return torch.nn.functional.scaled_dot_product_attention(q, self.k, self.v)


class UserCheck(torch.nn.Module):
    def forward(self, x, k):
        n = k.item()
        torch._check(n >= 1, lambda: 'k must be "positive",\nnot \\ zero')
        torch._check(n <= x.shape[0])
        return x[:n].sum(0)


class BranchCheck(torch.nn.Module):
    def forward(self, x, k):
        def small(x, k):
            n = k.item()
            torch._check(n >= 1, lambda: 'k must be "positive",\nnot \\ zero')
            torch._check(n <= 4, lambda: '"at most" 4')
            return x[:n].sum(0)

        def large(x, k):
            return x.sum(0)

        return torch.cond(x.sum() < 100, small, large, (x, k))


class DictConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, d):
        return self.conv(d[_KEY])


def _static_cache():
    torch.manual_seed(0)
    seq = st.Dim("seq", min=1, max=6)
    model = StaticCache().eval()
    pristine = copy.deepcopy(model)  # (before any call: its cache empty)
    ep = st.export(model, (torch.randn(1, 3, 8), torch.arange(3)),
                   dynamic_shapes={"x": {1: seq}, "cache_position": {0: seq}})
    inside = [(torch.randn(1, n, 8), torch.arange(n) + start)
              for n, start in ((1, 0), (1, 5), (2, 4), (6, 0))]
    outside = (torch.randn(1, 2, 8), torch.arange(2) + 5)  # (slots 5, 6 of 6)
    return ep, pristine, inside, outside


def _user_check():
    ep = st.export(UserCheck(), (torch.randn(5, 3), torch.tensor(2)),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=9)}, "k": None})
    inside = [(torch.randn(n, 3), torch.tensor(k)) for n, k in ((1, 1), (4, 4), (9, 2))]
    return ep, UserCheck(), inside, (torch.randn(3, 3), torch.tensor(0))


def _branch_check():
    ep = st.export(BranchCheck(), (torch.zeros(5, 3), torch.tensor(2)),
                   dynamic_shapes={"x": {0: st.Dim("n", min=4, max=9)}, "k": None})
    inside = [(torch.randn(n, 3), torch.tensor(k)) for n, k in ((4, 1), (9, 4), (6, 2))]
    return ep, BranchCheck(), inside, (torch.zeros(5, 3), torch.tensor(0))


def _dict_conv():
    torch.manual_seed(0)
    model = DictConv().eval()
    h = st.Dim("h", min=2, max=16)
    ep = st.export(model, ({_KEY: torch.randn(2, 3, 8, 8)},),
                   dynamic_shapes={"d": {_KEY: {0: st.Dim("b", min=1, max=4), 2: 4 * h}}})
    inside = [({_KEY: torch.randn(b, 3, hh, 8)},) for b, hh in ((1, 8), (3, 24), (4, 64))]
    return ep, model, inside, ({_KEY: torch.randn(2, 3, 10, 8)},)  # (10: not 4 * h)


PROGRAMS = {"static_cache": _static_cache, "user_check": _user_check,
            "branch_check": _branch_check, "dict_conv": _dict_conv}


@pytest.mark.parametrize("verify", (False, True))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_check_message_of_a_converted_program_is_one_c_safe_line(name, verify):
    ep, model, inside, outside = PROGRAMS[name]()
    tep = ep.to_torch(verify=verify)
    messages = _check_messages(tep.graph_module)
    assert messages, "the program has checks"
    bad = [m for m in messages if not _c_safe(m)]
    assert not bad, bad
    module = tep.module()  # (the static cache: its state and eager's written alike)
    for args in inside:
        assert_close(module(*args), model(*args))
    with pytest.raises((RuntimeError, AssertionError)):
        module(*outside)


def test_the_messages_still_name_the_check_and_the_users_text():
    ep, _, _, outside = _user_check()
    messages = " ".join(_check_messages(ep.to_torch().graph_module))
    assert "k must be 'positive', not / zero" in messages, messages
    ep, _, _, outside = _dict_conv()
    messages = " ".join(_check_messages(ep.to_torch().graph_module))
    assert "d['a//b'].shape[2]" in messages, messages


class _Compiled(Exception):
    """Raised by the stub compiler once it has the program st.to_aoti gave it."""


def test_to_aoti_hands_inductor_one_line_messages_only(monkeypatch):
    """Whatever the converted program holds (a program loaded from an older file: messages
    on several lines), st.to_aoti hands inductor one C-safe line per check, branches
    included."""
    ep = _branch_check()[0]
    converted = ep.to_torch()
    raw = 'line one\nline "two" \\ end'
    for mod in converted.graph_module.modules():
        if isinstance(mod, torch.fx.GraphModule):
            for node in mod.graph.nodes:
                if node.op == "call_function" and node.target in _CHECKS:
                    node.args = (node.args[0], raw)
    assert raw in _check_messages(converted.graph_module)
    seen = []

    def compile_stub(program, package_path=None, **kwargs):
        seen.append(_check_messages(program.graph_module))
        raise _Compiled

    monkeypatch.setattr(type(ep), "to_torch", lambda self, **kw: converted)
    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", compile_stub)
    with pytest.raises(_Compiled):
        st.to_aoti(ep)
    (messages,) = seen
    assert messages and all(_c_safe(m) for m in messages), messages
    assert "line one line 'two' / end" in messages
