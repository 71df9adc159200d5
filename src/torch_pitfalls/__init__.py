"""Helpers shared by the torch-pitfalls examples and tests.

Each helper's docstring names the page that introduces it. The public names are re-exported here:

>>> import torch_pitfalls
>>> sorted(torch_pitfalls.__all__)[:3]
['DEVICE_ENV', 'Isolated', 'SavedTensors']
"""

from torch_pitfalls.devices import DEVICE_ENV, available_devices, get_device
from torch_pitfalls.environment import environment_report
from torch_pitfalls.expect import expect_raises, expect_warns
from torch_pitfalls.isolation import Isolated, run_isolated
from torch_pitfalls.measure import (
    SavedTensors,
    compare_times,
    graph_nodes,
    measured,
    median_time,
    peak_cuda_bytes,
    saved_tensors,
)
from torch_pitfalls.models import TwoConvNet, make_pretrained_classifier
from torch_pitfalls.recording import cuda_section
from torch_pitfalls.seeding import seed_everything

__all__ = [
    "DEVICE_ENV",
    "Isolated",
    "SavedTensors",
    "TwoConvNet",
    "available_devices",
    "compare_times",
    "cuda_section",
    "environment_report",
    "expect_raises",
    "expect_warns",
    "get_device",
    "graph_nodes",
    "make_pretrained_classifier",
    "measured",
    "median_time",
    "peak_cuda_bytes",
    "run_isolated",
    "saved_tensors",
    "seed_everything",
]
