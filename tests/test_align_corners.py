"""Values explained on the "align-corners" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_align_corners(device):
    run = run_example("align-corners", device)
    up = run["up"]
    # same ends, different values in between
    assert up[False][0] == up[True][0] == 0 and up[False][-1] == up[True][-1] == 9
    assert [round(v, 3) for v in up[False].tolist()] == [
        0.0,
        0.25,
        0.75,
        1.75,
        3.25,
        5.25,
        7.75,
        9.0,
    ]
    # the two position formulas: a quarter pixel apart at the ends, in opposite directions
    positions = run["positions"]
    assert positions[False][0] == -0.25 and positions[True][-1] == 3
    assert run["shift"][0] == -0.25 and run["shift"][-1] == 0.25
    # affine_grid and grid_sample: identity only when they agree
    img = run["img"]
    assert not torch.allclose(run["mixed"], img)
    # a linspace grid read with the default (False) warns and shifts; with True it is the identity
    assert "has changed to align_corners=False since 1.3.0" in run.stdout
    assert run["default_read"][0, 0, 3, 3].item() == 3.75
    torch.testing.assert_close(run["fixed"], img)
    # interpolate defaults to False without a warning
    assert not run["caught"] and torch.equal(run["default_up"][0, 0], up[False])
    torch.testing.assert_close(run["grid_false"][0, 0, :, 0], run["centres_false"])
    # the figure: one panel per convention, outputs at the computed positions
    assert [ax.get_title() for ax in run["axes"]] == ["align_corners=True", "align_corners=False"]
