"""TP104 negative (opt-in): .data in initialisation code, reads of .data, and edits without it."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.fc.weight.data.normal_(0, 0.02)
        self.fc.bias.data.zero_()

    def reset_parameters(self):
        self.fc.weight.data.uniform_(-0.1, 0.1)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(0.0, 0.02)
            module.bias.data[:] = 0

    def forward(self, x):
        return self.fc(x)


def init_weights(module):
    def fill(tensor):
        tensor.data.fill_(0.5)  # nested in an initialisation function

    fill(module.weight)


def initialize(model):
    for p in model.parameters():
        p.data = torch.zeros_like(p)


def the_fix(model, optimizer, x, lr=0.1):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)
    scratch = model(x).detach().clone()
    scratch.zero_()
    return scratch


def reading_data(x):
    values = x.data.numpy()  # a read, not an edit (detach() is better, but not this rule)
    total = x.data.sum()
    size = x.data.__len__()  # a dunder is not an in-place method
    return values, total, size


def gradients(model):
    for p in model.parameters():
        p.grad.data.zero_()  # a gradient is not saved for backward


class Buffer:
    def __init__(self):
        self.data = []

    def load(self, items):
        self.data = list(items)  # the class's own attribute, not a tensor's .data
        self.data[0] = None


def suppressed(x):
    x.data.zero_()  # noqa: TP104
