"""Builders of ``dynamic_shapes`` values, as torch.export has them.

* ``ShapesCollection``: specs keyed by the input tensors themselves (``sc[x] = (batch, 4)``,
  or ``sc[x][0] = batch``); ``sc.dynamic_shapes(model, args, kwargs)`` turns it into the
  spec tree keyed by argument names.
* ``AdditionalInputs``: more example inputs; every dim whose size differs between the
  examples is ``Dim.DYNAMIC``, every other one static; ``verify(ep)`` checks each example
  against the exported program.
* ``refine_dynamic_shapes_from_suggested_fixes(error, dynamic_shapes)``: the spec with the
  fixes of a ConstraintViolationError applied.

``st.export`` accepts the first two as ``dynamic_shapes`` directly.
"""

from __future__ import annotations

import ast
import re
import weakref
from typing import Any

import torch
from torch.utils import _pytree as pytree

from safetrace import pytree as st_pytree
from safetrace.dims import DerivedDim, Dim, DimHint
from safetrace import errors
from safetrace.errors import DeclaredSpaceViolation, SpecStructureError


def combine_args(model: Any, args: tuple, kwargs: dict | None) -> dict[str, Any]:
    """``{parameter name: value}`` as the call binds them (``*xs`` -> a tuple under "xs",
    ``**kw`` -> a dict under "kw"), as torch.export keys its dynamic_shapes."""
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    kwargs = dict(kwargs or {})
    sig = st_pytree.signature(fn)
    if sig is None:
        out = dict(zip(st_pytree.positional_names(fn, len(args)), args))
        out.update(kwargs)
        return out
    try:
        return dict(sig.bind(*args, **kwargs).arguments)
    except TypeError as err:
        raise errors.spec_signature(str(sig), str(err)) from None


class ShapesCollection:
    """Dynamic shapes keyed by tensor identity: ``sc[x] = (Dim.DYNAMIC, 4)``."""

    def __init__(self) -> None:
        self._specs: dict[int, tuple[Any, Any]] = {}

    def __setitem__(self, tensor: Any, spec: Any) -> None:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"a ShapesCollection is keyed by input tensors, got "
                            f"{type(tensor).__name__}")
        found = self._specs.get(id(tensor))
        if found is not None and found[0] is tensor and found[1] != spec:
            raise ValueError(f"a different spec is already assigned to this tensor: "
                             f"{found[1]!r}, now {spec!r}")
        self._specs[id(tensor)] = (tensor, spec)

    def __getitem__(self, tensor: Any) -> Any:
        """The tensor's spec; a new ``{}`` to fill per dim (``sc[x][0] = batch``) if none."""
        found = self._specs.get(id(tensor))
        if found is None or found[0] is not tensor:
            self[tensor] = {}
            found = self._specs[id(tensor)]
        return found[1]

    def __contains__(self, tensor: Any) -> bool:
        found = self._specs.get(id(tensor))
        return found is not None and found[0] is tensor

    def get(self, tensor: Any, default: Any = None) -> Any:
        return self._specs[id(tensor)][1] if tensor in self else default

    def __len__(self) -> int:
        return len(self._specs)

    def dynamic_shapes(self, model: Any, args: tuple, kwargs: dict | None = None) -> dict:
        """The spec tree keyed by argument names (None where no tensor has an entry)."""
        used: set[int] = set()

        def find(v: Any) -> Any:
            if isinstance(v, torch.Tensor) and v in self:
                used.add(id(v))
                return self._specs[id(v)][1]
            return None

        tree = pytree.tree_map(find, combine_args(model, args, kwargs))
        for key, (tensor, entry) in self._specs.items():
            if key not in used:
                raise _foreign_tensor(model, args, dict(kwargs or {}), tensor, entry)
        return tree


def _foreign_tensor(model: Any, args: tuple, kwargs: dict, tensor: Any,
                    entry: Any) -> SpecStructureError:
    """A ShapesCollection entry whose tensor is not (by identity) one of the inputs."""
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    inputs = [(p, v) for p, v in st_pytree.flatten_inputs(fn, args, kwargs)[0]
              if isinstance(v, torch.Tensor)]
    shape = list(getattr(tensor, "shape", ()))
    same = [p for p, v in inputs if list(v.shape) == shape]
    listed = ", ".join(f"{p}: {list(v.shape)}" for p, v in inputs) or "none"
    target = same[0] if same else (inputs[0][0] if inputs else "x")
    return errors.collection_entry(shape, listed, target, entry)


