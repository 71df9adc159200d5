"""TP109 positive: a parameter generator kept in a variable and read a second time."""

import torch
from torch import nn


def setup(model):
    params = model.parameters()
    optimizer = torch.optim.SGD(params, lr=0.1)
    nn.utils.clip_grad_norm_(params, 1.0)  # expect: TP109
    return optimizer


def trainable(model):
    params = filter(lambda p: p.requires_grad, model.parameters())
    print(sum(p.numel() for p in params))
    return torch.optim.Adam(params)  # expect: TP109


def in_a_loop(model, batches):
    named = model.named_parameters()
    for x in batches:
        model(x).sum().backward()
        for name, p in named:  # expect: TP109
            print(name, p.grad.norm())


def generator_expression(model):
    decay = (p for p in model.parameters() if p.ndim > 1)
    count = len(list(decay))
    return count, torch.optim.AdamW(decay)  # expect: TP109
