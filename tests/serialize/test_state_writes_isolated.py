"""What a loaded program writes to its state stays in that program (session 29): never the
file, its mapping, the bytes given, nor another load of the same file; the program's
modules share its state, as torch.export's do."""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from safetrace.serialize import lease


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))
        self.register_buffer("b", torch.zeros(4))

    def forward(self, x):
        self.b.add_(x)
        return self.w * self.b


@pytest.mark.parametrize("source", ["leased", "read", "mmap", "bytes"])
def test_writes_reach_neither_the_file_nor_another_load(tmp_path, monkeypatch, source):
    buf = io.BytesIO()
    st.save(st.export(Counter(), (torch.ones(4),)), buf)
    blob = buf.getvalue()
    path = tmp_path / "m.st"
    path.write_bytes(blob)
    monkeypatch.setattr(lease, "ENABLED", source != "read")
    given = blob if source == "bytes" else path
    first = st.load(given, mmap=source == "mmap")
    second = st.load(given, mmap=source == "mmap")
    one = torch.ones(4)
    m = first.module()
    m(one)
    m(one)
    assert torch.equal(first.module()(one), torch.full((4,), 3.0))  # (shared, as torch's)
    assert torch.equal(first.state_dict["b"], torch.full((4,), 3.0))
    assert torch.equal(second.module()(one), one)
    assert torch.equal(second.state_dict["b"], one)
    assert path.read_bytes() == blob and bytes(blob) == buf.getvalue()
    assert torch.equal(st.load(given).module()(one), one)
    again = io.BytesIO()
    st.save(first, again)  # (the state as it is now)
    assert torch.equal(st.load(again.getvalue()).module()(one), torch.full((4,), 4.0))
