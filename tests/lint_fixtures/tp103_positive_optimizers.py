"""TP103 positive: the optimizer steps it must keep catching, whatever the receiver is named."""

import torch
import torch.nn.functional as F


def named_opt(model, opt, loader):
    for x, y in loader:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        opt.step()


class Trainer:
    def fit(self, loader):
        for x, y in loader:  # expect: TP103
            F.cross_entropy(self.model(x), y).backward()
            self.optimizer.step()


def amp(model, optimizer, scaler, loader):
    for x, y in loader:  # expect: TP103
        with torch.autocast("cuda"):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def amp_attribute(self, loader):
    for x, y in loader:  # expect: TP103
        self.grad_scaler.scale(F.cross_entropy(self.model(x), y)).backward()
        self.grad_scaler.step(self.opt)


def lbfgs(model, optimizer, loader):
    for x, y in loader:  # expect: TP103

        def closure(x=x, y=y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)


def lbfgs_keyword(model, optimizer, x, y, steps):
    def closure():
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(steps):  # expect: TP103
        optimizer.step(closure=closure)


def lambda_closure(model, optimizer, x, y, steps):
    for _ in range(steps):  # expect: TP103
        F.mse_loss(model(x), y).backward()
        optimizer.step(lambda: F.mse_loss(model(x), y))


def optimizer_passed_to_a_wrapper(model, optimizer, amp_helper, loader):
    for x, y in loader:  # expect: TP103
        F.cross_entropy(model(x), y).backward()
        amp_helper.step(optimizer)
