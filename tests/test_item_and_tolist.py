"""Values explained on the "item-and-tolist" page, read from the example's own namespace."""

from __future__ import annotations

from itertools import pairwise

import torch

from .conftest import cuda_parts_reported, run_example


def test_item_and_tolist(device):
    run = run_example("item-and-tolist", device)
    assert "a Tensor with 4 elements cannot be converted to Scalar" in run.stdout
    assert run["python_types"]["torch.float32"] == "float"
    assert run["python_types"]["torch.int64"] == "int"
    assert run["python_types"]["torch.bool"] == "bool"
    assert run["tenth32"] != 0.1 and run["tenth64"] == 0.1
    assert run["zero_dim"].tolist() == 7
    # the fix: a float mean and a list of per-sample losses
    assert isinstance(run["mean_loss"], float)
    assert run["losses"] == run["per_sample"].tolist()
    # total += loss: a tensor whose graph grows by the same number of nodes every step
    nodes = run["nodes_tensor"]
    steps = len(run["batches"])
    assert len(nodes) == steps and run["total_tensor"].requires_grad
    steps_growth = [b - a for a, b in pairwise(nodes)]
    assert len(set(steps_growth[1:])) == 1 and steps_growth[-1] > 0
    # backward frees saved activations; an evaluation loop keeps all of them; .item() keeps none
    assert run["alive_train"] == 0
    assert run["alive_eval"] == steps
    assert run["alive_float"] == 0 and isinstance(run["total_float"], float)
    assert run["nodes_float"] == [0] * steps
    torch.testing.assert_close(run["total_eval"].item(), run["total_float"])
    # one value read back from the device per .item(): every step, or once per epoch
    assert run["reads_every_step"] == steps and run["reads_once"] == 1
    if device == "cuda":
        assert run["sync_ratio"] > 0.8
    else:
        assert cuda_parts_reported(run.stdout) == 1
