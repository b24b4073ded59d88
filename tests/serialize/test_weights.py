"""Weights in format 2: mapped copy-on-write, graph-only files, tied and unusual tensors."""

from __future__ import annotations

import io
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

import safetrace as st
from tests.models import MLP
from tests.serialize import surgery


def _check(ep, model, sizes=(4, 0, 1, 7)):
    for n in sizes:
        x = torch.randn(n, 16)
        torch.testing.assert_close(ep.module()(x), model(x))
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(3, 15))


def _dyn(model):
    return st.export(model, (torch.randn(4, 16),), dynamic_shapes={"x": {0: st.Dim("b")}})


def test_graph_only_file_from_a_meta_device_export(tmp_path):
    with torch.device("meta"):
        meta_model = MLP()
    ep = _dyn(meta_model)
    with pytest.raises(ValueError, match=r"meta device.*\n.*weights=False"):
        st.save(ep, tmp_path / "m.st")
    st.save(ep, tmp_path / "g.st", weights=False)
    assert (tmp_path / "g.st").stat().st_size < 64 * 1024
    real = MLP()
    _check(st.load(tmp_path / "g.st", weights=real.state_dict()), real)
    save_file(real.state_dict(), tmp_path / "w.safetensors")
    _check(st.load(tmp_path / "g.st", weights=tmp_path / "w.safetensors"), real)
    with pytest.raises(st.LoadError, match="saved without weights"):
        st.load(tmp_path / "g.st")


def test_weights_mismatch_names_every_problem(tmp_path):
    real = MLP()
    st.save(_dyn(real), tmp_path / "g.st", weights=False)
    sd = real.state_dict()
    sd.pop("fc1.bias")
    sd["fc2.weight"] = sd["fc2.weight"].double()
    sd["fc3.weight"] = torch.zeros(3, 3)
    sd["extra.weight"] = torch.zeros(1)
    with pytest.raises(st.LoadError) as info:
        st.load(tmp_path / "g.st", weights=sd)
    msg = str(info.value)
    for part in ("missing: fc1.bias", "not in the program: extra.weight",
                 "fc2.weight: expected float32 [32, 32], got float64",
                 "fc3.weight: expected float32 [8, 32], got float32 [3, 3]"):
        assert part in msg, msg
    st.save(_dyn(real), tmp_path / "full.st")
    with pytest.raises(st.LoadError, match="holds its weights"):
        st.load(tmp_path / "full.st", weights=real.state_dict())


