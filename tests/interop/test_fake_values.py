"""``ep.to_torch()`` builds torch's fake values from safetrace's shapes; ``verify=True``
recomputes them with torch's meta kernels.  Both conversions must agree on every node:
same rank, dtype and device, and sizes equal as functions of the input sizes (compared at
sample points of the declared ranges); a view of the strides table gets torch's strides.

(The other interop tests convert with ``verify=True``, see conftest.py: this file checks
the default, fast path against it.)
"""

from __future__ import annotations

import itertools
import warnings

import pytest
import sympy
import torch

import safetrace as st
from tests.interop.harness import check_parity, wrong_rule_program
from tests.serialize.programs import CASES

from benchmarks.zoo import by_name, fast_entries

FAST = fast_entries()
_VIEWS = ("permute", "transpose", "t", "expand", "slice", "select", "unsqueeze", "squeeze",
          "view", "_unsafe_view", "alias", "detach", "unbind", "split", "split_with_sizes")


def _both(ep):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", st.ConversionWarning)
        return ep.to_torch(verify=False), ep.to_torch(verify=True)


def _points(tep):
    """A few bindings of the backed input symbols inside their ranges."""
    syms = sorted((s for s in tep.range_constraints if str(s).startswith("s")), key=str)
    choices = []
    for s in syms:
        vr = tep.range_constraints[s]
        lo = int(vr.lower)
        hi = lo + 40 if str(vr.upper) in ("int_oo", "oo") else int(vr.upper)
        choices.append(sorted({lo, min(hi, lo + 1), min(hi, lo + 3), min(hi, lo + 17), hi}))
    points = [dict(zip(syms, vals)) for vals in itertools.product(*choices)]
    return points[:64] or [{}]


def _value(size, point):
    if isinstance(size, int):
        return size
    e = size.node.expr if isinstance(size, torch.SymInt) else size
    got = sympy.sympify(e).xreplace({k: sympy.Integer(v) for k, v in point.items()})
    return int(got) if got.is_number else None  # an unbacked size: compared by rank only


def _same_input_layout(node, theirs):
    """A view of the strides table whose input has torch's strides in both programs."""
    if getattr(node.target, "_opname", None) not in _VIEWS or not node.args or \
            not isinstance(node.args[0], torch.fx.Node):
        return False
    a, b = node.args[0].meta.get("val"), theirs[node.args[0].name].meta.get("val")
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and \
        [str(v) for v in a.stride()] == [str(v) for v in b.stride()]


def _same_values(direct, verified):
    """Every node of `direct` carries torch's metadata of `verified`'s node of that name."""
    theirs = {n.name: n for n in verified.graph.nodes}
    points = _points(verified)
    compared = 0
    for node in direct.graph.nodes:
        a, b = node.meta.get("val"), theirs[node.name].meta.get("val")
        pairs = list(zip(a, b)) if isinstance(a, (tuple, list)) else [(a, b)]
        for x, y in pairs:
            if not isinstance(x, torch.Tensor):
                continue
            assert isinstance(y, torch.Tensor), node.name
            assert type(x).__name__ == "FakeTensor", node.name
            assert (x.dtype, x.device, x.dim()) == (y.dtype, y.device, y.dim()), node.name
            for p in points:
                for d, (s, t) in enumerate(zip(x.shape, y.shape)):
                    vs, vt = _value(s, p), _value(t, p)
                    if vs is not None and vt is not None:
                        assert vs == vt, f"{node.name} dim {d} at {p}: {s} vs {t}"
            if _same_input_layout(node, theirs) and all(isinstance(v, int)
                                                        for v in y.stride()):
                assert list(x.stride()) == list(y.stride()), node.name
            compared += 1
    return compared


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_fakes_from_our_shapes_are_torchs(name):
    case = CASES[name]()
    ep = case.export()
    direct, verified = _both(ep)
    direct.validate()
    assert _same_values(direct, verified) >= 1
    counts = check_parity(ep, direct, [(case.args, case.kwargs)] + case.good + case.bad)
    assert counts["ok"] >= 1


