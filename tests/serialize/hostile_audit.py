"""Hostile files of the issue-23 audit, by an attacker who has read the loader.

Each is a format-2 file made from the real saved program of ``hostile.Maker`` (a Linear, a
buffer, a dynamic dim): a node inserted before its output, or a field of its program
document changed.  Categories: ``aliasing`` (in-place and out= writes, views, unsafe
kernels that skip bounds checks), ``overflow`` (sizes, strides, offsets and indices at the
int64 edges), ``work`` (kernels slow without allocating), ``documents`` (JSON and names).
"""

from __future__ import annotations

from typing import Any, Callable

from tests.serialize import hostile


def _l(*items: Any) -> dict:
    return {"list": list(items)}


def _chain(m: hostile.Maker, *items: tuple) -> bytes:
    """The base program with nodes (name, target, args[, kwargs]) inserted before its
    output, the output returning the last one's first result."""
    doc = m.d()
    nodes = []
    for item in items:
        name, target, args = item[:3]
        node: dict = {"name": name, "op": "call_function", "target": target, "args": args}
        if len(item) > 3:
            node["kwargs"] = item[3]
        nodes.append(node)
    at = len(doc["nodes"]) - 1
    doc["nodes"][at:at] = nodes
    return m.file(doc)


def _x(m: hostile.Maker) -> dict:
    return m.ref()


def _w(m: hostile.Maker) -> dict:
    return {"node": m.weight}


A = "torch.ops.aten."


