"""A saved program's state: its parameters, buffers and constants, read and checked.

``StateReader`` is the part of ``rebuild.Builder`` that reads them (its ``doc``,
``container``, ``names`` and ``external``): each state entry's name, kind, dtype and
shape against the stored tensor (or the ``weights=`` one), the file's aliases (tied
tensors), and no stored tensor left undeclared.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import torch

from safetrace.errors.load import bad_source
from safetrace.exporter.program_module import MODULE_ATTRS
from safetrace.serialize import subgraphs
from safetrace.serialize.codec import DTYPES, expect, expect_keys, fail, lookup

_STATE_PART = re.compile(r"^[A-Za-z0-9_]{1,200}\Z")
# attribute names of the module ``ep.module()`` builds, a GraphModule's (``graph``, ``meta``)
# included: a state path component must not shadow one (registering it raised a KeyError)
_RESERVED_ATTRS = (subgraphs.RESERVED - {"self"}) | MODULE_ATTRS  # (BERT: attention.self)


class LazyTensor:
    """A tensor of a weights file, mapped only once its name and meta are checked."""

    def __init__(self, container: Any, name: str) -> None:
        self.container, self.name = container, name
        self.dtype, self.shape = container.header[name]

    def get(self) -> torch.Tensor:
        return self.container.tensor(self.name)


class StateReader:
    """Reads the program's state and constants (mixed into ``rebuild.Builder``)."""

    doc: dict
    container: Any
    names: set
    external: dict | None

    def _state(self) -> tuple[dict, dict]:
        doc = self.doc
        aliases = self._aliases()
        with_weights = expect(doc["weights"], bool, "weights")
        if with_weights and self.external is not None:
            raise bad_source("weights= was given, but this file holds its weights (saved "
                             "with weights=True)", "st.load(path) without weights=")
        if not with_weights and self.external is None:
            raise bad_source("this file was saved without weights (st.save(..., weights="
                             "False))", "st.load(path, weights=<safetensors file or state_dict "
                             "with the parameters and persistent buffers>)")
        entries, seen = [], set()
        for i, s in enumerate(expect(doc["state"], list, "state")):
            where = f"state[{i}]"
            expect_keys(s, {"name", "kind", "requires_grad", "parameter", "dtype", "shape"},
                        where, {"order"})
            name = self._state_name(s["name"], where, seen)
            if s["kind"] not in ("parameter", "buffer"):
                raise fail(where, f"state kind {str(s['kind'])[:20]!r} is not parameter or "
                                  "buffer")
            dtype = lookup(DTYPES, s["dtype"], where, "dtype")
            shape = expect(s["shape"], list, where)
            if len(shape) > 64 or not all(type(x) is int and 0 <= x < 1 << 62 for x in shape):
                raise fail(where, f"bad shape {str(shape)[:60]} (state shapes are static)")
            order = s.get("order")
            if order is not None and (not isinstance(order, list) or sorted(
                    x if type(x) is int else -1 for x in order) != list(range(len(shape)))):
                raise fail(where, f"bad order {str(order)[:60]} (a permutation of the dims)")
            entries.append((where, name, s, dtype, tuple(shape)))
        inputs = expect(doc["inputs"], list, "inputs")
        persistent = {s.get("target"): s.get("persistent") for s in inputs
                      if isinstance(s, dict) and s.get("kind") in ("parameter", "buffer")}
        external = {name for _, name, s, _, _ in entries if not with_weights
                    and (s["parameter"] is True or persistent.get(name) is not False)}
        given = self._given(entries, external) if external or self.external is not None \
            else {}
        state, constants = {}, {}
        laid: dict = {}
        orders: dict = {}  # (id of a stored tensor -> the order its first name lays it out in)
        for where, name, s, dtype, shape in entries:
            if name in given:
                t = given[name]
            else:
                t = self._tensor(f"state:{name}", where, dtype, shape, aliases)
                _one_order(orders, t, s.get("order"), where)
                if s.get("order") is not None:  # (laid out as at export: saving.dense_order;
                    key = (id(t), tuple(s["order"]))  # tied names stay one tensor)
                    if key not in laid:
                        laid[key] = torch.empty_permuted(shape, s["order"],
                                                         dtype=t.dtype).copy_(t)
                    t = laid[key]
            if expect(s["parameter"], bool, where):
                if not (t.is_floating_point() or t.is_complex()):
                    raise fail(where, f"parameter {name} has non-float dtype {t.dtype}")
                t = torch.nn.Parameter(t, requires_grad=expect(s["requires_grad"], bool, where))
            state[name] = t
        for i, name in enumerate(expect(doc["constants"], list, "constants")):
            name = self._state_name(name, f"constants[{i}]", seen)
            constants[name] = self._tensor(f"constant:{name}", f"constants[{i}]", None, None,
                                           aliases)
            _one_order(orders, constants[name], None, f"constants[{i}]")
        if self.names:
            raise fail("file", f"tensors not declared by the program: {sorted(self.names)[:5]}")
        return state, constants

    def _aliases(self) -> dict:
        out = {}
        for i, pair in enumerate(expect(self.doc["aliases"], list, "aliases")):
            if (not isinstance(pair, list) or len(pair) != 2
                    or not all(isinstance(x, str) for x in pair) or pair[0] in out
                    or pair[1] not in self.names or pair[0] in self.names
                    or pair[1] in out):
                raise fail(f"aliases[{i}]", "expected [name, name of a stored tensor]")
            out[pair[0]] = pair[1]
        return out

    def _given(self, entries: list, external: set) -> dict:
        """The weights= tensors, checked against the program: every mismatch at once."""
        ext = self.external
        problems = []
        missing = sorted(external - ext.keys())
        if missing:
            problems.append(f"missing: {', '.join(missing[:20])}")
        unexpected = sorted(ext.keys() - external)
        if unexpected:
            problems.append(f"not in the program: {', '.join(unexpected[:20])}")
        out = {}
        for _, name, _, dtype, shape in entries:
            if name not in external or name not in ext:
                continue
            t = ext[name]
            if t.dtype is not dtype or tuple(t.shape) != shape:
                problems.append(f"{name}: expected {str(dtype).removeprefix('torch.')} "
                                f"{list(shape)}, got {str(t.dtype).removeprefix('torch.')} "
                                f"{list(t.shape)}")
            elif isinstance(t, LazyTensor):
                out[name] = t.get()
            else:
                if t.device.type == "meta":
                    problems.append(f"{name}: a meta tensor (no data)")
                out[name] = t.detach()
        if problems:
            raise bad_source("weights= does not match the program:\n  " + "\n  ".join(problems),
                             "give the parameters and persistent buffers the program was "
                             "saved with (names, shapes and dtypes as listed)")
        return out

    def _state_name(self, name: Any, where: str, seen: set) -> str:
        expect(name, str, where)
        parts = name.split(".")
        if (len(name) > 1000 or name in seen or not all(_STATE_PART.fullmatch(p) for p in parts)
                or any(p in _RESERVED_ATTRS or p.startswith("__") or keyword.iskeyword(p)
                       for p in parts)):
            raise fail(where, f"bad, reserved or duplicate state name {name[:60]!r} (each "
                              "dotted part is a name or index that is not an attribute of "
                              "nn.Module)")
        seen.add(name)
        return name

    def _tensor(self, key: str, where: str, dtype: Any, shape: Any,
                aliases: dict) -> torch.Tensor:
        real = aliases.get(key, key)
        if real not in self.container.header:
            raise fail(where, f"tensor {key!r} is missing from the file")
        cache = self.__dict__.setdefault("_loaded", {})
        if real not in cache:
            self.names.discard(real)
            cache[real] = self.container.tensor(real)
        t = cache[real]
        if dtype is torch.complex128 and t.dtype is torch.float64 and t.shape[-1:] == (2,):
            # a file from before the safetrace.dtypes entry: the pairs, aligned to 16 bytes
            # (complex128 kernels load with aligned instructions: misaligned, they crash)
            t = torch.view_as_complex(t if t.data_ptr() % 16 == 0 else t.clone())
        if dtype is not None and (t.dtype is not dtype or tuple(t.shape) != shape):
            raise fail(where, f"stored tensor is {t.dtype} {list(t.shape)}, the program "
                              f"declares {dtype} {list(shape)}")
        return t


