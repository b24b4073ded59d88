"""What ``ep.to_torch()`` and the tools built on it raise (``interop/``): each builder holds
the one wording of its message.  All are ``ConversionError`` (kind ``conversion``): the
program is sound and runs with ``ep.module()``; only its hand-over to torch.export's stack
failed, for the reason the message gives."""

from __future__ import annotations

from safetrace.errors.base import ConversionError

_RUN_OURS = "run the program with ep.module() (no conversion needed), or st.save / st.load it"


def unrepresentable_call(node: str, target: object, where: str) -> ConversionError:
    """A graph node calls a Python callable that torch.export graphs cannot hold (`target`:
    the callable, or its name)."""
    name = target if isinstance(target, str) else str(getattr(target, "__qualname__", target))
    if str(getattr(target, "__module__", "")).startswith("safetrace.serialize."):
        return ConversionError(  # (st.load's call-time budgets of sizes read from data)
            f"node {node} is a loaded program's call-time budget check ({name} of "
            f"{target.__module__}: the bytes or work of an op whose sizes are read from "  # type: ignore[attr-defined]
            f"data, checked before it runs), which torch.export graphs cannot hold{where}",
            fix="convert the program st.export gave, before st.save (`st.export(model, args, "
                "dynamic_shapes=...).to_torch()`), or run the loaded program with "
                "ep.module() (its budgets then hold)")
    return ConversionError(
        f"node {node} calls {name}, which torch.export graphs cannot hold (only operator "
        f"overloads and size arithmetic){where}",
        fix=f"wrap the computation in a custom operator (torch.library.custom_op) so the "
            f"graph calls an operator overload, or {_RUN_OURS}")


def not_a_subgraph(node: str, attr: str) -> ConversionError:
    """A ``get_attr`` node names something other than a control-flow subgraph."""
    return ConversionError(
        f"node {node} reads attribute {attr!r}, which is no control-flow subgraph of the "
        f"program", fix=_RUN_OURS)


def rank_differs(node: str, where: str, theirs: int, ours: int) -> ConversionError:
    """torch's meta kernel gives another rank than our shape rule (``verify=True``)."""
    return ConversionError(
        f"node {node}{where}: torch computes rank {theirs}, safetrace {ours}",
        fix=f"{_RUN_OURS}; and report the node (a shape rule disagrees with torch's kernel)")


def dim_differs(node: str, where: str, dim: int, ours: object,
                theirs: object) -> ConversionError:
    """torch's meta kernel gives another size than our shape rule (``verify=True``)."""
    return ConversionError(
        f"node {node}{where}: dim {dim} is {ours} in the safetrace program but torch's "
        f"shape propagation gives {theirs}; converting would change the program",
        fix=f"{_RUN_OURS}; and report the node (a shape rule disagrees with torch's kernel)")


def torch_assumed(text: str) -> ConversionError:
    """``to_torch(strict=True)``: torch's kernels assumed something of the input sizes."""
    return ConversionError(
        f"torch's shape propagation assumed {text} on the input sizes inside op fake "
        f"kernels, which the safetrace program does not need.",
        fix="ep.to_torch() without strict=True converts anyway (the converted program's "
            "checks are safetrace's; torch's assumptions are reported)")


def kernel_failed(node: str, op: str, where: str, error: str, kind: str) -> ConversionError:
    """torch's fake kernel raised on a node; `kind`: "control-flow", "custom" or "aten"."""
    cause = (f"cannot convert node {node} ({op}){where}: torch's FakeTensor propagation "
             f"failed: {error}")
    if kind == "control-flow":
        return ConversionError(
            f"{cause}\ntorch's {op} cannot take this program's use of it (safetrace can: a "
            f"while_loop whose carried sizes change, branches whose outputs differ in ways "
            f"torch's cond refuses).",
            fix="keep each carried value's and branch output's shape fixed (pad it), or "
                "deploy this program with st.save/st.load")
    if kind == "custom":
        return ConversionError(
            cause, fix=f"{op} needs a fake implementation registered with torch "
                       f"(torch.library.register_fake({op!r})); a safetrace-only fake "
                       f"(st.register_fake) or shape rule is not visible to torch")
    return ConversionError(cause, fix=f"{_RUN_OURS}; and report the node")


