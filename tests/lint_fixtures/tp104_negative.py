"""TP104 negative (opt-in): .data edits while no graph that could hold the tensor is alive."""

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

    def forward(self, x):
        self.fc.weight.data.clamp_(-1, 1)  # no backward here: the edit comes before the forward
        return self.fc(x)


def manual_sgd_after_backward(model, x, y, lr=0.1):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)


def wgan_clipping(critic, optimizer, loader, clip=0.01):
    for x in loader:
        optimizer.zero_grad()
        loss = -critic(x).mean()
        loss.backward()
        optimizer.step()
        for p in critic.parameters():
            p.data.clamp_(-clip, clip)
        loss = -critic(x).mean()  # a new forward, after the edit
        loss.backward()


def soft_update(net, target, tau=0.005):
    for p, q in zip(target.parameters(), net.parameters(), strict=True):
        p.data.copy_(p.data * (1.0 - tau) + q.data * tau)


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
    total.backward()
    return values, total, size


def gradients(model, x):
    loss = model(x).sum()
    for p in model.parameters():
        p.grad.data.zero_()  # a gradient is not saved for backward
    loss.backward()


def not_an_alias(model, x):
    loss = model(x).sum()
    buffer = torch.zeros(3)
    buffer.zero_()  # not taken from .data
    buffer += 1
    loss.backward()


def alias_rebound(model, x):
    loss = model(x).sum()
    c = x.data
    c = c.clone()
    c.zero_()  # a copy now
    loss.backward()


def edit_before_the_forward(model, x):
    weight = model.weight  # a parameter: the edit comes before any graph uses it
    weight.data.clamp_(-1, 1)
    noise = torch.randn(3)  # a new tensor, in no graph
    noise.data.mul_(0.1)
    loss = (model(x + noise) * weight).sum()
    loss.backward()


def initialise_a_module_then_train(loader):
    net = nn.Sequential(nn.Linear(2, 1))  # a module, not a tensor of a graph
    net[0].weight.data.normal_(0, 0.01)
    net[0].bias.data.fill_(0)
    for x, y in loader:
        loss = (net(x) - y).pow(2).mean()
        loss.backward()


class Buffer:
    def __init__(self):
        self.data = []

    def load(self, items, loss):
        self.data = list(items)  # the class's own attribute, not a tensor's .data
        self.data[0] = None
        loss.backward()


def suppressed(x):
    y = x.exp()
    x.data.zero_()  # noqa: TP104
    y.sum().backward()
