"""What the "batchnorm-running-stats" page does not assert itself: its figure and its loop."""

from __future__ import annotations

from .conftest import run_example


def test_batchnorm_running_stats(device):
    run = run_example("batchnorm-running-stats", device)
    # the train-mode validation curve has one point per validation batch
    assert len(run["history_val_train_mode"]) == len(run["val_batches"])
    assert run["fig"].axes[0].get_ylabel() == "running_mean"
