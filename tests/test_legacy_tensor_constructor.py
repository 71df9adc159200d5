"""What the "legacy-tensor-constructor" page does not assert itself: that it leaves the global
deterministic mode as it found it."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_legacy_tensor_constructor(device):
    run_example("legacy-tensor-constructor", device)
    assert not torch.are_deterministic_algorithms_enabled()  # restored by the page
