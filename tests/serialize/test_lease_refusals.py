"""A hostile file given by its path is refused with the read lease let go and no file
descriptor left open (the lease is taken before the first byte is read, so every refusal
after it must release it), and the untouched base program loads mapped from its path."""

from __future__ import annotations

import gc
import os
import sys

import pytest
import torch

import safetrace as st
from safetrace.serialize import lease
from tests.serialize import hostile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="read leases and /proc/self/fd are Linux's")


def _fds_of(path) -> set:
    """This process's file descriptors open on the file ``path`` (by device and inode: a
    descriptor another test or thread opens or closes meanwhile, on another file, is
    none of the loader's)."""
    want = os.stat(path)
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            st_ = os.stat(f"/proc/self/fd/{fd}")
        except OSError:  # (closed meanwhile, or not a file)
            continue
        if (st_.st_dev, st_.st_ino) == (want.st_dev, want.st_ino):
            found.add(fd)
    return found


@pytest.fixture(scope="module")
def container_cases(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("hostile"))
    specs = [(c.name, c.make(tmp)) for c in hostile.cases() if c.category == "container"]
    return [(name, spec) for name, spec in specs if isinstance(spec.source, bytes)]


def test_refusals_from_a_path_release_the_lease(container_cases, tmp_path):
    assert len(container_cases) >= 30
    held = set(lease._held)
    for name, spec in container_cases:
        path = tmp_path / f"{name}.st"
        path.write_bytes(spec.source)
        with pytest.raises(st.LoadError) as err:
            st.load(path, **spec.load_kwargs)
        if spec.match:
            import re
            assert re.search(spec.match, str(err.value)), (name, str(err.value)[:300])
        # (released by the refusal itself, not by a later garbage collection)
        assert set(lease._held) == held, f"{name}: a lease left held"
        assert not _fds_of(path), f"{name}: a file descriptor left open"
        # the refused file can be written at once (no lease left to break)
        with open(path, "r+b") as f:
            f.truncate(0)


def _leases_here(folder) -> bool:
    probe = folder / "probe"
    probe.write_bytes(b"")
    fd = os.open(probe, os.O_RDONLY)
    try:
        got = lease.take(fd)
    finally:
        os.close(fd)
    if got is not None:
        lease.release(got)
    return got is not None


def test_the_base_program_loads_from_its_path_and_lets_go(tmp_path):
    if not _leases_here(tmp_path):
        pytest.skip("the kernel grants no read lease in tmp_path")
    path, blob = tmp_path / "base.st", hostile.base_blob()
    path.write_bytes(blob)
    held = set(lease._held.values())
    assert not _fds_of(path)
    ep = st.load(path)
    mine = set(lease._held.values()) - held
    assert len(mine) == 1, "the base program was copied, not mapped under a lease"
    assert _fds_of(path)  # (the lease's, until the program goes)
    x = torch.randn(3, 8)
    ref = st.load(blob).module()(x)  # (bytes: read into memory)
    torch.testing.assert_close(ep.module()(x), ref)
    del ep
    gc.collect()
    assert not mine & set(lease._held.values())
    assert not _fds_of(path)
