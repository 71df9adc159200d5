"""What the "optimizer-step-between-backwards" page prints or relies on but does not assert."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_optimizer_step_between_backwards(device):
    run = run_example("optimizer-step-between-backwards", device)
    # the page matches the refusal by its shape and version clause: it is the in-place error, once
    assert run.stdout.count("modified by an inplace operation") == 1
    # the fix's step, which the page compares with the two-pass step, moves every parameter
    assert all(
        not torch.equal(a, p0)
        for a, p0 in zip(run["after_summed"], run["initial_state"], strict=True)
    )
