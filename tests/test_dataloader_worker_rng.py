"""The "dataloader-worker-rng" page's claims under "fork" and "spawn", and its helpers.

The page runs its DataLoaders with the platform's default start method; the tests below run the
same datasets with each start method explicitly (``multiprocessing_context=``), since a generator
is copied into the workers by inheriting memory under "fork" and by pickling under "spawn".
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from torch_pitfalls.data import (
    GlobalNumpyAngles,
    RandomAngles,
    TorchAngles,
    seed_worker_generator,
)

from .conftest import run_example

#: Start methods to test: "spawn" everywhere, "fork" where the platform has it.
CONTEXTS = [
    pytest.param(
        "fork",
        marks=pytest.mark.skipif(
            "fork" not in multiprocessing.get_all_start_methods(), reason="no fork here"
        ),
    ),
    "spawn",
]
#: A spawned worker imports torch before its first batch: generous on a loaded 2-core machine.
TIMEOUT = 120


def angles(dataset, context, epochs=1, **options):
    """For each epoch, the (worker, angles) of every batch, with two workers and batches of two."""
    loader = DataLoader(
        dataset,
        batch_size=2,
        num_workers=2,
        timeout=TIMEOUT,
        multiprocessing_context=context,
        **options,
    )
    return [
        [(batch["worker"][0].item(), batch["angle"].tolist()) for batch in loader]
        for _ in range(epochs)
    ]


def workers_repeat_each_other(batches) -> bool:
    """Whether the two workers' batches (which alternate) hold the same angles."""
    assert [w for w, _ in batches] == [0, 1, 0, 1]
    return batches[0][1] == batches[1][1] and batches[2][1] == batches[3][1]


def test_the_shuffled_epoch_holds_every_sample_once(device):
    # the page asserts that the fix's epoch is shuffled, not that it is a permutation
    run = run_example("dataloader-worker-rng", device)
    indices = [i for batch, _ in run["first_run"][0] for i in batch]
    assert sorted(indices) == list(range(8))


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_worker_copies_the_generator(context):
    sequence = [item["angle"] for item in RandomAngles(n=8, seed=0)]
    dataset = RandomAngles(n=8, seed=0)
    state = dataset.rng.bit_generator.state
    epochs = angles(dataset, context, epochs=2)
    assert all(workers_repeat_each_other(batches) for batches in epochs)
    assert epochs[0] == epochs[1]  # non-persistent workers start again from the same copy
    assert epochs[0][0][1] + epochs[0][2][1] == sequence[:4]
    assert dataset.rng.bit_generator.state == state


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("dataset_class", [GlobalNumpyAngles, TorchAngles])
def test_global_generators_are_seeded_per_worker(context, dataset_class):
    (batches,) = angles(dataset_class(n=8), context)
    assert not workers_repeat_each_other(batches)


@pytest.mark.parametrize("context", CONTEXTS)
def test_seeding_the_generator_per_worker_is_distinct_and_reproducible(context):
    def run():
        return angles(
            RandomAngles(n=8, seed=0),
            context,
            worker_init_fn=seed_worker_generator,
            generator=torch.Generator().manual_seed(0),
        )

    (first,) = run()
    (second,) = run()
    assert not workers_repeat_each_other(first)
    assert first == second


def test_random_angles_validates_and_reports_the_main_process():
    with pytest.raises(ValueError, match="n must be a non-negative int"):
        RandomAngles(n=-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        RandomAngles(seed=True)
    dataset = RandomAngles(n=2)
    with pytest.raises(IndexError):
        dataset[2]
    assert dataset[1]["worker"] == -1 and dataset[1]["index"] == 1
    assert all(0 <= item["angle"] < 360 for item in RandomAngles(n=8, seed=0))
    assert isinstance(dataset.rng, np.random.Generator)


def test_seed_worker_generator_needs_a_worker():
    with pytest.raises(RuntimeError, match="runs in a DataLoader worker"):
        seed_worker_generator(0)
