"""
.. _dataset-state-in-workers:

Changes to the dataset never reach the DataLoader workers
=========================================================

A training loop sets an attribute of its dataset at the start of each epoch, ``dataset.epoch =
epoch``, and ``__getitem__`` reads it: to seed the epoch's augmentations, to raise a curriculum's
difficulty, to change which samples it mixes in.
With ``num_workers=0`` it works.
With workers, every worker loads items from its own copy of the dataset, made when the worker
started, and the assignment in the main process changes only the main process's copy.
With ``persistent_workers=True`` the workers start once, and every epoch sees the value of the
first one; without it, a change made during an epoch arrives at the next epoch only.

.. admonition:: What you will learn

   * when a DataLoader worker copies the dataset, with and without ``persistent_workers``;
   * three ways to get state to the workers: with the indices, through the sampler; in shared
     memory; or in the copy a new iterator makes.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.Dataset` and :class:`~torch.utils.data.DataLoader` with
   ``num_workers``; :ref:`dataloader-worker-rng` shows the same copy with a random generator.

Helpers used: :func:`~torch_pitfalls.get_device`, and the datasets and sampler of
:mod:`torch_pitfalls.data`: :class:`~torch_pitfalls.data.EpochItems`,
:class:`~torch_pitfalls.data.SharedEpochItems`, :class:`~torch_pitfalls.data.EpochSampler` and
:class:`~torch_pitfalls.data.EpochFromSampler`.
"""

# %%
# The symptom
# -----------
#
# The dataset has 4 items; each item reports the value of ``dataset.epoch`` at the moment it was
# loaded, and which worker loaded it (``-1``: the main process).
# It lives in an importable module, :mod:`torch_pitfalls.data`, so that the page works under
# every start method (see :ref:`spawn-main-guard`):
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: EpochItems
#
# The training loop sets ``dataset.epoch`` before each of 3 epochs.
# Without workers, every item sees the epoch it belongs to:
from torch.utils.data import DataLoader

from torch_pitfalls import get_device
from torch_pitfalls.data import EpochFromSampler, EpochItems, EpochSampler, SharedEpochItems

device = get_device()
print(f"device: {device} (the DataLoader's workers are CPU processes on every device)")


def train(loader, epochs=3, set_epoch=None):
    """For each epoch, set the epoch, then return the (worker, epochs seen) of every batch."""
    set_epoch = set_epoch or (lambda epoch: setattr(loader.dataset, "epoch", epoch))
    seen = []
    for epoch in range(epochs):
        set_epoch(epoch)
        seen.append([(batch["worker"][0].item(), batch["epoch"].tolist()) for batch in loader])
    return seen


def show(seen):
    for epoch, batches in enumerate(seen):
        loaded = [f"{'main process' if w == -1 else f'worker {w}'}: {e}" for w, e in batches]
        print(f"epoch {epoch}, the epoch each item saw: " + " | ".join(loaded))


def epochs_seen(seen):
    """The epochs that the items of each epoch saw, one set per epoch."""
    return [{e for _, batch in batches for e in batch} for batches in seen]


in_main = train(DataLoader(EpochItems(4), batch_size=2))
show(in_main)
assert epochs_seen(in_main) == [{0}, {1}, {2}]

# %%
# The same loop with two workers that persist between epochs: **every epoch sees epoch 0.**
# Every DataLoader on this page has a ``timeout``, so that a stuck worker fails the build instead
# of hanging it.

dataset = EpochItems(4)
persistent = DataLoader(dataset, batch_size=2, num_workers=2, persistent_workers=True, timeout=60)
frozen = train(persistent)
show(frozen)
assert [[w for w, _ in batches] for batches in frozen] == [[0, 1]] * 3
assert epochs_seen(frozen) == [{0}, {0}, {0}]
print("the main process's dataset.epoch:", dataset.epoch, "and its item 0:", dataset[0])
assert dataset.epoch == 2 and dataset[0]["epoch"] == 2

# %%
# Why
# ---
#
# **A worker loads items from its own copy of the dataset, made when the worker starts.**
# Under the "fork" start method the worker inherits a copy of the main process's memory; under
# "spawn" and "forkserver" the dataset is pickled and unpickled in the worker.
# Either way, ``dataset.epoch = 1`` afterwards, in the main process, changes the main process's
# object only: the worker's copy is another object in another process.
#
# When the workers start depends on ``persistent_workers``.
# With ``persistent_workers=True``, the first ``for batch in loader`` starts them and they live as
# long as the DataLoader: their copies keep the value of the first epoch for the whole training.
# Without it (the default), each ``for batch in loader`` creates a new iterator that starts new
# workers, with new copies of the dataset as it is at that moment.
# Setting the attribute *before* the loop then works; setting it *during* the epoch, after the
# workers started, does not:

