"""Formatting a size does not specialize it (issue 15 item 7): timm's
``_assert(H % p == 0, f"Input height ({H}) ...")`` keeps H dynamic under Dim.AUTO and a
Dim.DYNAMIC (a named Dim is refused: `H % p == 0` rules out most of its range); code that reads the text's content still specializes (a guard), never a
silently wrong string."""

from __future__ import annotations

import pytest
import torch

import safetrace as st


def _assert(cond, msg):
    assert cond, msg


class PatchEmbed(torch.nn.Module):
    def forward(self, x):
        b, c, h, w = x.shape
        _assert(h % 4 == 0, f"Input height ({h}) should be divisible by patch size (4).")
        _assert(w % 4 == 0, f"Input width ({w}) should be divisible by patch size (4).")
        print(h, end="")  # display only
        return x.reshape(b, c, h // 4, 4, w // 4, 4).sum((3, 5))


@pytest.mark.parametrize("spec", [st.Dim.AUTO, st.Dim.DYNAMIC(min=1)])
def test_fstring_message_keeps_the_size_dynamic(spec, capsys) -> None:
    m = PatchEmbed()
    ep = st.export(m, (torch.randn(1, 2, 16, 8),), dynamic_shapes={"x": {2: spec}})
    assert "16" in capsys.readouterr().out  # the example's digits
    for h in (4, 8, 32, 100):
        x = torch.randn(1, 2, h, 8)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError, match="multiple of 4"):
        ep.module()(torch.randn(1, 2, 30, 8))


@pytest.mark.parametrize("read", [
    lambda s: len(s), lambda s: s == "5", lambda s: int(s), lambda s: s[0],
    lambda s: s + "x", lambda s: "x" + s, lambda s: s.zfill(3), lambda s: {s: 1}[s],
    lambda s: float(s), lambda s: list(s),
])
def test_reading_the_text_specializes(read) -> None:
    def f(x):
        n = read(str(x.shape[0]))
        return x * (len(n) if isinstance(n, (str, list)) else n)

    ep = st.export(f, (torch.ones(5),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    torch.testing.assert_close(ep.module()(torch.ones(5)), f(torch.ones(5)))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(12))  # "12" would read differently: the size is static


class FormattedMessages(torch.nn.Module):
    """Every spelling of a message about a size, built on each call and not raised."""

    def __init__(self) -> None:
        super().__init__()
        self.h = 16

    def forward(self, x):
        b, c, h, w = x.shape
        _assert(h % 4 == 0, f"Input height ({h}) doesn't match model ({self.h}).")
        _assert(w % 4 == 0, f"width {w:>5} / {w:d} / {w!r} / {w * 0.5:.1f} / {h}x{w}")
        _assert(h > 0, "%s rows, %s cols" % (h, w))
        _assert(h > 0, "%d x %d (%5.1f, %x)" % (h, w, h * 0.5, w))
        _assert(h > 0, "{} and {:>3}".format(h, w) + str(h) + repr(w) + format(h, "04d"))
        _assert(h > 0, "Input height " + str(h) + " and width " + str(w) + ".")
        return x.reshape(b, c, h // 4, 4, w // 4, 4).mean((3, 5))


@pytest.mark.parametrize("named", [False, True])
def test_every_spelling_of_a_message_keeps_the_size_dynamic(named: bool) -> None:
    m = FormattedMessages()
    x0 = torch.randn(1, 2, 16, 8)
    if named:  # the only problem named is the assert's condition, never its message
        with pytest.raises(st.ConstraintViolationError) as info:
            st.export(m, (x0,), dynamic_shapes={"x": {2: st.Dim("h", min=4, max=64),
                                                      3: st.Dim("w", min=4, max=64)}})
        text = str(info.value)
        assert "x.shape[2] % 4 == 0" in text and "x.shape[3] % 4 == 0" in text
        assert "specialized" not in text and "2 problems" in text
    dims = (st.Dim.DYNAMIC(min=4, max=64),) * 2 if named else (st.Dim.AUTO, st.Dim.AUTO)
    ep = st.export(m, (x0,), dynamic_shapes={"x": {2: dims[0], 3: dims[1]}})
    for h, w in ((4, 4), (8, 32), (64, 12), (20, 64)):
        x = torch.randn(1, 2, h, w)
        torch.testing.assert_close(ep.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(1, 2, 30, 8))


def test_text_used_as_a_key_specializes_with_the_line() -> None:
    def f(x):
        table = {"10": 2.0}
        return x * table.get(str(x.shape[0]), 1.0)

    with pytest.raises(st.ConstraintViolationError, match=r"specialized to 10 .*table.get"):
        st.export(f, (torch.ones(10),), dynamic_shapes={"x": (st.Dim("n"),)})
    ep = st.export(f, (torch.ones(10),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    torch.testing.assert_close(ep.module()(torch.ones(10)), f(torch.ones(10)))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(11))


@pytest.mark.parametrize("text", [str, repr])
def test_the_text_of_a_shape_reads_the_example_sizes(text) -> None:
    """``str(x.shape)`` was ``torch.Size([s0])`` (the expression, one digit longer than
    the example's "5"): read, it now specializes the size as ``str(x.shape[0])`` does,
    never a silently wrong program; printed (display only), it keeps the size dynamic."""
    def f(x):
        return x * len(text(x.shape))

    ep = st.export(f, (torch.ones(5),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    torch.testing.assert_close(ep.module()(torch.ones(5)), f(torch.ones(5)))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.ones(12))  # "12" is one digit longer: the size is static

    def g(x):
        print(x.shape)  # display only
        return x * 2

    ep = st.export(g, (torch.ones(5),), dynamic_shapes={"x": (st.Dim.AUTO,)})
    torch.testing.assert_close(ep.module()(torch.ones(12)), g(torch.ones(12)))
