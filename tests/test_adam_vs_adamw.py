"""What the "adam-vs-adamw" page does not assert itself (AdamW's moves to full precision), and
Adam's L2 penalty against AdamW's decay."""

from __future__ import annotations

import pytest
import torch

from .conftest import run_example


def test_adam_vs_adamw(device):
    run = run_example("adam-vs-adamw", device)
    # AdamW moves by lr * decay * w: the page checks it to 1e-9, a hundredth of the smaller move
    assert run["adamw_moves"] == pytest.approx([1e-5, 1e-7], rel=1e-6)
    # the fractions the page prints
    assert run["fractions"] == {"Adam": ["0.1 %", "10 %"], "AdamW": ["0.001 %", "0.001 %"]}


def test_adam_weight_decay_is_an_l2_penalty_in_the_gradient():
    """Adam(weight_decay=d) with gradient g is Adam without decay given g + d * w."""
    start = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    grad = torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64)
    penalised = torch.nn.Parameter(start.clone())
    plain = torch.nn.Parameter(start.clone())
    with_decay = torch.optim.Adam([penalised], lr=0.1, weight_decay=0.2)
    without = torch.optim.Adam([plain], lr=0.1)
    for _ in range(5):
        penalised.grad = grad.clone()
        plain.grad = grad + 0.2 * plain.detach()
        with_decay.step()
        without.step()
    torch.testing.assert_close(penalised, plain)


def test_adamw_is_decay_then_adam():
    """AdamW(weight_decay=d) is w * (1 - lr * d) followed by an Adam step without decay."""
    start = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    grad = torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64)
    decoupled = torch.nn.Parameter(start.clone())
    plain = torch.nn.Parameter(start.clone())
    adamw = torch.optim.AdamW([decoupled], lr=0.1, weight_decay=0.2)
    adam = torch.optim.Adam([plain], lr=0.1)
    for _ in range(5):
        decoupled.grad = grad.clone()
        plain.grad = grad.clone()
        with torch.no_grad():
            plain.mul_(1 - 0.1 * 0.2)
        adamw.step()
        adam.step()
    torch.testing.assert_close(decoupled, plain)
