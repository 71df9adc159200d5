"""The sampler's rule behind the "sampler-set-epoch" page, for other sizes, seeds and epochs."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler


@pytest.mark.parametrize("replicas", [2, 3, 4])
@pytest.mark.parametrize("epoch", [0, 1, 5])
def test_ranks_share_one_permutation_per_seed_and_epoch(replicas, epoch):
    size = 12
    samplers = [
        DistributedSampler(range(size), num_replicas=replicas, rank=rank, seed=7)
        for rank in range(replicas)
    ]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    shares = [list(sampler) for sampler in samplers]
    permutation = torch.randperm(size, generator=torch.Generator().manual_seed(7 + epoch)).tolist()
    assert shares == [permutation[rank::replicas] for rank in range(replicas)]
    assert sorted(i for share in shares for i in share) == list(range(size))


def test_without_set_epoch_the_sampler_repeats_and_a_new_seed_changes_the_order():
    sampler = DistributedSampler(range(8), num_replicas=2, rank=0, seed=0)
    assert list(sampler) == list(sampler)
    other = DistributedSampler(range(8), num_replicas=2, rank=0, seed=1)
    assert list(other) != list(sampler)
    unshuffled = DistributedSampler(range(8), num_replicas=2, rank=1, shuffle=False)
    unshuffled.set_epoch(3)
    assert list(unshuffled) == [1, 3, 5, 7]
