"""Values explained on the "data-vs-detach" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_data_vs_detach(device):
    run = run_example("data-vs-detach", device)
    # the edit through .data gives an all-zero gradient, different from the correct one
    assert torch.count_nonzero(run["grad_via_data"]) == 0
    assert not torch.allclose(run["grad_via_data"], run["expected_grad"])
    # detach() shares the version counter, .data does not
    assert (run["version_before"], run["version_after_detach"], run["version_after_data"]) == (
        0,
        1,
        1,
    )
    assert "modified by an inplace operation" in run.stdout
    torch.testing.assert_close(run["a"].grad, run["expected_grad"])
