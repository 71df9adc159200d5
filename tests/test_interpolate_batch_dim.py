"""Values explained on the "interpolate-batch-dim" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_interpolate_batch_dim(device):
    run = run_example("interpolate-batch-dim", device)
    img = run["img"]
    assert img.shape == (3, 8, 8)
    # unbatched: a tuple size fails, a single scale factor or size stretches the width only
    assert "spatial dimensions of [8] and output size of (16, 16)" in run.stdout
    assert run["stretched"].shape == run["stretched_by_size"].shape == (3, 8, 16)
    assert torch.equal(run["stretched"], img.repeat_interleave(2, dim=-1))
    assert torch.equal(run["upsampled"], run["stretched"])
    assert "bilinear mode needs 4D input" in run.stdout
    assert "deprecated. Use `nn.functional.interpolate` instead" in run.stdout
    # the fix: both spatial dimensions doubled, equal to the image's slot in a real batch
    resized = run["resized"]
    assert resized.shape == (3, 16, 16)
    assert torch.equal(resized, run["resized_batch"][0])
    assert torch.equal(resized, img.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2))
    assert torch.equal(run["gray_resized"], resized[0])
    # the figure compares the three images
    assert [ax.get_title().split("\n")[0] for ax in run["axes"]] == [
        "original",
        "unbatched (wrong)",
        "unsqueeze(0) (right)",
    ]
