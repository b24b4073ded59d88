"""Saving and loading real-size weights: st.save/st.load against torch.export and safetensors.

    python benchmarks/bench_save.py [--sizes 256,1024] [--dir DIR] [--repeat 1]

For each model size (MiB of float32 weights: a stack of 4096x4096 linear layers) every
step runs in a fresh process (libraries imported, model built, exported, before the
clock starts), and reports its wall time and the peak RSS it added (VmHWM reset just
before the step):

  st.save            st.save(ep, path)
  st.save(file)      with open(path, "wb") as f: st.save(ep, f)     (streamed: RSS)
  st.load+call       ep = st.load(path); ep.module()(x)        (checked against eager)
  st.copy+call       the same with read leases off (safetrace.serialize.lease.ENABLED =
                     False): the weights read into private memory, what st.load does where
                     the kernel grants no lease (another user's file, NFS, a file open for
                     writing)
  export.save        torch.export.save(ep, path)
  export.load+call   torch.export.load(path).module()(x)
  st_file.save       safetensors.torch.save_file(model.state_dict(), path)
  st_file.load+call  load_file(path); a meta-device model assigned those weights; model(x)
  st.mmap+call       st.load(path, mmap=True).module()(x): the file mapped, as load_file does
  st_file.pread+call load_file(path, backend="pread"): safetensors' weights in private memory
  floor.read         os.preadv of st.save's whole file into fresh private memory (an
                     anonymous mapping): the kernel's cost of any private copy of the
                     weights, which st.load (mmap=False) pays and load_file's mapping does not

Each load step runs twice: with the file in the page cache (read once before the clock:
"warm") and evicted from it (fsync + POSIX_FADV_DONTNEED: "cold"), the same for the three
formats, so that no format profits from how its save left the cache (st.save writes large
files with O_DIRECT, which leaves nothing cached; the others leave the whole file cached).

Like with like: ``load_file`` (its default mmap backend) builds tensors over a private
mapping of the file (``UntypedStorage.from_file(..., shared=False)``-style): nothing is
read or copied until the first call touches it, and the file must stay unchanged while the
weights live (truncating it is a SIGBUS).  ``st.load`` (default) reads every weight into
memory of the program's own before returning; its like is ``load_file(backend="pread")``,
and ``st.load(mmap=True)``'s is ``load_file``.  Every load step includes the first forward
(time to first output).  Each step also reports its CPU time (user + system) and minor
page faults.

Goals (issue 12): save <= 1.5x save_file and <= 0.5x export.save; load to a first correct
call <= 1.5x load_file plus module build; peak RSS added by load <= 1.25x weight bytes.
The files are deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

WIDTH = 4096


def _model(mib: int, device: str = "cpu") -> object:
    import torch

    layers = max(1, mib * 2**20 // (WIDTH * WIDTH * 4))
    torch.manual_seed(0)
    with torch.device(device):
        mods = []
        for _ in range(layers):
            mods += [torch.nn.Linear(WIDTH, WIDTH, bias=False), torch.nn.ReLU()]
        return torch.nn.Sequential(*mods)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM (peak RSS) to the current RSS


def _peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def step(name: str, mib: int, folder: str) -> dict:
    """Run one step in this (fresh) process; returns seconds and peak RSS added."""
    import torch

    torch.set_num_threads(1)
    import safetrace as st

    x = torch.randn(2, WIDTH, generator=torch.Generator().manual_seed(1))
    ref = os.path.join(folder, "ref.pt")
    full, name = name, name.split()[0]  # the cache state was set up by the parent
    path = os.path.join(folder, FILES[name.split(".")[0]])
    if name == "st.save(file)":
        path += ".stream"
    run = None
    if name.endswith((".save", ".save(file)")):
        model = _model(mib)
        if name == "st.save":
            ep = st.export(model, (x,))
            with torch.no_grad():
                torch.save({"y": model(x)}, ref)
            run = lambda: st.save(ep, path)  # noqa: E731
        elif name == "st.save(file)":
            ep = st.export(model, (x,))

            def run() -> None:
                with open(path, "wb") as f:
                    st.save(ep, f)
        elif name == "export.save":
            ep = torch.export.export(model, (x,))
            run = lambda: torch.export.save(ep, path)  # noqa: E731
        else:
            from safetensors.torch import save_file

            sd = model.state_dict()
            run = lambda: save_file(sd, path)  # noqa: E731
    expected = torch.load(ref)["y"] if "load" in name else None
    # every library imported before the clock starts: the steps time the formats
    import safetensors.torch  # noqa: F401
    import safetrace.serialize  # noqa: F401
    import torch.export  # noqa: F401
    from safetrace.exporter import program  # noqa: F401

    def load_st() -> object:
        return st.load(path).module()(x)

    def load_export() -> object:
        return torch.export.load(path).module()(x)

    def load_file_and_build() -> object:
        from safetensors.torch import load_file

        model = _model(mib, device="meta")
        model.load_state_dict(load_file(path), assign=True)
        with torch.no_grad():
            return model(x)

    def load_st_copied() -> object:
        return st.load(path).module()(x)

    def load_st_mapped() -> object:
        return st.load(path, mmap=True).module()(x)

    def load_file_pread() -> object:
        from safetensors.torch import load_file

        model = _model(mib, device="meta")
        model.load_state_dict(load_file(path, backend="pread"), assign=True)
        with torch.no_grad():
            return model(x)

    def read_private() -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            view, done = memoryview(buf), 0
            while done < size:
                done += os.preadv(fd, [view[done:]], done)
        finally:
            os.close(fd)

    if run is None:
        run = {"st.load+call": load_st, "export.load+call": load_export,
               "st_file.load+call": load_file_and_build, "floor.read": read_private,
               "st.mmap+call": load_st_mapped, "st_file.pread+call": load_file_pread,
               "st.copy+call": load_st_copied}[name]
    if name == "st.copy+call":
        from safetrace.serialize import lease

        lease.ENABLED = False  # what st.load does where the kernel grants no read lease
    base = _rss()
    _reset_peak()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    out = run()
    seconds = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    added = _peak() - base
    if expected is not None:
        torch.testing.assert_close(out, expected)
    return {"step": full, "mib": mib, "seconds": seconds, "peak_added": added,
            "cpu": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
            "minflt": r1.ru_minflt - r0.ru_minflt,
            "file_bytes": os.path.getsize(path) if os.path.exists(path) else None}


SAVES = ["st.save", "st.save(file)", "export.save", "st_file.save"]
LOADS = ["st.load+call", "export.load+call", "st_file.load+call", "floor.read",
         "st.mmap+call", "st_file.pread+call", "st.copy+call"]
STEPS = SAVES + [f"{name} {cache}" for cache in ("warm", "cold") for name in LOADS]
FILES = {"st": "m.st", "export": "m.pt2", "st_file": "m.safetensors", "floor": "m.st"}


def _cache(path: str, cache: str) -> None:
    """Put ``path`` in the page cache (warm) or out of it (cold) before a load step."""
    if cache == "warm":
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="256,1024")
    p.add_argument("--dir", default=None)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--only", default=None,
                   help="comma-separated step names to run (e.g. 'st.load+call,st_file.load+"
                        "call'; the saves that write their files run too); the ratios need all")
    p.add_argument("--step", default=None, help=argparse.SUPPRESS)
    p.add_argument("--mib", type=int, default=0, help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.step:
        print(json.dumps(step(ns.step, ns.mib, ns.dir)))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    rows = []
    steps = STEPS
    if ns.only:
        wanted = set(ns.only.split(","))
        files = {FILES[w.split(".")[0]] for w in wanted}
        steps = [s for s in STEPS if s.split()[0] in wanted
                 or s in ("st.save", "st_file.save", "export.save")
                 and FILES[s.split(".")[0]] in files | {"m.st"}]
    print(f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    for mib in (int(s) for s in ns.sizes.split(",")):
        folder = tempfile.mkdtemp(prefix="bench_save_", dir=ns.dir)
        try:
            for name in steps:
                best = None
                for _ in range(ns.repeat):
                    if " " in name:
                        step_name, cache = name.split()
                        _cache(os.path.join(folder, FILES[step_name.split(".")[0]]), cache)
                    out = subprocess.run([sys.executable, __file__, "--step", name, "--mib",
                                          str(mib), "--dir", folder], capture_output=True,
                                         text=True, env=env, timeout=3600)
                    if out.returncode != 0:
                        raise SystemExit(f"{name} ({mib} MiB) failed:\n{out.stderr[-3000:]}")
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    best = r if best is None or r["seconds"] < best["seconds"] else best
                rows.append(best)
                print(f"{mib:5d} MiB  {name:24s} {best['seconds']:8.3f} s  "
                      f"cpu {best['cpu']:6.3f} s  minflt {best['minflt']:7d}  "
                      f"peak RSS added {best['peak_added'] / 2**20:8.1f} MiB", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print()
    _table(rows, steps)


def _table(rows: list[dict], steps: list[str]) -> None:
    by = {(r["mib"], r["step"]): r for r in rows}
    print("| weights | step | time (s) | CPU (s) | minor faults | peak RSS added (MiB) |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['mib']} MiB | {r['step']} | {r['seconds']:.3f} | {r['cpu']:.3f} | "
              f"{r['minflt']} | {r['peak_added'] / 2**20:.0f} |")
    print()
    if steps != STEPS:
        return
    for mib in sorted({r["mib"] for r in rows}):
        s = {k: by[(mib, k)] for k in STEPS}
        t = {k: v["seconds"] for k, v in s.items()}
        print(f"{mib} MiB: save {t['st.save'] / t['st_file.save']:.2f}x save_file (goal <= 1.5), "
              f"{t['st.save'] / t['export.save']:.2f}x export.save (goal <= 0.5); saving to a "
              f"file object adds {s['st.save(file)']['peak_added'] / (mib * 2**20):.2f}x the "
              f"weights to the peak RSS; load+call "
              + ", ".join(f"{c} {t['st.load+call ' + c] / t['st_file.load+call ' + c]:.2f}x"
                          f" load_file+build / "
                          f"{t['st.load+call ' + c] / t['export.load+call ' + c]:.2f}x"
                          f" export.load" for c in ("warm", "cold"))
              + " (goal <= 1.5 of load_file+build); load peak RSS added "
              + ", ".join(f"{cache} {s['st.load+call ' + cache]['peak_added'] / (mib * 2**20):.2f}x"
                          for cache in ("warm", "cold")) + " weights (goal <= 1.25); "
              + "st.load+call over the private-memory floor (preadv into fresh memory) "
              + ", ".join(f"{c} {t['st.load+call ' + c] / t['floor.read ' + c]:.2f}x"
                          for c in ("warm", "cold")))
        print(f"{mib} MiB, like with like: private memory (st.load / load_file(backend="
              "\"pread\")) "
              + ", ".join(f"{c} {t['st.load+call ' + c] / t['st_file.pread+call ' + c]:.2f}x"
                          for c in ("warm", "cold"))
              + "; a mapping of the file (st.load(mmap=True) / load_file) "
              + ", ".join(f"{c} {t['st.mmap+call ' + c] / t['st_file.load+call ' + c]:.2f}x"
                          for c in ("warm", "cold")))


if __name__ == "__main__":
    main()
