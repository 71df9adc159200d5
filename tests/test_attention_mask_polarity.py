"""Values explained on the "attention-mask-polarity" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_attention_mask_polarity(device):
    run = run_example("attention-mask-polarity", device)
    # the keep mask as MultiheadAttention's key_padding_mask: padding only, NaN without padding
    assert torch.count_nonzero(run["weights_wrong"][1][:, :3]) == 0
    assert run["out_wrong"][0].isnan().all()
    assert run["padding_leaks"]
    # SDPA(keep) is MultiheadAttention(~keep); float masks mean the same in both
    assert run["sdpa_keep_is_mha_not_keep"]
    assert torch.count_nonzero(run["weights_right"][1][:, 3:]) == 0
    assert run["float_masks_agree"]
    # the inverted mask ignores the padding
    assert run["padding_ignored"] and not run["out_right"].isnan().any()
    # causal masks: triu for MultiheadAttention, ~triu or is_causal for SDPA
    assert run["causal_agree"] and run["anti_causal_differs"]
