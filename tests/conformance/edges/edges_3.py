"""User mistakes and unusual-but-legal programs, part 4 of 4 (ex benchmarks/sweep_edges.py);
each ``@case`` is one promise checked (see tests/conformance/edge_harness.py)."""

from __future__ import annotations

import copy
import dataclasses
import io
import os
import time
import zipfile
import tempfile
from pathlib import Path
from collections import namedtuple

import torch
import torch.nn as nn

import safetrace as st
from safetrace import Dim
from tests.conformance.edge_harness import A, Finding, Fn, Lin, Note, R, ST_ERRORS, _where, case, check_model, compare, describe, expect_error, first_lines, from_safetrace, run_export, snap_model
from tests.conformance.edges.edges_0 import NT, One, RegPt, _paste_fix
from tests.conformance.edges.edges_2 import Out
from tests.serialize.hostile import pack, parts


@case("call")
def call_module_shares_params():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = ep.module()
    with torch.no_grad():
        m.lin.weight.mul_(2)
    x = torch.randn(4, 3)
    d = compare(m(x), mod(x))
    if d:
        raise Note(f"ep.module() does not share weights as documented: {d}")


@case("call")
def call_deepcopy_module():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    mod = copy.deepcopy(ep.module())
    x = torch.randn(4, 3)
    d = compare(m(x), mod(x))
    if d:
        raise Finding("wrong", d)


@case("call")
def call_module_load_state_dict_leaks_to_model():
    m = Lin()
    w0 = m.lin.weight.detach().clone()
    ep = st.export(m, (torch.randn(4, 3),))
    ep.module().load_state_dict(Lin().state_dict())
    if not torch.equal(m.lin.weight.detach(), w0):
        raise Finding("mutation", "ep.module().load_state_dict(other) overwrote the ORIGINAL model's weights "
                      "(ep.module() shares parameter tensors and load_state_dict copies in place)")


@case("call")
def call_module_half_leaks_to_model():
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    ep.module().half()
    if m.lin.weight.dtype != torch.float32:
        raise Finding("mutation", f"ep.module().half() converted the ORIGINAL model's weights to {m.lin.weight.dtype}")


@case("call")
def call_module_train_flag():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    ep = st.export(m, (torch.randn(2, 4),))
    mod = ep.module()
    try:
        mod.train()
    except Exception as e:  # noqa: BLE001
        return f"mod.train() refused: {describe(e)}"
    x = torch.randn(2, 4)
    d = compare(m(x), mod(x))
    if d:
        raise Finding("wrong", d)
    return "mod.train() accepted; still computes the eval-mode program"


@case("state")
def se_frozen_param_inplace_leaks():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3), requires_grad=False)

        def forward(self, x):
            self.w.mul_(2)
            return x * self.w
    m = M()
    x = torch.randn(3)
    try:
        ep = st.export(m, (x,))
    except ST_ERRORS as e:
        return f"refused: {describe(e)}"
    if not torch.equal(m.w, torch.ones(3)):
        raise Finding("mutation", f"export mutated the frozen parameter: {m.w.tolist()}")
    ref = copy.deepcopy(m)
    e1, s1 = ref(x), ep.module()(x)
    if not torch.equal(m.w, torch.ones(3)):
        raise Finding("mutation", f"calling ep.module() mutated the original model's frozen parameter in place "
                      f"(w = {m.w.tolist()}); mutated parameters are not in buffers_to_mutate / not copied")
    d = compare(e1, s1)
    if d:
        raise Finding("wrong", d)


@case("data")
def dd_shape_int_output_dynamic():
    run_export(Fn(lambda x: (x * 2, x.shape[0], x.numel())), A(R(4, 3)), ds=({0: Dim.AUTO},),
               others=[A(R(7, 3))])


@case("data")
def dd_torch_size_output_dynamic():
    run_export(Fn(lambda x: (x * 2, x.shape)), A(R(4, 3)), ds=({0: Dim.AUTO},), others=[A(R(7, 3))])


