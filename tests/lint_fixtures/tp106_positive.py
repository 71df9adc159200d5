"""TP106 positive: the scheduler stepped before the optimizer in the same loop body."""

import torch
from torch.optim import lr_scheduler
from torch.optim.lr_scheduler import StepLR


def train_one_epoch(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def fit(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = StepLR(optimizer, step_size=10)
    for _epoch in range(epochs):
        scheduler.step()  # expect: TP106
        train_one_epoch(model, optimizer, loader)


def fit_inline(model, loader, epochs, opt):
    decay = lr_scheduler.ExponentialLR(opt, gamma=0.9)  # a scheduler by its class
    for _epoch in range(epochs):
        decay.step()  # expect: TP106
        model.train()
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()


def per_batch(model, loader, optimizer, lr_sched, scaler):
    for x, y in loader:
        lr_sched.step()  # expect: TP106
        optimizer.zero_grad()
        scaler.scale(model(x).sub(y).abs().mean()).backward()
        scaler.step(optimizer)
        scaler.update()


class Trainer:
    def run(self, epochs):
        epoch = 0
        while epoch < epochs:
            self.scheduler.step()  # expect: TP106
            self.train_epoch(epoch)
            epoch += 1
