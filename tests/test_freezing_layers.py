"""Values explained on the "freezing-layers" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example

BACKBONE = ["0.weight", "1.weight", "1.bias", "3.weight", "4.weight", "4.bias"]


def test_freezing_layers(device):
    run = run_example("freezing-layers", device)
    # freezing after the backward: every backbone parameter still moves on the next step
    assert run["moved"] == BACKBONE
    assert set(run["backbone_state"].values()) == {(False, True)}
    # zero gradients (set_to_none=False) plus momentum keep moving frozen parameters
    assert run["frozen_grads_zero"]
    assert run["moved_by_momentum"] == BACKBONE
    # clearing the frozen .grad to None keeps them in place
    assert run["unchanged"]
    # the recipe: only the new head is trainable, and only it changes
    assert run["trainable_names"] == ["head.weight", "head.bias"]
    assert run["changed"] == ["head.weight", "head.bias"]
    assert run["model"].head.out_features == 5
    # BatchNorm running statistics move in train mode, stay in eval mode
    assert run["running_mean_moved"]
    assert not torch.equal(run["running_mean_before"], run["running_mean_before_eval"])
    assert run["running_mean_kept"]
    assert run["bn"].training
