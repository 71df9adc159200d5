"""What the "bce-with-logits" page prints but does not assert itself."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_bce_with_logits(device):
    run = run_example("bce-with-logits", device)
    # the table: below saturation, BCELoss(sigmoid) is still the exact loss (the page asserts only
    # the saturated rows of BCELoss)
    saturated = torch.tensor(run["values"]) >= 20
    loss_bce = run["loss_bce"].detach().cpu()
    torch.testing.assert_close(
        loss_bce[~saturated].double(), run["exact"][~saturated], rtol=1e-3, atol=0
    )
    # the autocast refusal runs on CUDA only (where the page asserts it), and a CPU run says so
    if device == "cpu":
        assert cuda_parts_reported(run.stdout) == 1
    # the page matches "out of bounds"; the message names the target
    assert "IndexError: Target 1 is out of bounds" in run.stdout
