"""Values explained on the "backward-step-zero-grad" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_backward_step_zero_grad(device):
    run = run_example("backward-step-zero-grad", device)
    names = ["conv1.weight", "conv2.weight", "fc.weight", "fc.bias"]
    # no gradient before backward; a second backward without clearing doubles every gradient
    assert all(g is None for g in run["grads_before_backward"].values())
    assert run["doubled"] == dict.fromkeys(names, True)
    # step() applied w <- w - lr * grad to every parameter, then zero_grad() set .grad to None
    assert run["changed"] == names
    assert all(g is None for g in run["grads_after_zero_grad"].values())
    assert run["loss_after"] > run["loss_before"]  # lr=1.0 overshoots on this network
    # the printed row of conv1.weight is a view: its grad_fn is today's SelectBackward0
    assert run["row_after"].grad_fn.name() == "SelectBackward0"
    assert "grad_fn=<SelectBackward0>" in run.stdout
    # every parameter 0.1, today's kernel: conv gradients vanish up to float rounding
    assert run["const_max"]["fc.weight"] > 1.0
    assert run["conv_to_fc"] < 1e-5
    torch.testing.assert_close(run["probs"], torch.full_like(run["probs"], 1 / 20))
    # the pre-PR-21672 CPU log_softmax: log-probabilities on the 2**-10 grid of the logits, and
    # the classic write-up's printed gradient and updated weight, to every printed digit
    assert run["spacing"] == 2**-10
    old_log_probs = run["old_log_probs"].detach()
    assert torch.equal(old_log_probs * 1024, (old_log_probs * 1024).round())
    assert 0.9995 < run["old_prob_sum"] < 0.9997
    torch.testing.assert_close(
        run["old_row_grad"], torch.tensor([-0.0782, -0.0842, -0.0782]), rtol=0, atol=5e-5
    )
    torch.testing.assert_close(
        run["old_row_after"].detach(), torch.tensor([0.1782, 0.1842, 0.1782]), rtol=0, atol=5e-5
    )
    assert run["today_to_old"] < 1e-4
    today = run["today_log_probs"]
    assert torch.equal(today, torch.nn.functional.log_softmax(torch.zeros_like(today), dim=1))
    # PyTorch >= 2.0: both zero_grad() default to set_to_none=True; editing .grad then raises
    assert run["set_to_none_defaults"] == {"Optimizer.zero_grad": True, "Module.zero_grad": True}
    assert "AttributeError: 'NoneType' object has no attribute 'zero_'" in run.stdout
    # a None gradient is skipped; a zero gradient still moves the weights with weight decay,
    # momentum and Adam, not with plain SGD
    moves = run["moves"]
    assert not any(moved for (_, set_to_none), moved in moves.items() if set_to_none)
    assert [name for (name, set_to_none), moved in moves.items() if moved] == [
        "SGD, weight_decay=0.1",
        "SGD, momentum=0.9",
        "Adam",
    ]
    # the correct loop: same gradient after clearing, loss falls with lr=0.01
    losses = run["losses"]
    assert losses[0] > losses[1] > losses[2]
    # model.zero_grad() vs optimizer.zero_grad() with an optimizer holding only fc
    assert run["left"][("fc only", "optimizer")] == ["conv1.weight", "conv2.weight"]
    assert run["left"][("fc only", "model")] == []
    assert run["left"][("all parameters", "optimizer")] == []
