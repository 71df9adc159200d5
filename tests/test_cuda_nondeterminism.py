"""Values explained on the "cuda-nondeterminism" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_cuda_nondeterminism(device):
    run = run_example("cuda-nondeterminism", device)
    # the two orders of additions the page prints (it asserts only that they differ)
    assert run["left"] == 1.0 and run["right"] == 0.0
    # the page leaves deterministic mode and the cuDNN flags as it found them
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.backends.cudnn.benchmark and not torch.backends.cudnn.deterministic
    if device != "cuda":
        assert cuda_parts_reported(run.stdout) == 3
