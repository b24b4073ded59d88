"""A dynamic size used as a Python value in the user's code: text made from it, its type
and class, int methods.  Each program is compared with eager at other sizes (0 and 1
included): it follows eager there, or refuses the size before running (specialized),
never a silently different answer.  Text that is only a message (an ``_assert``'s, a
raise's, a check's, a log's) keeps the size dynamic."""

from __future__ import annotations

import fractions
import io
import logging
import pickle
import sys

import pytest
import torch

import safetrace as st

SIZES = (0, 1, 2, 7, 12, 64, 100)


class Layers:
    a5 = 1
    a7 = 2


def _follows_eager(f, *, dynamic: bool) -> None:
    """Export `f` at size 5 (Dim.AUTO); at each other size the program equals eager or
    refuses the input; with `dynamic`, it refuses none."""
    ep = st.export(f, (torch.randn(5, 3),), dynamic_shapes={"x": (st.Dim.AUTO, 3)})
    ran = []
    for n in SIZES:
        x = torch.randn(n, 3)
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            continue
        torch.testing.assert_close(got, f(x), msg=f"size {n}")
        ran.append(n)
    if dynamic:
        assert ran == list(SIZES)


TEXT = {
    "percent_d": lambda n, x: len("%d" % n),
    "percent_tuple": lambda n, x: len("%d-%x" % (n, n)),
    "percent_bytes": lambda n, x: len(b"%d" % n),
    "fstring_joined": lambda n, x: len(f"n={n}"),
    "fstring_repr": lambda n, x: len(f"{n!r}"),
    "join_map_str": lambda n, x: len(",".join(map(str, x.shape))),
    "join_generator": lambda n, x: len(",".join(str(s) for s in x.shape)),
    "join_list_comprehension": lambda n, x: len(",".join([f"{s}" for s in x.shape])),
    "join_generator_through_map": lambda n, x: len(",".join(map(str.strip,
                                                                 (str(s) for s in x.shape)))),
    "repr": lambda n, x: len(repr(n)),
    "repr_of_tuple": lambda n, x: len(str((n, 3))),
    "str_of_list_of_shape": lambda n, x: len(str(list(x.shape))),
    "format_method": lambda n, x: len("{}".format(n)),
    "getattr_by_name": lambda n, x: getattr(Layers, f"a{n}", 9),
    "getattr_by_percent": lambda n, x: getattr(Layers, "a%d" % n, 9),
    "int_of_text_base": lambda n, x: int(str(n), 16),
    "branch_on_text": lambda n, x: 1 if ("%5d" % n).strip() == "5" else 2,
}


@pytest.mark.parametrize("name", list(TEXT))
def test_text_of_a_size_specializes_where_it_is_read(name: str) -> None:
    read = TEXT[name]

    def f(x):
        return x.sum() * 0 + read(x.shape[0], x)

    _follows_eager(f, dynamic=False)


def test_text_stored_then_read_specializes() -> None:
    def f(x):
        msg = f"rows: {x.shape[0]}"
        return x.sum() * 0 + len(msg)

    _follows_eager(f, dynamic=False)


def _assert(cond, msg):
    assert cond, msg


log = logging.getLogger("safetrace.tests.size_values")


def test_messages_keep_the_size_dynamic() -> None:
    def f(x):
        n = x.shape[0]
        _assert(n >= 0, "%d rows" % n)
        torch._assert(n >= 0, f"{n} rows, shape {x.shape}, {(n, 3)!r}")
        torch._check(n >= 0, lambda: f"{n} rows")
        log.debug("n=%d %s", n, f"{n}")
        if n < 0:
            raise ValueError(f"negative {n}")
        return x * 2

    _follows_eager(f, dynamic=True)


def test_comprehensions_feeding_only_a_message_keep_the_size_dynamic() -> None:
    """``", ".join(str(s) for s in x.shape)`` (or a list comprehension) whose text is only
    a message: the items go nowhere else, the size stays dynamic."""
    def f(x):
        torch._assert(x.shape[0] >= 0, "shape " + ", ".join(str(s) for s in x.shape))
        torch._assert(x.shape[0] >= 0, ", ".join([f"{s}!" for s in x.shape]))
        _assert(x.shape[0] >= 0, "x".join(str(s) for s in x.shape if s >= 0))
        return x * 2

    _follows_eager(f, dynamic=True)

    def stored(x):   # the list is kept: read later, specialized
        names = [str(s) for s in x.shape]
        torch._assert(x.shape[0] >= 0, ", ".join(names))
        return x * len(names[0])

    _follows_eager(stored, dynamic=False)


