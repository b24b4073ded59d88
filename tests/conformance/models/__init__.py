"""Models of the conformance tables, grouped by where they came from (one module per ~600 lines)."""
