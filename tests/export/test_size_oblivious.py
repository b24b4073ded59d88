"""Size-oblivious decisions on data-dependent sizes (issue 15 item 6), checked against eager.

Every pattern is exported once (the example keeps 4 of 6 rows), then run on masks keeping
0..6 rows, so the data-dependent size takes the values the decision excluded (0 and 1)
too.  At each of them the program must either compute what eager computes, or raise a
RuntimeAssertionError naming the decision: only where eager raises as well, or at the sizes
the pattern lists as rejected (an untraced branch).  Never another result.
"""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st
from safetrace import Dim
from tests.helpers import assert_close

X = torch.arange(18.0).reshape(6, 3) - 7.0
EXAMPLE = torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)


def _mask(k: int) -> torch.Tensor:
    m = torch.zeros(6, dtype=torch.bool)
    m[torch.randperm(6)[:k]] = True
    return m


def _items(m):  # the mask's count as an .item() (an unbacked int)
    return m.sum().item()


# name -> (fn(x, mask, *extra), extra args, sizes rejected although eager computes them)
PATTERNS = {
    # slices with a data-dependent bound: answered exactly, nothing asserted
    "b[-k:]": (lambda b, m: b[-_items(m):], (), set()),
    "b[:-k]": (lambda b, m: b[:-_items(m)], (), set()),
    "roll(k)": (lambda b, m: b.roll(_items(m), 0), (), set()),
    "masked slices": (lambda b, m: (b[m][1:], b[m][:-1], b[m][-2:], b[m][::2]), (), set()),
    # preconditions: eager raises where they fail, the graph asserts them
    "t[u // 2]": (lambda b, m: b[m][b[m].shape[0] // 2], (), set()),
    "t[0]": (lambda b, m: b[m][0], (), set()),
    "t[-1]": (lambda b, m: b[m][-1], (), set()),
    "t.max()": (lambda b, m: b[m].max(), (), set()),
    "topk(2)": (lambda b, m: b[m][:, 0].topk(2).values, (), set()),
    "narrow": (lambda b, m: b[m].narrow(0, 1, 2), (), set()),
    "view(c, -1)": (lambda b, m: b[:4].reshape(12).view(_items(m), -1), (), {0}),
    # broadcasting and expand: "is 1 or equals" asserted, the result exact at both
    "cat + broadcast (GCN)": (lambda b, m, la, w: torch.cat([b[m], la]) * w.view(-1, 1),
                              (torch.ones(1, 3), torch.arange(5.0)), set()),
    "u + (1, 3)": (lambda b, m, y: b[m] + y, (torch.ones(1, 3),), set()),
    "u + (2, 3)": (lambda b, m, y: b[m] + y, (torch.ones(2, 3),), set()),
    "u * u'": (lambda b, m, y: b[m][:, None, :] * b[m][None, :, :], (torch.ones(1),), set()),
    "expand u -> 2": (lambda b, m, y: b[m][:, :1].expand(y.shape[0], 3), (torch.ones(2),),
                      set()),
    # the rank cannot depend on data: a kept dim is asserted != 1
    "squeeze(0)": (lambda b, m: b[m].squeeze(0), (), {1}),
    "squeeze()": (lambda b, m: b[m][:, :1].squeeze(), (), {1}),
    # an emptiness test in user code: both branches traced, a torch.cond on the test
    # (exporter/data_splits.py); the general branch asserted where the two return tensors
    # of another rank (no one torch.cond returns both)
    "if numel != 0": (lambda b, m: b[m] * 2 if b[m].numel() != 0 else b[:0], (), set()),
    "if len == 0": (lambda b, m: b[:0] if len(b[m]) == 0 else b[m].sum(0), (), {0}),
    # a size test whose sides trace the same graph (transformers' `is_causal = q_length > 1
    # and mask is None`): the other side is traced too, and the check dropped
    "same graph either way": (lambda b, m: b[m] * (2 if b[m].shape[0] > 1 and b is None
                                                   else 3), (), set()),
    # min/max of a data-dependent size stay symbolic (torchvision's _topk_min)
    "topk(min(3, u))": (lambda b, m: b[m][:, 0].topk(min(3, b[m].shape[0])).values, (), set()),
    "b[:max(u - 2, 0)]": (lambda b, m: b[: max(b[m].shape[0] - 2, 0)], (), set()),
    # results that hold at every size (no decision at all)
    "reductions": (lambda b, m: (b[m].softmax(0), b[m].sum(0), b[m].amax(1)), (), set()),
    "sort/gather": (lambda b, m: b[m][b[m][:, 0].argsort()], (), set()),
}


def _run(fn, args):
    try:
        return fn(*copy.deepcopy(args)), None
    except Exception as exc:  # noqa: BLE001 - compared below
        return None, exc


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_matches_eager_or_rejects_clearly(name):
    fn, extra, rejected = PATTERNS[name]
    torch.manual_seed(0)
    ep = st.export(fn, (X, EXAMPLE, *extra))
    run = ep.module()
    for k in range(7):
        for _ in range(2):  # two masks per count: different rows kept
            args = (X, _mask(k), *extra)
            expected, eager_error = _run(fn, args)
            got, error = _run(run, args)
            if eager_error is not None:
                assert error is not None, f"{name}: k={k} eager raises, the program did not"
                continue
            if k in rejected:
                assert isinstance(error, st.RuntimeAssertionError), f"{name}: k={k}: {error}"
                assert "size-oblivious" in str(error)
                continue
            assert error is None, f"{name}: k={k} rejected: {error}"
            assert_close(expected, got)


def test_precondition_rejects_with_the_op_and_line():
    ep = st.export(lambda b, m: b[m][0], (X, EXAMPLE))
    with pytest.raises(st.RuntimeAssertionError, match=r"u0 >= 1.*test_size_oblivious.py"):
        ep.module()(X, torch.zeros(6, dtype=torch.bool))


def test_broadcast_with_a_dynamic_input_size():
    # u (rows kept) against s (y's rows, dynamic): eager broadcasts a 1 and matches equal
    f = PATTERNS["u + (2, 3)"][0]
    ep = st.export(f, (X, EXAMPLE, torch.ones(4, 3)),
                   dynamic_shapes=(None, None, {0: Dim("n", min=2)}))
    for n, k in ((2, 2), (3, 1), (5, 5), (3, 3)):
        m = _mask(k)
        assert_close(f(X, m, torch.ones(n, 3)), ep.module()(X, m, torch.ones(n, 3)))
    with pytest.raises(st.RuntimeAssertionError, match="broadcasts"):
        ep.module()(X, _mask(2), torch.ones(3, 3))  # eager raises too


def test_threshold_is_not_settled():
    # `u > 3` has no size-oblivious answer: the usual error with the two checks
    def f(b, m):
        return b[m] * 2 if b[m].shape[0] > 3 else b[m]

    with pytest.raises(st.DataDependentError, match=r"st.check\(u0 >= 4\)"):
        st.export(f, (X, EXAMPLE))


def test_explain_lists_settled_questions():
    def f(b, m):
        t = b[m]
        if t.numel() == 0:
            return t
        return t.squeeze(0) + torch.ones(1, 3)

    report = st.explain(f, (X, EXAMPLE))
    assert report.ok
    kinds = {kind for _, kind, _, _, _ in report.settled}
    assert kinds == {"size test"} | {"size-oblivious"}
    assert all(asserted for *_, asserted in report.settled)
    text = str(report)
    assert "Settled size-obliviously" in text and "u0 != 0 [split]" in text
    # (as st.export does, both answers of `t.numel() == 0` are traced: a data split)
    assert "data split on `u0 != 0` (from `if t.numel() == 0:` at test_size_oblivious" in text
    assert "test_size_oblivious.py" in text


def test_size_test_with_the_same_graph_either_way_keeps_no_check():
    fn = PATTERNS["same graph either way"][0]
    ep = st.export(fn, (X, EXAMPLE))
    assert "# data split on `u0 >= 2` (from `" in str(ep) and "at test_size_oblivious.py:68)" \
        in str(ep) and "either answer traces the same graph: no torch.cond, run-time check " \
        "dropped" in str(ep)
    assert "assert_sym" not in str(ep.graph_module.code)
    for k in (0, 1, 2):
        m = _mask(k)
        assert_close(fn(X, m), ep.module()(X, m))
    # sides that differ: a torch.cond on the test, each side's graph a branch
    fn = PATTERNS["if numel != 0"][0]
    other = st.export(fn, (X, EXAMPLE))
    assert "either answer" not in str(other) and "the torch.cond's true branch" in str(other)
    for k in (0, 1, 3):
        m = _mask(k)
        assert_close(fn(X, m), other.module()(X, m))
    # sides returning tensors of another rank keep the check (and refuse the other side)
    ranked = st.export(PATTERNS["if len == 0"][0], (X, EXAMPLE))
    with pytest.raises(st.RuntimeAssertionError, match="size-oblivious"):
        ranked.module()(X, _mask(0))


def test_settled_program_saves_and_loads(tmp_path):
    ep = st.export(PATTERNS["if len == 0"][0], (X, EXAMPLE))
    st.save(ep, tmp_path / "p.st")
    loaded = st.load(tmp_path / "p.st").module()
    m = _mask(3)
    assert_close(X[m].sum(0), loaded(X, m))
    with pytest.raises(st.RuntimeAssertionError, match="size-oblivious"):
        loaded(X, _mask(0))
