"""st.save writes like a careful tool: atomic, durable, umask mode, symlinks followed,
non-regular destinations refused, no temporary file left behind."""

from __future__ import annotations

import os
import stat

import pytest
import torch

import safetrace as st
from safetrace.serialize import writer


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).relu()


@pytest.fixture(scope="module")
def ep():
    return st.export(Net(), (torch.randn(5, 4),), dynamic_shapes={"x": {0: st.Dim("n", max=32)}})


def _runs(ep0, path) -> None:
    mod = st.load(path).module()
    for n in (0, 1, 7):
        x = torch.randn(n, 4)
        torch.testing.assert_close(mod(x), ep0.module()(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(33, 4))


def _umask(value: int) -> int:
    return os.umask(value)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_mode_follows_the_umask(ep, tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        st.save(ep, tmp_path / "m.st")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m.st").st_mode) == mode
    _runs(ep, tmp_path / "m.st")


def test_existing_file_keeps_its_mode(ep, tmp_path):
    p = tmp_path / "m.st"
    p.write_bytes(b"old")
    os.chmod(p, 0o640)
    st.save(ep, p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    _runs(ep, p)


def test_saving_through_a_symlink_writes_its_target(ep, tmp_path):
    target = tmp_path / "real.st"
    target.write_bytes(b"old")
    link = tmp_path / "link.st"
    os.symlink("real.st", link)
    st.save(ep, link)
    assert os.path.islink(link) and os.readlink(link) == "real.st"
    _runs(ep, target)
    # a dangling link: its target is created
    dangling = tmp_path / "dangling.st"
    os.symlink("new.st", dangling)
    st.save(ep, dangling)
    assert os.path.islink(dangling)
    _runs(ep, tmp_path / "new.st")
    assert sorted(os.listdir(tmp_path)) == ["dangling.st", "link.st", "new.st", "real.st"]


def test_non_regular_destinations_are_refused(ep, tmp_path):
    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError, match="a FIFO, not a regular file"):
        st.save(ep, fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(IsADirectoryError, match="a directory"):
        st.save(ep, tmp_path)
    with pytest.raises(FileExistsError, match="a device"):
        writer.destination("/dev/null")
    os.symlink("p.fifo", tmp_path / "to_fifo")
    with pytest.raises(FileExistsError, match="a FIFO"):
        st.save(ep, tmp_path / "to_fifo")
    assert sorted(os.listdir(tmp_path)) == ["p.fifo", "to_fifo"]


def test_a_failed_save_leaves_no_temporary_file_and_the_old_file(ep, tmp_path, monkeypatch):
    p = tmp_path / "m.st"
    st.save(ep, p)
    before = p.read_bytes()

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write_buffered", boom)
    with pytest.raises(OSError, match="No space"):
        st.save(ep, p)
    assert os.listdir(tmp_path) == ["m.st"] and p.read_bytes() == before


def test_save_flushes_the_file_and_its_folder(ep, tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    st.save(ep, tmp_path / "m.st")
    assert synced == [False, True]
    _runs(ep, tmp_path / "m.st")
