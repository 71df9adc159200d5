"""What the "split-shared-transform" page relies on but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_both_fixes_use_the_same_split(device):
    run = run_example("split-shared-transform", device)
    # the page asserts it for the first fix; the second one splits with the same seed as well
    assert list(run["plain_train"].indices) == run["split_indices"][0]
