"""Every dtype torch has, as a constant, a parameter and a buffer: saved and loaded bit for
bit, or refused by st.save itself (never a file st.load refuses)."""

from __future__ import annotations

import io

import pytest
import torch
from safetensors import safe_open

import safetrace as st

DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
QUANTIZED = [dt for dt in DTYPES if str(dt).startswith(("torch.qint", "torch.quint"))]


def _tensor(dt: torch.dtype, seed: int) -> torch.Tensor:
    """A 2x3 tensor of ``dt`` whose bytes are all different (bit patterns, not values)."""
    raw = (torch.arange(6 * dt.itemsize, dtype=torch.int64) * 37 + seed).remainder(251)
    raw = raw.to(torch.uint8)
    if dt is torch.bool:
        return (raw % 2).bool().view(2, 3)
    return raw.view(dt).view(2, 3)


class State(torch.nn.Module):
    def __init__(self, dt: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("buf", _tensor(dt, 1))
        if dt.is_floating_point or dt.is_complex:
            self.p = torch.nn.Parameter(_tensor(dt, 2), requires_grad=False)
        self.c = _tensor(dt, 3)  # a plain attribute: a lifted constant

    def forward(self, x):
        return x + 1, self.c, self.buf


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype is b.dtype and a.shape == b.shape and torch.equal(_bits(a), _bits(b))


@pytest.mark.parametrize("dt", [d for d in DTYPES if d not in QUANTIZED], ids=str)
def test_every_dtype_round_trips_bit_exactly(dt, tmp_path):
    model = State(dt)
    ep = st.export(model, (torch.ones(3),), dynamic_shapes={"x": {0: st.Dim.DYNAMIC}})
    path = tmp_path / "m.st"
    st.save(ep, path)
    buf = io.BytesIO()
    st.save(ep, buf)
    assert buf.getvalue() == path.read_bytes()
    for source in (path, buf.getvalue()):
        ep2 = st.load(source)
        assert [_same(a, b) for a, b in zip(ep2.constants.values(), ep.constants.values())] \
            == [True]
        assert set(ep2.state_dict) == set(model.state_dict())
        for k, v in model.state_dict().items():
            assert _same(ep2.state_dict[k], v), k
        for n in (0, 1, 5):
            out = ep2.module()(torch.ones(n))
            assert torch.equal(out[0], torch.full((n,), 2.0))
            assert _same(out[1], model.c) and _same(out[2], model.buf)
        with pytest.raises(st.InputMismatchError):
            ep2.module()(torch.ones(2, 2))
    with safe_open(str(path), framework="pt") as f:  # any safetensors reader opens it
        held = [f"constant:{k}" for k in ep.lifted_constants]
        assert sorted(f.keys()) == sorted(["state:buf"] + held
                                          + (["state:p"] if hasattr(model, "p") else []))
        stored = f.get_tensor("state:buf")
        assert torch.equal(stored.contiguous().view(torch.uint8).flatten(),
                           _bits(model.buf).flatten())


@pytest.mark.parametrize("dt", QUANTIZED, ids=str)
def test_quantized_dtypes_are_refused_by_save(dt, tmp_path):
    ep = st.export(State(dt), (torch.ones(3),))
    with pytest.raises(TypeError, match="quantized dtype.*\n.*Fix"):
        st.save(ep, tmp_path / "q.st")
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary left


def test_complex128_is_stored_aligned_and_loads_from_a_misaligned_buffer(tmp_path):
    # complex128 kernels load 16 bytes with aligned instructions: a constant at an address
    # that is 8 mod 16 crashed the first call of a loaded program (a segfault)
    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.tensor([1.5], dtype=torch.float64)  # an 8-byte tensor first
            self.c = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128)

        def forward(self, x):
            return x + self.c, x * self.a

    model, x = M(), torch.ones(2, dtype=torch.complex128)
    ep = st.export(model, (x,))
    path = tmp_path / "c.st"
    st.save(ep, path)
    with safe_open(str(path), framework="pt") as f:
        pairs = [f.get_tensor(k) for k in f.keys() if f.get_tensor(k).shape == (2, 2)]
        assert [t.dtype for t in pairs] == [torch.float64]  # stored as (real, imag) pairs
    data = path.read_bytes()
    head = 8 + int.from_bytes(data[:8], "little")
    assert head % 64 == 0
    for off in (0, 8, 1):  # the buffer at every alignment
        store = bytearray(off + len(data))
        store[off:] = data
        ep2 = st.load(memoryview(store)[off:])
        (c,) = [v for v in ep2.constants.values() if v.dtype is torch.complex128]
        assert c.dtype is torch.complex128 and c.data_ptr() % 16 == 0
        y = torch.tensor([2 - 1j, 0.5j], dtype=torch.complex128)
        for inp in (x, y):
            torch.testing.assert_close(ep2.module()(inp), model(inp))
        with pytest.raises(st.InputMismatchError):
            ep2.module()(torch.ones(3, dtype=torch.complex128))
