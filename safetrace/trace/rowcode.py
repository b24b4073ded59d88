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
"""

from __future__ import annotations

import keyword
import sys
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
        names: dict[str, Any] = {"_MODULES": sys.modules}
        given: dict[tuple[str, int], str] = {}  # (prefix, id(object)) -> its global's name

        def name(prefix: str, obj: Any) -> str:
            key = given.get((prefix, id(obj)))
            if key is None:
                key = given[prefix, id(obj)] = f"{prefix}{len(given)}"
                names[key] = obj
            return key

        reads, sets, puts = [], [], []
        row_of: dict[tuple[int, str], str] = {}  # (id(namespace), attribute) -> its local
        for i, (space, owner, attr, replacement) in enumerate(rows):
            local = f"o{i}"
            if space is not None:
                place = f"{name('S', space)}[{attr!r}]"
                row_of.setdefault((id(space), attr), local)
            elif attr.isidentifier() and not keyword.iskeyword(attr):
                place = f"{name('O', owner)}.{attr}"
            else:  # (never among the providers' rows: kept general)
                place = None
                owner_name = name("O", owner)
            if place is None:
                reads.append(f"{local} = getattr({owner_name}, {attr!r})")
                sets.append(f"setattr({owner_name}, {attr!r}, {name('R', replacement)})")
                puts.append(f"setattr({owner_name}, {attr!r}, {local})")
            else:
                reads.append(f"{local} = {place}")
                sets.append(f"{place} = {name('R', replacement)}")
                puts.append(f"{place} = {local}")
        tests = []
        for module_name, module in modules:  # (a module gone: KeyError, as a row gone)
            tests.append(f"{module_name!r} in _MODULES" if module is None else
                         f"_MODULES[{module_name!r}] is not {name('M', module)}")
        for space, attr, value in attributes:
            local = row_of.get((id(space), attr))
            if local is not None:  # (a row's original, read above)
                tests.append(f"{local} is not {name('W', value)}")
            else:
                tests.append(f"{name('S', space)}.get({attr!r}) is not {name('W', value)}")
        originals = "(" + "".join(f"o{i}, " for i in range(len(rows))) + ")"
        source = "\n".join((
            "def enter():",
            "    try:",
            *(f"        {line}" for line in reads),
            *((f"        if {' or '.join(tests)}:", "            return None") if tests
              else ("        pass",)),
            "    except (KeyError, AttributeError):",
            "        return None",
            "    try:",
            *(f"        {line}" for line in sets or ["pass"]),
            "    except BaseException:",
            f"        leave({originals})",
            "        raise",
            f"    return {originals}",
            "",
            "def leave(originals):",
            f"    {originals} = originals" if rows else "    pass",
            *(f"    {line}" for line in reversed(puts)),
        ))
        exec(compile(source, "<safetrace session rows>", "exec"), names)  # noqa: S102
        self.enter: Callable[[], tuple | None] = names["enter"]
        self.leave: Callable[[tuple], None] = names["leave"]
