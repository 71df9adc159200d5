"""TP105 negative: registered containers, lists registered another way, and lists of non-layers."""

import torch
import torch.nn as nn
from other_library import BaseModel


class Registered(nn.Module):
    def __init__(self, width, depth, teacher):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.heads = nn.ModuleDict({"age": nn.Linear(width, 1)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])
        layers = [nn.Linear(width, width), nn.ReLU()]  # a local variable
        self.net = nn.Sequential(*layers)
        self.teachers = [teacher]  # an existing module kept out of the model on purpose
        self.sizes = [width] * depth
        self.projections = [nn.Parameter(torch.zeros(width))]  # parameters: see the rule's doc
        self.acts = [nn.functional.relu, torch.tanh]  # functions, not layers


class WrappedLater(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layers = [nn.Linear(width, width), nn.ReLU()]
        self.model = nn.Sequential(*self.layers)  # registered through the Sequential
        self.parts = []
        self.parts.append(nn.Linear(width, width))
        self.parts = nn.ModuleList(self.parts)  # assigned again: registered


class RegistersByHand(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]
        for i, block in enumerate(self.blocks):
            self.add_module(f"block{i}", block)


class NotAModule:
    def __init__(self, width):
        self.layers = [nn.Linear(width, width)]


class UnknownBase(BaseModel):  # the checker cannot tell whether BaseModel is a module
    def __init__(self, width):
        super().__init__()
        self.layers = [nn.Linear(width, width)]


def builder(width):
    return [nn.Linear(width, width) for _ in range(3)]
