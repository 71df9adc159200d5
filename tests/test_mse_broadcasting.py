"""What the "mse-broadcasting" page prints but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_mse_broadcasting(device):
    run = run_example("mse-broadcasting", device)
    # the warning is shown for MSELoss, for L1Loss and for a bare squeeze() on a batch of one
    # (the page asserts each is issued, not how many are shown)
    assert run.stdout.count("UserWarning: Using a target size") == 3