class AdditionalInputs:
    """More example inputs: dims whose sizes differ among the examples become dynamic."""

    def __init__(self) -> None:
        self._examples: list[tuple[tuple, dict | None]] = []

    def add(self, args: tuple, kwargs: dict | None = None) -> None:
        """One more representative call ``model(*args, **kwargs)``."""
        if type(args) is not tuple:
            raise TypeError(f"AdditionalInputs.add: args must be a tuple, got "
                            f"{type(args).__name__}")
        if kwargs is not None and type(kwargs) is not dict:
            raise TypeError(f"AdditionalInputs.add: kwargs must be None or a dict, got "
                            f"{type(kwargs).__name__}")
        self._examples.append((args, kwargs))

    def dynamic_shapes(self, model: Any, args: tuple, kwargs: dict | None = None) -> dict:
        """The spec tree: ``Dim.DYNAMIC`` where sizes differ, None (static) elsewhere."""
        calls = [(args, kwargs)] + self._examples
        flat = [pytree.tree_flatten(combine_args(model, a, k)) for a, k in calls]
        leaves0, spec0 = flat[0]
        for i, (_, spec) in enumerate(flat[1:], start=1):
            if spec != spec0:
                raise errors.additional_structure(i, spec, spec0)
        out = []
        for j, first in enumerate(leaves0):
            values = [leaves[j] for leaves, _ in flat]
            out.append(_merge(values, j))
        return pytree.tree_unflatten(out, spec0)

    def verify(self, ep: Any) -> None:
        """Check every added example against ``ep``'s input checks (raises on the first
        that the program does not accept)."""
        for args, kwargs in self._examples:
            ep.check_inputs(args, kwargs)


def _merge(values: list, index: int) -> Any:
    first = values[0]
    if type(first) is int and all(type(v) is int for v in values):
        # ints that differ: a symbolic int input, as torch.export makes them
        return None if all(v == first for v in values) else Dim.DYNAMIC
    if not isinstance(first, torch.Tensor):
        if any(type(v) is not type(first) or v != first for v in values[1:]):
            raise errors.additional_value(index, values)
        return None
    if any(not isinstance(v, torch.Tensor) or v.dim() != first.dim() for v in values):
        raise errors.additional_rank(index)
    dims = [None if all(v.shape[d] == first.shape[d] for v in values) else Dim.DYNAMIC
            for d in range(first.dim())]
    return tuple(dims)


# -- torch.export's own Dims --------------------------------------------------------------
# id(a torch.export Dim) -> (a weak reference to it, its safetrace Dim): an id is reused
# once its object is freed, so an entry holds only while its reference still gives that
# object (a freed Dim's id taken by a new one of the same name but another range: that
# range, not the freed one's)
_TORCH_DIMS: dict[int, tuple[weakref.ref, Dim]] = {}


def from_torch_export(e: Any, where: str) -> Any:
    """A torch.export Dim / Dim.AUTO / derived dim written for torch.export, read by duck
    typing (the library never imports torch.export)."""
    kind = getattr(e, "type", None)
    if kind is not None:  # Dim.AUTO / DYNAMIC / STATIC, maybe with a range
        name = getattr(kind, "name", str(kind)).lower()
        hint = {"auto": Dim.AUTO, "dynamic": Dim.DYNAMIC, "static": Dim.STATIC}.get(name)
        if hint is None:
            raise errors.spec_entry(where, e, "an unknown torch.export hint")
        lo, hi = getattr(e, "min", None), getattr(e, "max", None)
        return hint if (lo, hi) == (None, None) else hint(lo, hi)
    root = getattr(e, "root", None)
    if root is not None and callable(getattr(e, "fn", None)):  # derived: fn(root) linear
        base = from_torch_export(root, where)
        at0, at1 = e.fn(0), e.fn(1)
        if not isinstance(base, Dim) or e.fn(2) != 2 * at1 - at0 or at1 - at0 <= 0:
            raise errors.spec_entry(where, e, "only linear derived dims (a*d + b) are supported")
        return DerivedDim(base, at1 - at0, at0)
    name = getattr(e, "__name__", None)
    if isinstance(name, str):  # a named torch.export Dim: one safetrace Dim per object
        hit = _TORCH_DIMS.get(id(e))
        if hit is not None and hit[0]() is e:
            return hit[1]
        hi = getattr(e, "max", None)
        found = Dim(name, min=getattr(e, "min", None),
                    max=None if hi is None or hi >= 2 ** 62 else hi)
        try:
            ref = weakref.ref(e)
        except TypeError:  # (an object without weak references: not remembered)
            return found
        if len(_TORCH_DIMS) > 4096:  # (entries of freed Dims: dropped now and then)
            for k in [k for k, (r, _) in _TORCH_DIMS.items() if r() is None]:
                del _TORCH_DIMS[k]
        _TORCH_DIMS[id(e)] = (ref, found)
        return found
    raise errors.spec_entry(where, e)


# -- applying the fixes of a ConstraintViolationError -------------------------------------
_NAME_FIX = re.compile(r"^\s*(?:Fix:\s*|- )?(?:declare it:\s*)?([A-Za-z_]\w*) = (.+?)\s*"
                       r"(?:\(derive the dim.*)?$")
_POS_FIX = re.compile(r"make it static: ([^\s]+)\.shape\[(\d+)\] -> (\d+)")


