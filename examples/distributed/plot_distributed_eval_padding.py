"""
.. _distributed-eval-padding:

``DistributedSampler`` repeats samples in evaluation
====================================================

Evaluation is split across the GPUs like training: each process scores its share of the validation
set, and the counts are summed over all processes.
The accuracy then depends on the number of GPUs: the same checkpoint on the same validation set
scores 71.4 % on one GPU and 62.5 % on two, and the number of samples counted is larger than the
dataset.
A :class:`~torch.utils.data.distributed.DistributedSampler` gives every process the same number of
samples, and when the dataset does not divide evenly, it fills the last round by repeating samples
from the start: those are scored twice.

.. admonition:: What you will learn

   * how ``DistributedSampler`` pads the index list to a multiple of the number of processes, and
     which samples it repeats;
   * why a summed metric then changes with the number of processes, and why ``drop_last=True`` is
     no cure for evaluation;
   * two fixes: an evaluation sampler without padding, or dropping the padded positions before the
     sums; and why the counts, not each process's mean, must be summed.

.. admonition:: Prerequisites

   :ref:`sampler-set-epoch` (how the sampler splits a dataset between ranks);
   :func:`torch.distributed.all_reduce` (a sum over all processes).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.run_ranks`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A validation set of 7 samples and a model's predictions for them, fixed so that the page shows
# only what evaluation does with them: the model gets samples 0 and 1 wrong and the 5 others right.
# Its true accuracy is 5 / 7.
from fractions import Fraction

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

dataset = list(range(7))
labels = torch.tensor([0, 1, 1, 0, 1, 0, 1], device=device)
predictions = torch.tensor([1, 0, 1, 0, 1, 0, 1], device=device)
correct = predictions == labels
print("correct per sample:", correct.int().tolist())
assert correct.sum().item() == 5


def evaluate(world_size, **sampler_args):
    """The correct and counted samples of each rank, summed as all_reduce would sum them."""
    total_correct = total_count = 0
    shares = []
    for rank in range(world_size):
        sampler = DistributedSampler(
            dataset, num_replicas=world_size, rank=rank, shuffle=False, **sampler_args
        )
        indices = list(sampler)
        shares.append(indices)
        total_correct += correct[indices].sum().item()
        total_count += len(indices)
    return shares, total_correct, total_count


# %%
# The evaluation loop of a distributed job gives the validation set a ``DistributedSampler`` too
# (here with ``shuffle=False``, as evaluation should), counts the correct predictions and the
# samples on each rank, and sums both over the ranks, as :func:`torch.distributed.all_reduce`
# does.
# The ranks of a job of 1, 2, 3 and 4 processes are computed here in one process: the sampler is
# given ``num_replicas`` and ``rank`` explicitly, and needs no process group then.

accuracy = {}
counted = {}
for world_size in (1, 2, 3, 4):
    shares, total_correct, total_count = evaluate(world_size)
    accuracy[world_size] = Fraction(total_correct, total_count)
    counted[world_size] = total_count
    print(
        f"{world_size} process(es): shares {shares} -> {total_correct}/{total_count} correct"
        f" = {float(accuracy[world_size]):.1%}"
    )

# %%
# **The same predictions score 71.4 %, 62.5 %, 55.6 % and 62.5 %: the accuracy depends on the
# number of processes, and 8 or 9 samples are counted from a dataset of 7.**
# The extra samples are the first ones of the dataset, 0 and 1, which the model gets wrong, so
# the accuracy drops; with other data it rises just as silently.

assert counted == {1: 7, 2: 8, 3: 9, 4: 8}
assert accuracy == {1: Fraction(5, 7), 2: Fraction(5, 8), 3: Fraction(5, 9), 4: Fraction(5, 8)}

# %%
# Why
# ---
#
# ``DistributedSampler`` gives every rank ``num_samples = ceil(len(dataset) / num_replicas)``
# indices: it extends the list of indices to ``total_size = num_samples * num_replicas`` with
# indices from its beginning, then deals it out, rank ``r`` taking every ``num_replicas``-th
# index from position ``r``.
# With 7 samples on 3 ranks, the list is 0 … 6 followed by 0 and 1 again:

sampler = DistributedSampler(dataset, num_replicas=3, rank=0, shuffle=False)
print(f"num_samples {sampler.num_samples}, total_size {sampler.total_size}")
padded = dataset + dataset[: sampler.total_size - len(dataset)]
print("the padded list of indices:", padded)
for rank in range(3):
    print(f"rank {rank} takes positions {rank}, {rank + 3}, {rank + 6}:", padded[rank::3])
assert (sampler.num_samples, sampler.total_size) == (3, 9)
assert [padded[rank::3] for rank in range(3)] == evaluate(3)[0]

# %%
# **Every rank gets the same number of samples so that every rank runs the same number of
# iterations.**
# In training, each iteration's backward pass all-reduces the gradients, and a rank with one
# batch fewer would leave the others waiting for it; a training sample seen twice in an epoch
# matters little.
# In evaluation, each repeat is a sample counted twice.
#
# The default ``shuffle=True`` makes it worse: the list is shuffled before it is padded, so the
# repeated samples are other samples in every epoch (after ``set_epoch``), and evaluating the same
# model twice gives two different scores:

shuffling = DistributedSampler(dataset, num_replicas=3, rank=2)  # seed 0, the default
repeated = []
for epoch in range(4):
    shuffling.set_epoch(epoch)
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(0 + epoch))
    padded = order.tolist() + order.tolist()[:2]  # what the sampler pads and deals out
    assert list(shuffling) == padded[2::3]  # rank 2's share ends with a repeated sample
    repeated.append(sorted(padded[7:]))
    print(f"epoch {epoch}: order {order.tolist()}, repeated: {repeated[-1]}")
assert len({tuple(pair) for pair in repeated}) > 1

# %%
# ``drop_last=True`` goes the other way: the sampler drops the end of the list so that it
# divides evenly, and those samples are never evaluated.
# With 7 samples on 2 ranks, sample 6 is never scored:

shares, total_correct, total_count = evaluate(2, drop_last=True)
print(f"drop_last=True on 2 ranks: shares {shares} -> {total_correct}/{total_count} correct")
assert shares == [[0, 2, 4], [1, 3, 5]] and total_count == 6

# %%
# The fix
# -------
#
# **In evaluation, score every sample exactly once: give each rank a share without padding, or
# drop the padded positions before summing.**
#
# *An evaluation sampler without padding.* Rank ``r`` takes indices ``r``, ``r + num_replicas``,
# …: the shares differ by at most one sample.
# Ranks then run different numbers of iterations, which is harmless as long as the evaluation
# loop makes no collective call per batch and sums once at the end: run the wrapped model,
# ``ddp_model.module``, under ``torch.no_grad()``, not the
# :class:`~torch.nn.parallel.DistributedDataParallel` wrapper, whose forward can broadcast buffers.


class UnpaddedSampler(torch.utils.data.Sampler):
    """Each rank's indices, every sample on exactly one rank, in order (for evaluation)."""

    def __init__(self, dataset, num_replicas, rank):
        self.indices = list(range(rank, len(dataset), num_replicas))

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


