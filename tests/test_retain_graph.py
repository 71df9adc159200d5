"""What the "retain-graph" page prints but does not assert itself."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_retain_graph(device):
    run = run_example("retain-graph", device)
    # the page asserts that one backward of the sum equals two retained passes; the gradient is
    # that of sum(x²) + mean(x²) at x = [1, 2, 3]: 2x · (1 + 1/3)
    torch.testing.assert_close(run["grad_of_sum"].cpu(), torch.tensor([2.0, 4.0, 6.0]) * (4 / 3))
    # x * 2 saves the constant: printed, not asserted, by the page
    assert "saved by MulBackward0 -> tensor(2" in run.stdout
