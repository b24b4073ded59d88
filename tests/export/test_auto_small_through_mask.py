"""Length 1 of Dim.AUTO ids whose length the program reads through the mask's sizes
(exporter/auto_small.py ``_through_equal``), and of a mask the length-1 side leaves unused
(exporter/dynamic.py ``_related_symbol``): transformers' gpt2, ctrl (``input_ids.view(-1,
t)``, ``attention_mask.view(batch, -1)``, then sdpa's ``q_length > 1``) and lfm2, lfm2_moe
(``if inputs_embeds.shape[1] == 1:`` before the mask is read).

- ViewedMask: the ids' length became ``(s2*s3)//s0`` of the mask's sizes, and the check
  ``(s2*s3)//s0 >= 2`` was on three symbols: no one Dim was split and length 1 was refused.
  Now the ids' length and the mask's length (the size of the expression with the example's
  length) are one Dim, split at 1.  Narrower than the first program: a mask of other sizes
  with as many elements, which ``view(b, -1)`` reshapes, is refused.
- MaskUnusedAtOne: the side at length 1 read the mask's batch as a size of its own, the
  other side as the ids' batch: two input contracts, no one program.  Now the side takes it
  as the first trace did (equal).  Narrower: at length 1 a mask of another batch, which
  eager never reads, is refused.
- Named Dims from 0 (splits.py ``_eager_raises``): the side at length 0, where
  ``view(-1, 0)`` of no elements raises in eager, is refused by the program instead of the
  whole split failing (the program refused length 1 too)."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO
SPEC = ({0: AUTO, 1: AUTO}, {0: AUTO, 1: AUTO})


class ViewedMask(torch.nn.Module):
    def forward(self, x, mask):
        b, t = x.shape
        x = x.view(-1, t)
        m = mask.view(b, -1)
        y = x + m
        if x.shape[1] > 1:
            return y * 2
        return y - 1


class MaskUnusedAtOne(torch.nn.Module):
    def forward(self, x, mask):
        if x.shape[1] == 1:
            return x * 2
        return x * mask + mask.shape[0]


def _args(b, t, mb=None, mt=None):
    return torch.randn(b, t), torch.randn(b if mb is None else mb, t if mt is None else mt)


def _eager_raises(model, args):
    try:
        model(*args)
    except RuntimeError:
        return True
    return False


SIZES = [(1, 1), (2, 1), (3, 1), (1, 2), (2, 12), (3, 5), (5, 40), (4, 2)]


@pytest.fixture(scope="module", params=[ViewedMask, MaskUnusedAtOne])
def exported(request):
    model = request.param()
    return model, st.export(model, _args(2, 12), dynamic_shapes=SPEC)


@pytest.mark.parametrize("b,t", SIZES)
def test_length_one_and_others_match_eager(exported, b, t):
    model, ep = exported
    args = _args(b, t)
    torch.testing.assert_close(ep.module()(*args), model(*args))


@pytest.mark.parametrize("b,t", [(0, 1), (1, 0), (0, 0), (0, 5), (3, 0)])
def test_sizes_zero_match_eager_or_are_refused_where_eager_raises(exported, b, t):
    model, ep = exported
    args = _args(b, t)
    if _eager_raises(model, args):
        with pytest.raises(st.InputMismatchError):
            ep.module()(*args)
    else:
        torch.testing.assert_close(ep.module()(*args), model(*args))


def test_viewed_mask_splits_at_length_one_with_no_check_left():
    ep = st.export(ViewedMask(), _args(2, 12), dynamic_shapes=SPEC)
    report = ep.dims_report
    assert report["mask.shape[1]"] == report["x.shape[1]"]  # (one Dim: equal sizes)
    assert not any(">= 2" in str(c.cond) for c in ep.contract.conditions)
    assert "split" in "\n".join(st.explain(ViewedMask(), _args(2, 12),
                                           dynamic_shapes=SPEC).splits)


@pytest.mark.parametrize("model,args", [
    # (eager reshapes a (3, 4) mask for (2, 6) ids: refused, not wrong: the trade-off)
    (ViewedMask, _args(2, 6, 3, 4)),
    # (at length 1 eager never reads the mask: another batch refused, not wrong)
    (MaskUnusedAtOne, _args(2, 1, 3, 1)),
    (MaskUnusedAtOne, _args(2, 5, 2, 4)),
    (ViewedMask, (torch.randn(2, 12, 1), torch.randn(2, 12))),  # (another rank)
])
def test_outside_the_space_is_refused_before_running(model, args):
    ep = st.export(model(), _args(2, 12), dynamic_shapes=SPEC)
    with pytest.raises(st.InputMismatchError):
        ep.module()(*args)


def test_named_dims_from_zero_cover_length_one_and_refuse_zero_naming_eager():
    B, L = st.Dim("B", min=0), st.Dim("L", min=0)
    model = ViewedMask()
    ep = st.export(model, _args(2, 12), dynamic_shapes=({0: B, 1: L}, {0: B, 1: L}))
    for b, t in [(1, 1), (2, 1), (3, 5), (2, 12)]:
        args = _args(b, t)
        torch.testing.assert_close(ep.module()(*args), model(*args))
    assert _eager_raises(model, _args(2, 0))
    with pytest.raises(st.InputMismatchError, match="eager raises at L == 0"):
        ep.module()(*_args(2, 0))
