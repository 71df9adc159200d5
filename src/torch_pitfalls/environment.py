"""The "verified with" report: which PyTorch, Python and device produced the outputs on the site.

Shown by the home page's executed cell.
"""

from __future__ import annotations

import platform

import torch

from torch_pitfalls.devices import get_device


def environment_report() -> dict[str, str]:
    """Versions and device that the site's outputs are produced with.

    Returns:
        A ``dict`` of ``str`` with the keys ``"torch"`` (``torch.__version__``), ``"python"``
        (:func:`platform.python_version`), ``"device"`` (the device chosen by
        :func:`~torch_pitfalls.get_device`) and ``"device_name"`` (the GPU's name on CUDA,
        else the processor architecture).

    >>> sorted(environment_report())
    ['device', 'device_name', 'python', 'torch']
    """
    device = get_device()
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.machine() or "unknown CPU"
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
        "device_name": name,
    }
