"""Values explained on the "cuda-nondeterminism" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_cuda_nondeterminism(device):
    run = run_example("cuda-nondeterminism", device)
    # a seed repeats the draws
    assert torch.equal(run["first"], run["second"])
    # another order of additions, another float32 result (close, not equal)
    assert run["left"] == 1.0 and run["right"] == 0.0
    assert not torch.equal(run["sum_in_order"], run["sum_shuffled"])
    # deterministic mode refuses put_ without accumulation, allows it with accumulation
    assert "put_ does not have a deterministic implementation" in run.stdout
    assert run["accumulated"].tolist() == [3.0, 0.0, 0.0, 0.0]
    # the page leaves deterministic mode and the cuDNN flags as it found them
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.backends.cudnn.benchmark and not torch.backends.cudnn.deterministic
    # the CUBLAS_WORKSPACE_CONFIG check and its documentation are gone (2.10)
    assert run["names_the_variable"] is False
    if device == "cuda":
        assert run["distinct_results"] > 1
        assert run["deterministic_results"] == 1
        # no CUBLAS_WORKSPACE_CONFIG needed any more: the product runs, twice the same
        assert torch.equal(*run["products"])
    else:
        assert cuda_parts_reported(run.stdout) == 3
