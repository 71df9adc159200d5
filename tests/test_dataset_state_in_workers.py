"""The "dataset-state-in-workers" page's claims under "spawn", which the page does not run.

The page runs its DataLoaders with the platform's default start method ("fork" on Linux up to
Python 3.13). Under "spawn" the dataset reaches a worker pickled instead of inherited: the
attribute is copied all the same, and the shared-memory tensor stays shared through the pickle.
"""

from __future__ import annotations

from torch.utils.data import DataLoader

from torch_pitfalls.data import EpochItems, SharedEpochItems

from .conftest import run_example

#: A spawned worker imports torch before its first batch: generous on a loaded 2-core machine.
TIMEOUT = 120


def spawned(dataset):
    return DataLoader(
        dataset,
        batch_size=2,
        num_workers=2,
        persistent_workers=True,
        timeout=TIMEOUT,
        multiprocessing_context="spawn",
    )


def test_spawned_workers_keep_their_copy_and_share_the_shared_tensor():
    page = run_example("dataset-state-in-workers", "cpu").namespace
    train, epochs_seen = page["train"], page["epochs_seen"]
    assert epochs_seen(train(spawned(EpochItems(4)))) == [{0}, {0}, {0}]
    assert epochs_seen(train(spawned(SharedEpochItems(4)))) == [{0}, {1}, {2}]