@pytest.mark.parametrize("entry", FAST, ids=[e.name for e in FAST])
def test_fast_zoo_fakes_from_our_shapes_are_torchs(entry):
    if entry.family == "transformers":
        pytest.importorskip("transformers")
    case = entry.factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    direct, verified = _both(ep)
    direct.validate()
    assert _same_values(direct, verified) >= 3
    counts = check_parity(ep, direct, [(case.args, case.kwargs)] + case.others +
                          [case.outside], cap=16)
    assert counts["ok"] >= 3 and counts["rejected"] >= 1


def test_fast_path_runs_no_torch_kernel_for_aten_nodes(monkeypatch):
    """What makes the fast path fast, counted rather than timed (the machines are shared):
    verify=True runs torch's kernel for every ATen node, the default for none of them (it
    reads sizes and compares them for the contract's checks, nothing more)."""
    from safetrace.interop import torch_export

    case = by_name("tiny_gpt").factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    ran: list = []
    real = torch_export._Converter._run

    def counting(self, target, args, kwargs):
        if isinstance(target, torch._ops.OpOverload) and target.name() != "aten::sym_size.int":
            ran.append(target)  # a tensor kernel (size reads and size arithmetic are not)
        return real(self, target, args, kwargs)

    monkeypatch.setattr(torch_export._Converter, "_run", counting)
    counts = {}
    for verify in (False, True):
        ran.clear()
        ep.to_torch(verify=verify)
        counts[verify] = len(ran)
    aten = sum(1 for n in ep.graph.nodes if n.op == "call_function"
               and isinstance(n.target, torch._ops.OpOverload))
    assert aten > 10 and counts[True] > aten // 2  # (a few nodes convert without a kernel)
    assert counts[False] == 0, counts


def test_a_wrong_rule_is_caught_only_by_verify(monkeypatch):
    """The fast path trusts our shapes; verify=True compares them with torch's kernels."""
    ep, _ = wrong_rule_program(monkeypatch)
    ep.to_torch(verify=False)  # converts, trusting our (here corrupted) metadata
    with pytest.raises(st.ConversionError, match="torch's shape propagation gives"):
        ep.to_torch(verify=True)


def test_environment_variable_turns_verification_on(monkeypatch):
    ep, _ = wrong_rule_program(monkeypatch)
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    ep.to_torch()
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "1")
    with pytest.raises(st.ConversionError):
        ep.to_torch()


# (the mlp in the default run; the transformer encoder, ~5-14 s, with -m slow)
@pytest.mark.parametrize("name", ["mlp", pytest.param("transformer_encoder",
                                                      marks=pytest.mark.slow)])
def test_the_lazily_compiled_graph_module_is_torchs_own_code(name):
    # the fast conversion skips the constructor's code generation (done on first use) and
    # torch's verifier (run with verify=True): the program must run, print, copy and
    # validate exactly as an eagerly built one
    import copy

    from torch.export import ExportedProgram

    case = by_name(name).factory()
    ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    fast, checked = _both(ep)
    assert type(fast) is ExportedProgram and type(checked) is ExportedProgram
    eager = torch.fx.GraphModule(fast.graph_module, copy.deepcopy(fast.graph))
    assert fast.graph_module.code == eager.code == checked.graph_module.code
    fast.validate()  # torch's verifier accepts what was not verified up front
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        want = case.model(*args, **kwargs)
        torch.testing.assert_close(fast.module()(*args, **kwargs), want)
        torch.testing.assert_close(copy.deepcopy(fast).module()(*args, **kwargs), want)


