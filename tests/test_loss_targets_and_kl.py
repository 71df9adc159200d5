"""Values explained on the "loss-targets-and-kl" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_loss_targets_and_kl(device):
    run = run_example("loss-targets-and-kl", device)
    # the attached teacher received gradients; after the fix it has none
    assert all(g is not None and g.abs().sum() > 0 for g in run["teacher_grads"])
    assert all(p.grad is None for p in run["teacher"].parameters())
    assert not run["target"].requires_grad
    # the student's gradient does not depend on detaching the target
    torch.testing.assert_close(run["student"][0].weight.grad, run["student_grad_attached"])
    # detaching also keeps the teacher's activations out of the graph
    assert 0 < run["saved_detached"].nbytes < run["saved_attached"].nbytes
    # MSELoss: the target's gradient is the negative of the input's
    assert torch.equal(run["goal"].grad, -run["prediction"].grad)
    assert run["soft_target"].grad.abs().sum() > 0
    assert "not differentiable with respect to argument 'target'" in run.stdout
    # KLDivLoss reductions
    torch.testing.assert_close(run["kl_batchmean"], run["kl_by_hand"])
    torch.testing.assert_close(run["kl_mean"], run["kl_batchmean"] / 5)
    torch.testing.assert_close(run["kl_log_target"], run["kl_batchmean"])
    assert "UserWarning: reduction: 'mean'" in run.stdout
    assert run["kl_wrong"] < 0 < run["kl_batchmean"]
