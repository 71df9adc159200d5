"""What the "reshape-vs-permute" page does not assert itself: what its figure shows."""

from __future__ import annotations

from .conftest import run_example


def test_reshape_vs_permute(device):
    run = run_example("reshape-vs-permute", device)
    img = run["img"]
    # the figure shows the wrong conversion and, in its last panel, the image itself
    shown = [ax.images[0].get_array() for ax in run["axes"]]
    assert (shown[2] == img.cpu().numpy()).all() and not (shown[1] == img.cpu().numpy()).all()
