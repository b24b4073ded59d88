"""Golden cases of the builders of ``safetrace/errors/control_flow.py``, ``tracing.py`` and
``dynamic_shapes.py`` (merged into ``test_messages.CASES`` / ``GOLDEN``): the arguments a
raise site passes, and the text the user reads (less the docs link every message ends with).
"""

from __future__ import annotations

import torch

import safetrace as st
from safetrace import errors as E

W = "m.py:3 `torch.cond(p, f, g, (x,))`"
L = "m.py:3 `while_loop(c, b, (x, i))`"
PICTURE = "  inputs: (Tensor[3, 4], Tensor[3])\n  spec:   ({0: Dim('b')},)"

CASES = {
    # -- control flow
    "cond_not_callable": lambda: E.cond_not_callable(W, "int, function"),
    "operands_not_sequence": lambda: E.operands_not_sequence(
        "torch.cond", W, "operands", "Tensor", "torch.cond(pred, true_fn, false_fn, (x,))"),
    "cond_predicate": lambda: E.cond_predicate(W, "f32[3]", tensor=True),
    "cond_predicate_type": lambda: E.cond_predicate(W, "str", tensor=False),
    "branch_structures": lambda: E.branch_structures(W, "m.py:5", "[f32[s0]]", "m.py:7",
                                                     "(f32[s0], f32[s0])"),
    "branch_output": lambda: E.branch_output(W, 0, "dtype", ("true branch", "m.py:5", "f32[s0]"),
                                             ("false branch", "m.py:7", "i64[s0]")),
    "body_structure": lambda: E.body_structure(L, "m.py:6", "(f32[4],)", "(f32[4], 0)"),
    "carried_int": lambda: E.carried_int(L, "m.py:6", "f32[]", 1),
    "carried_change": lambda: E.carried_change(L, "m.py:6", 0, "f32[4]", "f32[4, 1]"),
    "carried_unsettled": lambda: E.carried_unsettled(L, 3),
    "loop_condition": lambda: E.loop_condition(L, "m.py:5", "(f32[4],)"),
    "nothing_to_map": lambda: E.nothing_to_map("m.py:3 `map(f, [])`"),
    "stacked_size_from_data": lambda: E.stacked_size_from_data(
        "map", "map at m.py:3 `map(f, xs)`: output 0 of f", "m.py:8", "i64[u0]"),
    "stacked_size_from_data_scan": lambda: E.stacked_size_from_data(
        "scan", "scan at m.py:3: output y 0 of combine_fn", "m.py:8", "i64[u0]"),
    "xs_rank": lambda: E.xs_rank("scan", "m.py:3 `scan(f, c, xs)`", 0, "f32[]"),
    "xs_lengths": lambda: E.xs_lengths("map", "m.py:3 `map(f, (a, b))`", 0, "f32[3, 2]",
                                       "f32[4, 2]"),
    "xs_empty": lambda: E.xs_empty("map", "m.py:3 `map(f, xs)`", 0),
    "scan_without_init": lambda: E.scan_without_init("m.py:3 `scan(f, (), xs)`"),
    "scan_combine_return": lambda: E.scan_combine_return("m.py:3 `scan(f, c, xs)`", "m.py:1"),
    "scan_carry_structure": lambda: E.scan_carry_structure("m.py:3 `scan(f, c, xs)`", "m.py:1"),
    "scan_carry_change": lambda: E.scan_carry_change("m.py:3 `scan(f, c, xs)`", "m.py:1", 0,
                                                     "f32[4]", "f64[4]"),
    "print_in_branch": lambda: E.print_in_branch("the true branch of torch.cond (m.py:5)",
                                                 "m.py:6 `print(x)`"),
    "outside_check_in_branch": lambda: E.outside_check_in_branch(
        "the true branch of torch.cond (m.py:5)", "u0 >= 0", "m.py:6 `torch._check(n >= 0)`"),
    "branch_output_type": lambda: E.branch_output_type("the true branch of torch.cond",
                                                       "m.py:5", 3, 0),
    "branch_output_from_fake": lambda: E.branch_output_from_fake(
        "the true branch of torch.cond", "m.py:5"),
    "branch_writes_in_place": lambda: E.branch_writes_in_place(
        "aten.add_", "the body_fn of while_loop", "m.py:6", "module state", "count",
        "m.py:7 `self.count.add_(1)`"),
    "operand_type": lambda: E.operand_type("torch.cond", "a", 1, W),
    # -- tracing
    "data_dependent_shape": lambda: E.data_dependent_shape(
        "aten.frob", "the output size is the number of distinct values, which export never reads",
        "pass size= explicitly"),
    "one_hot_num_classes": lambda: E.one_hot_num_classes(),
    "mask_count": lambda: E.mask_count("aten.index.Tensor", "the result's dim 0"),
    "data_dependent_count": lambda: E.data_dependent_count("unbind", "min(u9, 100)"),
    "tensor_as_python_int": lambda: E.tensor_as_python_int(
        "m.py:3 `for i in range(self.count):`"),
    "size_as_python_value": lambda: E.size_as_python_value(
        "Object of type TorchSymInt is not JSON serializable",
        "m.py:3 `meta = json.dumps(list(x.shape))`"),
    "lstsq_residuals": lambda: E.lstsq_residuals("aten.linalg_lstsq", "gelsd"),
    "outside_export": lambda: E.outside_export("st.new_dynamic_size()"),
    "float_read": lambda: E.float_read(".item()", "f32[]", "m.py:4 `v = x.sum().item()`"),
    "float_read_list": lambda: E.float_read(".tolist()", "f32[3]", "m.py:4 `v = x.tolist()`"),
    "complex_item": lambda: E.complex_item("torch.complex64"),
    "untraceable_call": lambda: E.untraceable_call("torch.frob(Tensor f32[3], k=2)", "frob",
                                                   False, "m.py:2 `torch.frob(x, k=2)`"),
    "untraceable_call_overload": lambda: E.untraceable_call(
        "torch.add(Tensor f32[3], 'a')", "add", True, "m.py:2 `torch.add(x, 'a')`"),
    "out_argument": lambda: E.out_argument(
        "torch.mul(Tensor f32[3], 2, out=y)", "y.copy_(torch.mul(x, 2))",
        "y = torch.mul(x, 2)", "m.py:2 `torch.mul(x, 2, out=y)`"),
    "out_argument_at": lambda: E.out_argument(
        "torch.mul(Tensor f32[3], 2, out=Tensor f32[3])", None, None, "m.py:2"),
    "to_argument": lambda: E.to_argument(object, "m.py:2 `x.to(object)`"),
    "to_dtype": lambda: E.to_dtype("float", "m.py:2 `x.to(dtype='float')`"),
    "too_many_indices": lambda: E.too_many_indices(2, 3),
    "bool_index": lambda: E.bool_index(),
    "slice_step": lambda: E.slice_step(0.5),
    "index_type": lambda: E.index_type("a"),
    "generator_argument": lambda: E.generator_argument("m.py:2 `torch.rand(3, generator=g)`"),
    "autocast_active": lambda: E.autocast_active("m.py:3 `y = x @ w`"),
    "constant_written_through_alias":
        lambda: E.constant_written_through_alias("m.py:3 `c.view(()).add_(2)`"),
    "data_assignment": lambda: E.data_assignment("m.py:4 `self.w.data = w2`"),
    "input_reshaped_in_place": lambda: E.input_reshaped_in_place("t_", "x", "m.py:2 `x.t_()`"),
    "state_reshaped_in_place": lambda: E.state_reshaped_in_place(
        "unsqueeze_", "b", "m.py:3 `self.b.unsqueeze_(0)`"),
    "state_reshaped_in_place_constant": lambda: E.state_reshaped_in_place(
        "t_", None, "m.py:3 `c.t_()`"),
    "state_reassigned_changed": lambda: E.state_reassigned_changed(
        "cache", "float32[s0 + 1, 2]", "float32[0, 2]"),
    "python_state_read": lambda: E.python_state_read([("calls", "0", 1)], 0),
    "python_state_read_tensor": lambda: E.python_state_read(
        [("c", "<tensor float32, 1 dims>", "<tensor float32, 1 dims>")], torch.zeros(2)),
    "python_state_unsettled": lambda: E.python_state_unsettled(
        [("log", "'' -> '.'", ".."), ("global:m.MODE", "'a' -> 'b'", "c")], 5),
    "constant_read_then_written": lambda: E.constant_read_then_written(
        "step", "m.py:5 `if self.step.item() > 2:`"),
    "state_written_through_alias": lambda: E.state_written_through_alias(
        "whole", "first", "m.py:5 `self.whole.add_(x)`"),
    "layout_of_view": lambda: E.layout_of_view("x.is_contiguous()",
                                               "m.py:3 `if x.t().is_contiguous():`"),
    "write_reads_own_memory": lambda: E.write_reads_own_memory(
        "aten.add_.Tensor", "m.py:4 `v.add_(v[0])`"),
    "write_through_reshape": lambda: E.write_through_reshape(
        "aten.mul_.Tensor", "m.py:5 `v.reshape(-1).mul_(2)`"),
    "view_of_vmap_output": lambda: E.view_of_vmap_output("m.py:4 `v.movedim(0, -1).view(-1)`"),
    "strides_of_loose": lambda: E.strides_of_loose(
        "x.stride()", "m.py:3 `s = x.t().contiguous().stride(1)`"),
    "view_of_strided": lambda: E.view_of_strided(
        "view size is not compatible with input tensor's size and stride",
        "m.py:3 `return x.t().view(-1)`"),
    "view_dtype_of_strided": lambda: E.view_dtype_of_strided(
        "self.stride(-1) must be 1 to view Float as Short (different element sizes), but "
        "got 6", "m.py:3 `return x.t().view(torch.int16)`"),
    "kernel_needs_data": lambda: E.kernel_needs_data(
        "aten.frob.default", "Tensor.item() cannot be called on meta tensors"),
    "kernel_rejects": lambda: E.kernel_rejects("aten.frob.default",
                                               "frob(): expected a 2-D tensor"),
    "internal_error": lambda: E.internal_error("symbol s3 has no source in the graph"),
    "internal_exception": lambda: E.internal_exception(
        "TypeError: '>=' not supported between instances of 'TensorMeta' and 'int'",
        "rules/data_dependent.py:178", "m.py:9 `torch.ops.aten.nonzero_static(x, size=n)`"),
    "allow_ops_entry": lambda: E.allow_ops_entry(
        "allow_ops entries are 'namespace::op' or 'namespace' strings, got 'my lib'"),
    "no_inputs_drawn": lambda: E.no_inputs_drawn(1000),
    # -- dynamic_shapes
    "spec_keys": lambda: E.spec_keys(["z"], ["x", "y"], ""),
    "spec_count": lambda: E.spec_count(1, ["x", "y"], PICTURE),
    "spec_form": lambda: E.spec_form("str"),
    "spec_given_twice": lambda: E.spec_given_twice("xs[0]", "xs"),
    "spec_var_positional": lambda: E.spec_var_positional("xs", 2, 1),
    "spec_var_positional_one": lambda: E.spec_var_positional("xs", 1, "Dim"),
    "spec_var_keyword": lambda: E.spec_var_keyword("kw", ["mask"], ["mask"]),
    "spec_on_constant": lambda: E.spec_on_constant("dynamic_shapes['k']", "k", 3, {0: "b"}),
    "spec_shape": lambda: E.spec_shape("dynamic_shapes['xs']", "xs", "2 entries",
                                       "  inputs: [Tensor[3], Tensor[3]]\n  spec:   [None]"),
    "spec_dim_out_of_range": lambda: E.spec_dim_out_of_range("dynamic_shapes['x']", 2, [3, 4]),
    "spec_dim_out_of_range_scalar": lambda: E.spec_dim_out_of_range("dynamic_shapes['x']", 0,
                                                                    []),
    "spec_rank": lambda: E.spec_rank("dynamic_shapes['x']", 1, [3, 4],
                                     "(Dim.STATIC, Dim.STATIC)"),
    "spec_tensor_form": lambda: E.spec_tensor_form("dynamic_shapes['x']", "batch"),
    "spec_signature": lambda: E.spec_signature("(x, y)", "missing a required argument: 'y'"),
    "collection_entry": lambda: E.collection_entry([3, 4], "x: [3, 4]", "x", (2, None)),
    "additional_structure": lambda: E.additional_structure(1, "TreeSpec(tuple, 1)",
                                                           "TreeSpec(tuple, 2)"),
}

