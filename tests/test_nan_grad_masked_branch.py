"""Values explained on the "nan-grad-masked-branch" page, read from the example's namespace."""

from __future__ import annotations

import pytest
import torch

from .conftest import run_example


def test_nan_grad_masked_branch(device):
    run = run_example("nan-grad-masked-branch", device)
    # the forward pass is right, the gradient is NaN where sqrt was invalid or infinite
    assert run["y"].tolist() == [0.0, 0.0, 2.0]
    assert run["v"].grad.tolist() == [0.0, 0.0, 0.0]  # the last v: vector_norm at zero
    assert run["norm"].item() == 0.0
    # anomaly detection names SqrtBackward0 and the forward line that called sqrt
    assert "Function 'SqrtBackward0' returned nan values in its 0th output" in run.stdout
    assert run["trace"][0].startswith("Error detected in SqrtBackward0")
    assert "torch.sqrt(x)" in run["source_lines"][-1]
    # 0 × inf and 0 × nan are NaN
    assert all(torch.tensor(run["products"]).isnan())
    # the double where: same forward, finite gradient
    assert run["y_safe"].tolist() == [0.0, 0.0, 2.0]
    assert run["x"].grad.tolist() == [0.0, 0.0, 0.25]


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
