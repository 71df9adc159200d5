"""The helper ``pad_dims`` of "pad-order-last-dim-first", on other ranks, dims and modes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from .conftest import run_example


@pytest.mark.parametrize(
    "shape, pads, expected",
    [
        ((2, 3, 4, 5, 6), {2: (1, 2)}, (0, 0, 0, 0, 1, 2)),
        ((2, 3, 4, 5, 6), {-1: (3, 0), 1: (0, 1)}, (3, 0, 0, 0, 0, 0, 0, 1)),
        ((2, 3, 4, 5, 6), {4: (1, 1), -2: (2, 2), 2: (0, 3)}, (1, 1, 2, 2, 0, 3)),
        ((7,), {0: (2, 5)}, (2, 5)),
    ],
)
def test_pad_dims_builds_the_last_dimension_first_tuple(device, shape, pads, expected):
    pad_dims = run_example("pad-order-last-dim-first", device).namespace["pad_dims"]
    x = torch.randn(shape, device=device)
    torch.testing.assert_close(pad_dims(x, pads), F.pad(x, expected))


def test_pad_dims_passes_the_mode_on(device):
    pad_dims = run_example("pad-order-last-dim-first", device).namespace["pad_dims"]
    x = torch.randn(1, 2, 5, 6, device=device)
    got = pad_dims(x, {2: (1, 2), 3: (3, 0)}, mode="reflect")
    torch.testing.assert_close(got, F.pad(x, (3, 0, 1, 2), mode="reflect"))