def test_graph_module_written_directly_is_torchs_constructors(monkeypatch):
    # the converted program's graph module is made from a plan (its attributes written
    # directly, once the per-process check passed): the same attributes, in the same
    # order, as torch's constructor gives; it prints, pickles and runs the same
    import pickle

    from safetrace.interop import construct

    case = by_name("mlp").factory()
    ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    fast = ep.to_torch()
    assert construct._module_plan() is not None
    monkeypatch.setattr(construct, "_module_plan", lambda: None)
    theirs = ep.to_torch()
    a, b = fast.graph_module, theirs.graph_module
    assert list(vars(a)) == list(vars(b))
    for key, value in vars(a).items():
        if key != "_graph":
            assert type(value) is type(vars(b)[key]) and value == vars(b)[key], key
    assert vars(a)["_tracer_extras"] is not vars(b)["_tracer_extras"]
    assert a.graph.owning_module is a and type(a).__mro__[1:] == type(b).__mro__[1:]
    assert type(a).__name__ == type(b).__name__ and type(a) is not type(b)
    assert str(a) == str(b) and a.code == b.code
    copied = pickle.loads(pickle.dumps(a))
    for args, kwargs in [(case.args, case.kwargs)] + case.others:
        want = case.model(*args, **kwargs)
        torch.testing.assert_close(fast.module()(*args, **kwargs), want)
        torch.testing.assert_close(copied(*fast.state_dict.values(), *args), (want,))


class _FromData(torch.nn.Module):
    """Sizes from data: a boolean-mask index, nonzero, and a size computed from both."""

    def forward(self, x):
        kept = x[x[:, 0] > 0]
        where = torch.nonzero(x > 1)
        return kept * 2, where, kept.sum(0) + where.shape[0]


def test_sizes_from_data_are_built_without_torchs_kernels(monkeypatch):
    """A size only data gives (``x[mask]``'s rows, ``nonzero``'s count) is a fresh unbacked
    torch symbol with our range and the op's ``unbacked_bindings``, as torch's kernel
    makes them; the program runs like eager at other sizes and refuses what ours does."""
    from safetrace.interop import torch_export

    model = _FromData()
    x = torch.randn(10, 4)
    batch = st.Dim("batch", min=0, max=64)
    ep = st.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    ran: list = []
    real = torch_export._Converter._run

    def counting(self, target, args, kwargs):
        if isinstance(target, torch._ops.OpOverload) and target.name() != "aten::sym_size.int":
            ran.append(target.name())
        return real(self, target, args, kwargs)

    monkeypatch.setattr(torch_export._Converter, "_run", counting)
    direct = ep.to_torch(verify=False)
    assert ran == []
    monkeypatch.setattr(torch_export._Converter, "_run", real)
    verified = ep.to_torch(verify=True)
    direct.validate()
    assert _same_values(direct, verified) >= 3
    theirs = torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim(
        "batch", min=0, max=64)}})
    for tep in (direct, verified, theirs):
        bound = [n for n in tep.graph.nodes if n.meta.get("unbacked_bindings")]
        assert len(bound) == 2, [n.name for n in bound]
        for n in bound:
            (sym, path), = n.meta["unbacked_bindings"].items()
            assert str(path[0]) == ".size()" and sym in tep.range_constraints
            assert tep.range_constraints[sym].lower == 0
    for rows in (0, 1, 3, 64):
        y = torch.randn(rows, 4) * 2
        torch.testing.assert_close(direct.module()(y), model(y))
    for bad in (torch.randn(65, 4), torch.randn(3, 5)):
        with pytest.raises(Exception):
            direct.module()(bad)
        with pytest.raises(Exception):
            ep.module()(bad)


def _mode_fields(tep):
    """The program's FakeTensorMode: its fields (containers by type and size), and where
    it was made (file, line, function and source line of each frame but those of this
    file and of safetrace's modes.py, which makes it without reading the lines at
    once)."""
    from safetrace.interop import modes

    mode = next(n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder"
                and isinstance(n.meta.get("val"), torch.Tensor)).fake_mode
    fields = {k: (type(v), len(v)) if hasattr(v, "__len__") else _converter(v) if k ==
              "fake_tensor_converter" else type(v) if k == "shape_env" else v
              for k, v in vars(mode).items() if k != "_stack_trace"}
    frames = [(f.filename, f.lineno, f.name, f.line) for f in mode._stack_trace
              if f.filename not in (modes.__file__, __file__)]  # (this test's: its lines)
    assert frames[-1][2:] == ("__init__", "self._stack_trace = traceback.extract_stack()")
    return fields, frames


