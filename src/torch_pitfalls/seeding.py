"""Seeding every random number generator an example touches. Used on every example page."""

from __future__ import annotations

import random

import torch


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python's :mod:`random`, NumPy (when installed) and PyTorch (CPU and every GPU).

    Args:
        seed: a non-negative ``int`` below 2**63.

    Returns:
        The default CPU :class:`torch.Generator`, seeded.

    Raises:
        TypeError: ``seed`` is not an ``int`` (``bool`` is refused too).
        ValueError: ``seed`` is negative or not below 2**63.

    Source: PyTorch's `Reproducibility
    <https://docs.pytorch.org/docs/stable/notes/randomness.html>`_ notes.

    It seeds this process only. A DataLoader seeds the global generators of its worker processes
    itself, from torch's generator (or its own ``generator=``); a generator object kept in a
    dataset needs seeding in each worker (see :ref:`dataloader-worker-rng`).

    >>> _ = seed_everything(0); a = torch.rand(2)
    >>> _ = seed_everything(0); torch.equal(a, torch.rand(2))
    True
    >>> seed_everything(-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must be in [0, 2**63), got -1
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    random.seed(seed)
    try:
        import numpy as np
    except ImportError:  # NumPy is optional for the helpers
        pass
    else:
        np.random.seed(seed % 2**32)
    return torch.manual_seed(seed)  # also seeds every CUDA device
