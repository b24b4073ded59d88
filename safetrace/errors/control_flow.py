"""The control-flow kinds of the catalogue: ``torch.cond``, ``while_loop``, ``map`` and
``scan`` called in a way safetrace cannot trace (``ControlFlowCall``), or with branches and
iterations that disagree (``BranchMismatch``), and their builders.

``where`` is the user's line of the call (``m.py:3 `torch.cond(p, f, g, (x,))```); a
function's location (``body``) is where its ``def`` is; ``got`` and the like are the
printed values (annotations such as ``f32[s0, 4]``)."""

from __future__ import annotations

from typing import Any

from safetrace.errors.base import OpShapeError, UnsupportedOpError, Where

__all__ = [
    "ControlFlowCall", "BranchMismatch",
    "cond_not_callable", "operands_not_sequence", "cond_predicate", "branch_structures",
    "branch_output", "body_structure", "carried_int", "carried_change", "carried_layout",
    "carried_unsettled",
    "loop_condition", "nothing_to_map", "stacked_size_from_data", "xs_rank", "xs_lengths",
    "xs_empty", "scan_without_init", "scan_combine_return", "scan_carry_structure",
    "scan_carry_change", "print_in_branch", "outside_check_in_branch", "branch_output_type",
    "branch_output_from_fake", "branch_writes_in_place", "operand_type",
]


class ControlFlowCall(UnsupportedOpError):
    """A torch.cond / while_loop / map / scan call that cannot be traced as written: its
    arguments, or a branch or body with side effects (print, in-place writes, checks)."""

    kind = "control-flow-call"


class BranchMismatch(OpShapeError):
    """The branches of torch.cond, or the iterations of a loop, return values that do not
    fit together (structure, dtype, number of dims, sizes computed from data)."""

    kind = "branch-mismatch"


def _call(where: str, cause: str, fix: str, **details: Any) -> ControlFlowCall:
    return ControlFlowCall(cause, fix=fix, where=Where(source=where or None), **details)


def _mismatch(where: str, cause: str, fix: str) -> BranchMismatch:
    return BranchMismatch(cause, fix=fix, where=Where(source=where or None))


# -- the call ---------------------------------------------------------------------------------
def cond_not_callable(where: str, got: str) -> ControlFlowCall:
    """``got``: the type names of true_fn and false_fn (``"int, function"``)."""
    return _call(where, f"torch.cond at {where}: true_fn and false_fn must be callables, "
                        f"got {got}",
                 "torch.cond(pred, true_fn, false_fn, (x,)) with two functions of the "
                 "operands (a def or a lambda each)")


def operands_not_sequence(op: str, where: str, param: str, got: str,
                          call: str) -> ControlFlowCall:
    """``param``: what must be a tuple or list (``operands``); ``call``: the right call."""
    return _call(where, f"{op} at {where}: {param} must be a tuple or list, got {got}",
                 call)


def cond_predicate(where: str, got: str, tensor: bool) -> ControlFlowCall:
    """``tensor``: the predicate is a tensor (of another dtype or size); else ``got`` is
    the type name of what was passed."""
    if tensor:
        return _call(where, f"torch.cond at {where}: the predicate must be a bool tensor "
                            f"with one element, got {got}",
                     "reduce it first, e.g. (x.sum() > 0) or mask.any()")
    return _call(where, f"torch.cond at {where}: the predicate must be a bool, a symbolic "
                        f"bool (a condition on sizes) or a one-element bool tensor, got {got}",
                 "pass a condition such as (x.sum() > 0), x.shape[0] > 4 or a Python bool")


# -- branches and iterations that disagree ----------------------------------------------------
def branch_structures(where: str, true_at: str, true_got: str, false_at: str,
                      false_got: str) -> BranchMismatch:
    """The branches return different containers (``*_got``: printed structures)."""
    return _mismatch(where, f"torch.cond at {where}: the branches return different "
                            f"structures:\n  true branch  ({true_at}): {true_got}\n"
                            f"  false branch ({false_at}): {false_got}",
                     "return the same containers with the same number of tensors from both")


