"""What the "index-select" page does not assert itself: the int32 index, the full CPU message,
and its CUDA parts (the device of the result on CUDA, the recordings in a CPU build)."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_index_select(device):
    run = run_example("index-select", device)
    # the index of the "Changed in" section is an int32 one
    assert run["int32_index"].dtype == torch.int32
    # the page matches only the end of this CPU message
    assert "INDICES element is out of DATA bounds" in run.stdout
    if device == "cuda":
        # the parent still computes on CUDA after its children's device-side asserts
        assert run["after"].device.type == "cuda"
    else:
        assert cuda_parts_reported(run.stdout) == 3
        # the blocking child's part: a statement that it did not run, or its recorded output
        assert (
            "CUDA_LAUNCH_BLOCKING=1 needs CUDA" in run.stdout
            or "points at: rows = torch.index_select(x, 0, index)" in run.stdout
        )
