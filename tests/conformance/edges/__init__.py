"""The edge cases (user mistakes, unusual programs, hostile files), one module per ~550 lines."""
