"""Values explained on the "tensor-to-numpy" page, read from the example's own namespace."""

from __future__ import annotations

import numpy as np
import torch

from .conftest import cuda_parts_reported, run_example


def test_tensor_to_numpy(device):
    run = run_example("tensor-to-numpy", device)
    assert "Can't call numpy() on Tensor that requires grad" in run.stdout
    if device == "cuda":
        assert "can't convert cuda" in run.stdout
    else:  # the conversion of a CUDA tensor, without and with the guards
        assert cuda_parts_reported(run.stdout) == 2
    # the fix and numpy(force=True) give the same float32 array of the prediction
    array, forced = run["array"], run["forced"]
    assert isinstance(array, np.ndarray) and array.dtype == np.float32 and array.shape == (4, 2)
    assert np.array_equal(array, forced)
    np.testing.assert_array_equal(array, run["pred"].detach().cpu().numpy())
    # .cpu() records a ToCopyBackward0 node on CUDA and is a no-op on the CPU; meta shows the node
    if device == "cuda":
        assert run["nodes_cpu_first"] == run["nodes_pred"] + 1
    else:
        assert run["via_cpu_first"] is run["pred"]
        assert run["nodes_cpu_first"] == run["nodes_pred"]
    assert type(run["to_meta"].grad_fn).__name__ == "ToCopyBackward0"
    # neither order saves anything or leaves a graph behind
    assert run["saved_cpu_detach"].count == run["saved_detach_cpu"].count == 0
    assert torch.equal(run["cpu_detach"], run["detach_cpu"])
    # one time ratio per available device, close to 1: the order changes little
    expected_devices = {"cpu", "cuda"} if torch.cuda.is_available() else {"cpu"}
    assert set(run["order_ratios"]) == expected_devices
    assert all(0.8 < r < 1.25 for r in run["order_ratios"].values())
    # numpy()/from_numpy share memory, torch.tensor copies
    assert run["source"].tolist() == [1.0, 2.0, 0.0]
    assert run["from_array"].tolist() == [1.0, 2.0, 0.0]
    assert run["copied"].tolist() == [1.0, 0.0, 0.0]
    # the fix returns a view of the tensor on the CPU, a copy on CUDA
    assert run["array_edits_tensor"] == (device == "cpu")
    assert run["values"][1].item() == 1.0
