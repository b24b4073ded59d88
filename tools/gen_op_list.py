"""Regenerate docs/ops.md's list of covered ATen overloads from the rule registry.

Run: .venv/bin/python tools/gen_op_list.py   (rewrites the block between the markers)
"""

from __future__ import annotations

import collections
import pathlib

from safetrace.rules import RULES
from safetrace.rules.registry import FAMILY

START, END = "<!-- ops:start -->", "<!-- ops:end -->"


def op_list() -> str:
    families: dict[str, list[str]] = collections.defaultdict(list)
    for op in RULES:
        family = FAMILY[op].rsplit(".", 1)[-1]
        families[family].append(op.name().split("::", 1)[1])
    lines = [f"{len(RULES)} overloads with symbolic shape and dtype rules, by family "
             f"(`safetrace/rules/<family>.py`):", ""]
    for family in sorted(families):
        ops = sorted(set(families[family]))
        lines.append(f"- **{family}** ({len(ops)}): " + ", ".join(f"`{o}`" for o in ops))
    return "\n".join(lines)


def main() -> None:
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "ops.md"
    text = path.read_text()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{START}\n{op_list()}\n{END}{tail}")


if __name__ == "__main__":
    main()
