"""Values explained on the "weight-decay-norm-bias" page, and weight decay with zero gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from .conftest import run_example


def test_weight_decay_norm_bias(device):
    run = run_example("weight-decay-norm-bias", device)
    factor = run["factor"]
    assert factor == pytest.approx((1 - 0.03 * 0.1) ** 300)
    # AdamW decays normalisation weights and biases with zero gradients
    assert run["decayed"] == pytest.approx(
        {"1.weight": factor, "1.bias": 0.5 * factor, "4.weight": factor, "4.bias": 0.5 * factor},
        abs=1e-3,
    )
    # two groups: matrices decayed
    assert run["matrix_factors"] == pytest.approx([factor, factor], abs=1e-3)
    # bias= on the batch, instance and group normalisations (2.12), not on RMSNorm
    assert run["with_bias_argument"] == ["BatchNorm1d", "InstanceNorm1d", "GroupNorm", "LayerNorm"]
    assert run["batch_norm"].bias is None


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.AdamW])
def test_weight_decay_zero_in_a_group_keeps_the_parameter(optimizer_class):
    norm = nn.LayerNorm(3)
    linear = nn.Linear(3, 3)
    optimizer = optimizer_class(
        [
            {"params": linear.parameters(), "weight_decay": 0.5},
            {"params": norm.parameters(), "weight_decay": 0.0},
        ],
        lr=0.1,
    )
    before = linear.weight.detach().clone()
    for p in [*linear.parameters(), *norm.parameters()]:
        p.grad = torch.zeros_like(p)
    optimizer.step()
    assert torch.equal(norm.weight, torch.ones(3))
    torch.testing.assert_close(linear.weight, before * (1 - 0.1 * 0.5))