class Big(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn((16 << 20) // 4, 4))  # 64 MiB
        self.register_buffer("count", torch.zeros(4))

    def forward(self, idx):
        self.count.add_(1)
        return self.table[idx] + self.count


def _resident(path) -> tuple[int, int]:
    """(resident bytes, of them private copies) of this process's mappings of ``path``,
    from /proc/self/smaps: what the program touched of the file, whatever else the
    process's RSS does (under memory pressure the kernel drops the pages of torch's
    libraries and faults them back in as they run, which made a whole-process RSS
    difference flaky)."""
    target = os.path.realpath(path)
    rss = anon = 0
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) >= 6 and " ".join(head[5:]) == target
            elif inside and head[0] == "Rss:":
                rss += int(head[1]) << 10
            elif inside and head[0] == "Anonymous:":
                anon += int(head[1]) << 10
    return rss, anon


def test_weights_are_mapped_copy_on_write_on_request(tmp_path):
    model = Big()
    ep = st.export(model, (torch.tensor([0, 5]),), dynamic_shapes={"idx": {0: st.Dim("k")}})
    path = tmp_path / "big.st"
    st.save(ep, path)
    del ep
    on_disk = load_file(path)["state:table"].clone()
    assert _resident(path) == (0, 0)
    ep2 = st.load(path, mmap=True)
    assert 0 < os.path.getsize(path) - (64 << 20) < 1 << 20
    assert _resident(path)[0] < 4 << 20  # 64 MiB mapped, not read
    mod = ep2.module()
    for calls, idx in enumerate((torch.tensor([1, 2, 3]), torch.tensor([7]),
                                 torch.tensor([], dtype=torch.long)), start=1):
        torch.testing.assert_close(mod(idx), model.table[idx].detach() + calls)
    assert torch.equal(load_file(path)["state:count"], torch.zeros(4))  # buffer: own copy
    rss, anon = _resident(path)
    assert rss < 4 << 20 and anon == 0  # a few rows touched, none written
    ep2.state_dict["table"].data[0] += 1  # written: its pages are copied, the file is not
    rss, anon = _resident(path)
    assert 0 < anon <= rss < 4 << 20
    assert torch.equal(load_file(path)["state:table"], on_disk)
    assert torch.equal(st.load(path).state_dict["table"], on_disk)


def test_weights_are_private_by_default(tmp_path):
    model = Big()
    ep = st.export(model, (torch.tensor([0, 5]),), dynamic_shapes={"idx": {0: st.Dim("k")}})
    path = tmp_path / "big.st"
    st.save(ep, path)
    ep2 = st.load(path)
    mod = ep2.module()
    with open(path, "r+b") as f:  # the file rewritten in place, then truncated
        f.seek(-4096, os.SEEK_END)
        f.write(b"\x7f" * 4096)
        f.truncate(1000)
    idx = torch.tensor([1, 511])
    torch.testing.assert_close(mod(idx), model.table[idx].detach() + 1)  # no SIGBUS
    with pytest.raises(st.InputMismatchError):
        mod(torch.tensor([[1]]))
    # saving over the file it came from, through a truncating file object (the file holds
    # the state the first call left: its modules share the program's buffers, as torch's)
    with open(path, "wb") as f:
        st.save(ep2, f)
    torch.testing.assert_close(st.load(path).module()(idx), model.table[idx].detach() + 2)


class Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("phase", torch.randn(4, dtype=torch.complex128))
        self.register_buffer("t", torch.randn(4, 3).t())  # not contiguous

    def forward(self, idx):
        h = self.emb(idx) + self.t.sum()
        return self.head(h), (h * self.phase).real


def test_tied_complex_and_strided_state_round_trip(tmp_path):
    model = Tied()
    ep = st.export(model, (torch.tensor([1, 2]),), dynamic_shapes={"idx": {0: st.Dim("k")}})
    st.save(ep, tmp_path / "t.st")
    ep2 = st.load(tmp_path / "t.st")
    assert ep2._state["phase"].dtype is torch.complex128
    for idx in (torch.tensor([3, 4, 5]), torch.tensor([0]), torch.tensor([], dtype=torch.long)):
        for a, b in zip(ep2.module()(idx), model(idx)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)  # float32 sums reorder


def test_shared_tensors_are_written_once():
    from safetrace.serialize.writer import prepare  # noqa: PLC0415

    w = torch.randn(4, 4)
    out, aliases, _ = prepare({"a": w, "b": w, "c": w[1:], "d": w.t()})
    assert aliases == {"b": "a"} and set(out) == {"a", "c", "d"}
    assert out["c"].untyped_storage().data_ptr() != w.untyped_storage().data_ptr()
    assert out["d"].is_contiguous() and torch.equal(out["d"], w.t())


def test_load_state_dict_into_a_loaded_program_copies_each_weight_once(tmp_path, monkeypatch):
    model = MLP()
    st.save(_dyn(model), tmp_path / "m.st")
    before = (tmp_path / "m.st").read_bytes()
    module = st.load(tmp_path / "m.st").module()
    other = MLP()
    new = {k: v.detach().clone() for k, v in other.state_dict().items()}
    clones = []
    real_clone = torch.Tensor.clone
    monkeypatch.setattr(torch.Tensor, "clone", lambda t, *a, **k: clones.append(t.shape)
                        or real_clone(t, *a, **k))
    module.load_state_dict(new)
    monkeypatch.undo()
    assert clones == []  # the mapped weights are not copied before being overwritten
    for k, v in module.state_dict().items():
        assert torch.equal(v, new[k]) and v.data_ptr() != new[k].data_ptr()
    x = torch.randn(3, 16)
    torch.testing.assert_close(module(x), other(x))
    assert (tmp_path / "m.st").read_bytes() == before
    # a value that cannot be copied leaves the old one (a clone), never uninitialized memory
    module2 = st.load(tmp_path / "m.st").module()
    bad = dict(new, **{"fc1.weight": torch.ones(3, 3)})
    with pytest.raises(RuntimeError, match="size mismatch"):
        module2.load_state_dict(bad)
    assert torch.equal(module2.state_dict()["fc1.weight"], model.state_dict()["fc1.weight"])


def test_a_loaded_program_runs_on_its_own_weights_without_another_copy():
    """Weights read into the program's memory are its state: modules share them, as torch's
    do, and nothing is copied again; a caller's state_dict given as weights= is copied."""
    model = Big()
    ep = st.export(model, (torch.tensor([0, 5]),), dynamic_shapes={"idx": {0: st.Dim("k")}})
    loaded = st.load(surgery.saved(ep))
    before = {k: v.data_ptr() for k, v in loaded._state.items()}
    mod = loaded.module()
    mod(torch.tensor([1, 2]))
    assert {k: v.data_ptr() for k, v in loaded.state_dict.items()} == before
    assert mod.count.data_ptr() == before["count"]  # the module runs on the program's own
    graph_only = io.BytesIO()
    st.save(ep, graph_only, weights=False)
    mine = {k: v.clone() for k, v in ep.state_dict.items()}
    ep2 = st.load(graph_only.getvalue(), weights=mine)
    ep2.module()(torch.tensor([1, 2]))
    assert torch.equal(mine["count"], torch.zeros(4))  # the caller's tensor: never written


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_weights_read_by_several_threads_are_exact(tmp_path, monkeypatch, threads):
    from safetrace.serialize import tensorfile

    # parts of 1 KiB: every thread's part starts and ends inside some tensor
    monkeypatch.setattr(tensorfile, "READ_THREADS", threads)
    monkeypatch.setattr(tensorfile, "_THREAD_MIN", 1 << 10)

    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.a = torch.nn.Parameter(torch.randn(37, 29, generator=g))
            self.b = torch.nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
            self.register_buffer("c", torch.randint(0, 9, (1000,), generator=g))
            self.register_buffer("d", torch.randn(5, 7, generator=g).to(torch.bfloat16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ self.a + self.b.float().sum() + self.c.sum() + self.d.float().sum()

    model = Odd()
    ep = st.export(model, (torch.randn(2, 37),))
    path = str(tmp_path / "m.st")
    st.save(ep, path)
    loaded = st.load(path)
    for k, v in model.state_dict().items():
        assert torch.equal(loaded.state_dict[k], v), k
    x = torch.randn(2, 37)
    torch.testing.assert_close(loaded.module()(x), model(x))
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # cut inside the last thread's part
        f.truncate(size - 100)
    with pytest.raises(st.LoadError, match="truncated|ended|past"):
        st.load(path)


@pytest.mark.parametrize("rate", [1, 1 << 62], ids=["huge_pages_slow", "huge_pages_fast"])
def test_weights_read_into_huge_pages_are_exact_and_the_programs_own(tmp_path, monkeypatch,
                                                                       rate):
    """The opt-in huge-page fill (destination.HUGE_PAGES): kept while pieces come fast,
    dropped for 4 KiB pages when one is slow; either way every byte read, and the file
    rewritten after the load changes nothing."""
    from safetrace.serialize import destination

    monkeypatch.setattr(destination, "HUGE_PAGES", True)
    monkeypatch.setattr(destination, "HUGE_RATE", rate)

    class Wide(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.register_buffer("w", torch.randn(3, 1 << 20, generator=g))  # 12 MiB
            self.register_buffer("b", torch.randint(0, 2, (77,), generator=g).bool())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.w[:, :4] * x + self.b.sum()

    model = Wide()
    ep = st.export(model, (torch.randn(3, 4),))
    path = tmp_path / "wide.st"
    st.save(ep, path)
    loaded = st.load(path)
    with open(path, "r+b") as f:  # rewritten in place, then cut: nothing reaches the program
        f.seek(-(8 << 20), os.SEEK_END)
        f.write(b"\x7f" * (8 << 20))
        f.truncate(1 << 10)
    for k, v in model.state_dict().items():
        assert torch.equal(loaded.state_dict[k], v), k
    x = torch.randn(3, 4)
    torch.testing.assert_close(loaded.module()(x), model(x))
