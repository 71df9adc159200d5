"""Values explained on the "gradient-accumulation" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example

TOL = {"rtol": 1e-5, "atol": 1e-6}


def test_gradient_accumulation(device):
    run = run_example("gradient-accumulation", device)
    k, full = run["k"], run["full"]
    assert k == 4 and len(run["micro_batches"]) == k
    assert torch.count_nonzero(full) > 0
    # without dividing by k the accumulated gradient is k times the full-batch gradient
    assert torch.allclose(run["naive"], k * full, **TOL)
    assert not torch.allclose(run["naive"], full, **TOL)
    # dividing each micro-batch loss by k reproduces it (within float32 rounding)
    assert torch.allclose(run["accumulated"], full, **TOL)
    assert run["max_diff"] < 1e-5 * full.abs().max().item()
    # and one step after accumulating moves the weights like one full-batch step
    assert torch.allclose(run["weights_a"], run["weights_b"], **TOL)
    # unequal micro-batches: weight by share of samples, not by the number of micro-batches
    assert not torch.allclose(run["by_count"], full, **TOL)
    assert torch.allclose(run["by_share"], full, **TOL)
    # zero_grad inside the loop keeps exactly the last micro-batch's gradient
    assert torch.equal(run["cleared_inside"], run["last_alone"])
    assert not torch.allclose(run["cleared_inside"], full, **TOL)
    # one loss backwarded k times (retain_graph=True): k times one batch's gradient; divided by k,
    # one batch's gradient; neither is the 16-sample gradient nor accumulation over k micro-batches
    one, k_times, divided = run["one_batch"], run["same_loss_k_times"], run["same_loss_divided"]
    assert torch.allclose(k_times, k * one, **TOL)
    assert abs(run["ratio"] - k) < 1e-4
    assert torch.allclose(divided, one, **TOL)
    assert not torch.allclose(divided, full, **TOL)
    assert not torch.allclose(divided, run["accumulated"], **TOL)
    assert not torch.allclose(k_times, run["naive"], **TOL)
    assert run["relative_difference"](divided, full) > 0.5
    assert run["relative_difference"](run["accumulated"], full) < 1e-5
    # BatchNorm: accumulated micro-batch gradients differ from the full batch; running stats
    # were updated k times
    assert not torch.allclose(run["bn_accumulated"], run["bn_full"], **TOL)
    assert run["bn_relative"] > 0.01
    assert run["bn_a"].num_batches_tracked.item() == 1
    assert run["bn_b"].num_batches_tracked.item() == k
    # LayerNorm does not mix samples: accumulation matches again
    assert run["ln_max_diff"] < 1e-5
    assert "identical to the last micro-batch's gradient alone: True" in run.stdout
