"""Aliasing: every result that is a view of its input in eager is one in the graph, and an
in-place write shows through exactly the aliases eager shows it through.

One table of aliasing ops (views, basic indexing including 0-d integer tensor indices,
split / unbind pieces, ...) times one table of in-place writes, each applied to the base
and to the view; every program is compared with eager at several sizes, 0 and 1
included (where eager raises, the program must raise too, or reject the input before
running).
"""

from __future__ import annotations

import pytest
import torch

import safetrace as st
from safetrace import Dim

# name -> view of `b` (n x 4 float, or complex where named so); each aliases b in eager
ALIASING = {
    "view": lambda b: b.view(-1),
    "view_split_dim": lambda b: b.view(b.shape[0], 2, 2),
    "reshape": lambda b: b.reshape(-1, 2),
    "flatten": lambda b: b.flatten(),
    "unflatten": lambda b: b.unflatten(1, (2, 2)),
    "view_as": lambda b: b.view_as(b),
    "int_index": lambda b: b[:, 1],
    "row_index": lambda b: b[0],
    "slice": lambda b: b[:, 1:3],
    "step_slice": lambda b: b[:, ::2],
    "none_index": lambda b: b[None],
    "ellipsis": lambda b: b[..., 2],
    "full_slice": lambda b: b[:],
    "tensor0d_index": lambda b: b[torch.tensor(0)],
    "tensor0d_column": lambda b: b[:, torch.tensor(2)],
    "tensor0d_int32": lambda b: b[:, torch.tensor(1, dtype=torch.int32)],
    "tensor0d_pair": lambda b: b[torch.tensor(0), torch.tensor(3)],
    "tensor0d_computed": lambda b: b[b[:, 0].argmax() % b.shape[0]],
    "tensor0d_size": lambda b: b[:, torch.tensor(b.shape[0]) % 4],
    "expand": lambda b: b[:, :1].expand(-1, 4),
    "diagonal": lambda b: b.diagonal(),
    "unbind": lambda b: b.unbind(1)[2],
    "split": lambda b: b.split(2, 1)[1],
    "split_sizes": lambda b: b.split([1, 3], 1)[1],
    "chunk": lambda b: b.chunk(2, 1)[0],
    "tensor_split": lambda b: b.tensor_split(2, 1)[1],
    "select": lambda b: b.select(1, 3),
    "narrow": lambda b: b.narrow(1, 1, 2),
    "t": lambda b: b.t(),
    "T": lambda b: b.T,
    "mT": lambda b: b.mT,
    "transpose": lambda b: b.transpose(0, 1),
    "permute": lambda b: b.permute(1, 0),
    "movedim": lambda b: b.movedim(0, 1),
    "unfold": lambda b: b.unfold(1, 2, 1),
    "unsqueeze": lambda b: b.unsqueeze(0),
    "squeeze": lambda b: b[:, :1].squeeze(1),
    "detach": lambda b: b.detach(),
    "data": lambda b: b.data,
    "alias": lambda b: torch.ops.aten.alias(b),
    "contiguous": lambda b: b.contiguous(),
    "to_same_dtype": lambda b: b.to(torch.float32),
    "float_same_dtype": lambda b: b.float(),
    "as_strided": lambda b: b.as_strided((2, 2), (1, 2)),
    "real": lambda b: b.to(torch.complex64).real,
    "complex_real": "complex",
    "complex_imag": "complex",
    "view_as_real": "complex",
    "advanced_index_copy": lambda b: b[:, [0, 2]],  # a copy in eager: must stay one
}
COMPLEX = {
    "complex_real": lambda c: c.real,
    "complex_imag": lambda c: c.imag,
    "view_as_real": lambda c: torch.view_as_real(c),
}

# name -> in-place write of `t`
WRITES = {
    "add_": lambda t: t.add_(1),
    "mul_": lambda t: t.mul_(-2),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(3),
    "iadd": lambda t: t.__iadd__(5),
    "copy_": lambda t: t.copy_(torch.full_like(t, 7)),
    "clamp_": lambda t: t.clamp_(min=0.5),
    "setitem_all": lambda t: t.__setitem__(..., 9),
    "setitem_first": lambda t: t.__setitem__((slice(None, 1),), 0.25),
    "masked_fill_": lambda t: t.masked_fill_(t > 0, -1),
}


def _program(view_name: str, write_name: str, on: str):
    write = WRITES[write_name]
    if view_name in COMPLEX:
        make_view = COMPLEX[view_name]

        def f(x):
            base = torch.complex(x, x.flip(1))  # a complex intermediate
            before = make_view(base) * 1
            v = make_view(base)
            if on == "base":
                write(torch.view_as_real(base))
            else:
                write(v)
            return torch.view_as_real(base) * 1, v * 1, before
    else:
        make_view = ALIASING[view_name]

        def f(x):
            base = x * 1  # an intermediate: writes never reach the user's input
            before = make_view(base) * 1
            v = make_view(base)
            write(base if on == "base" else v)
            return base * 1, v * 1, before
    return f


