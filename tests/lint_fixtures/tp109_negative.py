"""TP109 negative: a list of parameters, a fresh call at each use, or one use."""

import torch
from torch import nn


def setup(model, clip):
    params = list(model.parameters())  # the fix: a list
    optimizer = torch.optim.SGD(params, lr=0.1)
    nn.utils.clip_grad_norm_(params, 1.0)
    fresh = model.parameters()
    torch.optim.SGD(model.parameters(), lr=0.1)  # a fresh generator at each use
    if clip:
        nn.utils.clip_grad_norm_(fresh, 1.0)
    else:
        print(sum(p.numel() for p in fresh))  # the other arm of the same if
    return optimizer


def converted(model):
    params = model.parameters()
    params = list(params)  # assigned twice: the variable now holds a list
    return torch.optim.SGD(params, lr=0.1), len(params)


def once_in_a_for(model, batches):
    params = model.parameters()
    for p in params:  # the iterable of a for is read once
        p.requires_grad_(False)
    for x in batches:
        model(x)


def closure_reads(model):
    params = model.parameters()

    def later():
        return list(params)  # in a nested function: not judged

    return later
