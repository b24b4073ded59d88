"""Positions past a static cache: the cache write's own index check runs before the
program writes any state (exporter/index_checks.py), so a refused call leaves the cache and
its length as they were; eager raises the same IndexError after writing the length."""

import os

import pytest
import torch

import safetrace as st
from tests.llm.test_generate import CACHE, VOCAB, __getattr__ as hf, export_static, tiny

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _eager_wrapper(model):
    model.generation_config.cache_implementation = "static"
    wrapper = hf("TorchExportableModuleWithStaticCache")(model, batch_size=1,
                                                         max_cache_len=CACHE)
    model.generation_config.cache_implementation = None
    return wrapper


def test_positions_past_the_cache_are_refused_before_any_state_write():
    model = tiny("llama", num_hidden_layers=2)
    ep = export_static(model)
    assert "_assert_async" in str(ep)
    mod = ep.module()
    prompt = torch.randint(0, VOCAB, (1, 5))
    wrapper = _eager_wrapper(model)
    with torch.no_grad():  # (a cache with content)
        torch.testing.assert_close(mod(input_ids=prompt, cache_position=torch.arange(5)),
                                   wrapper(input_ids=prompt, cache_position=torch.arange(5)))
    before = {k: v.clone() for k, v in mod.named_buffers()}
    assert any("cumulative_length" in k for k in before)
    ids = torch.randint(0, VOCAB, (1, 7))
    for positions in (torch.arange(60, 67), torch.arange(-1, 6), torch.arange(58, 65)):
        with pytest.raises(IndexError):  # eager, after writing the length
            wrapper(input_ids=ids, cache_position=positions)
        with pytest.raises(st.errors.IndexOutOfBounds, match=(
                r"`self\.keys\.index_copy_\(2, cache_position, key_states\)` takes the indices "
                r"cache_position\[0\] to cache_position\[0\] \+ input_ids.shape\[1\] - 1 \(at "
                rf"this call cache_position\[0\] = {int(positions[0])} and input_ids.shape\[1\] "
                r"= 7: .*must lie in \[0, 64\): the program refused the call before writing any "
                r"state.*\nFix: call with cache_position\[0\] >= 0 and cache_position\[0\] \+ "
                r"input_ids.shape\[1\] <= 64")) as caught:
            mod(input_ids=ids, cache_position=positions)
        assert isinstance(caught.value, IndexError)  # (eager's class)
        assert all(torch.equal(v, before[k]) for k, v in mod.named_buffers()), positions
    # the last slots and the whole cache still run, as eager (whose cache the refused
    # calls left as it was too): the check is the op's own, not a narrower one
    for n, start in ((7, 57), (CACHE, 0)):
        ids = torch.randint(0, VOCAB, (1, n))
        positions = torch.arange(start, start + n)
        with torch.no_grad():
            torch.testing.assert_close(mod(input_ids=ids, cache_position=positions),
                                       wrapper(input_ids=ids, cache_position=positions),
                                       rtol=1e-4, atol=1e-4)
    with pytest.raises(st.InputMismatchError):  # outside the declared space: input check
        mod(input_ids=torch.zeros(1, 0, dtype=torch.long), cache_position=torch.arange(0))


class _Ring(torch.nn.Module):
    """A state write at ``arange(n) + start`` where `start` is computed after the first
    state write from state: no value known before the write, so no check is moved."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.zeros(8))
        self.register_buffer("at", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.at.add_(1)
        self.buf.index_copy_(0, torch.arange(x.shape[0]) + self.at, x)
        return self.buf * 1


def test_an_offset_computed_from_written_state_is_left_to_the_op():
    ep = st.export(_Ring(), (torch.randn(3),), dynamic_shapes={"x": {0: st.Dim("n", min=1)}})
    assert "_assert_async" not in str(ep)
    mod, eager = ep.module(), _Ring()
    for n in (1, 3, 2):
        x = torch.randn(n)
        torch.testing.assert_close(mod(x), eager(x))
    for fn in (mod, eager):  # (at 4: slots 4..10 of 8, the op's IndexError in both)
        with pytest.raises(IndexError):
            fn(torch.randn(7))


def test_the_check_survives_save_load_and_to_torch(tmp_path):
    model = tiny("llama", num_hidden_layers=1)
    ep = export_static(model)
    st.save(ep, tmp_path / "p.st")
    ids, positions = torch.zeros(1, 7, dtype=torch.long), torch.arange(60, 67)
    for mod in (st.load(tmp_path / "p.st").module(), ep.to_torch().module()):
        before = {k: v.clone() for k, v in mod.named_buffers()}
        # (ours: the catalogue's error with this call's values; torch's: the same message
        # without them, from the graph's aten._assert_async.msg)
        with pytest.raises(RuntimeError, match=r"cache_position\[0\] \+ input_ids.shape\[1\] - 1"
                                               r".*refused the call before writing any state"):
            mod(input_ids=ids, cache_position=positions)
        assert all(torch.equal(v, before[k]) for k, v in mod.named_buffers())
        with torch.no_grad():
            prompt = torch.randint(0, VOCAB, (1, 3))
            torch.testing.assert_close(mod(input_ids=prompt, cache_position=torch.arange(3)),
                                       model(prompt).logits, rtol=1e-4, atol=1e-4)
