"""What the "token-mean-accumulation" page states but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_token_mean_accumulation(device):
    run = run_example("token-mean-accumulation", device)
    # .mean() over every position divides by 40 positions, not by the 24 real tokens (the page
    # asserts the ratio with numel(), not the 40 its prose names)
    assert run["per_position"].numel() == 40
