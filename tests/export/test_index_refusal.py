"""What a call refused by an index check moved before the first state write raises
(exporter/index_checks.py): ``ep.module()`` raises the catalogue's ``IndexOutOfBounds`` (also
eager's IndexError) naming the input element, the count, this call's values and the fix;
the program saved and loaded does the same; ``to_torch()``'s program raises torch's
RuntimeError with the same text, without this call's values.  Every call the write accepts
runs as eager."""

import pytest
import torch
from torch.testing import assert_close

import safetrace as st


class Ring(torch.nn.Module):
    """A cache of 8 slots written at ``arange(n) + pos[0]`` after its length is set."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(8, 4))
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x, pos):
        self.length.copy_(pos[0])
        self.cache.index_copy_(0, torch.arange(x.shape[0]) + self.length, x)
        self.length.add_(x.shape[0])
        return self.cache * 2


def _export():
    n = st.Dim("n", min=1)
    return st.export(Ring(), (torch.ones(3, 4), torch.arange(3)),
                     dynamic_shapes={"x": {0: n}, "pos": {0: n}})


_TEXT = (r"`self.cache.index_copy_\(0, torch.arange\(x.shape\[0\]\) \+ self.length, x\)` takes "
         r"the indices pos\[0\] to pos\[0\] \+ x.shape\[0\] - 1{here}, which must lie in "
         r"\[0, 8\): the program refused the call before writing any state \(eager raises "
         r"IndexError there, after writing state\)\nFix: call with pos\[0\] >= 0 and pos\[0\] "
         r"\+ x.shape\[0\] <= 8\n")


def _runs_as_eager(mod) -> None:
    eager = Ring()
    for n, start in ((1, 0), (3, 1), (8, 0), (1, 7), (2, 6)):  # (1 and 8: the ends)
        x, pos = torch.randn(n, 4), torch.arange(n) + start
        assert_close(mod(x, pos), eager(x.clone(), pos))


def _refuses(mod, error, here: str, outside=st.InputMismatchError, text: str = _TEXT) -> None:
    for n, start in ((2, 7), (3, -1), (1, 8)):
        before = {k: v.clone() for k, v in mod.state_dict().items()}
        with pytest.raises(IndexError):  # eager, after writing the length
            Ring()(torch.ones(n, 4), torch.arange(n) + start)
        at = here.format(start=start, n=n, last=start + n - 1)
        with pytest.raises(error, match=text.format(here=at)):
            mod(torch.ones(n, 4), torch.arange(n) + start)
        for k, v in mod.state_dict().items():  # refused before the length was written
            assert torch.equal(v, before[k]), k
    with pytest.raises(outside):  # outside the declared space (n >= 1)
        mod(torch.ones(0, 4), torch.arange(0))


_HERE = (r" \(at this call pos\[0\] = {start} and x.shape\[0\] = {n}: indices {start} to "
         r"{last}\)")


def test_module_raises_the_catalogue_error_with_the_call_values(tmp_path):
    ep = _export()
    assert "_assert_async" in str(ep)
    for mod in (ep.module(), _loaded(ep, tmp_path)):
        _runs_as_eager(mod)
        _refuses(mod, st.errors.IndexOutOfBounds, _HERE)
        with pytest.raises(st.RuntimeAssertionError):
            mod(torch.ones(2, 4), torch.arange(2) + 7)


def test_to_torch_program_raises_the_same_text_without_the_values():
    for verify in (False, True):  # (a program each: its modules share the program's state)
        mod = _export().to_torch(verify=verify).module()
        _runs_as_eager(mod)
        # (the graph's message in one line: inductor pastes it into C++ unescaped, where a
        # line break fails the compile of an AOTInductor package)
        _refuses(mod, RuntimeError, "", AssertionError,  # (torch's guard on the size)
                 _TEXT.replace(r"\n", " "))
        for node in mod.graph.nodes:
            if node.target is torch.ops.aten._assert_async.msg:
                assert "\n" not in node.args[1] and '"' not in node.args[1], node.args[1]


def _loaded(ep, tmp_path):
    st.save(ep, tmp_path / "ring.st")
    return st.load(tmp_path / "ring.st").module()


@pytest.mark.slow
def test_an_aoti_package_of_the_program_compiles_and_refuses(tmp_path):
    """The index check's message reaches inductor's C++ as a string literal (session 32:
    its line breaks failed every package of a static-cache LLM with CppCompileError)."""
    runner = torch._inductor.aoti_load_package(st.to_aoti(_export(), tmp_path / "ring.pt2"))
    x, pos = torch.randn(3, 4), torch.arange(3) + 2
    assert_close(runner(x, pos), Ring()(x.clone(), pos))
    with pytest.raises(RuntimeError):
        runner(torch.ones(2, 4), torch.arange(2) + 7)
