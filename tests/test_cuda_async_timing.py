"""Values explained on the "cuda-async-timing" page, read from the example's own namespace."""

from __future__ import annotations

import inspect

from .conftest import cuda_parts_reported, run_example


def test_cuda_async_timing(device):
    run = run_example("cuda-async-timing", device)
    # on the CPU a plain clock measures the work: 8 times the work takes clearly longer
    assert run["clock_ratio"] > 2
    # Timer's default clock synchronises the accelerator; it runs on one thread by default
    assert "torch.accelerator.synchronize()" in inspect.getsource(run["default_clock"])
    assert run["timer_threads"] == 1
    assert run["timer_ratio"] > 2
    if device == "cuda":
        # a plain clock measures the launch; a synchronised clock and CUDA events the work
        assert run["launch_ratio"] < 2 < run["synced_ratio"]
        assert run["event_ratio"] > 2
    else:
        assert cuda_parts_reported(run.stdout) == 2
