"""Values explained on the "softmax-dim" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_softmax_dim(device):
    run = run_example("softmax-dim", device)
    # the legacy rule: dim 0 for 0-D, 1-D and 3-D inputs, dim 1 otherwise
    assert run["picked"] == {0: 0, 1: 0, 2: 1, 3: 0, 4: 1, 5: 1}
    assert "Implicit dimension choice for softmax has been deprecated" in run.stdout
    # the 3-D (batch, seq, classes) input is normalised over the batch, not the classes
    probs_implicit = run["probs_implicit"]
    torch.testing.assert_close(probs_implicit.sum(dim=0), torch.ones_like(probs_implicit[0]))
    assert not torch.allclose(probs_implicit.sum(dim=-1), torch.ones_like(probs_implicit[..., 0]))
    assert not torch.equal(run["predicted_implicit"], run["predicted_correct"])
    torch.testing.assert_close(run["probs_module"], probs_implicit)
    # torch.softmax and Tensor.softmax have no default dim
    assert run.stdout.count("TypeError: softmax()") == 2
    # with dim=-1 every row of classes sums to 1 and the predictions match the logits
    probs = run["probs"]
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones_like(probs[..., 0]))
    assert torch.equal(probs.argmax(dim=-1), run["predicted_correct"])
    torch.testing.assert_close(run["probs_columns"].sum(dim=0), torch.ones(2, device=device))