def _converter(conv):
    """A mode's converter as torch's class and its attributes' names, once used (the
    conversion's runs torch's constructor on first use)."""
    from torch._subclasses.fake_tensor import FakeTensorConverter

    conv.tensor_memo  # noqa: B018 - (first use)
    return (FakeTensorConverter if isinstance(conv, FakeTensorConverter) else type(conv),
            list(vars(conv)))


def test_converted_modes_converter_is_torchs_once_used():
    """The converted program's fake mode converts real tensors as torch's does: its
    converter, made when first used, holds the attributes torch's constructor gives, in
    its order, and the program decomposes and runs."""
    from torch._subclasses.fake_tensor import FakeTensorConverter

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    ep = st.export(model, (torch.randn(5, 4),), dynamic_shapes={"input": {0: st.Dim("n")}})
    ep.to_torch()
    tep = ep.to_torch()
    mode = next(n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder").fake_mode
    conv = mode.fake_tensor_converter
    real = torch.randn(2, 3)
    fake = mode.from_tensor(real, static_shapes=True)
    assert fake.shape == (2, 3) and fake.fake_mode is mode and mode.from_tensor(
        real, static_shapes=True) is fake  # (torch's memo of the real tensor)
    theirs = FakeTensorConverter(copy_data=False, export=False)
    assert isinstance(conv, FakeTensorConverter) and list(vars(conv)) == list(vars(theirs))
    assert conv.export is False and not conv.meta_converter.copy_data
    decomposed = tep.run_decompositions()
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(tep.module()(x), model(x))
        torch.testing.assert_close(decomposed.module()(x), model(x))
    with pytest.raises(Exception):
        tep.module()(torch.randn(3, 5))


def test_state_fakes_are_torchs_own():
    """Parameters, buffers and constants get torch's fake values (``from_tensor`` of the
    program's mode, static shapes): sizes, strides, storage size, dtype, grad flag, a
    storage each, no autograd history."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.frozen = torch.nn.Parameter(torch.randn(3, 2).t(), requires_grad=False)
            self.register_buffer("scale", torch.full((3,), 2.0))
            self.bias2 = torch.arange(3.0)

        def forward(self, x):
            return self.lin(x) * self.scale + self.bias2 + self.frozen.sum()

    model = Model()
    ep = st.export(model, (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("n")}})
    tep = ep.to_torch()
    places = {n.name: n for n in tep.graph.nodes if n.op == "placeholder"}
    values = {**dict(model.named_parameters()), **dict(model.named_buffers()),
              **tep.constants}
    seen, storages = 0, set()
    for spec in tep.graph_signature.input_specs:
        if spec.kind.name == "USER_INPUT":
            continue
        ours = places[spec.arg.name].meta["val"]
        theirs = ours.fake_mode.from_tensor(values[spec.target], static_shapes=True)

        def fields(v):
            return (type(v), v.shape, v.stride(), v.storage_offset(), v.dtype, v.device,
                    v.requires_grad, v.is_leaf, v.grad_fn, v.untyped_storage().nbytes(),
                    v.fake_device, sorted(k for k in vars(v) if k not in (
                        "fake_mode", "_is_param")))  # (from_tensor marks a Parameter
            # that needs no grad; torch.export's own placeholders carry no such mark)

        assert fields(ours) == fields(theirs), spec.target
        storages.add(ours.untyped_storage()._cdata)
        seen += 1
    assert seen == 5 and len(storages) == seen


def _node_value(node):
    """A node's value, every field of its SymNodes (expression, hint, type, flags)."""
    def sym(v):
        fields = {k: f for k, f in vars(v.node).items() if k not in ("shape_env", "_expr_cache",
                                                                     "_expr_ver")}
        return (type(v).__name__, str(fields))

    v = node.meta.get("val")
    if isinstance(v, torch.Tensor):
        return ([sym(d) if isinstance(d, torch.SymInt) else d for d in v.shape],
                [sym(d) if isinstance(d, torch.SymInt) else d for d in v.stride()],
                v.dtype, v.device, str(v.untyped_storage().nbytes()))
    if isinstance(v, (torch.SymInt, torch.SymBool)):
        return sym(v)
    return repr(v)


def test_shape_env_written_directly_is_torchs():
    """A conversion's ShapeEnv is written from a plan (constants shared, a fresh empty
    container for each of the others) instead of by torch's constructor: the same
    attributes in the same order, of the same types and values, and no container shared
    between two conversions."""
    from safetrace.interop import symbols

    assert symbols._env_plan() is not None  # (the direct path runs)
    ours, again, theirs = symbols.conversion_env(), symbols.conversion_env(), \
        symbols._torch_env()
    a, b = vars(ours), vars(theirs)
    assert list(a) == list(b)
    for key, value in a.items():
        assert type(value) is type(b[key]) and value == b[key], key
        if hasattr(value, "__len__") and not isinstance(value, (str, tuple)):
            assert value is not vars(again)[key], key  # (each its own)
    x = torch.randn(4, 3)  # (and it works as torch's: a symbol, a fake value, a guard)
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import StatelessSymbolicContext, DimDynamic
    for env in (ours, theirs):
        with FakeTensorMode(shape_env=env) as mode:
            fake = mode.from_tensor(x, symbolic_context=StatelessSymbolicContext(
                dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.STATIC]))
            assert (fake.shape[0] * 2 > 3) is not None
    assert [str(g.expr) for g in ours.guards] == [str(g.expr) for g in theirs.guards]
    assert str(ours.var_to_range) == str(theirs.var_to_range)


