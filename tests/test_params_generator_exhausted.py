"""Values explained on the "params-generator-exhausted" page, and generators of parameters."""

from __future__ import annotations

import types
import warnings

import pytest
import torch
from torch import nn

from .conftest import run_example


def test_params_generator_exhausted(device):
    run = run_example("params-generator-exhausted", device)
    # clipping with an exhausted generator clips nothing
    assert run["after"] > 10
    assert run["remaining"] == [] and len(run["fresh"]) == 4
    # a two-pass function computes the norm and scales nothing
    assert run["after_own"] > 10
    # a list works
    assert run["returned"].item() > 10
    assert run["after_fixed"] == pytest.approx(1.0, abs=1e-3)


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


def test_static_checker_flags_the_wrong_code_and_not_its_fix():
    static = run_example("params-generator-exhausted", "cpu")["static"]
    assert [finding.rule for finding in static["wrong"]] == ["TP109"]
    assert static["fixed"] == []
