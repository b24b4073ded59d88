"""A value whose size torch's engine folds at a Dim's 0 (``z[:1]``'s rows ``min(n, 1)``,
simplified on torch's positive symbols into 1) and the deploy tools that retrace it.

AOTInductor's package of ``torch.cat([z, z[:1]])`` (z's rows a Dim admitting 0) crashed
the process at n == 0 (SIGSEGV, rc 139; session 38): inductor sized ``z[:1]`` as 1 row and
read it from an empty input.  The conversion now finds such a size where it makes torch's
fake values (``positivity.expr_folds_at_zero``) and converts again with that symbol
non-positive (the converted program's values keep ``Min(1, n)``).  inductor's retrace still
sized it 1 (torch's slice kernel clamps a constant end by a guard at the example), so
``st.to_aoti`` and ``st.to_executorch`` write the slice's end as ``sym_min(n, 1)``
(``slice_ends.py``): the package and the ``.pte`` compute eager's at 0.  A folded size no
such rewrite covers gets a package check refusing n == 0 (``compiled_without_zero``).  The
compiles run in a subprocess (a crash fails the test instead of killing the run) and are
slow; the rewrite and the check are tested without a compile."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch

import safetrace as st
from safetrace.interop.aoti import harden_checks

warnings.filterwarnings("ignore", category=st.ConversionWarning)


class CatFirstRow(torch.nn.Module):
    def forward(self, z):
        return torch.cat([z, z[:1]])


def _export(hi=None):
    n = st.Dim("n", min=0) if hi is None else st.Dim("n", min=0, max=hi)
    return st.export(CatFirstRow(), (torch.randn(4, 3),), dynamic_shapes=({0: n},))


def test_converted_values_keep_min_of_the_size_at_zero():
    # (before: slice_1's fake value had 1 row, torch's Min(1, s) folded on a positive s)
    tep = _export().to_torch()
    sliced = next(n for n in tep.graph.nodes if n.target is torch.ops.aten.slice.Tensor)
    assert "Min(1, " in str(sliced.meta["val"].shape[0])
    for rows in (0, 1, 2, 7):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(tep.module()(x), CatFirstRow()(x))


def test_the_aoti_package_check_refuses_zero_and_keeps_the_rest():
    # the tensor check st.to_aoti adds before compiling, run by the converted module
    # (before: no check, and the package crashed the process at 0)
    ep = _export()
    tep = ep.to_torch()
    assert harden_checks(tep, ep.contract) == 1
    module = tep.module()
    for rows in (1, 2, 9):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(module(x), CatFirstRow()(x))
    with pytest.raises(RuntimeError, match=r"z.shape\[0\] is 0: the program takes it"):
        module(torch.randn(0, 3))
    # the program itself computes eager's at 0, and refuses what is outside its space
    assert ep.module()(torch.randn(0, 3)).shape == (0, 3)
    with pytest.raises(st.errors.StructuredError):
        ep.module()(torch.randn(4, 5))


def test_the_slice_end_rewritten_as_min_needs_no_zero_check_and_is_eager():
    from safetrace.interop.slice_ends import explicit_slice_ends

    ep = _export()
    tep = ep.to_torch()
    clamped = explicit_slice_ends(tep)
    assert len(clamped) == 1 and next(iter(clamped))[1] == 1
    assert any(n.target is torch.sym_min for n in tep.graph.nodes)
    assert harden_checks(tep, ep.contract, frozenset(clamped)) == 0
    module = tep.module()
    for rows in (0, 1, 2, 9):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(module(x), CatFirstRow()(x))
    with pytest.raises(Exception):
        module(torch.randn(4, 5))


def test_the_pte_of_a_first_row_is_eager_at_zero(tmp_path):
    # (before: the .pte planned 1 row for z[:1] and refused n == 0, which ep.module() runs)
    pytest.importorskip("executorch")
    from executorch.runtime import Runtime

    st.to_executorch(_export(hi=16), tmp_path / "m.pte")
    method = Runtime.get().load_program(tmp_path / "m.pte").load_method("forward")
    for rows in (0, 1, 2, 16):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(method.execute([x])[0], CatFirstRow()(x))
    for rows in (17,):
        with pytest.raises(Exception):
            method.execute([torch.randn(rows, 3)])


def test_a_max_the_values_keep_gets_no_zero_check():
    # `max(n, 1)` rows: converted with n non-positive, torch's values keep Max(1, n), which
    # the package computes (measured: deploy_sizes' new_rows_max matches at 0); a check
    # would refuse n == 0 for nothing (it did, before this was told apart)
    class NewRows(torch.nn.Module):
        def forward(self, z):
            return z.new_ones(max(z.shape[0], 1), 3) * z.sum()

    ep = st.export(NewRows(), (torch.randn(4, 3),),
                   dynamic_shapes=({0: st.Dim("n", max=16)},))
    tep = ep.to_torch()
    assert harden_checks(tep, ep.contract) == 0
    for rows in (0, 1, 5):
        x = torch.randn(rows, 3)
        torch.testing.assert_close(tep.module()(x), NewRows()(x))


def test_a_program_without_such_a_size_gets_no_zero_check():
    class Twice(torch.nn.Module):
        def forward(self, z):
            return torch.cat([z, z])

    ep = st.export(Twice(), (torch.randn(4, 3),),
                   dynamic_shapes=({0: st.Dim("n", min=0)},))
    tep = ep.to_torch()
    assert "safetrace_zero_sized" not in tep.graph_module.meta
    assert harden_checks(tep, ep.contract) == 0


_AOTI = """
import warnings, torch, safetrace as st
warnings.simplefilter("ignore")
from tests.interop.test_zero_sized_packages import CatFirstRow, _export
run = torch._inductor.aoti_load_package(st.to_aoti(_export()))
for rows in (5, 1, 2, 0):
    x = torch.randn(rows, 3)
    try:
        print(rows, "same" if torch.equal(run(x), CatFirstRow()(x)) else "WRONG", flush=True)
    except Exception as exc:
        print(rows, "refused", str(exc).splitlines()[0][:200], flush=True)
"""


@pytest.mark.slow
def test_aoti_package_of_a_first_row_is_eager_or_refuses_zero():
    # (before: rc -11, a segmentation fault at rows == 0; then a refusal there)
    done = subprocess.run([sys.executable, "-c", _AOTI], capture_output=True, text=True,
                          timeout=900, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert all(lines[r] == "same" for r in ("5", "1", "2", "0")), done.stdout
