"""torch's ``ExportedProgram`` of a conversion, made without its constructor's fixed costs.

``ExportedProgram(...)`` generates and compiles the graph module's Python code and runs
torch's verifier over the whole program before returning: on a small model that is most of
the conversion (an MLP: ~60% of ``to_torch()``), for code that the tools reading the
program (``run_decompositions``, ONNX, ExecuTorch, AOTInductor) never execute, and a check
of a graph the conversion built node for node from ATen schemas.  Here the graph module is
torch's lazy kind (``_LazyGraphModule``: the code is generated on its first call, print or
pickle, exactly as it would have been) and the verifier runs where asked
(``to_torch(verify=True)``, on in the tests).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import operator
from typing import Any, Iterator

import torch
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.traceback import NodeSource, NodeSourceAction

from safetrace.interop.hierarchy import fill_stacks
from safetrace.interop.lazy import exported_program_module, verifier
from safetrace.interop.rebind import rebound


def root_of(attrs: dict) -> torch.nn.Module:
    """The root module a converted graph module is made from: a new ``nn.Module`` holding
    `attrs` (subgraphs, pytree specs), else one bare module shared by every conversion,
    which nothing writes (the graph module reads only its ``training``): ``nn.Module()``
    costs ~13 µs, 3% of a small program's conversion (trace_mlp 1,600k -> 1,552k
    instructions)."""
    if not attrs:
        return _BARE_ROOT
    root = torch.nn.Module()
    for name, value in attrs.items():
        setattr(root, name, value)
    return root


_BARE_ROOT = torch.nn.Module()


def exported_program(*, validate: bool, guards: bool = True, **fields: Any) -> Any:
    """``ExportedProgram(**fields)`` with a lazily compiled graph module, validated by its
    verifiers if `validate`; `guards`: False where the graph's ShapeEnv holds no guard
    (torch's guard code is then empty: not made by scanning every node for the mode)."""
    cls = _unchecked()
    ExportedProgram = cls.__mro__[1]  # (torch's class: `_unchecked`'s base, imported once)
    init = _constructor(ExportedProgram.__init__, guards)
    if init is None:  # (not a plain function: torch's constructor, its graph module eager)
        tep = cls(**fields)
    else:
        tep = cls.__new__(cls)
        init(tep, **fields)
    tep.__class__ = ExportedProgram
    if validate:
        tep.validate()
    return tep


@functools.lru_cache(maxsize=8)
def _constructor(init: Any, guards: bool) -> Any:
    """torch's constructor `init` run with the module-level helpers it calls replaced in
    its own copy (``interop/rebind.py``), the module untouched: the one place its graph
    module is made (here the lazy kind), the getitem pass (skipped where no graph holds a
    getitem) and, where `guards` is False, the one place its guard code is (here none).  Setting the module's two helpers around the call would
    hand a ``torch.export`` running on another thread meanwhile a lazy graph module and
    no guard code.  None where `init` is not a plain function of its module."""
    names: dict[str, Any] = {"_create_graph_module_for_export": graph_module,
                             "_common_getitem_elimination_pass": _getitem_step}
    if not guards:
        names["_convert_guards_to_code"] = _guard_code
    return rebound(init, names)


def graph_module(root: Any, graph: torch.fx.Graph) -> Any:
    """``_LazyGraphModule(root, graph)``.  For the conversion's usual root (a bare
    ``nn.Module``) and a graph that reads nothing from it (no ``get_attr`` or
    ``call_module``: no control-flow subgraph), the module's attributes are written from a
    plan made once per process (each empty container fresh) after torch's own ``__new__``
    (its class of one instance): the constructor sets them one by one through
    ``nn.Module.__setattr__``, ~9% of a small model's conversion.  torch's constructor
    serves every other root and graph, and wherever the plan is missing."""
    plan = _module_plan()
    if plan is None or type(root) is not torch.nn.Module or \
            graph.find_nodes(op="get_attr") or graph.find_nodes(op="call_module"):
        return _LazyGraphModule(root, graph)
    return _planned_module(plan, root, graph)


def _planned_module(plan: tuple, root: Any, graph: torch.fx.Graph) -> Any:
    template, fresh = plan
    torch._C._log_api_usage_once("python.nn_module")  # (as nn.Module's constructor)
    gm = _NEW(_PENDING)  # (its class of one instance: made where its code is)
    d = gm.__dict__
    d.update(template)  # (the constructor's order)
    keys, makers = fresh
    d.update(zip(keys, map(operator.call, makers)))  # (each container fresh: a C loop)
    d["training"] = root.training
    d["_graph"] = graph
    graph.owning_module = gm
    tracer = graph._tracer_cls
    if tracer and "<locals>" not in tracer.__qualname__:
        d["_tracer_cls"] = tracer
    d["_tracer_extras"] = graph._tracer_extras or {}
    return gm


_SET = ("training", "_graph", "_tracer_cls", "_tracer_extras")  # (written per module)
_NEW = object.__new__  # (nn.Module has no __new__ of its own: GraphModule's is object's)


def _own_class() -> type:
    """The class torch's ``GraphModule.__new__`` makes for each instance of the lazy kind
    (``class GraphModuleImpl(_LazyGraphModule)``), named as the constructor leaves it."""
    cls = type("GraphModuleImpl", (_LazyGraphModule,), {
        "__module__": _LazyGraphModule.__new__.__module__,
        "__qualname__": "GraphModule.__new__.<locals>.GraphModuleImpl"})
    cls.__name__ = "GraphModule"
    cls.recompile()  # (the lazy kind's: code generated on first use)
    return cls


def _first_compile(self: Any) -> Any:
    """``_real_recompile`` of a module still of the shared pending class: it gets its own
    class first (torch's code generation writes ``forward`` and ``__call__`` on the
    instance's class), then torch's code generation runs."""
    if type(self) is _PENDING:
        self.__class__ = _own_class()
    return _LazyGraphModule._real_recompile(self)


# The class of a converted program's graph module until its code is first generated (its
# first call, print, `.code`, pickle or copy): torch's constructor makes a class per
# instance (~80k instructions, 3% of a small model's conversion) only for its code
# generation to write that instance's ``forward`` and ``__call__`` on it; until then every
# instance's class holds what torch's fresh class holds (the lazy ``forward``), so one
# class serves them all and each gets its own where torch's code generation runs.  Its
# names are torch's class's, so ``GraphModule.__new__`` of a copy (deepcopy) skips it as
# it skips its own.  Checked once per process against torch's constructor (`_module_plan`).
_PENDING = type("GraphModuleImpl", (_LazyGraphModule,), {
    "__module__": _LazyGraphModule.__new__.__module__,
    "__qualname__": "GraphModule.__new__.<locals>.GraphModuleImpl",
    "_real_recompile": _first_compile})
_PENDING.__name__ = "GraphModule"


@functools.cache
def _module_plan() -> tuple | None:
    """The attributes of torch's ``_LazyGraphModule(nn.Module(), graph)`` but those written
    per module (`_SET`): shared immutable values, and the empty containers to make fresh
    (with their types); None where one is neither, or where a module made from the plan
    differs from the constructor's (checked here, once per process)."""
    try:
        template, fresh = {}, []
        for key, value in vars(_LazyGraphModule(torch.nn.Module(), _sample_graph())).items():
            if key not in _SET and type(value) in _CONTAINERS and not value:
                fresh.append((key, type(value)))
            elif key not in _SET and type(value) not in (type(None), bool, int, str):
                return None
            template[key] = value if key not in _SET else None
        plan = (template, (tuple(k for k, _ in fresh), tuple(t for _, t in fresh)))
        for training in (True, False):
            root = torch.nn.Module().train(training)
            a_graph, b_graph = _sample_graph(), _sample_graph()
            a = _LazyGraphModule(root, a_graph)
            b = _planned_module(plan, root, b_graph)
            if not _same_module(a, b, a_graph, b_graph):
                return None
        return plan
    except Exception:  # noqa: BLE001 - torch's class changed: its constructor serves
        return None


_CONTAINERS = (dict, list, set, collections.OrderedDict)


def _sample_graph() -> torch.fx.Graph:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output((g.call_function(torch.ops.aten.relu.default, (x,)),))
    return g


def _same_module(a: Any, b: Any, a_graph: Any, b_graph: Any) -> bool:
    """Two graph modules of two equal graphs hold the same attributes (each container its
    own), their classes alike, and both run and print the same."""
    va, vb = vars(a), vars(b)
    if list(va) != list(vb) or a_graph.owning_module is not a or \
            b_graph.owning_module is not b or vb["_graph"] is not b_graph:
        return False
    for key, value in va.items():
        other = vb[key]
        if key == "_graph":
            continue
        if type(value) is not type(other) or (type(value) in _CONTAINERS and
                                              (value is other or value != other)):
            return False
        if type(value) not in _CONTAINERS and value != other:
            return False
    ca, cb = type(a), type(b)
    if ca.__mro__[1:] != cb.__mro__[1:] or (ca.__name__, ca.__qualname__, ca.__module__) \
            != (cb.__name__, cb.__qualname__, cb.__module__) or ca.forward is not cb.forward:
        return False
    x = torch.randn(3)
    if not (str(a) == str(b) and a.code == b.code and torch.equal(a(x)[0], b(x)[0])):
        return False
    ca, cb = type(a), type(b)  # (b's own class since its code was generated)
    return ca is not cb and cb is not _PENDING and sorted(vars(ca)) == sorted(vars(cb)) \
        and ca.__mro__[1:] == cb.__mro__[1:] and not ca._needs_recompile() and \
        not cb._needs_recompile() and copy.deepcopy(b).code == b.code


def _getitem_step(gm: Any, graph_signature: Any, module_call_graph: Any) -> None:
    _getitems_pass(gm, graph_signature, module_call_graph)  # (read when called: a test
    # replaces it to stop a conversion inside torch's constructor)


def _getitems_pass(gm: Any, graph_signature: Any, module_call_graph: Any) -> None:
    """torch's ``_common_getitem_elimination_pass``, run where it would change something:
    two ``getitem`` nodes of one graph reading the same index of the same node (it merges
    them; where every getitem's (source, index) is its own, each gets an id of its own
    and the pass changes nothing, at ~200 instructions a node of the graph)."""
    graphs = [m.graph for m in gm.modules() if isinstance(m, torch.fx.GraphModule)] \
        if gm._modules else [gm.graph]
    for graph in graphs:
        seen: set = set()
        for node in graph.find_nodes(op="call_function", target=operator.getitem):
            key = node.args[:2]
            try:
                if key in seen:
                    break
                seen.add(key)
            except TypeError:  # (an unhashable index: torch's pass decides)
                break
        else:
            continue
        exported_program_module()._common_getitem_elimination_pass(
            gm, graph_signature, module_call_graph)
        return


def _guard_code(graph_module: Any) -> list:
    return _no_guards(graph_module)  # (read when called: a test replaces it)


def _no_guards(graph_module: Any) -> list:
    return []


@functools.cache
def _unchecked() -> type:
    """``ExportedProgram`` whose constructor skips its last step, ``validate`` (made once)."""
    from torch.export import ExportedProgram

    class _Unchecked(ExportedProgram):
        def validate(self) -> None:  # run by exported_program where asked
            pass

    return _Unchecked


@contextlib.contextmanager
def config_set(config: Any, name: str, value: Any) -> Iterator[None]:
    """``config.patch(name=value)`` of a torch config module without its cost (``patch``
    defines a class per call: ~5% of a small model's conversion): torch's own
    lower-overhead patcher (``_make_closure_patcher``), made once per setting.  As with
    ``patch``, the value is this thread's only (torch's config values are context
    variables: another thread's ``torch.export`` meanwhile reads its own), and the prior
    one is restored as it was (an unset value stays unset, so a later change of the
    default or of its environment variable is still seen)."""
    change = _patcher(config, name, value)
    if change is None:  # (a config module without the patcher: set and restore)
        before = getattr(config, name)
        setattr(config, name, value)
        try:
            yield
        finally:
            setattr(config, name, before)
        return
    revert = change()
    try:
        yield
    finally:
        revert()


@functools.lru_cache(maxsize=16)
def _patcher(config: Any, name: str, value: Any) -> Any:
    make = getattr(config, "_make_closure_patcher", None)
    return make(**{name: value}) if callable(make) else None


def provenance(graph: torch.fx.Graph, root_type: str) -> None:
    """``from_node`` and ``nn_module_stack`` on every node, as torch.export's graphs have:
    run_decompositions maps the module call signatures' names through the first (without
    it an output whose op decomposes away is lost), unflatten reads the second."""
    root = {"L__self__": ("", root_type)}  # (the exported class, as torch writes it)
    # (a subgraph's get_attr too: unflatten places it in a module like any node)
    if graph.find_nodes(op="get_attr"):
        calls = [n for n in graph.nodes if n.op in ("call_function", "get_attr")]
        for node in calls:  # a subgraph's get_attr: in the module of the cond/loop reading it
            if node.op == "get_attr" and not node.meta.get("nn_module_stack"):
                stack = next((u.meta["nn_module_stack"] for u in node.users
                              if u.meta.get("nn_module_stack")), None)
                if stack:
                    node.meta["nn_module_stack"] = stack
    else:  # (no get_attr: every node but the placeholders and the output, in order)
        calls = [n for n in graph.nodes if n.op == "call_function"]
    stacks = fill_stacks(calls)
    if not _fast_sources():
        for node, stack in zip(calls, stacks):
            node.meta["from_node"] = [NodeSource(node, _PASS, NodeSourceAction.CREATE)]
            node.meta["nn_module_stack"] = {**root, **stack}
        return
    # (`_node_source` inline: NodeSource and its NodeInfo made without their
    # constructors' frames, ~1k instructions a node)
    texts, new, info_class, graph_id = _TARGET_TEXT, _NEW, NodeSource.NodeInfo, id(graph)
    for node, stack in zip(calls, stacks):
        target = node.target
        hit = texts.get(id(target))  # (by identity: an OpOverload's hash is a Python
        if hit is not None and hit[0] is target:  # call; the entry keeps the target alive)
            text = hit[1]
        else:
            text = _target_text(target)
        info = new(info_class)
        info.name = node.name
        info.target = text
        info.graph_id = graph_id
        out = new(NodeSource)
        out.pass_name = _PASS
        out.action = [_CREATE]
        out.node_info = info
        out.from_node = []
        out._action_string = None
        out._dict = None
        meta = node.meta
        meta["from_node"] = [out]
        # torch's stacks start at the root module (unflatten reads every node's)
        meta["nn_module_stack"] = {**root, **stack}


_PASS = "safetrace.to_torch"
_CREATE = NodeSourceAction.CREATE  # (an Enum member read from its class: ~0.3 µs a read)
_NEW = object.__new__  # (neither NodeSource nor its NodeInfo has a __new__ of its own)
# id of a node target -> (the target, str(target)) (an OpOverload's str: ~1 µs)
_TARGET_TEXT: dict[int, tuple] = {}


def _target_text(target: Any) -> str:
    """``str(target)``, kept by the target's identity."""
    if len(_TARGET_TEXT) > 10_000:
        _TARGET_TEXT.clear()
    text = str(target)
    _TARGET_TEXT[id(target)] = (target, text)
    return text


def _node_source(node: torch.fx.Node) -> Any:
    """``NodeSource(node, "safetrace.to_torch", CREATE)`` of a node with no ``from_node``
    of its own, its fields set directly (the constructor's checks and ``str(target)``
    cost ~3 µs a node: 0.5 ms on a small LLM's conversion); `provenance` makes the same
    inline."""
    target = node.target
    hit = _TARGET_TEXT.get(id(target))
    text = hit[1] if hit is not None and hit[0] is target else _target_text(target)
    info = _NEW(NodeSource.NodeInfo)
    info.name = node.name
    info.target = text
    info.graph_id = id(node.graph)
    out = _NEW(NodeSource)
    out.pass_name = _PASS
    out.action = [_CREATE]
    out.node_info = info
    out.from_node = []
    out._action_string = None
    out._dict = None
    return out


@functools.cache
def _fast_sources() -> bool:
    """`_node_source` makes what torch's constructor makes (checked once per process)."""
    try:
        g = torch.fx.Graph()
        node = g.call_function(torch.ops.aten.relu.default, (g.placeholder("x"),))
        theirs, ours = NodeSource(node, _PASS, NodeSourceAction.CREATE), _node_source(node)
        fields = {k: v for k, v in vars(theirs).items() if k != "node_info"}
        return fields == {k: v for k, v in vars(ours).items() if k != "node_info"} and \
            vars(theirs.node_info) == vars(ours.node_info) and \
            theirs.to_dict() == ours.to_dict()
    except Exception:  # noqa: BLE001 - torch's class changed: its constructor serves
        return False


@functools.cache
def allowed_builtins() -> tuple:
    """The Python callables torch's training verifier accepts as a graph's targets, and
    the symbolic ones its graphs hold (made once: the verifier builds its list per call)."""
    return tuple(training_verifier()().allowed_builtin_ops()) + (
        torch.sym_min, torch.sym_max, torch.sym_int, torch.sym_float, torch.sym_sqrt,
        torch.sym_not, torch.sym_ite)


def training_verifier() -> Any:
    return verifier().TrainingIRVerifier
