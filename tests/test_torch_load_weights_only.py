"""Values explained on the "torch-load-weights-only" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_torch_load_weights_only(device):
    run = run_example("torch-load-weights-only", device)
    # the whole pickled model is refused by today's default, and the message says since when
    assert "GLOBAL torch.nn.modules.linear.Linear" in run["message"]
    assert run["changed_in"] == "2.6"
    assert "\x1b[" not in run.stdout
    # weights_only=True refuses the payload; weights_only=False runs its code
    assert "refused: Unsupported global: GLOBAL print" in run.stdout
    assert run["printed_by_file"].getvalue().startswith("This line was printed by the file")
    assert run["loaded"] is None
    # a state dict loads with the default, onto the page's device
    assert list(run["state"]) == ["weight", "bias"]
    assert run["state"]["weight"].device.type == device
    assert torch.equal(run["restored"].weight, run["state"]["weight"])
    assert run["loaded_checkpoint"]["epoch"] == 3
    # an own class is refused, then allowed inside safe_globals only
    assert "refused: Unsupported global: GLOBAL __main__.TrainConfig" in run.stdout
    assert run["with_config"]["config"] == run["config"]
    assert run["TrainConfig"] not in torch.serialization.get_safe_globals()