unpadded = {}
for world_size in (1, 2, 3, 4):
    shares = [list(UnpaddedSampler(dataset, world_size, rank)) for rank in range(world_size)]
    unpadded[world_size] = Fraction(
        sum(correct[share].sum().item() for share in shares), sum(len(s) for s in shares)
    )
    print(f"{world_size} process(es): shares {shares} -> {float(unpadded[world_size]):.1%}")
assert set(unpadded.values()) == {Fraction(5, 7)}

# %%
# *Or keep the sampler and drop the padding.* The padding is always the end of the
# padded list: rank ``r``'s ``i``-th index sits at position ``i * num_replicas + r`` of it, and is
# padding when that position is ``len(dataset)`` or more, with or without shuffling.
# Two real processes of a gloo process group on this CPU (:func:`~torch_pitfalls.run_ranks`)
# evaluate the 7 samples both ways and sum with :func:`torch.distributed.all_reduce`; each also
# averages the ranks' own accuracies, a second mistake:

import torch.distributed as dist

from torch_pitfalls import run_ranks

correct_cpu = correct.cpu()  # the ranks are CPU processes (a forked process must not touch CUDA)


def evaluate_on_rank(rank, world_size):
    """Correct and counted samples, summed over the ranks: as is, and without the padding."""
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)
    indices = list(sampler)
    is_real = torch.tensor(
        [i * world_size + rank < len(dataset) for i in range(len(indices))]
    )  # False where the position is padding
    hits = correct_cpu[indices]
    sums = torch.tensor(
        [
            hits.sum(),  # correct, padding included
            len(indices),  # counted, padding included
            hits[is_real].sum(),  # correct, padding dropped
            is_real.sum(),  # counted, padding dropped
        ],
        dtype=torch.float64,
    )
    dist.all_reduce(sums)  # the sum over the ranks, on every rank
    own = UnpaddedSampler(dataset, world_size, rank).indices
    mean_of_means = torch.tensor([correct_cpu[own].double().mean().item()], dtype=torch.float64)
    dist.all_reduce(mean_of_means)
    return {
        "indices": indices,
        "sums": sums.tolist(),
        "mean_of_means": mean_of_means.item() / world_size,
    }


