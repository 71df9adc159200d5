"""Values explained on the "data-vs-detach" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_data_vs_detach(device):
    run = run_example("data-vs-detach", device)
    out = run.stdout
    # the 0.4.0 migration guide's example: c.zero_() zeroes out through detach() and through .data
    assert out.count("c.zero_(): tensor([0., 0., 0.]") == 2
    assert out.count("out:       tensor([0., 0., 0.], ") == 2
    assert "a.grad:           tensor([0., 0., 0.]" in out
    # the correct gradient is sigmoid'(a) = sigmoid(a) * (1 - sigmoid(a)) at a = [1, 2, 3]
    s = torch.tensor([1.0, 2.0, 3.0]).sigmoid()
    torch.testing.assert_close(run["expected_grad"].cpu(), s * (1 - s))
    # the edit through .data gives an all-zero gradient, different from the correct one
    assert torch.count_nonzero(run["grad_via_data"]) == 0
    assert not torch.allclose(run["grad_via_data"], run["expected_grad"])
    # detach() shares the version counter, .data does not
    assert (run["version_before"], run["version_after_detach"], run["version_after_data"]) == (
        0,
        1,
        1,
    )
    assert "modified by an inplace operation" in out
    torch.testing.assert_close(run["a"].grad, run["expected_grad"])
