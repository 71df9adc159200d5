"""Values explained on the "state-dict-prefix" page, read from the example's own namespace."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from .conftest import run_example

PLAIN_KEYS = ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_state_dict_prefix(device):
    run = run_example("state-dict-prefix", device)
    # DataParallel's state dict: every key gains "module.", and a strict load refuses it
    assert list(run["state"]) == PLAIN_KEYS  # stripped in place by the fix
    assert 'Unexpected key(s) in state_dict: "module.0.weight"' in run.stdout
    # strict=False: every key missing and unexpected, the weights untouched, accuracy poor
    result = run["result"]
    assert result.missing_keys == PLAIN_KEYS
    assert result.unexpected_keys == [f"module.{key}" for key in PLAIN_KEYS]
    assert run["untouched"]
    assert run["trained_accuracy"] > 0.9 and run["evaluated_accuracy"] < 0.6
    # the wrappers hold the model as a submodule and share its parameters
    assert run["parallel"].module is run["trained"]
    assert run["compiled"]._orig_mod is run["trained"]
    assert list(run["compiled_state"]) == PLAIN_KEYS  # after stripping "_orig_mod."
    assert "OptimizedModule keys: ['_orig_mod.0.weight'" in run.stdout
    # the fixes: the inner module's state dict, or the stripped one, load strictly
    assert list(run["plain_state"]) == PLAIN_KEYS
    assert run["restored_accuracy"] == run["trained_accuracy"]
    for name in ("restored", "stripped"):
        for key, value in run[name].state_dict().items():
            assert torch.equal(value, run["trained"].state_dict()[key])
    # a deliberate partial load: only the new head is missing
    assert run["partial"].missing_keys == ["2.weight", "2.bias"]
    assert run["partial"].unexpected_keys == []


def test_consume_prefix_touches_only_prefixed_keys():
    state = OrderedDict([("module.a", torch.zeros(1)), ("b", torch.ones(1))])
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert sorted(state) == ["a", "b"]  # renamed keys move to the end


def test_nested_wrappers_stack_their_prefixes():
    model = nn.Linear(2, 2)
    keys = list(nn.DataParallel(nn.DataParallel(model)).state_dict())
    assert keys == ["module.module.weight", "module.module.bias"]