def refine_dynamic_shapes_from_suggested_fixes(msg: Any, dynamic_shapes: Any) -> Any:
    """``dynamic_shapes`` with the fixes of a ConstraintViolationError applied.

    ``msg`` is the error itself (its fixes are read as data) or its text (the fixes it
    shows are parsed: ``name = Dim('name', min=2)``, ``name = 4``, ``name = 2*other + 1``,
    ``x.shape[0] -> 3``), as torch.export's function of the same name takes the text.
    """
    positional: list = []
    if isinstance(msg, DeclaredSpaceViolation):
        by_name, by_place = msg.details.get("dim_fixes", {}), msg.details.get("fixes", {})
        positional = msg.details.get("positional", [])
    else:
        by_name, by_place = _parse_fixes(str(msg))
    if isinstance(dynamic_shapes, (list, tuple)) and not _is_tensor_spec(dynamic_shapes):
        # (a tuple spec: one entry per positional input, whose fixes name it by its name)
        return type(dynamic_shapes)(
            _apply(v, by_name, by_place, positional[i] if i < len(positional) else f"[{i}]")
            for i, v in enumerate(dynamic_shapes))
    return _apply(dynamic_shapes, by_name, by_place, "")


def _parse_fixes(text: str) -> tuple[dict, dict]:
    names: dict[str, Any] = {}
    places: dict[tuple[str, int], int] = {}
    for path, d, value in _POS_FIX.findall(text):
        places[(path, int(d))] = int(value)
    parsed: dict[str, Any] = {}
    for line in text.splitlines():
        m = _NAME_FIX.match(line)
        if m is None or m.group(1) in ("dynamic_shapes", "from"):
            continue
        parsed[m.group(1)] = m.group(2).strip()
    for name, rhs in parsed.items():
        value = _parse_rhs(rhs, name, parsed, names)
        if value is not None:
            names[name] = value
    return names, places


def _parse_rhs(rhs: str, name: str, parsed: dict, done: dict) -> Any:
    """``Dim('n', min=2)`` / ``4`` / ``2*m + 1`` without evaluating any code."""
    try:
        node = ast.parse(rhs, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "Dim" and node.attr in ("AUTO", "DYNAMIC", "STATIC"):
        return getattr(Dim, node.attr)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Dim":
        try:
            bounds = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            label = ast.literal_eval(node.args[0]) if node.args else name
        except ValueError:
            return None
        if set(bounds) <= {"min", "max"} and isinstance(label, str):
            return Dim(label, **bounds)
        return None
    root, coef, offset = _linear(node)
    if root is None:
        return None
    base = done.get(root)
    if base is None and root in parsed:
        base = _parse_rhs(parsed[root], root, {}, done)
    base = base if isinstance(base, Dim) else Dim(root)
    return base if (coef, offset) == (1, 0) else DerivedDim(base, coef, offset)


def _linear(node: Any) -> tuple[str | None, int, int]:
    """``k*name + c`` as (name, k, c); (None, 0, 0) for anything else."""
    if isinstance(node, ast.Name):
        return node.id, 1, 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and \
            isinstance(node.right, ast.Constant) and type(node.right.value) is int:
        root, k, c = _linear(node.left)
        step = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
        return (root, k, c + step) if root else (None, 0, 0)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and \
            isinstance(node.left, ast.Constant) and type(node.left.value) is int:
        root, k, c = _linear(node.right)
        return (root, k * node.left.value, c * node.left.value) if root else (None, 0, 0)
    return None, 0, 0


def _apply(spec: Any, by_name: dict, by_place: dict, path: str) -> Any:
    """The spec tree with Dims replaced by name and entries replaced by input position."""
    def entry(e: Any, d: int) -> Any:
        if (path, d) in by_place:
            return by_place[(path, d)]
        if type(e).__module__.startswith("torch.export"):  # torch's Dim: by its name
            ours = from_torch_export(e, path)
            root = ours.root if isinstance(ours, DerivedDim) else ours
            if isinstance(root, Dim) and root.name in by_name:
                e = ours
        if isinstance(e, Dim) and e.name in by_name:
            return by_name[e.name]
        if isinstance(e, DerivedDim) and e.root.name in by_name:
            new = by_name[e.root.name]
            if isinstance(new, int):
                return e.coef * new + e.offset
            if isinstance(new, Dim):
                return DerivedDim(new, e.coef, e.offset)
            if isinstance(new, DerivedDim):  # root = a*r + b: coef*(a*r + b) + offset
                return DerivedDim(new.root, e.coef * new.coef, e.coef * new.offset + e.offset)
        return e

    if isinstance(spec, dict) and all(isinstance(k, int) for k in spec) and spec:
        return {d: entry(e, d) for d, e in spec.items()}
    if isinstance(spec, dict):
        top = not path
        return {k: _apply(v, by_name, by_place, k if top else f"{path}[{k!r}]")
                for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        if _is_tensor_spec(spec):
            return type(spec)(entry(e, d) for d, e in enumerate(spec))
        return type(spec)(_apply(v, by_name, by_place, f"{path}[{i}]")
                          for i, v in enumerate(spec))
    return spec


def _is_tensor_spec(spec: tuple | list) -> bool:
    """A tuple of dim entries (not of nested specs)."""
    return all(e is None or isinstance(e, (int, Dim, DerivedDim, DimHint)) or
               type(e).__module__.startswith("torch.export") for e in spec) \
        and not all(e is None for e in spec)

