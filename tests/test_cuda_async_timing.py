"""Values explained on the "cuda-async-timing" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_cuda_async_timing(device):
    run = run_example("cuda-async-timing", device)
    if device != "cuda":
        assert cuda_parts_reported(run.stdout) == 2
