"""
.. _dataloader-copy-on-access:

DataLoader workers copy a dataset of Python objects as they read it
===================================================================

A dataset keeps its samples as a Python list — file names and labels, parsed annotations,
dictionaries of metadata — and training with ``num_workers=8`` uses far more host memory than the
dataset takes, growing steadily through each epoch as if something leaked, until the machine
swaps or the job is killed.
Nothing leaks: each worker ends up with its own copy of the list, made page by page while it reads
the samples.

.. admonition:: What you will learn

   * why a worker started with ``fork`` copies the Python objects it only reads (reference counts);
   * how to measure a worker's own memory, and why ``top``'s resident size misleads;
   * the fix: keep the samples in a few large arrays or tensors, not in millions of small objects.

.. admonition:: Prerequisites

   :ref:`dataloader-worker-rng` (what a DataLoader worker is, and what it inherits).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.measured`.
"""

# %%
# The symptom
# -----------
#
# A dataset of 100 000 samples, each a Python tuple ``(feature, label)``, as code that parses an
# annotation file builds it.
# One DataLoader worker, started with ``fork`` (the default start method on Linux up to Python
# 3.13), reads every sample once, as in one epoch.
# The dataset reports the worker's *private* memory (the pages that belong to that process alone,
# from Linux's ``/proc/self/smaps_rollup``) at the first and at the last sample.
# A dataset that holds nothing is the baseline: what a worker allocates anyway.
import gc
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from torch_pitfalls import get_device, measured, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device} (the workers and their memory are on the host, whatever the device)")

N = 100_000
MiB = 2**20
SMAPS = Path("/proc/self/smaps_rollup")


def private_bytes() -> int:
    """The memory of this process that no other process shares (Linux), in bytes."""
    fields = SMAPS.read_text().splitlines()
    return sum(int(line.split()[1]) * 1024 for line in fields if line.startswith("Private_"))


class Samples(Dataset):
    """Returns ``(feature, label, memory)``; memory is measured at the first and last sample."""

    def __len__(self):
        return N

    def sample(self, index):
        return float(index), index % 10

    def __getitem__(self, index):
        feature, label = self.sample(index)
        memory = private_bytes() if index in (0, N - 1) else -1
        return feature, label, memory


class Records(Samples):
    def __init__(self):
        self.records = [(float(i), i % 10) for i in range(N)]  # 100 000 small Python objects

    def sample(self, index):
        return self.records[index]


def readings(samples):
    """A batch reduced to the memory readings it holds (a short list, sent back without tensors)."""
    return [memory for _, _, memory in samples if memory >= 0]


def growth(dataset) -> float:
    """How much a fork worker's private memory grows while it reads every sample once, in MiB.

    The parent's objects are frozen for the garbage collector first (:func:`gc.freeze`), so that
    the worker's collections, which would write to every object they scan, do not copy the rest
    of this process: what is left is what reading the samples copies.
    """
    gc.collect()
    gc.freeze()
    try:
        loader = DataLoader(
            dataset,
            batch_size=5_000,
            num_workers=1,
            multiprocessing_context="fork",
            collate_fn=readings,
        )
        first, last = [memory for batch in loader for memory in batch]
    finally:
        gc.unfreeze()
    return (last - first) / MiB


on_linux = SMAPS.exists()
if on_linux:
    baseline = growth(Samples())
    records = Records()
    records_growth = growth(records)
    objects = sys.getsizeof(records.records) + sum(
        sys.getsizeof(r) + sys.getsizeof(r[0]) for r in records.records
    )
    print(f"size of the list, its tuples and their floats: {objects / MiB:.1f} MiB")
    print(measured(f"worker's growth, a dataset holding nothing: {baseline:.1f} MiB"))
    print(measured(f"worker's growth, the list of tuples:        {records_growth:.1f} MiB"))
    # The worker's memory grew by (about) the size of the objects it read, on top of the baseline.
    assert records_growth - baseline > 0.5 * objects / MiB
else:
    print("private memory is read from /proc/self/smaps_rollup: this part needs Linux")