GOLDEN = {
    'cond_not_callable': ('ControlFlowCall',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: true_fn and false_fn must be '
        'callables, got int, function\n'
        'Fix: torch.cond(pred, true_fn, false_fn, (x,)) with two functions of the '
        'operands (a def or a lambda each)'),
    'operands_not_sequence': ('ControlFlowCall',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: operands must be a tuple or '
        'list, got Tensor\n'
        'Fix: torch.cond(pred, true_fn, false_fn, (x,))'),
    'cond_predicate': ('ControlFlowCall',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: the predicate must be a bool '
        'tensor with one element, got f32[3]\n'
        'Fix: reduce it first, e.g. (x.sum() > 0) or mask.any()'),
    'cond_predicate_type': ('ControlFlowCall',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: the predicate must be a bool, '
        'a symbolic bool (a condition on sizes) or a one-element bool tensor, got str\n'
        'Fix: pass a condition such as (x.sum() > 0), x.shape[0] > 4 or a Python bool'),
    'branch_structures': ('BranchMismatch',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: the branches return different '
        'structures:\n'
        '  true branch  (m.py:5): [f32[s0]]\n'
        '  false branch (m.py:7): (f32[s0], f32[s0])\n'
        'Fix: return the same containers with the same number of tensors from both'),
    'branch_output': ('BranchMismatch',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: output 0 differs in dtype '
        'between the branches:\n'
        '  true branch (m.py:5): f32[s0]\n'
        '  false branch (m.py:7): i64[s0]\n'
        'Fix: make both branches return the same dtype and number of dims (e.g. '
        '.to(dtype), .reshape(...)); sizes may differ'),
    'body_structure': ('BranchMismatch',
        'while_loop at m.py:3 `while_loop(c, b, (x, i))`: body_fn (m.py:6) returns '
        '(f32[4],), but the carried values are (f32[4], 0).\n'
        'Fix: return one value per carried input, in the same structure'),
    'carried_int': ('BranchMismatch',
        'while_loop at m.py:3 `while_loop(c, b, (x, i))`: body_fn (m.py:6) returns f32[] '
        'for carried int 1.\n'
        'Fix: return an int for it (e.g. i + 1)'),
    'carried_change': ('BranchMismatch',
        'while_loop at m.py:3 `while_loop(c, b, (x, i))`: body_fn (m.py:6) changes '
        'carried value 0 from f32[4] to f32[4, 1].\n'
        "Fix: keep each carried value's dtype and number of dims (sizes may change)"),
    'carried_unsettled': ('BranchMismatch',
        'while_loop at m.py:3 `while_loop(c, b, (x, i))`: the carried sizes do not '
        'settle: they still changed after tracing the loop 3 times\n'
        "Fix: keep each carried tensor's size fixed across iterations (pad it to a fixed "
        'maximum size), or carry the changing size as an int'),
    'loop_condition': ('BranchMismatch',
        'while_loop at m.py:3 `while_loop(c, b, (x, i))`: cond_fn (m.py:5) must return '
        'one bool tensor with one element, got (f32[4],).\n'
        'Fix: return a comparison such as (i < n) or (~done).all()'),
    'nothing_to_map': ('ControlFlowCall',
        'map at m.py:3 `map(f, [])`: xs has no tensors to map over\n'
        'Fix: map(f, xs) with xs a tensor (or a list, tuple or dict of tensors) whose '
        'dim 0 is the one to map over'),
    'stacked_size_from_data': ('BranchMismatch',
        'map at m.py:3 `map(f, xs)`: output 0 of f (m.py:8) has a size computed from '
        "data (i64[u0]); map stacks its results, so every slice's result must have the "
        'same size.\n'
        'Fix: pad the result to a fixed size'),
    'stacked_size_from_data_scan': ('BranchMismatch',
        'scan at m.py:3: output y 0 of combine_fn (m.py:8) has a size computed from data '
        '(i64[u0]); scan stacks them.\n'
        'Fix: pad the result to a fixed size'),
    'xs_rank': ('BranchMismatch',
        'scan at m.py:3 `scan(f, c, xs)`: every xs tensor needs dim 0, got f32[]\n'
        'Fix: pass xs tensors that have dim 0 (e.g. x.unsqueeze(0))'),
    'xs_lengths': ('BranchMismatch',
        'map at m.py:3 `map(f, (a, b))`: the xs tensors differ in length along dim 0: '
        'f32[3, 2] vs f32[4, 2]\n'
        'Fix: pass xs tensors of the same length along dim 0'),
    'xs_empty': ('BranchMismatch',
        "map at m.py:3 `map(f, xs)`: xs has length 0 along dim 0; torch's map needs at "
        'least one element.\n'
        'Fix: handle empty inputs outside the map call'),
    'scan_without_init': ('ControlFlowCall',
        'scan at m.py:3 `scan(f, (), xs)`: init needs at least one tensor\n'
        'Fix: scan(combine_fn, init, xs) with init a tensor (or a container of tensors): '
        'the first carry'),
    'scan_combine_return': ('ControlFlowCall',
        'scan at m.py:3 `scan(f, c, xs)`: combine_fn (m.py:1) must return (next_carry, '
        'y)\n'
        'Fix: return a pair from combine_fn: return next_carry, y'),
    'scan_carry_structure': ('BranchMismatch',
        'scan at m.py:3 `scan(f, c, xs)`: combine_fn (m.py:1) returns a carry structured '
        'differently from init.\n'
        "Fix: return the carry in init's structure"),
    'scan_carry_change': ('BranchMismatch',
        'scan at m.py:3 `scan(f, c, xs)`: combine_fn (m.py:1) changes carry 0 from '
        'f32[4] to f64[4].\n'
        'Fix: return a carry of the same shape and dtype as init'),
    'print_in_branch': ('ControlFlowCall',
        'print() inside the true branch of torch.cond (m.py:5) at m.py:6 `print(x)`: a '
        'branch or loop body is traced once, so the print would run at export and never '
        'when the program runs.\n'
        'Fix: remove the print from the branch (print outside the torch.cond / loop '
        'call, or return the value and print it after running)'),
    'outside_check_in_branch': ('ControlFlowCall',
        'a check inside the true branch of torch.cond (m.py:5) about a data-dependent '
        'value from outside it (`u0 >= 0`) at m.py:6 `torch._check(n >= 0)`: it would '
        'hold only where the branch runs.\n'
        'Fix: move the check before the torch.cond / loop call'),
    'branch_output_type': ('ControlFlowCall',
        'the true branch of torch.cond (m.py:5) returned int 3 at output 0; a branch or '
        'loop body must return tensors (or ints where they are carried).\n'
        'Fix: return a tensor, e.g. torch.tensor(value) or x.new_full((), value)'),
    'branch_output_from_fake': ('ControlFlowCall',
        'the true branch of torch.cond (m.py:5) returned a value computed inside a '
        "custom op's fake implementation\n"
        "Fix: return the custom op's outputs (tensors), not a value made inside its fake "
        'implementation'),
    'branch_writes_in_place': ('ControlFlowCall',
        'aten.add_ inside the body_fn of while_loop (m.py:6) writes in place to module '
        'state (count) at m.py:7 `self.count.add_(1)`: a branch or loop body must not '
        'change its inputs or state (side effects).\n'
        'Fix: compute a new tensor (e.g. x = x + 1 instead of x.add_(1)) and return it'),
    'operand_type': ('ControlFlowCall',
        "torch.cond got str 'a' as operand 1 at m.py:3 `torch.cond(p, f, g, (x,))`; "
        'operands must be tensors (possibly in lists, tuples or dicts).\n'
        'Fix: pass it as a tensor, or let the function read it from its closure'),
    'data_dependent_shape': ('DataDependentShape',
        'aten.frob: the output size is the number of distinct values, which export never '
        'reads.\n'
        'Fix: pass size= explicitly'),
    'one_hot_num_classes': ('DataDependentShape',
        'aten.one_hot: num_classes=-1 means max(tensor) + 1, which depends on the '
        "tensor's data (export never reads it).\n"
        'Fix: pass num_classes explicitly, e.g. F.one_hot(x, num_classes=10)'),
    'mask_count': ('DataDependentShape',
        "aten.index.Tensor: the result's dim 0 depends on how many elements of a boolean "
        'mask are True, which export never reads.\n'
        'Fix: use torch.where(mask, ...) or masked_fill for a fixed-shape result, or '
        'call mask.nonzero() and check(...) its length.'),
    'data_dependent_count': ('DataDependentShape',
        'unbind: it returns a list of one tensor per index of a dim of size `min(u9, 100)`, '
        'which depends on tensor data: the Python loop over it (`for m in masks:`, '
        '`zip(masks, boxes)`, `list(t)`) would run a number of times only the data '
        'decides, and a graph holds a fixed sequence of ops.\n'
        "Fix: compute the loop's body on the whole tensor at once, one batched op over "
        "that dim (`torch.stack([f(m) for m in masks])` -> `f(masks)`), or return the "
        "tensor from the exported program and run the loop on its output "
        "(`masks = ep.module()(x)` then `[f(m) for m in masks]`)"),
    'tensor_as_python_int': ('DataRead',
        "a tensor's value is used where Python needs a real int (`range(t)`, `[v] * t`, `"
        "seq[t]`): the value is tensor data (a buffer's value can change between calls), "
        'which export never reads, and the Python loop or list it sizes would be fixed in'
        ' the graph.\n'
        '  at m.py:3 `for i in range(self.count):`\n'
        'Fix: if the count never changes, keep it a Python int attribute instead of a buf'
        'fer (`self.count = 3` in __init__, `range(self.count)`); otherwise compute the l'
        "oop's body on a whole tensor at once (one batched op over a dim of that size, e."
        'g. `torch.arange(n)` with `n = t.item()` and `st.check(n >= 0)`), or run the loo'
        "p on the exported program's output"),
    'out_argument': ('UnsupportedCall',
        'cannot trace torch.mul(Tensor f32[3], 2, out=y): safetrace records ops that make'
        ' their result, and out= writes it into an existing tensor.\n'
        '  at m.py:2 `torch.mul(x, 2, out=y)`\n'
        'Fix: compute the result, then copy it into that tensor (what out= does when the '
        'shapes agree):\n'
        '        y.copy_(torch.mul(x, 2))\n'
        '     (if out= was meant to resize it, bind the result to the name instead: `y = '
        'torch.mul(x, 2)`)'),
    'out_argument_at': ('UnsupportedCall',
        'cannot trace torch.mul(Tensor f32[3], 2, out=Tensor f32[3]): safetrace records o'
        'ps that make their result, and out= writes it into an existing tensor.\n'
        '  at m.py:2\n'
        'Fix: compute the result, then copy it into that tensor (what out= does when the '
        'shapes agree): `y.copy_(torch.add(x, 1))` for `torch.add(x, 1, out=y)`'),
    'size_as_python_value': ('UnsupportedConstruct',
        'a size of a dynamic dim reached code that takes only plain Python numbers (it ra'
        'ised: Object of type TorchSymInt is not JSON serializable): while exporting, a d'
        'ynamic size is a symbol that stands for every size in the declared range, and th'
        'at code cannot compute with it.\n'
        '  at m.py:3 `meta = json.dumps(list(x.shape))`\n'
        'Fix: compute with the size in Python arithmetic or torch ops (`math.sqrt(n)`, `t'
        'orch.tensor(n)`, `list(x.shape)`) instead of json / numpy / C extensions; or, wh'
        'ere that code really needs the number, make the dim static (dynamic_shapes {dim:'
        ' None}), since the graph would then hold one value'),
    'lstsq_residuals': ('DataDependentShape',
        "aten.linalg_lstsq: with driver 'gelsd', residuals are computed only when every "
        'matrix has full rank (a fact of the data).\n'
        "Fix: use driver='gelsy' or driver='gels'"),
    'outside_export': ('DataDependentError',
        'st.new_dynamic_size() depends on tensor data; it can only be traced inside '
        'st.export\n'
        'Fix: call it inside the model (or function) that st.export traces'),
    'float_read': ('DataRead',
        '.item() of a tensor f32[]: a float computed from data cannot be traced as a '
        'Python number (export never reads tensor data).\n'
        '  at m.py:4 `v = x.sum().item()`\n'
        'Fix: keep it a tensor (e.g. `x.sum()` instead of `x.sum().item()`; a 0-dim '
        'tensor broadcasts in tensor ops), so the graph computes with it'),
    'float_read_list': ('DataRead',
        '.tolist() of a tensor f32[3]: a float computed from data cannot be traced as a '
        'Python number (export never reads tensor data).\n'
        '  at m.py:4 `v = x.tolist()`\n'
        'Fix: keep it a tensor and index it (`x[i]`, `x.unbind(0)`) instead of making a '
        'list, so the graph computes with it'),
    'complex_item': ('DataRead',
        '.item() of a torch.complex64 tensor: a complex number computed from data cannot '
        'be traced as a Python number.\n'
        'Fix: keep it a tensor (use x[0] or x.reshape(()) and tensor ops) so the graph '
        'computes with it'),
    'untraceable_call': ('UnsupportedCall',
        'cannot trace torch.frob(Tensor f32[3], k=2): there is no ATen operator named '
        "'frob' and safetrace cannot trace into it.\n"
        '  at m.py:2 `torch.frob(x, k=2)`\n'
        'Fix: use an equivalent torch operation, or wrap the code in a custom op '
        '(st.custom_op) with a fake implementation (st.register_fake).'),
    'untraceable_call_overload': ('UnsupportedCall',
        "cannot trace torch.add(Tensor f32[3], 'a'): no overload of aten.add accepts "
        'these arguments.\n'
        "  at m.py:2 `torch.add(x, 'a')`\n"
        'Fix: use an equivalent torch operation, or wrap the code in a custom op '
        '(st.custom_op) with a fake implementation (st.register_fake).'),
    'to_argument': ('UnsupportedCall',
        "x.to(...) got an argument safetrace does not understand: <class 'object'> at "
        'm.py:2 `x.to(object)`.\n'
        'Fix: pass a torch.dtype, a device or a tensor, e.g. x.to(torch.float32), '
        "x.to('cpu') or x.to(other)"),
    'to_dtype': ('UnsupportedCall',
        "x.to(dtype='float') at m.py:2 `x.to(dtype='float')`: not a dtype.\n"
        'Fix: pass a torch.dtype such as torch.float32'),
    'too_many_indices': ('BadIndex',
        'too many indices for tensor of dimension 2 (3 given)\n'
        'Fix: index at most 2 dims (use ... for the dims you skip)'),
    'bool_index': ('BadIndex',
        'indexing with a Python bool is not supported by safetrace\n'
        'Fix: use x.unsqueeze(0) instead of x[True] (and x[:0] instead of x[False])'),
    'slice_step': ('BadIndex',
        'slice step must be an int, got 0.5\n'
        'Fix: use an int step, e.g. x[::2]'),
    'index_type': ('BadIndex',
        "unsupported index 'a' of type str\n"
        'Fix: index with ints, slices, None, ..., tensors or lists of ints'),
    'generator_argument': ('UnsupportedConstruct',
        'a torch.Generator is passed to a traced op at m.py:2 `torch.rand(3, '
        'generator=g)`; an exported graph cannot capture generator state.\n'
        'Fix: drop generator= (the program then draws from the default generator), or '
        'pass the random tensor in as an input'),
    'autocast_active': ('UnsupportedConstruct',
        'autocast is active at m.py:3 `y = x @ w`: safetrace records the ops as written '
        "and would silently drop autocast's dtype changes.\n"
        'Fix: remove the torch.autocast region and cast explicitly, e.g. '
        'x.to(torch.bfloat16), or export the model already converted (.to(dtype))'),
    'constant_written_through_alias': ('UnsupportedConstruct',
        'a tensor made in forward is written in place at m.py:3 `c.view(()).add_(2)` while '
        'another view of the same memory is also used (`c.view(()).add_(2)` then `x * c`); '
        'the exported constants would not share the write.\n'
        'Fix: make the tensor with a factory the program records, e.g. '
        'c = torch.full((), 6.0) (values given to torch.tensor(...) are folded into '
        'constants), write the tensor itself (c.add_(2)), or build it with its final value '
        '(c = torch.tensor(8.0))'),
    'state_reassigned_changed': ('UnsupportedConstruct',
        'forward assigns module state `cache` a tensor of float32[s0 + 1, 2] in place of its '
        'float32[0, 2]; module state keeps one shape and dtype (the exported program\'s next '
        'call would run a graph traced for the old ones).\n'
        'Fix: allocate `cache` at its full size and write into it in place '
        '(`self.cache[pos:pos + n] = x`, the position in another buffer), or pass it in as '
        'an input and return the new tensor'),
    'python_state_read_tensor': ('UnsupportedConstruct',
        "forward changes `self.c` (<tensor float32, 1 dims> -> '<tensor float32, 1 dims>'), "
        'and the graph traced after that change differs: an exported program keeps Python '
        'attributes at the values export saw, so every call would compute what the first '
        'one did while eager reads the new value (torch.export warns that the tensor '
        'attribute was assigned during export, then gives that answer).\n'
        'Fix: register it as a buffer, which the program reads and writes on every call (its '
        'writes are program state): in its module\'s __init__ `self.register_buffer("c", '
        '<the tensor>)` instead of `self.c = <the tensor>`; or pass the value in as an '
        'input, or set it before export and leave it unchanged in forward'),
    'python_state_read': ('UnsupportedConstruct',
        'forward changes `self.calls` (0 -> 1), and the graph traced after that change '
        'differs: an exported program keeps Python attributes at the values export saw, so '
        'every call would compute what the first one did while eager reads the new value '
        '(torch.export gives that answer silently).\n'
        'Fix: keep it in a buffer, which the program reads and writes on every call: in its '
        'module\'s __init__ `self.register_buffer("calls", torch.tensor(0, dtype=torch.long))`, '
        'and in forward update it with tensor ops (`self.calls += 1`, `self.calls.fill_(...)`); '
        'or pass the value in as an input, or set it before export and leave it unchanged in '
        'forward'),
    'python_state_unsettled': ('UnsupportedConstruct',
        'forward changes `self.log` (\'\' -> \'.\' -> \'..\'), the global `MODE` of module m '
        '(\'a\' -> \'b\' -> \'c\'): a new value on each of 5 traces. Each traced to the same '
        'program, but an exported program keeps the value export saw while eager goes on to '
        'values never traced, where it may take another path (torch.export answers silently '
        'there).\n'
        'Fix: keep the state in a buffer, which the program reads and writes on every call (a '
        'position in a list of modes: `self.register_buffer("log_index", torch.tensor(0))`, '
        'advanced with tensor ops and read with torch.where / torch.cond); or pass the value '
        'in as an input, or set it before export and leave it unchanged in forward'),
    'constant_read_then_written': ('UnsupportedConstruct',
        'the value of `step` is read in Python at m.py:5 `if self.step.item() > 2:`, and '
        'the program writes `step` in place: it is program state, which changes from call '
        'to call, so the value read at export would be stale from the next call on.\n'
        'Fix: compute with the tensor instead of its Python value (torch.where, torch.cond '
        'on `step`), or keep `step` unchanged in forward (pass the changing value in as an '
        'input)'),
    'state_written_through_alias': ('UnsupportedConstruct',
        'module state `whole` is written in place at m.py:5 `self.whole.add_(x)`, and '
        '`first` shares its memory (one is a view of the other); the exported program '
        'keeps a copy of each, so the write would not reach `first`.\n'
        'Fix: register only `whole` and take the view in forward (e.g. `first = '
        'self.whole[0]`), or register a copy (`.clone()`) if they should not share memory'),
    'input_reshaped_in_place': ('UnsupportedConstruct',
        "`t_` at m.py:2 `x.t_()` changes the shape of the input `x` in place: the caller's "
        "tensor would have another shape after the call, which an exported program does not "
        "do to an input (torch.export refuses it too).\n"
        "Fix: reshape a new tensor (x = x.t(...), out of place)"),
    'state_reshaped_in_place': ('UnsupportedConstruct',
        "`unsqueeze_` at m.py:3 `self.b.unsqueeze_(0)` changes the shape of module state `b` "
        "in place, which an exported program cannot follow: its state and constants keep "
        "the shape they were traced with.\n"
        "Fix: reshape a new tensor (b = self.b.unsqueeze(...), out of place), or register "
        "it with the shape forward needs"),
    'state_reshaped_in_place_constant': ('UnsupportedConstruct',
        "`t_` at m.py:3 `c.t_()` changes the shape of a tensor the model made or holds in "
        "place, which an exported program cannot follow: its state and constants keep the "
        "shape they were traced with.\n"
        "Fix: reshape a new tensor (c = c.t(...), out of place), or register it with the "
        "shape forward needs"),
    'data_assignment': ('UnsupportedConstruct',
        "`x.data = value` at m.py:4 `self.w.data = w2` changes the tensor's shape or "
        'dtype, which an exported graph cannot do to module state.\n'
        'Fix: assign a value of the same shape and dtype, or compute with a new tensor '
        'instead'),
    'layout_of_view': ('UnsupportedConstruct',
        'x.is_contiguous() at m.py:3 `if x.t().is_contiguous():` asks for the memory '
        'layout of a tensor that is a view (transpose, slice, expand, ...) or computed '
        'from one; safetrace does not trace strides, and the answer could differ between '
        'inputs.\n'
        'Fix: call .contiguous() on the tensor before asking, or drop the layout test '
        '(the values computed never depend on it)'),
    'write_reads_own_memory': ('UnsupportedConstruct',
        'aten.add_.Tensor at m.py:4 `v.add_(v[0])` writes a tensor in place while reading '
        'another view of the same memory (`v.add_(v[0])`), and the tensor\'s strides are not '
        'known at export (a view, or computed from one): eager raises "some elements of the '
        'input tensor and the written-to tensor refer to a single memory location" for some '
        'strides and not for others.\n'
        'Fix: read a copy, `v.add_(v[0].clone())`, or write a new tensor, `v = v + v[0]`'),
    'write_through_reshape': ('UnsupportedConstruct',
        'aten.mul_.Tensor at m.py:5 `v.reshape(-1).mul_(2)` writes in place the result of a '
        'reshape (or flatten, or contiguous()) of an output of torch.vmap, or of a tensor '
        'computed from one: eager\'s reshape returns a view of it for some strides (the write '
        'then shows through it) and a copy for others, and eager\'s vmap returns the batch '
        'dim with strides of its own, which the program does not reproduce.\n'
        'Fix: write a copy, `r = t.reshape(...).clone(); r.mul_(2)`, or make the tensor '
        'row-major first, `t = t.clone(memory_format=torch.contiguous_format)`'),
    'view_of_vmap_output': ('UnsupportedConstruct',
        'Tensor.view at m.py:4 `v.movedim(0, -1).view(-1)` merges dims of an output of '
        'torch.vmap, or of a tensor computed from one: eager\'s view succeeds or raises "view '
        'size is not compatible with input tensor\'s size and stride" depending on the strides '
        'eager\'s vmap gives the batch dim, which the program does not reproduce.\n'
        'Fix: use t.reshape(shape) (the values are the same), or view a row-major copy, '
        '`t.contiguous().view(shape)`'),
    'strides_of_loose': ('UnsupportedConstruct',
        'x.stride() at m.py:3 `s = x.t().contiguous().stride(1)` reads the strides of a '
        'tensor that is contiguous, but whose dims of size 0 or 1 may carry any stride and '
        'whose storage offset may be any (an input given so, `.contiguous()` of a view, which '
        'returns the view itself when it is contiguous, or computed from one); safetrace does '
        'not trace those strides.\n'
        'Fix: read the strides of a row-major copy, '
        '`t.clone(memory_format=torch.contiguous_format).stride()`, or compute them from '
        '`t.shape`'),
    'view_of_strided': ('OpShapeError',
        "Tensor.view at m.py:3 `return x.t().view(-1)`: view size is not compatible with "
        "input tensor's size and stride (eager raises this at the example inputs: the tensor "
        "is a view whose dims cannot be merged without a copy)\n"
        "Fix: use x.reshape(shape) (it copies only where needed), or "
        "x.contiguous().view(shape)"),
    'view_dtype_of_strided': ('OpShapeError',
        "Tensor.view(dtype) at m.py:3 `return x.t().view(torch.int16)`: self.stride(-1) must "
        "be 1 to view Float as Short (different element sizes), but got 6 (eager raises this "
        "at the example inputs: the tensor is a view whose last dim is not contiguous)\n"
        "Fix: view a row-major copy: x.contiguous().view(dtype)"),
    'kernel_needs_data': ('MissingShapeRule',
        'aten.frob.default cannot be traced: it needs tensor data or a real device '
        '(Tensor.item() cannot be called on meta tensors), and safetrace has no shape '
        'rule for it.\n'
        'Fix: compute this part outside the exported model, or register a rule: '
        '@st.register_shape_rule(torch.ops.aten.frob.default)'),
    'kernel_rejects': ('OpShapeError',
        'aten.frob.default: frob(): expected a 2-D tensor\n'
        'Fix: fix the call (eager PyTorch rejects it too), or the example inputs'),
    'internal_error': ('UnsupportedOpError',
        'internal error: symbol s3 has no source in the graph\n'
        'Fix: report it with the model that triggers it; st.explain(model, args) shows '
        'how far the trace gets'),
    'internal_exception': ('UnsupportedOpError',
        "internal error: safetrace failed (TypeError: '>=' not supported between instances "
        "of 'TensorMeta' and 'int', in rules/data_dependent.py:178) while tracing m.py:9 "
        "`torch.ops.aten.nonzero_static(x, size=n)`\n"
        "Fix: report it with the model that triggers it; until it is fixed, compute that "
        "line outside the exported model (st.explain(model, args) shows how far the trace "
        "gets)"),
    'allow_ops_entry': ('LoadError',
        "--allow-ops: allow_ops entries are 'namespace::op' or 'namespace' strings, got "
        "'my lib'\n"
        "Fix: name an op 'namespace::op' or a whole 'namespace', e.g. --allow-ops "
        'mylib::frob (repeat the flag for more; aten ops need none)'),
    'no_inputs_drawn': ('InputMismatchError',
        'could not draw inputs that satisfy the contract with at most 1000 elements per '
        'tensor (--max-numel)\n'
        'Fix: allow larger inputs: --max-numel 16000'),
    'spec_keys': ('SpecStructureError',
        "dynamic_shapes has key(s) ['z'] that are not inputs of the program; the inputs "
        "are ['x', 'y'].\n"
        "Fix: key dynamic_shapes by the argument names ['x', 'y']"),
    'spec_count': ('SpecStructureError',
        "dynamic_shapes has 1 entries but the program takes 2 inputs (['x', 'y']).\n"
        '  inputs: (Tensor[3, 4], Tensor[3])\n'
        "  spec:   ({0: Dim('b')},)\n"
        'Fix: give one entry per input (None for inputs without dynamic dims)'),
    'spec_form': ('SpecStructureError',
        'dynamic_shapes must be a dict keyed by argument name, a tuple with one entry '
        'per input, or a ShapesCollection; got str\n'
        "Fix: dynamic_shapes={'x': {0: Dim('batch')}} (or a tuple: ({0: Dim('batch')},))"),
    'spec_given_twice': ('SpecStructureError',
        "dynamic_shapes gives input xs[0] both under 'xs' and as 'xs[0]'.\n"
        'Fix: keep one of the two entries'),
    'spec_var_positional': ('SpecStructureError',
        "dynamic_shapes['xs'] is the spec of *xs, which received 2 positional input(s), "
        'so it must be a tuple of 2 specs (one per input); got 1.\n'
        "Fix: dynamic_shapes={'xs': (None, None)} with a spec in place of each None"),
    'spec_var_positional_one': ('SpecStructureError',
        "dynamic_shapes['xs'] is the spec of *xs, which received 1 positional input(s), "
        'so it must be a tuple of 1 specs (one per input); got Dim.\n'
        "Fix: dynamic_shapes={'xs': (None,)} with a spec in place of each None"),
    'spec_var_keyword': ('SpecStructureError',
        "dynamic_shapes['kw'] is the spec of **kw, which received the keyword input(s) "
        "['mask'], so it must be a dict keyed by those names; got ['mask'].\n"
        "Fix: dynamic_shapes={'kw': {'mask': None}} with a spec in place of each None"),
    'spec_on_constant': ('SpecStructureError',
        "dynamic_shapes['k']: input k is a int (3), which has no dims; its spec must be "
        "None, got {0: 'b'}\n"
        "Fix: dynamic_shapes['k'] = None (or leave it out)"),
    'spec_shape': ('SpecStructureError',
        "dynamic_shapes['xs']: the spec does not match input xs: expected 2 entries.\n"
        '  inputs: [Tensor[3], Tensor[3]]\n'
        '  spec:   [None]\n'
        "Fix: give dynamic_shapes['xs'] the containers of xs (None for parts without "
        'dynamic dims)'),
    'spec_dim_out_of_range': ('SpecStructureError',
        "dynamic_shapes['x']: dim 2 is out of range for a tensor of shape [3, 4] (2 "
        'dims)\n'
        'Fix: key the dict by dims 0 to 1 (or -2 to -1)'),
    'spec_dim_out_of_range_scalar': ('SpecStructureError',
        "dynamic_shapes['x']: dim 0 is out of range for a tensor of shape [] (0 dims)\n"
        "Fix: dynamic_shapes['x'] = None (a 0-dim tensor has no dims)"),
    'spec_rank': ('SpecStructureError',
        "dynamic_shapes['x']: the spec has 1 entries but the tensor has 2 dims (shape "
        '[3, 4]).\n'
        'Fix: one entry per dim, e.g. (Dim.STATIC, Dim.STATIC) or a dict {dim: Dim(...)}'),
    'spec_tensor_form': ('SpecStructureError',
        "dynamic_shapes['x']: a tensor's spec must be a tuple (one entry per dim), a "
        "dict {dim: ...} or None; got 'batch'\n"
        "Fix: dynamic_shapes['x'] = {0: Dim('batch')} (the dims you make dynamic)"),
    'spec_signature': ('SpecStructureError',
        'dynamic_shapes: the example inputs do not fit the signature (x, y): missing a '
        "required argument: 'y'\n"
        'Fix: pass the same args and kwargs as to st.export'),
    'collection_entry': ('SpecStructureError',
        'dynamic_shapes: the ShapesCollection has an entry for a tensor of shape [3, 4] '
        'that is not one of the inputs (entries are matched by identity, not by shape or '
        'value: a copy or a new tensor of the same shape does not match). The tensor '
        'inputs are x: [3, 4].\n'
        'Fix: key the collection by the tensor object you pass to st.export:\n'
        '    sc[x] = (2, None)'),
    'additional_structure': ('SpecStructureError',
        "AdditionalInputs: example 1 has another structure than the export's inputs "
        '(TreeSpec(tuple, 1) vs TreeSpec(tuple, 2))\n'
        'Fix: give every example the same containers, keys and tensor positions'),
}

