"""A generator of hostile saved-program files, by category.

Each case makes a file (or a path: FIFO, device, directory) from a small real program and
says what must happen: ``load`` (a LoadError from st.load), ``call`` (a LoadError, or a
refusal when the loaded program is called: InputMismatchError or torch's own bounds
check) or ``bounded`` (any clean outcome, within the limits: a file that is legal but
costly).  ``hostile_runner.py`` runs them under time and memory limits.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import os
import struct
import zipfile
from typing import Any, Callable

import safetensors.torch
import torch

import safetrace as st
from safetrace.serialize import budgets as budgets_module
from tests.serialize import hostile_static
from tests.serialize import surgery
from tests.serialize.surgery import KEY, pack, parts  # noqa: F401 - (tests import them here)



@dataclasses.dataclass
class Spec:
    source: Any                 # bytes or a path
    expect: str = "load"        # "load", "call" (refused at load or call) or "bounded"
    load_kwargs: dict = dataclasses.field(default_factory=dict)
    after: Callable | None = None  # run on a loaded program (must raise)
    match: str | None = None    # a regex the refusal's message must match (what was wrong)


@dataclasses.dataclass
class Case:
    category: str
    name: str
    make: Callable[[str], Spec]  # tmp dir -> Spec
    slow: bool = False  # a full-size file (tens of MB): the default run loads its scaled
    # copy (the same refusal, 1/100 of the size against budgets 1/100 of the defaults)


class Base(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale + x.shape[0]


def base_blob() -> bytes:
    ep = st.export(Base(), (torch.randn(4, 8),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    return surgery.saved(ep)


def refused_at_load_or_call(blob: bytes, calls: list, load: str = "",
                            call: str = "", **kwargs: Any) -> str:
    """Assert that a file's lying record is never believed: refused at load (a LoadError
    matching ``load``) or, where the loader can neither prove nor refute it, at each call
    of ``calls`` (argument tuples at which the lie shows: a RuntimeAssertionError matching
    ``call``).  Returns "load" or "call"."""
    import re

    try:
        mod = st.load(io.BytesIO(blob), **kwargs).module()
    except st.LoadError as e:
        assert re.search(load, str(e), re.S), str(e)
        return "load"
    assert calls, "loaded, and no call given where the lie shows"
    for args in calls:
        try:
            mod(*args)
        except st.RuntimeAssertionError as e:
            assert re.search(call, str(e), re.S), str(e)
            continue
        raise AssertionError(f"the lie was believed at {[getattr(a, 'shape', a) for a in args]}")
    return "call"


raw_file = surgery.join  # (a file of a raw header: tests import it here)


class Maker:
    """Mutations of the base program."""

    def __init__(self) -> None:
        self.blob = base_blob()
        self.doc, self.tensors = parts(self.blob)
        self.x = next(n["name"] for n in self.doc["nodes"]
                      if n["op"] == "placeholder" and n["meta"]["extra"]["kind"] == "user_input")
        self.weight = next(n["name"] for n in self.doc["nodes"] if n["op"] == "placeholder")

    def d(self) -> dict:
        return copy.deepcopy(self.doc)

    def file(self, doc: dict, tensors: dict | None = None) -> bytes:
        return pack(doc, self.tensors if tensors is None else tensors)

    def node(self, target: str, args: list, kwargs: list | None = None, name: str = "evil",
             val: Any = None) -> bytes:
        doc = self.d()
        node: dict = {"name": name, "op": "call_function", "target": target, "args": args}
        if kwargs:
            node["kwargs"] = kwargs
        if val is not None:
            node["meta"] = {"val": val}
        doc["nodes"].insert(len(doc["nodes"]) - 1, node)
        return self.file(doc)

    def ref(self, name: str | None = None) -> dict:
        return {"node": name or self.x}


def _l(*items: Any) -> dict:
    return {"list": list(items)}


def scaled_budgets(*names: str) -> dict:
    """The named budgets at 1/100 of their defaults (a scaled case's file is 1/100 of the
    full one's size: the same refusal, at 1/100 of the cost)."""
    return {n: getattr(budgets_module.DEFAULT, n) // 100 for n in names}


def cases(categories: Any = None) -> list[Case]:
    """Every case (of ``categories`` only, when given: the others' programs are not made)."""
    m = Maker()
    out: list[Case] = []

    def add(category: str, name: str, make: Callable[[str], Spec], slow: bool = False) -> None:
        out.append(Case(category, name, make, slow))

    def blob(category: str, name: str, fn: Callable[[], bytes], expect: str = "load",
             match: str | None = None, slow: bool = False, **kw: Any) -> None:
        add(category, name, lambda tmp: Spec(fn(), expect, kw, match=match), slow)

    def both(category: str, name: str, full: Callable[[int], bytes], budgets: tuple = (),
             **kw: Any) -> None:
        """``full(1)`` under the slow mark, and by default ``full(100)``: a file 1/100 of
        the size, loaded with the ``budgets`` it tests at 1/100 of their defaults."""
        blob(category, name, lambda: full(1), slow=True, **kw)
        extra = {"budgets": scaled_budgets(*budgets)} if budgets else {}
        blob(category, f"{name}_scaled", lambda: full(100), **kw, **extra)

    # --- operators: the allowlist ------------------------------------------------------
    op = "operators"
    blob(op, "from_file_read", lambda: m.node(
        "torch.ops.aten.from_file.default", ["CANARY", False, 16]))
    blob(op, "from_file_shared_write", lambda: m.node(
        "torch.ops.aten.from_file.default", ["CANARY.pth", True, 4096]))
    blob(op, "reshape_alias_beyond_storage", lambda: m.node(
        "torch.ops.aten._reshape_alias.default", [m.ref(), _l(1 << 20), _l(1)]))
    blob(op, "inductor_alloc_from_pool", lambda: m.node(
        "torch.ops.inductor._alloc_from_pool.default", [m.ref(), 0, {"dtype": "float32"},
                                                        _l(1 << 20), _l(1)]))
    blob(op, "set_grad_enabled", lambda: m.node("torch.ops.aten.set_grad_enabled.default",
                                                [False]))
    blob(op, "manual_seed", lambda: m.node("torch.ops.aten.manual_seed.default", [0]))
    blob(op, "print", lambda: m.node("torch.ops.aten._print.default", ["\x1b[2J pwned"]))
    blob(op, "set_storage", lambda: m.node("torch.ops.aten.set_.source_Tensor",
                                           [m.ref(), m.ref(m.weight)]))
    blob(op, "resize_in_place", lambda: m.node("torch.ops.aten.resize_.default",
                                               [m.ref(), _l(1 << 40)]))
    blob(op, "out_variant", lambda: m.node("torch.ops.aten.add.out", [m.ref(), m.ref()],
                                           [["out", m.ref(m.weight)]]))
    blob(op, "torchscript_list_repeat", lambda: m.node("torch.ops.aten.mul.left_t",
                                                       [_l(1, 2), 1 << 29]))
    blob(op, "custom_namespace_not_allowed", lambda: m.node(
        "torch.ops.mylib_hostile.frob.default", [m.ref()]))
    blob(op, "custom_allowed_but_unregistered", lambda: m.node(
        "torch.ops.mylib_hostile.frob.default", [m.ref()]),
        allow_ops=["mylib_hostile::frob"])
    blob(op, "python_os_system", lambda: m.node("os.system", ["touch PWNED"]))
    blob(op, "python_builtins_eval", lambda: m.node("builtins.eval", ["1"]))
    blob(op, "python_builtins_open", lambda: m.node("builtins.open", ["CANARY"]))
    blob(op, "dunder_operator_name", lambda: m.node("torch.ops.aten.__init__.default", []))
    blob(op, "private_namespace", lambda: m.node("torch.ops._C.foo.default", []))
    blob(op, "as_strided_beyond_storage", lambda: m.node(
        "torch.ops.aten.as_strided.default", [m.ref(), _l(1 << 16, 1 << 16), _l(1, 1)]),
        expect="call")
    blob(op, "bad_opcode_call_module", lambda: _with(m, lambda d: d["nodes"].insert(
        -1, {"name": "evil", "op": "call_module", "target": "os"})))
    blob(op, "get_attr_node", lambda: _with(m, lambda d: d["nodes"].insert(
        -1, {"name": "evil", "op": "get_attr", "target": "__class__"})))

    # --- arguments: types and allocation budgets ----------------------------------------
    ar = "arguments"
    blob(ar, "operator_mul_string_repeat", lambda: m.node("operator.mul", ["ab", 1 << 29]))
    blob(ar, "operator_mul_list_repeat", lambda: m.node("operator.mul", [_l(0), 1 << 29]))
    blob(ar, "operator_pow_huge_exponent", lambda: m.node("operator.pow", [7, 10 ** 9]))
    blob(ar, "operator_pow_graph_int_exponent", lambda: m.node(
        "operator.pow", [7, m.ref("sym_size_int")]) if _has(m, "sym_size_int")
        else m.node("operator.pow", [7, {"tuple": [1]}]))
    blob(ar, "operator_lshift_huge", lambda: m.node("operator.lshift", [1, 10 ** 9]))
    blob(ar, "operator_getitem_string_key", lambda: m.node("operator.getitem",
                                                           [m.ref(), "__class__"]))
    blob(ar, "operator_add_kwargs", lambda: m.node("operator.add", [1, 2], [["x", 1]]))
    blob(ar, "empty_huge", lambda: m.node("torch.ops.aten.empty.memory_format",
                                          [_l(1 << 40)]))
    blob(ar, "full_huge_2d", lambda: m.node("torch.ops.aten.full.default",
                                            [_l(1 << 20, 1 << 20), {"float": "1.0"}]))
    blob(ar, "zeros_33_bits", lambda: m.node("torch.ops.aten.zeros.default", [_l(1 << 33)]))
    blob(ar, "arange_huge", lambda: m.node("torch.ops.aten.arange.default", [1 << 40]))
    blob(ar, "arange_zero_step", lambda: m.node("torch.ops.aten.arange.start_step", [0, 10, 0]))
    blob(ar, "repeat_huge", lambda: m.node("torch.ops.aten.repeat.default",
                                           [m.ref(), _l(1 << 30, 1)]))
    blob(ar, "expand_huge", lambda: m.node("torch.ops.aten.expand.default",
                                           [m.ref(), _l(1 << 40, 8)]))
    blob(ar, "new_zeros_huge", lambda: m.node("torch.ops.aten.new_zeros.default",
                                              [m.ref(), _l(1 << 35)]))
    blob(ar, "kwarg_lambda", lambda: m.node("torch.ops.aten.relu.default", [m.ref()],
                                            [["lambda", 1]]))
    blob(ar, "kwarg_not_in_schema", lambda: m.node("torch.ops.aten.relu.default", [m.ref()],
                                                   [["inplace", True]]))
    blob(ar, "too_many_positional", lambda: m.node("torch.ops.aten.relu.default",
                                                   [m.ref(), 1, 2, 3]))
    blob(ar, "missing_required", lambda: m.node("torch.ops.aten.add.Tensor", [m.ref()]))
    blob(ar, "string_where_tensor", lambda: m.node("torch.ops.aten.relu.default", ["x"]))
    blob(ar, "long_string_argument", lambda: m.node("torch.ops.aten.div.Tensor_mode",
                                                    [m.ref(), m.ref()],
                                                    [["rounding_mode", "f" * 100_000]]))
    # (found by benchmarks/hostile_probe.py: each loaded, then failed inside torch at call)
    blob(ar, "tensor_where_bool", lambda: m.node(
        "torch.ops.aten.sum.dim_IntList", [m.ref(), _l(1), m.ref("linear")]),
        match="expected bool, got the tensor")
    blob(ar, "number_where_only_tensor", lambda: m.node(
        "torch.ops.aten.gt.Scalar", [0, m.ref()]), match="takes no number for a tensor")
    blob(ar, "size_where_only_tensor", lambda: m.node(
        "torch.ops.aten.relu.default", [m.ref("sym_size_int")]), match="takes no number")
    blob(ar, "optional_argument_without_default_missing", lambda: m.node(
        "torch.ops.aten.sum.dim_IntList", [m.ref()]), match="lacks its argument 'dim'")
    blob(ar, "size_arithmetic_past_int64", lambda: _with(m, lambda d: _int64_slice(d)),
         match="outside int64")
    blob(ar, "size_floordiv_by_zero", lambda: m.node(
        "operator.floordiv", [m.ref("sym_size_int"), 0]), match="divides by zero")
    blob(ar, "dim_2_63", lambda: m.node("torch.ops.aten.sum.dim_IntList", [m.ref(), _l(2**63)]),
         match="outside int64")
    blob(ar, "sym_size_dim_minus_2_63", lambda: _with(m, lambda d: next(
        n for n in d["nodes"] if n["name"] == "sym_size_int")["args"].__setitem__(1, -2**63)),
        match="fails at every call")
    blob(ar, "dim_out_of_range_on_input", lambda: m.node(
        "torch.ops.aten.select.int", [m.ref(), 5, 0]), match="fails at every call")
    blob(ar, "expression_argument", lambda: m.node("torch.ops.aten.relu.default",
                                                   [{"expr": "s0"}]))
    blob(ar, "symint_argument", lambda: m.node("torch.ops.aten.relu.default",
                                               [{"symint": "s0"}]))
    blob(ar, "huge_list_argument", lambda: m.node("torch.ops.aten.view.default",
                                                  [m.ref(), {"list": [1] * 200_000}]))
    blob(ar, "generator_argument", lambda: m.node("torch.ops.aten.bernoulli.p",
                                                  [m.ref(), {"float": "0.5"}],
                                                  [["generator", "gen"]]))

    # --- names that reach generated Python -----------------------------------------------
    nm = "names"
    for bad in ("self", "x; import os", "class", "lambda", "torch", "__import__", "getattr",
                "a" * 300, ""):
        blob(nm, f"node_named_{bad[:12]!r}", lambda bad=bad: _rename(m, bad))
    for bad in ("forward", "a.", ".a", "a..b", "__class__", "training", "_parameters",
                "state_dict", "a b", "x\x1b[2J"):
        blob(nm, f"state_named_{bad!r}", lambda bad=bad: _state_rename(m, bad))
    blob(nm, "kwarg_named_class", lambda: m.node("torch.ops.aten.relu.default", [m.ref()],
                                                 [["class", 1]]))

    # --- budgets: small files, big costs ---------------------------------------------------
    bu = "budgets"
    blob(bu, "json_nesting_bomb", lambda: pack(None, m.tensors, raw_program=json.dumps(
        m.doc)[:-1] + ',"bomb":' + "[" * 200_000 + "]" * 200_000 + "}"))
    both(bu, "json_value_bomb", lambda k: pack(None, m.tensors, raw_program=json.dumps(
        m.doc)[:-1] + ',"bomb":[' + "0," * (3_000_000 // k) + "0]}"), ("max_json_values",))
    both(bu, "json_under_value_budget_each_value_a_list", lambda k: pack(
        None, m.tensors, raw_program=json.dumps(m.doc)[:-1] + ',"bomb":['
        + "[]," * (1_400_000 // k) + "0]}"), ("max_json_values",))
    blob(bu, "header_length_2_60", lambda: struct.pack("<Q", 1 << 60) + b"{}")
    blob(bu, "header_length_past_file", lambda: raw_file({}, length=10_000))
    blob(bu, "400k_empty_tensors", lambda: surgery.join("{" + ",".join(
        f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(400_000))
        + "}"))
    blob(bu, "700_residual_conditions", lambda: _with(m, lambda d: _conds(d, [
        ["lt", "s0", 10 ** 6 + i] for i in range(700)])), expect="bounded")
    blob(bu, "2100_residual_conditions", lambda: _with(m, lambda d: _conds(d, [
        ["lt", "s0", 10 ** 6 + i] for i in range(2_100)])))
    blob(bu, "deep_residual_conditions", lambda: _with(m, lambda d: _conds(
        d, [_deep_not(95) for _ in range(700)])), expect="bounded")
    blob(bu, "nested_products_2_40_terms", lambda: _with(m, lambda d: _products(d, 40)),
         expect="call")
    both(bu, "many_large_expressions", lambda k: _with(m, lambda d: _conds(d, [
        ["lt", _sum_of(19_000 // k), 0] for _ in range(30)])),
        ("max_json_values", "max_expr_nodes", "max_expr_nodes_each"), match="max_json_values")
    both(bu, "many_expressions_under_each_limit", lambda k: _with(m, lambda d: _conds(d, [
        ["lt", _sum_of(3_000 // k), 0] for _ in range(60)])),  # (3 nodes, 4 values a term)
        ("max_expr_nodes", "max_expr_nodes_each"), match="max_expr_nodes")
    blob(bu, "expression_depth", lambda: pack(None, m.tensors, raw_program=json.dumps(
        m.doc).replace('"conditions": []', '"conditions": [{"cond": ' + '["not", ' * 5000
                       + '"s0"' + "]" * 5000 + ', "origin": ""}]')))
    both(bu, "many_symbols", lambda k: _with(m, lambda d: d["symbols"].extend(
        {"name": f"s{100 + i}", "backed": True, "hint": 1, "lo": 0, "hi": None}
        for i in range(150_000 // k))), ("max_symbols",), match="max_symbols")

    # --- crashes that must be LoadErrors ----------------------------------------------------
    cr = "crashes"
    blob(cr, "leaf_path_wrong_type", lambda: _with(m, lambda d: d["contract"]["inputs"][0]
                                                   .__setitem__("path", 5)))
    blob(cr, "leaf_is_a_list", lambda: _with(m, lambda d: d["contract"]["inputs"]
                                             .__setitem__(0, [1, 2])))
    blob(cr, "leaf_dims_string", lambda: _with(m, lambda d: d["contract"]["inputs"][0]
                                               .__setitem__("dims", "s0")))
    blob(cr, "dim_kind_unknown", lambda: _with(m, lambda d: d["contract"]["inputs"][0][
        "dims"][0].__setitem__("kind", "exec")))
    blob(cr, "dim_size_huge", lambda: _with(m, lambda d: d["contract"]["inputs"][0][
        "dims"][1].__setitem__("size", 1 << 70)))
    blob(cr, "state_kind_unknown", lambda: _with(m, lambda d: d["state"][0].__setitem__(
        "kind", "exec")))
    blob(cr, "hint_2_63", lambda: _with(m, lambda d: d["symbols"][0].__setitem__(
        "hint", 1 << 63)))
    blob(cr, "hint_not_int", lambda: _with(m, lambda d: d["symbols"][0].__setitem__(
        "hint", "3")))
    blob(cr, "mod_by_zero_in_meta", lambda: _with(m, lambda d: _first_val(d).__setitem__(
        "shape", [["mod", "s0", 0], 8])))
    blob(cr, "floordiv_by_zero_residual", lambda: _with(m, lambda d: _conds(d, [
        ["eq", ["floordiv", "s0", 0], 1]])))
    blob(cr, "floordiv_by_cancelled_zero", lambda: _with(m, lambda d: _conds(d, [
        ["eq", ["floordiv", "s0", ["add", ["mul", -1, "s0"], "s0"]], 1]])), expect="call")
    blob(cr, "unbacked_in_state_shape", lambda: _unbacked_state(m))
    # (an unbacked symbol an input size binds is legal: `z.shape[0] == 2 * u0` programs)
    blob(cr, "unbacked_in_input_shape", lambda: _with(m, lambda d: (
        d["symbols"].__setitem__(0, dict(d["symbols"][0], backed=False, hint=None)),
        d["contract"]["symbols"][0].__setitem__("backed", False))), expect="bounded")
    blob(cr, "unbacked_equal_dim", lambda: _with(m, lambda d: (
        d["symbols"].append({"name": "u9", "backed": False, "hint": None, "lo": 0, "hi": None}),
        d["contract"]["inputs"][0]["dims"].__setitem__(1, {
            "kind": "unchecked", "size": "u9", "symbol": None, "coef": 1, "offset": 0,
            "why": None, "declared": None}))))
    blob(cr, "undeclared_symbol", lambda: _with(m, lambda d: _conds(d, [["lt", "s77", 3]])))
    blob(cr, "state_entry_missing_dtype", lambda: _with(m, lambda d: d["state"][0].pop(
        "dtype")))
    blob(cr, "state_shape_mismatch", lambda: _with(m, lambda d: d["state"][0].__setitem__(
        "shape", [3, 3])))
    blob(cr, "nodes_not_a_list", lambda: _with(m, lambda d: d.__setitem__("nodes", {})))
    blob(cr, "in_spec_unknown_class", lambda: _with(m, lambda d: d.__setitem__(
        "in_spec", {"type": "os:system", "context": None, "children": []})))
    blob(cr, "in_spec_without_kwargs", lambda: _with(m, lambda d: d["in_spec"][
        "children"].pop()), match="in_spec")
    blob(cr, "in_spec_swapped", lambda: _with(m, lambda d: d["in_spec"]["children"].reverse()),
         match="in_spec")
    blob(cr, "range_bound_float", lambda: _with(m, lambda d: d["range_constraints"].append(
        ["s0", 1.5, None])))
    blob(cr, "aliases_bogus", lambda: _with(m, lambda d: d.__setitem__("aliases", [["a", "b"]])))
    blob(cr, "weights_flag_string", lambda: _with(m, lambda d: d.__setitem__("weights", "yes")))
    blob(cr, "node_meta_val_bad_dtype", lambda: _with(m, lambda d: _first_val(d).__setitem__(
        "dtype", "float1024")))
    blob(cr, "output_not_tuple", lambda: _with(m, lambda d: d["nodes"][-1].__setitem__(
        "args", [{"node": m.x}])))
    blob(cr, "forward_reference", lambda: _with(m, lambda d: d["nodes"][-2].__setitem__(
        "args", [{"node": "output"}])))
    blob(cr, "newer_major_version", lambda: _with(m, lambda d: d.__setitem__("version", [3, 0])))
    blob(cr, "negative_size_in_meta", lambda: _with(m, lambda d: _first_val(d).__setitem__(
        "shape", [-1, 8])))

    # --- containers: the safetensors layer --------------------------------------------------
    co = "container"
    blob(co, "not_utf8_header", lambda: struct.pack("<Q", 8) + b"\xff\xfe\xfd\xfc\xfb\xfa{}")
    blob(co, "header_not_object", lambda: raw_file([1, 2]))  # type: ignore[arg-type]
    blob(co, "duplicate_keys", lambda: _dup_keys(m))
    blob(co, "plain_checkpoint_no_program", lambda: safetensors.torch.save(
        {"w": torch.ones(2)}))
    blob(co, "tensor_past_end", lambda: _tensor_header(m, lambda h, k: h[k].__setitem__(
        "data_offsets", [0, 1 << 40])))
    blob(co, "tensor_overlap", lambda: _tensor_header(m, _overlap))
    blob(co, "tensor_shape_overflow", lambda: _tensor_header(m, lambda h, k: h[k].__setitem__(
        "shape", [1 << 40, 1 << 40])))
    blob(co, "tensor_dtype_unknown", lambda: _tensor_header(m, lambda h, k: h[k].__setitem__(
        "dtype", "F128")))
    blob(co, "bool_bytes_not_0_1", lambda: _bool_tensor(m))
    blob(co, "metadata_not_strings", lambda: raw_file({"__metadata__": {KEY: 5}}))
    for cut in (0, 7, 9, 100, -40, -1):
        blob(co, f"truncated_at_{cut}", lambda cut=cut: m.blob[:cut] if cut else b"")
    blob(co, "trailing_bytes", lambda: m.blob + b"\0" * 16)
    blob(co, "version_1_zip_with_64gb_member", lambda: _v1_bomb())
    blob(co, "tensor_not_declared", lambda: m.file(m.d(), dict(m.tensors, extra=torch.ones(1))))
    _container_cases(m, blob, both)
    _memory_cases(m, blob, both)
    _alloc_cases(m, blob, both, categories is None or "memory" in categories)
    from tests.serialize.hostile_audit import audit_cases  # (it builds on this module)
    audit_cases(m, blob)
    from tests.serialize.hostile_contracts import contract_cases
    contract_cases(m, blob, add, categories is None or "contracts" in categories)

    # --- not files ----------------------------------------------------------------------------
    nf = "paths"
    add(nf, "fifo", lambda tmp: Spec(_fifo(tmp)))
    add(nf, "dev_zero", lambda tmp: Spec("/dev/zero"))
    add(nf, "directory", lambda tmp: Spec(tmp))
    add(nf, "symlink_to_dev_zero", lambda tmp: Spec(_symlink(tmp, "/dev/zero")))
    add(nf, "missing_file", lambda tmp: Spec(os.path.join(tmp, "nope.st")))
    add(nf, "symlink_loop", lambda tmp: Spec(_symlink_loop(tmp), match="cannot open"))
    add(nf, "symlink_to_directory", lambda tmp: Spec(_symlink(tmp, tmp, "dir.st"),
                                                     match="a directory"))
    add(nf, "unix_socket", lambda tmp: Spec(_socket(tmp), match="not a regular file"))
    add(nf, "path_nul_byte", lambda tmp: Spec(os.path.join(tmp, "a\0b.st"),
                                              match="cannot open"))
    add(nf, "path_too_long", lambda tmp: Spec(os.path.join(tmp, "x" * 5000),
                                              match="cannot open"))
    add(nf, "proc_file_of_size_0", lambda tmp: Spec("/proc/self/status"))
    add(nf, "sysfs_file_shorter_than_its_size", lambda tmp: Spec(_sysfs_file()))
    add(nf, "weights_symlink_loop", lambda tmp: Spec(_graph_only(tmp, m), "load",
                                                     {"weights": _symlink_loop(tmp)},
                                                     match="cannot open"))
    add(nf, "weights_fifo", lambda tmp: Spec(_graph_only(tmp, m), "load",
                                             {"weights": _fifo(tmp, "w.fifo")}))
    add(nf, "weights_mismatch", lambda tmp: Spec(_graph_only(tmp, m), "load",
                                                 {"weights": {"fc.weight": torch.ones(2),
                                                              "bogus": torch.ones(1)}}))
    add(nf, "weights_missing", lambda tmp: Spec(_graph_only(tmp, m)))
    return out


def _container_cases(m: Maker, blob: Callable, both: Callable) -> None:
    """The safetensors layer, byte by byte: each refusal must name what is wrong."""
    co = "container"
    head, data = surgery.split(m.blob)
    key = next(k for k in head if k != "__metadata__" and head[k]["dtype"] == "F32")
    blob(co, "header_length_past_eof", lambda: struct.pack("<Q", 1 << 20) + m.blob[8:4096],
         match="exceeds the file")
    blob(co, "header_length_2_63", lambda: struct.pack("<Q", 1 << 63) + m.blob[8:],
         match="over the budget")
    blob(co, "header_cut_mid_json", lambda: _raw(m.blob[8:8 + len(m.blob) // 3], b""),
         match="not valid JSON")
    blob(co, "data_start_not_aligned", lambda: _raw(_padded(_header_bytes(head)) + b" " * 4,
                                                    data, pad=False), match="multiple of 8")
    blob(co, "offsets_misaligned", lambda: _shifted(head, data, key, 2), match="misaligned")
    blob(co, "offsets_gap", lambda: _shifted(head, data, key, 4, gap=True),
         match="expected|gaps")
    blob(co, "offsets_reversed", lambda: _edit(head, data, key, "data_offsets", [8, 0]),
         match="bad data_offsets")
    blob(co, "offsets_negative", lambda: _edit(head, data, key, "data_offsets", [-4, 28]),
         match="bad data_offsets")
    blob(co, "dtype_size_mismatch", lambda: _edit(head, data, key, "dtype", "F64"),
         match="declares shape")
    blob(co, "shape_numel_mismatch", lambda: _edit(head, data, key, "shape", [3]),
         match="declares shape")
    blob(co, "shape_bool_entry", lambda: _edit(head, data, key, "shape", [True, 8]),
         match="bad shape")
    blob(co, "shape_huge_but_empty", lambda: _raw(_header_bytes(dict(head, **{"state:huge": {
        "dtype": "F32", "shape": [0, 1 << 61, 1 << 61], "data_offsets": [len(data)] * 2}})),
        data), match=r"2\*\*62")
    blob(co, "shape_65_dims", lambda: _edit(head, data, key, "shape", [1] * 65),
         match="bad shape")
    for word in ("NaN", "Infinity", "-Infinity"):
        blob(co, f"shape_{word}", lambda w=word: _raw(_header_bytes(head).replace(
            b'"shape":[8],"data_offsets"', f'"shape":[{w}],"data_offsets"'.encode(), 1), data),
            match="not allowed")
        blob(co, f"program_hint_{word}", lambda w=word: pack(None, m.tensors, raw_program=(
            json.dumps(m.doc).replace('"hint": 4', f'"hint": {w}', 1))), match="not allowed")
    blob(co, "offsets_1e400", lambda: _raw(_header_bytes(head).replace(
        b'"data_offsets":[0,', b'"data_offsets":[1e400,', 1), data), match="bad data_offsets")
    blob(co, "duplicate_tensor_key", lambda: _raw(_header_bytes(head)[:-1] + b"," + json.dumps(
        {key: head[key]})[1:-1].encode() + b"}", data), match="duplicate key")
    blob(co, "deeply_nested_header", lambda: _raw(b'{"x":' + b"[" * 200_000 + b"]" * 200_000
                                                  + b"}", b""), match="nested deeper")
    both(co, "header_of_numbers", lambda k: _raw(b'{"x":[' + b"0," * (8_000_000 // k)
                                                 + b"0]}", b""), ("max_json_values",),
         match="JSON values")
    blob(co, "name_lone_surrogate", lambda: _raw(_header_bytes(head).replace(
        json.dumps(key).encode(), rb'"state:\udc80"', 1), data), match="not valid Unicode")
    blob(co, "name_bytes_ff", lambda: _raw(_header_bytes(head).replace(
        json.dumps(key).encode(), b'"state:' + bytes([0xff, 0xfe]) + b'"', 1), data),
        match="utf-8")
    blob(co, "program_lone_surrogate", lambda: pack(None, m.tensors, raw_program=json.dumps(
        m.doc).replace('"stack_trace": "', '"stack_trace": "\\udc80', 1)),
        match="not valid Unicode|surrogate")
    blob(co, "metadata_key_surrogate", lambda: _raw(_header_bytes(head).replace(
        b'"__metadata__":{', b'"__metadata__":{"\\ud800":"x",', 1), data),
        match="not valid Unicode")
    for name, value, why in (
            ("dtypes_not_json", "{", "not valid JSON"),
            ("dtypes_unknown_tensor", json.dumps({"state:nope": "complex128"}), "not a tensor"),
            ("dtypes_unknown_dtype", json.dumps({key: "complex256"}), "stored as a view"),
            ("dtypes_wrong_base", json.dumps({key: "complex128"}), "stored as"),
            ("dtypes_not_a_map", json.dumps(["complex128"]), "must map")):
        blob(co, name, lambda v=value: _raw(_header_bytes(_with_meta(
            head, "safetrace.dtypes", v)), data), match=why)


def _memory_cases(m: Maker, blob: Callable, both: Callable) -> None:
    """Header parsing bounded: nested metadata JSON, long and astral strings, and file
    objects that declare more than they hold (issue 23)."""
    me = "memory"
    head, data = surgery.split(m.blob)
    both(me, "dtypes_nested_25mb", lambda k: _raw(_header_bytes(_with_meta(
        head, "safetrace.dtypes", "[" * (12_000_000 // k) + "]" * (12_000_000 // k))), data),
        match="nested deeper|JSON values")
    both(me, "dtypes_many_values", lambda k: _raw(_header_bytes(_with_meta(
        head, "safetrace.dtypes", "{" + ",".join(f'"k{i}":"x"' for i in range(1_500_000 // k))
        + "}")), data), ("max_json_values",), match="JSON values")
    both(me, "torch_version_astral_31mb", lambda k: pack(_set(
        m.d(), "torch_version", "\U0001F600" + "a" * (31_000_000 // k)), m.tensors),
        ("max_text_bytes", "max_json_string"), match="max_text_bytes|max_json_string")
    blob(me, "torch_version_not_a_version", lambda: pack(_set(m.d(), "torch_version",
                                                              "2.13\n$(rm -rf)"), m.tensors),
         match="torch_version")
    blob(me, "stack_trace_2mb", lambda: pack(None, m.tensors, raw_program=json.dumps(
        m.doc).replace('"stack_trace": "', '"stack_trace": "' + "x" * 2_000_000, 1)),
        match="max_json_string")
    both(me, "astral_stack_trace_16mb", lambda k: pack(None, m.tensors, raw_program=json.dumps(
        m.doc, ensure_ascii=False).replace(
            '"stack_trace": "', '"stack_trace": "\U0001F600' + "x" * (900_000 // k), 18)
        .replace('"dims_report"', '"pad": "' + "y" * (16_000_000 // k) + '", "dims_report"')),
        ("max_text_bytes", "max_json_string"), match="max_text_bytes|max_json_string")
    tib = {"__metadata__": head["__metadata__"],
           "state:big": {"dtype": "F32", "shape": [1 << 38], "data_offsets": [0, 1 << 40]}}
    blob(me, "stream_declares_1tib", lambda: io.BytesIO(_raw(_header_bytes(tib), b"\0" * 64)),
         match="holds")
    blob(me, "pipe_declares_1tib", lambda: _Pipe(_raw(_header_bytes(tib), b"\0" * 4096)),
         match="max_file_bytes")
    # (a state entry the program declares: tensors it does not are refused from the header)
    big_doc = json.loads(head["__metadata__"]["safetrace.program"])
    big_doc["state"].append({"name": "big", "kind": "buffer", "requires_grad": False,
                             "parameter": False, "dtype": "float32", "shape": [1 << 36]})
    gib = {"__metadata__": {**head["__metadata__"], "safetrace.program": json.dumps(big_doc)},
           "state:big": {"dtype": "F32", "shape": [1 << 36], "data_offsets": [0, 1 << 38]}}
    blob(me, "pipe_declares_256gib", lambda: _Pipe(_raw(_header_bytes(gib), b"\0" * 4096)),
         match="truncated")
    many = dict({"__metadata__": head["__metadata__"]}, **{
        f"state:t{i}": {"dtype": "U8", "shape": [1 << 24], "data_offsets": [i << 24,
                                                                          (i + 1) << 24]}
        for i in range(1 << 12)})
    blob(me, "pipe_declares_64gb_in_16mb_tensors",
         lambda: _Pipe(_raw(_header_bytes(many), b"\0" * 4096)),
         match="truncated|not declared by the program")


def _alloc_cases(m: Maker, blob: Callable, both: Callable, warm: bool = True) -> None:
    """Allocations of constant size: folded sizes, bytes not elements, strides, repeats,
    the whole program's sum (issue 23)."""
    al = "memory"

    def nodes(*items: dict) -> bytes:
        doc = m.d()
        doc["nodes"][len(doc["nodes"]) - 1:len(doc["nodes"]) - 1] = list(items)
        return m.file(doc)

    def call(name: str, target: str, args: list, kwargs: list | None = None) -> dict:
        out = {"name": name, "op": "call_function", "target": target, "args": args}
        if kwargs:
            out["kwargs"] = kwargs
        return out

    aten = "torch.ops.aten."
    blob(al, "size_from_folded_mul_4gib", lambda: nodes(
        call("k", "operator.mul", [65536, 16384]),
        call("evil", aten + "empty.memory_format", [_l({"node": "k"})])), match="bytes")
    blob(al, "empty_strided_4tib", lambda: nodes(call(
        "evil", aten + "empty_strided.default", [_l(2, 2), _l(1 << 40, 1)])), match="bytes")
    blob(al, "complex128_4x_1gib", lambda: nodes(*[call(
        f"evil{i}", aten + "zeros.default", [_l(1 << 26)], [["dtype", {"dtype": "complex128"}]])
        for i in range(4)]), match="bytes")
    blob(al, "float32_6x_200mb_in_all", lambda: nodes(*[call(
        f"evil{i}", aten + "zeros.default", [_l(50_000_000)]) for i in range(6)]),
        match="in all")
    blob(al, "repeat_of_a_weight_16gib", lambda: nodes(call(
        "evil", aten + "repeat.default", [{"node": m.weight}, _l(1 << 13, 1 << 13)])),
        match="bytes")
    # sizes from the program's own constants: broadcasts, reductions, values (real
    # programs, their constants changed; each base loads and runs untouched)
    for kind in hostile_static.KINDS:
        if warm:
            hostile_static.base(kind)  # (exported now: a case's export would grow the tables)
        blob(al, f"constants_{kind}", lambda kind=kind: hostile_static.hostile(kind),
             match="max_alloc_numel")
        blob(al, f"control_{kind}", lambda kind=kind: hostile_static.base(kind),
             expect="bounded")
    # sizes of the inputs over widened declared ranges, and constants inside cond and
    # while_loop subgraphs (each base loads and runs untouched)
    for kind in hostile_static.INPUT_KINDS:
        if warm:  # (exported now: a case's export would grow the intern tables)
            hostile_static.inputs_base(kind)
        blob(al, f"inputs_{kind}", lambda kind=kind: hostile_static.inputs_hostile(kind)[0],
             expect=hostile_static.inputs_hostile(kind)[1], match="max_alloc_numel")
        blob(al, f"control_inputs_{kind}", lambda kind=kind: hostile_static.inputs_base(kind),
             expect="bounded")
    if warm:
        hostile_static.counter_base()
        hostile_static.cond_base()
        hostile_static.loop_base()
    blob(al, "updated_buffer_item_zeros_256gib", hostile_static.counter_hostile, expect="call",
         match="max_alloc_numel")
    blob(al, "control_updated_buffer", hostile_static.counter_base, expect="bounded")
    both(al, "one_thousand_conds", lambda k: hostile_static.many_conds(max(1000 // k, 50)),
         expect="bounded")
    blob(al, "while_loop_body_stops_incrementing", hostile_static.stuck_loop, expect="call",
         match="max_loop_iterations")
    blob(al, "control_while_loop", hostile_static.loop_base, expect="bounded")
    # (found by benchmarks/hostile_probe.py: each loaded, then failed inside torch at call)
    blob(al, "cond_branch_returns_nothing", lambda: _sub_output(
        hostile_static.cond_base(), "true", lambda outs: outs.clear()), match="branches")
    blob(al, "while_loop_body_returns_three", lambda: _sub_output(
        hostile_static.loop_base(), "body", lambda outs: outs.append(outs[0])),
        match="carried")
    blob(al, "buffer_written_with_a_larger_tensor", lambda: _swap_outputs(
        hostile_static.counter_base()), match="fails at every call")
    blob(al, "subgraph_used_as_a_value", lambda: _main_getitem_of(
        hostile_static.loop_base(), "while_loop_body_graph_0"), match="as a value")
    blob(al, "getitem_past_cond_results", lambda: _main_getitem(hostile_static.cond_base(), 5),
         match="result 5")


class _Pipe(io.RawIOBase):
    """A non-seekable stream (a pipe, a socket): st.load cannot know its size."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), len(self.data) - self.pos, 1 << 20)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def _set(doc: dict, key: str, value: Any) -> dict:
    doc[key] = value
    return doc


def _header_bytes(head: dict) -> bytes:
    return json.dumps(head, separators=(",", ":")).encode()


def _padded(text: bytes) -> bytes:
    """The header text padded so that the data starts at a multiple of 8."""
    return text + b" " * (-(8 + len(text)) % 8)


def _raw(text: bytes, data: bytes, pad: bool = True) -> bytes:
    return surgery.join(text, data, pad=b" " if pad else b"")


def _edit(head: dict, data: bytes, key: str, field: str, value: Any) -> bytes:
    head = copy.deepcopy(head)
    head[key][field] = value
    return _raw(_header_bytes(head), data)


def _with_meta(head: dict, name: str, value: str) -> dict:
    head = copy.deepcopy(head)
    head["__metadata__"][name] = value
    return head


def _shifted(head: dict, data: bytes, key: str, by: int, gap: bool = False) -> bytes:
    """Every tensor from ``key`` on moved ``by`` bytes later: a 1-byte filler tensor in
    front (tiling kept, offsets misaligned) or nothing (a gap)."""
    head = copy.deepcopy(head)
    begin = head[key]["data_offsets"][0]
    for k, v in head.items():
        if k != "__metadata__" and v["data_offsets"][0] >= begin:
            v["data_offsets"] = [v["data_offsets"][0] + by, v["data_offsets"][1] + by]
    if not gap:
        head["filler"] = {"dtype": "U8", "shape": [by], "data_offsets": [begin, begin + by]}
    return _raw(_header_bytes(head), data[:begin] + bytes(by) + data[begin:])


# --- helpers -----------------------------------------------------------------------------------
def _sub_output(base: bytes, path_part: str, edit: Callable[[list], Any]) -> bytes:
    """``base`` with the output tuple of its subgraph whose path has ``path_part`` edited."""
    doc, tensors = parts(base)
    sub = next(g for g in doc["subgraphs"] if path_part in g["path"])
    out = next(n for n in sub["nodes"] if n["op"] == "output")
    if not (isinstance(out["args"][0], dict) and "tuple" in out["args"][0]):
        out["args"][0] = {"tuple": [out["args"][0]]}
    edit(out["args"][0]["tuple"])
    return pack(doc, tensors)


def _swap_outputs(base: bytes) -> bytes:
    """``base`` with its output specs reversed (a buffer written with a user output)."""
    doc, tensors = parts(base)
    doc["outputs"].reverse()
    return pack(doc, tensors)


def _int64_slice(doc: dict) -> None:
    """A slice of the input ending at ``-2**62 * (s0 + 3)``: outside int64 at every size."""
    nodes = doc["nodes"]
    at = next(i for i, n in enumerate(nodes) if n["name"] == "sym_size_int") + 1
    nodes[at:at] = [
        {"name": "plus", "op": "call_function", "target": "operator.add",
         "args": [{"node": "sym_size_int"}, 3]},
        {"name": "far", "op": "call_function", "target": "operator.mul",
         "args": [-2**62, {"node": "plus"}]},
        {"name": "cut", "op": "call_function", "target": "torch.ops.aten.slice.Tensor",
         "args": [{"node": "x"}, 0, 0, {"node": "far"}]}]


def _main_getitem_of(base: bytes, name: str) -> bytes:
    """``base`` whose main graph's first getitem reads the node ``name``."""
    doc, tensors = parts(base)
    next(n for n in doc["nodes"] if n.get("target") == "operator.getitem")["args"][0] = {
        "node": name}
    return pack(doc, tensors)


def _main_getitem(base: bytes, index: int) -> bytes:
    """``base`` whose main graph's getitem of a control-flow result takes ``index``."""
    doc, tensors = parts(base)
    next(n for n in doc["nodes"] if n.get("target") == "operator.getitem")["args"][1] = index
    return pack(doc, tensors)


def _with(m: Maker, edit: Callable[[dict], Any]) -> bytes:
    doc = m.d()
    edit(doc)
    return m.file(doc)


def _has(m: Maker, name: str) -> bool:
    return any(n["name"] == name for n in m.doc["nodes"])


def _first_val(doc: dict) -> dict:
    node = next(n for n in doc["nodes"] if n["op"] == "call_function"
                and "tensor" in n.get("meta", {}).get("val", {}))
    return node["meta"]["val"]["tensor"]


def _rename(m: Maker, bad: str) -> bytes:
    doc = m.d()
    old = next(n for n in doc["nodes"] if n["op"] == "call_function")["name"]
    text = json.dumps(doc).replace(json.dumps(old), json.dumps(bad))
    return m.file(json.loads(text))


def _state_rename(m: Maker, bad: str) -> bytes:
    doc = m.d()
    old = doc["state"][0]["name"]
    text = json.dumps(doc).replace(json.dumps(old), json.dumps(bad))
    tensors = {(f"state:{bad}" if k == f"state:{old}" else k): v for k, v in m.tensors.items()}
    return m.file(json.loads(text), tensors)


def _conds(doc: dict, conds: list) -> None:
    doc["contract"]["conditions"].extend({"cond": c, "origin": ""} for c in conds)


def _deep_not(depth: int) -> Any:
    e: Any = ["lt", "s0", 100]
    for _ in range(depth):
        e = ["not", e]
    return e


def _sum_of(n: int) -> Any:
    """A sum of ``n`` terms in the engine's form (no monomial twice), 3 nodes each."""
    return ["add"] + [["floordiv", "s0", i + 2] for i in range(n - 1)] + [1]


def _products(doc: dict, n: int) -> None:
    """A leaf dim that is a product of n sums (canonical only on the surface)."""
    e = ["mul"] + [["floordiv", ["add", "s0", i + 1], 1] for i in range(n)]
    doc["contract"]["inputs"][0]["dims"][1] = {
        "kind": "equal", "size": e, "symbol": None, "coef": 1, "offset": 0, "why": None,
        "declared": None}
    doc["contract"]["conditions"].append({"cond": ["lt", e, 5], "origin": ""})


def _unbacked_state(m: Maker) -> bytes:
    doc = m.d()
    doc["symbols"].append({"name": "u5", "backed": False, "hint": None, "lo": 0, "hi": None})
    ph = next(n for n in doc["nodes"] if n["name"] == m.weight)
    ph["meta"]["val"]["tensor"]["shape"] = ["u5", 8]
    return m.file(doc)


def _dup_keys(m: Maker) -> bytes:
    program = json.dumps(m.doc)
    return pack(None, m.tensors, raw_program=program[:-1] + ',"nodes":[]}')


def _tensor_header(m: Maker, edit: Callable[[dict, str], Any]) -> bytes:
    header, data = surgery.split(m.blob)
    edit(header, next(k for k in header if k != "__metadata__"))
    return raw_file(header, data)


def _overlap(header: dict, _: str) -> None:
    """The last tensor made to start where the first one does."""
    entries = [k for k in header if k != "__metadata__"]
    last = max(entries, key=lambda k: header[k]["data_offsets"][0])
    begin, end = header[last]["data_offsets"]
    header[last]["data_offsets"] = [0, end - begin]


def _bool_tensor(m: Maker) -> bytes:
    tensors = dict(m.tensors)
    doc = m.d()
    doc["constants"].append("flag")
    tensors["constant:flag"] = torch.tensor([2, 1], dtype=torch.uint8).view(torch.bool)
    return m.file(doc, tensors)


def _v1_bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("program.json", b"{}")
        z.writestr("tensors.safetensors", b"\0" * 100_000, compress_type=zipfile.ZIP_DEFLATED)
    blob = bytearray(buf.getvalue())
    i = blob.rfind(b"PK\x01\x02")
    blob[i + 24:i + 28] = struct.pack("<I", 0xFFFFFFF0)
    return bytes(blob)


def _fifo(tmp: str, name: str = "prog.fifo") -> str:
    path = os.path.join(tmp, name)
    if not os.path.exists(path):
        os.mkfifo(path)
    return path


def _symlink(tmp: str, target: str, name: str = "link.st") -> str:
    path = os.path.join(tmp, name)
    if not os.path.lexists(path):
        os.symlink(target, path)
    return path


def _symlink_loop(tmp: str) -> str:
    """a.st -> b.st -> a.st (ELOOP)."""
    a, b = os.path.join(tmp, "loop_a.st"), os.path.join(tmp, "loop_b.st")
    if not os.path.lexists(a):
        os.symlink(b, a)
        os.symlink(a, b)
    return a


def _socket(tmp: str) -> str:
    """A Unix socket's path (the socket file stays after the socket is closed)."""
    import socket

    path = os.path.join(tmp, "prog.sock")
    if not os.path.lexists(path):
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(path)
    return path


def _sysfs_file() -> str:
    """A pseudo-file whose size (4096) is not what a read returns."""
    for path in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/profiling",
                 "/sys/power/state"):
        if os.path.exists(path):
            return path
    return "/proc/self/stat"


def _graph_only(tmp: str, m: Maker) -> str:
    path = os.path.join(tmp, "graph_only.st")
    if not os.path.exists(path):
        ep = st.load(m.blob)
        st.save(ep, path, weights=False)
    return path
