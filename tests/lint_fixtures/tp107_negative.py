"""TP107 negative: unscale_ before clipping, no scaler, or clipping the rule does not judge."""

import torch
from torch import nn


def step(model, optimizer, scaler, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()


def step_if_clipping(model, optimizer, scaler, loss, max_norm):
    scaler.scale(loss).backward()
    if max_norm:
        scaler.unscale_(optimizer)  # under an if: counts
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)


def clip_before(model, optimizer, scaler, loss):
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # before the scaled backward
    scaler.scale(loss).backward()
    scaler.step(optimizer)


def unscaled(model, optimizer, loss):
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def by_a_library(accelerator, model, optimizer, scaler, loss):
    scaler.scale(loss).backward()
    accelerator.clip_grad_norm_(model.parameters(), 1.0)  # clipping that unscales itself
    model.clip_grad_norm_(1.0)  # FSDP's
    scaler.step(optimizer)


def two_statements(model, optimizer, scaler, loss):
    scaled = scaler.scale(loss)
    scaled.backward()  # not followed: see the rule's doc
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
