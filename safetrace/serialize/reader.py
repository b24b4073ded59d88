"""``load``: read a format-2 file (a path, a binary file object or bytes) into an
ExportedProgram, within budgets; a rejected file leaves nothing behind (its interned
expressions are released).
"""

from __future__ import annotations

import gc
import json
import os
import re
import traceback
from typing import Any

import torch

from safetrace.progress import task
from safetrace.errors import ExportError, LoadError
from safetrace.errors.load import bad_file, bad_source, over_budget
from safetrace.serialize import declared, lease, tensorfile
from safetrace.serialize.budgets import Budgets, budgets_of, json_shape
from safetrace.serialize.codec import expr_budget
from safetrace.serialize.rebuild import Builder
from safetrace.serialize.state import LazyTensor, written_ties
from safetrace.serialize.saving import FORMAT, PROGRAM, VERSION
from safetrace.trace.session import gc_paused
from safetrace.symbolic.expr import release_since, table_mark

_TOP = {"format", "version", "torch_version", "symbols", "nodes", "inputs", "outputs",
        "contract", "in_spec", "out_spec", "range_constraints", "dims_report", "state",
        "constants", "weights", "aliases"}
# written only by programs with control flow, splits, constants named unlike their inputs
_OPTIONAL = {"subgraphs", "splits", "constant_paths", "constant_aliases"}
_SINCE = {1: {"dim_names", "training"}}  # fields every file of format 2.<minor> has
_TORCH_VERSION = re.compile(r"[0-9A-Za-z.+_-]{1,64}")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the JSON escape of a surrogate


def load(source: Any, *, weights: Any = None, allow_ops: Any = (),
         budgets: Any = None, mmap: bool = False, verbose: bool | None = None,
         allow_cuda: bool = False) -> Any:
    """Read a program written by ``save`` from a path, a binary file object or bytes.

    From a path, the file is mapped copy-on-write under a read lease where the kernel
    grants one (Linux, a file of this user's own on a local filesystem, open for writing
    nowhere): nothing is copied at load, and any process that opens the file for writing
    or truncates it waits until the mapping is a private copy.  Elsewhere (and from a
    file object or bytes) the weights are read into memory of the program's own, each
    tensor straight into its storage (no other copy).  Either way nothing done to the
    file or to the buffer given afterwards can change or crash the loaded program, and
    the program never writes the file or the buffer.

    ``mmap=True`` (paths only) maps the file copy-on-write without a lease: loading costs
    no time and untouched weights no memory, but the file must then stay as it is while
    the program lives (truncating it kills the process with SIGBUS at the next call; rewriting
    it in place changes the weights): see docs/saving.md.

    ``weights``: for a file saved with ``weights=False``, a safetensors file (path) or a
    state_dict with the parameters and persistent buffers; names, shapes and dtypes are
    checked.  ``allow_ops``: operators of other namespaces the graph may call
    (``"mylib::op"`` or a whole namespace ``"mylib"``).  ``budgets``: overrides of
    ``safetrace.serialize.Budgets`` (a dict or a Budgets).  ``allow_cuda``: a program
    exported on a GPU names CUDA devices (``torch.zeros(n, device="cuda")``); calling it
    starts CUDA, so such a file loads only with ``allow_cuda=True``.  ``verbose``: report a long
    load's progress on standard error (by default only on a terminal).
    """
    limits = budgets_of(budgets)
    ops = frozenset(_op_names(allow_ops))
    if not isinstance(mmap, bool):
        raise TypeError(f"mmap must be True or False, got {type(mmap).__name__}")
    if not isinstance(allow_cuda, bool):
        raise TypeError(f"allow_cuda must be True or False, got {type(allow_cuda).__name__}")
    mark = table_mark()
    try:
        # (the collector paused as in an export: the document's objects and the graphs'
        # nodes, with their cycles, live on; collections would scan them again and again)
        with gc_paused(), task("st.load: reading and validating", verbose):
            return _load(source, weights, ops, limits, mmap, allow_cuda)
    except BaseException as err:  # noqa: BLE001 - released below, then re-raised
        error = err
    # Outside the handler the failed load's frames are gone once the tracebacks drop them
    # (kept as text): then release what it interned.
    _frames_to_text(error)
    gc.collect(1)
    release_since(mark)
    raise error


def _frames_to_text(error: BaseException) -> None:
    """Drop the tracebacks of ``error`` and of its causes, keeping those of internal errors
    (not LoadError: a bug, an interrupt, a MemoryError) as a note with the frames' text."""
    seen: set = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen and len(seen) < 16:
        seen.add(id(e))
        if e.__traceback__ is not None and not isinstance(e, LoadError):
            text = "".join(traceback.format_tb(e.__traceback__))
            e.add_note(f"(traceback of the {type(e).__name__} inside st.load)\n{text}")
        e.__traceback__ = None
        e = e.__cause__ or e.__context__


