"""Choosing the device the examples run on.

The rule, used by every example and test: **CUDA when it is available, else the CPU; the
environment variable** ``TORCH_PITFALLS_DEVICE`` **overrides it** (``cpu``, ``cuda`` or
``cuda:N``). Introduced on every example page; the tests set the variable to run each example
once per available device.
"""

from __future__ import annotations

import os

import torch

DEVICE_ENV = "TORCH_PITFALLS_DEVICE"
"""Name of the environment variable that forces a device, e.g. ``TORCH_PITFALLS_DEVICE=cpu``."""

_KNOWN_TYPES = ("cpu", "cuda")


def get_device(name: str | None = None) -> torch.device:
    """Return the device the examples run on.

    Args:
        name: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. When ``None``, the environment variable
            :data:`~torch_pitfalls.devices.DEVICE_ENV` is read; when that is unset or empty,
            CUDA is chosen if :func:`torch.cuda.is_available` says so, else the CPU.

    Returns:
        A :class:`torch.device`.

    Raises:
        ValueError: ``name`` (or the variable) is not ``cpu``, ``cuda`` or ``cuda:N``.
        RuntimeError: CUDA was asked for but is not available, or ``N`` is not a visible GPU.

    Source: the device-agnostic idiom of PyTorch's `CUDA semantics
    <https://docs.pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code>`_ notes.

    >>> get_device("cpu")
    device(type='cpu')
    >>> get_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: unknown device 'tpu': expected 'cpu', 'cuda' or 'cuda:N' (from the argument)
    """
    source = "the argument"
    if name is None:
        name = os.environ.get(DEVICE_ENV, "").strip()
        source = f"the environment variable {DEVICE_ENV}"
        if not name:
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(name, str):
        raise TypeError(f"device name must be a str, got {type(name).__name__}")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if (
        device is None
        or device.type not in _KNOWN_TYPES
        or (device.type == "cpu" and device.index not in (None, 0))
    ):
        raise ValueError(
            f"unknown device {name!r}: expected 'cpu', 'cuda' or 'cuda:N' (from {source})"
        )
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"{name!r} was asked for ({source}) but CUDA is not available")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise RuntimeError(
                f"{name!r} was asked for ({source}) but only "
                f"{torch.cuda.device_count()} CUDA device(s) are visible"
            )
    return device


def available_devices() -> list[str]:
    """Names of the device types present on this machine: ``["cpu"]``, plus ``"cuda"`` with a GPU.

    The tests run every example once per entry.

    >>> available_devices()[0]
    'cpu'
    """
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