def _run(fn, x):
    try:
        return fn(x), None
    except Exception as exc:  # noqa: BLE001 - compared with the program's behaviour
        return None, exc


CASES = [(v, w, on) for v in ALIASING for w in WRITES for on in ("base", "view")]


def _grid():
    """The whole grid (980 cases); the default run takes a third of it, every view with
    every `on` and 3 or 4 of the writes, every write with every `on` and ~16 of the views
    (checked in test_the_default_sample_covers_every_view_write_and_side); `-m slow` the
    rest (session 30: ~10 s of the default run's CPU)."""
    out = []
    for i, v in enumerate(ALIASING):
        for j, w in enumerate(WRITES):
            for k, on in enumerate(("base", "view")):
                marks = () if (i + j + k) % 3 == 0 else (pytest.mark.slow,)
                out.append(pytest.param(v, w, on, id=f"{v}-{w}-{on}", marks=marks))
    return out


def test_the_default_sample_covers_every_view_write_and_side():
    default = [p.values for p in _grid() if not p.marks]
    assert {(v, on) for v, _, on in default} == {(v, on) for v, _, on in CASES}
    assert {(w, on) for _, w, on in default} == {(w, on) for _, w, on in CASES}
    assert len(_grid()) == len(CASES)


@pytest.mark.filterwarnings("ignore:Use of masked_fill_ on expanded tensors")
@pytest.mark.parametrize("view,write,on", _grid())
def test_write_is_seen_through_the_aliases_eager_shows_it_through(view, write, on):
    f = _program(view, write, on)
    x = torch.randn(3, 4)
    expected, error = _run(f, x)
    if error is not None:  # eager refuses the write (e.g. into an expanded view)
        with pytest.raises(Exception):
            st.export(f, (x,), dynamic_shapes=({0: Dim.AUTO},)).module()(x)
        return
    ep = st.export(f, (x,), dynamic_shapes=({0: Dim.AUTO},))
    for n in (3, 0, 1, 5):
        x = torch.randn(n, 4)
        expected, error = _run(f, x.clone())
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            assert n != 3, "the example size must be accepted"
            continue  # outside the traced program's input space: rejected before running
        except Exception:  # noqa: BLE001
            assert error is not None, f"n={n}: eager computes, the program raised"
            continue
        assert error is None, f"n={n}: eager raised {error!r}, the program computed"
        for e, g in zip(expected, got):
            assert e.shape == g.shape and e.dtype == g.dtype
            torch.testing.assert_close(g, e, equal_nan=True)


def test_issue_examples_view_of_a_data_index_then_writes():
    """From the fuzzer (issue 14): 0-d integer tensor indices are views in eager."""
    def f(b):
        b = b * 1
        t = b[torch.tensor(0)]
        u = b[b.argmax() % b.shape[0]]
        w = b[b[:, 0].argmax(0)]
        b[:1] = 0.5
        before = t * 1
        b.zero_()
        return before, t * 1, u * 1, w * 1

    ep = st.export(f, (torch.randn(3, 4),), dynamic_shapes=({0: Dim("n", min=1)},))
    for n in (1, 2, 7):
        x = torch.randn(n, 4)
        for e, g in zip(f(x), ep.module()(x)):
            torch.testing.assert_close(g, e)


def test_data_index_out_of_range_fails_at_run_time_like_eager():
    def f(x, i):
        return x[i.sum()] * 1

    x = torch.randn(3, 4)
    ep = st.export(f, (x, torch.tensor([1, 1])))
    torch.testing.assert_close(ep.module()(x, torch.tensor([0, 2])), f(x, torch.tensor([0, 2])))
    torch.testing.assert_close(ep.module()(x, torch.tensor([-3, 0])), f(x, torch.tensor([-3, 0])))
    for bad in (torch.tensor([2, 1]), torch.tensor([-4, 0])):
        with pytest.raises(IndexError):
            f(x, bad)
        with pytest.raises(st.RuntimeAssertionError, match="index out of range"):
            ep.module()(x, bad)


def test_writes_through_views_of_the_input_and_of_module_state():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.arange(12.0).reshape(3, 4))

        def forward(self, x):
            v = self.b[x.argmax() % 3]
            col = x[:, torch.tensor(1)]
            self.b.add_(x.sum())
            x.mul_(2)
            return v * 1, col * 1

    model = M()
    program = st.export(M(), (torch.randn(3, 4),)).module()
    for _ in range(2):  # the program's state advances as the model's does
        x = torch.randn(3, 4)
        x_eager = x.clone()
        expected = model(x_eager)
        got = program(x)
        for e, g in zip(expected, got):
            torch.testing.assert_close(g, e)
        torch.testing.assert_close(x, x_eager)  # the input written as eager writes it
