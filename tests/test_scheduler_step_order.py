"""The scheduler behaviour behind the "scheduler-step-order" page, with another scheduler
(StepLR) and in both orders."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.optim.lr_scheduler import StepLR


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