# %%
# **Reading the list once made the worker copy it.**
# With ``num_workers=8``, eight copies, each growing as the epoch goes on, which is why the
# memory climbs steadily and looks like a leak.
# A new epoch starts new workers (unless ``persistent_workers=True``), so the copies are freed and
# made again; with persistent workers they stay.
#
# Why
# ---
#
# ``fork`` gives the worker the parent's memory without copying it: both processes map the same
# pages, and the kernel copies a page only when one of them *writes* to it (copy-on-write).
# In CPython, reading an object writes to it: every object carries a reference count, and
# ``records[index]`` increments and later decrements the count stored in the tuple it returns
# (the garbage collector also writes to the header of every container it scans: this page keeps it
# out of the measurement with :func:`gc.freeze`, which a training script can call before
# creating its DataLoader, but reference counts are written anyway).
# So the page that holds a tuple is copied into the worker the first time the worker reads it.
# Small objects fill every page, so after an epoch every page of the list has been copied.
#
# Tools that show the resident size (``top``'s RES, ``ps``'s RSS, ``psutil``'s ``rss``) count
# the shared pages in every process too, so they report each worker as holding the whole parent
# before it has copied anything; the private size, or the proportional set size (PSS), is the
# honest measure.
# PyTorch's documentation warns about it under
# `Multi-process data loading <https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading>`_:
# after some iterations, each worker holds as much memory as the parent for every Python object it
# accessed, and the workaround it names is a representation without reference counts (NumPy,
# Pandas or PyArrow objects).
#
# The fix
# -------
#
# **Keep the samples in a few large arrays instead of many small objects.**
# A NumPy array or a tensor is one object: reading an element increments the reference count
# of the array, not of its data, and the data pages stay shared.


class Arrays(Samples):
    def __init__(self):
        self.features = np.arange(N, dtype=np.float64)
        self.labels = np.arange(N) % 10

    def sample(self, index):
        return float(self.features[index]), int(self.labels[index])


class Tensors(Samples):
    def __init__(self):
        self.features = torch.arange(N, dtype=torch.float64)
        self.labels = torch.arange(N) % 10

    def sample(self, index):
        return self.features[index].item(), self.labels[index].item()


if on_linux:
    arrays_growth = growth(Arrays())
    tensors_growth = growth(Tensors())
    print(measured(f"worker's growth, two NumPy arrays:          {arrays_growth:.1f} MiB"))
    print(measured(f"worker's growth, two tensors:               {tensors_growth:.1f} MiB"))
    # Both stay at the baseline's level: far below the size of the objects of the list.
    assert arrays_growth - baseline < 0.25 * objects / MiB
    assert tensors_growth - baseline < 0.25 * objects / MiB

# %%
# Strings (file names, captions) fit the same way: one array of encoded bytes and one of offsets
# into it, or a NumPy array of fixed-width byte strings, decoded in ``__getitem__``.
# Moving the Python objects into a :func:`multiprocessing.Manager` shares them, at the cost of an
# inter-process call per access.
#
# With ``spawn`` or ``forkserver`` (Windows, macOS, and Linux from Python 3.14, where
# ``forkserver`` became the default start method), nothing is inherited: each worker receives the
# dataset pickled, so a list *and* a NumPy array are copied into every worker at its start, while
# a tensor is sent as a handle to shared memory (``torch.multiprocessing`` registers that
# reduction) and stays shared. ``tests/test_dataloader_copy_on_access.py`` measures it.
#
# A real-world report: memory that grows during a single epoch
# ------------------------------------------------------------
#
# In `PyTorch issue 20433 <https://github.com/pytorch/pytorch/issues/20433>`_, users describe the
# host memory of a training job rising through every epoch with several workers, while the
# dataset only reads its samples; a pure-Python test in the thread shows that a list of strings
# accessed from forked processes grows the memory and a NumPy array does not.
# The thread points to the long discussion of
# `PyTorch issue 13246 <https://github.com/pytorch/pytorch/issues/13246>`_, which traced it to
# reference counting and copy-on-write and collected the workarounds above.
#
# Takeaway
# --------
#
# **With fork, every worker copies each Python object it reads: keep the samples in NumPy
# arrays or tensors, not in lists of objects.**
# Measure a worker's private memory (or PSS), not its resident size; with ``spawn`` or
# ``forkserver``, prefer tensors, which the workers share.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because a small list in a
# dataset is harmless, and how much a worker copies depends on the data at run time; measure a
# worker's private memory instead.