CASES.update({
    "example_size": lambda: E.example_size("dynamic_shapes for x.shape[0]", "x", 0, 4, 3),
    "example_not_derived": lambda: E.example_not_derived(
        "dynamic_shapes for x.shape[1]", "x", 1, 2 * st.Dim("n") + 1, 8, "n"),
    "example_out_of_range": lambda: E.example_out_of_range(
        "dynamic_shapes for x.shape[0]", "Dim('b', min=2, max=8)", 2, 8, 9),
    "examples_out_of_range": lambda: E.examples_out_of_range([
        ("dynamic_shapes for x.shape[0]", "Dim.DYNAMIC(min=33)", 33, float("inf"), 16,
         "x.shape[0]", (33, None), (0, 32)),
        ("dynamic_shapes for y.shape[0]", "Dim.AUTO(max=127)", 0, 127, 256, "y.shape[0]",
         (None, 127), (128, float("inf")))]),
    "dim_name_clash": lambda: E.dim_name_clash("dynamic_shapes for y.shape[0]", "n",
                                               st.Dim("n", max=8), st.Dim("n", max=16)),
    "dim_sizes_disagree": lambda: E.dim_sizes_disagree("dynamic_shapes for y.shape[0]", "n",
                                                       "x.shape[0]", 4, "y", 0, "n = 5"),
    "additional_value": lambda: E.additional_value(2, [1.0, 2.0]),
    "additional_rank": lambda: E.additional_rank(0),
    "additional_refused": lambda: E.additional_refused(2, E.InputMismatchError(
        "x.shape[0] = 2, but it must be >= 3 (from `x[:3]` at m.py:4)")),
})
GOLDEN.update({
    'example_size': ('SpecExampleError',
        'dynamic_shapes for x.shape[0] is 4, but the example input has x.shape[0] = 3 '
        '(as torch.export says: Static shape constraint of 4 does not match input size of 3, '
        'for x.shape[0]).\n'
        'Fix: use 3 or None (static), or a Dim'),
    'example_not_derived': ('SpecExampleError',
        'dynamic_shapes for x.shape[1] is 2*n + 1, but x.shape[1] = 8 is not of that '
        'form for any integer n (as torch.export says: Expected shape[1] = 8 of input '
        'Tensor to be of the form 2*n + 1, where n is an integer)\n'
        'Fix: declare the dim with a Dim of its own, or give an example of that form'),
    'example_out_of_range': ('SpecExampleError',
        "dynamic_shapes for x.shape[0] is Dim('b', min=2, max=8) with range [2, 8], but "
        'the example input has size 9 (as torch.export says: 9 not in range [2, 8]).\n'
        'Fix: widen the range to admit 9 (max=9), or change the example'),
    'examples_out_of_range': ('SpecExampleError',
        'the example inputs are outside the ranges dynamic_shapes declares, at 2 dims:\n'
        '  - dynamic_shapes for x.shape[0] is Dim.DYNAMIC(min=33) with range [33, inf], but '
        'the example input has size 16 (the traced program works for [0, 32] there)\n'
        '  - dynamic_shapes for y.shape[0] is Dim.AUTO(max=127) with range [0, 127], but the '
        'example input has size 256 (the traced program works for [128, inf] there)\n'
        '(as torch.export says: Found the following conflicts between user-specified ranges '
        'and inferred ranges from model tracing:\n'
        "- Received user-specified min/max range of [33, None], conflicting with the inferred "
        "min/max range of [0, 32], for inputs['x'].shape[0].\n"
        "- Received user-specified min/max range of [None, 127], conflicting with the "
        "inferred min/max range of [128, int_oo], for inputs['y'].shape[0].)\n"
        'Fix: widen each range to admit its example (x.shape[0]: min=16; y.shape[0]: '
        'max=256), or change the examples'),
    'dim_name_clash': ('SpecExampleError',
        "dynamic_shapes for y.shape[0] names a Dim 'n' that another Dim of the spec is "
        "also named (Dim('n', max=8) and Dim('n', max=16))\n"
        'Fix: use one Dim object per name'),
    'dim_sizes_disagree': ('SpecExampleError',
        'dynamic_shapes for y.shape[0] uses n, but the example sizes disagree: '
        'x.shape[0] gives n = 4 while y.shape[0] gives n = 5 (as torch.export says: '
        'Expected input y.size()[0] to be equal to n, where n = 4, but got 5).\n'
        'Fix: the same Dim means equal sizes; use separate Dims or consistent example '
        'inputs'),
    'additional_value': ('SpecExampleError',
        'AdditionalInputs: input leaf 2 differs between the examples (1.0, 2.0), but '
        'only tensor sizes and ints can be dynamic (other values are specialized).\n'
        'Fix: give every example the same non-tensor values'),
    'additional_rank': ('SpecExampleError',
        'AdditionalInputs: input leaf 0 is a tensor whose rank (or type) differs between '
        'the examples; a dim can be dynamic, the rank cannot.\n'
        'Fix: give every example tensors of the same rank at this position'),
    'additional_refused': ('AdditionalInputRefused',
        'AdditionalInputs: example 2 is refused by the exported program: x.shape[0] = 2, '
        'but it must be >= 3 (from `x[:3]` at m.py:4) (a size there breaks a condition the '
        'traced code needs, so the examples do not share one program)\n'
        'Fix: drop that example, or change the code so that it works for every example\'s '
        'sizes (the condition above names the line)'),
})

CASES["strides_of_small_dim"] = lambda: E.strides_of_small_dim(
    "x.stride()", "m.py:4 `s = t.view(b, n // 8, 8).stride()`", "dim 1 (size s1//8)")
GOLDEN["strides_of_small_dim"] = (
    "UnsupportedConstruct",
    "x.stride() at m.py:4 `s = t.view(b, n // 8, 8).stride()` reads the strides of a view whose "
    "strides safetrace traces on dims of size 2 or more only, and dim 1 (size s1//8) may be 0 "
    "or 1 in the declared space (there eager's stride of such a dim follows other rules, which "
    "safetrace could not replay from a tensor of known strides: a view of an input or of a "
    "tensor whose layout is not known, an empty view; a wrong stride is a wrong result).\n"
    "Fix: declare a range that keeps the dim at 2 or more (`Dim(\"n\", min=2)`, or a multiple, "
    "`8 * Dim(\"k\", min=2)`), or read the strides of a row-major copy, "
    "`t.contiguous().stride()`")
