"""Values explained on the "mse-broadcasting" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_mse_broadcasting(device):
    run = run_example("mse-broadcasting", device)
    n = run["n"]
    assert run["prediction"].shape == (n, 1) and run["y"].shape == (n,)
    # the warning, shown for MSELoss and L1Loss and for a bare squeeze() on a batch of one
    assert run.stdout.count("UserWarning: Using a target size") == 3
    # (N, 1) - (N,) is (N, N): the loss averages every prediction against every target
    assert run["difference"].shape == (n, n)
    torch.testing.assert_close(run["loss_wrong"], run["pairs"])
    assert run["loss_wrong"] > 1.5 * run["loss_right"]
    # ... which is the distance to the mean of the targets plus their variance
    torch.testing.assert_close(run["loss_wrong"], run["decomposition"])
    # trained on it, the model predicts the mean; with matching shapes it finds the line
    assert abs(run["slope_wrong"]) < 0.01 and abs(run["bias_wrong"] - run["y_mean"]) < 0.01
    assert abs(run["slope_right"] - 2) < 0.1 and abs(run["bias_right"] - 1) < 0.1
    target_variance = run["y"].var(correction=0).item()
    assert abs(run["losses_wrong"][-1] - target_variance) < 1e-3 * target_variance
    # the figure shows a flat dashed line next to the fitted one
    lines = run["ax"].get_lines()
    assert len(lines) == 2 and lines[1].get_linestyle() == "--"
    assert abs(lines[1].get_ydata()[1] - lines[1].get_ydata()[0]) < 0.05
    assert lines[0].get_ydata()[1] - lines[0].get_ydata()[0] > 4
    # Python's default filter shows the warning once per place in the code
    assert len(run["shown"]) == 1
    # the fix: equal shapes, either way
    torch.testing.assert_close(run["loss_unsqueezed"], run["by_hand"])
    torch.testing.assert_close(run["loss_squeezed"], run["by_hand"])
    assert run["last_prediction"].squeeze().shape == ()
    assert run["last_prediction"].squeeze(1).shape == run["last_target"].shape