@case("explain")
def explain_continues_after_data_dependent_branch():
    class M(nn.Module):
        def forward(self, x, y):
            if x.sum() > 0:
                x = x * 2
            return x[:3] + y
    r = st.explain(M(), (torch.randn(5, 3), torch.randn(3, 3)),
                   dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})
    text = str(r)
    if "y.shape[0]" not in text.split("Dims")[0]:
        raise Finding("unclear", "st.explain stops at the data-dependent `if x.sum() > 0` and does not report the "
                      f"later constraint violation on y.shape[0] (README: it assumes an answer and keeps tracing); "
                      f"report: {first_lines(text, 3)}")


@case("spec")
def spec_two_violations_paste():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.ones(4, 3))

        def forward(self, x, y):
            return (x + self.b) + y[:4]
    x, y = torch.randn(4, 3), torch.randn(6, 3)
    msg = expect_error(lambda: st.export(M(), (x, y), dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim("n", min=1)}}),
                       st.ConstraintViolationError, contains=["x.shape[0]", "dynamic_shapes"])
    _paste_fix(M(), (x, y), msg)


# =========================================================================================
# 7. explain
# =========================================================================================
@case("explain")
def explain_data_dependent_and_violation():
    class M(nn.Module):
        def forward(self, x, y):
            if x.sum() > 0:
                x = x * 2
            return x[:3] + y
    r = st.explain(M(), (torch.randn(5, 3), torch.randn(3, 3)),
                   dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})
    text = str(r)
    if r.ok:
        raise Finding("silent", "explain reported ok")
    for want in ("x.sum() > 0", "dynamic_shapes ="):
        if want not in text:
            raise Finding("unclear", f"explain report lacks {want!r}: {first_lines(text, 6)}")


@case("explain")
def explain_bad_spec():
    r = st.explain(One(), (torch.randn(4, 3),), dynamic_shapes={"y": {0: Dim.AUTO}})
    if r.ok:
        raise Finding("silent", "explain ok on a bad spec")
    if "'y'" not in str(r):
        raise Finding("unclear", f"explain lacks the bad key: {first_lines(str(r), 4)}")


@case("explain")
def explain_internal_errors_hidden():
    # explain swallows every exception; an internal crash would show as a 'problem'
    @dataclasses.dataclass
    class P:
        a: torch.Tensor
    r = st.explain(Fn(lambda p: p.a), (P(torch.randn(3)),))
    text = str(r)
    for bad in ("AttributeError", "KeyError", "IndexError", "TypeError", "AssertionError"):
        if bad in text:
            raise Finding("crash", f"explain report shows an internal {bad}: {first_lines(text, 4)}")
    if r.ok:
        raise Finding("silent", "explain ok on an unregistered dataclass input")


