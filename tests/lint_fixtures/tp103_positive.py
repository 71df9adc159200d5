"""TP103 positive: training loops that call backward() and step() but never clear gradients."""

import torch
import torch.nn.functional as F


def simple(model, optimizer, loader):
    for x, y in loader:  # expect: TP103
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def zero_grad_before_the_loop_only(model, optimizer, loader):
    optimizer.zero_grad()
    for x, y in loader:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def while_loop(model, optimizer, batches):
    step = 0
    while step < 100:  # expect: TP103
        x, y = batches[step]
        torch.autograd.backward(F.cross_entropy(model(x), y))
        optimizer.step()
        step += 1


def nested_loops(model, optimizer, loader, epochs):
    # one problem, one finding: at the innermost loop that has it, not also at the epoch loop
    for _epoch in range(epochs):
        for x, y in loader:  # expect: TP103
            F.cross_entropy(model(x), y).backward()
            optimizer.step()


def cleared_once_per_epoch(model, optimizer, loader, epochs):
    for _epoch in range(epochs):
        optimizer.zero_grad()  # clears once per epoch: the batches still add up
        for x, y in loader:  # expect: TP103
            F.cross_entropy(model(x), y).backward()
            optimizer.step()


def backward_inside_step_outside(model, optimizer, loader, epochs):
    for _epoch in range(epochs):  # expect: TP103
        for x, y in loader:
            F.cross_entropy(model(x), y).backward()
        optimizer.step()


def compute_loss(model, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss


def update(optimizer):
    optimizer.step()


def through_helpers(model, optimizer, loader):
    for x, y in loader:  # expect: TP103
        compute_loss(model, x, y)
        update(optimizer)


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def training_step(self, x, y):
        F.cross_entropy(self.model(x), y).backward()
        self.optimizer.step()

    def fit(self, loader):
        for x, y in loader:  # expect: TP103
            self.training_step(x, y)


def amp(model, optimizer, scaler, loader):
    for x, y in loader:  # expect: TP103
        with torch.autocast("cpu"):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


async def asynchronous(model, optimizer, stream):
    async for x, y in stream:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def two_loops(model, optimizer, loader):
    for x, y in loader:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    for x, y in loader:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def wrong_noqa(model, optimizer, loader):
    for x, y in loader:  # noqa: TP101  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


for x, y in []:  # expect: TP103
    F.cross_entropy(x, y).backward()
    torch.optim.SGD([], lr=0.1).step()


class RenamedSelf:
    def training_step(trainer, x, y):
        F.cross_entropy(trainer.model(x), y).backward()
        trainer.optimizer.step()

    def fit(trainer, loader):
        for x, y in loader:  # expect: TP103
            trainer.training_step(x, y)


def multiplied_but_not_by_zero(model, optimizer, loader):
    for x, y in loader:  # expect: TP103
        for p in model.parameters():
            p.grad.mul_(0.5)
            p.grad.fill_(1)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def lbfgs_closure_in_the_loop(model, x, y):
    # the closure runs several times per step: it must clear gradients itself
    optimizer = torch.optim.LBFGS(model.parameters())
    optimizer.zero_grad()
    for _ in range(10):  # expect: TP103

        def closure():
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)


def lbfgs_cleared_outside_the_closure(model, optimizer, x, y):
    def closure():
        F.mse_loss(model(x), y).backward()

    for _ in range(10):  # expect: TP103
        optimizer.zero_grad()  # once per step, but LBFGS calls the closure several times
        optimizer.step(closure=closure)
