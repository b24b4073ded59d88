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


def _spans(toks: list, at: int) -> tuple[int, int, int, int, int] | None:
    """Column offsets around the ``out=`` keyword at token ``at``: the call's start (its
    callee), where the keyword's text starts (with its comma), the value's start and end,
    and the call's end (after its closing bracket)."""
    depth, j = 0, at - 1
    while j >= 0:  # back to the call's opening bracket
        s = toks[j].string
        if s in _CLOSE:
            depth += 1
        elif s in _OPEN:
            if depth == 0:
                break
            depth -= 1
        j -= 1
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
    depth, m = 0, at + 2
    while m < len(toks):  # the value runs to the comma or bracket that ends the argument
        s = toks[m].string
        if s in _OPEN:
            depth += 1
        elif s in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif s == "," and depth == 0:
            break
        m += 1
    if m >= len(toks):
        return None
    out_end = toks[m].start[1]
    depth, e = 0, m
    while e < len(toks):  # the call's closing bracket
        s = toks[e].string
        if s in _OPEN:
            depth += 1
        elif s in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        e += 1
    if e >= len(toks):
        return None
    return call_start, cut_start, out_start, out_end, toks[e].end[1]
