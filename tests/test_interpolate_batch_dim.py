"""What the "interpolate-batch-dim" page does not assert itself: its figure."""

from __future__ import annotations

from .conftest import run_example


def test_interpolate_batch_dim(device):
    run = run_example("interpolate-batch-dim", device)
    # the figure compares the three images
    assert [ax.get_title().split("\n")[0] for ax in run["axes"]] == [
        "original",
        "unbatched (wrong)",
        "unsqueeze(0) (right)",
    ]
