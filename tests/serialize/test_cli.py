"""The ``safetrace`` command: show, check, export, run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import safetrace as st
from safetrace.cli import main
from tests.serialize.programs import CASES


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "derived.st"
    st.save(CASES["derived"]().export(), path)
    return path


def test_show_prints_contract_and_graph(saved, capsys):
    assert main(["show", str(saved)]) == 0
    out = capsys.readouterr().out
    ep = st.load(saved)
    assert out.startswith("Input contract:")
    assert ep.describe_contract() in out
    assert ep.graph_module.print_readable(print_output=False) in out


def test_check_ok_and_bad(saved, tmp_path, capsys):
    assert main(["check", str(saved)]) == 0
    assert "OK" in capsys.readouterr().out
    bad = tmp_path / "bad.st"
    bad.write_bytes(saved.read_bytes()[:-20])
    assert main(["check", str(bad)]) == 1
    assert "error:" in capsys.readouterr().err


def test_run_draws_inputs_from_the_contract(saved, capsys):
    assert main(["run", str(saved), "--n", "5", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("call ") == 5 and "ms per call" in out


@pytest.mark.parametrize("name", ["scenario_7", "scenario_8", "scenario_9", "scenario_1",
                                  "dataclass_dict_out", "dyn_mlp"])
def test_run_on_various_contracts(name, tmp_path, capsys):
    path = tmp_path / f"{name}.st"
    st.save(CASES[name]().export(), path)
    assert main(["run", str(path), "--n", "4"]) == 0


def test_export_from_a_factory_with_progress(tmp_path, capsys, monkeypatch):
    (tmp_path / "factory_mod_st.py").write_text(textwrap.dedent("""
        import torch
        import safetrace as st

        class M(torch.nn.Module):
            def forward(self, x):
                return x.relu() * 2

        def make():
            return M(), (torch.randn(3, 4),), {"x": {0: st.Dim("b")}}

        def make_static():
            return M(), (torch.randn(3, 4),)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    out_file = tmp_path / "m.st"
    for factory in ("make", "make_static"):
        assert main(["export", f"factory_mod_st:{factory}", "-o", str(out_file)]) == 0
        out = capsys.readouterr().out
        assert "exporting M" in out and "saving" in out and "done" in out
        assert main(["run", str(out_file), "--n", "2"]) == 0


