"""The state of a converted program: its state_dict and constants under torch.export's
names (a constant's attribute path, ``sub.w`` for our ``c_sub_w``), and a parameter or
buffer shared under several paths listed under each, with a placeholder of its own, as
torch.export lists them (the model's own ``state_dict()`` then loads as it is)."""

from __future__ import annotations

from typing import Any

import torch


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def torch_target(ep: Any, spec: Any) -> str:
    """A state input's name in torch's program: a constant's is the attribute's path, as
    torch.export keys ``ep.constants`` (``ep.lifted_constants``: by the placeholder's
    name)."""
    if spec.kind != "constant":
        return spec.target
    known = vars(ep).get("constant_targets") or {}
    name = spec.target
    return known.get(name) or (name[2:] if name.startswith("c_") else name)


def alias_inputs(conv: Any, spec: Any, canonical: Any) -> list:
    """Placeholders for the other paths of the parameter or buffer `spec` (`canonical`:
    its input spec in torch's program): unused, the graph reads the first, as
    torch.export's."""
    aliases = vars(conv.ep).get("state_aliases")
    if spec.kind not in ("parameter", "buffer") or not aliases or \
            spec.target not in aliases.values():  # (most state has no other path)
        return []
    from torch.export.graph_signature import InputSpec, TensorArgument

    val = conv.graph.find_nodes(op="placeholder", target=canonical.arg.name)[0].meta["val"]
    out = []
    for alias, name in aliases.items():
        if name == spec.target:
            node = conv.graph.placeholder(("p_" if spec.kind == "parameter" else "b_") +
                                          alias.replace(".", "_"))
            node.meta["val"] = val
            out.append(InputSpec(canonical.kind, TensorArgument(node.name), alias,
                                 canonical.persistent))
    return out


def program_state(ep: Any, ordered: list) -> tuple[dict, dict]:
    """The program's state: what the graph writes is the program's own copy, shared
    with every module of the program and of this conversion (as torch.export's
    programs share their state); running it never writes the exported model."""
    state: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    ep.own_state()
    for s in ordered:
        if s.kind in ("parameter", "buffer"):
            t = ep._state[s.target]
        if s.kind == "parameter":
            # (``Parameter(t.detach(), requires_grad=...)``: for a plain tensor, its
            # ``_make_subclass``, which detaches itself)
            state[s.target] = torch.Tensor._make_subclass(
                torch.nn.Parameter, t, t.requires_grad) if type(t) in _PLAIN else \
                torch.nn.Parameter(t.detach(), requires_grad=t.requires_grad)
        elif s.kind == "buffer":  # (a cache written under grad mode carries history:
            # the same memory without it, which torch's tools deepcopy and write)
            (state if s.persistent else constants)[s.target] = \
                t.detach() if t.requires_grad else t
        elif s.kind == "constant":
            value = ep.lifted_constants[s.target]
            # a Parameter held outside the module's registry (in a dict attribute) is
            # a constant of the program: a plain tensor, or torch's module would make
            # it a parameter again (torch.export detaches it too)
            constants[torch_target(ep, s)] = value.detach() if isinstance(
                value, torch.nn.Parameter) else value
    for alias, name in (vars(ep).get("state_aliases") or {}).items():
        for table in (state, constants):
            if name in table and alias not in table:
                table[alias] = table[name]
    for alias, target in (vars(ep).get("constant_aliases") or {}).items():
        if target in constants:  # a constant under two attribute paths: both listed
            constants.setdefault(alias, constants[target])
    return state, constants
