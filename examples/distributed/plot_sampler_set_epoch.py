"""
.. _sampler-set-epoch:

``DistributedSampler`` without ``set_epoch``
============================================

A :class:`~torch.utils.data.DataLoader` with ``shuffle=True`` draws a new order for every epoch.
In distributed training the shuffling moves into a
:class:`~torch.utils.data.distributed.DistributedSampler`, which gives each process its own share
of the data.
Its order is shuffled too, but it is computed from a seed and an epoch number, and the epoch
number only changes when the training loop calls ``set_epoch``.
A loop that never calls it trains on the same order in every epoch, and each process sees the same
share of the data, epoch after epoch.

.. admonition:: What you will learn

   * how a ``DistributedSampler`` shuffles and splits a dataset between processes, and why every
     process must draw the same permutation;
   * why, without ``set_epoch``, every epoch repeats the first one;
   * where to call ``set_epoch``, and how it makes a resumed run continue the same sequence.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.DataLoader` and its ``sampler=`` argument;
   :ref:`dataloader-worker-rng` (``generator=`` for a reproducible shuffle).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.expect_raises`,
:func:`~torch_pitfalls.seed_everything`.
"""

# %%
# What shuffling usually does
# ---------------------------
#
# A dataset of 8 samples, numbered 0 to 7, and a loader that shuffles it, for three epochs.
# The loader draws a new permutation at the start of each epoch:
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device} (a sampler produces indices: the same on every device)")

dataset = list(range(8))
loader = DataLoader(dataset, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0))
plain_orders = [next(iter(loader)).tolist() for _ in range(3)]
for epoch, order in enumerate(plain_orders):
    print(f"epoch {epoch}: {order}")
assert len({tuple(order) for order in plain_orders}) == 3

# %%
# The symptom
# -----------
#
# In distributed training each process runs the same script, with its own rank, and a
# ``DistributedSampler`` hands each rank its share of the dataset.
# It normally reads the number of processes and the rank from the process group; here both are
# given explicitly, so that the two ranks of a two-process job can be shown side by side in one
# process, without a process group.
# Without them, and without a process group, the sampler refuses:

with expect_raises(ValueError, "process group has not been initialized"):
    DistributedSampler(dataset)

# %%
# The two ranks, shuffling (the default, ``shuffle=True``) for three epochs:

samplers = [DistributedSampler(dataset, num_replicas=2, rank=rank, seed=0) for rank in (0, 1)]
stale = [[list(sampler) for sampler in samplers] for _ in range(3)]
for epoch, shares in enumerate(stale):
    print(f"epoch {epoch}: rank 0 gets {shares[0]}, rank 1 gets {shares[1]}")

# %%
# **Every epoch repeats the first: the same order, and each rank sees the same half of the data.**
# Rank 0 never sees the samples that rank 1 holds, and the reverse; with more ranks each one is
# confined to an even smaller part of the dataset.

assert stale[0] == stale[1] == stale[2]
assert sorted(stale[0][0] + stale[0][1]) == dataset
print("the three epochs are identical:", stale[0] == stale[1] == stale[2])

# %%
# Why
# ---
#
# The sampler shuffles with a :class:`torch.Generator` of its own, seeded with ``seed + epoch`` at
# the start of each iteration; rank ``r`` then takes every second index (every
# ``num_replicas``-th), starting at position ``r``.
# The same computation by hand:

epoch = samplers[0].epoch
generator = torch.Generator().manual_seed(samplers[0].seed + epoch)
permutation = torch.randperm(len(dataset), generator=generator).tolist()
print(f"seed {samplers[0].seed} + epoch {epoch}: permutation {permutation}")
print("rank 0 takes", permutation[0::2], "and rank 1 takes", permutation[1::2])
assert [permutation[0::2], permutation[1::2]] == stale[0]

# %%
# **Every rank must compute the same permutation, without talking to the others, or the shares
# would overlap and leave samples out.**
# That is why the sampler does not draw from each process's global random number generator,
# whose state can differ between processes, but from a seed that every rank shares.
# The epoch number is the one input that changes from one epoch to the next, and the sampler does
# not count epochs itself: iterating it again gives the same indices until ``set_epoch`` changes
# the number.
# After three epochs, both samplers are still at epoch 0:

print("epoch the samplers are still at, after three epochs:", [s.epoch for s in samplers])
assert [s.epoch for s in samplers] == [0, 0]

# %%
# The fix
# -------
#
# **Call set_epoch(epoch) on the sampler at the start of every epoch, before the loop over the
# loader, on every rank.**
# The sampler goes to the DataLoader as ``sampler=``; the loader's ``shuffle`` stays off, since
# the sampler shuffles (the two together are refused):

