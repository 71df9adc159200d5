"""Values explained on the "amp-unscale-before-clip" page, read from the example's own namespace."""

from __future__ import annotations

import math

import torch
from torch import nn

from .conftest import run_example


def test_amp_unscale_before_clip(device):
    run = run_example("amp-unscale-before-clip", device)
    scale = 2.0**16
    assert run["scaler"].get_scale() == run["scale_before"] / 2  # the overflow halved the scale
    # without unscale_: clipping sees the scaled norm, and the update is `scale` times too small
    assert run["true_norm"] > run["max_norm"]
    assert math.isclose(run["seen_scaled"], run["true_norm"] * scale, rel_tol=1e-4)
    assert math.isclose(run["ratio"], scale, rel_tol=1e-3)
    # float16 underflow, and the scale that avoids it
    assert run["small_gradient"].half().item() == 0.0
    # with unscale_: the true norm, and exactly the clipped true gradient
    assert math.isclose(run["seen_fixed"], run["true_norm"], rel_tol=1e-5)
    for applied, wanted in zip(run["update_fixed"], run["intended"], strict=True):
        torch.testing.assert_close(applied, wanted)
    assert math.isclose(run["total_norm"](run["update_fixed"]), run["max_norm"], rel_tol=1e-4)
    assert "unscale_() has already been called on this optimizer" in run.stdout
    # an overflow: infinite norm, step skipped, scale halved
    assert math.isinf(run["norm_inf"]) and run["unchanged"]
    assert run["scale_before"] == scale


def test_clipping_before_unscale_clips_even_small_gradients(device):
    """A gradient below max_norm is left alone only when clipping sees the unscaled values."""
    torch.manual_seed(0)
    model = nn.Linear(4, 1).to(device)
    x, y = torch.randn(8, 4, device=device), torch.randn(8, 1, device=device)

    def clipped_norm(unscale_first):
        net = nn.Linear(4, 1).to(device)
        net.load_state_dict(model.state_dict())
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(torch.device(device).type)
        scaler.scale(nn.functional.mse_loss(net(x), y)).backward()
        if unscale_first:
            scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(net.parameters(), max_norm=1e3)
        if not unscale_first:
            scaler.unscale_(optimizer)
        return torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in net.parameters()]))

    nn.functional.mse_loss(model(x), y).backward()
    true = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert true < 1e3
    torch.testing.assert_close(clipped_norm(unscale_first=True), true)
    assert clipped_norm(unscale_first=False) < 0.1 * true


def test_static_checker_flags_the_wrong_code_and_not_its_fix():
    static = run_example("amp-unscale-before-clip", "cpu")["static"]
    assert [finding.rule for finding in static["clip_scaled"]] == ["TP107"]
    assert static["clip_unscaled"] == []
