"""TP101 and TP102 positive: names from a star import of torch.nn.functional."""

from torch.nn.functional import *


def star(logits, y):
    h = dropout(logits, 0.1)  # expect: TP102
    return cross_entropy(softmax(h, dim=1), y)  # expect: TP101


def star_negative(logits, y):
    return nll_loss(log_softmax(logits, dim=1), y) + dropout(logits, training=False).sum()
