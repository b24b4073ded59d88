"""What a refused hostile file costs: ``st.load`` of a 1 GiB sparse file (holes: no disk)
whose header declares the program's ``[4]`` buffer as ``[2**28]`` float32 (session 33).

    python benchmarks/hostile_sparse.py {read,leased,mmap} PATH

One case a process (its peak RSS is the process's): ``read`` with read leases off (the
data read into memory of the program's own), ``leased`` (the default path: mapped under a
read lease where the kernel grants one), ``mmap`` (``st.load(path, mmap=True)``).  PATH is
made on first use (1 GiB apparent size).  Prints wall and CPU seconds of the load and the
growth of the process's peak RSS.
"""
import io, json, os, resource, struct, sys, time
import torch
import safetrace as st
from safetrace.serialize import lease

class Buf(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.register_buffer("b", torch.arange(4.0))
    def forward(self, x):
        return x + self.b

how, path = sys.argv[1], sys.argv[2]
if not os.path.exists(path):
    buf = io.BytesIO(); st.save(st.export(Buf(), (torch.randn(3, 4),)), buf); raw = buf.getvalue()
    (n,) = struct.unpack("<Q", raw[:8]); meta = json.loads(raw[8:8 + n])["__metadata__"]
    head = {"state:b": {"dtype": "F32", "shape": [1 << 28], "data_offsets": [0, 1 << 30]}, "__metadata__": meta}
    text = json.dumps(head).encode(); text += b" " * (-(len(text) + 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
    os.truncate(path, 8 + len(text) + (1 << 30))
if how == "read":
    lease.ENABLED = False
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
try:
    st.load(path, mmap=how == "mmap")
except st.LoadError as e:
    msg = str(e).splitlines()[0][:70]
t1, c1 = time.perf_counter(), time.process_time()
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{how:7s} wall {t1 - t0:.3f} s  cpu {c1 - c0:.3f} s  peak RSS +{(rss1 - rss0) / 1024:.0f} MiB  {msg}")