def test_torch_state_written_directly_is_what_torchs_constructors_write(monkeypatch):
    """The conversion writes some of torch's objects directly instead of through their
    constructors (the input symbols' ShapeEnv entries, each node's ``from_node``, the
    empty guard code of a program with no guard, size arithmetic's SymNodes, an input's
    fake value as a view of its own storage, a size from data's unbacked symbol and its
    bindings, a ``sym_size`` node's value): the program must be the one torch's
    constructors give, compared field by field on a program with an input symbol and
    data-dependent sizes."""
    from safetrace.interop import construct, fakes, modes, symbols, symops, torch_export
    from safetrace.interop import unbacked

    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")  # (the default path's values)
    ep = st.export(_FromData(), (torch.randn(6, 3),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=64)}})

    def state(tep):
        env = next(n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder"
                   and isinstance(n.meta.get("val"), torch.Tensor)).fake_mode.shape_env
        sources = {k: [s.name for s in v] for k, v in env.var_to_sources.items()}
        nodes = [(n.name, [{k: v if k != "graph_id" else v == id(n.graph)
                            for k, v in s.to_dict().items()}
                           for s in n.meta.get("from_node", [])]) for n in tep.graph.nodes]
        first = next(n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder"
                     and isinstance(n.meta.get("val"), torch.Tensor))
        fake = sorted((k, v if k != "fake_mode" else v is first.fake_mode)
                      for k, v in vars(first).items())
        return (dict(env.backed_var_to_val), dict(env.var_to_range), sources,
                dict(env.source_to_var), dict(env.counter), tep.range_constraints, nodes,
                tep._guards_code, str(tep.graph), [_node_value(n) for n in tep.graph.nodes],
                fake, str(env.settings), sorted(map(str, env.size_like)),
                env.unbacked_symint_counter, list(env.var_to_range_sloc),
                [str(n.meta.get("unbacked_bindings")) for n in tep.graph.nodes])

    ep.to_torch()  # (size arithmetic: torch's path the first time, then the direct one)
    _mode_fields(ep.to_torch())
    made = []
    build = symops._build
    monkeypatch.setattr(symops, "_build", lambda *a: made.append(a) or build(*a))
    fast = state(ep.to_torch())
    # (the fast paths ran)
    assert symbols._same_as_torch() and construct._fast_sources() and symops._fast_ok() \
        and symops._direct_ok() \
        and fakes.own_views(2) and fakes.own_views(4) and modes._same_as_torch() and \
        symbols._env_plan() and \
        modes._fields_ok(modes._parts()[0].__init__) and fakes._CPU_STATES and \
        unbacked._unbacked_same_as_torch() and unbacked._bindings_same_as_torch()
    fast_mode = _mode_fields(ep.to_torch())
    assert any(a[0] == "le" for a in made) and any(a[0] == "mul" for a in made)
    monkeypatch.setattr(symbols, "_same_as_torch", lambda: False)
    monkeypatch.setattr(construct, "_fast_sources", lambda: False)
    monkeypatch.setattr(symops, "_fast_ok", lambda: False)
    monkeypatch.setattr(fakes, "own_views", lambda rank: False)
    monkeypatch.setattr(modes, "_same_as_torch", lambda: False)
    monkeypatch.setattr(unbacked, "_unbacked_same_as_torch", lambda: False)
    monkeypatch.setattr(unbacked, "_bindings_same_as_torch", lambda: False)
    monkeypatch.setattr(torch_export._Converter, "_size_of", lambda self, args: self._run(
        torch.ops.aten.sym_size.int, args, {}))  # (torch's kernel for a sym_size node)
    # (the mode's, the ShapeEnv's and the first FakeTensor's attributes written directly)
    monkeypatch.setattr(symbols, "_env_plan", lambda: None)
    monkeypatch.setattr(fakes, "_CPU_STATES", {})
    assert _mode_fields(ep.to_torch()) == fast_mode
    from torch.export import exported_program as torch_module

    to_code = torch_module._convert_guards_to_code

    def guard_code(gm):  # torch's own, which the skip claims is empty
        out = to_code(gm)
        assert out == []
        return out

    monkeypatch.setattr(construct, "_no_guards", guard_code)
    monkeypatch.setattr(fakes, "_CPU_STATES", {})  # (the first value: the constructor's)
    assert state(ep.to_torch()) == fast


