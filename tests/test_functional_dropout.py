"""Values explained on the "functional-dropout" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_functional_dropout(device):
    run = run_example("functional-dropout", device)
    # F.dropout keeps dropping after model.eval()
    assert not torch.equal(run["eval_a"], run["eval_b"])
    assert run["training_default"] is True and run["zeros_added"] > 0
    assert run["defaults"] == {
        "dropout": True,
        "dropout2d": True,
        "alpha_dropout": False,
        "batch_norm": False,
    }
    # both fixes are deterministic in eval mode and equal the network without dropout
    for name in ("flag", "module"):
        assert torch.equal(run[f"{name}_a"], run[f"{name}_b"])
        torch.testing.assert_close(run[f"{name}_a"], run["no_dropout"])
    # ... and still drop in training mode
    assert run["flag_train_differs"] and run["module_train_differs"]
    assert torch.equal(run["explicit_off"], run["hidden"])
