"""The identity of parameters, outside the "params-not-in-optimizer" page: another dtype and
device, and a replaced layer."""

from __future__ import annotations

import torch
from torch import nn


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