def audit_cases(m: hostile.Maker, blob: Callable) -> None:
    al = "aliasing"
    # out= overloads write into a tensor of the caller's choosing
    blob(al, "add_out_into_weight", lambda: _chain(
        m, ("o", A + "add.out", [_x(m), _x(m)], [["out", _w(m)]])), expect="call")
    blob(al, "copy_into_weight_via_out", lambda: _chain(
        m, ("o", A + "abs.out", [_x(m)], [["out", _w(m)]])), expect="call")
    # kernels that skip their bounds checks
    for name, target, args in (
            ("unsafe_index", "_unsafe_index.Tensor", [_w(m), _l({"node": "idx"})]),
            ("unsafe_index_put", "_unsafe_index_put.default",
             [_w(m), _l({"node": "idx"}), _w(m), False]),
            ("unsafe_masked_index", "_unsafe_masked_index.default",
             [_w(m), {"node": "mask"}, _l({"node": "idx"}), {"float": "0.0"}]),
            ("index_put_impl_unsafe", "_index_put_impl_.default",
             [_w(m), _l({"node": "idx"}), _w(m), False, True]),
            ("embedding_bag_oob", "_embedding_bag.default",
             [_w(m), {"node": "idx"}, {"node": "idx"}]),
            ("sparse_coo_unsafe", "_sparse_coo_tensor_unsafe.default",
             [{"node": "idx2"}, _w(m), _l(8, 8)])):
        blob(al, name, lambda t=target, a=args: _chain(
            m, ("idx", A + "full.default", [_l(8), 1 << 40], [["dtype", {"dtype": "int64"}]]),
            ("idx2", A + "full.default", [_l(2, 8), 1 << 40], [["dtype", {"dtype": "int64"}]]),
            ("mask", A + "ones.default", [_l(8, 8)], [["dtype", {"dtype": "bool"}]]),
            ("evil", A + t, a)), expect="call")
    # in-place metadata changes of the program's state (a later module sees the new shape)
    for op in ("t_.default", "squeeze_.default", "unsqueeze_.default", "transpose_.default",
               "swapdims_.default", "detach_.default", "as_strided_.default"):
        extra = {"unsqueeze_.default": [0], "transpose_.default": [0, 1],
                 "swapdims_.default": [0, 1],
                 "as_strided_.default": [_l(64, 64), _l(1, 1)]}.get(op, [])
        # (a parameter's write is the program's, as torch.export's modules share state; a
        # constant's stays in the module: tests/serialize/test_ownership.py)
        blob(al, f"state_{op.split('.')[0]}", lambda o=op, e=extra: _chain(
            m, ("evil", A + o, [_w(m), *e])), expect="bounded" if "strided" not in op else "load")
    blob(al, "as_strided_past_storage", lambda: _chain(
        m, ("evil", A + "as_strided.default", [_w(m), _l(1 << 20, 1 << 20), _l(1, 1)]),
        ("s", A + "sum.default", [{"node": "evil"}])), expect="call")
    blob(al, "as_strided_negative_offset", lambda: _chain(
        m, ("evil", A + "as_strided.default", [_w(m), _l(8), _l(1), -(1 << 20)])),
        expect="call")
    blob(al, "foreach_add_state", lambda: _chain(
        m, ("evil", A + "_foreach_add_.Scalar", [_l(_w(m)), {"float": "1.0"}])), expect="call")

    ov = "overflow"
    for name, target, args in (
            ("zeros_wraps_int64", "zeros.default", [_l(1 << 32, 1 << 32)]),
            ("zeros_negative", "zeros.default", [_l(-1, 1 << 62)]),
            ("empty_strided_huge_stride", "empty_strided.default", [_l(2, 2), _l(1 << 62, 1)]),
            ("empty_strided_negative_stride", "empty_strided.default", [_l(2, 2), _l(-4, 1)]),
            ("new_empty_strided_wrap", "new_empty_strided.default",
             [_w(m), _l(1 << 31, 1 << 31), _l(1 << 33, 1)]),
            ("expand_wraps_numel", "expand.default", [_w(m), _l(1 << 31, 1 << 31, 8, 8)]),
            ("view_wraps", "view.default", [_w(m), _l(1 << 62, 4, -1)]),
            ("narrow_int64_min", "narrow.default", [_w(m), 0, -(1 << 63), 1]),
            ("select_int64_max", "select.int", [_w(m), 0, (1 << 63) - 1]),
            ("slice_step_huge", "slice.Tensor", [_w(m), 0, 0, 8, (1 << 63) - 1]),

            ("unfold_step_zero", "unfold.default", [_w(m), 0, 2, 0]),
            ("unfold_size_huge", "unfold.default", [_w(m), 0, 1 << 62, 1]),
            ("repeat_wraps", "repeat.default", [_w(m), _l(1 << 32, 1 << 32)]),
            ("arange_huge", "arange.default", [1 << 62]),

            ("pow_int_huge", "pow.Tensor_Scalar", [_w(m), 1 << 70]),
            ("linspace_huge", "linspace.default", [{"float": "0.0"}, {"float": "1.0"}, 1 << 40]),
            ("full_shape_2_63", "full.default", [_l(1 << 63), {"float": "0.0"}]),
            ("tril_indices_huge", "tril_indices.default", [1 << 20, 1 << 20])):
        blob(ov, name, lambda t=target, a=args: _chain(m, ("evil", A + t, a)), expect="call")

    wk = "work"
    for name, items in (
            ("sum_of_expanded_zero_2_26", [
                ("z", A + "zeros.default", [_l(1)]),
                ("e", A + "expand.default", [{"node": "z"}, _l(1 << 13, 1 << 13)]),
                ("evil", A + "sum.default", [{"node": "e"}])]),
            ("cholesky_of_big_eye", [
                ("z", A + "eye.default", [1 << 12]),
                ("evil", A + "linalg_cholesky.default", [{"node": "z"}])]),
            ("matmul_of_views", [
                ("z", A + "ones.default", [_l(1, 1)]),
                ("e", A + "expand.default", [{"node": "z"}, _l(1 << 12, 1 << 12)]),
                ("evil", A + "mm.default", [{"node": "e"}, {"node": "e"}])]),
            ("pool_window_huge", [
                ("z", A + "zeros.default", [_l(1, 1, 1, 1)]),
                ("e", A + "expand.default", [{"node": "z"}, _l(1, 1, 2048, 2048)]),
                ("evil", A + "max_pool2d.default", [{"node": "e"}, _l(1024, 1024), _l(1, 1)])]),
            ("cumsum_of_view", [
                ("z", A + "zeros.default", [_l(1)]),
                ("e", A + "expand.default", [{"node": "z"}, _l(1 << 14, 1 << 14)]),
                ("evil", A + "cumsum.default", [{"node": "e"}, 1])]),
            ("sort_of_view", [
                ("z", A + "zeros.default", [_l(1)]),
                ("e", A + "expand.default", [{"node": "z"}, _l(1 << 15, 1 << 15)]),
                ("evil", A + "amax.default", [{"node": "e"}])])):
        blob(wk, name, lambda i=items: _chain(m, *i),
             expect="bounded" if name.endswith("2_26") else "call")
    blob(wk, "work_from_input_size", lambda: _chain(
        m, ("z", A + "zeros.default", [_l(1)]),
        ("e", A + "expand.default", [{"node": "z"}, _l({"node": "sym_size_int"}, 1 << 20)]),
        ("f", A + "expand.default", [{"node": "e"}, _l(1 << 10, {"node": "sym_size_int"},
                                                        1 << 20)]),
        ("evil", A + "sum.default", [{"node": "f"}])), expect="call")
    for name, target, args in (
            ("diagonal_offset_huge", "diagonal.default", [_w(m), (1 << 62)]),
            ("roll_huge_shift", "roll.default", [_w(m), _l((1 << 63) - 1)]),
            ("sum_of_expanded_zero_in_budget", "sum.default", [_w(m)])):
        blob(ov, name, lambda t=target, a=args: _chain(m, ("evil", A + t, a)),
             expect="bounded")

    dc = "documents"
    big = "1" + "0" * 5000
    blob(dc, "int_of_5000_digits_arg", lambda: hostile.pack(None, m.tensors, raw_program=(
        hostile.json.dumps(m.doc).replace('"args": [{"node": "x"}, 0]',
                                          '"args": [{"node": "x"}, ' + big + ']', 1))))
    blob(dc, "int_of_5000_digits_hint", lambda: hostile.pack(None, m.tensors, raw_program=(
        hostile.json.dumps(m.doc).replace('"hi": 64', '"hi": ' + big, 1))))
    blob(dc, "float_1e999_arg", lambda: _chain(
        m, ("evil", A + "mul.Scalar", [_x(m), {"float": "1e999"}])), expect="bounded")
    for name, target in (("target_newline", "torch.ops.aten.add.Tensor\n"),
                         ("target_dunder", "torch.ops.aten.add.__globals__"),
                         ("target_builtin_eval", "builtins.eval"),
                         ("target_os_system", "os.system"),
                         ("target_profiler", "torch.ops.profiler._record_function_enter.default"),
                         ("target_call", "torch.ops.aten.add.Tensor.__call__"),
                         ("target_unicode", "torch.ops.aten.\u0430dd.Tensor")):
        blob(dc, name, lambda t=target: _chain(m, ("evil", t, [_x(m), _x(m)])))
    blob(dc, "symbol_hi_below_lo_in_contract", lambda: hostile.pack(None, m.tensors, raw_program=(
        hostile.json.dumps(m.doc).replace('"lo": 0, "hi": 64, "backed": true',
                                          '"lo": 65, "hi": 64, "backed": true', 1))))
