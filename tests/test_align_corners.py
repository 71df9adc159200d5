"""What the "align-corners" page does not assert itself: the printed values, and the warning's
text its prose quotes."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_align_corners(device):
    run = run_example("align-corners", device)
    up = run["up"]
    # the printed values of align_corners=False
    assert [round(v, 3) for v in up[False].tolist()] == [
        0.0,
        0.25,
        0.75,
        1.75,
        3.25,
        5.25,
        7.75,
        9.0,
    ]
    # the two position formulas: a quarter pixel apart at the ends, in opposite directions
    positions = run["positions"]
    assert positions[False][0] == -0.25
    # 3 exactly on the CPU; CUDA divides by 7 as a product with 1 / 7 (3.0000002)
    torch.testing.assert_close(positions[True][-1].cpu(), torch.tensor(3.0))
    # the prose quotes "since 1.3.0" from the warning
    assert "has changed to align_corners=False since 1.3.0" in run.stdout
