"""Every way a file can be wrong ends in a LoadError at load or an InputMismatchError at
call, never another exception: files built from real saved programs (each with a control:
the untouched program loads and runs)."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import pytest
import torch

import safetrace as st
from tests.serialize import hostile
from tests.serialize import surgery

KEY = hostile.KEY


class CondNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * self.w, lambda x: x - self.w, (x,))


@pytest.fixture(scope="module")
def base():
    return hostile.Maker()


@pytest.fixture(scope="module")
def cond_program():
    model = CondNet()
    ep = st.export(model, (torch.randn(3, 8),), dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    doc, tensors = hostile.parts(surgery.saved(ep))
    return model, doc, tensors


def _runs(ep, model, sizes=(0, 1, 5)) -> None:
    mod = ep.module()
    for n in sizes:
        for sign in (1, -1):
            x = sign * torch.rand(n, 8)
            torch.testing.assert_close(mod(x), model(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(65, 8))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(2, 7))


def test_controls_load_and_run(base, cond_program):
    _runs(st.load(base.blob), _base_model(base))
    model, doc, tensors = cond_program
    _runs(surgery.load(doc, tensors), model)


def _base_model(m: hostile.Maker) -> torch.nn.Module:
    model = hostile.Base()
    model.fc.weight.data = m.tensors["state:fc.weight"]
    model.fc.bias.data = m.tensors["state:fc.bias"]
    model.scale = m.tensors["state:scale"]
    return model


F = {v: ["fconst", float(v).hex()] for v in (0.0, 0.5, 3.0)}
UNDEFINED = {
    "sqrt_of_negative": (["lt", ["fsqrt", ["float", ["add", "s0", -10]]], F[3.0]], 12, 4),
    "log_of_zero": (["lt", ["flog", ["float", ["add", "s0", -4]]], F[3.0]], 6, 4),
    "int_of_nan": (["lt", ["trunc", ["fdiv", ["float", ["add", "s0", -4]],
                                     ["float", ["add", "s0", -4]]]], 3], 5, 4),
    "negative_to_a_half": (["lt", ["fpow", ["float", ["add", "s0", -10]], F[0.5]], F[3.0]],
                           12, 3),
}


@pytest.mark.parametrize("name", sorted(UNDEFINED))
def test_conditions_are_evaluated_total(base, name):
    cond, good, undefined = UNDEFINED[name]
    doc = base.d()
    hostile._conds(doc, [cond])
    ep = st.load(base.file(doc))
    mod, model = ep.module(), _base_model(base)
    x = torch.randn(good, 8)
    torch.testing.assert_close(mod(x), model(x))
    with pytest.raises(st.InputMismatchError, match="undefined at these sizes"):
        mod(torch.randn(undefined, 8))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(65, 8))


@pytest.mark.parametrize("bad", ["p_w\n", "x\n", "w\r", "w "])
def test_names_are_matched_in_full(base, bad):
    doc = base.d()
    old = base.weight
    for n in doc["nodes"]:
        if n["name"] == old:
            n["name"] = old + bad[-1]
    for s in doc["inputs"]:
        if s["name"] == old:
            s["name"] = old + bad[-1]
    with pytest.raises(st.LoadError):
        st.load(base.file(doc))


@pytest.mark.parametrize("suffix", ["\n", "\r\n", "\t"])
def test_state_names_are_matched_in_full(base, suffix):
    # (a control character anywhere in the program's text is refused first: session 29)
    with pytest.raises(st.LoadError, match="state name|not printable"):
        st.load(hostile._state_rename(base, "scale" + suffix))


@pytest.mark.parametrize("name", ["code", "_ep", "__deepcopy__", "_graph_forward", "forward",
                                  "training", "graph", "recompile", "state_dict", "w"])
def test_reserved_subgraph_names_are_refused(cond_program, name):
    model, doc, tensors = cond_program
    doc = json.loads(json.dumps(doc))
    for s in doc["subgraphs"]:
        if s["path"] == "true_graph_0":
            s["path"] = name
    for n in doc["nodes"]:
        if n["op"] == "get_attr" and n["target"] == "true_graph_0":
            n["target"] = name
    with pytest.raises(st.LoadError, match="reserved|name of the program's state"):
        surgery.load(doc, tensors)


def _torch_save_zip() -> bytes:
    buf = io.BytesIO()
    torch.save({"w": torch.ones(3)}, buf)
    return buf.getvalue()


def _pt2() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # the layout torch.export.save writes
        z.writestr("archive/data/weights/model_weights_config.json", "{}")
        z.writestr("archive/models/model.json", "{}")
        z.writestr("archive/archive_format", "pt2")
    return buf.getvalue()


def _onnx() -> bytes:
    # ModelProto: ir_version 8, producer_name "pytorch", then a graph field
    return b"\x08\x08\x12\x07pytorch\x1a\x052.0.0:\x10\n\x0e" + bytes(40)


FOREIGN = {
    "torch_save": (_torch_save_zip, "torch.save checkpoint"),
    "pt2": (_pt2, r"torch.export program archive \(.pt2"),
    "onnx": (_onnx, "ONNX model"),
    "text": (lambda: b"import torch\nprint('hello world')\n" * 4, "text file"),
    "pickle": (lambda: b"\x80\x02}q\x00." + bytes(30), "pickle"),
    "short": (lambda: b"abc", "not a safetrace program|text file"),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_foreign_files_are_named(name, tmp_path):
    data, what = FOREIGN[name][0](), FOREIGN[name][1]
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    for source in (data, path, io.BytesIO(data)):
        with pytest.raises(st.LoadError, match=what) as info:
            st.load(source)
        assert "written by safetrace" not in str(info.value)
        assert "over the budget" not in str(info.value)


def test_os_errors_are_load_errors(tmp_path):
    with pytest.raises(st.LoadError, match="cannot read"):
        st.load("/proc/self/mem")
    with pytest.raises(st.LoadError, match="cannot open"):
        st.load(tmp_path / "missing.st")

    class Failing(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, b):
            raise OSError(5, "Input/output error")

    with pytest.raises(st.LoadError, match="Input/output"):
        st.load(Failing())


def test_mmap_needs_a_path(base):
    with pytest.raises(st.LoadError, match="mmap=True"):
        st.load(base.blob, mmap=True)
    with pytest.raises(TypeError):
        st.load(base.blob, mmap="yes")


def test_missing_custom_op_hint_names_the_commands_import_flag(base):
    blob = base.node("torch.ops.mylib_st_hint.frob.default", [base.ref()])
    with pytest.raises(st.LoadError, match="--import MODULE"):
        st.load(blob, allow_ops=["mylib_st_hint::frob"])


def test_reading_without_preadv(base, tmp_path, monkeypatch):
    path = tmp_path / "m.st"
    path.write_bytes(base.blob)
    monkeypatch.delattr("os.preadv")
    _runs(st.load(path), _base_model(base))


def test_load_builders_render_cause_and_paste_able_fix():
    from safetrace.errors import load as L

    err = L.over_budget("node 'evil'", "list of 70000 items", "max_repeat", 70000)
    assert isinstance(err, st.LoadError) and err.details["budget"] == "max_repeat"
    assert str(err) == ("node 'evil': list of 70000 items, over the budget (max_repeat)\n"
                        "Fix: if you trust the file, st.load(path, budgets={'max_repeat': 70000})"
                        "\nSee docs/errors.md#load")
    assert L.bad_file(None, "bad", "do this").fix == "do this"
    assert "re-export" in L.refused_call("node 'x'", "calls os.system").fix
    assert L.refused_call("n", "no", "allow it").fix == "allow it"
    err = L.loop_budget("while_loop", 8)
    assert "max_loop_iterations=8" in err.cause and "'max_loop_iterations': 16" in err.fix
    # a check inside the graph as it runs: RuntimeAssertionError, the budget named
    for err in (err, L.work_in_graph("sum", "aten.sum", 9, 8), L.loop_memory("w", 99, 16),
                L.kernel_memory_at_call("z", "aten.zeros", 99, 16),
                L.kernel_unbounded("k", "aten.kron"), L.memory_from_values("b", "bincount", 99, 16)):
        assert isinstance(err, st.RuntimeAssertionError) and err.details["budget"], err
        assert "budgets=" in err.fix or "export" in err.fix
    # before the call, the input sizes decide it: InputMismatchError
    assert isinstance(L.work_at_call("sum", "aten.sum", 9, 8), st.InputMismatchError)
    assert isinstance(L.memory_at_call("z", "aten.zeros", 99, 16, {}), st.InputMismatchError)
    assert isinstance(L.unchecked_inputs(ZeroDivisionError("x")), st.InputMismatchError)
