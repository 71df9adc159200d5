"""What the "transformer-batch-first" page cannot check itself: the classes it names but does not
run (the decoder layer, the whole ``nn.Transformer``) mix the samples of a batch-first batch too,
and ``batch_first=True`` keeps them apart."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

N, S, E = 3, 5, 8


def _build(name: str, batch_first: bool) -> nn.Module:
    kwargs = {"dropout": 0.0, "batch_first": batch_first}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the nested-tensor warning of sequence-first encoders
        if name == "decoder layer":
            layer = nn.TransformerDecoderLayer(E, 2, dim_feedforward=16, **kwargs)
            return _SelfDecoding(layer)
        transformer = nn.Transformer(E, 2, 1, 1, dim_feedforward=16, **kwargs)
        return _SelfDecoding(transformer)


class _SelfDecoding(nn.Module):
    """The batch as both the source and the target sequences."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x, x)


def _samples_changed(model: nn.Module) -> list[int]:
    torch.manual_seed(0)
    x = torch.randn(N, S, E)  # batch first
    other = x.clone()
    other[1] += 1.0
    with torch.no_grad():
        difference = (model(other) - model(x)).abs().flatten(1).amax(dim=1)
    return [i for i, d in enumerate(difference.tolist()) if d > 1e-5]


@pytest.mark.parametrize("name", ["decoder layer", "transformer"])
def test_the_default_mixes_the_samples_and_batch_first_keeps_them_apart(name):
    torch.manual_seed(0)
    assert _samples_changed(_build(name, batch_first=False)) == list(range(N))
    torch.manual_seed(0)
    assert _samples_changed(_build(name, batch_first=True)) == [1]
