"""Values explained on the "batchnorm-running-stats" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_batchnorm_running_stats(device):
    run = run_example("batchnorm-running-stats", device)
    # train-mode validation drags the running mean from the training to the validation means
    torch.testing.assert_close(run["mean_after_training"], run["train_means"], atol=0.2, rtol=0)
    torch.testing.assert_close(run["mean_after_validation"], run["val_means"], atol=0.3, rtol=0)
    assert not torch.allclose(run["prediction_before"], run["prediction_after"])
    # eval-mode validation leaves it where it was, at every batch
    assert all(torch.equal(m, run["mean_after_training"]) for m in run["history_val_eval_mode"])
    assert len(run["history_val_train_mode"]) == len(run["val_batches"])
    assert run["fig"].axes[0].get_ylabel() == "running_mean"
    # buffers, updated by the forward pass with momentum 0.1
    assert run["buffer_names"] == ["running_mean", "running_var", "num_batches_tracked"]
    assert run["parameter_names"] == ["weight", "bias"]
    # neither no_grad nor requires_grad=False stops the update; eval() does
    assert run["moves_forward_only"] and run["moves_under_no_grad"] and run["moves_when_frozen"]
    assert not run["moves_in_eval"] and run["unchanged"]
    # momentum=None is the cumulative average; update_bn recomputes it and restores the momentum
    torch.testing.assert_close(run["cumulative"].running_mean, run["mean_of_batch_means"])
    torch.testing.assert_close(run["spoiled"][0].running_mean, run["mean_of_batch_means"])
    assert run["spoiled"][0].momentum == 0.1 and not run["spoiled"].training
