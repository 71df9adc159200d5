"""Generators of parameters, outside the "params-generator-exhausted" page: another model,
another optimizer, and the gradients left unchanged by a clip of an empty generator."""

from __future__ import annotations

import types
import warnings

import pytest
import torch
from torch import nn


def test_parameters_is_a_one_shot_generator():
    model = nn.Linear(2, 2)
    params = model.parameters()
    assert isinstance(params, types.GeneratorType)
    assert len(list(params)) == 2 and list(params) == []
    with pytest.raises(ValueError, match="empty parameter list"):
        torch.optim.Adam(params)


def test_clip_grad_norm_warns_on_an_empty_generator_and_clips_nothing():
    model = nn.Linear(2, 1)
    model(torch.ones(1, 2)).mul(100).sum().backward()
    params = model.parameters()
    list(params)
    before = model.weight.grad.clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = nn.utils.clip_grad_norm_(params, max_norm=1.0)
    assert total.item() == 0
    assert any("empty generator" in str(w.message) for w in caught)
    assert torch.equal(model.weight.grad, before)
