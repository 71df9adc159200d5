"""TP104 positive (opt-in): edits through .data outside initialisation code."""

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
        p.data.add_(p.grad, alpha=-lr)  # expect: TP104
        p.data.sub_(lr * p.grad).clamp_(-1, 1)  # expect: TP104


def under_no_grad(model, ema, decay=0.99):
    # no_grad is what replaces .data; .data under it still escapes the version counter
    with torch.no_grad():
        for p, q in zip(ema.parameters(), model.parameters(), strict=True):
            p.data.mul_(decay).add_(q.detach(), alpha=1 - decay)  # expect: TP104


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        self.fc.weight.data.clamp_(-1, 1)  # expect: TP104
        return self.fc(x)


def swap(a, b):
    a.data, b.data = b.data, a.data  # expect: TP104, TP104


def wrong_noqa(x):
    x.data.zero_()  # noqa: TP101  # expect: TP104