def written_ties(doc: dict, ep: Any) -> None:
    """Refuse a parameter tied (``aliases``) to another name where the program writes one of
    them: the exporter refuses such a write (``state_written_through_alias``), so no saved
    program has one, and a loaded program would compute two ways (from memory of its own the
    write reaches both names; from a mapped file, ``own_state`` copies each name apart)."""
    specs = ep.graph_signature.input_specs
    written = ep.written_placeholders()
    keys = {s.name: f"{'constant' if s.kind == 'constant' else 'state'}:{s.target}"
            for s in specs if s.kind in ("parameter", "buffer", "constant")}
    hit = {keys[s.name] for s in specs if s.name in written and s.name in keys}
    hit |= {f"state:{t}" for t in ep.graph_signature.buffers_to_mutate.values()}
    params = {keys[s.name] for s in specs if s.kind == "parameter"}
    groups: dict = {}
    for name, stored in doc["aliases"]:
        groups.setdefault(stored, {stored}).add(name)
    for i, (name, stored) in enumerate(doc["aliases"]):
        group = groups[stored]
        if group & params and group & hit:
            raise fail(f"aliases[{i}]", f"ties {name!r} to {stored!r}, and the program "
                       f"writes {sorted(group & hit)[0]!r} in place: a parameter tied to "
                       "another name is never written (st.export refuses the write), so "
                       "st.save never writes such a tie",
                       "the file was modified or written by another program; re-export the "
                       "model and save it again")


def _one_order(orders: dict, t: torch.Tensor, order: Any, where: str) -> None:
    """Names tied to one stored tensor (``aliases``) lay it out in one order: the writer
    ties only tensors of one storage, offset, shape and strides, and a name laid out in
    another order would be a copy of its own, untied (a write to one not reaching the
    other, where the file says they are one tensor; session 31)."""
    first = orders.setdefault(id(t), order)
    if first != order:
        raise fail(where, f"tied (aliases) to a tensor the file lays out in order {first}, "
                          f"but laid out in order {order}: tied names are one tensor, of one "
                          "layout")


__all__ = ["LazyTensor", "StateReader", "written_ties"]
