"""Values explained on the "train-eval-mode" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_train_eval_mode(device):
    run = run_example("train-eval-mode", device)
    # in training mode the same batch gives two predictions; in eval mode one, batch-independent
    assert not torch.equal(run["first"], run["second"])
    assert torch.equal(run["third"], run["fourth"])
    torch.testing.assert_close(run["first_half"], run["third"][:4])
    # dropout: zeros and 1/(1-p) in train mode, the identity in eval mode
    assert run["dropout_values"] == {0.0, 1 / (1 - run["p"])}
    assert torch.equal(run["identity"], run["ones"])
    # batchnorm: batch statistics in train mode, running statistics in eval mode
    out_train = run["out_train"].detach()
    torch.testing.assert_close(out_train.mean(0), torch.zeros_like(out_train[0]), atol=1e-5, rtol=0)
    torch.testing.assert_close(run["out_eval"], run["expected"])
    # eval() flips every registered module's flag, and evaluate() restores training mode
    assert all(run["flags_train"]) and not any(run["flags_eval"])
    assert torch.equal(run["logits_a"], run["logits_b"]) and not run["logits_a"].requires_grad
    assert run["model"].training
    # a layer built in forward is not registered: still random after eval(), missing from state
    assert (run["bad_a"] == 0).any() and not torch.equal(run["bad_a"], run["bad_b"])
    assert run["bad_modules"] == ["", "fc"] and run["bad_keys"] == ["fc.weight", "fc.bias"]
    assert "bn.running_mean" in run["good_keys"]
    # BatchNorm refuses one value per channel in training mode
    assert "ValueError: Expected more than 1 value per channel when training" in run.stdout
    assert run["sizes"] == [3, 3, 3, 1] and run["sizes_drop_last"] == [3, 3, 3]