per_rank = run_ranks(evaluate_on_rank, world_size=2)
for rank, found in enumerate(per_rank):
    print(f"rank {rank} evaluates {found['indices']}")
padded_correct, padded_count, real_correct, real_count = per_rank[0]["sums"]
for name, hits, count in [
    ("summed as is:", padded_correct, padded_count),
    ("padding dropped:", real_correct, real_count),
]:
    print(f"{name:26} {hits:.0f}/{count:.0f} = {hits / count:.1%}")
print(f"mean of ranks' accuracies: {per_rank[0]['mean_of_means']:.1%}")
assert [found["indices"] for found in per_rank] == [[0, 2, 4, 6], [1, 3, 5, 0]]
assert per_rank[0]["sums"] == per_rank[1]["sums"] == [5.0, 8.0, 5.0, 7.0]
assert abs(per_rank[0]["mean_of_means"] - (3 / 4 + 2 / 3) / 2) < 1e-12

# %%
# **Sum counts, not means:** with shares of 4 and 3 samples, the mean of the ranks' accuracies
# (3/4 and 2/3) is 70.8 %, not 71.4 %.
# All-reduce the numerators and denominators (correct and counted samples, summed losses and
# their numbers of tokens), and divide once.
# For metrics that are not sums (a ranking, an AUC), gather the predictions with their sample
# indices with :func:`torch.distributed.all_gather_object` and drop the repeated indices before
# computing the metric.

# %%
# A real-world report: validation accuracy that depends on the number of GPUs
# -----------------------------------------------------------------------------
#
# In 2019, when ``DistributedSampler`` had no ``drop_last`` argument, a user asked PyTorch to drop
# the padding: their validation function gave different results with different numbers of
# processes, because some samples were repeated
# (`PyTorch issue 22584 <https://github.com/pytorch/pytorch/issues/22584>`_).
# A maintainer answered that the padding keeps the ranks at the same number of iterations, so that
# none is left waiting in an all-reduce.
# A second report, titled "Incorrect Validation Accuracy Due to Distributed Sampler", asked for an
# option to drop instead of repeat
# (`PyTorch issue 25162 <https://github.com/pytorch/pytorch/issues/25162>`_); the sampler has
# since gained ``drop_last``, which for evaluation only trades repeated samples for missing ones.
# The torchvision classification reference scripts had the same flaw, noted with a comment in
# their evaluation code; an issue there also points out that their evaluation sampler shuffled, so
# the repeated images, and the score, changed from run to run
# (`torchvision issue 4559 <https://github.com/pytorch/vision/issues/4559>`_).

# %%
# Detectors
# ---------
#
# The runtime guard ``TP021`` detects this pitfall in your own code (see :doc:`/detectors`): a
# DataLoader that iterates a ``DistributedSampler`` made with ``shuffle=False`` and
# ``drop_last=False`` over a dataset whose length is not a multiple of ``num_replicas``, so that
# the sampler pads with repeated samples.
# It runs in each process of the job; here rank 1 of 2 is built in this process, as above, and
# evaluates 7 samples through a DataLoader:


def rank_1_samples(sampler):
    return [
        i for batch in DataLoader(dataset, batch_size=2, sampler=sampler) for i in batch.tolist()
    ]


with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP021 "):
        padded_share = rank_1_samples(
            DistributedSampler(dataset, num_replicas=2, rank=1, shuffle=False)
        )
with guards(language="en") as fixed:
    unpadded_share = rank_1_samples(UnpaddedSampler(dataset, 2, 1))
print("rank 1 evaluates", padded_share, "with DistributedSampler,", unpadded_share, "without")
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert padded_share == [1, 3, 5, 0] and unpadded_share == [1, 3, 5]
assert wrong.ids == ["TP021"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **DistributedSampler pads every rank to the same number of samples by repeating samples from the
# start: in evaluation, those are scored twice and the metric changes with the number of GPUs.**
# Evaluate with ``shuffle=False`` and a sampler that gives each sample to exactly one rank, or drop
# the padded positions, and all-reduce the counts, not the ranks' means.
# For the training side of the sampler, see :ref:`sampler-set-epoch`.
