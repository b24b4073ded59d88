"""AOTInductor artifacts keep the input checks (issue 20, item 3): on the zoo's deploy set,
the package ``st.to_aoti(ep)`` compiles refuses every input at and around the contract's
edges that ``ep.module()`` refuses, and matches it on every input both accept.  (A package
compiled from ``ep.to_torch()`` directly loses the checks inductor assumes away: a declared
``min=1`` accepts a batch of 0.)

What no AOTInductor package checks (torch's input checks are off unless the serving process
sets ``AOTI_RUNTIME_CHECK_INPUTS=1``, and inductor compiles static dims as constants and
reads a shared size from the first input that carries it): a static dim or a dim declared
equal to another's, given another size (``WrongSize``).  Those inputs are left out here and
the limitation is stated in docs/deploying.md.  A package that specializes a dynamic dim
(inductor unrolls LSTM/GRU over the sequence) is refused by ``st.to_aoti``'s verification.

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
from safetrace.errors.mismatch import WrongSize
from tests.interop.harness import edge_inputs, outcome

pytestmark = pytest.mark.slow

DEPLOY_SET = ("mlp", "resnet", "lstm_tagger", "tiny_gpt", "data_dependent",
              "transformer_encoder")
# inductor decomposes aten.lstm into a loop over the sequence and specializes its length
SPECIALIZED_BY_INDUCTOR = {"lstm_tagger"}


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
    inputs = [(case.args, case.kwargs), *case.others, *edge_inputs(ep)]
    refused = 0
    problems = []
    for args, kwargs in inputs:
        shapes = [tuple(t.shape) for t in torch.utils._pytree.tree_leaves((args, kwargs))
                  if isinstance(t, torch.Tensor)]
        with torch.no_grad():
            a, out_a = outcome(ours, args, kwargs)
            b, out_b = outcome(runner, args, kwargs)
        if a == "rejected" and isinstance(out_a, WrongSize):
            continue  # a static or shared size: no AOTInductor package reads it (doc above)
        if a == "rejected":
            refused += 1
            if b != "rejected":
                problems.append(f"{shapes}: ep.module() refuses ({out_a}), the AOTI package "
                                f"accepts")
        elif b == "rejected":
            problems.append(f"{shapes}: the AOTI package refuses an accepted input ({out_b})")
        else:
            torch.testing.assert_close(out_b, out_a, rtol=1e-4, atol=1e-4)
    assert not problems, "\n".join(problems)
    if ep.contract.symbols and not refused:  # pragma: no cover - the edges must reach out
        pytest.fail("no out-of-contract input was tried")
