"""TP102 and --fix: ``# fix`` marks each call that --fix gives training=self.training, ``# no
fix`` each call it leaves to its author (the message says what to pass)."""

import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = F.dropout(self.fc(x))  # fix
        h = F.dropout(h, self.p)  # fix
        h = F.dropout(h, p=self.p, inplace=False)  # fix
        h = F.dropout((h))  # fix
        label = "σ(x)"; h = F.dropout(h, 0.1)  # fix
        h = F.dropout(h, 0.2)  # noqa: TP102
        h = F.dropout(
            h,
            0.3,
        )  # fix
        h = F.dropout(h, 0.4  # the rate
        )  # fix
        h = F.dropout2d(h.unsqueeze(0), 0.1).squeeze(0)  # fix

        def inner(y):
            return F.dropout(y)  # no fix

        return inner(h), label

    @staticmethod
    def noise(x):
        return F.dropout(x)  # no fix

    def training_step(self, batch):
        return F.dropout(batch)  # not reported: runs in training only


class Deeper(Net):
    def forward(self, x):
        return F.dropout(super().forward(x)[0])  # fix


class NotAModule:
    def forward(self, x):
        return F.dropout(x)  # no fix


def encode(x):
    return F.dropout(x, 0.5)  # no fix
