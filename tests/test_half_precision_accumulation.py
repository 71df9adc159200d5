"""Half-precision totals, outside the "half-precision-accumulation" page: the stop reached from
just below it, on every device."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize(("dtype", "stop"), [(torch.float16, 2048.0), (torch.bfloat16, 256.0)])
def test_a_half_precision_total_stops_where_one_is_half_a_gap(device, dtype, stop):
    total = torch.tensor(stop - 4, dtype=dtype, device=device)
    for _ in range(10):
        total = total + torch.ones((), dtype=dtype, device=device)
    assert total.item() == stop
    assert (total.float() + 1).item() == stop + 1  # float32 keeps the increment
