"""Builders of the errors ``st.load`` raises: what the file (or source) holds that is
refused, where in it, and the fix.

Every refusal of ``st.load`` is a ``LoadError``.  ``where`` names the part of the file
(``node 'add'``, ``contract.inputs[0]``, ``m.st``); a budget's refusal names the budget and
the call that raises it (budgets bound what a small hostile file can cost; a trusted large
program may raise them).

A call of a loaded program is refused by one of two classes, by when the check runs:
``InputMismatchError`` before any op of the call ran (the input checks and what the loader
adds to them: the call's input sizes decide it), ``RuntimeAssertionError`` by a check
inside the graph while it runs (ops before it ran): a kernel sized by values read from
data, a loop's iterations, what a loop body returns.  A budget's refusal carries the
budget's name in ``err.details["budget"]`` either way.
"""

from __future__ import annotations

from safetrace.errors.base import InputMismatchError, LoadError, RuntimeAssertionError, Where


def _at(where: str | None, what: str) -> str:
    return f"{where}: {what}" if where else what


def bad_file(where: str | None, what: str, fix: str = "") -> LoadError:
    """A part of the file that is malformed, inconsistent or not what the format allows."""
    return LoadError(_at(where, what), fix=fix, where=Where(input=where))


def over_budget(where: str | None, what: str, budget: str, need: int | None = None
                ) -> LoadError:
    """The file asks for more than the budget ``budget`` allows (``need``: a value of the
    budget that would admit it, when known)."""
    value = f"{need}" if need is not None else "<a larger value>"
    return LoadError(_at(where, f"{what}, over the budget ({budget})"),
                     fix=f"if you trust the file, st.load(path, budgets={{{budget!r}: {value}}})",
                     where=Where(input=where), budget=budget)


def refused_call(where: str | None, what: str, fix: str = "") -> LoadError:
    """A call in a loaded graph that the allowlist refuses (operator, callable, arguments)."""
    if not fix:
        fix = ("re-export the program with a safetrace that supports it, or load it only if "
               "you trust the file's author")
    return LoadError(_at(where, what), fix=fix, where=Where(input=where))


def cuda_device(where: str | None, device: str) -> LoadError:
    """A loaded graph names a CUDA device the caller did not allow (``allow_cuda``)."""
    return LoadError(_at(where, f"names the device {device}: calling the program would start "
                                "CUDA (its runtime, memory on the GPU), which st.load allows "
                                "only when asked"),
                     fix="if the program was exported on a GPU and you trust the file, "
                         "st.load(path, allow_cuda=True)", where=Where(input=where))


def cuda_absent(device: str, count: int) -> RuntimeAssertionError:
    """A loaded program allowed to use CUDA (``allow_cuda=True``) names a CUDA device this
    process does not have (``cuda:127`` where it sees 2, or any where it sees none): refused
    before the call runs, rather than by torch's own error from inside the graph."""
    have = "no CUDA device" if count == 0 else \
        f"{count} CUDA device{'s' * (count != 1)} (cuda:0 to cuda:{count - 1})"
    return RuntimeAssertionError(
        f"the loaded program names the device {device[:40]}, but this process has {have}",
        fix="run the program where that device exists, or re-export it on the device it "
            "will run on and save it again")


def meta_device(where: str | None) -> LoadError:
    """A loaded graph's call names the meta device (``torch.arange(n, device=x.device)``
    traced on meta tensors): what it makes there has no data at a call on real tensors."""
    return LoadError(_at(where, "names the meta device: a tensor made there has no data "
                                "(a call on real tensors would fail where it is read, or "
                                "return it in place of the values the program computes)"),
                     fix="export on the device the program will run on: a model made on "
                         "meta, model.to_empty(device='cpu') with example inputs on the "
                         "CPU, then st.save(ep, path, weights=False) and "
                         "st.load(path, weights=...)", where=Where(input=where))