with expect_raises(ValueError, "mutually exclusive with shuffle"):
    DataLoader(dataset, sampler=samplers[0], shuffle=True)


def train_indices(epochs, seed=0, first_epoch=0):
    """For each epoch, the indices each of two ranks loads, calling set_epoch as a loop should."""
    ranks = [DistributedSampler(dataset, num_replicas=2, rank=rank, seed=seed) for rank in (0, 1)]
    loaders = [DataLoader(dataset, batch_size=2, sampler=sampler) for sampler in ranks]
    seen = []
    for epoch in range(first_epoch, first_epoch + epochs):
        for sampler in ranks:
            sampler.set_epoch(epoch)
        seen.append([[i for batch in loader for i in batch.tolist()] for loader in loaders])
    return seen


fixed = train_indices(epochs=3)
for epoch, shares in enumerate(fixed):
    print(f"epoch {epoch}: rank 0 gets {shares[0]}, rank 1 gets {shares[1]}")
assert len({tuple(shares[0]) for shares in fixed}) == 3
for shares in fixed:  # each epoch: the two shares are disjoint and cover the dataset
    assert sorted(shares[0] + shares[1]) == dataset
assert fixed[0] == stale[0]  # epoch 0 is the order the stale loop repeated

# %%
# The order is still reproducible: it depends only on ``seed`` and the epoch number.
# A run resumed from a checkpoint at epoch 2 calls ``set_epoch(2)`` and loads what the original
# run loaded in its epoch 2:

resumed = train_indices(epochs=1, first_epoch=2)
print("epoch 2 of a resumed run:", resumed[0])
assert resumed[0] == fixed[2]

# %%
# ``seed`` must be the same on every rank (its default, 0, is); change it to get another sequence
# of orders for another run.
#
# A real-world report: "each epoch samples the data in the same order"
# ---------------------------------------------------------------------
#
# In January 2020 a user reported to PyTorch that ``DistributedSampler`` did not shuffle: with
# ``shuffle=True`` and a job of one process, their loop printed the same batches in every
# epoch (`pytorch/pytorch issue #31771 <https://github.com/pytorch/pytorch/issues/31771>`_).
# The loop never called ``set_epoch``.
# The issue became the reference for the pitfall: projects that found the same omission in their
# own training scripts, such as the Hugging Face examples
# (`huggingface/transformers issue #3721 <https://github.com/huggingface/transformers/issues/3721>`_),
# link to it.

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP108`` (see :doc:`/detectors`) finds this pitfall in your own code:
# a shuffling ``DistributedSampler`` built in a function whose epoch loop (a ``for`` loop over
# something named ``epoch``) never calls ``set_epoch``.
# It stays silent when the loader or the sampler goes to another function, such as
# ``train(loader, epoch)``, which may call ``set_epoch`` itself, and for samplers of evaluation
# data (``val``, ``test``, ``eval`` in the names) or with ``shuffle=False``.
# The loop of a two-process job, as seen by rank 0, without and with ``set_epoch``:

import inspect

from torch_pitfalls.lint import check_source


def orders_without_set_epoch(epochs):
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    orders = []
    for _epoch in range(epochs):
        orders.append([batch.tolist() for batch in loader])
    return orders


def orders_with_set_epoch(epochs):
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    orders = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        orders.append([batch.tolist() for batch in loader])
    return orders


imports = (
    "from torch.utils.data import DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\n\n"
)
static = {}
for function in (orders_without_set_epoch, orders_with_set_epoch):
    orders = function(3)
    code = imports + inspect.getsource(function)
    static[function.__name__] = check_source(code, path="train.py", language="en")
    print(f"{function.__name__}: rank 0 reads {orders}")
    for finding in static[function.__name__]:
        print(f"  {finding}")
    if function is orders_without_set_epoch:
        assert orders[0] == orders[1] == orders[2]
    else:
        assert orders[0] != orders[1]
wrong_ids = [f.rule for f in static["orders_without_set_epoch"]]
assert wrong_ids == ["TP108"] and static["orders_with_set_epoch"] == []

# %%
# Takeaway
# --------
#
# **A DistributedSampler shuffles with its seed plus the epoch number, and the epoch number only
# moves when you call set_epoch: without it, every epoch has the same order and every rank the same
# share of the data.**
# Call ``sampler.set_epoch(epoch)`` at the start of each epoch on every rank, leave the loader's
# ``shuffle`` off, keep ``seed`` the same on every rank, and call ``set_epoch`` with the restored
# epoch number when you resume.
# The other half of distributed training, the model, has its own pitfall:
# :ref:`ddp-unused-parameters`.
