"""TP101 negative: correct uses of softmax, log_softmax and the losses."""

import torch
import torch.nn.functional as F
from scipy.special import softmax as scipy_softmax
from torch import nn


def logits_to_cross_entropy(logits, y):
    return F.cross_entropy(logits, y)


def log_softmax_to_nll(logits, y):
    a = F.nll_loss(F.log_softmax(logits, dim=1), y)
    log_probs = logits.log_softmax(1)
    b = nn.NLLLoss()(log_probs, y)
    c = F.nll_loss(torch.log(F.softmax(logits, 1)), y)  # not a softmax output any more
    return a + b + c


def softmax_for_something_else(logits, y):
    probs = F.softmax(logits, dim=1)
    predictions = probs.argmax(dim=1)
    confidence = probs.max(dim=1).values
    loss = F.cross_entropy(logits, y)
    return loss, predictions, confidence


def softmax_as_the_target(student, teacher):
    soft_targets = F.softmax(teacher / 2.0, dim=1)
    a = F.cross_entropy(student, soft_targets)
    b = F.cross_entropy(student, target=F.softmax(teacher, 1))
    c = F.kl_div(F.log_softmax(student, 1), F.softmax(teacher, 1), reduction="batchmean")
    return a + b + c


def reassigned_before_the_call(logits, y):
    probs = F.softmax(logits, dim=1)
    probs = torch.log(probs)
    return F.nll_loss(probs, y)


def other_losses(logits, y):
    probs = F.softmax(logits, dim=1)
    return F.mse_loss(probs, F.one_hot(y, 3).float()) + F.binary_cross_entropy(probs, y)


def not_torch(logits, y, criterion):
    probs = scipy_softmax(logits, axis=1)
    return criterion(probs, y)  # criterion is a parameter: unknown


def reassigned_criterion(logits, y, use_mse):
    criterion = nn.CrossEntropyLoss()
    if use_mse:
        criterion = nn.MSELoss()
    return criterion(F.softmax(logits, 1), y)  # the latest assignment above is not CE or NLL


criterion = nn.CrossEntropyLoss()
criterion = lambda probs, y: (probs - y).abs().mean()  # noqa: E731


def module_name_assigned_twice(logits, y):
    return criterion(F.softmax(logits, 1), y)  # criterion is not always a loss module


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 3)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x, y):
        logits = self.head(x)
        return self.criterion(logits, y), logits.softmax(1)


def suppressed(logits, y):
    a = F.cross_entropy(F.softmax(logits, 1), y)  # noqa: TP101
    b = F.cross_entropy(F.softmax(logits, 1), y)  # NOQA:TP101,TP102
    c = F.cross_entropy(F.softmax(logits, 1), y)  # noqa
    d = F.cross_entropy(F.softmax(logits, 1), y)  # noqa: TP1
    return a + b + c + d


def predict_or_loss(model, x, y=None):
    out = model(x)
    if y is None:
        out = out.softmax(dim=1)
        return out  # this branch ends: the softmax does not reach the loss
    return F.cross_entropy(out, y)


def raise_in_one_branch(model, x, y, strict):
    out = model(x)
    if strict:
        out = F.softmax(out, 1)
        raise ValueError(out)
    elif y is None:
        out = out.softmax(1)
        if strict:
            return out
        else:
            raise RuntimeError("no target")
    return F.cross_entropy(out, y)


def continue_in_a_loop(model, batches):
    total = 0
    for x, y in batches:
        out = model(x)
        if y is None:
            out = out.softmax(1)
            continue
        total += F.cross_entropy(out, y)
    return total


def both_branches_undo_the_softmax(logits, y, smooth):
    probs = F.softmax(logits, 1)
    if smooth:
        eps = 1e-6
        probs = torch.log(probs + eps)
    else:
        eps = 0.0
        probs = F.log_softmax(logits, 1)
    return F.nll_loss(probs, y) + eps


def criterion_on_one_branch_only(logits, y, use_ce):
    criterion = nn.MSELoss()
    if use_ce:
        criterion = nn.CrossEntropyLoss()
    return criterion(F.softmax(logits, 1), y)  # not a cross-entropy on every path: unknown
