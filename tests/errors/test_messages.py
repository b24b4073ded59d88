"""Golden tests: the rendered text of every error builder in safetrace.errors.

A change of wording shows up here as a diff of the pinned text; update GOLDEN together with
docs/errors.md when a message changes on purpose.
"""

from __future__ import annotations

import dataclasses
import inspect
import pathlib
import pickle
import re

import pytest
import torch

import safetrace as st
from safetrace import errors as E
from safetrace.errors import load as load_errors
from tests.errors import cases_library


@dataclasses.dataclass
class Point:
    x: int

class Cache:
    pass

CASES = {
    "args_not_tuple": lambda: E.args_not_tuple({"x": 1}),
    "not_callable": lambda: E.not_callable(3),
    "call_mismatch": lambda: E.call_mismatch("f", "(x, y)", "1 positional inputs, but it takes 2 (x, y)", "args=(Tensor[3],)", "st.export(f, (x, y))"),
    "unflattenable_input": lambda: E.unflattenable_input("p", Point(1)),
    "unflattenable_output": lambda: E.unflattenable_output(Cache()),
    "spec_structure": lambda: E.spec_structure("dynamic_shapes", "has key(s) ['z'] that are not inputs of the program", "key dynamic_shapes by the argument names ['x']"),
    "spec_entry": lambda: E.spec_entry("dynamic_shapes['x'][0]", "batch"),
    "spec_example": lambda: E.spec_example("dynamic_shapes for x.shape[0]", "is 4, but the example input has x.shape[0] = 3.", "use 3 or None (static), or a Dim"),
    "declared_space": lambda: E.declared_space([E.Violation("x.shape[0] (Dim('b'))", "was specialized to 3 (from `x.view(3, 4)` at m.py:2).", "make it static: x.shape[0] -> 3 (or Dim.STATIC), or let safetrace decide: Dim.AUTO")], "    dynamic_shapes = {'x': (3, None)}"),
    "contradictory_sizes": lambda: E.contradictory_sizes("contradiction: s0 == 3 but its range is [4, 10]"),
    "too_many_splits": lambda: E.too_many_splits(1, ["seq == 1", "2 <= seq <= 8", "seq >= 9"],
                                                 "x.shape[1] (Dim('seq')) only works for ..."),
    "check_never_holds": lambda: E.check_never_holds("s0 > 5", "contradiction: `s0 > 5` is false under the known facts", " (from `st.check(n > 5)` at m.py:3)"),
    "data_dependent_decision": lambda: E.data_dependent_decision("u0 > 0", " (u0 = x.sum().item())", "m.py:4 `if n > 0:`"),
    "data_dependent_int": lambda: E.data_dependent_int("u0", " (u0 = x[mask])", "m.py:5 `for i in range(len(kept)):`"),
    "data_read": lambda: E.data_read("`if tensor:`", "m.py:5 `if x.any():`"),
    "data_read_inside": lambda: E.data_read("`if tensor:`", "m.py:5 `y = F.mha(x)`", "torch/nn/functional.py:6000"),
    "missing_shape_rule": lambda: E.missing_shape_rule("aten.frob.default", "m.py:6 `torch.frob(x)`", ["x.shape[0]"]),
    "missing_shape_rule_no_meta": lambda: E.missing_shape_rule("aten.frob.default", ""),
    "missing_fake": lambda: E.missing_fake("mylib::count", "m.py:7 `mylib.count(x)`"),
    "fake_mismatch": lambda: E.fake_mismatch(
        "mylib::foo", "mutation", "its kernel wrote argument 'y', which its schema does not "
        "mark mutable", "m.py:9 `foo(x, y)`", "y"),
    "unsupported_construct": lambda: E.unsupported_construct("autocast is active at m.py:8", "cast explicitly", "m.py:8"),
    "seeded_generator": lambda: E.seeded_generator(),
    "state_traced_elsewhere": lambda: E.state_traced_elsewhere(
        "the model's state 'scale'", "FakeTensor"),
    "below_tracer": lambda: E.below_tracer("aten.expand.default",
                                           "m.py:3 `return torch.vmap(f)(x)`"),
    "picked_tensor_written": lambda: E.picked_tensor_written(
        "aten.add_.Tensor", "m.py:6 `m.add_(10)`", "a tensor that Python's max()/min() picked"),
    "builtin_minmax_number": lambda: E.builtin_minmax_number(
        "max", "an int it may return is not a floating-point value like the tensor",
        "m.py:3 `return max(x, 0)`"),
    "vmap_not_per_slice": lambda: E.vmap_not_per_slice(
        "writes a tensor in place (aten.add_.Tensor)", "m.py:3 `return torch.vmap(f)(x)`"),
    "unknown_tensor_type": lambda: E.unknown_tensor_type("torch.Float", "m.py:2 `x.type('torch.Float')`"),
    "script_module": lambda: E.script_module(type("RecursiveScriptModule", (), {})()),
    "rng_state_call": lambda: E.rng_state_call("torch.initial_seed()", "m.py:4 `s = torch.initial_seed()`"),
    "check_false": lambda: E.check_false("m.py:3 `st.check(n < 0)`", None),
    "shape_error": lambda: E.shape_error("aten.mm", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "shape_error_at": lambda: E.shape_error("aten.mm", "shapes cannot be multiplied").at("m.py:9 `a @ b`"),
    "wrong_input_count": lambda: E.wrong_input_count(3, 2),
    "wrong_structure": lambda: E.wrong_structure("input `xs` was a tuple of 2 at export, got a list of 3.", "call with a tuple of 2"),
    "wrong_input_type": lambda: E.wrong_input_type("x", 3),
    "wrong_dtype": lambda: E.wrong_dtype("x", "torch.float64", "torch.float32"),
    "wrong_rank": lambda: E.wrong_rank("x", [2, 3, 4], ("s0", "4")),
    "static_size": lambda: E.static_size("x", 1, [2, 5], 4, "dynamic_shapes={'x': {1: Dim.DYNAMIC}}"),
    "required_size": lambda: E.required_size("x", 0, [2, 4], 3, " (from `x.view(3, 4)` at m.py:2)"),
    "related_size": lambda: E.related_size("y", 0, [7], "x.shape[0]", 6, " (as declared: Dim('n'))"),
    "out_of_range": lambda: E.out_of_range("x.shape[0]", 1, ">=", 2, " (from `if x.shape[0] > 1:` at m.py:3)"),
    "out_of_declared_range": lambda: E.out_of_range("x.shape[0]", 65, "<=", 64,
                                                    " (as declared: Dim('b', max=64))"),
    "wrong_layout": lambda: E.wrong_layout("x", (1, 3), 0, " (from `x.is_contiguous()` at m.py:4)"),
    "failed_condition": lambda: E.failed_condition("x.shape[0] <= y.shape[1]", " (from `y[:, :n]` at m.py:5)"),
    "wrong_constant": lambda: E.wrong_constant("k", 3, 2),
    "conversion_error": lambda: E.conversion_error(
        "node matmul (m.py:3): torch computes rank 3, safetrace rank 2",
        "report it; ep.module() runs the program without conversion"),
    "runtime_check_failed": lambda: E.runtime_check_failed("expected n <= 4"),
    "load_error": lambda: E.load_error("contract.inputs[0].dtype", "unknown dtype 'f99'"),
    # torch.export drop-in (errors/dropin.py)
    "cond_output_kinds": lambda: E.cond_output_kinds("m.py:3 `torch.cond(p, f, g, (x,))`", 1, [("true branch", "m.py:1", "int 3"), ("false branch", "m.py:2", "f32[4]")]),
    "cond_size_output": lambda: E.cond_size_output("m.py:3 `torch.cond(p, f, g, (x,))`", 1, [("true branch", "m.py:1", "s0"), ("false branch", "m.py:2", "s0 + 1")]),
    "torch_api_given_ours": lambda: E.torch_api_given_ours("torch.export.save"),
    "torch_api_given_ours_read": lambda: E.torch_api_given_ours(None, "ExportedProgram.verifiers"),
    "ours_given_torch_program": lambda: E.ours_given_torch_program("st.export"),
    "ours_given_torch_program_save": lambda: E.ours_given_torch_program("st.save"),
    "unknown_higher_order_op": lambda: E.unknown_higher_order_op("my_hop", "m.py:4 `my_hop(f, x)`"),
    "unknown_higher_order_op_vmap": lambda: E.unknown_higher_order_op("custom_function_call", "m.py:4 `torch.vmap(Sin.apply)(x)`", "Sin"),
    "collective_async": lambda: E.collective_async("torch.distributed.all_reduce", "m.py:5 `dist.all_reduce(y, async_op=True)`"),
    "traced_subclass": lambda: E.traced_subclass("TwoTensor", "m.py:2 `TwoTensor(x, x + 1).sin()`"),
    "dynamic_int_type": lambda: E.dynamic_int_type("n", 2.5),
    "dynamic_int_relation": lambda: E.dynamic_int_relation("length", 7, "10 - start", 8, " (from `x.narrow(0, start, length)` at m.py:3)"),
}

GOLDEN = {
    'args_not_tuple': ('ArgsNotTuple',
        'args must be a tuple of positional inputs, got dict.\n'
        'Fix: st.export(model, (x,)) for a single input x'),
    'not_callable': ('NotCallable',
        'cannot export int: it is not callable\n'
        'Fix: pass an nn.Module or a function'),
    'call_mismatch': ('CallMismatch',
        'st.export called f(x, y) with 1 positional inputs, but it takes 2 (x, y).\n'
        '  got: args=(Tensor[3],)\n'
        'Fix: pass one input per parameter of f, positionally in args or by name in kwargs:\n'
        '    st.export(f, (x, y))'),
    'unflattenable_input': ('UnflattenableInput',
        'input p has type tests.errors.test_messages.Point, which safetrace does not '
        'know how to flatten into tensors and constants.\n'
        'Fix: register the class once before exporting:\n'
        '    import safetrace as st\n'
        '    st.register_dataclass(Point)'),
    'unflattenable_output': ('UnflattenableOutput',
        'the model returned a tests.errors.test_messages.Cache, which safetrace cannot '
        'flatten into tensors and constants.\n'
        'Fix: register the class once before exporting (st.register_pytree_node(Cache, '
        'flatten_fn, unflatten_fn)  # flatten_fn(obj) -> (children, context); a class '
        'registered for torch.export works too), or return tensors and Python constants '
        '(e.g. use_cache=False)'),
    'spec_structure': ('SpecStructureError',
        "dynamic_shapes: has key(s) ['z'] that are not inputs of the program\n"
        "Fix: key dynamic_shapes by the argument names ['x']"),
    'spec_entry': ('SpecEntryError',
        "dynamic_shapes['x'][0]: 'batch' is not a dim spec\n"
        'Fix: use None or an int (static), Dim.STATIC, Dim.AUTO, Dim.DYNAMIC, '
        "Dim('name', min=, max=) or a linear derived dim such as 2*dim + 1"),
    'spec_example': ('SpecExampleError',
        'dynamic_shapes for x.shape[0] is 4, but the example input has x.shape[0] = 3.\n'
        'Fix: use 3 or None (static), or a Dim'),
    'declared_space': ('DeclaredSpaceViolation',
        'the traced program does not work for the whole declared input space (1 problem; '
        "in torch.export's words: Constraints violated (b)!):\n"
        "  - x.shape[0] (Dim('b')) was specialized to 3 (from `x.view(3, 4)` at m.py:2).\n"
        '    Fix: make it static: x.shape[0] -> 3 (or Dim.STATIC), or let safetrace '
        'decide: Dim.AUTO\n'
        'Suggested fix (all problems at once):\n'
        "    dynamic_shapes = {'x': (3, None)}"),
    'too_many_splits': ('TooManySplits',
        'the program branches on declared sizes into more than 2 specializations '
        '(max_splits=1); traced so far: seq == 1; 2 <= seq <= 8; seq >= 9. First split: '
        "x.shape[1] (Dim('seq')) only works for ...\n"
        "Fix: allow more: st.export(..., max_splits=4), or narrow the Dim's declared range "
        'to the sizes you use'),
    'contradictory_sizes': ('ContradictorySizes',
        'the traced program requires contradictory input sizes: contradiction: s0 == 3 '
        'but its range is [4, 10]\n'
        'Fix: check the shapes the model expects against the example inputs and the '
        'spec; st.explain(model, args, dynamic_shapes=...) lists every guard with its line'),
    'check_never_holds': ('CheckNeverHolds',
        'st.check(s0 > 5) can never hold for the inputs being traced (the example inputs, '
        'or the sample a size split traces for another range of a named Dim): '
        'contradiction: `s0 > 5` '
        'is false under the known facts (from `st.check(n > 5)` at m.py:3)\n'
        'Fix: correct the check, or export with example inputs (and a spec) for which it holds'),
    'data_dependent_int': ('DataDependentDecision',
        'needs the Python int value of `u0` (u0 = x[mask]), asked at m.py:5 '
        '`for i in range(len(kept)):`: it depends on values computed from tensor data, '
        'which export never reads, so a Python loop over it (`for i in range(n)`) or a '
        'list length or index taken from it has no fixed value.\n'
        "Fix: compute the loop's body on the whole tensor at once, one batched op over "
        "that dim (`torch.stack([f(m) for m in masks])` -> `f(masks)`), or return the "
        "tensor from the exported program and run the loop on its output "
        "(`masks = ep.module()(x)` then `[f(m) for m in masks]`)"),
    'data_dependent_decision': ('DataDependentDecision',
        'could not decide `u0 > 0` (u0 = x.sum().item()), asked at m.py:4 `if n > 0:`: '
        'it depends on values computed from tensor data, which export never reads '
        "(torch.export's words: Could not guard on data-dependent expression u0 > 0).\n"
        'Fix: add the check that holds for your data before this line, either\n'
        '    st.check(u0 > 0)\n'
        'or\n'
        '    st.check(not (u0 > 0))\n'
        '(torch._check works too), or rewrite the code so it does not branch on data'),
    'data_read': ('DataRead',
        '`if tensor:` reads tensor data, which export never does (the graph must work '
        'for any data).\n'
        '  at m.py:5 `if x.any():`\n'
        'Fix: compute on tensors instead of Python values (e.g. torch.where(cond, a, b) '
        'instead of `if`), or move the data-dependent decision out of the exported code.'),
    'data_read_inside': ('DataRead',
        '`if tensor:` reads tensor data, which export never does (the graph must work '
        'for any data).\n'
        '  at m.py:5 `y = F.mha(x)`\n'
        '  inside torch/nn/functional.py:6000\n'
        'Fix: look for an argument of that call that skips the check (e.g. '
        "nn.Transformer's tgt_is_causal=True), or move the call out of the exported code."),
    'missing_shape_rule': ('MissingShapeRule',
        'aten.frob.default has no symbolic shape rule, so the dynamic size(s) x.shape[0] '
        'it was called with had to be specialized to their example values.\n'
        '  at m.py:6 `torch.frob(x)`\n'
        'Fix: register a rule (sizes may be symbolic ints):\n'
        '    @st.register_shape_rule(torch.ops.aten.frob.default)\n'
        '    def rule(self, *args, **kwargs):\n'
        '        return st.TensorMeta(out_shape, self.dtype, self.device)\n'
        'or declare those dims Dim.AUTO to accept the specialization'),
    'missing_shape_rule_no_meta': ('MissingShapeRule',
        'aten.frob.default has no shape rule in safetrace and no meta kernel in PyTorch.\n'
        'Fix: register a rule (sizes may be symbolic ints):\n'
        '    @st.register_shape_rule(torch.ops.aten.frob.default)\n'
        '    def rule(self, *args, **kwargs):\n'
        '        return st.TensorMeta(out_shape, self.dtype, self.device)'),
    'missing_fake': ('MissingFake',
        'custom op mylib::count has no fake implementation, so safetrace cannot know its '
        'output shapes.\n'
        '  at m.py:7 `mylib.count(x)`\n'
        'Fix: register one:\n'
        '    @st.register_fake("mylib::count")\n'
        '    def _(*args):  # receives metadata-only tensors\n'
        '        return torch.empty_like(args[0])  # or st.new_dynamic_size(...)'),
    'fake_mismatch': ('FakeKernelMismatch',
        "custom op mylib::foo: its kernel wrote argument 'y', which its schema does not mark "
        "mutable, found by running its kernel on the example inputs "
        "(torch._functorch.config.fake_tensor_propagate_real_tensors is set).\n"
        "  at m.py:9 `foo(x, y)`\n"
        "Fix: declare what the kernel writes: @torch.library.custom_op('mylib::foo', "
        "mutates_args={'y'}), or write into a copy: y = y.clone()"),
    'unsupported_construct': ('UnsupportedConstruct',
        'autocast is active at m.py:8\n'
        'Fix: cast explicitly'),
    'rng_state_call': ('UnsupportedConstruct',
        "torch.initial_seed() at m.py:4 `s = torch.initial_seed()` reads or sets the state of "
        "torch's default random generator; an exported graph cannot capture generator state, "
        "so it would keep the value seen at export (or never reseed) where eager follows the "
        "generator.\n"
        'Fix: seed outside the model, before calling it; a seed the model needs can be an '
        'input (a tensor) or a constant'),
    'check_false': ('CheckNeverHolds',
        'the check at m.py:3 `st.check(n < 0)` is false while exporting: its condition does '
        'not depend on tensor data and already evaluates to False for the example inputs (and '
        'every input of the same static sizes), so the program would fail it on every call\n'
        'Fix: correct the check, or export with example inputs (and a spec) for which it holds'),
    'picked_tensor_written': ('UnsupportedConstruct',
        "aten.add_.Tensor at m.py:6 `m.add_(10)` writes in place a tensor that Python's "
        "max()/min() picked: in eager that tensor shares memory with another value of the "
        "program, so the write shows through it, and the exported program computes that "
        "value as a new tensor, which the write cannot reach.\n"
        "Fix: write a copy instead (t = t.clone() before the in-place op), or use an op that "
        "returns a new tensor in eager too (torch.maximum / torch.minimum instead of "
        "max() / min(); `return t[:1].clone()` in a torch.cond branch)"),
    'builtin_minmax_number': ('UnsupportedConstruct',
        "Python's max() of tensors and numbers at m.py:3 `return max(x, 0)` returns the "
        "number or a tensor depending on the data, and an int it may return is not a "
        "floating-point value like the tensor: no one exported value behaves as eager's "
        "answer in both cases.\n"
        "Fix: compute on tensors, which gives a tensor in eager too: torch.clamp(x, min=n) "
        "for max(x, n), torch.maximum(x, y) for two tensors"),
    'vmap_not_per_slice': ('UnsupportedConstruct',
        "the function given to torch.vmap at m.py:3 `return torch.vmap(f)(x)` writes a tensor "
        "in place (aten.add_.Tensor): safetrace exports vmap by applying the function to each "
        "slice of the batch, and eager's vmap does this once for the whole batch (or raises), "
        "so the exported program would not compute what eager computes.\n"
        "Fix: keep in-place writes, random ops and tensor data reads out of the vmapped "
        "function (return the values and write them after vmap), or write the batched "
        "computation with ordinary tensor ops (a batch dim and broadcasting)"),
    'below_tracer': ('UnsupportedConstruct',
        "aten.expand.default reached PyTorch's dispatcher beneath safetrace's tracer at m.py:3 "
        "`return torch.vmap(f)(x)`: a function transform (torch.vmap, torch.func.grad / jacrev "
        "/ functional_call under a transform) or a tensor subclass's __torch_dispatch__ runs "
        "ops that an exported graph cannot record.\n"
        "Fix: write the batched computation with ordinary tensor ops (a batch dim and "
        "broadcasting instead of torch.vmap), or export the model without the transform"),
    'unknown_tensor_type': ('UnsupportedOpError',
        "x.type('torch.Float') at m.py:2 `x.type('torch.Float')`: not the name of a tensor "
        "type.\n"
        "Fix: pass a torch.dtype (x.type(torch.float32)) or a type name such as "
        "'torch.FloatTensor' or 'torch.cuda.HalfTensor'"),
    'script_module': ('ScriptModuleInput',
        "Exporting a ScriptModule is not supported: RecursiveScriptModule is a TorchScript "
        "module (the result of "
        "torch.jit.script or torch.jit.trace): it runs TorchScript's interpreter, which "
        "safetrace cannot follow (torch.export refuses it too).\n"
        "Fix: export the original nn.Module, before torch.jit.script / torch.jit.trace: "
        "st.export(model, args)"),
    'seeded_generator': ('UnsupportedConstruct',
        "the model seeds torch's default random generator while being exported "
        '(torch.manual_seed / torch.seed in forward); an exported graph cannot capture '
        "generator state, so its random numbers would not repeat eager's.\n"
        'Fix: seed outside the model, before calling it'),
    'state_traced_elsewhere': ('UnsupportedConstruct',
        "the model's state 'scale' is a FakeTensor, a tensor without data: another tracer "
        "(torch.export or torch.compile on another thread) is tracing this same model "
        "object and has swapped its parameters and buffers for fake ones, so the values "
        "an export would capture now are not the model's (or the model was built under "
        "a FakeTensorMode that is not active now).\n"
        "Fix: export when the other trace has finished, or export a copy: "
        "st.export(copy.deepcopy(model), args); a model built under a FakeTensorMode "
        "exports under that mode: `with fake_mode: st.export(model, args)`"),
    'shape_error': ('OpShapeError',
        'aten.mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)'),
    'shape_error_at': ('OpShapeError',
        'aten.mm: shapes cannot be multiplied\n'
        '  at m.py:9 `a @ b`'),
    'wrong_input_count': ('WrongInputCount',
        'expected 2 flattened inputs, got 3'),
    'wrong_structure': ('WrongStructure',
        "the inputs' structure differs from the exported one: input `xs` was a tuple of "
        '2 at export, got a list of 3.\n'
        'Fix: call with a tuple of 2'),
    'wrong_input_type': ('WrongInputType',
        'x: expected a Tensor, got int'),
    'wrong_dtype': ('WrongDtype',
        'x: expected dtype torch.float32, got torch.float64\n'
        'Fix: pass x.to(torch.float32)'),
    'wrong_rank': ('WrongRank',
        'x: expected a tensor with 2 dims (shape [s0, 4]), got 3 dims (shape [2, 3, 4])'),
    'static_size': ('WrongSize',
        'x.shape[1]: expected 4, got 5 (dim 1 was static at export; input shape [2, 5]).\n'
        'Fix: pass a tensor with x.shape[1] == 4, or export with x.shape[1] declared '
        "dynamic, e.g. dynamic_shapes={'x': {1: Dim.DYNAMIC}}"),
    'required_size': ('WrongSize',
        'x.shape[0] = 2, but the program requires 3 (from `x.view(3, 4)` at m.py:2) '
        '(input shape [2, 4])'),
    'related_size': ('WrongSize',
        "y.shape[0] = 7, but it must equal x.shape[0] = 6 (as declared: Dim('n')) (input "
        'shape [7])'),
    'out_of_range': ('OutOfRange',
        'x.shape[0] = 1, but it must be >= 2 (from `if x.shape[0] > 1:` at m.py:3)\n'
        'Fix: pass an input whose x.shape[0] is >= 2: the traced program does not work for '
        '1 (the line above says why)'),
    'out_of_declared_range': ('OutOfRange',
        "x.shape[0] = 65, but it must be <= 64 (as declared: Dim('b', max=64))\n"
        'Fix: pass an input whose x.shape[0] is <= 64, or export again with a declared range '
        'that admits 65 (max=65 in that Dim)'),
    'wrong_layout': ('WrongLayout',
        'x: expected a contiguous tensor, got strides (1, 3) and '
        'offset 0; the program asked for a memory layout (from `x.is_contiguous()` at '
        'm.py:4) and was traced for contiguous inputs.\n'
        'Fix: pass x.contiguous()'),
    'failed_condition': ('FailedCondition',
        'the inputs violate `x.shape[0] <= y.shape[1]`, required (from `y[:, :n]` at m.py:5)'),
    'wrong_constant': ('WrongConstant',
        'k: expected 2, got 3. Non-tensor inputs are specialized at export: the graph '
        'was built for k = 2.\n'
        'Fix: call with k=2, or export again with the new value'),
    'conversion_error': ('ConversionError',
        'node matmul (m.py:3): torch computes rank 3, safetrace rank 2\n'
        'Fix: report it; ep.module() runs the program without conversion'),
    'runtime_check_failed': ('RuntimeAssertionError',
        'expected n <= 4'),
    'load_error': ('LoadError',
        "contract.inputs[0].dtype: unknown dtype 'f99'"),
    'cond_output_kinds': ('OpShapeError',
        'torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: output 1 must be a tensor in every branch or an int in every branch (torch.cond takes tensors and ints, as torch.export does); the branches return:\n'
        '  true branch (m.py:1): int 3\n'
        '  false branch (m.py:2): f32[4]\n'
        'Fix: return the same kind from both branches: a tensor (torch.tensor(v), x.new_full((), v)) for a float or a bool, an int for a size'),
    'cond_size_output': ('UnsupportedOpError',
        "torch.cond at m.py:3 `torch.cond(p, f, g, (x,))`: output 1 is a dynamic size; torch.cond returns tensors and constant ints only (eager torch.cond and torch.export refuse a size once shapes are dynamic: 'unsupported branch return type'):\n"
        '  true branch (m.py:1): s0\n'
        '  false branch (m.py:2): s0 + 1\n'
        'Fix: return the size as a tensor (x.new_tensor(x.shape[0])) and read it after the cond with .item(), or compute it outside the cond: sizes are known there'),
    'torch_api_given_ours': ('UnsupportedInputError',
        'torch.export.save was handed a safetrace ExportedProgram, not a torch.export.ExportedProgram.\n'
        "Fix: convert it first: pass ep.to_torch() (torch's class, with the same input contract), e.g. torch.export.save(ep.to_torch(), path); st.save(ep, path) writes safetrace's own format"),
    'torch_api_given_ours_read': ('UnsupportedInputError',
        "`ExportedProgram.verifiers` is an attribute of torch.export.ExportedProgram; safetrace's ExportedProgram does not have it.\n"
        "Fix: convert it first: pass ep.to_torch() (torch's class, with the same input contract), e.g. torch.export.save(ep.to_torch(), path); st.save(ep, path) writes safetrace's own format"),
    'ours_given_torch_program': ('UnsupportedInputError',
        'st.export was handed a torch.export.ExportedProgram, not a model.\n'
        'Fix: export its module again: st.export(ep.module(), args, dynamic_shapes=...)'),
    'ours_given_torch_program_save': ('UnsupportedInputError',
        'st.save was handed a torch.export.ExportedProgram, not a program of safetrace (st.export).\n'
        "Fix: torch.export.save(ep, path) writes torch's program; st.save takes st.export's"),
    'unknown_higher_order_op': ('UnsupportedOpError',
        'the higher-order operator my_hop at m.py:4 `my_hop(f, x)`: safetrace traces torch.cond, while_loop, map, scan and hints_wrapper, not operators defined elsewhere.\n'
        "Fix: call the operator's body function directly while exporting (e.g. `if torch.compiler.is_exporting(): return body(x)`), or make it a custom op with a fake implementation (st.custom_op + st.register_fake)"),
    'unknown_higher_order_op_vmap': ('UnsupportedOpError',
        'Sin.apply under torch.vmap (the higher-order operator custom_function_call) at m.py:4 `torch.vmap(Sin.apply)(x)`: a function transform over an autograd.Function cannot be traced into an exported graph.\n'
        'Fix: call Sin.apply on the batched tensor (its forward written for a batch dim) instead of under torch.vmap, or export without the transform'),
    'collective_async': ('UnsupportedOpError',
        'torch.distributed.all_reduce(..., async_op=True) at m.py:5 `dist.all_reduce(y, async_op=True)`: it returns a Work handle to wait on, which an exported graph cannot hold.\n'
        'Fix: call it with async_op=False (the graph waits right after it), or use torch.distributed._functional_collectives, whose results are waited on when first used'),
    'traced_subclass': ('UnsupportedOpError',
        'a TwoTensor built from traced tensors at m.py:2 `TwoTensor(x, x + 1).sin()`: a tensor subclass made inside the exported code cannot be recorded (its inner tensors are values of the graph, not data).\n'
        'Fix: pass the TwoTensor in as an input (a subclass input is traced through its operations), or compute on its plain tensors inside the exported code'),
    'dynamic_int_type': ('WrongInputType',
        'n: expected an int (it was declared dynamic), got float'),
    'dynamic_int_relation': ('WrongSize',
        'length = 7, but it must equal 10 - start = 8 (from `x.narrow(0, start, length)` at m.py:3)'),
}
CASES.update(cases_library.CASES)
GOLDEN.update(cases_library.GOLDEN)

# torchbind objects (trace/torchbind.py)
CASES['torchbind_call'] = lambda: E.torchbind_call(
    "add_tensor", "__torch__.torch.classes.ns._Foo", "m.py:4 `return self.foo.add_tensor(x)`")
GOLDEN['torchbind_call'] = ('ScriptModuleInput', "m.py:4 `return self.foo.add_tensor(x)` calls the method `add_tensor` of a TorchScript custom class object (`__torch__.torch.classes.ns._Foo`, a torchbind class: C++ code outside PyTorch's operators) that no module of the exported model holds as an attribute and no input of the program is: safetrace records such a call as torch.export does, a call_torchbind node on the object's placeholder, so the object must be part of the model or an input (one made in forward, or reached through a global, is not).\nFix: hold the object as an attribute of a module of the model (self.obj = obj in __init__, then self.obj.add_tensor(...) in forward), or pass it as an input")
CASES['torchbind_no_fake'] = lambda: E.torchbind_no_fake(
    "add_tensor", "__torch__.torch.classes.ns._Foo", "m.py:4 `return self.foo.add_tensor(x)`")
GOLDEN['torchbind_no_fake'] = ('ScriptModuleInput', 'm.py:4 `return self.foo.add_tensor(x)` calls the method `add_tensor` of a TorchScript custom class object (`__torch__.torch.classes.ns._Foo`, a torchbind class: C++ code outside PyTorch\'s operators): no fake class is registered for it, so the shapes of its results are unknown (torch.export needs one too).\nFix: register one before exporting:\n@torch._library.register_fake_class("ns::_Foo")\nclass FakeFoo:\n    def __init__(self, ...): ...  # the state __obj_flatten__ gives\n    @classmethod\n    def __obj_unflatten__(cls, flat):\n        return cls(**dict(flat))\n    def add_tensor(self, ...):\n        ...  # tensors of the result\'s shapes, from the arguments\' and the state\'s')
CASES['torchbind_unshaped'] = lambda: E.torchbind_unshaped(
    "add", "__torch__.torch.classes.ns._Foo", "m.py:4 `return x * self.foo.add(3)`",
    "its fake returns int, not tensors")
GOLDEN['torchbind_unshaped'] = ('ScriptModuleInput', "m.py:4 `return x * self.foo.add(3)` calls the method `add` of a TorchScript custom class object (`__torch__.torch.classes.ns._Foo`, a torchbind class: C++ code outside PyTorch's operators), shaped by its registered fake class, and its fake returns int, not tensors: safetrace needs the fake to return tensors (or None) whose sizes come from the arguments and the object's state (a number would be fixed at its export value).\nFix: give the fake class a method `add` that returns tensors of the result's shapes (and __obj_unflatten__), or compute a number in forward with tensor ops")
CASES['torchbind_save'] = lambda: E.torchbind_save(["obj_foo"], "__torch__.torch.classes.ns._Foo")
GOLDEN['torchbind_save'] = ('ScriptModuleInput', "st.save cannot write obj_foo (`__torch__.torch.classes.ns._Foo`, a TorchScript custom class object): safetrace's file format holds tensors and an allowlisted graph only, and no form of such an object is on the allowlist (loading one would run its class's own deserialization on the file's bytes).\nFix: keep the object out of the saved program (compute its method with tensor ops or a custom op), or save torch's program, which stores the object with its class's __getstate__, for trusted files only: torch.export.save(ep.to_torch(), path)")
# (a builder of errors/load.py, which the errors namespace does not re-export)
CASES['unlisted_op'] = lambda: load_errors.unlisted_op("node 'y'", "torch.ops.aten.clip.default")
GOLDEN['unlisted_op'] = ('LoadError', "node 'y': calls torch.ops.aten.clip.default, which safetrace's exporter does not record: the file was not written by safetrace's st.save, or needs a newer safetrace\nFix: if a newer safetrace wrote it, load it with that version; a program whose operator has a shape rule you registered (st.register_shape_rule) loads once the rule is registered")
CASES['cuda_device'] = lambda: load_errors.cuda_device("node 'z': aten.zeros.default argument 'device'", "cuda:0")
GOLDEN['cuda_device'] = ('LoadError', "node 'z': aten.zeros.default argument 'device': names the device cuda:0: calling the program would start CUDA (its runtime, memory on the GPU), which st.load allows only when asked\nFix: if the program was exported on a GPU and you trust the file, st.load(path, allow_cuda=True)")
CASES['cuda_absent'] = lambda: load_errors.cuda_absent("cuda:127", 2)

# a size split whose sides cannot be joined (exporter/splits.py, relation_splits.py)
CASES['sides_unjoined'] = lambda: E.sides_unjoined(E.declared_space([E.Violation(
    "x.shape[1] (Dim('d'))", "was specialized to >= 3 (from `if x.shape[1] >= y.numel():` "
    "at m.py:2).", "narrow it: Dim('d', min=3)")], "    dynamic_shapes = {'x': (None, 3)}"),
    "output 0 is int64 of rank 2 on one side, bool of rank 2 on the other")
GOLDEN['sides_unjoined'] = ('DeclaredSpaceViolation', "the traced program does not work for the whole declared input space (1 problem; in torch.export's words: Constraints violated (d)!):\n  - x.shape[1] (Dim('d')) was specialized to >= 3 (from `if x.shape[1] >= y.numel():` at m.py:2).\n    Fix: narrow it: Dim('d', min=3)\nBoth sides of that branch were traced (a size split): output 0 is int64 of rank 2 on one side, bool of rank 2 on the other. One graph returns one dtype and rank per output, a torch.cond's branches too, so no program holds both: narrow the Dim as below, or make both sides return the same dtype and number of dims (a `.to(dtype)`, a `reshape`), which the export then splits on.\nSuggested fix (all problems at once):\n    dynamic_shapes = {'x': (None, 3)}")
GOLDEN['cuda_absent'] = ('RuntimeAssertionError', "the loaded program names the device cuda:127, but this process has 2 CUDA devices (cuda:0 to cuda:1)\nFix: run the program where that device exists, or re-export it on the device it will run on and save it again")
CASES['meta_device'] = lambda: load_errors.meta_device("node 'z': aten.zeros.default argument 'device'")
GOLDEN['meta_device'] = ('LoadError', "node 'z': aten.zeros.default argument 'device': names the meta device: a tensor made there has no data (a call on real tensors would fail where it is read, or return it in place of the values the program computes)\nFix: export on the device the program will run on: a model made on meta, model.to_empty(device='cpu') with example inputs on the CPU, then st.save(ep, path, weights=False) and st.load(path, weights=...)")
CASES['recorded_dtype'] = lambda: load_errors.recorded_dtype("getitem", "sth.halves.default", "a float32 tensor", "a float64 tensor")
GOLDEN['recorded_dtype'] = ('RuntimeAssertionError', "at this call the loaded program's node 'getitem' (sth.halves.default) returned a float32 tensor, but the file records a float64 tensor there: the file was modified or written by another version of safetrace\nFix: re-export the program and save it again (st.save(st.export(model, args, ...), path))")
CASES['view_outside'] = lambda: load_errors.view_outside("v", "aten.as_strided", (0, 7), (0, 3, False))
GOLDEN['view_outside'] = ('RuntimeAssertionError', "at this call the loaded program's node 'v' (aten.as_strided) would view storage elements 0..7, outside the tensor it is given (elements 0..3): a loaded graph reads and writes only the memory of the tensors it is given\nFix: pass a tensor of its own memory (x.contiguous() or x.clone()), or, if you trust the file, run the program on such a copy of your data")
CASES['operand_refused'] = lambda: load_errors.operand_refused("ctc", "aten.ctc_loss", "a target class outside [0, 4) (log_probs has 4 classes; its kernel reads them unchecked)")
GOLDEN['operand_refused'] = ('RuntimeAssertionError', "at this call the loaded program's node 'ctc' (aten.ctc_loss) would run on a target class outside [0, 4) (log_probs has 4 classes; its kernel reads them unchecked)\nFix: pass operands the operator is defined for (eager torch would read out of bounds, or crash, on these)")
CASES["compiled_without_zero"] = lambda: E.compiled_without_zero(
    "z.shape[0] (n)", "min(n, 1)", "AOTInductor")
CASES["compiled_specialized"] = lambda: E.compiled_specialized(
    "AOTInductor", "[(5, 13)]", "[(5, 10, 7)]", "[(5, 13, 7)]")
CASES['script_node'] = lambda: E.script_node("encoder", "RecursiveScriptModule", "forward", "prim::RaiseException", "m.py:5 `return self.encoder(x)`")
GOLDEN['script_node'] = ('ScriptModuleInput', "m.py:5 `return self.encoder(x)` calls the TorchScript method `forward` of the submodule `encoder` (RecursiveScriptModule, the result of torch.jit.script or torch.jit.trace); safetrace follows its graph node by node, and its node `prim::RaiseException` is not one it follows (ATen operators, operators on numbers, constants, attributes read, lists, tuples and dicts, interface method calls, prim::If and prim::Loop are).\nFix: put the original nn.Module back before exporting: model.encoder = <the module before torch.jit.script>")
CASES['tensor_attribute'] = lambda: E.tensor_attribute("get_elem_a", "m.py:3 `y.get_elem_a()`")
GOLDEN['tensor_attribute'] = ('UnsupportedOpError', "the exported code reads `.get_elem_a` of a tensor at m.py:3 `y.get_elem_a()`, an attribute no plain tensor has: a tensor subclass's own attribute or method (a subclass input is traced as a plain tensor of the graph, its ops dispatched to the subclass when the program runs, so its attributes are not known while tracing).\nFix: keep `.get_elem_a` out of the exported forward: pass the subclass's inner tensors as inputs, or make it a parameter or buffer of the model (traceable wrapper subclass state is traced through its __torch_dispatch__)")
CASES['preserved_in_function'] = lambda: E.preserved_in_function()
GOLDEN['preserved_in_function'] = ('UnsupportedInputError', 'preserve_module_call_signature names submodules, but the exported callable is a function, not an nn.Module.\nFix: export the nn.Module that owns them')
CASES['preserved_unknown'] = lambda: E.preserved_unknown("layer9", "Net", ["layer1", "layer2"])
GOLDEN['preserved_unknown'] = ('UnsupportedInputError', 'preserve_module_call_signature names \'layer9\', which is not a submodule of Net (its submodules include [\'layer1\', \'layer2\']).\nFix: name submodules by their path in model.named_modules(), e.g. "encoder.layer.0"')
CASES['preserved_subclass'] = lambda: E.preserved_subclass("bar input", "TwoTensor", ["a", "b"],
                                                          "bar", "p_param")
GOLDEN['preserved_subclass'] = ('UnsupportedInputError', "It looks like p_param is a tensor subclass: the bar input is a TwoTensor (a tensor subclass), which a preserved module call signature cannot hold: safetrace traces a subclass into its inner tensors (as torch.export's inference IR desugars it), so the call of 'bar' would take more tensors than its signature names.\nFix: leave 'bar' out of preserve_module_call_signature, or pass 'bar' plain tensors (the subclass's inner tensors `.a`, `.b`, or a plain tensor computed from them)")
CASES['preserved_value'] = lambda: E.preserved_value("layer1 input", "set", "layer1")
GOLDEN['preserved_value'] = ('UnsupportedInputError', "the layer1 input is a set, which a preserved module call signature cannot hold (tensors, sizes and Python constants only).\nFix: leave 'layer1' out of preserve_module_call_signature")
GOLDEN["compiled_without_zero"] = ("CompiledSpecialized", "z.shape[0] (n) is 0: the program takes it, but AOTInductor compiled a value of min(n, 1) rows or elements as if z.shape[0] (n) were at least 1 (its sizes are never 0), so this package refuses z.shape[0] (n) == 0 rather than read outside its input.\nFix: call the program itself (ep.module()) for inputs with z.shape[0] (n) == 0, or export the dim with min=1 where 0 never occurs")
GOLDEN["compiled_specialized"] = ("CompiledSpecialized", "AOTInductor compiled a different program: called with input shapes [(5, 13)] (inside the declared space) the compiled package returns [(5, 10, 7)] where the exported program returns [(5, 13, 7)]. The compiler specialized a dynamic dim to the example's size (it decomposed an op into a loop over that dim, or assumed what the program does not), and such calls pass the package's input checks (they are inside the declared space), so it would answer them silently wrong.\nFix: export the dims the mismatch names as static (leave them out of dynamic_shapes) and compile one package per size, or run the program itself (ep.module())")
CASES["wrong_device"] = lambda: E.wrong_device("x", "cuda", "cpu")
GOLDEN["wrong_device"] = ("WrongDevice", "x: the package was compiled for cpu tensors, got a tensor on cuda\nFix: pass x.to('cpu')")
CASES["package_unchecked"] = lambda: E.package_unchecked(
    "st.to_aoti", "the compiled graph takes 2 tensors where the program takes 3")
GOLDEN["package_unchecked"] = ("PackageUnchecked", "st.to_aoti could not place the program's input checks in the package: the compiled graph takes 2 tensors where the program takes 3; without them the package would run (and read out of bounds on) inputs the program refuses.\nFix: compile ep.to_torch() with torch._inductor.aoti_compile_and_package and check every input with ep.check_inputs(args) before calling the package")

CASES['torch_collection_refused'] = lambda: E.torch_collection_refused(
    "AdditionalInputs", ValueError("inputs differ: (2.0, 3.0)"))
GOLDEN['torch_collection_refused'] = ('SpecExampleError', "dynamic_shapes (torch.export.AdditionalInputs) could not be turned into a spec: ValueError: inputs differ: (2.0, 3.0)\nFix: fix the examples as the message says, or use st.AdditionalInputs (the same API, with safetrace's messages)")

CASES['torchbind_unshaped_op'] = lambda: E.torchbind_unshaped(
    "_TorchScriptTesting.queue_size.default", "__torch__.torch.classes._TorchScriptTesting._TensorQueue",
    "m.py:4 `n = torch.ops._TorchScriptTesting.queue_size(self.tq)`", "its fake returns int, not tensors")
GOLDEN['torchbind_unshaped_op'] = ('ScriptModuleInput', "m.py:4 `n = torch.ops._TorchScriptTesting.queue_size(self.tq)` calls the custom op `_TorchScriptTesting.queue_size.default` on a TorchScript custom class object (`__torch__.torch.classes._TorchScriptTesting._TensorQueue`, a torchbind class: C++ code outside PyTorch's operators), shaped by its registered fake class, and its fake returns int, not tensors: safetrace needs the fake to return tensors (or None) whose sizes come from the arguments and the object's state (a number would be fixed at its export value).\nFix: register a fake for `_TorchScriptTesting.queue_size.default` (torch.library.register_fake) that returns tensors of the result's shapes, or compute a number in forward with tensor ops")

# tensor subclasses (trace/subclasses.py)
CASES['subclass_value'] = lambda: E.subclass_value("TwoTensor", ["a", "b"], "m.py:4 `return x + self.w`")
GOLDEN['subclass_value'] = ('SubclassValue', "a TwoTensor (a tensor subclass) is used at m.py:4 `return x + self.w` where the exported program needs a plain tensor: a program output, or an operand of torch.cond / a loop (safetrace traces a subclass through its __torch_dispatch__ into its inner tensors, so the subclass itself has no value in the graph).\nFix: return or pass plain tensors: the subclass's inner tensors (`.a`, `.b`), or a plain tensor computed from them")
CASES['subclass_dynamic'] = lambda: E.subclass_dynamic("TwoTensor", "aten.add.Tensor", "m.py:4 `return x + self.w`")
GOLDEN['subclass_dynamic'] = ('UnsupportedOpError', "aten.add.Tensor on a TwoTensor (a tensor subclass) at m.py:4 `return x + self.w` meets a dynamic size: safetrace runs the subclass's __torch_dispatch__ on its inner tensors, and that Python code (and torch's C++ beneath it) reads sizes as plain ints, which would fix a dynamic dim to the example's size without a check.\nFix: export the inputs that reach the subclass with static shapes (leave those dims out of dynamic_shapes), or compute on the subclass's inner tensors directly")
CASES['subclass_write'] = lambda: E.subclass_write("TwoTensor", "aten.add_.Tensor", "m.py:4 `self.w.add_(1)`")
GOLDEN['subclass_write'] = ('UnsupportedOpError', "aten.add_.Tensor at m.py:4 `self.w.add_(1)` writes in place into a TwoTensor parameter or buffer (a tensor subclass, traced as its inner tensors): the program cannot carry the write back into the subclass's inner tensors.\nFix: compute a new tensor instead of writing in place (y = x + 1, not x.add_(1)), or keep the written state as a plain buffer")
CASES['subclass_constant'] = lambda: E.subclass_constant("TwoTensor", "m.py:4 `return x + self.c`")
GOLDEN['subclass_constant'] = ('UnsupportedOpError', "a TwoTensor (a tensor subclass) used at m.py:4 `return x + self.c` is neither a parameter nor a buffer of the model (a plain attribute, a global or a closure's value): safetrace traces subclass state through its inner tensors only when the program owns it.\nFix: register it on its module: self.register_buffer(name, value) for the TwoTensor (or torch.nn.Parameter(value) for a weight)")
CASES['subclass_torch_function'] = lambda: E.subclass_torch_function("ScaledTensor", "scale")
GOLDEN['subclass_torch_function'] = ('UnsupportedInputError', "scale is a ScaledTensor, a tensor subclass that overrides __torch_function__: its Python override runs above torch's dispatcher, where safetrace's tracer records calls, so the exported graph would skip what the override does.\nFix: make ScaledTensor a traceable wrapper subclass (__tensor_flatten__ / __tensor_unflatten__ with __torch_dispatch__, and __torch_function__ = torch._C._disabled_torch_function_impl), or pass a plain tensor (value.as_subclass(torch.Tensor))")
CASES['subclass_dispatch_failed'] = lambda: E.subclass_dispatch_failed("QTensor", "aten.mm.default", "m.py:4 `return x @ self.w`", NotImplementedError("no kernel for aten.mm"))
GOLDEN['subclass_dispatch_failed'] = ('UnsupportedOpError', 'QTensor.__torch_dispatch__ raised NotImplementedError: no kernel for aten.mm while safetrace ran it for aten.mm.default at m.py:4 `return x @ self.w` on traced inner tensors (metadata-only tensors: its Python code may not read their data or storage).\nFix: keep aten.mm.default on a QTensor out of the exported forward (compute on its inner tensors), or make its __torch_dispatch__ use only torch ops on the inner tensors')
CASES['subclass_save'] = lambda: E.subclass_save(["p", "b"], "TwoTensor")
GOLDEN['subclass_save'] = ('UnsupportedInputError', "st.save cannot write p, b (TwoTensor, a tensor subclass): safetrace's file format holds plain tensors only.\nFix: save torch's program instead, which keeps tensor subclass state: torch.export.save(ep.to_torch(), path)")
CASES['subclass_input_mixed'] = lambda: E.subclass_input_mixed("x", "TwoTensor", "TwoTensor", "aten.add.Tensor", "m.py:4 `return TwoTensor(y, y) + x`")
GOLDEN['subclass_input_mixed'] = ('UnsupportedInputError', "aten.add.Tensor on a TwoTensor at m.py:4 `return TwoTensor(y, y) + x` runs its __torch_dispatch__ while tracing, but input x is a TwoTensor: a tensor subclass input is traced as a plain tensor and dispatches when the program runs, so values computed from it would meet the traced dispatch as subclasses the trace did not see.\nFix: pass x's inner tensors as inputs instead of the TwoTensor (or keep the subclass values apart from it)")
CASES['subclass_output_conversion'] = lambda: E.subclass_output_conversion("TwoTensor")
GOLDEN['subclass_output_conversion'] = ('ConversionError', "the program rebuilds a TwoTensor (a tensor subclass) from its inner tensors, but this process has not exported that class, so torch's graph cannot call its __tensor_unflatten__.\nFix: export the model again in this process (the module defining TwoTensor imported), or run the program with ep.module(), which returns the TwoTensor")

CASES['subclass_call_decomposed'] = lambda: E.subclass_call_decomposed('bar', 'p_param', 'input')
GOLDEN['subclass_call_decomposed'] = ('ConversionError', "It looks like p_param is a tensor subclass. Preserving submodule that takes subclass parameter is not supported in inference IR because we desugar them, resulting in more tensors: the preserved call 'bar' takes it, and run_decompositions replaces a subclass by its inner tensors, so the call's signature would no longer name one value.\nFix: leave 'bar' out of preserve_module_call_signature, or use the program undecomposed (ep.to_torch() as it is, or ep.module())")
CASES['subclass_call_decomposed_at'] = lambda: E.subclass_call_decomposed('bar', 'rebuild', 'output')
GOLDEN['subclass_call_decomposed_at'] = ('ConversionError', "The preserved call 'bar' returns a tensor subclass (rebuild): run_decompositions replaces a subclass by its inner tensors, so the call's signature would no longer name one value (torch.export's run_decompositions lets it through, the call's output then naming one inner tensor, which is not the call's interface).\nFix: leave 'bar' out of preserve_module_call_signature, or use the program undecomposed (ep.to_torch() as it is, or ep.module())")

CASES['carried_layout'] = lambda: E.carried_layout("m.py:3", "m.py:3 `lambda i, t: (i + 1, t + 1)`", 1)
GOLDEN['carried_layout'] = ('BranchMismatch', "while_loop at m.py:3: carried tensor 1, or what body_fn (m.py:3 `lambda i, t: (i + 1, t + 1)`) returns for it, is a view (transpose, slice, diagonal, ...) or computed from one; eager's while_loop raises where the body's output has other strides than the carried input, and safetrace does not trace strides.\nFix: carry contiguous tensors: pass x.contiguous() and return t.contiguous() from body_fn")
CASES["caught_while_tracing"] = lambda: E.caught_while_tracing(
    E.check_false("m.py:4 `torch._check(x.shape[0] > 5)`", None), "m.py:9")
GOLDEN["caught_while_tracing"] = ("CaughtWhileTracing", "safetrace refused a call: the check at m.py:4 `torch._check(x.shape[0] > 5)` is false while exporting: its condition does not depend on tensor data and already evaluates to False for the example inputs (and every input of the same static sizes), so the program would fail it on every call\n  This was raised while tracing inside a `try` block, and the code at m.py:9 caught it; eager may compute the call at these sizes (or raise an error of another class), so the `except` side is not known to be what eager runs there\nFix: correct the check, or export with example inputs (and a spec) for which it holds\n     (the export must not go down the `except` side: fix the cause, or make the call outside the `try` block at m.py:9; if eager computes the call at these sizes and no fix is given, the error is safetrace's: please report it)")
CASES["caught_while_tracing_at"] = lambda: E.caught_while_tracing(TypeError("bad"), "m.py:9")
GOLDEN["caught_while_tracing_at"] = ("CaughtWhileTracing", "tracing a call raised TypeError: bad\n  This was raised while tracing inside a `try` block, and the code at m.py:9 caught it; eager may compute the call at these sizes (or raise an error of another class), so the `except` side is not known to be what eager runs there\nFix: (the export must not go down the `except` side: fix the cause, or make the call outside the `try` block at m.py:9; if eager computes the call at these sizes and no fix is given, the error is safetrace's: please report it)")

# a declared dim pinned by a count of Python values (meta/pins.py)
CASES['count_pinned'] = lambda: E.declared_space([E.count_pinned("images.shape[0] (Dim('batch'))", 'images.shape[0]', 2, ' (from `return self.detector(list(images))` at m.py:5)', 'unbind')], "    dynamic_shapes = {'images': (2, None, Dim.AUTO, Dim.AUTO)}")
GOLDEN['count_pinned'] = ('DeclaredSpaceViolation', "the traced program does not work for the whole declared input space (1 problem; in torch.export's words: Constraints violated (batch)!):\n  - images.shape[0] (Dim('batch')) was specialized to 2 (from `return self.detector(list(images))` at m.py:5): that line makes one Python value per index of this dim (`unbind`, `list(x)` or `for t in x`). A program has one Python structure (its loops, lists and outputs), so this count cannot stay symbolic; no size split can keep it either, as each size is another structure (torch.export specializes it too).\n    Fix: export one program per size: images.shape[0] -> 2 (or Dim.AUTO, which specializes it); or keep the dim inside tensors: run the per-item code under torch._higher_order_ops.map over images and return fixed-size tensors (pad a variable count, with a mask): docs/deploying.md#batched-detectors\nSuggested fix (all problems at once):\n    dynamic_shapes = {'images': (2, None, Dim.AUTO, Dim.AUTO)}")

# a declared range past a fixed table's size: the model fails in eager there
# (exporter/dim_relations.py with exporter/eager_raises.fails_in_eager)
CASES['eager_fails'] = lambda: E.declared_space([E.eager_fails("x.shape[1] (Dim('dec'))", 'dec', 'dec >= 64', 'x.shape[1] == min(x.shape[1], 63)', ' (from `return x + self.table[: x.shape[1]]` at m.py:7)', 'dec <= 63', "dec = Dim('dec', max=63)")], "    from safetrace import Dim\n    dec = Dim('dec', max=63)\n    dynamic_shapes = {'x': (None, dec, None)}")
GOLDEN['eager_fails'] = ('DeclaredSpaceViolation', "the traced program does not work for the whole declared input space (1 problem; in torch.export's words: Constraints violated (dec)!):\n  - x.shape[1] (Dim('dec')) includes sizes where the model itself fails in eager: for dec >= 64, `return x + self.table[: x.shape[1]]` at m.py:7 raises, in eager as in any program, as it needs `x.shape[1] == min(x.shape[1], 63)` (an op's own size check, not a branch; a size capped by a fixed tensor, such as a slice of a position table, is the usual cause). Eager runs dec <= 63 only.\n    Fix: dec = Dim('dec', max=63)  (the sizes eager runs)\nSuggested fix (all problems at once):\n    from safetrace import Dim\n    dec = Dim('dec', max=63)\n    dynamic_shapes = {'x': (None, dec, None)}")

# an index check moved before the first state write (exporter/index_checks.py)
CASES['index_out_of_bounds'] = lambda: E.index_out_of_bounds(
    "m.py:5 `self.cache.index_copy_(0, idx, x)`", "pos[0]", "x.shape[0]", 0, 8)
GOLDEN['index_out_of_bounds'] = ('IndexOutOfBounds', "m.py:5 `self.cache.index_copy_(0, idx, x)` takes the indices pos[0] to pos[0] + x.shape[0] - 1, which must lie in [0, 8): the program refused the call before writing any state (eager raises IndexError there, after writing state)\nFix: call with pos[0] >= 0 and pos[0] + x.shape[0] <= 8")
CASES['index_out_of_bounds_at'] = lambda: E.index_out_of_bounds(
    "m.py:5 `self.cache[idx] = x`", "pos[0]", "1", -8, 8, (8, 1))
GOLDEN['index_out_of_bounds_at'] = ('IndexOutOfBounds', "m.py:5 `self.cache[idx] = x` takes the indices pos[0] (at this call pos[0] = 8), which must lie in [-8, 8): the program refused the call before writing any state (eager raises IndexError there, after writing state)\nFix: call with pos[0] >= -8 and pos[0] + 1 <= 8")

@pytest.mark.parametrize("name", sorted(CASES))
def test_builder_renders_its_golden_text(name):
    err = CASES[name]()
    cls, text = GOLDEN[name]
    assert type(err).__name__ == cls
    assert str(err) == f"{text}\nSee docs/errors.md#{err.kind}"
    assert err.cause and (err.fix == "" or text.count(err.fix) == 1)


def test_every_builder_and_kind_is_pinned_and_documented():
    builders = {n for n, f in vars(E).items() if inspect.isfunction(f)
                and f.__module__.startswith(E.__name__) and not n.startswith("_")
                and inspect.signature(f).return_annotation not in ("str", "None")}
    pinned = {n.removesuffix("_at").removesuffix("_inside").removesuffix("_no_meta")
              for n in CASES}
    assert builders <= pinned, builders - pinned
    classes = [c for c in vars(E).values()
               if isinstance(c, type) and issubclass(c, E.StructuredError)]
    built = {type(CASES[n]()) for n in CASES}
    families = {c for c in classes if c.__subclasses__()}
    assert set(classes) - {E.StructuredError} <= built | families
    kinds = {c.kind for c in classes} - {"error"}
    docs = (pathlib.Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    missing = [k for k in kinds if f"`{k}`" not in docs]
    assert not missing, f"docs/errors.md does not list {missing}"


def test_fields_say_where():
    err = CASES["static_size"]()
    assert (err.where.input, err.where.dim) == ("x", 1)
    assert isinstance(err, st.InputMismatchError) and isinstance(err, ValueError)
    err = CASES["data_dependent_decision"]()
    assert err.where.source == "m.py:4 `if n > 0:`" and err.details["expr"] == "u0 > 0"
    assert isinstance(err, st.DataDependentError) and isinstance(err, st.ExportError)
    assert CASES["shape_error_at"]().where.source == "m.py:9 `a @ b`"


def test_cause_and_fix_are_separate_fields_never_split_from_text():
    err = st.UnsupportedOpError("cannot do it.", fix="do this instead")
    assert (err.cause, err.fix, str(err)) == (
        "cannot do it.", "do this instead",
        "cannot do it.\nFix: do this instead\nSee docs/errors.md#unsupported-op")
    err = st.UnsupportedOpError("cannot do it.\nFix: do this instead")  # a wrapped text
    assert (err.cause, err.fix) == ("cannot do it.\nFix: do this instead", "")
    assert st.LoadError("bad file").fix == ""


def _kinds() -> set[str]:
    return {c.kind for c in vars(E).values()
            if isinstance(c, type) and issubclass(c, E.StructuredError)}


def test_every_message_links_its_kind_and_every_kind_has_its_anchor():
    """The last line of every message is its docs entry, ``docs/errors.md#<kind>``, and
    the page holds that anchor (``<a id="<kind>"></a>``) for every kind of the catalogue."""
    docs = (pathlib.Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    anchors = set(re.findall(r'<a id="([a-z-]+)"></a>', docs))
    missing = sorted(_kinds() - anchors)
    assert not missing, f"docs/errors.md has no anchor for {missing}"
    for name, build in CASES.items():
        err = build()
        page, _, anchor = str(err).splitlines()[-1].removeprefix("See ").partition("#")
        assert (page, anchor) == ("docs/errors.md", err.kind), name
        assert anchor in anchors, name
    assert str(E.args_not_tuple(1)).endswith("\nSee docs/errors.md#args-not-tuple")
    for kind in anchors:  # an anchor just above the kind's own section (or the families')
        after = docs.split(f'<a id="{kind}"></a>', 1)[1].lstrip()
        assert after.startswith(f"## `{kind}`") or after.startswith(f"`{kind}`"), kind


def test_errors_survive_pickling():
    for name in ("static_size", "declared_space", "missing_shape_rule"):
        err = CASES[name]()
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert back.where == err.where


def test_runtime_classes_are_unrelated():
    assert not issubclass(st.RuntimeAssertionError, st.InputMismatchError)
    assert issubclass(st.RuntimeAssertionError, RuntimeError)
    assert not issubclass(st.InputMismatchError, st.ExportError)


def test_explain_reports_the_fields_of_each_error():
    import torch

    def f(x):
        n = x.long().sum().item()
        if n > 0:
            return x.view(3, 4)
        return x

    report = st.explain(f, (torch.ones(3, 4),), dynamic_shapes={"x": {0: st.Dim("rows")}})
    codes = {p.code for p in report.problems}
    assert {"data-dependent-decision", "declared-space"} <= codes, report
    dd = next(p for p in report.problems if p.code == "data-dependent-decision")
    assert dd.where.endswith("`if n > 0:`") and "st.check(" in dd.fix
    assert "\nFix:" not in dd.message
CASES['script_method_call'] = lambda: E.script_method_call(
    "_part", "m.py:5 `return self.hidden[0]._part(x)`")
GOLDEN['script_method_call'] = ('ScriptModuleInput', "m.py:5 `return self.hidden[0]._part(x)` calls the TorchScript method `_part` of a module that is not one of the exported model's torch.jit.ScriptModule subclasses (written with @torch.jit.script_method): it runs TorchScript's interpreter, which safetrace cannot follow\nFix: call the method of the original nn.Module (before torch.jit.script), or make the ScriptModule subclass a submodule of the exported model")
CASES['draft_result'] = lambda: E.draft_result(
    "lib::op", 0, "is not dense in memory", "m.py:3 `return op(x)`")
GOLDEN['draft_result'] = ('FakeKernelMismatch', "custom op lib::op has no fake kernel, and its output 0 is not dense in memory when its kernel runs on the example inputs (torch._functorch.config.fake_tensor_propagate_real_tensors is set), so no fake kernel can be inferred from it.\n  at m.py:3 `return op(x)`\nFix: register a fake kernel: @torch.library.register_fake('lib::op'), or return a new contiguous tensor from the kernel (.clone())")
CASES['state_name_taken'] = lambda: E.state_name_taken("graph.weight", "graph", "parameter")
GOLDEN['state_name_taken'] = ('UnsupportedInputError', "the model's parameter `graph.weight` is held under the name `graph`, an attribute of the GraphModule that ep.module() and ep.to_torch().module() build (torch.fx's `graph`): the program's state cannot be registered there (torch.export's module() fails on it too).\nFix: rename the attribute before exporting, e.g. self.graph_ = self.graph (and `del self.graph`) in __init__, reading self.graph_ in forward, and rename the matching keys of saved state dicts")


def _tf_padding_refusal() -> st.ConstraintViolationError:
    from tests.errors.tf_padding_model import TfSamePadding
    spec = ({2: st.Dim("h", min=8, max=64)},)
    with pytest.raises(st.ConstraintViolationError) as info:
        st.export(TfSamePadding(), (torch.randn(1, 2, 16, 5),), dynamic_shapes=spec)
    return info.value


def test_residue_conditions_of_tf_same_padding_combine_into_one_derived_dim():
    """Three stride-2 convs padding by their input's parity (transformers' MobileNetV2):
    `h % 2 == 0`, `(h//2) % 2 == 0`, `(h//4) % 2 == 0` together are `h % 8 == 0`, so the fix
    derives h = 8*_h over the declared range (it offered h = 2*_h with _h pinned to the
    example, one size, before).  The fix pasted: tests/errors/test_papercuts.py."""
    assert str(_tf_padding_refusal()) == (
        "the traced program does not work for the whole declared input space (1 problem; in "
        "torch.export's words: Constraints violated (h)!):\n"
        "  - x.shape[2] (Dim('h', min=8, max=64)) must satisfy `x.shape[2] % 2 == 0` (from "
        "`pad = 1 if height % 2 == 0 else 2` at tf_padding_model.py:22) (torch.export's "
        "words: Not all values of h = x.shape[2] in the specified range satisfy the "
        "generated guard x.shape[2] % 2 == 0), which fails for h = 9, inside Dim('h', min=8, "
        "max=64)'s range [8, 64]; it holds when h is a multiple of 2; with the other "
        "conditions on h, it holds for the multiples of 8.\n"
        "    Fix: derive the dim: h = 8*_h with _h = Dim('_h', min=1, max=8); or declare h "
        "as Dim.DYNAMIC(min=8, max=64) to accept it as a run-time check of the inputs\n"
        "Suggested fix (all problems at once):\n"
        "    from safetrace import Dim\n"
        "    _h = Dim('_h', min=1, max=8)\n"
        "    dynamic_shapes = {'x': (None, None, 8*_h, None)}\n"
        "See docs/errors.md#declared-space\n\n"
        "Suggested fixes:\n"
        "  _h = Dim('_h', min=1, max=8)\n"
        "  h = 8*_h")
