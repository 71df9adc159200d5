"""What the "expand-inplace-write" page does not assert itself: every row of the fixed batch."""

from __future__ import annotations

from .conftest import run_example


def test_expand_inplace_write(device):
    run = run_example("expand-inplace-write", device)
    # the fix: clone and repeat own their rows (the page asserts rows 0 and 1 only)
    assert run["cloned"].tolist() == [[1.0] * 4, [2.0, 3.0, 4.0, 5.0], [1.0] * 4]
