"""What the "amp-unscale-before-clip" page does not assert itself: the scale, and clipping of a
gradient below the limit."""

from __future__ import annotations

import torch
from torch import nn

from .conftest import run_example


def test_amp_unscale_before_clip(device):
    run = run_example("amp-unscale-before-clip", device)
    # the prose says the scale is "65,536 to start with"; the page prints it but does not assert it
    assert run["scale_before"] == 2.0**16


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
