"""The "dataloader-copy-on-access" page's claim about ``spawn``, which the page states but does not
run (a spawned worker imports torch first: seconds per worker on a busy machine).

Under ``spawn`` (and ``forkserver``) each worker receives the dataset pickled: a list of Python
objects and a NumPy array arrive as copies, while a tensor arrives as a handle to shared memory
(torch.multiprocessing's reduction) and is not copied.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

SMAPS = Path("/proc/self/smaps_rollup")
N = 1_000_000
#: A spawned worker imports torch before its first batch: generous on a loaded 2-core machine.
TIMEOUT = 120

pytestmark = pytest.mark.skipif(
    not SMAPS.exists(), reason="private memory is read from Linux's /proc"
)


def private_bytes() -> int:
    lines = SMAPS.read_text().splitlines()
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith("Private_"))


class Holder(Dataset):
    """One sample: the worker's private memory, with ``data`` (unread) in the dataset."""

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return 1

    def __getitem__(self, index):
        return private_bytes()


def first_reading(data) -> int:
    loader = DataLoader(
        Holder(data),
        batch_size=None,
        num_workers=1,
        multiprocessing_context="spawn",
        timeout=TIMEOUT,
    )
    return int(next(iter(loader)))


def test_spawn_copies_lists_and_arrays_but_shares_tensors():
    floats = [float(i) for i in range(N)]
    list_bytes = sys.getsizeof(floats) + sum(sys.getsizeof(f) for f in floats)
    array = np.arange(N, dtype=np.float64)
    tensor = torch.arange(N, dtype=torch.float64)

    nothing = first_reading(None)
    with_list = first_reading(floats)
    with_array = first_reading(array)
    with_tensor = first_reading(tensor)

    assert with_list - nothing > 0.5 * list_bytes, (nothing, with_list, list_bytes)
    assert with_array - nothing > 0.5 * array.nbytes, (nothing, with_array, array.nbytes)
    assert with_tensor - nothing < 0.25 * tensor.nbytes, (nothing, with_tensor, tensor.nbytes)
