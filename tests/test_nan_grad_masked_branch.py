"""What the "nan-grad-masked-branch" page does not assert itself: the full messages, and other
functions (log, exp) in the untaken branch."""

from __future__ import annotations

import pytest
import torch

from .conftest import run_example


def test_nan_grad_masked_branch(device):
    run = run_example("nan-grad-masked-branch", device)
    # the page matches only part of anomaly detection's messages
    assert "Function 'SqrtBackward0' returned nan values in its 0th output" in run.stdout
    assert run["trace"][0].startswith("Error detected in SqrtBackward0")


@pytest.mark.parametrize(
    ("unsafe", "safe_input"),
    [
        (torch.sqrt, 1.0),
        (torch.log, 1.0),
        (torch.exp, 0.0),
    ],
    ids=["sqrt", "log", "exp"],
)
def test_untaken_branch_poisons_the_gradient_unless_made_safe(device, unsafe, safe_input):
    x = torch.tensor([-1.0, 0.0, 100.0, 4.0], device=device, requires_grad=True)
    keep = torch.tensor([False, False, False, True], device=device)
    torch.where(keep, unsafe(x), 0.0).sum().backward()
    assert x.grad[:3].isnan().any() and x.grad[3].isfinite()
    x.grad = None
    torch.where(keep, unsafe(torch.where(keep, x, safe_input)), 0.0).sum().backward()
    assert x.grad[:3].tolist() == [0.0, 0.0, 0.0] and x.grad[3].isfinite()
