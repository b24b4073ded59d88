"""Issue 21's table (a drop-in torch.export): one row per behaviour of the issue's bullets,
each run by st.export and torch.export.export in the same test (the rows and the check
they share are in tests/export/dropin_table/)."""

from __future__ import annotations

import pytest

from tests.export.dropin_table import api_rows, attr_rows, ops_rows, spec_rows, to_torch_rows
from tests.export.dropin_table.runner import Row, run_row

ROWS: list[Row] = [*ops_rows.ROWS, *spec_rows.ROWS, *to_torch_rows.ROWS, *api_rows.ROWS,
                   *attr_rows.ROWS]


def test_row_ids_are_unique() -> None:
    ids = [r.id for r in ROWS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=r.marks) for r in ROWS])
def test_row(row: Row, tmp_path) -> None:
    run_row(row, tmp_path)
