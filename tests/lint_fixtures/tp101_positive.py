"""TP101 positive: a softmax output passed to cross-entropy or NLL, through every kind of alias."""

import torch
import torch as T
import torch.nn.functional as F
from torch import nn
from torch.nn import functional as Fn
from torch.nn.functional import cross_entropy as ce
from torch.nn.functional import nll_loss, softmax


def direct(logits, y):
    loss = F.cross_entropy(F.softmax(logits, dim=1), y)  # expect: TP101
    loss = F.nll_loss(torch.softmax(logits, 1), y)  # expect: TP101
    loss = Fn.cross_entropy(logits.softmax(dim=1), y)  # expect: TP101
    loss = ce(softmax(logits, 1), y)  # expect: TP101
    loss = nll_loss(T.nn.functional.softmax(logits, 1), y)  # expect: TP101
    loss = T.nn.functional.cross_entropy(T.softmax(logits, 1), y)  # expect: TP101
    loss = F.cross_entropy(torch.special.softmax(logits, 1), y)  # expect: TP101
    loss = F.cross_entropy(torch.Tensor.softmax(logits, 1), y)  # expect: TP101
    loss = F.cross_entropy(input=F.softmax(logits, 1), target=y)  # expect: TP101
    loss = F.cross_entropy(target=y, input=logits.softmax(1))  # expect: TP101
    return loss


def through_a_variable(model, x, y):
    probs = model(x).softmax(dim=-1)
    return F.cross_entropy(probs, y)  # expect: TP101


def through_two_names(logits, y):
    probs = F.softmax(logits, dim=1)
    p = probs
    return F.nll_loss(p, y)  # expect: TP101


def through_a_walrus(logits, y):
    if (probs := F.softmax(logits, 1)) is not None:
        return F.cross_entropy(probs, y)  # expect: TP101


def conditional(logits, y, softmax_first):
    return F.cross_entropy(logits.softmax(1) if softmax_first else logits, y)  # expect: TP101


def loss_modules(logits, y):
    criterion = nn.CrossEntropyLoss()
    probs = nn.Softmax(dim=1)(logits)
    a = criterion(probs, y)  # expect: TP101
    b = nn.NLLLoss()(F.softmax(logits, 1), y)  # expect: TP101
    c = torch.nn.CrossEntropyLoss(reduction="sum")(logits.softmax(1), y)  # expect: TP101
    to_probabilities = nn.Softmax(dim=1)
    d = criterion(to_probabilities(logits), y)  # expect: TP101
    loss_fn = F.cross_entropy
    e = loss_fn(probs, y)  # expect: TP101
    return a + b + c + d + e


module_criterion = nn.NLLLoss()


def module_level_criterion(logits, y):
    return module_criterion(F.softmax(logits, 1), y)  # expect: TP101


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 3)
        self.softmax = nn.Softmax(dim=1)
        self.criterion = nn.CrossEntropyLoss()

    def loss(self, x, y):
        return self.criterion(self.softmax(self.body(x)), y)  # expect: TP101

    def loss_in_a_closure(self, x, y):
        def inner():
            return self.criterion(F.softmax(self.body(x), 1), y)  # expect: TP101

        return inner()


class ClassBody:
    loss = module_criterion(torch.ones(2, 3).softmax(1), torch.zeros(2))  # expect: TP101


def other_rule_noqa(logits, y):
    return F.cross_entropy(F.softmax(logits, 1), y)  # noqa: TP102  # expect: TP101


module_probs = F.softmax(torch.randn(4, 3), dim=1)
module_loss = F.cross_entropy(module_probs, torch.tensor([0, 1, 2, 0]))  # expect: TP101


def softmax_on_one_path(model, x, y, calibrated):
    # both branches flow on: a softmax on some path is reported
    out = model(x)
    if calibrated:
        out = out.softmax(dim=1)
    return F.cross_entropy(out, y)  # expect: TP101


def softmax_after_a_returning_branch(model, x, y):
    out = model(x)
    if y is None:
        out = out.log_softmax(1)
        return out
    else:
        out = out.softmax(1)
    return F.nll_loss(out, y)  # expect: TP101


def softmax_kept_by_the_other_branch(logits, y, raw):
    probs = F.softmax(logits, 1)
    if raw:
        probs = logits
    return F.cross_entropy(probs, y)  # expect: TP101


def criterion_agreed_by_both_branches(logits, y, weighted, w):
    if weighted:
        criterion = nn.CrossEntropyLoss(weight=w)
        scale = 1.0
    else:
        criterion = nn.CrossEntropyLoss()
        scale = 0.5
    return scale * criterion(F.softmax(logits, 1), y)  # expect: TP101
