"""Values explained on the "bce-with-logits" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_bce_with_logits(device):
    run = run_example("bce-with-logits", device)
    values = torch.tensor(run["values"])
    saturated = values >= 20
    # BCEWithLogitsLoss: the exact loss log(1 + e^x) and the exact gradient sigmoid(x) - 0
    torch.testing.assert_close(run["loss_logits"].double().cpu(), run["exact"], rtol=1e-6, atol=0)
    torch.testing.assert_close(
        run["logits_b"].grad.double().cpu(), run["exact_grad"], rtol=1e-6, atol=0
    )
    # BCELoss(sigmoid): clamped at 100 and no gradient once the sigmoid rounds to 1
    loss_bce, grad_bce = run["loss_bce"].detach().cpu(), run["logits_a"].grad.cpu()
    assert (loss_bce[saturated] == 100).all() and (grad_bce[saturated] == 0).all()
    torch.testing.assert_close(
        loss_bce[~saturated].double(), run["exact"][~saturated], rtol=1e-3, atol=0
    )
    assert run["logit_after_bce"] == 20.0 and run["logit_after_logits"] < 0
    assert run["p20"] == 1 and run["p9"] == 1
    torch.testing.assert_close(run["stable"], run["loss_logits"].detach())
    # CPU autocast accepts BCELoss (in float32); the CUDA section shows CUDA's refusal
    assert run["cpu_loss"].dtype == torch.float32
    if device == "cuda":
        assert "unsafe to autocast" in run.stdout
        assert run["autocast_loss"].dtype == torch.float32
    else:
        assert cuda_parts_reported(run.stdout) == 1
    # one output unit under CrossEntropyLoss: zero loss, zero gradient, nothing learned
    assert run["zero_loss"].item() == 0
    assert torch.equal(run["one_unit"].weight, run["weight_before"])
    assert "IndexError: Target 1 is out of bounds" in run.stdout
    # one unit with BCEWithLogitsLoss is two units [0, z] with CrossEntropyLoss
    torch.testing.assert_close(run["loss_one_unit"], run["loss_two_units"])