def branch_output(where: str, i: int, differs_in: str, first: tuple[str, str, str],
                  other: tuple[str, str, str]) -> BranchMismatch:
    """Output ``i`` differs in ``differs_in`` (dtype, number of dims, device); ``first`` and
    ``other``: (branch name, its location, the output's annotation)."""
    return _mismatch(where, f"torch.cond at {where}: output {i} differs in {differs_in} "
                            f"between the branches:\n  {first[0]} ({first[1]}): {first[2]}\n"
                            f"  {other[0]} ({other[1]}): {other[2]}",
                     "make both branches return the same dtype and number of dims (e.g. "
                     ".to(dtype), .reshape(...)); sizes may differ")


def body_structure(where: str, body: str, got: str, expected: str) -> BranchMismatch:
    """while_loop's body_fn returns another structure than the carried values."""
    return _mismatch(where, f"while_loop at {where}: body_fn ({body}) returns {got}, but the "
                            f"carried values are {expected}.",
                     "return one value per carried input, in the same structure")


def carried_int(where: str, body: str, got: str, i: int) -> BranchMismatch:
    """body_fn returns something else than an int for the carried int ``i``."""
    return _mismatch(where, f"while_loop at {where}: body_fn ({body}) returns {got} for "
                            f"carried int {i}.",
                     "return an int for it (e.g. i + 1)")


def carried_change(where: str, body: str, i: int, before: str,
                   after: str) -> BranchMismatch:
    """body_fn changes the dtype or number of dims of carried value ``i``."""
    return _mismatch(where, f"while_loop at {where}: body_fn ({body}) changes carried value "
                            f"{i} from {before} to {after}.",
                     "keep each carried value's dtype and number of dims (sizes may change)")


def carried_layout(where: str, body: str, i: int) -> BranchMismatch:
    """Carried tensor ``i`` or body_fn's output for it may not be contiguous: eager's
    while_loop raises where their strides differ, and strides are not traced."""
    return _mismatch(where, f"while_loop at {where}: carried tensor {i}, or what body_fn "
                            f"({body}) returns for it, is a view (transpose, slice, diagonal, "
                            f"...) or computed from one; eager's while_loop raises where the "
                            f"body's output has other strides than the carried input, and "
                            f"safetrace does not trace strides.",
                     "carry contiguous tensors: pass x.contiguous() and return "
                     "t.contiguous() from body_fn")


def carried_unsettled(where: str, tries: int) -> BranchMismatch:
    """The carried sizes kept changing after ``tries`` traces of the body."""
    return _mismatch(where, f"while_loop at {where}: the carried sizes do not settle: they "
                            f"still changed after tracing the loop {tries} times",
                     "keep each carried tensor's size fixed across iterations (pad it to a "
                     "fixed maximum size), or carry the changing size as an int")


def loop_condition(where: str, cond: str, got: str) -> BranchMismatch:
    """while_loop's cond_fn returns something else than one bool."""
    return _mismatch(where, f"while_loop at {where}: cond_fn ({cond}) must return one bool "
                            f"tensor with one element, got {got}.",
                     "return a comparison such as (i < n) or (~done).all()")


def nothing_to_map(where: str) -> ControlFlowCall:
    return _call(where, f"map at {where}: xs has no tensors to map over",
                 "map(f, xs) with xs a tensor (or a list, tuple or dict of tensors) whose dim "
                 "0 is the one to map over")


def stacked_size_from_data(op: str, what: str, body: str, got: str) -> BranchMismatch:
    """``op`` (map or scan) stacks results whose size is computed from data in the body;
    ``what``: which result (``map at m.py:3: output 0 of f``)."""
    stacks = ("map stacks its results, so every slice's result must have the same size."
              if op == "map" else "scan stacks them.")
    return _mismatch(body, f"{what} ({body}) has a size computed from data ({got}); {stacks}",
                     "pad the result to a fixed size")


def xs_rank(op: str, where: str, dim: int, got: str) -> BranchMismatch:
    """An xs tensor of map or scan has no dim ``dim`` to iterate over."""
    return _mismatch(where, f"{op} at {where}: every xs tensor needs dim {dim}, got {got}",
                     f"pass xs tensors that have dim {dim} (e.g. x.unsqueeze({dim}))")


