"""What st.load accepts as a source, and how it refuses anything else."""

from __future__ import annotations

import pytest

import safetrace as st


@pytest.mark.parametrize("source", [12345, None, 3.5, ["model.st"]])
def test_load_of_a_non_path_is_a_load_error(source):
    with pytest.raises(st.LoadError) as info:
        st.load(source)
    msg = str(info.value)
    assert type(source).__name__ in msg
    assert "st.load(" in msg and "Fix:" in msg
