"""TP101 positive: a softmax as the last layer of an nn.Sequential."""

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn


def head_in_a_function(x, y):
    head = nn.Sequential(nn.Linear(128, 10), nn.Softmax(dim=1))
    loss = nn.CrossEntropyLoss()(head(x), y)  # expect: TP101
    return loss + F.nll_loss(head(x), y)  # expect: TP101


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(128, 64)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=-1))
        self.criterion = nn.CrossEntropyLoss()

    def training_loss(self, x, y):
        scores = self.head(self.body(x))
        return self.criterion(scores, y)  # expect: TP101


def ordered_dict(x, y):
    net = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 3)), ("softmax", nn.Softmax(1))]))
    return F.cross_entropy(net(x), y)  # expect: TP101


def nested_and_2d(x, y):
    softmax = nn.Softmax2d()
    seg = nn.Sequential(nn.Conv2d(3, 5, 1), softmax)
    return torch.nn.functional.cross_entropy(seg(x), y)  # expect: TP101
