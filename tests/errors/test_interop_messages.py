"""Golden tests of the conversion errors (safetrace/errors/interop.py): the rendered text of
every builder, its kind, and one raised through ``ep.to_torch(verify=True)``."""

from __future__ import annotations

import pickle

import pytest
import torch

import safetrace as st
from safetrace.errors import interop as EI
from safetrace.serialize import value_sizes
from tests.interop.harness import wrong_rule_program

CASES = {
    "unrepresentable_call": lambda: EI.unrepresentable_call("print_1", "print", " (from m.py:3 `print(x)`)"),
    "unrepresentable_call_loaded": lambda: EI.unrepresentable_call("check_2", value_sizes.check, " (from m.py:3 `y.nonzero()`)"),
    "not_a_subgraph": lambda: EI.not_a_subgraph("get_attr_1", "weight"),
    "rank_differs": lambda: EI.rank_differs("t_1", " (from m.py:3 `x.t()`)", 2, 3),
    "dim_differs": lambda: EI.dim_differs("t_1", " (from m.py:3 `x.t()`)", 0, "s0", 5),
    "torch_assumed": lambda: EI.torch_assumed("`x.shape[0] <= 15` (s0: Dim 'batch')"),
    "kernel_failed_custom": lambda: EI.kernel_failed("thrice_1", "deploytest::thrice", "", "RuntimeError: no fake", "custom"),
    "kernel_failed_control_flow": lambda: EI.kernel_failed("cond_1", "cond", "", "RuntimeError: branches differ", "control-flow"),
    "kernel_failed_aten": lambda: EI.kernel_failed("add_1", "aten::add.Tensor", "", "RuntimeError: boom", "aten"),
    "split_cond_failed": lambda: EI.split_cond_failed("cond", "", "RuntimeError: boom", "size split on `x_shape_0 >= 2` (from `if x.shape[0] == 1:` at m.py:5)"),
    "preserved_crossing": lambda: EI.preserved_crossing("layer1@1", "relu_1", " (from m.py:9)", "reads x_1, which is not one of its inputs"),
    "preserved_size": lambda: EI.preserved_size("view_1", "", "s0*4", "layer1"),
    "preserved_size_not_readable": lambda: EI.preserved_size_not_readable("inner", "s0**2"),
    "derived_not_increasing": lambda: EI.derived_not_increasing("x.shape[0]", "10 - d"),
    "unread_symbol": lambda: EI.unread_symbol("s3"),
    "no_torch_form": lambda: EI.no_torch_form("s0 ** 2"),
    "kernel_pinned": lambda: EI.kernel_pinned("max_pool1d", "aten.max_pool1d.default", " (from m.py:5 `F.max_pool1d(x, 2)`)", "Dim 'l' (x.shape[2]) to 7"),
    "dims_lost": lambda: EI.dims_lost("Dim 'l' (x.shape[2]) to 7"),
    "conversion_crashed": lambda: EI.conversion_crashed("KeyError: s3", "safetrace/interop/contract.py:453"),
    "decomposition_narrowed": lambda: EI.decomposition_narrowed("`a.shape[2] % 8 == 0`"),
    "retrace_pins": lambda: EI.retrace_pins("d3 to 1, d4 to [2, 4]", "st.to_onnx"),
    "retrace_specializes": lambda: EI.retrace_specializes("tensor_split", "aten.tensor_split.sections", " (at m.py:4 `x.tensor_split(2, 0)`)", "st.to_onnx"),
    "cond_not_retraceable": lambda: EI.cond_not_retraceable("cond", "", "size split on `2 <= d0 <= 8` (from `if x.shape[0] == 1:` at m.py:5)", "st.to_onnx", " (e.g. Dim('d0', min=2, max=8) for the split's side `2 <= d0 <= 8`)"),
    "folded_at_zero": lambda: EI.folded_at_zero("max_1", " (at m.py:4 `x.new_ones(max(x.shape[0], 1))`)", "n", "st.to_executorch"),
    "lowering_specialized": lambda: EI.lowering_specialized("st.to_executorch", "z.shape[0]", 3, "Eq(s0 % 2, 0)", 2, 2, "d0", True),
    "zero_sizes_not_convertible": lambda: EI.zero_sizes_not_convertible("max_1", " (at m.py:4 `x.new_ones(max(x.shape[0], 1))`)", "n", ValueError("boom\nmore")),
    "unbounded_merged_size": lambda: EI.unbounded_merged_size(" (at m.py:3 `return x.reshape(-1) * 3`)", "st.to_executorch"),
    "aliased_write": lambda: EI.aliased_write("index_add_", "aten.index_add_.default", " (at m.py:4 `v.index_add_(0, i, v[:1].expand(2, n))`)", "st.to_onnx"),
}