@case("explain")
def explain_ok_model():
    r = st.explain(Lin(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    if not r.ok:
        raise Finding("reject", f"explain not ok: {first_lines(str(r), 4)}")


@case("explain")
def explain_does_not_mutate():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.zeros(()))

        def forward(self, x):
            self.c += 1
            if x.sum() > 0:
                return x
            return x * self.c
    m = M().train()
    snap = snap_model(m)
    st.explain(m, (torch.randn(3),))
    check_model(m, snap, "explain")


# =========================================================================================
# 8. saved programs: hostile / broken files
# =========================================================================================
def _good_bytes():
    ep = st.export(Lin(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b", max=64)}})
    buf = io.BytesIO()
    st.save(ep, buf)
    return buf.getvalue()


def _load_expect(data, what, **kw):
    t0 = time.perf_counter()
    msg = expect_error(lambda: st.load(data, **kw), st.LoadError, what=what)
    dt = time.perf_counter() - t0
    if dt > 3:
        raise Finding("unclear", f"{what}: LoadError took {dt:.1f}s")
    return msg


def _program(data):
    """The program document and the tensors of a saved file (format 2: safetensors)."""
    return parts(data)


def _with_program(data, prog, tensors=None):
    return pack(prog, _program(data)[1] if tensors is None else tensors)


@case("load")
def load_roundtrip_bytes_path_fileobj():
    data = _good_bytes()
    p = Path(tempfile.mkdtemp()) / "rt.st"
    p.write_bytes(data)
    x = torch.randn(7, 3)
    a = st.load(data).module()(x)
    b = st.load(str(p)).module()(x)
    c = st.load(p).module()(x)
    with open(p, "rb") as fh:
        e = st.load(fh).module()(x)
    for o in (b, c, e):
        d = compare(a, o)
        if d:
            raise Finding("wrong", d)
    expect_error(lambda: st.load(data).module()(torch.randn(65, 3)), st.InputMismatchError,
                 contains=["x.shape[0]", "64"])


@case("load")
def load_empty():
    _load_expect(b"", "empty bytes")


@case("load")
def load_not_zip():
    _load_expect(b"\x89PNG\r\n\x1a\n" + b"0" * 100, "png bytes")


@case("load")
def load_truncations():
    data = _good_bytes()
    bad = []
    for cut in sorted({1, 4, 22, 30, len(data) // 4, len(data) // 2, len(data) - 30, len(data) - 1}):
        try:
            _load_expect(data[:cut], f"truncated at {cut}")
        except Finding as f:
            bad.append(f.msg)
    if bad:
        raise Finding("crash" if any("internal" in b for b in bad) else "unclear", "; ".join(bad[:3]))


@case("load")
def load_byte_flips():
    data = bytearray(_good_bytes())
    import random
    rnd = random.Random(0)
    bad = []
    silently_loaded = 0
    for _ in range(150):
        d = bytearray(data)
        for _ in range(rnd.choice([1, 2, 8])):
            d[rnd.randrange(len(d))] = rnd.randrange(256)
        try:
            ep = st.load(bytes(d))
        except st.LoadError:
            continue
        except Exception as e:  # noqa: BLE001
            bad.append(f"{describe(e)} at {_where(e)}")
            continue
        silently_loaded += 1
        try:
            ep.module()(torch.randn(5, 3))
        except ST_ERRORS:
            pass
        except Exception as e:  # noqa: BLE001
            bad.append(f"loaded, then running raised {describe(e)} at {_where(e)}")
    if bad:
        raise Finding("crash", f"{len(bad)} of 150 flipped files: " + "; ".join(sorted(set(bad))[:3]))
    return f"{silently_loaded} flipped files loaded (flips in tensor bytes / slack)"


@case("load")
def load_extra_member_and_traversal():
    data = _good_bytes()
    prog, tensors = _program(data)
    _load_expect(_with_program(data, prog, {**tensors, "evil.py": torch.ones(1)}),
                 "extra tensor")
    _load_expect(_with_program(data, prog, {**tensors, "../x": torch.ones(1)}),
                 "path-like tensor name")
    _load_expect(_with_program(data, prog, {}), "missing tensors")


@case("load")
def load_json_bomb():
    # program.json deflated from 300 MiB of spaces: must be refused from the declared size, fast
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("program.json", "w", force_zip64=True) as fh:
            chunk = b" " * (1 << 20)
            for _ in range(300):
                fh.write(chunk)
        z.writestr("tensors.safetensors", b"")
    _load_expect(out.getvalue(), "json bomb")


@case("load")
def load_lying_size_header():
    # the header length claims more than the file holds, or far more than any budget
    data = _good_bytes()
    n = int.from_bytes(data[:8], "little")
    _load_expect((n + 1000).to_bytes(8, "little") + data[8:], "lying size")
    _load_expect((1 << 62).to_bytes(8, "little") + data[8:], "huge size")


@case("load")
def load_max_tensor_bytes():
    _load_expect(_good_bytes(), "max_header_bytes=8", budgets={"max_header_bytes": 8})


@case("load")
def load_hostile_json_fields():
    import json
    data = _good_bytes()
    prog = _program(data)[0]
    bad = []

    def try_prog(p, what):
        d = _with_program(data, p)
        try:
            _load_expect(d, what)
        except Finding as f:
            bad.append(f"[{f.kind}] {f.msg}")

    for key in list(prog):
        p = copy.deepcopy(prog)
        del p[key]
        try_prog(p, f"missing {key!r}")
    for key, val in [("format", "other"), ("version", [3, 0]), ("version", "1.0"), ("nodes", {}),
                     ("nodes", [{"name": "__import__('os')", "op": "placeholder"}]), ("symbols", [[1]]),
                     ("state", [1, 2]), ("contract", None), ("in_spec", 7)]:
        p = copy.deepcopy(prog)
        p[key] = val
        try_prog(p, f"{key}={val!r}")
    # node target pointing at an arbitrary callable
    p = copy.deepcopy(prog)
    for n in p["nodes"]:
        if n.get("op") == "call_function":
            n["target"] = "os.system"
            break
    try_prog(p, "target os.system")
    p = copy.deepcopy(prog)
    for n in p["nodes"]:
        if n.get("op") == "call_function":
            n["target"] = "builtins.eval"
            break
    try_prog(p, "target builtins.eval")
    if bad:
        raise Finding("crash" if any("internal" in b for b in bad) else "unclear",
                      f"{len(bad)} hostile JSON edits: " + " ;; ".join(bad[:4]))


@case("load")
def load_nonexistent_and_directory():
    msgs = []
    tmp = tempfile.mkdtemp()
    for target in (os.path.join(tmp, "does_not_exist.st"), tmp):
        try:
            st.load(target)
        except st.LoadError as e:
            msgs.append(f"LoadError: {first_lines(str(e), 1)}")
        except OSError as e:
            msgs.append(f"{type(e).__name__}")
        except Exception as e:  # noqa: BLE001
            raise Finding("crash", f"st.load({target!r}): {describe(e)} at {_where(e)}")
    return "; ".join(msgs)


@case("load")
def load_wrong_type():
    expect_error(lambda: st.load(12345), st.LoadError, allow_ok=False, user_error_ok=True)


@case("load")
def save_roundtrip_dataclass_namedtuple_kwargs():
    class M(nn.Module):
        def forward(self, p, t, *, d):
            return Out(p.a + t.a + d["k"], 3), NT(t.b, p.b)
    mk = lambda n: lambda: ((RegPt(torch.randn(n), torch.randn(n)), NT(torch.randn(n), torch.randn(n))),  # noqa: E731
                            {"d": {"k": torch.randn(n)}})
    run_export(M(), mk(4), ds={"p": RegPt({0: Dim("n")}, {0: Dim("n")}, None),
                               "t": NT({0: Dim("n")}, {0: Dim("n")}), "d": {"k": {0: Dim("n")}}},
               others=[mk(9)])


@case("load")
def save_then_mutate_model():
    # a saved program must hold the weights as they were at save time
    m = Lin()
    ep = st.export(m, (torch.randn(4, 3),))
    buf = io.BytesIO()
    st.save(ep, buf)
    x = torch.randn(4, 3)
    expected = m(x).detach().clone()
    with torch.no_grad():
        m.lin.weight.zero_()
    d = compare(expected, st.load(buf.getvalue()).module()(x))
    if d:
        raise Finding("wrong", d)


@case("load")
def save_to_bad_path():
    ep = st.export(Lin(), (torch.randn(4, 3),))
    try:
        st.save(ep, os.path.join(tempfile.mkdtemp(), "no", "such", "f.st"))
    except OSError as e:
        return f"{type(e).__name__}"
    except Exception as e:  # noqa: BLE001
        raise Finding("crash" if from_safetrace(e) else "unclear", describe(e))


# -- runner --------------------------------------------------------------------------------
