"""The paste-ready rewrite of a call with ``out=``: ``f(a, out=y)`` -> ``y.copy_(f(a))``.

safetrace records ops that make their result (the graph is functional); a result written
into an existing tensor is spelled as the op, then a copy into that tensor, which is what
``out=`` does when the shapes agree (``copy_`` returns the tensor, as the call with
``out=`` does, so the rewrite replaces the call wherever it stands on the line)."""

from __future__ import annotations

import io
import tokenize

_OPEN, _CLOSE = "([{", ")]}"


def rewrite_out(code: str) -> tuple[str, str, str] | None:
    """``code`` (one source line) with its first call carrying ``out=EXPR`` rewritten as
    ``EXPR.copy_(call without out=)``, ``EXPR`` as written and the call without out=;
    None when the line does not show such a call whole."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    for i, tok in enumerate(toks[:-1]):
        if tok.string != "out" or toks[i + 1].string != "=" or i == 0 or \
                toks[i - 1].string not in (",", "("):
            continue
        found = _spans(toks, i)
        if found is None:
            return None
        call_start, cut_start, out_start, out_end, call_end = found
        out_text = code[out_start:out_end].strip()
        call = code[call_start:cut_start].rstrip() + code[out_end:call_end]
        call = call.replace("(, ", "(").replace("(,", "(")
        target = out_text if out_text.isidentifier() or out_text.endswith(("]", ")")) \
            else f"({out_text})"
        return f"{code[:call_start]}{target}.copy_({call}){code[call_end:]}".strip(), out_text, call
    return None


def _scan(toks: list, at: int, step: int, comma: bool = False) -> int:
    """The index of the first token from `at` (walking by `step`, 1 or -1) that closes the
    bracket level `at` is in (or, with `comma`, a comma at that level); out of range when
    there is none."""
    opening, closing = (_OPEN, _CLOSE) if step > 0 else (_CLOSE, _OPEN)
    depth, j = 0, at
    while 0 <= j < len(toks):
        s = toks[j].string
        if s in opening:
            depth += 1
        elif s in closing:
            if depth == 0:
                return j
            depth -= 1
        elif comma and s == "," and depth == 0:
            return j
        j += step
    return j


def _spans(toks: list, at: int) -> tuple[int, int, int, int, int] | None:
    """Column offsets around the ``out=`` keyword at token ``at``: the call's start (its
    callee), where the keyword's text starts (with its comma), the value's start and end,
    and the call's end (after its closing bracket)."""
    j = _scan(toks, at - 1, -1)  # back to the call's opening bracket
    if j <= 0 or toks[j].string != "(":
        return None
    k = j - 1  # the callee: a dotted name (torch.add, x.mul)
    while k - 2 >= 0 and toks[k - 1].string == "." and toks[k - 2].type == tokenize.NAME:
        k -= 2
    if toks[k].type != tokenize.NAME:
        return None
    call_start = toks[k].start[1]
    cut_start = toks[at - 1].start[1] if toks[at - 1].string == "," else toks[at].start[1]
    out_start = toks[at + 2].start[1]
    m = _scan(toks, at + 2, 1, comma=True)  # the comma or bracket that ends the argument
    if m >= len(toks):
        return None
    e = _scan(toks, m, 1)  # the call's closing bracket
    if e >= len(toks):
        return None
    return call_start, cut_start, out_start, toks[m].start[1], toks[e].end[1]
