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
    # the gradient reaching the logits shrinks with the extra softmax: not before the softmax's
    # Jacobian (the gradient at the probabilities is about as large) but through it, row by row
    # by at most its largest singular value, itself at most the row's largest probability
    assert run["grad_norm_softmax"] < run["grad_norm_logits"] / 3
    assert run["grad_norm_logits"] / 2 < run["grad_norm_probs"] < 2 * run["grad_norm_logits"]
    jacobian, probs = run["jacobian"], run["probs"]
    torch.testing.assert_close(
        run["grad_at_logits"], (jacobian @ probs.grad.unsqueeze(2)).squeeze(2)
    )
    assert (run["shrink_factor"] <= run["largest_singular_value"] * (1 + 1e-4)).all()
    assert (run["largest_singular_value"] <= run["largest_probability"] * (1 + 1e-4)).all()
    assert (run["largest_probability"] < 1).all()
    # target errors
    # class-index targets: int64 or uint8, float and int32 refused
    if device == "cuda":
        assert "NotImplementedError: " in run.stdout
        assert "for 'Float'" in run.stdout and "for 'Int'" in run.stdout
    else:
        assert "expected target dtype to be Long or Byte, but got Float" in run.stdout
        assert "expected target dtype to be Long or Byte, but got Int" in run.stdout
    torch.testing.assert_close(run["loss_byte"], run["loss_long"])
    assert "IndexError: Target 10 is out of bounds" in run.stdout
    # probability targets and label smoothing
    torch.testing.assert_close(run["loss_indices"], run["loss_one_hot"])
    torch.testing.assert_close(run["loss_smoothing"], run["loss_smoothed_target"])
    if device == "cuda":
        assert "device-side assert" in run["child"].stderr
    else:
        assert cuda_parts_reported(run.stdout) == 1