def unlisted_op(where: str | None, name: str) -> LoadError:
    """An ATen overload that safetrace's exporter never records (``load_ops.OPS``)."""
    return LoadError(_at(where, f"calls {name}, which safetrace's exporter does not record: "
                                "the file was not written by safetrace's st.save, or needs "
                                "a newer safetrace"),
                     fix="if a newer safetrace wrote it, load it with that version; a "
                         "program whose operator has a shape rule you registered "
                         "(st.register_shape_rule) loads once the rule is registered",
                     where=Where(input=where))


def bad_source(what: str, fix: str = "") -> LoadError:
    """What was given to ``st.load`` (a path, a buffer, a file object) cannot be read."""
    return LoadError(what, fix=fix)


def truncated(where: str | None, what: str) -> LoadError:
    """The file ends (or changed) before what its header declares."""
    return LoadError(_at(where, what), fix="the file is incomplete: save or copy it again "
                     "(and keep it unchanged while it is loaded)", where=Where(input=where))


def loop_budget(node: str, limit: int, nested: bool = False,
                kind: str = "while_loop") -> RuntimeAssertionError:
    """A loaded program's while_loop ran past its iteration budget (checked as it runs;
    ``nested``: counting the iterations of the loops inside its body; ``kind``: "map" or
    "scan" where the loops nested in such a body, over all its slices, ran past it)."""
    what = "iterations (counting those of the loops nested in its body)" if nested else \
        "iterations"
    ran = f"{kind} {node!r} of a loaded program ran {limit} {what}" + (
        " without its condition turning false" if kind == "while_loop" else "")
    return RuntimeAssertionError(
        f"{ran} (the loop budget max_loop_iterations={limit}); a file whose loop never "
        "ends would hang the call",
        fix=f"if the program legitimately loops longer, st.load(path, budgets="
            f"{{'max_loop_iterations': {2 * limit}}})",
        where=Where(input=f"node {node!r}"), budget="max_loop_iterations")


def unchecked_inputs(err: ArithmeticError) -> InputMismatchError:
    """A loaded program's input checks hit an arithmetic error (a file's ``s0 // (s1 -
    s1)``): the inputs are refused, not the error let through."""
    return InputMismatchError(
        f"the inputs cannot be checked against the loaded program's contract: {err}",
        fix="pass inputs within the program's declared space (see ep.range_constraints and "
            "ep.describe_contract()), or re-export the program")


def memory_at_call(node: str, target: str, need: int | float, limit: int,
                   sizes: dict) -> InputMismatchError:
    """A loaded program called with sizes at which its tensors would take more memory
    than the load's budget (or a number of bytes that is no finite number): refused
    before running."""
    shown = ", ".join(f"{k}={v}" for k, v in list(sizes.items())[:8])
    finite = _finite(need)
    return InputMismatchError(
        f"at these input sizes ({shown}) the loaded program would keep "
        f"{int(need) if finite else 'a number of'} bytes of tensors alive at node "
        f"{node!r} ({target}), over the budget of {limit} bytes (16 * max_alloc_numel)"
        + ("" if finite else f": its size expression evaluates to {need}"),
        fix=f"pass smaller inputs, or if you trust the file, st.load(path, budgets="
            f"{{'max_alloc_numel': {-(-int(need) // 16)}}})" if finite else
            "pass smaller inputs (no budget admits a size that is not a finite number)",
        budget="max_alloc_numel")


def _finite(need: int | float) -> bool:
    return isinstance(need, int) or need == need and abs(need) != float("inf")


def work_at_call(node: str, target: str, need: int | float, limit: int,
                 sizes: dict | None = None) -> InputMismatchError:
    """A loaded program called with inputs at which its kernels would touch more elements
    than the load's work budget (a reduction over a huge broadcast view, a matmul of
    views), or a number of elements that is no finite number: refused before running."""
    shown = ", ".join(f"{k}={v}" for k, v in list((sizes or {}).items())[:8])
    at = f"at these input sizes ({shown}) " if shown else "at this call "
    finite = _finite(need)
    return InputMismatchError(
        f"{at}the loaded program's kernels would touch "
        f"{int(need) if finite else 'a number of'} elements (the largest at "
        f"node {node!r}, {target}), over the work budget of {limit} (max_work): the call "
        "would run for a long time" + ("" if finite else f" (its work evaluates to {need})"),
        fix=f"pass smaller inputs, or if you trust the file, st.load(path, budgets="
            f"{{'max_work': {int(need)}}})" if finite else
            "pass smaller inputs (no budget admits work that is not a finite number)",
        budget="max_work")


