"""TP104 positive (opt-in): edits through .data between a forward and its backward."""

import torch
from torch import nn


def training_step(model, optimizer, x, y, lr=0.1):
    out = model(x).sigmoid()
    out.data.zero_()  # expect: TP104
    out.data[0] = 1.0  # expect: TP104
    out.data += 1  # expect: TP104
    out.data[1:] *= 2  # expect: TP104
    out.data = torch.zeros_like(out)  # expect: TP104
    out.sum().backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)  # after the backward: the graph is gone


def the_page(a):
    out = a.sigmoid()
    c = out.data
    c.zero_()  # expect: TP104
    c[0] = 1.0  # expect: TP104
    c += 1  # expect: TP104
    out.sum().backward()


def clipping_between_forward_and_backward(model, criterion, x, y):
    loss = criterion(model(x), y)
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)  # expect: TP104
    loss.backward()


def under_no_grad(model, ema, x, decay=0.99):
    # no_grad is what replaces .data; .data under it still escapes the version counter
    loss = model(x).pow(2).mean()
    with torch.no_grad():
        for p, q in zip(ema.parameters(), model.parameters(), strict=True):
            p.data.mul_(decay).add_(q.detach(), alpha=1 - decay)  # expect: TP104
    torch.autograd.backward(loss)


def clamp_then_loss(model, state, action, target):
    # RL-Adventure's categorical DQN: the clamp is invisible to the gradient of log()
    dist = model(state).gather(1, action)
    dist.data.clamp_(0.01, 0.99)  # expect: TP104
    loss = -(target * dist.log()).sum(1)
    loss = loss.mean()
    loss.backward()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def step(self, x):
        outs = [self.fc(x)]
        self.fc.weight.data.clamp_(-1, 1)  # expect: TP104
        outs[0].mean().backward()


def swap(a, b):
    total = (a * b).sum()
    a.data, b.data = b.data, a.data  # expect: TP104, TP104
    total.backward()


def wrong_noqa(x):
    y = x.exp()
    x.data.zero_()  # noqa: TP101  # expect: TP104
    y.sum().backward()
