"""What the "loss-weights-reduction" page prints or states but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_loss_weights_reduction(device):
    run = run_example("loss-weights-reduction", device)
    # the prose's sum of the targets' weights, 4·1 + 4 + 8 = 16 (printed, not asserted)
    assert run["sample_weights"].sum().item() == 16
    # with an ignored target, .mean() of reduction="none" differs from reduction="mean" (printed)
    assert run["per_sample_ignored"].mean() > run["loss_ignored"]
