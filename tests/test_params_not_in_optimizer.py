"""Values explained on the "params-not-in-optimizer" page, and the identity of parameters."""

from __future__ import annotations

import torch
from torch import nn

from .conftest import run_example


def test_params_not_in_optimizer(device):
    run = run_example("params-not-in-optimizer", device)
    # a head replaced after the optimizer was built never moves, though it has gradients
    assert run["changed"] == ["body.0.weight", "body.0.bias"]
    assert run["head_grad_norm"] > 0
    assert run["missing"] == ["head.weight", "head.bias"]
    assert run["held_count"] == 4
    # model.to() after the optimizer keeps the parameter objects, and training works
    assert run["same_objects"]
    assert len(run["moved_changed"]) == 4
    assert run["overwrite"] is False
    # but state created before a conversion stays behind
    assert run["state_dtype"] == torch.float32
    # add_param_group gives the optimizer the new head
    assert run["fixed_changed"] == ["body.0.weight", "body.0.bias", "head.weight", "head.bias"]


def test_module_to_keeps_parameter_objects_and_tensor_to_does_not(device):
    layer = nn.Linear(2, 2)
    weight = layer.weight
    layer.to(device, torch.float64)
    assert layer.weight is weight and weight.dtype == torch.float64
    converted = weight.to(torch.float32)
    assert converted is not weight and not isinstance(converted, nn.Parameter)


def test_a_replaced_layer_is_not_in_the_optimizer():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model[1] = nn.Linear(2, 1)
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert id(model[1].weight) not in held and id(model[0].weight) in held
