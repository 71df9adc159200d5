"""Values explained on the "token-mean-accumulation" page, read from the example's namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_token_mean_accumulation(device):
    run = run_example("token-mean-accumulation", device)
    assert run["real_tokens"] == [5, 19] and run["total"] == 24
    # the mean of the two micro-batch means is neither the token mean nor its gradient
    assert abs(sum(run["micro_losses"]) - run["full_loss"].item()) > 0.05
    assert run["relative"] > 0.05
    # a token of the short micro-batch weighs 19 / 5 times a token of the long one
    assert abs(run["weights"][0] / run["weights"][1] - 19 / 5) < 1e-12
    sums, real = run["sums"], run["real_tokens"]
    assert sums[0] / real[0] > sums[1] / real[1]
    # the fix: sums divided by the batch's number of real tokens give the whole batch's gradient
    assert torch.allclose(run["fixed"], run["full"], rtol=1e-5, atol=1e-6)
    # an all-padding micro-batch: mean 0 / 0, sum 0
    assert torch.isnan(run["empty_mean"]) and run["empty_sum"].item() == 0
    # .mean() over every position divides by 40, not 24
    assert run["per_position"].numel() == 40
    torch.testing.assert_close(run["per_position"].mean() * 40 / 24, run["full_loss"])
