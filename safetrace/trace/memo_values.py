"""What a memo entry (memo.py) keeps of a result besides its meta: exact strides
(``strides.py``) and the values an integer arange spans (``index_ranges.py``), each
symbolic value kept as its expression and made a value of the replaying export's
environment again."""

from __future__ import annotations

from typing import Any

from safetrace.trace.proxy import Proxy


def span_key(span: tuple, env: Any) -> tuple | None:
    """A noted span's values (after its stamp) with each symbolic one as its expression
    in `env`; None where one is neither an int nor a size of `env`."""
    out = []
    for v in span[1:]:
        if v.__class__ is int:
            out.append(v)
        elif env is not None and type(v) is env.int_cls and v.env is env:
            out.append(v.expr)
        else:
            return None
    return tuple(out)


class Strided(tuple):
    """An entry's result layout that is exact strides: ``(strides, offset_zero)``."""


def with_layouts(plain: tuple, result: Any, env: Any = None) -> tuple | None:
    """The plain emit with its result layout(s) given as ``Strided`` where exact (with
    `env`, symbolic strides as their expressions; None where one is not a size of it)."""
    def lay(p: Any, contig: Any) -> Any:
        if p.st_layout is None:
            return contig
        found = p.st_layout if env is None else layout_key(p.st_layout, env)
        if found is None:
            raise LookupError
        return Strided(found)
    try:
        if len(plain) == 9:
            return plain[:6] + (tuple(lay(p, c) for p, c in zip(result, plain[6])),) + \
                plain[7:]
        return plain[:6] + (lay(result, plain[6]),) + plain[7:]
    except LookupError:
        return None


def layout_key(layout: tuple, env: Any) -> tuple | None:
    """Exact strides ``(strides, offset_zero)`` with each symbolic stride as its
    expression; None where one is not a size of `env`."""
    out = []
    cls = env.int_cls
    for st in layout[0]:
        if st.__class__ is int:
            out.append(st)
        elif type(st) is cls and st.env is env:
            out.append(st.expr)
        else:
            return None
    return (tuple(out), layout[1])


def strides_key(layout: tuple, static: Any, sym: list) -> tuple | None:
    """The key of exact strides `layout` of a tensor whose sizes are `static` (None: they
    are symbolic): the strides where all are ints, else each as its expression in the env
    ``sym[0]`` (None where one is not its size, or no env may be keyed).  Symbolic strides
    of static sizes (``x[:, :0]`` of an (m, n) input: strides (n, 1)) mark `sym` (the key
    then holds the env's state, as for symbolic sizes): hashed as they are, they would
    specialize n."""
    if static is not None:
        for s in layout[0]:  # (a loop, not all(...): no generator made per keyed argument)
            if s.__class__ is not int:
                break
        else:
            return layout
    if sym[0] is None or (key := layout_key(layout, sym[0])) is None:
        return None
    if static is not None:
        sym.append(layout)  # (a mark)
    return key


def set_layout(p: Any, contig: Any, env: Any = None) -> None:
    """A replayed result's layout from its entry (`env`: its symbolic strides' env)."""
    if contig.__class__ is Strided:
        st = contig[0]
        if env is not None:
            cls = env.int_cls
            st = tuple(x if x.__class__ is int else cls(x, env) for x in st)
        p.st_contig, p.st_layout = None, (st, contig[1])
    else:
        p.st_contig = contig


def strided(result: Any) -> bool:
    """Whether `result` (or one of its pieces) carries exact strides (``strides.py``)."""
    if type(result) is Proxy:
        return result.st_layout is not None
    return (type(result) is tuple or type(result) is list) and \
        any(type(p) is Proxy and p.st_layout is not None for p in result)  # (not Pieces)
