"""What the "modulelist-vs-list" page does not assert itself: the expected parameter count."""

from __future__ import annotations

from .conftest import run_example


def test_modulelist_vs_list(device):
    run = run_example("modulelist-vs-list", device)
    # three Linear(4, 4) blocks and a Linear(4, 1) head: the count the page prints
    assert run["expected"] == 65
