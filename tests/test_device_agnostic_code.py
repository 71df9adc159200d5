"""What the "device-agnostic-code" page prints or shows but does not assert itself."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_device_agnostic_code(device):
    run = run_example("device-agnostic-code", device)
    # the cuda/cpu mismatch runs on CUDA only (where the page asserts it), and a CPU run says so
    if device == "cpu":
        assert cuda_parts_reported(run.stdout) == 1
    # the step on the moved model: printed, not asserted (the page checks w - lr * grad)
    assert "weight changed by the step: True" in run.stdout
    # the last model of the page was moved to meta (the page asserts the new Parameter objects)
    assert run["model"].weight.device.type == "meta"
