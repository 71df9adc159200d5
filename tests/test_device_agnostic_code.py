"""Values explained on the "device-agnostic-code" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_device_agnostic_code(device):
    run = run_example("device-agnostic-code", device)
    # the second device: the GPU itself, or meta on a CPU-only build
    expected_other = "cuda" if device == "cuda" else "meta"
    assert run["other"].type == expected_other
    if device == "cuda":
        assert "Expected all tensors to be on the same device" in run.stdout
    else:
        assert "is not on the expected device" in run.stdout
        assert cuda_parts_reported(run.stdout) == 1
    # a 0-dim CPU tensor is accepted like a Python number
    assert run["scaled"].device.type == expected_other
    # Module.to is in place, Tensor.to returns a new tensor (or the same one on its own device)
    assert run["same_module"] is True
    assert run["moved"] is not run["x"]
    assert "x.to(x.device) is x: True" in run.stdout
    # the fixed code keeps everything on one device
    assert {t.device.type for t in (run["noise"], run["mask"], run["out"])} == {device}
    # an optimizer created before .to(device, float64) holds the moved parameters and updates them
    assert run["same_objects"] and run["in_optimizer"]
    model = run["model"]  # the last model of the page: the one moved to meta
    assert model.weight.device.type == "meta"
    assert run["kept_on_meta"] is False
    assert "weight changed by the step: True" in run.stdout
    assert run["weight_before"].dtype == torch.float64
