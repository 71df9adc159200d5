"""Values explained on the "reshape-vs-permute" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_reshape_vs_permute(device):
    run = run_example("reshape-vs-permute", device)
    img, wrong, right = run["img"], run["wrong"], run["right"]
    assert img.shape == (24, 32, 3) and wrong.shape == right.shape == (3, 24, 32)
    # reshape keeps the memory order: channel 0 is the first third of the rows, all colours
    assert torch.equal(wrong.flatten(), img.flatten())
    assert torch.equal(wrong[0, 0, :3], img[0, 0])
    # permute keeps every element at its coordinates
    assert torch.equal(right, img.permute(2, 0, 1))
    assert torch.equal(right.permute(1, 2, 0), img) and not torch.equal(wrong.permute(1, 2, 0), img)
    # a convolution accepts both: no error, different outputs
    assert run["out_wrong"].shape == run["out_right"].shape
    assert not torch.allclose(run["out_wrong"], run["out_right"])
    # channel means: permuted keep the colours, reshaped ones are nearly equal
    torch.testing.assert_close(right.mean(dim=(1, 2)), run["true_means"])
    assert run["wrong_means"].max() - run["wrong_means"].min() < 0.01
    # the figure shows the image, the wrong conversion and the right one
    titles = [ax.get_title() for ax in run["axes"]]
    assert titles == ["the image (H, W, C)", "reshape(3, H, W): wrong", "permute(2, 0, 1): right"]
    shown = [ax.images[0].get_array() for ax in run["axes"]]
    assert (shown[2] == img.cpu().numpy()).all() and not (shown[1] == img.cpu().numpy()).all()
