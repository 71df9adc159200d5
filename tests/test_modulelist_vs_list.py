"""What the "modulelist-vs-list" page does not assert itself: the expected parameter count, and
its CUDA section (the listed layers moved by hand after the first forward pass failed)."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_modulelist_vs_list(device):
    run = run_example("modulelist-vs-list", device)
    # three Linear(4, 4) blocks and a Linear(4, 1) head: the count the page prints
    assert run["expected"] == 65
    # the listed layers end on the page's device: moved by hand on a GPU, never moved on the CPU
    assert {block.weight.device.type for block in run["model"].blocks} == {device}
    if device != "cuda":
        assert cuda_parts_reported(run.stdout) == 1
