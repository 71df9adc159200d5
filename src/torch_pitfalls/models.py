"""Small models used across pages: built locally and seeded, so no download is ever needed."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn


class TwoConvNet(nn.Module):
    """Two 3×3 convolutions and a linear classifier: the network of "backward-step-zero-grad".

    Layers: ``conv1`` 3→16 channels and ``conv2`` 16→32 channels (3×3, padding 1, no bias), then
    ``fc``, a :class:`torch.nn.Linear` from ``32 * height * width`` features to ``num_classes``.
    There is no activation, as in the classic walkthrough this page revisits.

    Args:
        num_classes: number of output logits (``int`` ≥ 1).
        height: input height in pixels (``int`` ≥ 1).
        width: input width in pixels (``int`` ≥ 1).

    Shapes:
        input ``(N, 3, height, width)`` float → output ``(N, num_classes)`` logits.

    Raises:
        ValueError: a size is not a positive ``int``.

    >>> TwoConvNet()(torch.ones(8, 3, 10, 10)).shape
    torch.Size([8, 20])
    """

    def __init__(self, num_classes: int = 20, height: int = 10, width: int = 10) -> None:
        super().__init__()
        for name, value in (("num_classes", num_classes), ("height", height), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False)
        self.fc = nn.Linear(32 * height * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv2(self.conv1(x)).flatten(1))


def make_pretrained_classifier(num_classes: int = 10, *, seed: int = 0) -> nn.Sequential:
    """A small image classifier standing in for a pretrained network ("freezing-layers").

    The "pretrained" weights are a seeded random initialisation, so the model is the same on every
    machine and needs no download. Structure (``nn.Sequential`` with named children):
    ``backbone`` (conv 3→8, BatchNorm, ReLU, conv 8→16, BatchNorm, ReLU, global average pool,
    flatten → 16 features; the convolutions have no bias, which the BatchNorm after each would
    cancel: its gradient would be zero up to rounding) and ``head``
    (``nn.Linear(16, num_classes)``).

    Args:
        num_classes: number of output logits of the head (``int`` ≥ 1).
        seed: seed of the weights (``int`` ≥ 0). The global RNG state is left untouched.

    Shapes:
        input ``(N, 3, H, W)`` float with ``H, W ≥ 1`` → output ``(N, num_classes)`` logits.

    Raises:
        ValueError: ``num_classes`` is not a positive ``int`` or ``seed`` is negative.

    >>> model = make_pretrained_classifier(5)
    >>> model(torch.ones(2, 3, 8, 8)).shape
    torch.Size([2, 5])
    >>> [name for name, _ in model.named_children()]
    ['backbone', 'head']
    """
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        head = nn.Linear(16, num_classes)
    return nn.Sequential(OrderedDict(backbone=backbone, head=head))
