"""The export session's kept table as straight-line code: one generated function that
checks the table is still the one to install, reads each row's original and sets its
replacement, and one that puts the originals back.

A loop over a table's rows (``map(operator.setitem, ...)``, ``map(getattr, ...)``, and an
identity pass for each check) costs each row a C call made through ``map`` and a result
tested by ``all``/``any``; the same work written out once per table, as
``ns['cond'] = r``, runs each row as a few specialised bytecodes, about half the
instructions.  The code is made once per kept table (``trace/session.py`` keeps the
providers' table while what they read is the same objects) and run by every export
after, so only such a table gets one.

What the generated ``enter()`` checks is ``session._provided``'s test of its kept table:
each watched module is still the one in ``sys.modules`` (or still not imported), and
each watched attribute still holds the object the table was made from.  It reads the
originals before it sets anything, so a row whose original is missing (a module
``__getattr__`` answer, an attribute deleted since) or a check that fails leaves
everything as it was and answers None: the caller goes the general way.

The namespace holding the most rows (``torch``'s) is the two functions' globals: each of
its rows that the watch checks by the row's own read is read and set as a plain global
(``o = cond`` ... ``cond = r``, one bytecode each way against a subscript's three; ~290
instructions a row less, enter and leave), everything else is reached through the
closure.  Such a row is never one whose name is a builtin's (a global missing from the
namespace would read the builtin: here it raises NameError, caught as a missing row),
and its read is checked against the watched value, so a read that finds anything else
sets nothing.
"""

from __future__ import annotations

import builtins
import keyword
import sys
import types
from typing import Any, Callable


class RowCode:
    """``enter() -> tuple | None`` (the originals, in row order: or None, nothing set) and
    ``leave(originals)`` (in reverse row order: an attribute set twice ends original) for
    one table.  `rows`: (namespace dict or None, owner, attribute, replacement) per row,
    a namespace given where the row is set as that dict's item; `watch`: (module name,
    module or None) per watched module, and (namespace, attribute, value) per watched
    attribute (a module not imported: its entries need no check beyond the module's)."""

    __slots__ = ("enter", "leave")

    def __init__(self, rows: list[tuple[Any, Any, str, Any]], modules: list[tuple[str, Any]],
                 attributes: list[tuple[dict, str, Any]]) -> None:
        names: dict[str, Any] = {"_rc_MODULES": sys.modules,
                                 "_rc_MISSING": (KeyError, AttributeError, NameError),
                                 "_rc_BASE": BaseException, "_rc_getattr": getattr,
                                 "_rc_setattr": setattr}
        given: dict[tuple[str, int], str] = {}  # (prefix, id(object)) -> its closure name

        def name(prefix: str, obj: Any) -> str:
            key = given.get((prefix, id(obj)))
            if key is None:
                key = given[prefix, id(obj)] = f"_rc_{prefix}{len(given)}"
                names[key] = obj
            return key

        # the namespace whose watched rows are read and set as globals (the most of them)
        watched = {(id(space), attr) for space, attr, _ in attributes}
        counts: dict[int, int] = {}
        for space, _, attr, _ in rows:
            if space is not None and (id(space), attr) in watched and _plain_global(attr):
                counts[id(space)] = counts.get(id(space), 0) + 1
        home_id = max(counts, key=counts.__getitem__) if counts else None
        home: dict = next((space for space, *_ in rows if id(space) == home_id),
                          {"__builtins__": builtins})
        reads, sets, puts = [], [], []
        plain: dict[str, None] = {}  # the rows set as globals
        row_of: dict[tuple[int, str], str] = {}  # (id(namespace), attribute) -> its local
        for i, (space, owner, attr, replacement) in enumerate(rows):
            local = f"_rc_o{i}"
            if space is not None and id(space) == home_id and \
                    (id(space), attr) in watched and _plain_global(attr):
                place = attr  # (its read is checked by the watch below)
                plain[attr] = None
                row_of.setdefault((id(space), attr), local)
            elif space is not None:
                place = f"{name('S', space)}[{attr!r}]"
                row_of.setdefault((id(space), attr), local)
            elif attr.isidentifier() and not keyword.iskeyword(attr):
                place = f"{name('O', owner)}.{attr}"
            else:  # (never among the providers' rows: kept general)
                place = None
                owner_name = name("O", owner)
            if place is None:
                reads.append(f"{local} = _rc_getattr({owner_name}, {attr!r})")
                sets.append(f"_rc_setattr({owner_name}, {attr!r}, {name('R', replacement)})")
                puts.append(f"_rc_setattr({owner_name}, {attr!r}, {local})")
            else:
                reads.append(f"{local} = {place}")
                sets.append(f"{place} = {name('R', replacement)}")
                puts.append(f"{place} = {local}")
        tests = []
        for module_name, module in modules:  # (a module gone: KeyError, as a row gone)
            tests.append(f"{module_name!r} in _rc_MODULES" if module is None else
                         f"_rc_MODULES[{module_name!r}] is not {name('M', module)}")
        for space, attr, value in attributes:
            read = row_of.get((id(space), attr))
            if read is not None:  # (a row's original, read above)
                tests.append(f"{read} is not {name('W', value)}")
            else:
                tests.append(f"{name('S', space)}.get({attr!r}) is not {name('W', value)}")
        originals = "(" + "".join(f"_rc_o{i}, " for i in range(len(rows))) + ")"
        declared = (f"        global {', '.join(plain)}",) if plain else ()
        source = "\n".join((
            f"def _rc_make({', '.join(names)}):",
            "    def _rc_enter():",
            *declared,
            "        try:",
            *(f"            {line}" for line in reads),
            *((f"            if {' or '.join(tests)}:", "                return None") if tests
              else ("            pass",)),
            "        except _rc_MISSING:",
            "            return None",
            "        try:",
            *(f"            {line}" for line in sets or ["pass"]),
            "        except _rc_BASE:",
            f"            _rc_leave({originals})",
            "            raise",
            f"        return {originals}",
            "",
            "    def _rc_leave(_rc_originals):",
            *declared,
            f"        {originals} = _rc_originals" if rows else "        pass",
            *(f"        {line}" for line in reversed(puts)),
            "",
            "    return _rc_enter, _rc_leave",
        ))
        code = compile(source, "<safetrace session rows>", "exec")
        make = types.FunctionType(  # (its functions' globals: the home namespace)
            next(c for c in code.co_consts if isinstance(c, types.CodeType)), home)
        enter, leave = make(*names.values())
        self.enter: Callable[[], tuple | None] = enter
        self.leave: Callable[[tuple], None] = leave


def _plain_global(attr: str) -> bool:
    """Whether a row's attribute can be a global of the generated code: a name that no
    builtin has (a missing global reads the builtin) and none of the code's own."""
    return attr.isidentifier() and not keyword.iskeyword(attr) and \
        not attr.startswith("_rc_") and attr not in vars(builtins)
