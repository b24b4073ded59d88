"""Issue 21's table: one row per behaviour of the issue's bullets (a drop-in torch.export).

Each row is a small model, its inputs and ``dynamic_shapes`` (or, for API behaviours, a
check function), run by ``st.export`` and by ``torch.export.export`` in the same test
(tests/export/test_dropin_table.py).  ``runner.py`` holds the row types and the one check
they share; the case modules hold the rows, grouped as the issue's bullets are."""
