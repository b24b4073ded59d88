"""AOTInductor artifacts keep the input checks (issue 20, item 3): on the zoo's deploy set,
the package ``st.to_aoti(ep)`` compiles refuses every input that ``ep.module()`` refuses --
at and around the contract's edges, and malformed ones (another dtype, rank, static size,
a shared size given differently) -- with the same message, and matches it on every input
both accept, transposed ones included (the package copies them to its layout).  (A package
compiled from ``ep.to_torch()`` directly checks nothing unless the serving process sets
``AOTI_RUNTIME_CHECK_INPUTS=1``: it runs a wrong static size, dtype or shared size, reading
out of bounds, and reads a transposed input as if it were contiguous.)  A package that
specializes a dynamic dim (inductor unrolls LSTM/GRU over the sequence) is refused by
``st.to_aoti``'s verification.

Each compile is about a minute of g++ on two cores: the whole module is ``slow``
(``make test-full`` or ``pytest -m slow tests/interop/test_aoti_checks.py``).
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import safetrace as st
from benchmarks.zoo import by_name
from tests.interop.harness import edge_inputs, malformed_inputs, outcome

pytestmark = pytest.mark.slow

DEPLOY_SET = ("mlp", "resnet", "lstm_tagger", "tiny_gpt", "data_dependent",
              "transformer_encoder")
# models whose package inductor specializes (st.to_aoti refuses them: "compiled a
# different program"; test_aoti_hardening.py covers that refusal). lstm_tagger was one
# (aten.lstm unrolled at the example's length) until safetrace's lstm program compiled to a
# package that runs every length (found 2026-12-06: the refusal no longer came)
SPECIALIZED_BY_INDUCTOR: set[str] = set()


@pytest.mark.parametrize("name", DEPLOY_SET)
def test_aoti_package_refuses_what_the_program_refuses(name: str, tmp_path) -> None:
    case = by_name(name).factory()
    with torch.no_grad():
        ep = st.export(case.model, case.args, case.kwargs, dynamic_shapes=case.dynamic_shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in SPECIALIZED_BY_INDUCTOR:
            with pytest.raises(st.ConversionError, match="compiled a different program"):
                st.to_aoti(ep, tmp_path / "m.pt2")
            return
        pkg = st.to_aoti(ep, tmp_path / "m.pt2")
    runner = torch._inductor.aoti_load_package(pkg)
    ours = copy.deepcopy(ep.module())
    inputs = [(case.args, case.kwargs), *case.others, *edge_inputs(ep),
              *[(a, k) for _, a, k in malformed_inputs(ep, case.args, case.kwargs)]]
    refused = 0
    problems = []
    for args, kwargs in inputs:
        shapes = [tuple(t.shape) for t in torch.utils._pytree.tree_leaves((args, kwargs))
                  if isinstance(t, torch.Tensor)]
        with torch.no_grad():
            a, out_a = outcome(ours, args, kwargs)
            b, out_b = outcome(runner, args, kwargs)
        if a == "rejected":
            refused += 1
            if b != "rejected":
                problems.append(f"{shapes}: ep.module() refuses ({out_a}), the AOTI package "
                                f"accepts")
            elif isinstance(out_a, st.InputMismatchError) and str(out_b) != str(out_a):
                problems.append(f"{shapes}: the package says {out_b!r}, ep.module() "
                                f"{out_a!r}")
        elif b == "rejected":
            problems.append(f"{shapes}: the AOTI package refuses an accepted input ({out_b})")
        else:
            torch.testing.assert_close(out_b, out_a, rtol=1e-4, atol=1e-4)
    assert not problems, "\n".join(problems)
    if ep.contract.symbols and not refused:  # pragma: no cover - the edges must reach out
        pytest.fail("no out-of-contract input was tried")


class _WritesInput(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


def test_aoti_package_refuses_to_copy_an_input_the_program_writes(tmp_path):
    """A transposed input is copied to the package's layout, except one the program writes
    into: the copy would take the write, so the package says so instead."""
    ep = st.export(_WritesInput(), (torch.randn(3, 4),),
                   dynamic_shapes={"x": {0: st.Dim("b", min=1, max=64)}})
    runner = torch._inductor.aoti_load_package(st.to_aoti(ep, tmp_path / "w.pt2"))
    x = torch.randn(5, 4)
    want_x = x.clone()
    want = _WritesInput()(want_x)
    torch.testing.assert_close(runner(x), want)
    torch.testing.assert_close(x, want_x)  # the write reached the caller's tensor
    moved = torch.randn(4, 5).t()
    assert ep.module()(moved.clone()) is not None  # the program accepts it
    with pytest.raises(RuntimeError, match="writes into this input"):
        runner(moved)
