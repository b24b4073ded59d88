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
    # ATen's; rules keyed by a library's op name (torchvision's RoI ops, the collectives)
    # join the registry on the op's first traced call, so the page would depend on which
    # programs ran before; a rule registered through st.register_shape_rule (by a user or
    # a test) is not the library's
    ops = [op for op in RULES if op.namespace == "aten" and
           FAMILY[op].startswith("safetrace.rules.")]
    families: dict[str, list[str]] = collections.defaultdict(list)
    for op in ops:
        family = FAMILY[op].rsplit(".", 1)[-1]
        families[family].append(op.name().split("::", 1)[1])
    lines = [f"{len(ops)} overloads with symbolic shape and dtype rules, by family "
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
