"""A loaded program's weights cannot change under it: the file truncated, rewritten in
place, saved over through a truncating file object, or truncated while loading (issue 23).

Each scenario could kill a process with SIGBUS if the weights were still a mapping of the
file, so all run in a child process under a CPU limit; the child reports each scenario as
it ends, and a signal names the scenario it died in.
"""

from __future__ import annotations

import json
import os
import resource
import textwrap
from pathlib import Path

from tests import child

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(r'''
    import io, json, os, sys, threading
    import torch
    import safetrace as st

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(256, 256)
            self.register_buffer("mask", torch.rand(256) > 0.5)
            self.register_buffer("count", torch.zeros(256))

        def forward(self, x):
            self.count.add_(1)
            return torch.where(self.mask, self.fc(x), x) + self.count

    tmp = sys.argv[1]
    torch.manual_seed(0)
    model = Net()
    ep0 = st.export(model, (torch.randn(2, 256),),
                    dynamic_shapes={"x": {0: st.Dim("n", max=64)}})
    x = torch.randn(3, 256)
    import copy
    calls = {}  # program -> how many times its modules ran (they share its state, as torch's)

    def eager(n):
        ref = copy.deepcopy(model)
        for _ in range(n):
            out = ref(x)
        return out

    def fresh(name):
        p = os.path.join(tmp, name)
        st.save(ep0, p)
        return p

    def same(ep):
        calls[ep] = calls.get(ep, 0) + 1
        mod = ep.module()
        got = mod(x)
        assert torch.equal(got, eager(calls[ep])), "weights changed"
        try:
            mod(torch.randn(65, 256))
        except st.InputMismatchError:
            pass
        else:
            raise AssertionError("not rejected")

    def report(name, outcome):
        print(json.dumps({"scenario": name, "outcome": outcome}), flush=True)

    # 1. truncated after the load
    p = fresh("a.st"); ep = st.load(p); os.truncate(p, 100); same(ep)
    report("truncated_after_load", "behaves")
    # 2. rewritten in place after the load (weights, then the bool mask to bytes of 2)
    p = fresh("b.st"); ep = st.load(p)
    data = bytearray(open(p, "rb").read()); data[-4096:] = b"\x02" * 4096
    with open(p, "r+b") as f:
        f.write(data)
    same(ep)
    report("rewritten_in_place", "behaves")
    # 3. a weights= file truncated after the load
    p = os.path.join(tmp, "g.st"); st.save(ep0, p, weights=False)
    from safetensors.torch import save_file
    w = os.path.join(tmp, "w.safetensors")
    save_file({k: v.contiguous() for k, v in ep0.state_dict.items()}, w)
    ep = st.load(p, weights=w); os.truncate(w, 10); same(ep)
    report("weights_file_truncated", "behaves")
    # 4. saved over the file it came from, through a truncating file object
    p = fresh("c.st"); ep = st.load(p)
    with open(p, "wb") as f:
        st.save(ep, f)
    same(ep); same(st.load(p))
    report("saved_over_its_file_object", "behaves")
    # 5. truncated while loading: a LoadError or a whole program, never a crash
    p = fresh("d.st"); size = os.path.getsize(p); outcomes = set()
    for i in range(30):
        st.save(ep0, p)
        t = threading.Thread(target=os.truncate, args=(p, (i * 7919) % size))
        t.start()
        try:
            ep = st.load(p)
        except st.LoadError:
            outcomes.add("refused")
        else:
            same(ep)
            outcomes.add("loaded")
        t.join()
    report("truncated_while_loading", "/".join(sorted(outcomes)))
    # 6. mmap=True (opt-in): saving onto its own file through a file object is refused;
    #    saving onto its path replaces the file and leaves the mapping whole
    p = fresh("e.st"); ep = st.load(p, mmap=True); same(ep)
    with open(p, "r+b") as f:
        try:
            st.save(ep, f)
        except ValueError as err:
            assert "mapped" in str(err)
        else:
            raise AssertionError("saved onto its mapping")
    same(ep)
    # a new file renamed over: the map stays; the file holds the state ep's calls left
    st.save(ep, p); loaded = st.load(p); calls[loaded] = calls[ep]; same(ep); same(loaded)
    report("mmap_save_onto_itself", "refused cleanly")
    # 7. mmap=True: bool bytes are checked on the copy the program uses
    p = fresh("f.st"); ep = st.load(p, mmap=True)
    mask_off = None
    with open(p, "rb") as f:
        n = int.from_bytes(f.read(8), "little"); head = json.loads(f.read(n))
    b, e = head["state:mask"]["data_offsets"]
    with open(p, "r+b") as f:
        f.seek(8 + n + b); f.write(b"\x02" * (e - b))
    same(ep)
    try:
        st.load(p, mmap=True)
    except st.LoadError as err:
        assert "bool bytes" in str(err)
    else:
        raise AssertionError("bool bytes of 2 loaded")
    report("mmap_bool_bytes", "refused cleanly")
''')


_LIMITS = ((resource.RLIMIT_CPU, (120, 120)),)


def test_file_changes_cannot_reach_a_loaded_program(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = child.run(["-c", SCRIPT, str(tmp_path)], text=True, timeout=600, cwd=ROOT, env=env,
                    limits=_LIMITS)  # (forked from a process that imported torch)
    done = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    last = done[-1]["scenario"] if done else "the start"
    assert out.returncode == 0, (f"died after {last} (status {out.returncode})\n"
                                 f"{out.stderr[-3000:]}")
    assert [d["scenario"] for d in done] == [
        "truncated_after_load", "rewritten_in_place", "weights_file_truncated",
        "saved_over_its_file_object", "truncated_while_loading", "mmap_save_onto_itself",
        "mmap_bool_bytes"]
    print("\n".join(f"{d['scenario']}: {d['outcome']}" for d in done))
