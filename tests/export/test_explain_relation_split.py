"""st.explain of a program st.export splits on a relation between named Dims that no range
expresses: ``tuple(x.shape) == tuple(y.shape)`` of other ranks compares the first sizes
(Python's tuple compares items before lengths: `s0 != s1`), which st.export traces both ways
(relation_splits.py) and runs as eager does.  explain listed `s0 != s1` as a problem (a
relation the spec declares independent) with a fix, and the guard as relied on: it now
reports the program st.export returns (its relation split, the guard marked [split])."""

import pytest
import torch

import safetrace as st


class SameShape(torch.nn.Module):
    def forward(self, x, y):
        if tuple(x.shape) == tuple(y.shape):
            return x.sum() + y.sum() * 2
        return x.sum() - y.sum()


MODEL = SameShape()
ARGS = (torch.randn(3), torch.randn(4, 2, 2, 2))
SPEC = ({0: st.Dim("a")}, {0: st.Dim("b")})
AUTO = ({0: st.Dim.AUTO}, {0: st.Dim.AUTO})  # (kept as a check `s0 != s1`: (4, 4) refused,
# now split as named Dims, auto_small.auto_relations)


@pytest.mark.parametrize("spec,split", [(SPEC, "a != b"), (AUTO, "x_shape_0 != y_shape_0")])
def test_explain_reports_the_split_st_export_makes(spec, split):
    report = st.explain(MODEL, ARGS, dynamic_shapes=spec)
    text = str(report)
    assert report.ok and not report.problems, text
    assert any(f"relation split on `{split}`" in line for line in report.splits), text
    assert "s0 != s1 [split]" in text
    assert "Fix:" not in text and "Dim.DYNAMIC" not in text


@pytest.mark.parametrize("spec", [SPEC, AUTO])
@pytest.mark.parametrize("a,b", [(3, 4), (4, 4), (1, 1), (0, 0), (1, 0), (0, 2), (2, 5)])
def test_the_program_matches_eager_on_both_sides(spec, a, b):
    ep = st.export(MODEL, ARGS, dynamic_shapes=spec)
    args = (torch.randn(a), torch.randn(b, 2, 2, 2))
    torch.testing.assert_close(ep.module()(*args), MODEL(*args))


@pytest.mark.parametrize("args", [(torch.randn(3, 1), torch.randn(4, 2, 2, 2)),
                                  (torch.randn(3), torch.randn(4, 2, 2, 3))])
def test_outside_the_space_is_refused_before_running(args):
    ep = st.export(MODEL, ARGS, dynamic_shapes=SPEC)
    with pytest.raises(st.InputMismatchError):
        ep.module()(*args)
