"""A loaded graph calls only the ATen overloads safetrace's exporter records (the list in
``safetrace/serialize/load_ops.py``, made by ``tools/gen_load_ops.py``), and never one that
reaches a device, pins memory or makes a tensor of another layout (session 24).

Until then any public ATen operator of plain arguments passed ("the plain rule"): a file
could call ``pin_memory`` or ``is_pinned`` (which initialise the CUDA runtime on a machine
that has one), build sparse tensors from unchecked indices, or name a device whose backend
torch then imports (``x.to("hpu")`` imports ``torch.hpu``).  The files are loaded here,
never called.
"""

from __future__ import annotations

import importlib.util
import io
import pathlib

import pytest
import torch

import safetrace as st
from safetrace.errors import LoadError
from safetrace.rules import RULES
from safetrace.rules.registry import FAMILY
from safetrace.serialize.allowlist import DENIED, structural_refusal
from safetrace.serialize.load_ops import OPS, TORCH_VERSION
from tests.serialize import surgery
from tests.serialize.hostile_static import saved_abs


def _file(*nodes: dict) -> bytes:
    """The saved program of ``Abs`` with its one call replaced by ``nodes`` (the last is
    the output)."""
    return surgery.calls_replaced(saved_abs(3, 4), *nodes)


def _call(target: str, *args, name: str = "y", **kwargs) -> dict:
    node = {"name": name, "op": "call_function", "target": f"torch.ops.{target}",
            "args": list(args)}
    if kwargs:
        node["kwargs"] = [[k, v] for k, v in kwargs.items()]
    return node


X = {"node": "x"}
SIZES = {"list": [3, 4]}


def test_an_operator_the_exporter_never_records_is_refused_naming_it():
    """``aten.clip`` is a TorchScript spelling of ``clamp``: the tracer records clamp."""
    blob = _file(_call("aten.clip.default", X, {"float": "-1.0"}, {"float": "1.0"}))
    with pytest.raises(LoadError) as info:
        st.load(io.BytesIO(blob))
    text = str(info.value)
    assert "aten.clip.default" in text and "does not record" in text
    assert "not written by safetrace's st.save, or needs a newer safetrace" in text
    assert "load it with that version" in text


def test_the_same_file_with_the_recorded_overload_loads_and_runs():
    blob = _file(_call("aten.clamp.default", X, {"float": "-1.0"}, {"float": "1.0"}))
    x = torch.randn(3, 4) * 3
    torch.testing.assert_close(st.load(io.BytesIO(blob)).module()(x), x.clamp(-1, 1))


@pytest.mark.parametrize("node", [
    _call("aten.pin_memory.default", X),
    _call("aten._pin_memory.default", X),
    _call("aten.is_pinned.default", X),
    _call("aten.cuda.default", X),
], ids=["pin_memory", "_pin_memory", "is_pinned", "cuda"])
def test_device_operators_are_refused_at_load(node):
    with pytest.raises(LoadError, match=r"refused in loaded graphs: it (pins memory|asks the "
                                        r"CUDA runtime|moves a tensor to a device)"):
        st.load(io.BytesIO(_file(node)))


def test_pinned_memory_asked_of_a_factory_is_refused_at_load():
    blob = _file(_call("aten.empty.memory_format", SIZES, pin_memory=True))
    with pytest.raises(LoadError, match=r"argument 'pin_memory'.*initialises the CUDA"):
        st.load(io.BytesIO(blob))
    blob = _file(_call("aten.empty.memory_format", SIZES, pin_memory=False))
    assert st.load(io.BytesIO(blob)).module()(torch.randn(3, 4)).shape == (3, 4)


@pytest.mark.parametrize("device", ["hpu", "xla", "privateuseone", "lazy", "mps", "xpu"])
def test_a_device_of_another_kind_is_refused_at_load(device):
    blob = _file(_call("aten._to_copy.default", X, device={"device": device}))
    with pytest.raises(LoadError, match=rf"names the device {device}: loaded graphs may "
                                        r"name cpu, cuda, meta devices only"):
        st.load(io.BytesIO(blob))


