"""The "iterable-dataset-duplicates" page's order of batches, its claims under "fork" and
"spawn" (``multiprocessing_context=``: the page uses the platform's default), and its helpers."""

from __future__ import annotations

from collections import Counter

import pytest
from torch.utils.data import DataLoader

from torch_pitfalls.data import NumberStream, ShardedNumberStream

from .conftest import run_example
from .test_dataloader_worker_rng import CONTEXTS, TIMEOUT


def test_iterable_dataset_duplicates(device):
    run = run_example("iterable-dataset-duplicates", device)
    # printed, not asserted by the page: the batches come from the two workers in turn
    assert run["doubled"][:4] == [0, 1, 0, 1]
    assert run["sharded"] == [0, 2, 1, 3, 4, 6, 5, 7]


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_worker_runs_the_whole_stream_unless_sharded(context):
    def received(dataset):
        loader = DataLoader(
            dataset, batch_size=2, num_workers=2, timeout=TIMEOUT, multiprocessing_context=context
        )
        return [n for batch in loader for n in batch.tolist()]

    assert Counter(received(NumberStream(0, 8))) == {n: 2 for n in range(8)}
    assert sorted(received(ShardedNumberStream(0, 8))) == list(range(8))


def test_streams_validate_and_describe_themselves():
    with pytest.raises(ValueError, match="end must be ≥ start"):
        NumberStream(5, 2)
    with pytest.raises(ValueError, match="start must be a non-negative int"):
        NumberStream(-1, 2)
    assert repr(ShardedNumberStream(2, 5)) == "ShardedNumberStream(2, 5)"
    assert len(NumberStream(2, 5)) == 3
    assert list(ShardedNumberStream(2, 5)) == [2, 3, 4]  # main process: the whole range