TYPES = {
    "type_is_int": lambda n: type(n) is int,
    "type_name": lambda n: type(n).__name__ == "int",
    "type_of_ratio": lambda n: type(n / 2) is float,
    "type_of_condition": lambda n: type(n > 2) is bool,
    "class_is_int": lambda n: n.__class__ is int,
    "isinstance_symint": lambda n: isinstance(n, torch.SymInt),
    "isinstance_condition": lambda n: isinstance(n > 2, bool),
}


@pytest.mark.parametrize("name", list(TYPES))
def test_type_and_class_of_a_size_are_eagers(name: str) -> None:
    ask = TYPES[name]

    def f(x):
        return x * 2 if ask(x.shape[0]) else x * 3

    _follows_eager(f, dynamic=True)


def test_a_class_pattern_matches_a_size_as_an_int() -> None:
    def f(x):
        match x.shape[0]:
            case int():
                return x * 2
            case _:
                return x * 3

    _follows_eager(f, dynamic=True)


INT_METHODS = {
    "to_bytes": (lambda n: n.to_bytes(2, "little")[0], False),
    "bit_count": (lambda n: n.bit_count(), False),
    "or": (lambda n: n | 8, False),
    "pow_mod": (lambda n: pow(n, 2, 7), False),
    "is_integer": (lambda n: float(n).is_integer(), False),
    "pickle": (lambda n: pickle.loads(pickle.dumps(n)), False),
    "invert": (lambda n: ~n, True),
    "real_numerator": (lambda n: n.real + n.numerator + n.denominator + n.conjugate(), True),
}


@pytest.mark.parametrize("name", list(INT_METHODS))
def test_int_methods_of_a_size(name: str) -> None:
    fn, dynamic = INT_METHODS[name]

    def f(x):
        return x.sum() * 0 + fn(x.shape[0])

    _follows_eager(f, dynamic=dynamic)


@pytest.mark.parametrize("use", [lambda n: float(fractions.Fraction(n, 4)),
                                 lambda n: sys.getsizeof(n)])
def test_plain_number_uses_of_a_size_are_refused(use) -> None:
    def f(x):
        return x * use(x.shape[0])

    with pytest.raises(st.ExportError, match="plain Python numbers"):
        st.export(f, (torch.randn(5, 3),), dynamic_shapes={"x": (st.Dim.AUTO, 3)})


def test_view_of_a_transpose_is_refused_with_eagers_error() -> None:
    def f(x):
        return x.t().view(-1)

    with pytest.raises(RuntimeError, match="view size is not compatible"):
        f(torch.randn(5, 3))
    with pytest.raises(st.ExportError, match="view size is not compatible.*reshape"):
        st.export(f, (torch.randn(5, 3),), dynamic_shapes={"x": (st.Dim.AUTO, 3)})

    def g(x):  # viewable: the same dims
        return x.t().view(3, x.shape[0]) * 2

    _follows_eager(g, dynamic=True)


def _refuse(n):
    raise ValueError(f"cannot take {n} rows")


def test_a_raised_message_stays_text_unless_its_frame_catches_it() -> None:
    def caught_by_caller(x):  # the message is never read: the size stays dynamic
        try:
            _refuse(x.shape[0])
        except ValueError:
            pass
        return x * 2

    def read_where_caught(x):  # caught in the raising frame and read: specialized
        try:
            raise ValueError(f"n={x.shape[0]}")
        except ValueError as e:
            k = len(str(e))
        return x * k

    _follows_eager(caught_by_caller, dynamic=True)
    _follows_eager(read_where_caught, dynamic=False)


def test_text_printed_to_a_buffer_is_read_back() -> None:
    def f(x):
        buf = io.StringIO()
        print(f"n={x.shape[0]}", x.shape[0], file=buf)
        print(f"n={x.shape[0]}", file=sys.stderr)  # a message
        return x * len(buf.getvalue())

    _follows_eager(f, dynamic=False)


def test_text_printed_to_a_buffer_made_for_the_call_is_a_message() -> None:
    def f(x):  # nothing can read the buffer back: the size stays dynamic
        print("shape is", x.shape, file=io.StringIO())
        return x + 1

    _follows_eager(f, dynamic=True)


def test_view_of_a_size_read_from_data_is_not_replayed() -> None:
    """The view check has no example strides for a tensor whose size is read from data; it
    leaves the view to the program (was an internal LookupError escaping st.export)."""
    def f(x):
        v = x.nonzero()[:, 0].float()
        return v, v.view(v.shape[0], -1)

    ep = st.export(f, (torch.randn(5, 2, 5),), dynamic_shapes={"x": (st.Dim.AUTO,) * 3})
    for shape in [(2, 3, 2), (7, 1, 7), (1, 1, 2)]:
        x = torch.randn(*shape)
        x[0, 0, 0] = 0
        for got, want in zip(ep.module()(x), f(x)):
            assert torch.equal(got, want)
