"""Values explained on the "legacy-tensor-constructor" page, read from the example's namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_legacy_tensor_constructor(device):
    run = run_example("legacy-tensor-constructor", device)
    # torch.Tensor(3): a shape; torch.tensor(3): the scalar 3
    assert run["legacy"].shape == (3,) and run["legacy"].dtype == torch.float32
    assert run["modern"].shape == () and run["modern"].item() == 3
    # deterministic mode fills uninitialised memory with NaN, and the accumulator shows it
    assert run["legacy_total"].isnan().all() and run["empty_is_nan"]
    assert not torch.are_deterministic_algorithms_enabled()  # restored by the page
    # integers are a shape, a list or a tuple is data
    shapes = {call: tuple(t.shape) for call, t in run["shapes_and_data"].items()}
    assert shapes == {
        "torch.Tensor(2, 3)": (2, 3),
        "torch.Tensor(torch.Size([2, 3]))": (2, 3),
        "torch.Tensor([2, 3])": (2,),
        "torch.Tensor((2, 3))": (2,),
    }
    assert run["dtypes"]["[1, 2]"] == (torch.float32, torch.int64)
    assert run["dtypes"]["np.array([1.5, 2.5])"] == (torch.float32, torch.float64)
    # a tensor argument is aliased, not copied; dtype= and device="cuda" are refused
    assert run["same_memory"]
    assert "legacy constructor expects device type: cpu but device type: cuda" in run.stdout
    assert "int32 or int64 for index" in run.stdout or "not implemented for 'Float'" in run.stdout
    # the fix
    assert run["total"].item() == 0.75
    assert run["labels"].dtype == torch.int64 and run["shared"].dtype == torch.float64