def _op_names(allow_ops: Any) -> list[str]:
    if isinstance(allow_ops, str):
        allow_ops = [allow_ops]
    out = []
    for name in allow_ops:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_]"
                                                     r"[A-Za-z0-9_]*)?", name):
            raise TypeError(f"allow_ops entries are 'namespace::op' or 'namespace' strings, "
                            f"got {name!r:.60}")
        if name.split("::")[0] in ("aten", "prims"):
            raise TypeError(f"allow_ops cannot extend the aten allowlist ({name!r})")
        out.append(name)
    return out


def _load(source: Any, weights: Any, allow_ops: frozenset, budgets: Budgets,
          mapped: bool, allow_cuda: bool = False) -> Any:
    if mapped and not isinstance(source, (str, os.PathLike)):
        raise bad_source(f"st.load(..., mmap=True) maps a file given by its path; got a "
                         f"{type(source).__name__}", "st.load(path, mmap=True), or drop mmap=True")
    docs: list = []

    def check(metadata: dict, header: dict) -> None:
        # the program, and its state against the header, before any tensor is read
        docs.append(_document(metadata, budgets))
        declared.program_tensors(docs[-1], header)

    try:
        container = _container(source, budgets, mapped, check)
    except OSError as err:
        raise bad_source(f"cannot read the program file: {err}") from None
    doc = docs[-1]
    try:
        external = _external(weights, budgets, mapped, doc) if weights is not None else None
    except OSError as err:
        raise bad_file(None, f"cannot read the weights file: {err}") from None
    try:
        with expr_budget(budgets.max_expr_nodes, budgets.max_expr_nodes_each):
            ep = Builder(doc, container, external, allow_ops, budgets, allow_cuda).build()
    except RecursionError:
        raise bad_file(PROGRAM, "structure nested too deeply") from None
    except (LoadError, ExportError):  # (OpShapeError is a RuntimeError too: as it is)
        raise
    except (ArithmeticError, TypeError, ValueError, KeyError, IndexError, AttributeError,
            LookupError, RuntimeError) as err:
        # a combination of fields the checks above did not foresee: still a bad file
        raise bad_file(PROGRAM, f"malformed program ({type(err).__name__}: "
                                f"{str(err)[:200]})") from err
    written_ties(doc, ep)
    containers = [c for c in (container, getattr(external, "container", None)) if c is not None]
    written = ep.written_placeholders()
    if any(s.kind != "user_input" and s.name in written for s in ep.graph_signature.input_specs):
        # a program that writes its own state never runs on a leased mapping: the copy a
        # lease break makes (another thread of ours, at any time) could lose a write made
        # while it copies; copied now, before the program first runs
        for c in containers:
            if getattr(c, "leased", None):
                lease.privatize(c.leased)
    files = {c.mapped for c in containers if c.mapped is not None}
    ep.mapped_files = frozenset(files)  # st.save refuses to write over one of these
    # Weights read into memory of the program's own are its state already: its modules
    # share them (torch's semantics) with no copy.  A mapping of a file (mmap=True) or a
    # caller's state_dict (weights={...}) is copied once, on first use (ep.own_state).
    ep._owns_state = not files and (external is None or isinstance(external, _Weights))
    return ep


def _container(source: Any, budgets: Budgets, mapped: bool, check: Any) -> Any:
    if isinstance(source, (bytes, bytearray, memoryview)):
        if memoryview(source).nbytes > budgets.max_file_bytes:
            raise over_budget(None, f"the bytes given hold over {budgets.max_file_bytes} "
                              "bytes", "max_file_bytes", memoryview(source).nbytes)
        return tensorfile.read_bytes(source, budgets, "file", check)
    if hasattr(source, "read"):
        return tensorfile.read_stream(source, budgets, "file", check)
    if isinstance(source, (str, os.PathLike)):
        fd = tensorfile.open_regular(source, "program file")
        try:
            return tensorfile.read_fd(fd, budgets, "file", mapped, check)
        finally:
            os.close(fd)
    raise bad_source(f"st.load got {source!r:.80} of type {type(source).__name__}, which is "
                     "not a program source: expected a file path (str or os.PathLike), a "
                     "binary file object or bytes", "st.load(\"model.st\") with the path given "
                     "to st.save, or st.load(open(path, \"rb\"))")


