"""Values explained on the "optimizer-step-between-backwards" page, from the example's namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_optimizer_step_between_backwards(device):
    run = run_example("optimizer-step-between-backwards", device)
    out = run.stdout
    # the step between the two backward passes: backward refuses the trunk's saved weight
    assert out.count("modified by an inplace operation") == 1
    assert "FloatTensor [8, 6]]" in out
    # the step bumps the trunk weight's version and skips head_b (no gradient yet)
    assert run["trunk_bumped"] > 0 and run["head_b_bumped"] == 0
    # before 1.5: a step through .data bumped nothing, and the second backward ran silently
    assert run["data_step_bumped"] == 0
    assert "second backward: no error" in out
    # summing the losses == two backward passes then one step, within float rounding
    assert len(run["grads_summed"]) == len(run["params"]) == 8
    for a, b in zip(run["grads_summed"], run["grads_two_passes"], strict=True):
        torch.testing.assert_close(a, b)
    for a, b in zip(run["after_summed"], run["after_two_passes"], strict=True):
        torch.testing.assert_close(a, b)
    assert run["largest_difference"] < 1e-5
    # every parameter moved in that step, away from the initial state
    assert all(
        not torch.equal(a, p0)
        for a, p0 in zip(run["after_summed"], run["initial_state"], strict=True)
    )
    # recomputing the forward: two separate updates of the trunk
    assert run["moved_twice"]
    assert not torch.equal(run["trunk_after_a"], run["trunk_after_b"])
