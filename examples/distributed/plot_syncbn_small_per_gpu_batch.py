"""
.. _syncbn-small-per-gpu-batch:

BatchNorm under DDP normalises each GPU's batch alone
=====================================================

A model trains well on one GPU with a batch of 64; the same script on 8 GPUs with a batch of 8 per
GPU, the same total, trains worse, and evaluation is worse still.
Under :class:`~torch.nn.parallel.DistributedDataParallel`, every BatchNorm layer computes its mean
and variance from its own GPU's batch only: the gradients are averaged over the GPUs, the
normalisation is not.
With a few samples per GPU the statistics are noisy, and the running statistics that the
checkpoint keeps are those of rank 0's batches.

.. admonition:: What you will learn

   * what BatchNorm computes on each rank, and why 2 samples per GPU leave almost nothing of the
     features;
   * whose running statistics a DDP model keeps, and when they are copied;
   * how :class:`~torch.nn.SyncBatchNorm` computes the statistics of the whole batch over all
     ranks, what it refuses on the CPU, and the alternatives that do not depend on the batch.

.. admonition:: Prerequisites

   :ref:`batchnorm-running-stats` (what BatchNorm computes in training mode and keeps for
   evaluation); :ref:`call-module-not-forward` (how DDP averages gradients).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.run_ranks`.
"""

# %%
# The symptom
# -----------
#
# A batch of 8 samples with 3 features goes through a :class:`~torch.nn.BatchNorm1d` layer in
# training mode, once as a whole (one GPU with a batch of 8), and once split in 4 shards of 2
# (4 GPUs with a batch of 2 each): each rank of a DDP job has its own copy of the layer.
import copy

import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

batch = torch.randn(8, 3, generator=torch.Generator().manual_seed(0)).to(device)
bn = nn.BatchNorm1d(3).to(device)  # weight 1, bias 0: the output is the normalised input
replicas = [copy.deepcopy(bn) for _ in range(4)]  # what each of 4 ranks holds


def rounded(t):
    return [round(value, 3) for value in t.tolist()]


with torch.no_grad():  # still training mode: batch statistics, running statistics updated
    whole = bn(batch)
    per_rank = torch.cat(
        [replica(shard) for replica, shard in zip(replicas, batch.chunk(4), strict=True)]
    )
print("feature 0, one batch of 8, normalised:      ", rounded(whole[:, 0]))
print("feature 0, 4 ranks x 2 samples, normalised: ", rounded(per_rank[:, 0]))
print(
    "largest distance of |output| from 1, 4 ranks:",
    round((per_rank.abs() - 1).abs().max().item(), 4),
)

# %%
# **With 2 samples per rank, every normalised feature is +1 or -1: all that is left of it is
# which of the two samples is larger.**
# (Exactly so but for ``eps``.)
# Over the whole batch, the same feature keeps its values.

assert torch.allclose(per_rank.abs(), torch.ones_like(per_rank), atol=0.01)
assert not torch.allclose(whole.abs(), torch.ones_like(whole), atol=0.1)

# %%
# The running statistics, which evaluation uses, differ between the ranks too; after this one
# step each rank holds ``0.1 *`` its own shard's mean (the momentum is 0.1), and none holds the
# whole batch's:

print("running_mean, one batch of 8:", rounded(bn.running_mean))
for rank, replica in enumerate(replicas):
    print(f"running_mean, rank {rank}:       ", rounded(replica.running_mean))
    assert torch.allclose(replica.running_mean, 0.1 * batch.chunk(4)[rank].mean(0))
assert not torch.allclose(replicas[0].running_mean, bn.running_mean)

# %%
# Why
# ---
#
# In training mode, BatchNorm normalises each feature with the mean and the biased variance of
# the batch it is given, and updates its running statistics from them.
# DDP runs one replica of the model per process, each on its own shard of the batch, and
# synchronises two things: the gradients, averaged in the backward pass, and the buffers, which
# it copies from rank 0 to the other ranks at the start of every forward pass
# (``broadcast_buffers=True``, the default).
# Nothing averages the batch statistics: each rank normalises with the statistics of its own
# shard.
# With 2 samples ``a`` and ``b``, the mean is ``(a + b) / 2`` and the variance
# ``((a - b) / 2) ** 2``: each normalised value is ``±1``.
# With a single sample per rank, BatchNorm refuses to train (the variance of one value is 0):

with expect_raises(ValueError, "Expected more than 1 value per channel when training"):
    copy.deepcopy(bn)(batch[:1])

# %%
# The buffers are the second half of the symptom.
# Two real ranks of a gloo process group on this CPU (:func:`~torch_pitfalls.run_ranks`), with a
# DDP model around a BatchNorm layer, train two steps on shards of 4 samples each; a forward
# pre-hook records the running mean that each rank's layer holds when its forward pass begins:

import torch._dynamo  # noqa: F401  (DDP imports it on first use: once here, not in every rank)
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import run_ranks

steps = [torch.randn(8, 3, generator=torch.Generator().manual_seed(s)) for s in (1, 2)]  # CPU


def ddp_running_means(rank, world_size):
    """Each step's running mean at the start of the layer's forward pass, and after it."""
    model = DDP(nn.BatchNorm1d(3))
    layer = model.module
    seen = {"at start": [], "after": []}
    layer.register_forward_pre_hook(
        lambda module, args: seen["at start"].append(module.running_mean.clone())
    )
    for step in steps:
        model(step.chunk(world_size)[rank]).sum().backward()
        seen["after"].append(layer.running_mean.clone())
    return seen


