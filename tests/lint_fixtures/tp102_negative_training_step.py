"""TP102 negative: functional dropout in code that only runs in training.

A ``training_step`` (PyTorch Lightning's hook) or a ``train_step`` runs only while training, so
``training=True``, the default, is what it means: not reported there, nor in what is nested in it.
"""

import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def training_step(self, batch, batch_idx):
        x, y = batch
        x = F.dropout(x, 0.1)  # input noise, in training only
        return F.cross_entropy(self(x), y)


def train_step(model, batch):
    def augment(x):
        return F.dropout2d(x, p=0.2)

    x, y = batch
    return F.cross_entropy(model(augment(x)), y)
