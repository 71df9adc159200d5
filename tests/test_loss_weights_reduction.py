"""Values explained on the "loss-weights-reduction" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_loss_weights_reduction(device):
    run = run_example("loss-weights-reduction", device)
    # the weighted mean divides by the sum of the targets' weights (16), not by 6
    assert run["sample_weights"].sum().item() == 16
    torch.testing.assert_close(run["loss_mean"], run["by_hand"])
    assert run["loss_mean"] < run["per_sample"].mean() / 2
    # on a batch of one sample the weights change nothing
    torch.testing.assert_close(run["grad_weighted"], run["one_logit"].grad)
    # ignore_index leaves numerator and denominator; a batch of ignored targets is 0 / 0
    assert run["per_sample_ignored"][1] == 0
    kept_weights = run["class_weights"][run["ignored"][run["kept"]]].sum()
    torch.testing.assert_close(run["loss_ignored"], run["per_sample_ignored"].sum() / kept_weights)
    assert run["per_sample_ignored"].mean() > run["loss_ignored"]
    assert torch.isnan(run["all_ignored"])
    # averaging weighted batch losses is not the loss of all samples; unweighted it is
    assert abs(run["mean_of_batches"] - run["whole"]) > 0.01
    torch.testing.assert_close(torch.stack(run["plain_batches"]).mean(), run["plain_whole"])
    # accumulation: mean / k is off; sum / total weight is the whole batch's gradient
    assert run["relative"] > 0.05
    assert torch.allclose(run["by_total_weight"], run["full"], rtol=1e-5, atol=1e-6)
    # probability targets and BCEWithLogitsLoss divide by the number of elements
    torch.testing.assert_close(run["loss_one_hot"], run["per_sample"].sum() / 6)
    assert abs(run["loss_one_hot"] - run["loss_indices"]) > 0.5
    torch.testing.assert_close(
        run["loss_bce"], (run["elementwise"] * run["element_weights"]).mean()
    )