ranks = run_ranks(ddp_running_means, world_size=2)
for rank, seen in enumerate(ranks):
    print(f"rank {rank}: after step 1             {rounded(seen['after'][0])}")
for rank, seen in enumerate(ranks):
    print(f"rank {rank}: at the start of step 2 {rounded(seen['at start'][1])}")
assert not torch.allclose(ranks[0]["after"][0], ranks[1]["after"][0])  # each its own shard
assert torch.equal(ranks[1]["at start"][1], ranks[0]["after"][0])  # overwritten by rank 0's

# %%
# **Rank 1's statistics of step 1 are replaced by rank 0's at the start of step 2: the running
# statistics are an average over rank 0's shards only, and that is what a checkpoint saved by
# rank 0 keeps.**
# The other ranks' shards shape the gradients, not the statistics that evaluation uses.

# %%
# The fix
# -------
#
# **Use SyncBatchNorm when the batch per GPU is small: it computes each feature's mean and
# variance over the samples of all ranks, as one GPU would over the whole batch.**
# :meth:`~torch.nn.SyncBatchNorm.convert_sync_batchnorm` replaces every BatchNorm layer of a model
# (before wrapping it in DDP):

model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())
synced = nn.SyncBatchNorm.convert_sync_batchnorm(model)
print(synced)
assert isinstance(synced[1], nn.SyncBatchNorm)

# %%
# SyncBatchNorm synchronises on accelerators only (its message names GPU, XPU and
# PrivateUse1 devices).
# Inside a process group, in training mode, it refuses a CPU tensor, here in a gloo group of one
# process:

import datetime

dist.init_process_group(
    "gloo", store=dist.HashStore(), rank=0, world_size=1, timeout=datetime.timedelta(seconds=60)
)
try:
    with expect_raises(ValueError, "SyncBatchNorm expected input tensor to be on GPU"):
        nn.SyncBatchNorm(3)(batch.cpu())
finally:
    dist.destroy_process_group()

# %%
# Without a process group, or in evaluation mode, it runs as a plain BatchNorm.
# What it computes on the GPUs can be shown on the CPU by hand: each rank sums its samples and
# their squares, :func:`torch.distributed.all_reduce` adds the sums of all ranks, and each rank
# normalises its shard with the mean and variance of the whole batch.
# Two gloo ranks with 4 samples each:


def synced_statistics(rank, world_size):
    """One rank's shard normalised with statistics all-reduced over the ranks, as SyncBN does."""
    shard = steps[0].chunk(world_size)[rank]
    sums = torch.stack([shard.sum(0), (shard**2).sum(0), torch.full((3,), len(shard) * 1.0)])
    dist.all_reduce(sums)
    mean = sums[0] / sums[2]
    var = sums[1] / sums[2] - mean**2  # biased, for the normalisation
    return (shard - mean) / torch.sqrt(var + 1e-5), mean


by_hand = run_ranks(synced_statistics, world_size=2)
whole_batch = nn.BatchNorm1d(3)(steps[0])
combined = torch.cat([normalised for normalised, _ in by_hand])
print("ranks' means (all-reduced):", [rounded(mean) for _, mean in by_hand])
print("same output as one batch of 8:", torch.allclose(combined, whole_batch, atol=1e-5))
assert torch.allclose(combined, whole_batch, atol=1e-5)
assert torch.equal(by_hand[0][1], by_hand[1][1])  # every rank has the same statistics

# %%
# SyncBatchNorm costs a communication per layer in every forward pass, so projects often turn it
# on only when the batch per GPU is small.
# Two other fixes avoid the batch statistics altogether:
#
# * a normalisation that works per sample, :class:`~torch.nn.GroupNorm` or
#   :class:`~torch.nn.LayerNorm`, whose output does not depend on the batch or the number of GPUs;
# * BatchNorm layers kept in evaluation mode while fine-tuning (their pretrained running
#   statistics, frozen).
#
# Gradient accumulation does not help: it makes the effective batch of the optimizer larger, but
# each forward pass still normalises its own micro-batch.

group_norm = nn.GroupNorm(1, 3).to(device)
shards = torch.cat([group_norm(shard) for shard in batch.chunk(4)])
print("GroupNorm, 4 shards of 2 == one batch of 8:", torch.equal(shards, group_norm(batch)))
assert torch.equal(shards, group_norm(batch))

# %%
# A real-world report: "different accuracy with a different number of GPUs"
# -------------------------------------------------------------------------
#
# A user training a segmentation network found that its Dice score changed by 2 to 4 points with
# the number of GPUs, everything else, seeds included, being equal
# (`PyTorch issue 49794 <https://github.com/pytorch/pytorch/issues/49794>`_).
# A PyTorch maintainer's first question was whether the model used BatchNorm: ordinary BatchNorm
# normalises on each device separately, with :class:`~torch.nn.DataParallel` and DDP alike, and
# SyncBatchNorm is the layer for statistics over all devices.
# Where the running statistics come from was asked in the timm project: its author explained that
# PyTorch's DDP broadcasts the buffers from rank 0 at the start of each forward pass, and that
# without that broadcast each rank evaluated with its own statistics
# (`pytorch-image-models issue 110 <https://github.com/huggingface/pytorch-image-models/issues/110>`_).

# %%
# Takeaway
# --------
#
# **Under DDP, each BatchNorm layer normalises with the statistics of its own GPU's batch, and the
# running statistics come from rank 0's batches: with a few samples per GPU, convert the model
# with SyncBatchNorm.convert_sync_batchnorm, or use a normalisation that does not depend on the
# batch.**
# For what evaluation does with the running statistics, see :ref:`batchnorm-running-stats`.
