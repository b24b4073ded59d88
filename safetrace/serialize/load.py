"""``load``: rebuild an ExportedProgram from an archive, validating every field.

Nothing in the file is executed or imported: operators are looked up by name in
``torch.ops``, other callables in an explicit registry, classes only among the ones
already registered as pytree nodes.  Any problem is a LoadError saying what is wrong.
"""

from __future__ import annotations

import io
import json
import keyword
import math
import os
import re
import zipfile
from typing import Any

import torch

from safetrace.errors import LoadError
from safetrace.serialize import tensorfile
from safetrace.exporter.contract import Contract
from safetrace.serialize.codec import (IDENT_RE, SYMBOL_RE, ValueDecoder, decode_record,
                                       decode_spec, expect, expect_keys, fail, new_env)
from safetrace.serialize.save import FORMAT, PROGRAM, TENSORS, VERSION
from safetrace.serialize.targets import name_to_target

MAX_JSON_BYTES = 256 << 20
MAX_TENSOR_BYTES = 64 << 30
MAX_NODES = 1_000_000
MAX_SYMBOLS = 100_000
_STATE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,299}$")
_TOP = {"format", "version", "torch_version", "symbols", "nodes", "inputs", "outputs",
        "contract", "in_spec", "out_spec", "range_constraints", "dims_report", "state",
        "constants"}


