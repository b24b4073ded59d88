"""A ``no_grad`` block inside forward, and ``ep.module_call_graph`` (issue 21).

torch.export records each grad-mode change (``torch._C._set_grad_enabled``) and turns
the block into a ``wrap_with_set_grad_enabled`` region; safetrace records the changes
too, so gradients through ``ep.module()`` are eager's (they used to flow through the
block), the caller's own ``no_grad`` holds after the block, and ``to_torch()`` gives
torch's region.  ``module_call_graph`` lists what torch.export's does."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import safetrace as st

from tests.export.dropin_check import check_program


class NoGradBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            y = self.a(x)
        return self.b(y) + self.a(x).sin()


class NestedModes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            y = self.a(x)
            with torch.enable_grad():
                z = self.a(y)
            y = y * 2
        return self.a(y) + z


class Decorated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)

    @torch.no_grad()
    def scale(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x).sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) * self.scale(x)


def _grads(module: nn.Module, x: torch.Tensor) -> dict:
    module.zero_grad(set_to_none=False)
    for p in module.parameters():
        p.grad = torch.zeros_like(p)
    module(x).sum().backward()
    return {n: p.grad.clone() for n, p in module.named_parameters()}


def _same_grads(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for k in want:
        torch.testing.assert_close(got[k], want[k], msg=k)


CASES = {"no-grad-block": NoGradBlock, "nested-modes": NestedModes, "decorated": Decorated}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_through_the_program_are_eagers(name: str, tmp_path) -> None:
    torch.manual_seed(0)
    model = CASES[name]()
    x = torch.randn(4, 3)
    spec = {"x": {0: torch.export.Dim("b", max=64)}}
    ep = st.export(model, (x,), dynamic_shapes=spec)
    ref = torch.export.export(model, (x,), dynamic_shapes=spec)
    inputs = [(torch.randn(n, 3),) for n in (4, 1, 0, 9)]
    check_program(ep, model, inputs, [(torch.randn(65, 3),), (torch.randn(4, 2),)], ref=ref)
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st")
    for n in (4, 1, 9):
        x = torch.randn(n, 3)
        want = _grads(model, x)
        _same_grads(_grads(ref.module(), x), want)  # torch.export agrees with eager
        _same_grads(_grads(ep.module(), x), want)
        _same_grads(_grads(loaded.module(), x), want)
        _same_grads(_grads(ep.to_torch().module(), x), want)
        assert torch.is_grad_enabled()  # the program leaves the caller's mode as it was
        with torch.no_grad():
            assert not ep.module()(x).requires_grad and not torch.is_grad_enabled()


def test_to_torch_gives_torchs_grad_region() -> None:
    x = torch.randn(4, 3)
    targets = [n.target for n in st.export(NoGradBlock(), (x,)).to_torch().graph.nodes]
    ours = st.export(NoGradBlock(), (x,)).graph
    assert torch.ops.higher_order.wrap_with_set_grad_enabled in targets
    assert [n.target for n in ours.nodes if n.op == "call_function"][:2] == [
        torch.is_grad_enabled, torch._C._set_grad_enabled]


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner, self.head = Inner(), nn.Linear(3, 2)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.head(self.inner(x)) * scale


@pytest.mark.parametrize("preserve", [(), ("inner",)])
def test_module_call_graph_lists_what_torchs_does(preserve: tuple) -> None:
    args, model = (torch.randn(4, 3), torch.randn(2)), Outer()
    ep = st.export(model, args, preserve_module_call_signature=preserve)
    ref = torch.export.export(model, args, preserve_module_call_signature=preserve)
    ours, theirs = ep.module_call_graph, ref.module_call_graph
    assert [e.fqn for e in ours] == [e.fqn for e in theirs]
    root, troot = ours[0].signature, theirs[0].signature
    assert (root.in_spec, root.out_spec, root.forward_arg_names) == (
        troot.in_spec, troot.out_spec, troot.forward_arg_names)
    for e, t in zip(ours, theirs):
        assert (e.signature is None) == (t.signature is None), e.fqn
    check_program(ep, model, [args], [(torch.randn(5, 3), torch.randn(2))], ref=ref)
    unflat = torch.export.unflatten(ep.to_torch())
    torch.testing.assert_close(unflat(*args), ep.module()(*args))


class LeavesGradOff(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.set_grad_enabled(False)  # eager leaves the mode off; the program does not
        return x * 2


def test_a_mode_left_set_is_the_callers_again_after_the_program() -> None:
    x = torch.randn(3, requires_grad=True)
    ep = st.export(LeavesGradOff(), (x.detach(),))
    assert torch.is_grad_enabled()
    sets = [n for n in ep.graph.nodes if n.target is torch._C._set_grad_enabled]
    assert len(sets) == 2  # the change, and the restore at the end (as torch's region)
    out = ep.module()(x)
    assert torch.is_grad_enabled() and not out.requires_grad
    torch.testing.assert_close(out, x.detach() * 2)
    ep.graph.erase_node(sets[1])  # a graph without the restore (a file need not have it)
    ep.graph.lint()
    module = ep.module()
    module(x)
    assert torch.is_grad_enabled()


class SizesUnderNoGrad(nn.Module):
    """torch's test_hoo_inline_users_issue: the no_grad block computes on sizes only."""

    def forward(self, x):
        n = x.shape[0] + 2
        with torch.no_grad():
            y = n * 4
        return n + 2, y


def test_a_grad_region_of_sizes_only_saves_and_loads_with_torch(tmp_path) -> None:
    """The region has no op left (its work is size arithmetic, outside it): to_torch()
    writes no empty wrap_with_set_grad_enabled call, which torch.export.load refused."""
    model, x = SizesUnderNoGrad(), torch.randn(6)
    tep = st.export(model, (x,), dynamic_shapes={"x": (st.Dim("n"),)}).to_torch()
    assert not tep.graph.find_nodes(op="call_function",
                                    target=torch.ops.higher_order.wrap_with_set_grad_enabled)
    torch.export.save(tep, tmp_path / "p.pt2")
    loaded = torch.export.load(tmp_path / "p.pt2")
    for n in (0, 1, 5):
        assert loaded.module()(torch.randn(n)) == model(torch.randn(n))
    with pytest.raises(Exception):
        loaded.module()(torch.randn(2, 2))
