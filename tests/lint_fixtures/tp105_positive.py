"""TP105 positive: layers kept in a plain list or dict attribute of an nn.Module."""

import torch
import torch.nn as nn
from torch.nn import Linear, Module


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)


class Tower(Block):  # derives from nn.Module through a class of this module
    def __init__(self, width, depth):
        super().__init__(width)
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]  # expect: TP105
        self.heads = {"age": nn.Linear(width, 1), "label": nn.Linear(width, 3)}  # expect: TP105
        self.pair = (Block(width), Block(width))  # expect: TP105
        self.by_name = {str(i): Block(width) for i in range(depth)}  # expect: TP105
        self.stages: list = [torch.nn.Conv2d(3, 8, 3), nn.ReLU()]  # expect: TP105


class Appended(Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = []
        for a, b in zip(sizes, sizes[1:], strict=False):
            self.layers.append(Linear(a, b))  # expect: TP105
        self.named = dict()
        self.named["first"] = nn.Linear(2, 2)  # expect: TP105
        self.norms = []
        self.norms.insert(0, nn.LayerNorm(4))  # expect: TP105

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class WithSelfNamedOtherwise(nn.Sequential):
    def __init__(this):
        super().__init__()
        this.extra = [nn.Dropout(0.1)]  # expect: TP105
