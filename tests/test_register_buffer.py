"""Values explained on the "register-buffer" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_register_buffer(device):
    run = run_example("register-buffer", device)
    # a plain tensor attribute: left behind by .to() and missing from the state dict
    assert run["on_meta"].mean.device.type == "cpu"
    assert "is not on the expected device meta" in run.stdout
    assert list(run["checkpoint"]) == ["linear.weight", "linear.bias"]
    assert not run["load_result"].missing_keys and not run["same_prediction"]
    if device == "cuda":
        assert "Expected all tensors to be on the same device" in run.stdout
    else:
        assert cuda_parts_reported(run.stdout) == 2
    # register_buffer: moved, saved, restored, and still not a parameter
    assert run["fixed_buffers"] == ["mean", "std"]
    assert run["fixed_parameters"] == ["linear.weight", "linear.bias"]
    assert run["fixed_keys"] == ["mean", "std", "linear.weight", "linear.bias"]
    assert run["out_on_meta"].device.type == "meta"
    assert run["fixed_same_prediction"]
    assert [name for name, _ in run["holder"].named_buffers()] == ["mean"]
    # persistent=False: moved with the module, absent from the checkpoint, old checkpoints load
    assert 'Missing key(s) in state_dict: "positions"' in run.stdout
    assert "positions" not in run["non_persistent"].state_dict()
    assert run["non_persistent"].positions.device.type == "meta"
