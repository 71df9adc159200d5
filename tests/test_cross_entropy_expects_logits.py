"""Values explained on the "cross-entropy-expects-logits" page, from the example's namespace."""

from __future__ import annotations

import math

import torch

from .conftest import cuda_parts_reported, run_example


def test_cross_entropy_expects_logits(device):
    run = run_example("cross-entropy-expects-logits", device)
    # the same classifier trained both ways: softmax first ends far higher and less accurate
    assert len(run["losses_logits"]) == len(run["losses_softmax"]) == 100
    assert run["losses_softmax"][-1] > 5 * run["losses_logits"][-1]
    assert run["accuracy_softmax"] < run["accuracy_logits"]
    # the figure with both curves was drawn
    assert len(run["ax"].get_lines()) == 3
    # CrossEntropyLoss == NLLLoss(log_softmax)
    torch.testing.assert_close(run["ce"], run["nll"])
    # the floor -log(e / (e + C - 1)) for C = 10, reached by a perfect prediction, never crossed
    floor = -math.log(math.e / (math.e + 9))
    assert math.isclose(run["floor"], floor, rel_tol=1e-12)
    assert math.isclose(run["loss_perfect"].item(), floor, rel_tol=1e-5)
    assert min(run["losses_softmax"]) >= floor
    assert min(run["losses_logits"]) < floor
    # the gradient reaching the logits shrinks with the extra softmax
    assert run["grad_norm_softmax"] < run["grad_norm_logits"] / 3
    # target errors
    if device == "cuda":
        assert "NotImplementedError: " in run.stdout and "for 'Float'" in run.stdout
    else:
        assert "RuntimeError: expected target dtype" in run.stdout or "scalar type" in run.stdout
    assert "IndexError: Target 10 is out of bounds" in run.stdout
    # probability targets and label smoothing
    torch.testing.assert_close(run["loss_indices"], run["loss_one_hot"])
    torch.testing.assert_close(run["loss_smoothing"], run["loss_smoothed_target"])
    if device == "cuda":
        assert "device-side assert" in run["child"].stderr
    else:
        assert cuda_parts_reported(run.stdout) == 1