def split_cond_failed(node: str, where: str, error: str, splits: str) -> ConversionError:
    """torch's cond refused a cond the export made for a size split (`splits`: the split
    lines ``print(ep)`` shows), not one the user wrote."""
    return ConversionError(
        f"cannot convert node {node} (cond){where}: torch's FakeTensor propagation failed: "
        f"{error}\nThis torch.cond is not in your code: it is safetrace's size split of "
        f"your program ({splits}; `print(ep)` shows it), one graph per side, each traced "
        f"for its own sizes. torch's cond traces both sides at the sizes of every side and "
        f"merges their outputs, which these sides do not allow.",
        fix="declare the split Dim's range to one side of the split (e.g. Dim('batch', "
            "min=2) for a split on `batch == 1`), so the export traces one graph and "
            "to_torch() converts it; or " + _RUN_OURS)


def preserved_crossing(fqn: str, name: str, where: str, how: str) -> ConversionError:
    """A value crosses a preserved module call's boundary other than through its
    signature."""
    return ConversionError(
        f"the preserved module {fqn!r}: {name}{where} {how}; its call signature would not "
        f"be its whole interface.",
        fix=f"pass the value to the module as an argument (or return it), or leave "
            f"{fqn.split('@')[0]!r} out of preserve_module_call_signature")


def preserved_size(user: str, where: str, size: object, fqn: str) -> ConversionError:
    """A size used inside a preserved module comes from none of its inputs."""
    return ConversionError(
        f"{user}{where} uses the size {size}, which no input of {fqn!r} carries; the "
        f"preserved call signature cannot supply it.",
        fix="pass a tensor of that size to the module, or leave it out of "
            "preserve_module_call_signature")


def derived_not_increasing(where: str, size: object) -> ConversionError:
    """A derived input dim ``a*d + b`` with ``a <= 0``: torch's symbols cannot carry it."""
    return ConversionError(
        f"{where} = {size}: only increasing derived dims (a*d + b, a > 0) convert",
        fix="declare the dim as its own Dim and relate the two with st.check(...) in the "
            "model, or " + _RUN_OURS)


def unread_symbol(name: str) -> ConversionError:
    """A size symbol of the contract is read from no input dim."""
    return ConversionError(f"symbol {name} is read from no input dim",
                           fix=f"{_RUN_OURS}; and report the program")


def no_torch_form(expr: object) -> ConversionError:
    """A size expression with an operation torch's symbols do not have."""
    return ConversionError(f"the size expression {expr} has no form in torch's symbols",
                           fix=f"{_RUN_OURS}; and report the program")


def conversion_crashed(error: str, inside: str) -> ConversionError:
    """An exception that is no ConversionError escaped the conversion (``error``: its class
    and text; ``inside``: the innermost file and line it was raised at): named, in place of
    the raw exception."""
    return ConversionError(f"ep.to_torch() failed inside the conversion ({error}, at "
                           f"{inside})", fix=f"{_RUN_OURS}; and report the program")


def decomposition_narrowed(extra: str) -> ConversionError:
    """``ep.run_decompositions()``: the retraced program would check more of its inputs
    than the program does (a decomposition needs something of the sizes)."""
    return ConversionError(
        f"ep.run_decompositions(): the decomposed program would require {extra} of its "
        f"inputs, which the program does not; decomposing must keep the input contract",
        fix=f"pass a decomp_table without the operator whose decomposition needs it "
            f"(ep.run_decompositions({{...}})), or {_RUN_OURS}")


def aliased_write(node: str, op: str, where: str, tool: str,
                  cloned: str | None = None) -> ConversionError:
    """A deploy tool retracing the converted program would functionalize an in-place write
    that reads the tensor it writes (an operand aliasing it): torch's functional form reads
    that operand before the write, eager while writing, and their results differ."""
    return ConversionError(
        f"node {node} ({op}){where} writes a tensor in place while reading it through "
        f"another operand (a view of the written tensor): eager reads that operand while "
        f"writing, but {tool} retraces the program into functional operators, which read it "
        f"before the write, so the deployed program would compute another result "
        f"(ep.module() and ep.to_torch().module() compute eager's)",
        fix=(f"pass a copy of the operand: `{cloned}`" if cloned else
             "pass a copy of the operand (`v.index_add_(0, idx, v[:1].clone().expand(...))`)")
        + ", which gives the functional result in eager too, or write into a new tensor "
          "(`v = v.index_add(0, idx, v[:1].expand(...))`); or " + _RUN_OURS)


