"""Argument names a file gives its inputs cannot break the code generated from them
(session 24).

A loaded program's ``forward`` presents the model's argument names, read from the file's
input paths, through a generated ``def forward(self, x, y)``.  Python reads an identifier
in its NFKC form, so a file naming its inputs ``x`` and ``ｘ`` (fullwidth), or one ``ｓｅｌｆ``,
made that code a duplicate argument: ``ep.module()`` raised a ``SyntaxError``;
``ep.run_decompositions()`` did too, and for an input named ``self``.  Such a name is now
replaced by a positional one (``arg1``), as one that is no identifier already was.
A state or subgraph name that a GraphModule sets on itself (``meta``, ``shape_env``) or
has as a property (``graph``, ``code``) is refused at load: ``ep.module()`` raised.
"""

from __future__ import annotations

import functools
import inspect
import io
import json

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import pack, parts
from tests.serialize import surgery


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


@functools.lru_cache(maxsize=1)
def _saved() -> bytes:
    return surgery.saved(st.export(Add(), (torch.randn(3), torch.randn(3))))


def _named(second: str) -> st.ExportedProgram:
    doc, tensors = parts(_saved())
    doc["contract"]["inputs"][1]["path"] = second
    return surgery.load(doc, tensors)


@pytest.mark.parametrize("second", ["\uff58", "\uff53\uff45\uff4c\uff46", "\uff3fst_forward"],
                         ids=["fullwidth-x", "fullwidth-self", "fullwidth-underscore"])
def test_names_python_reads_as_others_are_replaced(second):
    mod = _named(second).module()
    assert list(inspect.signature(mod.forward).parameters) == ["x", "arg1"]
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(mod(x, y), x + y)


@pytest.mark.parametrize("second", ["\uff58", "self"])
def test_run_decompositions_takes_such_names(second):
    ep = _named(second).run_decompositions()
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(ep.module()(x, y), x + y)


class Buffered(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.ones(4))

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda a: a * 2, lambda a: a + self.buf, (x,))


@functools.lru_cache(maxsize=1)
def _buffered() -> bytes:
    return surgery.saved(st.export(Buffered(), (torch.randn(4),)))


def _renamed(old: str, new: str) -> bytes:
    doc, tensors = parts(_buffered())
    text = json.dumps(doc).replace(json.dumps(old), json.dumps(new))
    tensors = {k.replace(f":{old}", f":{new}"): v for k, v in tensors.items()}
    return pack(json.loads(text), tensors)


@pytest.mark.parametrize("name", ["meta", "shape_env", "graph", "code", "_graph"])
def test_a_state_name_a_graph_module_holds_is_refused_at_load(name):
    """``ep.module()`` raised ``KeyError: attribute 'meta' already exists`` (GraphModule
    sets ``meta`` and ``shape_env`` on itself; ``graph`` and ``code`` are its properties)."""
    with pytest.raises(st.LoadError, match=rf"reserved or duplicate state name '{name}'"):
        st.load(io.BytesIO(_renamed("buf", name)))


@pytest.mark.parametrize("name", ["meta", "shape_env"])
def test_a_subgraph_name_a_graph_module_sets_is_refused_at_load(name):
    """A cond branch named ``meta``: ``ep.module()`` raised ``TypeError: cannot assign
    'dict' as child module 'meta'``."""
    with pytest.raises(st.LoadError, match=rf"subgraph name '{name}' is reserved"):
        st.load(io.BytesIO(_renamed("true_graph_0", name)))


def test_the_files_renamed_to_free_names_load_and_run():
    x = torch.ones(4)
    mod = st.load(io.BytesIO(_renamed("true_graph_0", "then_branch"))).module()
    torch.testing.assert_close(mod(x), x * 2)
    mod = st.load(io.BytesIO(_renamed("buf", "offset"))).module()
    torch.testing.assert_close(mod(-x), -x + 1)
