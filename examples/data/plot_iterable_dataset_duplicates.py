"""
.. _iterable-dataset-duplicates:

IterableDataset with several workers
====================================

An :class:`~torch.utils.data.IterableDataset` streams its items from ``__iter__``: lines of a
file, rows of a database, shards of a web dataset.
Give its DataLoader ``num_workers=2`` and every item arrives twice, with no error and no warning:
each worker runs the whole iterator.
The epoch is twice as long, and the model sees every sample twice per epoch.

.. admonition:: What you will learn

   * why a map-style dataset is split between the workers and an iterable one is not;
   * how to count what a DataLoader delivers, and when PyTorch's own length check warns;
   * how to shard the stream between the workers with :func:`~torch.utils.data.get_worker_info`.

.. admonition:: Prerequisites

   :ref:`dataloader-worker-rng` (every worker gets its own copy of the dataset).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, and the streams of :mod:`torch_pitfalls.data`:
:class:`~torch_pitfalls.data.NumberStream` and :class:`~torch_pitfalls.data.ShardedNumberStream`.
"""

# %%
# The symptom
# -----------
#
# The stream yields the numbers 0 to 7, one after the other; it stands in for any stream of
# samples.
# Like the datasets of :ref:`dataloader-worker-rng`, it lives in an importable module,
# :mod:`torch_pitfalls.data`, so that workers find it under every start method.
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: NumberStream
#
# Loaded in the main process, the stream gives each number once.
# With two workers, it gives each number twice:
import re
import warnings
from collections import Counter

from torch.utils.data import DataLoader

from torch_pitfalls import expect_warns, get_device, seed_everything
from torch_pitfalls.data import NumberStream, ShardedNumberStream

seed_everything(0)
device = get_device()
print(f"device: {device} (the DataLoader's workers are CPU processes on every device)")


def received(dataset, **options):
    """Every item a DataLoader delivers in one epoch, in order."""
    workers = options.get("num_workers", 0)
    loader = DataLoader(dataset, batch_size=2, timeout=60 if workers else 0, **options)
    return [n for batch in loader for n in batch.tolist()]


single = received(NumberStream(0, 8))
doubled = received(NumberStream(0, 8), num_workers=2)
print(f"num_workers=0: {len(single)} items {single}")
print(f"num_workers=2: {len(doubled)} items {doubled}")
counts = Counter(doubled)
print("times each number arrived:", dict(sorted(counts.items())))
assert single == list(range(8))
assert len(doubled) == 16 and set(counts.values()) == {2}

# %%
# Why
# ---
#
# **A map-style dataset is split by its sampler, in the main process; an iterable dataset has no
# sampler, so every worker iterates its own copy from the start.**
# With a map-style dataset (``__getitem__`` and ``__len__``), the main process draws the indices
# and sends each batch of indices to one worker.
# A list is the simplest map-style dataset:

map_style = received(list(range(8)), num_workers=2)
print(f"a list with num_workers=2: {len(map_style)} items {map_style}")
assert map_style == list(range(8))

# %%
# An :class:`~torch.utils.data.IterableDataset` has only ``__iter__``: the DataLoader cannot know
# which items a worker will produce, so it calls ``iter()`` on each worker's copy of the dataset
# and collects whatever comes out.
# Splitting the stream is the dataset's job, as PyTorch's documentation of
# :class:`~torch.utils.data.IterableDataset` says: each worker has its own copy of the dataset,
# to be configured so that the workers do not return the same data.
#
# PyTorch has one safeguard.
# When the dataset defines ``__len__`` and ``len()`` is called on the DataLoader, the DataLoader
# warns once it has delivered more than ``len(dataset)`` elements.
# It counts what it delivers, batches here, against the number of items: with two workers and
# batches of two, 16 items arrive in 8 batches, which does not exceed the 8 items, and it stays
# silent.

loader = DataLoader(NumberStream(0, 8), batch_size=2, num_workers=2, timeout=60)
print("len(loader):", len(loader), "batches")
length_warning = "Length of IterableDataset NumberStream\\(0, 8\\) was reported to be 8"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    batches = [batch.tolist() for batch in loader]
# only PyTorch's length warning counts: Python 3.12 may add a DeprecationWarning about fork()
length_warnings = [
    w
    for w in caught
    if issubclass(w.category, UserWarning) and re.search(length_warning, str(w.message))
]
print(f"{len(batches)} batches delivered, {len(length_warnings)} length warnings")
assert len(batches) == 8 and not length_warnings

# %%
# Loading items one by one (``batch_size=None``), it delivers 16 elements for 8 items, and
# warns for each element after the eighth:

loader = DataLoader(NumberStream(0, 8), batch_size=None, num_workers=2, timeout=60)
_ = len(loader)
with expect_warns(UserWarning, length_warning, show=False) as warned:
    items = list(loader)
print(f"{len(items)} items delivered, {len(warned.warnings)} length warnings; the first one:")
print(f"UserWarning: {warned.warnings[0].message}")
assert len(items) == 16 and len(warned.warnings) == 8

# %%
# So do not count on the warning: count what arrives, as above, when you change ``num_workers``.
#
# The fix
# -------
#
# **Shard the stream in** ``__iter__``: :func:`~torch.utils.data.get_worker_info` **tells each
# worker its id and the number of workers.**
# In the main process it returns ``None``, and the stream yields everything.
# Here worker ``k`` of ``n`` takes every ``n``-th item from item ``k`` on; a stream read from files
# would give each worker its own files.
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: ShardedNumberStream

sharded = received(ShardedNumberStream(0, 8), num_workers=2)
print(f"sharded, num_workers=2: {len(sharded)} items {sharded}")
print("every number once:", sorted(sharded) == list(range(8)))
assert sorted(sharded) == list(range(8))
assert received(ShardedNumberStream(0, 8)) == list(range(8))

# %%
# Only the order changes: batches come from the two workers in turn, each from its own share.
#
# PyTorch's documentation of :class:`~torch.utils.data.IterableDataset` shows a second way: a
# ``worker_init_fn`` that sets the range of each worker's copy of the dataset, through
# ``get_worker_info().dataset``.
#
# A real-world report: "every sample processed once per worker"
# -------------------------------------------------------------
#
# In 2026, an issue on nanoVLM, Hugging Face's small repository for training vision-language
# models, reported that
# its streaming dataset did no sharding between workers: with ``num_workers`` above 1, every
# worker walked the whole stream and each sample was processed once per worker
# (`huggingface/nanoVLM issue #200 <https://github.com/huggingface/nanoVLM/issues/200>`_).
# The fix proposed in `pull request #203 <https://github.com/huggingface/nanoVLM/pull/203>`_
# shards the stream with ``get_worker_info()``, as above; its benchmark with four workers counted
# four times as many processed samples as unique ones before the fix.
#
# Takeaway
# --------
#
# **Each DataLoader worker runs the whole** ``__iter__`` **of an IterableDataset: without
# sharding, every item arrives once per worker.**
# Shard in ``__iter__`` with ``get_worker_info()`` (``id`` and ``num_workers``; ``None`` in the
# main process), and count the items of one epoch whenever you change ``num_workers``.