def retrace_specializes(node: str, op: str, where: str, tool: str) -> ConversionError:
    """A deploy tool's retrace would decompose `op` by the example's sizes, dropping the
    guard (``tensor_split`` of a symbolic size by its remainder at the example)."""
    return ConversionError(
        f"node {node} ({op}){where} splits a dynamic size into sections: {tool} retraces "
        f"the program through torch's decomposition of it, which picks the piece sizes by "
        f"the example's remainder and drops that guard, so the deployed program would "
        f"cut other sizes differently (ep.module() and ep.to_torch().module() compute "
        f"eager's)",
        fix="split by explicit sizes, as tensor_split does (for 2 sections: `k = (n + 1) "
            "// 2; a, b = x.split([k, n - k], dim)` with n = x.shape[dim]); or " + _RUN_OURS)


def cond_not_retraceable(node: str, where: str, splits: str, tool: str,
                         dim_fix: str) -> ConversionError:
    """A deploy tool would retrace a cond whose value ``ep.to_torch()`` made from
    safetrace's shapes (torch's cond cannot run its branches at each other's sizes): it
    would stop inside torch's cond with torch's internal error."""
    made = f" (safetrace's {splits})" if splits else ""
    return ConversionError(
        f"node {node} (cond){where}{made}: torch's cond cannot run its branches at each "
        f"other's sizes and merge their outputs (a size that is, or may be, 0 on one "
        f"side), so ep.to_torch() made its value from safetrace's shapes; {tool} retraces "
        f"the program through torch's cond, which would stop there (ep.module() and "
        f"ep.to_torch().module() compute eager's)",
        fix=f"declare the split Dim's range to the side you deploy{dim_fix}, so the export "
            f"traces one graph; or " + _RUN_OURS)


def folded_at_zero(node: str, where: str, dim: str, tool: str) -> ConversionError:
    """A deploy tool's retrace would replace a size node by torch's symbolic value of it,
    which torch simplified assuming sizes are positive: another value where `dim` is 0."""
    return ConversionError(
        f"node {node}{where} computes a size (or a condition on sizes) that torch's "
        f"symbols, which assume every size is at least 1, simplify into another value at "
        f"{dim} == 0 (`max(n, 1)` into `n`, `n == 0` into False); {tool} retraces the program and would keep torch's value, so the deployed "
        f"program would answer {dim} == 0 wrongly (ep.module() and ep.to_torch().module() "
        f"compute eager's)",
        fix=f"declare the Dim with min=1 where 0 never occurs (st.Dim(..., min=1) for {dim}), "
            f"or " + _RUN_OURS)


def lowering_specialized(tool: str, where: str, size: int, fact: str, lo: int, hi: int,
                         dim: str, split: bool) -> ConversionError:
    """A deploy tool's lowering ran the program at one stand-in size and kept a decision on
    a dynamic size as a fact (`fact`, torch's text) that is false at `where` == `size`, a
    size the program accepts: the artifact is planned for the sizes where it holds."""
    cause = ("its passes run both sides of a size split at one stand-in size, so each "
             "side's decisions are taken at a size that side never sees" if split else
             "its passes run the program at one stand-in size")
    return ConversionError(
        f"{tool}: the lowering decided `{fact}` on the sizes it ran ({cause}), which is "
        f"false at {where} == {size}, a size the program accepts; the artifact would be "
        f"planned and specialized for {lo} <= {where} <= {hi} only, and refuse or "
        f"miscompute other sizes (ep.module() and ep.to_torch().module() compute eager's)",
        fix=f"declare the Dim's range where the lowering holds (st.Dim({dim!r}, min={lo}, "
            f"max={hi})), or export one program per side of a size split; or " + _RUN_OURS)


