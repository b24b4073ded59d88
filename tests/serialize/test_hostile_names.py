"""Argument names a file gives its inputs cannot break the code generated from them
(session 24).

A loaded program's ``forward`` presents the model's argument names, read from the file's
input paths, through a generated ``def forward(self, x, y)``.  Python reads an identifier
in its NFKC form, so a file naming its inputs ``x`` and ``ｘ`` (fullwidth), or one ``ｓｅｌｆ``,
made that code a duplicate argument: ``ep.module()`` raised a ``SyntaxError``;
``ep.run_decompositions()`` did too, and for an input named ``self``.  Such a name is now
replaced by a positional one (``arg1``), as one that is no identifier already was.
"""

from __future__ import annotations

import functools
import inspect
import io

import pytest
import torch

import safetrace as st
from tests.serialize.hostile_static import pack, parts


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


@functools.lru_cache(maxsize=1)
def _saved() -> bytes:
    buf = io.BytesIO()
    st.save(st.export(Add(), (torch.randn(3), torch.randn(3))), buf)
    return buf.getvalue()


def _named(second: str) -> st.ExportedProgram:
    doc, tensors = parts(_saved())
    doc["contract"]["inputs"][1]["path"] = second
    return st.load(io.BytesIO(pack(doc, tensors)))


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