def load(source: Any, *, max_tensor_bytes: int = MAX_TENSOR_BYTES) -> Any:
    """Read a program written by ``save`` from a path, a binary file or bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _load(io.BytesIO(bytes(source)), max_tensor_bytes)
    if hasattr(source, "read"):
        return _load(source, max_tensor_bytes)
    if not isinstance(source, (str, os.PathLike)):
        raise LoadError(
            f"st.load got {source!r:.80} of type {type(source).__name__}, which is not a program "
            f"source: expected a file path (str or os.PathLike), a binary file object or "
            f"bytes.\nFix: st.load(\"model.st\") with the path given to st.save, or "
            f"st.load(open(path, \"rb\"))")
    with open(os.fspath(source), "rb") as f:
        return _load(f, max_tensor_bytes)


def _load(f: Any, max_tensor_bytes: int) -> Any:
    program, tensors = _read_archive(f, max_tensor_bytes)
    try:
        doc = json.loads(program.decode("utf-8"), object_pairs_hook=tensorfile.no_duplicate_keys,
                         parse_constant=_no_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise LoadError(f"{PROGRAM}: not valid JSON: {str(err)[:200]}") from None
    _check_version(doc)
    try:
        return _Builder(doc, tensorfile.load(tensors, TENSORS)).build()
    except RecursionError:
        raise LoadError(f"{PROGRAM}: structure nested too deeply") from None


def _read_archive(f: Any, max_tensor_bytes: int) -> tuple[bytes, bytes]:
    try:
        z = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise LoadError(f"not a safetrace archive (zip): {err}") from None
    with z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        for name in names:
            if name not in (PROGRAM, TENSORS):
                bad = ".." in name or name.startswith(("/", "\\")) or ":" in name
                raise LoadError(f"archive member {name[:100]!r} is not part of the format"
                                + (" (a path traversal name)" if bad else ""))
        if len(set(names)) != len(names):
            raise LoadError("archive has duplicate members")
        if set(names) != {PROGRAM, TENSORS}:
            raise LoadError(f"archive lacks {sorted({PROGRAM, TENSORS} - set(names))}: "
                            "truncated or not written by st.save")
        data = {}
        for info in infos:
            limit = MAX_JSON_BYTES if info.filename == PROGRAM else max_tensor_bytes
            if info.flag_bits & 0x1:
                raise LoadError(f"{info.filename}: encrypted members are not supported")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise LoadError(f"{info.filename}: unsupported compression "
                                f"{info.compress_type}")
            if info.file_size > limit:
                raise LoadError(f"{info.filename}: declares {info.file_size} bytes, over the "
                                f"limit of {limit} (max_tensor_bytes=... raises it)")
            try:
                with z.open(info) as member:
                    raw = member.read(info.file_size + 1)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError,
                    NotImplementedError, zipfile.LargeZipFile) as err:
                raise LoadError(f"{info.filename}: corrupted: {err}") from None
            except Exception as err:  # noqa: BLE001 - zlib.error and friends
                raise LoadError(f"{info.filename}: corrupted: {err}") from None
            if len(raw) != info.file_size:
                raise LoadError(f"{info.filename}: holds {len(raw)} bytes, declares "
                                f"{info.file_size}")
            data[info.filename] = raw
    return data[PROGRAM], data[TENSORS]


def _check_version(doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LoadError(f"{PROGRAM}: not a safetrace program (format field is not {FORMAT!r})")
    v = doc.get("version")
    if (not isinstance(v, list) or len(v) != 2
            or not all(type(x) is int and 0 <= x < 1 << 31 for x in v)):
        raise LoadError(f"{PROGRAM}: bad format version {str(v)[:40]}")
    if v[0] > VERSION[0]:
        raise LoadError(f"this file has format version {v[0]}.{v[1]}, newer than this "
                        f"safetrace reads ({VERSION[0]}.x).\nFix: upgrade safetrace")
    if v[0] < 1:
        raise LoadError(f"unsupported format version {v[0]}.{v[1]}")
    extra = doc.keys() - _TOP
    if extra and v[1] <= VERSION[1]:
        raise LoadError(f"{PROGRAM}: unknown field(s) {sorted(extra)[:5]}")
    missing = _TOP - doc.keys()
    if missing:
        raise LoadError(f"{PROGRAM}: missing field(s) {sorted(missing)}")


class _Builder:
    def __init__(self, doc: dict, tensors: dict[str, torch.Tensor]) -> None:
        self.doc = doc
        self.tensors = tensors

    def build(self) -> Any:
        from safetrace.exporter.program import ExportedGraphModule, ExportedProgram

        doc = self.doc
        self.env = self._env(expect(doc["symbols"], list, "symbols"))
        state, constants = self._state()
        graph, placeholders, outputs = self._graph(expect(doc["nodes"], list, "nodes"))
        in_spec = decode_spec(doc["in_spec"], "in_spec")
        out_spec = decode_spec(doc["out_spec"], "out_spec")
        contract = self._contract(doc["contract"])
        if in_spec.num_leaves != len(contract.inputs):
            raise fail("in_spec", f"{in_spec.num_leaves} leaves, but the contract has "
                                  f"{len(contract.inputs)}")
        inputs = self._inputs(placeholders, len(contract.inputs), state, constants)
        out_specs = self._outputs(len(outputs), state)
        n_user = sum(1 for s in out_specs if s.kind == "user_output")
        if out_spec.num_leaves != n_user:
            raise fail("out_spec", f"{out_spec.num_leaves} leaves, but the graph returns "
                                   f"{n_user} user outputs")
        try:
            graph.lint()
        except Exception as err:  # noqa: BLE001
            raise fail("nodes", f"inconsistent graph: {err}") from None
        gm = ExportedGraphModule(torch.nn.Module(), graph, "GraphModule")
        ep = ExportedProgram(gm, inputs, out_specs, in_spec, out_spec, state=state,
                             constants=constants, contract=contract)
        # (format 1 also stores these two; the program derives them from its contract)
        self._range_constraints()
        self._pairs("dims_report", str)
        try:
            ep._check_fn = ep._build_checks()
        except Exception as err:  # noqa: BLE001 - the contract could not be compiled
            raise fail("contract", f"cannot build the input checks: {err}") from None
        return ep

    # -- symbols and tensors ---------------------------------------------------------
    def _env(self, items: list) -> Any:
        if len(items) > MAX_SYMBOLS:
            raise fail("symbols", f"more than {MAX_SYMBOLS} symbols")
        env = new_env()
        for i, s in enumerate(items):
            where = f"symbols[{i}]"
            expect_keys(s, {"name", "backed", "hint", "lo", "hi"}, where, {"float"})
            name = expect(s["name"], str, where)
            if not SYMBOL_RE.match(name) or name in env.symbols:
                raise fail(where, f"bad or duplicate symbol name {name[:40]!r}")
            lo, hi = (_opt_int(s[k], where) for k in ("lo", "hi"))
            if lo is not None and hi is not None and lo > hi:
                raise fail(where, f"empty range [{lo}, {hi}]")
            try:
                if s.get("float") is True and s["backed"] is False:
                    env.new_unbacked_float(name=name)
                elif expect(s["backed"], bool, where):
                    env.new_backed(expect(s["hint"], int, where), lo, hi, name=name)
                else:
                    env.new_unbacked(lo, hi, name=name)
            except ValueError as err:
                raise fail(where, str(err)) from None
        return env

    def _state(self) -> tuple[dict, dict]:
        doc = self.doc
        state, constants, seen = {}, {}, set()
        for i, s in enumerate(expect(doc["state"], list, "state")):
            where = f"state[{i}]"
            expect_keys(s, {"name", "kind", "requires_grad", "parameter"}, where)
            name = self._state_name(s["name"], where, seen)
            t = self._tensor(f"state:{name}", where)
            if expect(s["parameter"], bool, where):
                if not (t.is_floating_point() or t.is_complex()):
                    raise fail(where, f"parameter {name} has non-float dtype {t.dtype}")
                t = torch.nn.Parameter(t, requires_grad=expect(s["requires_grad"], bool, where))
            state[name] = t
        for i, name in enumerate(expect(doc["constants"], list, "constants")):
            name = self._state_name(name, f"constants[{i}]", seen)
            constants[name] = self._tensor(f"constant:{name}", f"constants[{i}]")
        if self.tensors:
            raise fail(TENSORS, f"tensors not declared by the program: "
                                f"{sorted(self.tensors)[:5]}")
        return state, constants

    def _state_name(self, name: Any, where: str, seen: set) -> str:
        expect(name, str, where)
        if not _STATE_NAME.match(name) or ".." in name or name in seen:
            raise fail(where, f"bad or duplicate state name {name[:60]!r}")
        seen.add(name)
        return name

    def _tensor(self, key: str, where: str) -> torch.Tensor:
        t = self.tensors.pop(key, None)
        if t is None:
            raise fail(where, f"tensor {key!r} is missing from {TENSORS}")
        return t

    # -- graph -------------------------------------------------------------------------
    def _graph(self, items: list) -> tuple[torch.fx.Graph, list, tuple]:
        from safetrace.trace.proxy import Proxy

        if len(items) > MAX_NODES:
            raise fail("nodes", f"more than {MAX_NODES} nodes")
        graph = torch.fx.Graph()
        nodes: dict[str, torch.fx.Node] = {}
        dec = ValueDecoder(nodes, self.env)
        placeholders: list = []
        outputs: tuple | None = None
        for i, item in enumerate(items):
            where = f"nodes[{i}]"
            expect_keys(item, {"name", "op"}, where, {"target", "args", "kwargs", "meta"})
            name = expect(item["name"], str, where)
            where = f"node {name[:60]!r}"
            if not IDENT_RE.match(name) or keyword.iskeyword(name) or name in nodes:
                raise fail(where, "bad or duplicate node name")
            if outputs is not None:
                raise fail(where, "nodes after the output node")
            op = item["op"]
            args = tuple(dec.decode(a, where) for a in expect(item.get("args", []), list, where))
            kwargs = {}
            for pair in expect(item.get("kwargs", []), list, where):
                if (not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str)
                        or not IDENT_RE.match(pair[0]) or pair[0] in kwargs):
                    raise fail(where, "kwargs must be [name, value] pairs with unique names")
                kwargs[pair[0]] = dec.decode(pair[1], where)
            if op == "placeholder":
                if args or kwargs or "target" in item or len(nodes) != len(placeholders):
                    raise fail(where, "placeholders take no arguments and come first")
                node = graph.placeholder(name)
                placeholders.append(node)
            elif op == "call_function":
                target = name_to_target(item.get("target"), where)
                node = graph.create_node("call_function", target, args, kwargs, name=name)
            elif op == "output":
                if len(args) != 1 or kwargs or not isinstance(args[0], tuple) or name != "output":
                    raise fail(where, "the output node returns one tuple")
                node = graph.output(args[0])
                outputs = args[0]
            else:
                raise fail(where, f"unsupported node op {str(op)[:40]!r}")
            if node.name != name:
                raise fail(where, f"name is reserved or clashes (became {node.name!r})")
            nodes[name] = node
            self._meta(node, item.get("meta", {}), where, dec, Proxy)
        if outputs is None:
            raise fail("nodes", "no output node (truncated graph?)")
        return graph, placeholders, outputs

    def _meta(self, node: torch.fx.Node, meta: Any, where: str, dec: Any, proxy: Any) -> None:
        expect_keys(meta, set(), where + " meta", {"val", "stack_trace", "extra"})
        node.meta["stack_trace"] = expect(meta.get("stack_trace", ""), str, where)
        if "val" in meta:
            val = ValueDecoder(None, self.env).decode(meta["val"], where + " meta val")
            try:
                node.meta["val"] = _wrap(val, node, proxy)
            except (RuntimeError, ValueError, OverflowError) as err:
                raise fail(where, f"bad tensor metadata: {str(err)[:200]}") from None
        for k, v in expect(meta.get("extra", {}), dict, where).items():
            if not IDENT_RE.match(k) or k in ("val", "stack_trace"):
                raise fail(where, f"bad meta key {k[:40]!r}")
            node.meta[k] = ValueDecoder(None, self.env).decode(v, f"{where} meta {k}")

    # -- signature and contract ----------------------------------------------------------
    def _inputs(self, placeholders: list, n_leaves: int, state: dict, constants: dict) -> list:
        from safetrace.exporter.signature import InputSpec

        items = expect(self.doc["inputs"], list, "inputs")
        if len(items) != len(placeholders):
            raise fail("inputs", f"{len(items)} input specs for {len(placeholders)} placeholders")
        out, leaves = [], set()
        for i, (s, node) in enumerate(zip(items, placeholders)):
            where = f"inputs[{i}]"
            expect_keys(s, {"kind", "name", "target", "leaf", "persistent"}, where)
            kind = s["kind"]
            if s["name"] != node.name:
                raise fail(where, f"names placeholder {str(s['name'])[:40]!r}, expected "
                                  f"{node.name!r}")
            target, leaf = s["target"], s["leaf"]
            if kind == "user_input":
                ok = (target is None and type(leaf) is int and 0 <= leaf < n_leaves
                      and leaf not in leaves)
                leaves.add(leaf)
            elif kind in ("parameter", "buffer"):
                ok = leaf is None and isinstance(target, str) and target in state
            elif kind == "constant":
                ok = leaf is None and isinstance(target, str) and target in constants
            else:
                ok = False
            if not ok:
                raise fail(where, f"inconsistent input spec (kind {str(kind)[:20]!r}, target "
                                  f"{str(target)[:40]!r}, leaf {str(leaf)[:10]})")
            if kind != "user_input":
                t = state[target] if kind != "constant" else constants[target]
                _same_meta(node, t, where)
            out.append(InputSpec(kind, node.name, target, leaf,
                                 expect(s["persistent"], bool, where)))
        if len(leaves) != n_leaves:
            raise fail("inputs", f"{len(leaves)} user inputs for {n_leaves} contract leaves")
        return out

    def _outputs(self, n: int, state: dict) -> list:
        from safetrace.exporter.signature import OutputSpec

        items = expect(self.doc["outputs"], list, "outputs")
        if len(items) != n:
            raise fail("outputs", f"{len(items)} output specs for {n} graph outputs")
        out = []
        for i, s in enumerate(items):
            where = f"outputs[{i}]"
            expect_keys(s, {"kind", "target"}, where)
            ok = (s["kind"] == "user_output" and s["target"] is None) or (
                s["kind"] == "buffer_mutation" and isinstance(s["target"], str)
                and s["target"] in state)
            if not ok:
                raise fail(where, "inconsistent output spec")
            out.append(OutputSpec(s["kind"], s["target"]))
        return out

    def _contract(self, c: Any) -> Any:
        return decode_record(Contract, c, "contract")

    def _range_constraints(self) -> Any:
        from safetrace.exporter.contract import RangeConstraints, ValueRange
        from safetrace.symbolic.expr import sym

        out = RangeConstraints()
        for i, r in enumerate(expect(self.doc["range_constraints"], list, "range_constraints")):
            where = f"range_constraints[{i}]"
            if not isinstance(r, list) or len(r) != 3:
                raise fail(where, "expected [symbol, lower, upper]")
            lo, hi = _opt_int(r[1], where), _opt_int(r[2], where)
            out[sym(_symbol(r[0], where))] = ValueRange(-math.inf if lo is None else lo,
                                                         math.inf if hi is None else hi)
        return out

    def _pairs(self, key: str, kind: type) -> dict:
        out = {}
        for i, r in enumerate(expect(self.doc[key], list, key)):
            if not isinstance(r, list) or len(r) != 2:
                raise fail(f"{key}[{i}]", "expected a [key, value] pair")
            out[expect(r[0], str, f"{key}[{i}]")] = expect(r[1], kind, f"{key}[{i}]")
        return out


def _wrap(val: Any, node: torch.fx.Node, proxy: Any) -> Any:
    from safetrace.meta import TensorMeta

    if isinstance(val, TensorMeta):
        return proxy(val, node)
    if isinstance(val, (list, tuple)):
        return type(val)(_wrap(v, node, proxy) for v in val)
    return val


def _same_meta(node: torch.fx.Node, t: torch.Tensor, where: str) -> None:
    val = node.meta.get("val")
    meta = getattr(val, "st_meta", None)
    if meta is None or tuple(meta.shape) != tuple(t.shape) or meta.dtype != t.dtype:
        raise fail(where, f"placeholder {node.name} does not match its tensor "
                          f"(shape {list(t.shape)}, {t.dtype})")


def _symbol(x: Any, where: str) -> str:
    if not isinstance(x, str) or not SYMBOL_RE.match(x):
        raise fail(where, f"bad symbol name {str(x)[:40]!r}")
    return x


def _opt_int(x: Any, where: str) -> int | None:
    if x is None:
        return None
    if type(x) is not int or abs(x) > 1 << 62:
        raise fail(where, f"expected an integer bound or null, got {str(x)[:40]}")
    return x



def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")
