"""What the "torch-load-weights-only" page prints or leaves behind but does not assert itself."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_torch_load_weights_only(device):
    run = run_example("torch-load-weights-only", device)
    # the page strips the terminal's bold markers from the message it prints
    assert "\x1b[" not in run.stdout
    # the globals named in the refusals, as printed on the reference release
    assert "refused: Unsupported global: GLOBAL print" in run.stdout
    assert "refused: Unsupported global: GLOBAL __main__.TrainConfig" in run.stdout
    # a state dict loads with the default onto the page's device (printed, not asserted)
    assert run["state"]["weight"].device.type == device
    # safe_globals allows the class inside its block only: the page leaves the process as it was
    assert run["TrainConfig"] not in torch.serialization.get_safe_globals()
