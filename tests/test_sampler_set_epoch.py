"""Values explained on the "sampler-set-epoch" page, and the sampler's rule for other sizes."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from .conftest import run_example


def test_sampler_set_epoch(device):
    run = run_example("sampler-set-epoch", device)
    dataset = run["dataset"]
    assert dataset == list(range(8))
    # a plain shuffling loader: a new order every epoch
    assert len({tuple(order) for order in run["plain_orders"]}) == 3
    # no set_epoch: three identical epochs, two disjoint halves that cover the dataset
    stale = run["stale"]
    assert stale[0] == stale[1] == stale[2]
    assert sorted(stale[0][0] + stale[0][1]) == dataset
    assert not set(stale[0][0]) & set(stale[0][1])
    assert [s.epoch for s in run["samplers"]] == [0, 0]
    # the rule: randperm with seed + epoch, rank r takes every second index from position r
    permutation = run["permutation"]
    assert [permutation[0::2], permutation[1::2]] == stale[0]
    # the fix: a new order each epoch, still a partition, and epoch 0 unchanged
    fixed = run["fixed"]
    assert len({tuple(shares[0]) for shares in fixed}) == 3
    assert all(sorted(shares[0] + shares[1]) == dataset for shares in fixed)
    assert fixed[0] == stale[0]
    assert run["resumed"][0] == fixed[2]
    assert "mutually exclusive with shuffle" in run.stdout
    assert "process group has not been initialized" in run.stdout


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


def test_static_checker_flags_the_wrong_code_and_not_its_fix():
    static = run_example("sampler-set-epoch", "cpu")["static"]
    assert [finding.rule for finding in static["orders_without_set_epoch"]] == ["TP108"]
    assert static["orders_with_set_epoch"] == []
