"""Child processes forked from a Python that has imported torch already.

Tests that run code in another process (a crash the code may provoke must not take the
test run down; the limits it sets on memory or CPU time must not bind pytest) paid a fresh
interpreter and ``import torch`` per child: 1.3 s of CPU on a quiet 2-core VM, 2.5 s under
load, most of each such test.  ``run`` forks the child from a server process started once
per pytest worker that has imported torch and safetrace (safetrace's package face only:
its submodules, torch.export and dynamo load in the child, as in a fresh one).  The child
is a process of its own: its crash, signal, exit status, limits and files are its own, and
it runs the code as ``python -c CODE ARGS`` (or ``python -m MODULE ARGS``) would, with
``__main__``, ``sys.argv``, stdin/stdout/stderr, cwd and environment as given.

What it does not give is a fresh interpreter: a test whose point is what an import does
(a module never imported, numpy missing, state the package sets at import, the first
import of torch itself) keeps ``subprocess.run([sys.executable, ...])``.  Settings torch
and glibc read only at start-up are the server's: one intra-op thread and two malloc
arenas (what the tests that set ``OMP_NUM_THREADS`` / ``MALLOC_ARENA_MAX`` ask for); a
child whose environment names ``OMP_NUM_THREADS`` gets that many threads.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_server: subprocess.Popen | None = None
# CPU seconds of the children and of the server (its start-up included), which this
# process's RUSAGE_CHILDREN does not see until the server ends (tests/cputime.py adds it)
cpu_seconds = 0.0


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj)
    data = struct.pack("<Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def _receive(fd: int) -> Any:
    def exactly(n: int) -> bytes:
        got = b""
        while len(got) < n:
            more = os.read(fd, n - len(got))
            if not more:
                raise EOFError("the child server closed its pipe")
            got += more
        return got

    return pickle.loads(exactly(struct.unpack("<Q", exactly(8))[0]))


def _start() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        _server = subprocess.Popen([sys.executable, "-m", "tests.child"], cwd=ROOT, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen) -> None:
    """At the worker's exit: the server ends at the end of its input; wait for it (its CPU
    time, its children's included, is then this process's RUSAGE_CHILDREN)."""
    server.stdin.close()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def run(argv: list[str], *, input: bytes | str | None = None, text: bool = False,
        cwd: str | os.PathLike | None = None, env: dict | None = None, timeout: float = 300,
        limits: tuple = (), warnings: tuple = ()) -> subprocess.CompletedProcess:
    """As ``subprocess.run([sys.executable, *argv], capture_output=True, ...)``, where
    `argv` is ``["-c", CODE, *args]`` or ``["-m", MODULE, *args]``; `limits` holds
    ``(resource.RLIMIT_..., (soft, hard))`` pairs set in the child before the code runs,
    `warnings` the ``-W`` options."""
    assert argv[0] in ("-c", "-m"), argv
    if isinstance(input, str):
        input = input.encode()
    server = _start()
    _send(server.stdin.fileno(), {
        "mode": argv[0], "what": argv[1], "args": list(map(str, argv[2:])), "input": input,
        "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
        "env": dict(os.environ if env is None else env), "timeout": timeout,
        "limits": list(limits), "warnings": list(warnings)})
    global cpu_seconds
    status, out, err, cpu = _receive(server.stdout.fileno())
    cpu_seconds += cpu
    args = [sys.executable, *argv]
    if status is None:
        raise subprocess.TimeoutExpired(args, timeout, out, err)
    if text:
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
    return subprocess.CompletedProcess(args, status, out, err)


def _child(request: dict, files: tuple) -> None:
    """In the forked child: become ``python -c`` / ``python -m`` and never return."""
    import resource
    import runpy
    import threading
    import traceback
    import types
    import warnings

    code = 1
    try:
        for fd, f in zip((0, 1, 2), files):
            os.dup2(f.fileno(), fd)
        for which, bounds in request["limits"]:
            resource.setrlimit(which, bounds)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if "OMP_NUM_THREADS" in request["env"]:
            import torch

            torch.set_num_threads(int(request["env"]["OMP_NUM_THREADS"]))
        for option in request["warnings"]:
            warnings._setoption(option)  # type: ignore[attr-defined]
        if request["mode"] == "-m":
            sys.argv = [request["what"], *request["args"]]
            runpy.run_module(request["what"], run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *request["args"]]
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(request["what"], "<string>", "exec"), main.__dict__)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - reported as python -c reports it
        traceback.print_exc()
    finally:
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # (joins as at exit)
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve() -> None:
    import resource
    import select
    import signal
    import tempfile
    import time

    import torch  # noqa: F401 - what every child would import first

    import safetrace  # noqa: F401

    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # (nothing the server or an import prints reaches the protocol)
    def own_cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        return me.ru_utime + me.ru_stime

    spent = 0.0
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        files = tuple(tempfile.TemporaryFile() for _ in range(3))
        if request["input"] is not None:
            files[0].write(request["input"])
            files[0].flush()
            files[0].seek(0)
        pid = os.fork()
        if pid == 0:
            os.close(requests)
            os.close(replies)
            _child(request, files)
        end = time.monotonic() + request["timeout"]
        status = None
        while True:
            done, raw, usage = os.wait4(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            if time.monotonic() > end:
                os.kill(pid, signal.SIGKILL)
                _, _, usage = os.wait4(pid, 0)
                break
            select.select([], [], [], 0.01)
        for f in files:
            f.seek(0)
        out, err = files[1].read(), files[2].read()
        for f in files:
            f.close()
        now = own_cpu()
        _send(replies, (status, out, err, usage.ru_utime + usage.ru_stime + now - spent))
        spent = now


if __name__ == "__main__":
    _serve()
