"""Values explained on the "embedding-padding-idx" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_embedding_padding_idx(device):
    run = run_example("embedding-padding-idx", device)
    # a custom init leaves a non-zero padding row: the prediction depends on the padding amount
    assert not torch.allclose(run["logits_4"], run["logits_8"])
    # the padding row has a zero gradient: training never changes it
    assert run["pad_row_unchanged"] and run["token_row_changed"]
    assert torch.count_nonzero(run["fresh"].weight.grad[0]) == 0
    # from_pretrained keeps the given padding row; AdamW's decay still shrinks it
    assert torch.equal(run["loaded_pad_row"], run["pretrained"][0])
    torch.testing.assert_close(
        run["decayed"].weight[0].detach().cpu(), torch.full((4,), 0.99), rtol=0, atol=1e-6
    )
    # the fixes: a re-zeroed row, or an explicit mask, make the padding amount irrelevant
    torch.testing.assert_close(run["fixed_4"], run["fixed_8"])
    torch.testing.assert_close(run["masked_4"], run["masked_8"])
