"""TP101 negative: functions, modules and containers that do not give a softmax to the loss."""

import torch
import torch.nn.functional as F
from torch import nn


def log_probabilities(x):
    return F.log_softmax(x, dim=1)


def probabilities(x):
    return F.softmax(x, dim=1)


def sometimes_softmax(x, raw):
    if raw:
        return x
    return F.softmax(x, dim=1)


def generator_of_softmax(xs):
    for x in xs:
        yield F.softmax(x, dim=1)
    return F.softmax(xs[0], dim=1)


def losses(x, y):
    a = F.nll_loss(log_probabilities(x), y)
    b = F.nll_loss(probabilities(x).log(), y)  # log of the softmax: log-probabilities
    c = F.nll_loss(torch.log(probabilities(x)), y)
    d = F.cross_entropy(sometimes_softmax(x, True), y)  # not every return is a softmax
    e = F.kl_div(log_probabilities(x), probabilities(x), reduction="batchmean")
    f = F.cross_entropy(x, probabilities(x))  # soft targets are probabilities
    return a + b + c + d + e + f


class LogNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1))
        self.middle = nn.Sequential(nn.Softmax(dim=1), nn.Linear(3, 3))  # softmax not last

    def forward(self, x):
        return self.middle(self.layers(x))

    def predict(self, x):
        return F.softmax(self.forward(x), dim=1)  # probabilities for the user, not a loss


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=-1)


def reinforce(states, actions, returns):
    policy = Policy()
    probs = policy(states)
    log_probs = probs.gather(1, actions).log()
    return -(log_probs * returns).mean()


def logits_model(x, y):
    model = LogNet()
    return F.nll_loss(model(x), y)


def unpacked(model, x, y):
    head = nn.Sequential(nn.Linear(4, 3), nn.Softmax(1))
    probs, logits = head(x), model(x)
    first, *rest = (head(x), logits)
    total = F.cross_entropy(logits, y) + F.cross_entropy(rest[0], y)  # rest[0] is logits
    return total + probs.sum() + first.sum()