def work_in_graph(node: str, target: str, need: int, limit: int) -> RuntimeAssertionError:
    """A loaded program's kernel whose sizes are read from data (or a loop's iterations
    together) would touch more elements than the load's work budget: refused as the
    program runs, before the kernel (or the next iteration) does."""
    return RuntimeAssertionError(
        f"at this call the loaded program's kernels would touch {need} elements (at node "
        f"{node!r}, {target}; sizes read from data as the program runs), over the work "
        f"budget of {limit} (max_work): the call would run for a long time",
        fix=f"pass inputs whose values ask for less, or if you trust the file, st.load(path, "
            f"budgets={{'max_work': {need}}})", budget="max_work")


def kernel_memory_at_call(node: str, target: str, need: int,
                          limit: int) -> RuntimeAssertionError:
    """A loaded program's kernel whose sizes depend on the call (read from data) would
    allocate more than the load's budget: refused before the kernel runs (the ops before
    it ran)."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node!r} ({target}) would allocate {need} "
        f"bytes (its sizes are read from data as the program runs), over the budget of "
        f"{limit} bytes (16 * max_alloc_numel)",
        fix=f"pass inputs whose values ask for less, or if you trust the file, st.load(path, "
            f"budgets={{'max_alloc_numel': {-(-need // 16)}}})", budget="max_alloc_numel")


def kernel_unbounded(node: str, target: str) -> RuntimeAssertionError:
    """A loaded program's kernel whose sizes depend on the call has no shape rule, and
    its meta kernel cannot tell its result either: its memory cannot be bounded."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node!r} ({target}) has sizes read from "
        "data as the program runs, and neither a safetrace shape rule nor its meta kernel "
        "can tell what it would allocate (it may need more memory than the budget): "
        "refused before it runs",
        fix="export the program so that this kernel's input sizes follow from the input "
            "sizes, or run it only if you trust the file's author with torch.export",
        budget="max_alloc_numel")


def loop_memory(node: str, need: int, limit: int) -> RuntimeAssertionError:
    """A loaded program's while_loop body returned tensors over the load's budget (a
    carried tensor that grows each iteration): refused before the next iteration."""
    return RuntimeAssertionError(
        f"at this call the loaded program's while_loop {node!r} carries {need} bytes of "
        f"tensors after an iteration (what its body returns grows as it runs), over the "
        f"budget of {limit} bytes (16 * max_alloc_numel)",
        fix=f"pass inputs for which the loop carries less, or if you trust the file, "
            f"st.load(path, budgets={{'max_alloc_numel': {-(-need // 16)}}})",
        where=Where(input=f"node {node!r}"), budget="max_alloc_numel")


def requirement_at_call(node: str, target: str, cond: str, why: str,
                        sizes: dict) -> InputMismatchError:
    """A loaded program called with sizes at which one of its kernels would raise (a
    broadcast of sizes that differ, a view of another element count): the file's contract
    admits sizes its graph cannot run, so the call is refused before any op runs."""
    shown = ", ".join(f"{k}={v}" for k, v in list(sizes.items())[:8])
    return InputMismatchError(
        f"at these input sizes ({shown}) the loaded program's node {node!r} ({target}) "
        f"would fail: it needs {cond} ({why[:200]}); the file's input contract admits sizes "
        "its graph cannot run",
        fix=f"pass inputs whose sizes satisfy {cond}, or re-export the program (st.export "
            "records such a condition in the contract)")