def test_a_sparse_layout_is_refused_at_load():
    blob = _file(_call("aten.zeros.default", SIZES, layout={"layout": "sparse_coo"}))
    with pytest.raises(LoadError, match=r"layout torch.sparse_coo: loaded graphs compute "
                                        r"strided"):
        st.load(io.BytesIO(blob))


@pytest.mark.parametrize("target,args", [
    ("aten.sparse_coo_tensor.indices", [X, X]),
    ("aten.to_sparse.default", [X]),
    ("aten.quantize_per_tensor.default", [X, {"float": "0.1"}, 0, {"dtype": "quint8"}]),
    ("aten.lstm.data", [X, X, {"list": []}, True, 1, {"float": "0.0"}, False, False]),
    ("aten.requires_grad_.default", [X]),
    ("aten.lift.default", [X]),
    # (core ATen, but a gradient kernel: it writes where its indices say; 10**9 crashed)
    ("aten.max_pool2d_with_indices_backward.default", [X, X, {"list": [2]}, {"list": [2]},
                                                       {"list": [0]}, {"list": [1]}, False, X]),
])
def test_reviewed_out_families_are_refused_at_load(target, args):
    with pytest.raises(LoadError, match="does not record"):
        st.load(io.BytesIO(_file(_call(target, *args))))


def test_every_library_rule_is_on_the_list():
    """A rule added without regenerating the list would save programs that do not load."""
    missing = sorted(
        f"{op._schema.name[6:]}.{op._overloadname}" for op in RULES
        if op.namespace == "aten" and FAMILY[op].startswith("safetrace.rules.")
        and op._schema.name[6:] not in DENIED and structural_refusal(op) is None
        and f"{op._schema.name[6:]}.{op._overloadname}" not in OPS)
    assert not missing, f"run tools/gen_load_ops.py: {missing[:10]}"


@pytest.mark.slow
@pytest.mark.skipif(torch.__version__ != TORCH_VERSION, reason="the list's torch")
def test_the_list_is_what_the_generator_makes():
    path = pathlib.Path(__file__).parents[2] / "tools" / "gen_load_ops.py"
    spec = importlib.util.spec_from_file_location("gen_load_ops", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert set(gen.allowed()) == OPS


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:7"])
def test_a_cuda_device_loads_only_when_the_caller_allows_cuda(device):
    """Calling a graph that names a CUDA device starts CUDA (on a machine with a GPU): a
    file made that way by hand, or a program exported on a GPU, loads only when asked."""
    blob = _file(_call("aten._to_copy.default", X, device={"device": device}))
    with pytest.raises(LoadError, match=rf"names the device {device}: calling the program "
                                        r"would start CUDA(.|\n)*allow_cuda=True"):
        st.load(io.BytesIO(blob))
    factory = _file(_call("aten.zeros.default", SIZES, device={"device": device}))
    with pytest.raises(LoadError, match="argument 'device': names the device"):
        st.load(io.BytesIO(factory))
    for allowed in (blob, factory):
        assert st.load(io.BytesIO(allowed), allow_cuda=True).graph is not None
    with pytest.raises(TypeError, match="allow_cuda must be True or False"):
        st.load(io.BytesIO(blob), allow_cuda="yes")


def test_a_private_operator_the_tracer_records_loads(tmp_path):
    """``nn.utils.parametrizations.weight_norm`` calls ``torch._weight_norm``, which the
    tracer records as ``aten._weight_norm`` (wav2vec2's positional convolution): the loader
    takes the programs the exporter writes (REVIEWED_IN, tools/gen_load_ops.py)."""
    conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 4, 3, padding=1),
                                                       dim=2)

    class Positional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = conv

        def forward(self, x):
            return self.conv(x) + x

    m = Positional().eval()
    n = st.Dim("n", min=1, max=64)
    ep = st.export(m, (torch.randn(2, 4, 9),), dynamic_shapes={"x": {2: n}})
    assert "aten._weight_norm.default" in ep.graph_module.code
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for k in (1, 2, 17):
        x = torch.randn(2, 4, k)
        with torch.no_grad():
            torch.testing.assert_close(loaded.module()(x), m(x))
    with pytest.raises(st.InputMismatchError):
        loaded.module()(torch.randn(2, 4, 0))
