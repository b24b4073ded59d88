"""Counting how often the library's shape rules are asked (memo's replay tests)."""

from __future__ import annotations

import safetrace as st
from safetrace.rules import get_rule
from safetrace.rules.registry import FAMILY


class RulesAsked:
    """Count the calls of the shape rules of `ops` while installed (``asked``), then put
    the library's rules back as they were (with their family, as docs/ops.md lists it)."""

    def __init__(self, *ops) -> None:
        self.ops, self.asked = ops, 0
        self.originals = [(get_rule(op), FAMILY[op]) for op in ops]

    def __enter__(self) -> RulesAsked:
        for op, (original, _) in zip(self.ops, self.originals):
            def counting(*a, _original=original, **k):
                self.asked += 1
                return _original(*a, **k)

            st.register_shape_rule(op)(counting)
        return self

    def __exit__(self, *exc) -> None:
        for op, (original, family) in zip(self.ops, self.originals):
            st.register_shape_rule(op)(original)
            FAMILY[op] = family
