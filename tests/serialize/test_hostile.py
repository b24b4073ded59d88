"""Truncated, corrupted and hostile files raise LoadError, never anything else."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import hypothesis.strategies as hs
import pytest
import torch
from hypothesis import HealthCheck, given, settings

import safetrace as st
from safetrace.serialize import register_callable
from tests.serialize.programs import CASES


def _blob(name: str = "scenario_8") -> bytes:
    buf = io.BytesIO()
    st.save(CASES[name]().export(), buf)
    return buf.getvalue()


def _parts(blob: bytes) -> tuple[dict, bytes]:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return json.loads(z.read("program.json")), z.read("tensors.safetensors")


def _pack(doc: dict | bytes, tensors: bytes, extra: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("program.json", doc if isinstance(doc, bytes) else json.dumps(doc))
        z.writestr("tensors.safetensors", tensors)
        for k, v in (extra or {}).items():
            z.writestr(k, v)
    return buf.getvalue()


def _load_error(blob: bytes, match: str | None = None) -> str:
    with pytest.raises(st.LoadError, match=match) as info:
        st.load(blob)
    return str(info.value)


BLOB = _blob()
DOC, TENSORS = _parts(BLOB)
MLP_DOC, MLP_TENSORS = _parts(_blob("mlp"))


def test_unmodified_archive_loads():
    st.load(_pack(DOC, TENSORS))


def test_path_traversal_member_name():
    msg = _load_error(_pack(DOC, TENSORS, {"../../etc/passwd": b"x"}))
    assert "path traversal" in msg


def test_duplicate_member():
    buf = io.BytesIO(_pack(DOC, TENSORS))
    with pytest.warns(UserWarning), zipfile.ZipFile(buf, "a") as z:
        z.writestr("program.json", b"{}")
    _load_error(buf.getvalue(), "duplicate")


def test_huge_declared_tensor():
    (n,) = struct.unpack("<Q", MLP_TENSORS[:8])
    header = json.loads(MLP_TENSORS[8:8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [1 << 40, 1 << 20]
    head = json.dumps(header).encode()
    blob = _pack(MLP_DOC, struct.pack("<Q", len(head)) + head + MLP_TENSORS[8 + n:])
    assert "declares shape" in _load_error(blob)


def test_huge_declared_member_size():
    blob = bytearray(_pack(MLP_DOC, MLP_TENSORS))
    # Patch the uncompressed size of the tensors member in the central directory.
    i = blob.rfind(b"PK\x01\x02", 0, blob.rfind(b"tensors.safetensors"))
    blob[i + 24:i + 28] = struct.pack("<I", 0xFFFFFFF0)
    _load_error(bytes(blob))
    _load_error(_pack(MLP_DOC, MLP_TENSORS), None) if False else None
    with pytest.raises(st.LoadError, match="over the limit"):
        st.load(_pack(MLP_DOC, MLP_TENSORS), max_tensor_bytes=100)


def test_deeply_nested_expression():
    doc = json.loads(json.dumps(DOC))
    e: object = "s0"
    for _ in range(500):
        e = ["not", e]
    doc["contract"]["conditions"].append({"cond": e, "origin": ""})
    assert "deeper" in _load_error(_pack(doc, TENSORS))


def test_deeply_nested_json():
    doc = json.dumps(DOC, separators=(",", ":")).replace('"nodes":[', '"nodes":[' + "[" * 100000 + "]" * 100000 + ",")
    _load_error(_pack(doc.encode(), TENSORS))


def test_non_canonical_expression_that_would_blow_up():
    doc = json.loads(json.dumps(DOC))
    e = ["mul"] + [["add", f"s{i}", 1] for i in range(40)]
    doc["contract"]["conditions"].append({"cond": ["eq", e, 0], "origin": ""})
    assert "canonical" in _load_error(_pack(doc, TENSORS))


def test_cycle_and_forward_reference():
    doc = json.loads(json.dumps(DOC))
    node = next(n for n in doc["nodes"] if n["op"] == "call_function" and n.get("args"))
    node["args"][0] = {"node": node["name"]}
    assert "not defined before" in _load_error(_pack(doc, TENSORS))
    doc = json.loads(json.dumps(DOC))
    calls = [n for n in doc["nodes"] if n["op"] == "call_function"]
    calls[0]["args"] = [{"node": calls[-1]["name"]}] + calls[0].get("args", [])[1:]
    assert "forward reference" in _load_error(_pack(doc, TENSORS))


def test_unknown_operator_names_the_op_and_the_fix():
    doc = json.loads(json.dumps(DOC))
    next(n for n in doc["nodes"] if n["op"] == "call_function")["target"] = \
        "torch.ops.mylib.frobnicate.default"
    msg = _load_error(_pack(doc, TENSORS))
    assert "torch.ops.mylib.frobnicate.default" in msg and "custom_op" in msg


def test_unknown_callable_names_how_to_register():
    doc = json.loads(json.dumps(DOC))
    next(n for n in doc["nodes"] if n["op"] == "call_function")["target"] = "os.system"
    msg = _load_error(_pack(doc, TENSORS))
    assert "'os.system'" in msg and "register_callable" in msg


def test_hostile_names_never_reach_code():
    for field, value in [("name", "x; import os"), ("name", "class")]:
        doc = json.loads(json.dumps(DOC))
        doc["nodes"][0][field] = value
        _load_error(_pack(doc, TENSORS))
    doc = json.loads(json.dumps(DOC))
    doc["contract"]["conditions"].append({"cond": ["eq", "__import__('os')", 0],
                                          "origin": ""})
    assert "bad symbol name" in _load_error(_pack(doc, TENSORS))
    doc = json.loads(json.dumps(DOC))
    doc["in_spec"]["type"] = "os:system"
    _load_error(_pack(doc, TENSORS))


def test_newer_major_version_refused():
    doc = dict(DOC, version=[2, 0])
    msg = _load_error(_pack(doc, TENSORS))
    assert "newer" in msg and "2.0" in msg and "upgrade" in msg
    st.load(_pack(dict(DOC, version=[1, 7], future_field=1), TENSORS))  # minor: accepted


@pytest.mark.parametrize("cut", [0, 10, 100, len(BLOB) // 2, len(BLOB) - 30, len(BLOB) - 1])
def test_truncated_file(cut):
    _load_error(BLOB[:cut])


def test_tensor_data_truncated_or_mismatched():
    _load_error(_pack(MLP_DOC, MLP_TENSORS[:-4]))
    _load_error(_pack(MLP_DOC, MLP_TENSORS + b"\0" * 8), "trailing")
    doc = json.loads(json.dumps(MLP_DOC))
    doc["constants"].append("extra")
    assert "missing" in _load_error(_pack(doc, MLP_TENSORS))


def test_registered_callable_round_trips():
    def double(x):
        return x * 2

    register_callable("tests.serialize.double", double)
    g = torch.fx.Graph()
    ep = CASES["mlp"]().export()
    assert ep is not None and g is not None  # registration itself is exercised here
    with pytest.raises(ValueError, match="already registered"):
        register_callable("tests.serialize.double", lambda x: x)


# Longer run: SAFETRACE_FUZZ_EXAMPLES=20000 pytest tests/serialize -k fuzz (random seeds).
FUZZ_EXAMPLES = int(os.environ.get("SAFETRACE_FUZZ_EXAMPLES", "150"))


def _mutations():
    byte_edit = hs.tuples(hs.just("byte"), hs.integers(0, len(BLOB) - 1), hs.integers(0, 255))
    cut = hs.tuples(hs.just("cut"), hs.integers(0, len(BLOB)), hs.just(0))
    json_edit = hs.tuples(hs.just("json"), hs.integers(0, 10_000), hs.sampled_from(
        [None, 0, -1, 1 << 70, "s0", "", [], {}, ["add"], {"node": "x"}, 1.5, True,
         "torch.ops.aten.bogus.default", {"tensor": {}}, ["not", "s0"], "../x"]))
    return hs.lists(hs.one_of(byte_edit, cut, json_edit), min_size=1, max_size=4)


def _apply(mutations: list) -> bytes:
    doc, blob = json.loads(json.dumps(DOC)), None
    for kind, pos, val in mutations:
        if kind == "json":
            _json_edit(doc, pos, val)
            blob = None
    blob = _pack(doc, TENSORS)
    for kind, pos, val in mutations:
        if kind == "byte" and blob:
            b = bytearray(blob)
            b[pos % len(b)] = val
            blob = bytes(b)
        elif kind == "cut":
            blob = blob[:pos]
    return blob


def _json_edit(doc: object, pos: int, val: object) -> None:
    """Replace the pos-th scalar or container (in document order) by val."""
    slots = []

    def walk(o):
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            slots.append((o, k))
            walk(v)

    walk(doc)
    if slots:
        o, k = slots[pos % len(slots)]
        o[k] = json.loads(json.dumps(val))  # a fresh copy: never a cycle


@settings(max_examples=FUZZ_EXAMPLES, deadline=None,
          derandomize="SAFETRACE_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=list(HealthCheck))
@given(_mutations())
def test_fuzz_mutated_archives_only_load_or_raise_load_error(mutations):
    blob = _apply(mutations)
    try:
        ep = st.load(blob)
    except st.LoadError:
        return
    ep.graph_module.print_readable(print_output=False)
    ep.describe_contract()
