"""Each split of an export is reported the same way by ``st.explain`` and ``print(ep)``
(exporter/split_report.py): its kind, the condition it splits on, the source line that
asked it, and which part of the declared space runs which graph (issue 22 item 1)."""

import torch

import safetrace as st
from safetrace import Dim


class OneIsSpecial(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] == 1:  # size split
            return x * 3
        return x + x


class EmptyIsSpecial(torch.nn.Module):
    def forward(self, x):
        if x.numel() == 0:  # small-size split
            return x.new_ones(x.shape[1]) * 7
        return x.mean(0)


class OneKept(torch.nn.Module):
    def forward(self, y):
        v = y[y > 0]
        if v.shape[0] == 1:  # data split
            return v * 3
        return v + 1


class WideOrTall(torch.nn.Module):
    def forward(self, x):
        if x.shape[2] >= 4 * x.shape[1]:  # relation split
            return x * 2
        return x[:1] + 1


def _both(model, example, spec):
    """The split lines as explain prints them and as print(ep) does."""
    ep = st.export(model, (example,), dynamic_shapes=(spec,))
    report = st.explain(model, (example,), dynamic_shapes=(spec,))
    assert report.ok
    assert report.splits
    for line in report.splits:  # the same lines, as comments of the printed graph
        assert f"# {line}" in str(ep), line
    assert "Splits (" in str(report)
    return "\n".join(report.splits), str(ep)


def test_a_size_split_names_its_range_line_and_sides():
    text, printed = _both(OneIsSpecial(), torch.randn(2, 5), {1: Dim("seq", min=1, max=64)})
    head = "size split on `2 <= seq <= 64` (from `if x.shape[1] == 1:  # size split` at "
    assert head in text and head in printed and "test_split_report.py:13)" in text
    assert "  seq == 1: its own graph" in text and "  2 <= seq <= 64: its own graph" in text


def test_a_split_at_size_zero_names_its_condition_and_line():
    text, printed = _both(EmptyIsSpecial(), torch.randn(3, 4),
                          {0: Dim("a", max=8), 1: Dim("b", max=8)})
    head = "size split on `a*b != 0` (from `if x.numel() == 0:  # small-size split` at " \
           "test_split_report.py:20)"
    assert head in text and head in printed and "  a == 0: its own graph" in text
    # (b == 0 where a >= 1: a split of that side's program, indented under its line)
    assert "  1 <= a <= 8: its own graph (a torch.cond branch)\n    relation split on " \
        "`a*b != 0`" in text


def test_a_data_split_names_its_test_line_and_branches():
    text, printed = _both(OneKept(), torch.randn(6), {0: Dim("n", max=64)})
    head = "data split on `u0 != 1` (from `if v.shape[0] == 1:  # data split` at " \
           "test_split_report.py:28)"
    assert head in text and head in printed
    assert "where `u0 != 1` holds: the graph traced for it (the torch.cond's true branch)" \
        in text


def test_a_relation_split_names_its_relation_line_and_branches():
    text, printed = _both(WideOrTall(), torch.randn(2, 1, 5),
                          {1: Dim("a", max=1), 2: Dim("b", min=1, max=20)})
    head = "relation split on `4*a <= b` (from `if x.shape[2] >= 4 * x.shape[1]:  # " \
           "relation split` at test_split_report.py:35)"
    assert head in text and head in printed and "where it fails: the graph traced for that" \
        in printed


def test_a_program_without_splits_reports_none():
    report = st.explain(lambda x: x + 1, (torch.randn(3),), dynamic_shapes=({0: Dim("n")},))
    assert report.ok and report.splits == [] and "Splits (" not in str(report)


def test_a_loaded_program_prints_the_splits_it_was_saved_with():
    """The lines are saved with the program (format 2.2, ``splits``) and printed after
    ``st.load``: before, a loaded program printed none."""
    import io

    ep = st.export(EmptyIsSpecial(), (torch.randn(3, 4),),
                   dynamic_shapes=({0: Dim("a", max=8), 1: Dim("b", max=8)},))
    buf = io.BytesIO()
    st.save(ep, buf)
    loaded = st.load(io.BytesIO(buf.getvalue()))
    lines = [line for line in str(ep).splitlines() if "split on" in line or "its own" in line]
    assert lines and "size split on `a*b != 0`" in lines[0]
    assert [line for line in str(loaded).splitlines() if line in lines] == lines
    again = io.BytesIO()
    st.save(loaded, again)  # (and saved again as they were)
    assert str(st.load(io.BytesIO(again.getvalue()))) == str(loaded)
