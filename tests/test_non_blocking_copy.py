"""Values explained on the "non-blocking-copy" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_non_blocking_copy(device):
    run = run_example("non-blocking-copy", device)
    accelerator = torch.accelerator.is_available()
    assert run["accelerator"] == accelerator
    # ordinary CPU tensors are not pinned; the DataLoader pins only with an accelerator
    assert not run["host"].is_pinned()
    assert run["batch"].is_pinned() == accelerator
    if not accelerator:
        assert "Cannot access accelerator device when none is available" in run.stdout
        assert "no accelerator is found" in run.stdout
    # moving a CPU tensor to the CPU is no copy at all
    assert run["same"] is run["host"]
    if device == "cuda":
        # read at once, the copy to the host is wrong; after synchronising, right
        assert run["result"].is_pinned() and not run["early_ok"] and run["late_ok"]
        # the source changed before the host-to-device copy ran: the new values arrived
        assert run["arrived"] == [-1.0]
        assert run["return_ratio"] > 2
        assert not run["done_at_once"]
        assert torch.equal(run["result"], run["expected"])
    else:
        assert cuda_parts_reported(run.stdout) == 4
