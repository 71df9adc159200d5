"""Values explained on the "scheduler-step-order" page, and the scheduler behaviour behind them."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.optim.lr_scheduler import LinearLR, StepLR

from .conftest import run_example


def test_scheduler_step_order(device):
    run = run_example("scheduler-step-order", device)
    # stepping the scheduler first skips the first value and warns once
    assert run["used_before"] == [0.05, 0.075, 0.1, 0.1, 0.1]
    assert len(run["caught"].warnings) == 1
    assert run["created"] == (0, 0.025)
    # a per-epoch warm-up stepped per batch is over after three batches
    assert run["per_batch"][:4] == [0.025, 0.05, 0.075, 0.1]
    assert run["one_cycle"].last_epoch == run["EPOCHS"] * run["BATCHES"]
    # the right order uses every value, one epoch later than the wrong one
    assert run["used_after"] == [0.025, 0.05, 0.075, 0.1, 0.1]
    assert run["used_after"][1:] == run["used_before"][:-1]


@pytest.mark.parametrize("scheduler_first", [True, False])
def test_the_warning_follows_the_order(scheduler_first):
    weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([weight], lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if scheduler_first:
            scheduler.step()
            optimizer.step()
        else:
            optimizer.step()
            scheduler.step()
    messages = [str(w.message) for w in caught]
    assert any("before `optimizer.step()`" in m for m in messages) == scheduler_first
    assert optimizer.param_groups[0]["lr"] == 0.5


def test_the_constructor_applies_the_first_value():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    scheduler = LinearLR(optimizer, start_factor=0.25, total_iters=3)
    assert scheduler.last_epoch == 0
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.025)


def test_static_checker_flags_the_wrong_code_and_not_its_fix():
    static = run_example("scheduler-step-order", "cpu")["static"]
    assert [finding.rule for finding in static["wrong"]] == ["TP106"]
    assert static["fixed"] == []
