"""What the "state-dict-prefix" page does not assert itself: the exact keys, messages and weights,
and prefixes outside the page."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from .conftest import run_example

PLAIN_KEYS = ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_state_dict_prefix(device):
    run = run_example("state-dict-prefix", device)
    # the strict load also names the unexpected "module." keys (the page matches the missing ones)
    assert 'Unexpected key(s) in state_dict: "module.0.weight"' in run.stdout
    # strict=False: every key missing and unexpected, accuracy poor
    result = run["result"]
    assert result.missing_keys == PLAIN_KEYS
    assert result.unexpected_keys == [f"module.{key}" for key in PLAIN_KEYS]
    assert run["trained_accuracy"] > 0.9 and run["evaluated_accuracy"] < 0.6
    # the type of torch.compile's wrapper, as the page prints it
    assert "OptimizedModule keys: ['_orig_mod.0.weight'" in run.stdout
    # the fixes load every weight (the page compares accuracies)
    for name in ("restored", "stripped"):
        for key, value in run[name].state_dict().items():
            assert torch.equal(value, run["trained"].state_dict()[key])
    # a deliberate partial load: only the new head is missing
    assert run["partial"].missing_keys == ["2.weight", "2.bias"]


def test_consume_prefix_touches_only_prefixed_keys():
    state = OrderedDict([("module.a", torch.zeros(1)), ("b", torch.ones(1))])
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert sorted(state) == ["a", "b"]  # renamed keys move to the end


def test_nested_wrappers_stack_their_prefixes():
    model = nn.Linear(2, 2)
    keys = list(nn.DataParallel(nn.DataParallel(model)).state_dict())
    assert keys == ["module.module.weight", "module.module.bias"]