def xs_lengths(op: str, where: str, dim: int, first: str, other: str) -> BranchMismatch:
    """The xs tensors of map or scan differ in length along ``dim``."""
    return _mismatch(where, f"{op} at {where}: the xs tensors differ in length along dim "
                            f"{dim}: {first} vs {other}",
                     f"pass xs tensors of the same length along dim {dim}")


def xs_empty(op: str, where: str, dim: int) -> BranchMismatch:
    """map or scan over a length 0 (torch's eager op needs one element)."""
    return _mismatch(where, f"{op} at {where}: xs has length 0 along dim {dim}; torch's {op} "
                            f"needs at least one element.",
                     f"handle empty inputs outside the {op} call")


def scan_without_init(where: str) -> ControlFlowCall:
    return _call(where, f"scan at {where}: init needs at least one tensor",
                 "scan(combine_fn, init, xs) with init a tensor (or a container of tensors): "
                 "the first carry")


def scan_combine_return(where: str, fn: str) -> ControlFlowCall:
    """combine_fn (defined at ``fn``) does not return a pair."""
    return _call(where, f"scan at {where}: combine_fn ({fn}) must return (next_carry, y)",
                 "return a pair from combine_fn: return next_carry, y")


def scan_carry_structure(where: str, fn: str) -> BranchMismatch:
    return _mismatch(where, f"scan at {where}: combine_fn ({fn}) returns a carry structured "
                            f"differently from init.",
                     "return the carry in init's structure")


def scan_carry_change(where: str, fn: str, i: int, before: str,
                      after: str) -> BranchMismatch:
    return _mismatch(where, f"scan at {where}: combine_fn ({fn}) changes carry {i} from "
                            f"{before} to {after}.",
                     "return a carry of the same shape and dtype as init")


# -- what a branch or body may not do ---------------------------------------------------------
def print_in_branch(inside: str, where: str) -> ControlFlowCall:
    """``inside``: the branch or body (``the true branch of torch.cond (m.py:4)``)."""
    return _call(where, f"print() inside {inside} at {where}: a branch or loop body is traced "
                        f"once, so the print would run at export and never when the program "
                        f"runs.",
                 "remove the print from the branch (print outside the torch.cond / loop "
                 "call, or return the value and print it after running)")


def outside_check_in_branch(inside: str, cond: str, where: str) -> ControlFlowCall:
    """A check inside a branch about a data-dependent value from outside it."""
    return _call(where, f"a check inside {inside} about a data-dependent value from outside "
                        f"it (`{cond}`) at {where}: it would hold only where the branch runs.",
                 "move the check before the torch.cond / loop call")


def branch_output_type(what: str, at: str, got: Any, i: int) -> ControlFlowCall:
    """A branch or body (``what``, defined at ``at``) returned a non-tensor ``got``."""
    return _call(at, f"{what} ({at}) returned {type(got).__name__} {got!r} at output {i}; a "
                     f"branch or loop body must return tensors (or ints where they are "
                     f"carried).",
                 "return a tensor, e.g. torch.tensor(value) or x.new_full((), value)")


def branch_output_from_fake(what: str, at: str) -> ControlFlowCall:
    return _call(at, f"{what} ({at}) returned a value computed inside a custom op's fake "
                     f"implementation",
                 "return the custom op's outputs (tensors), not a value made inside its fake "
                 "implementation")


def branch_writes_in_place(op: str, what: str, at: str, target: str, name: str,
                           where: str) -> ControlFlowCall:
    """``op`` (at ``where``) inside a branch writes in place to ``target`` (module state, an
    input of the branch, a tensor from outside) named ``name``."""
    return _call(where, f"{op} inside {what} ({at}) writes in place to {target} ({name}) at "
                        f"{where}: a branch or loop body must not change its inputs or state "
                        f"(side effects).",
                 "compute a new tensor (e.g. x = x + 1 instead of x.add_(1)) and return it")


def operand_type(op: str, got: Any, i: int, where: str) -> ControlFlowCall:
    """Operand ``i`` of a control-flow call is not a tensor."""
    return _call(where, f"{op} got {type(got).__name__} {got!r} as operand {i} at {where}; "
                        f"operands must be tensors (possibly in lists, tuples or dicts).",
                 "pass it as a tensor, or let the function read it from its closure")
