"""Values explained on the "half-precision-accumulation" page, read from the example's namespace."""

from __future__ import annotations

import pytest
import torch

from .conftest import run_example


def test_half_precision_accumulation(device):
    run = run_example("half-precision-accumulation", device)
    # a running total of ones stops where the gap between neighbours reaches 2
    assert run["totals"] == {
        "torch.float16": 2048.0,
        "torch.bfloat16": 256.0,
        "torch.float32": 3000.0,
    }
    assert run["significant_bits"] == {"torch.float16": 11, "torch.bfloat16": 8}
    # built-in reductions accumulate in float32, but a float16 result overflows past 65504
    assert run["ones"].sum().item() == 3000
    assert torch.isinf(run["thousands"].sum()) and run["thousands"].mean().item() == 1000
    # CPU autocast: the built-in loss in float32, the hand-written one and sum in bfloat16
    assert run["dtypes"]["cross_entropy"] == torch.float32
    assert run["dtypes"]["by hand"] == run["dtypes"]["sum"] == torch.bfloat16
    assert run["builtin_error"] < 1e-5 < 1e-3 < run["by_hand_error"]
    # the fixes
    assert run["total"].item() == 3000 and run["safe_sum"].item() == 100_000
    assert run["fixed_loss"].dtype == torch.float32 and run["fixed_error"] < 1e-5
    if device == "cuda":
        assert run["cuda_dtypes"]["sum"] == torch.float32
        assert run["cuda_dtypes"]["log_softmax"] == torch.float32


@pytest.mark.parametrize(("dtype", "stop"), [(torch.float16, 2048.0), (torch.bfloat16, 256.0)])
def test_a_half_precision_total_stops_where_one_is_half_a_gap(device, dtype, stop):
    total = torch.tensor(stop - 4, dtype=dtype, device=device)
    for _ in range(10):
        total = total + torch.ones((), dtype=dtype, device=device)
    assert total.item() == stop
    assert (total.float() + 1).item() == stop + 1  # float32 keeps the increment
