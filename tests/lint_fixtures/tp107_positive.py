"""TP107 positive: gradients clipped after a scaled backward() without scaler.unscale_."""

import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_ as clip
from torch.nn.utils import clip_grad_value_


def step(model, optimizer, scaler, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TP107
    scaler.step(optimizer)
    scaler.update()


class Trainer:
    def run_batch(self, x, y, use_amp):
        loss = self.model(x, y)
        if use_amp:
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: TP107
            self.scaler.step(self.optimizer)
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # not scaled here
            self.optimizer.step()


def loop(model, optimizer, scaler, batches):
    for x, y in batches:
        with torch.autocast("cpu"):
            loss = model(x).sub(y).pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward(retain_graph=False)
        clip(model.parameters(), max_norm=5)  # expect: TP107
        clip_grad_value_(model.parameters(), 0.1)  # expect: TP107
        scaler.step(optimizer)
        scaler.update()