def zero_sizes_not_convertible(node: str, where: str, dim: str,
                               cause: Exception) -> ConversionError:
    """``ep.to_torch()``: a size node torch's positive symbols fold into another value at
    `dim` == 0, and the conversion with `dim`'s symbol non-positive failed (`cause`)."""
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return ConversionError(
        f"node {node}{where} computes a size (or a condition on sizes) that torch's "
        f"symbols, which assume every size is at least 1, simplify into another value at "
        f"{dim} == 0 (`max(n, 1)` into `n`); torch's tools that retrace the converted "
        f"program (run_decompositions, AOTInductor, ExecuTorch, torch.onnx) would keep "
        f"torch's value and answer {dim} == 0 wrongly, and the conversion with {dim} "
        f"allowed to be 0 in torch's symbols failed ({first}; ep.module() computes eager's)",
        fix=f"declare the Dim with min=1 where 0 never occurs (st.Dim(..., min=1) for {dim}), "
            f"or " + _RUN_OURS)


def unbounded_merged_size(where: str, tool: str) -> ConversionError:
    """ExecuTorch's memory plan found a value without an upper bound: the output of a
    torch.cond whose branches give it sizes torch's cond cannot show equal (a size split's
    ``x.reshape(-1)``: ``b * 1`` on the point side, ``b * seq`` on the other), which torch
    sizes with a fresh data-dependent symbol of no bound."""
    return ConversionError(
        f"{tool}: the torch.cond{where} returns a value whose size differs between its "
        f"branches in torch's view (the same size under the branch's condition), so torch "
        f"gives it a new size of no upper bound, and ExecuTorch plans memory for the largest "
        f"size of every value (ep.module() computes it)",
        fix="write both branches' sizes alike (x.reshape(x.shape[0] * x.shape[1]) in both), "
            "or export one program per side of the split (the dim static, or Dim(min=2) "
            "with the other side as its own program)")


def retrace_pins(sizes: str, tool: str) -> ConversionError:
    """torch's retrace of a converted program (its meta kernels run at the export example's
    sizes) specialized an input size the program declares dynamic, and dropped that guard."""
    return ConversionError(
        f"{tool} retraces ep.to_torch()'s program through torch, whose meta kernels ran at "
        f"the export example's sizes and specialized {sizes} (a guard on a size of 1 or 0 "
        f"at the example, which torch's retrace drops): the result would compute other "
        f"sizes wrongly (ep.module() and ep.to_torch().module() compute eager's)",
        fix="export with an example whose size on that Dim is 2 or more (e.g. "
            "torch.randn(2, ...) for a Dim(min=1)), so torch's retrace keeps it symbolic; "
            "or " + _RUN_OURS)


def preserved_size_not_readable(fqn: str, size: str) -> ConversionError:
    """``run_decompositions`` of a converted program whose preserved call `fqn` returns a
    size (`size`) that torch's retrace read from the program's input, and that the call's
    input dims do not give (so it cannot be read inside the call again)."""
    return ConversionError(
        f"run_decompositions: the preserved module {fqn!r} returns the size {size}, which "
        f"torch's retrace reads from the program's input, outside that module; the dims of "
        f"{fqn!r}'s inputs do not give it (sums, products, floor divisions) to read it "
        f"inside, so the decomposed program's module call signature could not name it "
        f"(torch.export.unflatten would stop at 'Could not find output node')",
        fix=f"return the size from a tensor input of {fqn!r} (x.shape[0] of its own "
            f"input), or leave {fqn!r} out of preserve_module_call_signature; or " + _RUN_OURS)


def kernel_pinned(node: str, op: str, where: str, dims: str) -> ConversionError:
    """torch's fake kernel for `op` made a declared Dim a constant (or tied it to another
    size) and the node's value cannot be taken from ours instead."""
    return ConversionError(
        f"cannot convert node {node} ({op}){where}: torch's fake kernel for it specializes "
        f"{dims}, and the converted program would lose that dynamic dim",
        fix=f"{_RUN_OURS}; and report the node")


def dims_lost(dims: str) -> ConversionError:
    """The converted program's range_constraints lack a dynamic Dim of ours: torch's
    ShapeEnv made it a constant (or another size) during the conversion."""
    return ConversionError(
        f"ep.to_torch(): torch's shape propagation specialized {dims} during the "
        f"conversion; the converted program would accept that one size only",
        fix=f"{_RUN_OURS}; and report the program")