def test_console_entry_point_runs_in_a_subprocess(saved):
    out = subprocess.run([sys.executable, "-m", "safetrace.cli", "check", str(saved)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout


def _hostile_file(tmp_path, edit):
    from tests.serialize.hostile import Maker

    m = Maker()
    doc = m.d()
    edit(doc)
    path = tmp_path / "hostile.st"
    path.write_bytes(m.file(doc))
    return path


def test_show_refuses_terminal_sequences_from_the_file(tmp_path, capsys):
    # (the loader refuses a string that is not printable: the error names it escaped,
    # and nothing of it reaches the terminal raw)
    def edit(doc):
        for n in doc["nodes"]:
            if n["op"] == "call_function":
                n.setdefault("meta", {})["stack_trace"] = \
                    "File \"x.py\", line 1\n\x1b[2J\x1b]0;pwn\x07\u202e"
    assert main(["show", str(_hostile_file(tmp_path, edit))]) == 1
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "not printable" in captured.err and "\\x1b[2J" in captured.err


def test_check_refuses_a_graph_off_the_allowlist(tmp_path, capsys):
    def edit(doc):
        doc["nodes"].insert(-1, {"name": "evil", "op": "call_function", "args": ["/etc/passwd"],
                                 "target": "torch.ops.aten.from_file.default"})
    assert main(["check", str(_hostile_file(tmp_path, edit))]) == 1
    err = capsys.readouterr().err
    assert "from_file" in err and "refused" in err


def test_check_loads_a_graph_naming_cuda_only_with_allow_cuda(tmp_path, capsys):
    from tests.serialize.hostile_static import pack, parts, saved_abs

    doc, tensors = parts(saved_abs(3))
    call = next(n for n in doc["nodes"] if n["op"] == "call_function")
    call["target"] = "torch.ops.aten._to_copy.default"
    call["kwargs"] = [["device", {"device": "cuda:0"}]]
    path = tmp_path / "gpu.st"
    path.write_bytes(pack(doc, tensors))
    assert main(["check", str(path)]) == 1
    assert "allow_cuda=True" in capsys.readouterr().err
    assert main(["show", str(path), "--allow-cuda"]) == 0


def test_run_caps_inputs_whatever_the_hints_say(tmp_path, capsys):
    def edit(doc):
        doc["symbols"][0]["hint"] = 2 ** 33
        doc["symbols"][0]["hi"] = None
        doc["contract"]["symbols"][0]["hi"] = None
    path = _hostile_file(tmp_path, edit)
    assert main(["run", str(path), "--n", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("call ") == 3 and "8589934592" not in out
    assert main(["run", str(path), "--n", "1", "--max-numel", "1"]) == 3
    assert "could not draw inputs" in capsys.readouterr().err


def test_exit_codes_for_usage_and_failing_runs(tmp_path, capsys):
    assert main(["frobnicate"]) == 2
    assert main(["show"]) == 2
    assert main(["check", str(tmp_path)]) == 1
    assert "directory" in capsys.readouterr().err


class Long(torch.nn.Module):
    def forward(self, x):
        for _ in range(1500):  # a printout far over a pipe's 64 KiB buffer
            x = x.sin()
        return x


def test_show_into_a_closed_pipe_ends_quietly(tmp_path):
    saved = tmp_path / "long.st"
    st.save(st.export(Long(), (torch.randn(2),)), saved)
    cmd = (f"{sys.executable} -m safetrace.cli show {saved} | head -n 1; "
           f"exit ${{PIPESTATUS[0]}}")
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert out.stdout.count("\n") == 1
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
    assert out.returncode == 141


def test_export_from_a_factory_file_path(tmp_path, capsys):
    sub = tmp_path / "pkg dir"
    sub.mkdir()
    (sub / "models_by_path_st.py").write_text(textwrap.dedent("""
        import torch
        import safetrace as st

        class M(torch.nn.Module):
            def forward(self, x):
                return x.sin() + 1

        def make():
            return M(), (torch.randn(3, 4),), {"x": {0: st.Dim("b", max=16)}}
    """))
    out_file = tmp_path / "m.st"
    assert main(["export", f"{sub / 'models_by_path_st.py'}:make", "-o", str(out_file)]) == 0
    mod = st.load(out_file).module()
    for n in (0, 1, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(mod(x), x.sin() + 1)
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(17, 4))


def test_bad_factories_and_imports_are_messages_with_exit_2(tmp_path, capsys):
    (tmp_path / "broken_factories_st.py").write_text(textwrap.dedent("""
        def raises():
            raise RuntimeError("no weights here")

        def wrong():
            return 5
    """))
    (tmp_path / "syntax_error_st.py").write_text("def f(:\n")
    mod = tmp_path / "broken_factories_st.py"
    cases = [
        (["export", "no_such_module_st:make", "-o", str(tmp_path / "a.st")], "cannot import"),
        (["export", f"{mod}:missing", "-o", str(tmp_path / "a.st")], "has no function"),
        (["export", f"{mod}:raises", "-o", str(tmp_path / "a.st")], "no weights here"),
        (["export", f"{mod}:wrong", "-o", str(tmp_path / "a.st")], "must return"),
        (["export", "nocolon", "-o", str(tmp_path / "a.st")], "MODULE:FACTORY"),
        (["export", f"{tmp_path / 'syntax_error_st.py'}:f", "-o", str(tmp_path / "a.st")],
         "SyntaxError"),
        (["show", str(tmp_path / "a.st"), "--import", "no_such_module_st"], "cannot import"),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "a.st").exists()


def test_unexpected_failures_are_messages(tmp_path, capsys):
    (tmp_path / "ok_factory_st.py").write_text(textwrap.dedent("""
        import torch

        def make():
            return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
    """))
    argv = ["export", f"{tmp_path / 'ok_factory_st.py'}:make", "-o", str(tmp_path)]
    assert main(argv) == 1  # saving onto a directory
    err = capsys.readouterr().err
    assert "directory" in err and "Traceback" not in err
    torch_zip = tmp_path / "ckpt.pt"
    torch.save({"w": torch.ones(2)}, torch_zip)
    assert main(["show", str(torch_zip)]) == 1
    assert "torch.save checkpoint" in capsys.readouterr().err


def test_run_draws_an_int_input_as_an_int(tmp_path, capsys):
    class Take(torch.nn.Module):
        def forward(self, x, k):
            return x[:k] * k

    ep = st.export(Take(), (torch.randn(8, 2), 3),
                   dynamic_shapes={"x": {0: st.Dim("m", min=1, max=32)},
                                   "k": st.Dim("k", min=1, max=8)})
    path = tmp_path / "take.st"
    st.save(ep, path)
    assert main(["run", str(path)]) == 0, capsys.readouterr().err