dataset = EpochItems(4)
restarted = DataLoader(dataset, batch_size=2, num_workers=2, timeout=60)
per_epoch = train(restarted)
show(per_epoch)
assert epochs_seen(per_epoch) == [{0}, {1}, {2}]

mid_epoch = []
dataset.epoch = 0
for step, batch in enumerate(restarted):
    mid_epoch.append(batch["epoch"].tolist())
    dataset.epoch = 10 + step  # e.g. a curriculum that changes every step
print("epochs seen by the batches when the loop changes it at every step:", mid_epoch)
assert mid_epoch == [[0, 0], [0, 0]]

# %%
# :func:`~torch.utils.data.get_worker_info` returns the worker's copy of the dataset
# (``info.dataset``), and ``worker_init_fn`` runs in each worker when it starts: both act on a
# worker's copy, in the worker, and neither sees what the main process changes later.
#
# The fix
# -------
#
# **Send the state with the indices: the sampler runs in the main process.**
# The DataLoader draws the indices from the sampler in the main process and sends each batch of
# indices to a worker, which calls ``dataset[index]`` with them.
# A sampler that yields ``(epoch, index)`` pairs sends the epoch with every item, and the dataset
# takes it from its key instead of from ``self``:
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: EpochSampler
#
# (``set_epoch`` is the method :class:`~torch.utils.data.distributed.DistributedSampler` has for
# the same reason; see :ref:`sampler-set-epoch`.)
# It works with persistent workers:

sampler = EpochSampler(4)
through_sampler = DataLoader(
    EpochFromSampler(4),
    batch_size=2,
    sampler=sampler,
    num_workers=2,
    persistent_workers=True,
    timeout=60,
)
sent = train(through_sampler, set_epoch=sampler.set_epoch)
show(sent)
assert epochs_seen(sent) == [{0}, {1}, {2}]

# %%
# Shared memory
# -------------
#
# **Or keep the state in memory that the workers share.**
# A tensor moved to shared memory with :meth:`~torch.Tensor.share_memory_` stays shared when the
# dataset is copied into a worker, by "fork" or by pickling, so a value written in the main
# process is the one each worker reads at its next item:
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: SharedEpochItems
#
# A ``multiprocessing.Value`` works the same way.

dataset = SharedEpochItems(4)
shared = DataLoader(dataset, batch_size=2, num_workers=2, persistent_workers=True, timeout=60)
through_memory = train(shared)
show(through_memory)
assert epochs_seen(through_memory) == [{0}, {1}, {2}]

# %%
# Unlike the sampler, shared memory also carries a change made during an epoch, but not at once:
# the workers load batches ahead of the training loop (``prefetch_factor`` batches per worker), so
# the batches already loaded keep the old value.
#
# A new iterator
# --------------
#
# **Or let each epoch start new workers**: with ``persistent_workers=False`` (the default) and the
# state set before ``for batch in loader``, each epoch's workers copy the dataset as it is then,
# as the section above showed.
# The price is to start the workers, run ``worker_init_fn`` and copy the dataset again at every
# epoch, which ``persistent_workers=True`` exists to avoid.
#
# A real-world report: an ``epoch`` attribute under persistent workers
# --------------------------------------------------------------------
#
# A user whose dataset had an ``epoch`` attribute, updated by the training loop, found that with
# ``persistent_workers=True`` the workers kept the initial value, and asked how to update it
# without giving up persistent workers, since their dataset was slow to build
# (`PyTorch issue 97326 <https://github.com/pytorch/pytorch/issues/97326>`_).
# A maintainer of the DataLoader answered with a shared ``multiprocessing.Value`` handed to each
# worker's copy of the dataset in ``worker_init_fn``: the shared-memory fix above.
# The same pitfall hit an iterable dataset's ``set_epoch`` in Hugging Face Datasets
# (`huggingface/datasets issue 6673 <https://github.com/huggingface/datasets/issues/6673>`_),
# whose reporter noted that samplers of map-style datasets do not have the problem: the sampler
# fix above.
#
# Takeaway
# --------
#
# **Each DataLoader worker reads its own copy of the dataset, made when it started: an attribute
# set on the dataset in the training loop does not reach it, and with persistent_workers=True it
# never does.**
# Send per-epoch state with the indices through the sampler, keep changing state in shared memory,
# or set it before a new iterator starts new workers.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because an attribute set on a
# dataset in the loop is a bug only when the workers read it, which depends on ``num_workers`` and
# on what ``__getitem__`` reads.