def _document(metadata: dict, budgets: Budgets) -> dict:
    if PROGRAM not in metadata:
        raise bad_file(None, "not a safetrace program: a safetensors file without the "
                             f"{FORMAT!r} metadata (a plain checkpoint? load the program file and "
                             "pass the checkpoint as st.load(program, weights=checkpoint))")
    try:
        raw = metadata.pop(PROGRAM).encode("utf-8")  # (the text is not kept twice)
    except UnicodeEncodeError as err:
        raise bad_file(PROGRAM, f"not valid Unicode ({err.reason} at character "
                                f"{err.start}: a lone surrogate escape)") from None
    json_shape(raw, budgets, PROGRAM, max_string=budgets.max_json_string)
    try:
        doc = json.loads(raw, object_pairs_hook=tensorfile.no_duplicate_keys,
                         parse_constant=_no_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise bad_file(PROGRAM, f"not valid JSON: {str(err)[:200]}") from None
    if _SURROGATE.search(raw):  # an escape of one: is every one half of a pair?
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as err:
            raise bad_file(PROGRAM, f"a string holds a lone surrogate escape "
                                    f"({err.object[err.start:err.end]!a}): not valid "
                                    "Unicode") from None
    _check_version(doc)
    _printable(doc)
    return doc


_PLAIN = re.compile(r"[ -~]*\Z")  # printable ASCII: nearly every string of a file
_MULTILINE = frozenset({"stack_trace", "args", "kwargs"})  # (keys of a node)
_NODE_CHECKED = frozenset({"name", "op", "target"})


def _printable(doc: Any) -> None:
    """Refuse a string of the program that is not printable text: ``print(ep)``, errors and
    ``to_torch()``'s graphs show the file's names, paths and source lines, and a terminal
    escape, a carriage return or a direction mark there could hide or forge lines of the
    graph shown (a source line ending in a carriage return, then a forged ``add = ...``).  A node's ``stack_trace`` (its source
    lines) and the strings of its arguments (a check's message, shown as the error of a
    failed call) may hold line breaks and tabs, nothing else may."""
    stack: list = [(doc, False)]
    while stack:
        value, trace = stack.pop()
        if isinstance(value, str):
            if not _PLAIN.match(value) and not (
                    value.replace("\n", "").replace("\t", "") if trace else value).isprintable():
                bad = next(c for c in value if not c.isprintable() and not (trace and c in "\n\t"))
                raise bad_file(PROGRAM, f"a string holds {bad!a}, a character that is not "
                                        f"printable (control, format or line separator): "
                                        f"{value[:60]!a}")
        elif isinstance(value, dict):
            node = "op" in value  # (its name, op and target: identifiers and operators)
            for k, v in value.items():
                if k in ("val", "splits") or (node and k in _NODE_CHECKED):  # (decoded by
                    continue  # their grammar; the splits' lines checked by rebuild.py)
                stack.append((k, False))
                stack.append((v, trace or k in _MULTILINE))
        elif isinstance(value, list):
            stack.extend((v, trace) for v in value)


def _external(weights: Any, budgets: Budgets, mapped: bool, doc: dict) -> dict:
    """Tensors given with ``weights=``: a state_dict, or a safetensors file mapped."""
    if isinstance(weights, dict):
        bad = [k for k, v in weights.items()
               if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
        if bad:
            raise bad_file(None, f"weights= must map names to tensors; bad entries {bad[:5]}")
        return dict(weights)
    if not isinstance(weights, (str, os.PathLike)):
        raise bad_file(None, f"weights= must be a safetensors file path or a state_dict, got "
                             f"{type(weights).__name__}")
    fd = tensorfile.open_regular(weights, "weights file")
    try:
        c = tensorfile.read_fd(fd, budgets, "weights file", mapped,
                               lambda _metadata, header: declared.weights_tensors(doc, header))
    finally:
        os.close(fd)
    return _Weights({k: LazyTensor(c, k) for k in c.header}, c)


class _Weights(dict):
    """The tensors of a weights file, and the file's container."""

    def __init__(self, tensors: dict, container: Any) -> None:
        super().__init__(tensors)
        self.container = container


def _check_version(doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad_file(PROGRAM, f"not a safetrace program (format field is not {FORMAT!r})")
    v = doc.get("version")
    if (not isinstance(v, list) or len(v) != 2
            or not all(type(x) is int and 0 <= x < 1 << 31 for x in v)):
        raise bad_file(PROGRAM, f"bad format version {str(v)[:40]}")
    if v[0] > VERSION[0]:
        raise bad_file(None, f"this file has format version {v[0]}.{v[1]}, newer than this "
                             f"safetrace reads ({VERSION[0]}.x)", "upgrade safetrace")
    if v[0] < VERSION[0]:
        raise bad_file(None, f"unsupported format version {v[0]}.{v[1]}")
    tv = doc.get("torch_version")
    if not isinstance(tv, str) or not _TORCH_VERSION.fullmatch(tv):
        raise bad_file(PROGRAM, f"torch_version {str(tv)[:40]!a} is not a version "
                                "(at most 64 characters of letters, digits and .+-_)")
    required = _TOP.union(*(f for minor, f in _SINCE.items() if minor <= v[1]))
    extra = doc.keys() - required - _OPTIONAL
    if extra and v[1] <= VERSION[1]:
        raise bad_file(PROGRAM, f"unknown field(s) {sorted(extra)[:5]}")
    missing = required - doc.keys()
    if missing:
        raise bad_file(PROGRAM, f"missing field(s) {sorted(missing)}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")