def requirement_in_graph(node: str, target: str, cond: str, why: str) -> str:
    """The message of a check a loaded program's graph makes before a kernel whose
    requirement only that point can tell (a branch's, a loop body's, a size read from
    data): the file admits what its graph cannot run, so the call is refused there."""
    cond = cond if len(cond) <= 300 else cond[:300] + "..."  # (a graph's string argument
    # stays under the loader's max_string when the program is saved again)
    return (f"the loaded program's node {node[:100]!r} ({target[:100]}) would fail here: it "
            f"needs {cond} ({why[:200]}), which these inputs or the values read from them "
            "do not give; the file admits what its graph cannot run.  Fix: pass inputs that "
            "satisfy that condition, or re-export the program (st.export checks such a "
            "condition)")


_READS = {"bincount": "max(x) + 1 counts", "one_hot": "numel(x) * (max(x) + 1) values",
          "repeats": "sum(repeats) elements", "repeat_self": "sum(repeats) slices",
          "nonzero": "one row per nonzero element", "masked_select": "one element per true "
          "mask element", "index": "one slice per true element of a bool index",
          "unique": "up to one value, inverse and count per element",
          "arange": "(end - start) / step values"}


def memory_from_values(node: str, kind: str, need: int, limit: int) -> RuntimeAssertionError:
    """A loaded program's kernel would allocate a size it reads from its operands' values
    (``bincount(x)``) over the load's budget: refused before the kernel runs."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node!r} would allocate {need} bytes, a "
        f"size its kernel reads from the values it is given ({_READS.get(kind, kind)}), "
        f"over the budget of {limit} bytes (16 * max_alloc_numel)",
        fix=f"pass inputs whose values ask for less, or if you trust the file, st.load(path, "
            f"budgets={{'max_alloc_numel': {-(-need // 16)}}})", budget="max_alloc_numel")


def view_outside(node: str, target: str, view: tuple, own: tuple) -> RuntimeAssertionError:
    """A loaded program's strided view (``as_strided``, whose offset is into the storage,
    not the tensor) would reach memory outside the tensor it views: the caller's memory
    around the tensor it passed (the rest of a batch it sliced), never given."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node!r} ({target}) would view storage "
        f"elements {view[0]}..{view[1]}, outside the tensor it is given (elements "
        f"{own[0]}..{own[1]}{', with gaps' if own[2] else ''}): a loaded graph reads and "
        "writes only the memory of the tensors it is given",
        fix="pass a tensor of its own memory (x.contiguous() or x.clone()), or, if you "
            "trust the file, run the program on such a copy of your data")


def recorded_dtype(node: str, target: str, got: str, recorded: str) -> RuntimeAssertionError:
    """A loaded program's node whose result the loader could not work out returned another
    dtype (or not a tensor) than the file records for it: what reads the program's
    metadata (``print(ep)``, ``ep.to_torch()``, ``run_decompositions``) would believe the
    file, so the call is refused before the value is used."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node[:100]!r} ({target[:100]}) returned "
        f"{got}, but the file records {recorded} there: the file was modified or written "
        "by another version of safetrace",
        fix="re-export the program and save it again (st.save(st.export(model, args, ...), "
            "path))")


def operand_refused(node: str, target: str, what: str) -> RuntimeAssertionError:
    """A loaded program's kernel is about to run on operands it trusts and these break
    (``ctc_loss``'s target classes): refused before it runs, where torch would read out
    of bounds or crash."""
    return RuntimeAssertionError(
        f"at this call the loaded program's node {node!r} ({target}) would run on {what}",
        fix="pass operands the operator is defined for (eager torch would read out of "
            "bounds, or crash, on these)")


__all__ = ["memory_at_call", "requirement_at_call", "memory_from_values", "work_at_call",
           "work_in_graph", "loop_memory", "kernel_memory_at_call",
           "kernel_unbounded", "bad_file", "over_budget", "refused_call", "cuda_device",
           "meta_device", "bad_source", "truncated",
           "loop_budget", "unchecked_inputs", "view_outside", "operand_refused",
           "recorded_dtype"]