def test_torch_config_values_read_directly_are_getattrs():
    # the conversion reads torch's config entries directly (config_value): the value
    # getattr gives, by default and under patch()
    import torch._dynamo.config as dynamo
    import torch._functorch.config as functorch

    from safetrace.interop.lazy import config_value

    names = [(functorch, "fake_tensor_propagate_real_tensors"),
             (functorch, "fake_tensor_allow_meta"), (dynamo, "fake_tensor_cache_enabled"),
             (dynamo, "fake_tensor_cache_crosscheck_enabled")]
    for config, name in names:
        assert config_value(config, name) == getattr(config, name)
        flipped = not getattr(config, name)
        with config.patch(**{name: flipped}):
            assert config_value(config, name) is getattr(config, name) is flipped
        assert config_value(config, name) is getattr(config, name) is not flipped
    # a conversion under a patched setting makes its mode with it
    case = by_name("mlp").factory()
    ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    with dynamo.patch(fake_tensor_cache_enabled=False):
        tep = ep.to_torch()
    mode = next(n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder").fake_mode
    assert mode.cache_enabled is False and ep.to_torch().graph.find_nodes(
        op="placeholder")[0].meta["val"].fake_mode.cache_enabled is True


class _Strided(torch.nn.Module):
    """A strided conv and pool: output sizes ``(h + 1) // 2`` and ``(h + 3) // 4``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(self.conv(x)).flatten(1)


def test_floor_divisions_made_directly_are_torchs(monkeypatch):
    """The conv output sizes' floor divisions take symops' direct path (a SymNode built
    from the expression torch made once) and give the program torch's own path gives:
    every node's value, field by field, its graph and its ranges; inputs outside the
    contract still refused."""
    from safetrace.interop import symops

    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")  # (the default path's values)
    h, w = st.Dim("h", min=8, max=64), st.Dim("w", min=5, max=64)
    ep = st.export(_Strided().eval(), (torch.randn(2, 3, 16, 12),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=1, max=8), 2: h, 3: w}})

    def state(tep):
        return (str(tep.graph), str(tep.range_constraints), str(tep.graph_signature),
                [_node_value(n) for n in tep.graph.nodes])

    ep.to_torch()  # (torch's path the first time for each operation, then the direct one)
    made = []
    build = symops._build
    monkeypatch.setattr(symops, "_build", lambda *a: made.append(a[0]) or build(*a))
    fast = ep.to_torch()
    assert symops._fast_ok() and "floordiv" in made
    monkeypatch.setattr(symops, "_fast_ok", lambda: False)
    assert state(ep.to_torch()) == state(fast)
    mod = fast.module()
    x = torch.randn(3, 3, 9, 5)
    torch.testing.assert_close(mod(x), ep.module()(x))
    with pytest.raises(Exception):
        mod(torch.randn(3, 3, 7, 5))  # h below its minimum


class _Halves(torch.nn.Module):
    """Sizes declared as multiples (``4*hq``: a derived dim, checked ``h == 4*(h // 4)``)
    and read back by the program (``(h - 0) // 4``, an upsample to ``4 * that``)."""

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(x, 2)
        return torch.nn.functional.interpolate(y, size=(x.shape[2] - 0, x.shape[3]))


def test_derived_dims_and_program_sizes_made_directly_are_torchs(monkeypatch):
    """The contract's derived-dim checks (``sub``, ``floordiv``, ``eq``) and the program's
    own size arithmetic take symops' direct path and give torch's program."""
    from safetrace.interop import symops

    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "0")
    hq, wq = st.Dim("hq", min=2, max=32), st.Dim("wq", min=1, max=32)
    ep = st.export(_Halves(), (torch.randn(2, 3, 16, 14),),
                   dynamic_shapes={"x": {0: st.Dim("n", min=0, max=8), 2: 4 * hq,
                                         3: 4 * wq + 2}})

    def state(tep):
        return (str(tep.graph), str(tep.range_constraints), str(tep.graph_signature),
                [_node_value(n) for n in tep.graph.nodes])

    ep.to_torch()
    made = []
    build = symops._build
    monkeypatch.setattr(symops, "_build", lambda *a: made.append(a[0]) or build(*a))
    fast = ep.to_torch()
    assert symops._fast_ok() and {"sub", "eq", "floordiv"} <= set(made)
    monkeypatch.setattr(symops, "_fast_ok", lambda: False)
    assert state(ep.to_torch()) == state(fast)
    mod = fast.module()
    for shape in [(3, 3, 8, 6), (1, 3, 128, 130), (0, 3, 16, 10)]:
        x = torch.randn(shape)
        torch.testing.assert_close(mod(x), _Halves()(x))
    for bad in [(2, 3, 10, 6), (2, 3, 8, 7), (2, 3, 4, 6)]:  # not 4*hq; not 4*wq+2; hq < 2
        with pytest.raises(Exception):  # noqa: B017, PT011 - torch's own error classes
            mod(torch.randn(bad))


def test_each_state_value_of_a_program_has_a_storage_of_its_own():
    """State values' meta tensors are kept per process by form and rank (fakes.statics):
    values of one form in one program (BatchNorm's [8] mean and var, two [8] biases) still
    get a storage each, in every conversion, as torch's placeholders do."""
    from torch.multiprocessing.reductions import StorageWeakRef

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                                torch.nn.Conv2d(8, 8, 1), torch.nn.BatchNorm2d(8)).eval()
    ep = st.export(model, (torch.randn(2, 3, 8, 8),),
                   dynamic_shapes={"input": {0: st.Dim("b", min=1, max=8)}})
    for verify in (False, False, True):
        tep = ep.to_torch(verify=verify)
        values = [n.meta["val"] for n in tep.graph.nodes if n.op == "placeholder"]
        storages = {StorageWeakRef(v.untyped_storage()) for v in values
                    if isinstance(v, torch.Tensor)}
        assert len(storages) == sum(isinstance(v, torch.Tensor) for v in values)
        x = torch.randn(3, 3, 8, 8)
        torch.testing.assert_close(tep.module()(x), model(x))
