"""TP103 negative: training loops that clear gradients, one way or another, and other loops."""

import torch
import torch.nn.functional as F


def zero_grad_every_step(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def zero_grad_after_step(model, optimizer, loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        model.zero_grad(set_to_none=True)


def accumulation_every_k_steps(model, optimizer, loader, k=4):
    for i, (x, y) in enumerate(loader):
        (F.cross_entropy(model(x), y) / k).backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()


def accumulation_in_an_inner_loop(model, optimizer, micro_batches, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        for x, y in micro_batches:
            F.cross_entropy(model(x), y).backward()
        optimizer.step()


def manual_clearing(model, optimizer, loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        for p in model.parameters():
            p.grad = None


def zeroing_in_place(model, optimizer, loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.detach_()
                    p.grad.zero_()


def deleting_grads(model, optimizer, loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        for p in model.parameters():
            del p.grad


def clear(optimizer):
    optimizer.zero_grad(set_to_none=True)


def zero_grad_through_a_helper(model, optimizer, loader):
    for x, y in loader:
        clear(optimizer)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


def all_in_a_helper(model, optimizer, loader):
    for x, y in loader:
        train_step(model, optimizer, x, y)


def helper_chain(model, optimizer, loader):
    for x, y in loader:
        step_with_helpers(model, optimizer, x, y)


def step_with_helpers(model, optimizer, x, y):
    train_step(model, optimizer, x, y)


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def reset(self):
        self.optimizer.zero_grad()

    def fit(self, loader):
        for x, y in loader:
            self.reset()
            F.cross_entropy(self.model(x), y).backward()
            self.optimizer.step()


def lbfgs(model, optimizer, loader):
    for x, y in loader:

        def closure(x=x, y=y):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)


def scheduler_only(scheduler, epochs):
    for _ in range(epochs):
        scheduler.step()


def backward_only(model, loader):
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()


def full_batch_gradient(model, optimizer, loader):
    optimizer.zero_grad()
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
    optimizer.step()


def suppressed(model, optimizer, loader):
    for x, y in loader:  # noqa: TP103
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


class RenamedSelf:
    def _reset(self):
        self.optimizer.zero_grad()

    def fit(trainer, loader):  # the first parameter is self, under another name
        for x, y in loader:
            trainer._reset()
            trainer.loss(x, y).backward()
            trainer.optimizer.step()


def foreach_zero(model, optimizer, loader):
    for x, y in loader:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        torch._foreach_zero_(grads)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def fill_and_mul_by_zero(model, optimizer, loader):
    for x, y in loader:
        for p in model.parameters():
            if p.grad is not None:
                p.grad.fill_(0)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    for x, y in loader:
        for p in model.parameters():
            p.grad.data.mul_(0.0)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def lbfgs_closure_in_the_function(model, x, y):
    optimizer = torch.optim.LBFGS(model.parameters())

    def closure():
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(10):
        optimizer.step(closure)
    for _ in range(10):
        optimizer.step(closure=closure)


def lbfgs_closure_clearing_through_a_helper(model, optimizer, x, y):
    def closure():
        clear(optimizer)
        F.mse_loss(model(x), y).backward()

    for _ in range(10):
        optimizer.step(closure)
