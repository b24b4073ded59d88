"""Every conversion in these tests runs torch's meta kernels too (``verify=True``), so the
suite cross-checks our shape rules against torch's on every converted node.  The fast
path (fake values built from our shapes, the default for users) is checked against it in
test_fake_values.py, which passes ``verify=`` explicitly."""

import pytest


@pytest.fixture(autouse=True)
def _verify_conversions(monkeypatch):
    monkeypatch.setenv("SAFETRACE_VERIFY_TO_TORCH", "1")
