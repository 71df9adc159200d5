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
    # every parameter the same constant: conv gradients vanish up to float rounding
    assert run["const_max"]["fc.weight"] > 0.1
    assert run["conv_to_fc"] < 1e-5
    torch.testing.assert_close(run["probs"], torch.full_like(run["probs"], 1 / 20))
    # only the convolutions constant, classifier random: clearly non-zero conv gradients
    assert run["mixed_conv_to_fc"] > 1e-3
    # PyTorch >= 2.0: zero_grad() sets None; editing it raises
    assert "AttributeError: 'NoneType' object has no attribute 'zero_'" in run.stdout
    # set_to_none=False lets momentum and Adam move the weights on a step without new gradients
    moves = run["moves"]
    assert not any(moved for (_, set_to_none), moved in moves.items() if set_to_none)
    assert [name for (name, set_to_none), moved in moves.items() if moved] == [
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
