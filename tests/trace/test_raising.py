"""trace/raising.py: which size questions are asked by code that raises on the other
answer (an op's requirement) and which pick a branch."""

from __future__ import annotations

import dis

import pytest

from safetrace.trace import raising
from tests.trace import raising_cases as C


def _first_jump(code):
    return next(i.offset for i in dis.get_instructions(code) if i.opname.startswith("POP_JUMP"))


@pytest.mark.parametrize("fn, answer, expected", [
    (C.asserts, True, True),
    (C.raises_if_small, False, True),
    (C.branch, True, False),
    (C.caught, False, False),
    (C.Items.__next__, False, False),
], ids=["assert", "if raise", "branch", "caught", "iterator end"])
def test_the_other_answer_raises(fn, answer, expected) -> None:
    code = fn.__code__
    assert raising._raises(code, _first_jump(code), answer) is expected
