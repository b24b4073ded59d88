"""Weights mapped under a read lease (safetrace/serialize/lease.py): st.load maps the file
where the kernel grants a lease, and every change of the file, from this process or
another, a forked child included, waits until the mapping is a private copy.

Each scenario could kill a process with SIGBUS if a mapping outlived a truncation, so all
run in a child process under a CPU limit; the child reports each scenario as it ends, and
a signal names the scenario it died in.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import textwrap
from pathlib import Path

import pytest

from tests import child

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(r'''
    import copy, errno, hashlib, json, os, subprocess, sys, time
    import torch
    import safetrace as st
    from safetrace.serialize import lease

    class Net(torch.nn.Module):
        def __init__(self, writes=False):
            super().__init__()
            self.fc = torch.nn.Linear(512, 512)
            self.register_buffer("count", torch.zeros(512))
            self.writes = writes

        def forward(self, x):
            if self.writes:
                self.count.add_(1)  # a write: it must stay in the program's memory
            return self.fc(x) + self.count

    tmp = sys.argv[1]
    torch.manual_seed(0)
    model = Net()
    spec = {"x": {0: st.Dim("n", max=64)}}
    ep0 = st.export(model, (torch.randn(2, 512),), dynamic_shapes=spec)
    writer_model = Net(writes=True)
    writer_model.load_state_dict(model.state_dict())
    ep_writes = st.export(writer_model, (torch.randn(2, 512),), dynamic_shapes=spec)
    x = torch.randn(3, 512)

    def report(name, outcome):
        print(json.dumps({"scenario": name, "outcome": outcome}), flush=True)

    def fresh(name, ep=ep0):
        p = os.path.join(tmp, name)
        st.save(ep, p)
        return p

    def digest(p):
        with open(p, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def mapped(p, t):
        """Whether tensor t's memory is a mapping of file p (/proc/self/maps)."""
        real = os.path.realpath(p)
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].strip() == real:
                    lo, hi = (int(v, 16) for v in parts[0].split("-"))
                    if lo <= t.data_ptr() < hi:
                        return True
        return False

    class Calls:
        """A loaded program against a copy of the eager model, call for call."""
        def __init__(self, ep, ref=model):
            self.mod, self.ref = ep.module(), copy.deepcopy(ref)

        def check(self):
            assert torch.equal(self.mod(x), self.ref(x)), "weights changed"

    def other(code, *args):
        """Run code in another process (its exit status, its output)."""
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                             text=True, timeout=120)
        return out.returncode, out.stdout.strip()

    # 0. leases here at all? (a file of our own on a local filesystem)
    probe = os.path.join(tmp, "probe")
    open(probe, "wb").close()
    fd = os.open(probe, os.O_RDONLY)
    got = lease.take(fd)
    os.close(fd)
    if got is None:
        report("no_leases", "skipped")
        sys.exit(0)
    lease.release(got)

    # 1. the weights are the file's pages (no copy); a program that writes its own state
    #    (the count) gets private memory at load, before it first runs (a write racing the
    #    copy a lease break makes on another thread could be lost): the file is unchanged,
    #    a second load starts from the saved state
    p = fresh("a.st"); ep = st.load(p)
    assert mapped(p, ep.state_dict["fc.weight"]), "st.load copied a leasable file"
    Calls(ep).check()
    p = fresh("a-writes.st", ep_writes); before = digest(p)
    ep = st.load(p); calls = Calls(ep, writer_model)
    assert not mapped(p, ep.state_dict["fc.weight"]), "a program writing its state is mapped"
    assert not mapped(p, ep.state_dict["count"])
    for _ in range(3):
        calls.check()
    assert digest(p) == before, "a program's write reached its file"
    Calls(st.load(p), writer_model).check()
    report("mapped_and_writes_private", "behaves")

    # 2. another process truncates the file: it waits until the mapping is a copy
    p = fresh("b.st"); ep = st.load(p); calls = Calls(ep); calls.check()
    status, _ = other("import os, sys; os.truncate(sys.argv[1], 10)", p)
    assert status == 0 and os.path.getsize(p) == 10
    assert not mapped(p, ep.state_dict["fc.weight"]), "still a mapping of a truncated file"
    calls.check(); calls.check()
    report("truncated_by_another_process", "behaves")

    # 3. another process rewrites every byte after the header in place
    p = fresh("c.st"); ep = st.load(p); calls = Calls(ep); calls.check()
    status, _ = other("import os, sys\n"
                      "n = os.path.getsize(sys.argv[1])\n"
                      "with open(sys.argv[1], 'r+b') as f:\n"
                      "    head = 8 + int.from_bytes(f.read(8), 'little'); f.seek(head)\n"
                      "    f.write(b'\\xff' * (n - head))", p)
    assert status == 0
    calls.check(); calls.check()
    report("rewritten_by_another_process", "behaves")

    # 4. a writer that does not wait (O_NONBLOCK) is told to retry; its retry gets through
    p = fresh("d.st"); ep = st.load(p); calls = Calls(ep)
    status, out = other("import errno, os, sys, time\n"
                        "codes = []\n"
                        "for _ in range(200):\n"
                        "    try:\n"
                        "        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)\n"
                        "    except BlockingIOError:\n"
                        "        codes.append('wait'); time.sleep(0.05); continue\n"
                        "    os.ftruncate(fd, 0); os.close(fd); codes.append('done'); break\n"
                        "print(','.join(codes))", p)
    assert status == 0 and out.endswith("done") and out.startswith("wait"), out
    assert os.path.getsize(p) == 0
    calls.check()
    report("nonblocking_writer", "retries")

    # 5. a forked child keeps working after the parent truncates the file
    p = fresh("e.st"); ep = st.load(p); calls = Calls(ep); calls.check()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: wait for the truncation, then run the program
        os.close(go_w)
        os.read(go_r, 1)
        try:
            calls.check(); calls.check()
            os._exit(0)
        except BaseException:
            os._exit(3)
    os.close(go_r)
    time.sleep(0.5)  # (the child's own lease taken)
    os.truncate(p, 10)
    os.write(go_w, b"x"); os.close(go_w)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child: status {status}"
    calls.check()
    report("forked_child", "behaves")

    # 6. the file open for writing at load time: no lease, the weights are read into
    #    private memory; the writer then truncates through its descriptor
    p = fresh("f.st")
    with open(p, "r+b") as w:
        ep = st.load(p); calls = Calls(ep)
        assert not mapped(p, ep.state_dict["fc.weight"])
        w.truncate(10)
    calls.check()
    report("open_for_writing_at_load", "copied")

    # 7. the program goes: its lease goes with it (a writer does not wait)
    p = fresh("g.st"); before = set(lease._held.values()); ep = st.load(p)
    mine = set(lease._held.values()) - before
    assert len(mine) == 1
    del ep; import gc; gc.collect()
    assert not mine & set(lease._held.values())
    t = time.perf_counter(); os.truncate(p, 0)
    assert time.perf_counter() - t < 5
    report("released_with_the_program", "behaves")

    # 8. a hard link to the file is truncated by another process (the lease is the inode's)
    p = fresh("h.st"); q = os.path.join(tmp, "h-link.st"); os.link(p, q)
    ep = st.load(p); calls = Calls(ep); calls.check()
    status, _ = other("import os, sys; os.truncate(sys.argv[1], 0)", q)
    assert status == 0 and os.path.getsize(p) == 0
    calls.check()
    report("hard_link_truncated", "behaves")

    # 9. another process corrupts the file over and over (the header's length, the data)
    #    and puts it back, while this one loads it: every load refused or whole, never a
    #    crash; once the writer is done, a load is the saved program
    p = fresh("i.st"); outcomes = set()
    writer = subprocess.Popen([sys.executable, "-c",
        "import os, sys, time\n"
        "p = sys.argv[1]; good = open(p, 'rb').read(); end = time.time() + 1.5\n"
        "bad = [b'\\xff' * 8 + good[8:], good[:-4096] + b'\\xff' * 4096]\n"
        "i = 0\n"
        "while time.time() < end:\n"
        "    with open(p, 'r+b') as f:\n"
        "        f.write(bad[i % 2])\n"
        "    with open(p, 'r+b') as f:\n"
        "        f.write(good)\n"
        "    i += 1\n"
        "print(i)", p], stdout=subprocess.PIPE, text=True)
    loaded = []
    while writer.poll() is None:
        try:
            ep = st.load(p)
        except st.LoadError:
            outcomes.add("refused")
        else:
            ep.module()(x)
            loaded.append(ep)
            outcomes.add("loaded")
    assert writer.wait() == 0 and int(writer.stdout.read()) > 0
    for ep in loaded:
        ep.module()(x)  # (those loaded under a lease became private copies: still whole)
    Calls(st.load(p)).check()
    report("corrupted_while_loading", "/".join(sorted(outcomes)))

    # 10. two programs of one file, one called on another thread the whole time, while
    #     another process truncates the file: both copied, the running calls all whole
    import threading
    p = fresh("j.st"); ep1, ep2 = st.load(p), st.load(p)
    calls1, calls2 = Calls(ep1), Calls(ep2)
    stop, errors = threading.Event(), []

    def keep_calling():
        try:
            while not stop.is_set():
                calls1.check()
        except BaseException as err:
            errors.append(err)

    t = threading.Thread(target=keep_calling); t.start(); time.sleep(0.2)
    status, _ = other("import os, sys; os.truncate(sys.argv[1], 0)", p)
    time.sleep(0.2); stop.set(); t.join()
    assert status == 0 and not errors, errors
    assert not mapped(p, ep1.state_dict["fc.weight"]) and not mapped(p, ep2.state_dict["fc.weight"])
    calls1.check(); calls2.check()
    report("called_during_the_copy", "behaves")

    # 11. stray lease signals to the watching thread (no lease breaking): nothing changes
    import signal
    p = fresh("k.st"); ep = st.load(p); calls = Calls(ep)
    for _ in range(50):
        signal.pthread_kill(lease._watcher[1], lease._SIG)
    time.sleep(0.2)
    assert mapped(p, ep.state_dict["fc.weight"])
    calls.check()
    with open("/proc/self/status") as f:  # the kernel's view: not ignored (left as found)
        ignored = int(next(l for l in f if l.startswith("SigIgn:")).split()[1], 16)
    assert not ignored >> (int(lease._SIG) - 1) & 1
    report("lease_signal_spoofed", "ignored")

    # 12. st.save onto the file the weights map: by its path (a new file renamed over it)
    #     and through a file object opened without truncating (in place)
    p = fresh("l.st", ep_writes); ep = st.load(p); calls = Calls(ep, writer_model)
    calls.check()
    st.save(ep, p); calls.check()
    again = st.load(p)  # (the state ep's first call left: count 1)
    with open(p, "r+b") as f:
        st.save(ep, f)
    assert torch.equal(st.load(p).state_dict["count"], ep.state_dict["count"])
    assert torch.equal(again.state_dict["count"], torch.ones(512))  # (copied, unchanged)
    calls.check()
    report("saved_onto_its_own_file", "behaves")
''')


_LIMITS = ((resource.RLIMIT_CPU, (120, 120)),)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="read leases are Linux's")
def test_leased_weights_never_change_under_the_program(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = child.run(["-c", SCRIPT, str(tmp_path)], text=True, timeout=600, cwd=ROOT, env=env,
                    limits=_LIMITS, warnings=("ignore::DeprecationWarning",))  # (a fork)
    done = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    last = done[-1]["scenario"] if done else "the start"
    assert out.returncode == 0, (f"died after {last} (status {out.returncode})\n"
                                 f"{out.stderr[-3000:]}")
    if [d["scenario"] for d in done] == ["no_leases"]:
        pytest.skip("the kernel grants no read lease on a file in tmp_path")
    assert [d["scenario"] for d in done] == [
        "mapped_and_writes_private", "truncated_by_another_process",
        "rewritten_by_another_process", "nonblocking_writer", "forked_child",
        "open_for_writing_at_load", "released_with_the_program", "hard_link_truncated",
        "corrupted_while_loading", "called_during_the_copy", "lease_signal_spoofed",
        "saved_onto_its_own_file"]
    print("\n".join(f"{d['scenario']}: {d['outcome']}" for d in done))
