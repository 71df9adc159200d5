"""Values explained on the "float64-creep" page, read from the example's own namespace."""

from __future__ import annotations

import numpy as np
import torch

from .conftest import run_example


def test_float64_creep(device):
    run = run_example("float64-creep", device)
    assert run["features"].dtype == np.float64
    assert all(isinstance(t, float) for t in run["targets"])
    # the first layer refuses the float64 batch; the message names both dtypes on the CPU
    if device == "cpu":
        assert "mat1 and mat2 must have the same dtype, but got Double and Float" in run.stdout
    else:
        assert "mat1 and mat2" in run.stdout and "same dtype" in run.stdout
    # after the fix: float32 batches, targets and loss
    assert run["x"].dtype == run["y"].dtype == run["loss"].dtype == torch.float32
    assert run["model"].weight.grad.dtype == torch.float32
    # default collation: Python floats to float64, whatever the default dtype; arrays keep theirs
    assert "default_collate of Python floats: torch.float64" in run.stdout
    assert "default_collate of float32 arrays: torch.float32" in run.stdout
    assert "| loss: torch.float64" in run.stdout  # the silent float64 loss of the symptom
    # most losses promote a float64 target; these three refuse it, and all run with float32
    assert set(run["refused"]) == {
        "huber_loss",
        "binary_cross_entropy",
        "cross_entropy, class weights",
    }
    assert run["with_float64"]["mse_loss"] == "runs, loss torch.float64"
    assert set(run["with_float32"].values()) == {"runs, loss torch.float32"}
    # from_numpy shares the array's memory; torch.tensor and a cast copy it
    table, shared = run["table"], run["shared"]
    assert shared.data_ptr() == table.__array_interface__["data"][0]
    assert run["shared"][0, 0].item() == 100.0
    assert run["as_float32"].dtype == torch.float32 and run["as_float32"][0, 0].item() != 100.0
    assert not torch.allclose(run["copied"], shared)
