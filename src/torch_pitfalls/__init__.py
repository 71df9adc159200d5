"""Helpers shared by the torch-pitfalls examples and tests, and the pitfall detectors.

Each helper's docstring names the page that introduces it. The public names are re-exported here,
imported on first use, so that ``python -m torch_pitfalls.lint`` runs without importing torch:

>>> import torch_pitfalls
>>> sorted(torch_pitfalls.__all__)[:3]
['DEVICE_ENV', 'Isolated', 'PitfallError']
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "DEVICE_ENV": "devices",
    "available_devices": "devices",
    "get_device": "devices",
    "environment_report": "environment",
    "expect_raises": "expect",
    "expect_warns": "expect",
    "Isolated": "isolation",
    "run_isolated": "isolation",
    "run_script": "isolation",
    "SavedTensors": "measure",
    "compare_times": "measure",
    "graph_nodes": "measure",
    "measured": "measure",
    "median_time": "measure",
    "peak_cuda_bytes": "measure",
    "run_ranks": "ranks",
    "saved_tensors": "measure",
    "TwoConvNet": "models",
    "make_pretrained_classifier": "models",
    "cuda_section": "recording",
    "seed_everything": "seeding",
    "PitfallWarning": "guards",
    "PitfallError": "guards",
    "allow": "guards",
    "RULES": "rules",
}

__all__ = sorted([*_EXPORTS, "guards"])


def __getattr__(name: str):
    if name == "guards":  # the module itself is callable: torch_pitfalls.guards(model, optimizer)
        return importlib.import_module("torch_pitfalls.guards")
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"torch_pitfalls.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'torch_pitfalls' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