GOLDEN = {
    'retrace_specializes': "node tensor_split (aten.tensor_split.sections) (at m.py:4 `x.tensor_split(2, 0)`) splits a dynamic size into sections: st.to_onnx retraces the program through torch's decomposition of it, which picks the piece sizes by the example's remainder and drops that guard, so the deployed program would cut other sizes differently (ep.module() and ep.to_torch().module() compute eager's)\nFix: split by explicit sizes, as tensor_split does (for 2 sections: `k = (n + 1) // 2; a, b = x.split([k, n - k], dim)` with n = x.shape[dim]); or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'cond_not_retraceable': "node cond (cond) (safetrace's size split on `2 <= d0 <= 8` (from `if x.shape[0] == 1:` at m.py:5)): torch's cond cannot run its branches at each other's sizes and merge their outputs (a size that is, or may be, 0 on one side), so ep.to_torch() made its value from safetrace's shapes; st.to_onnx retraces the program through torch's cond, which would stop there (ep.module() and ep.to_torch().module() compute eager's)\nFix: declare the split Dim's range to the side you deploy (e.g. Dim('d0', min=2, max=8) for the split's side `2 <= d0 <= 8`), so the export traces one graph; or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'folded_at_zero': "node max_1 (at m.py:4 `x.new_ones(max(x.shape[0], 1))`) computes a size (or a condition on sizes) that torch's symbols, which assume every size is at least 1, simplify into another value at n == 0 (`max(n, 1)` into `n`, `n == 0` into False); st.to_executorch retraces the program and would keep torch's value, so the deployed program would answer n == 0 wrongly (ep.module() and ep.to_torch().module() compute eager's)\nFix: declare the Dim with min=1 where 0 never occurs (st.Dim(..., min=1) for n), or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'lowering_specialized': "st.to_executorch: the lowering decided `Eq(s0 % 2, 0)` on the sizes it ran (its passes run both sides of a size split at one stand-in size, so each side's decisions are taken at a size that side never sees), which is false at z.shape[0] == 3, a size the program accepts; the artifact would be planned and specialized for 2 <= z.shape[0] <= 2 only, and refuse or miscompute other sizes (ep.module() and ep.to_torch().module() compute eager's)\nFix: declare the Dim's range where the lowering holds (st.Dim('d0', min=2, max=2)), or export one program per side of a size split; or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'zero_sizes_not_convertible': "node max_1 (at m.py:4 `x.new_ones(max(x.shape[0], 1))`) computes a size (or a condition on sizes) that torch's symbols, which assume every size is at least 1, simplify into another value at n == 0 (`max(n, 1)` into `n`); torch's tools that retrace the converted program (run_decompositions, AOTInductor, ExecuTorch, torch.onnx) would keep torch's value and answer n == 0 wrongly, and the conversion with n allowed to be 0 in torch's symbols failed (boom; ep.module() computes eager's)\nFix: declare the Dim with min=1 where 0 never occurs (st.Dim(..., min=1) for n), or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'retrace_pins': "st.to_onnx retraces ep.to_torch()'s program through torch, whose meta kernels ran at the export example's sizes and specialized d3 to 1, d4 to [2, 4] (a guard on a size of 1 or 0 at the example, which torch's retrace drops): the result would compute other sizes wrongly (ep.module() and ep.to_torch().module() compute eager's)\nFix: export with an example whose size on that Dim is 2 or more (e.g. torch.randn(2, ...) for a Dim(min=1)), so torch's retrace keeps it symbolic; or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'unbounded_merged_size': "st.to_executorch: the torch.cond (at m.py:3 `return x.reshape(-1) * 3`) returns a value whose size differs between its branches in torch's view (the same size under the branch's condition), so torch gives it a new size of no upper bound, and ExecuTorch plans memory for the largest size of every value (ep.module() computes it)\nFix: write both branches' sizes alike (x.reshape(x.shape[0] * x.shape[1]) in both), or export one program per side of the split (the dim static, or Dim(min=2) with the other side as its own program)",
    'aliased_write': "node index_add_ (aten.index_add_.default) (at m.py:4 `v.index_add_(0, i, v[:1].expand(2, n))`) writes a tensor in place while reading it through another operand (a view of the written tensor): eager reads that operand while writing, but st.to_onnx retraces the program into functional operators, which read it before the write, so the deployed program would compute another result (ep.module() and ep.to_torch().module() compute eager's)\nFix: pass a copy of the operand (`v.index_add_(0, idx, v[:1].clone().expand(...))`), which gives the functional result in eager too, or write into a new tensor (`v = v.index_add(0, idx, v[:1].expand(...))`); or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'unrepresentable_call_loaded': "node check_2 is a loaded program's call-time budget check (check of safetrace.serialize.value_sizes: the bytes or work of an op whose sizes are read from data, checked before it runs), which torch.export graphs cannot hold (from m.py:3 `y.nonzero()`)\nFix: convert the program st.export gave, before st.save (`st.export(model, args, dynamic_shapes=...).to_torch()`), or run the loaded program with ep.module() (its budgets then hold)",
    'unrepresentable_call': 'node print_1 calls print, which torch.export graphs cannot hold (only operator overloads and size arithmetic) (from m.py:3 `print(x)`)\nFix: wrap the computation in a custom operator (torch.library.custom_op) so the graph calls an operator overload, or run the program with ep.module() (no conversion needed), or st.save / st.load it',
    'not_a_subgraph': "node get_attr_1 reads attribute 'weight', which is no control-flow subgraph of the program\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'rank_differs': "node t_1 (from m.py:3 `x.t()`): torch computes rank 2, safetrace 3\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the node (a shape rule disagrees with torch's kernel)",
    'dim_differs': "node t_1 (from m.py:3 `x.t()`): dim 0 is s0 in the safetrace program but torch's shape propagation gives 5; converting would change the program\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the node (a shape rule disagrees with torch's kernel)",
    'kernel_pinned': "cannot convert node max_pool1d (aten.max_pool1d.default) (from m.py:5 `F.max_pool1d(x, 2)`): torch's fake kernel for it specializes Dim 'l' (x.shape[2]) to 7, and the converted program would lose that dynamic dim\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the node",
    'dims_lost': "ep.to_torch(): torch's shape propagation specialized Dim 'l' (x.shape[2]) to 7 during the conversion; the converted program would accept that one size only\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the program",
    'torch_assumed': "torch's shape propagation assumed `x.shape[0] <= 15` (s0: Dim 'batch') on the input sizes inside op fake kernels, which the safetrace program does not need.\nFix: ep.to_torch() without strict=True converts anyway (the converted program's checks are safetrace's; torch's assumptions are reported)",
    'kernel_failed_custom': "cannot convert node thrice_1 (deploytest::thrice): torch's FakeTensor propagation failed: RuntimeError: no fake\nFix: deploytest::thrice needs a fake implementation registered with torch (torch.library.register_fake('deploytest::thrice')); a safetrace-only fake (st.register_fake) or shape rule is not visible to torch",
    'kernel_failed_control_flow': "cannot convert node cond_1 (cond): torch's FakeTensor propagation failed: RuntimeError: branches differ\ntorch's cond cannot take this program's use of it (safetrace can: a while_loop whose carried sizes change, branches whose outputs differ in ways torch's cond refuses).\nFix: keep each carried value's and branch output's shape fixed (pad it), or deploy this program with st.save/st.load",
    'kernel_failed_aten': "cannot convert node add_1 (aten::add.Tensor): torch's FakeTensor propagation failed: RuntimeError: boom\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the node",
    'split_cond_failed': "cannot convert node cond (cond): torch's FakeTensor propagation failed: RuntimeError: boom\nThis torch.cond is not in your code: it is safetrace's size split of your program (size split on `x_shape_0 >= 2` (from `if x.shape[0] == 1:` at m.py:5); `print(ep)` shows it), one graph per side, each traced for its own sizes. torch's cond traces both sides at the sizes of every side and merges their outputs, which these sides do not allow.\nFix: declare the split Dim's range to one side of the split (e.g. Dim('batch', min=2) for a split on `batch == 1`), so the export traces one graph and to_torch() converts it; or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'preserved_crossing': "the preserved module 'layer1@1': relu_1 (from m.py:9) reads x_1, which is not one of its inputs; its call signature would not be its whole interface.\nFix: pass the value to the module as an argument (or return it), or leave 'layer1' out of preserve_module_call_signature",
    'preserved_size_not_readable': "run_decompositions: the preserved module 'inner' returns the size s0**2, which torch's retrace reads from the program's input, outside that module; the dims of 'inner''s inputs do not give it (sums, products, floor divisions) to read it inside, so the decomposed program's module call signature could not name it (torch.export.unflatten would stop at 'Could not find output node')\nFix: return the size from a tensor input of 'inner' (x.shape[0] of its own input), or leave 'inner' out of preserve_module_call_signature; or run the program with ep.module() (no conversion needed), or st.save / st.load it",
    'preserved_size': "view_1 uses the size s0*4, which no input of 'layer1' carries; the preserved call signature cannot supply it.\nFix: pass a tensor of that size to the module, or leave it out of preserve_module_call_signature",
    'derived_not_increasing': 'x.shape[0] = 10 - d: only increasing derived dims (a*d + b, a > 0) convert\nFix: declare the dim as its own Dim and relate the two with st.check(...) in the model, or run the program with ep.module() (no conversion needed), or st.save / st.load it',
    'unread_symbol': 'symbol s3 is read from no input dim\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the program',
    'no_torch_form': "the size expression s0 ** 2 has no form in torch's symbols\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the program",
    'conversion_crashed': 'ep.to_torch() failed inside the conversion (KeyError: s3, at safetrace/interop/contract.py:453)\nFix: run the program with ep.module() (no conversion needed), or st.save / st.load it; and report the program',
    'decomposition_narrowed': 'ep.run_decompositions(): the decomposed program would require `a.shape[2] % 8 == 0` of its inputs, which the program does not; decomposing must keep the input contract\nFix: pass a decomp_table without the operator whose decomposition needs it (ep.run_decompositions({...})), or run the program with ep.module() (no conversion needed), or st.save / st.load it',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conversion_message_is_pinned(name):
    err = CASES[name]()
    assert isinstance(err, st.ConversionError) and err.kind == "conversion"
    assert str(err) == f"{GOLDEN[name]}\nSee docs/errors.md#{err.kind}"
    assert err.fix and "\nFix: " + err.fix in str(err)  # the fix is its own field
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err)


def test_every_builder_is_pinned():
    builders = {n for n, v in vars(EI).items() if callable(v) and not n.startswith("_")
                and v.__module__ == EI.__name__}
    pinned = {n.split("_custom")[0].split("_control_flow")[0].split("_aten")[0].split("_loaded")[0]
              for n in CASES}
    assert builders <= pinned, builders - pinned


def test_a_shape_disagreement_names_the_node_and_the_fix(monkeypatch):
    ep, node = wrong_rule_program(monkeypatch)
    with pytest.raises(st.ConversionError) as info:
        ep.to_torch(verify=True)
    text = str(info.value)
    assert text.startswith(f"node {node.name} (from ")
    assert "in the safetrace program but torch's shape propagation gives" in text
    assert info.value.fix.startswith("run the program with ep.module()")
