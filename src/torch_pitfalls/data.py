"""Datasets that DataLoader workers run, kept in an importable module.

A :class:`~torch.utils.data.DataLoader` with ``num_workers > 0`` gives every worker process its own
copy of the dataset and calls its ``worker_init_fn`` there. Under the "fork" start method (the
default on Linux up to Python 3.13) a worker inherits a copy of the parent's memory; under "spawn"
(the default on macOS and Windows) and "forkserver" (the default on Linux since Python 3.14) the
dataset and the function are pickled, and a worker imports their classes and functions by module
and name. Defined here rather than in the
pages, they are found under every start method, so the pages and their tests behave the same
whichever one a platform uses.

Each class and function names the page that introduces it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, Sampler, get_worker_info


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


class RandomAngles(Dataset):
    """Item ``i`` is a random rotation in whole degrees, for sample ``i`` ("dataloader-worker-rng").

    Each item is a dict: ``index`` (``i``), ``angle`` (in ``range(360)``; it stands in for any
    random augmentation) and ``worker``, the id of the DataLoader worker that loaded it (``-1`` in
    the main process). The angle is drawn from a ``numpy.random.Generator`` that ``__init__``
    creates and keeps in ``self.rng``: the pattern whose state every DataLoader worker copies.

    Args:
        n: number of items (``int`` ≥ 0).
        seed: seed of the generator (``int`` ≥ 0).

    Raises:
        ValueError: ``n`` or ``seed`` is not a non-negative ``int``.
        IndexError: an index outside ``range(n)``.

    >>> a, b = RandomAngles(4, seed=0), RandomAngles(4, seed=0)
    >>> [a[i] for i in range(4)] == [b[i] for i in range(4)]  # the same seed, the same angles
    True
    >>> item = a[3]
    >>> item["index"], item["worker"], 0 <= item["angle"] < 360
    (3, -1, True)
    """

    def __init__(self, n: int = 8, seed: int = 0) -> None:
        self.n = _check_count("n", n)
        self.rng = np.random.default_rng(_check_count("seed", seed))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, int]:
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} out of range for {self.n} items")
        info = get_worker_info()
        return {"index": index, "angle": self.angle(), "worker": -1 if info is None else info.id}

    def angle(self) -> int:
        """One random angle in ``range(360)``, from ``self.rng``."""
        return int(self.rng.integers(0, 360))


class GlobalNumpyAngles(RandomAngles):
    """:class:`RandomAngles` drawing from NumPy's global RNG ("dataloader-worker-rng").

    >>> _ = np.random.seed(0); first = GlobalNumpyAngles(2)[0]
    >>> _ = np.random.seed(0); first == GlobalNumpyAngles(2)[0]
    True
    """

    def angle(self) -> int:
        """One random angle in ``range(360)``, from ``np.random.randint``."""
        return int(np.random.randint(0, 360))


class TorchAngles(RandomAngles):
    """:class:`RandomAngles` drawing from torch's global RNG ("dataloader-worker-rng").

    >>> _ = torch.manual_seed(0); first = TorchAngles(2)[0]
    >>> _ = torch.manual_seed(0); first == TorchAngles(2)[0]
    True
    """

    def angle(self) -> int:
        """One random angle in ``range(360)``, from :func:`torch.randint`."""
        return int(torch.randint(0, 360, ()).item())


def seed_worker_generator(worker_id: int) -> None:
    """A ``worker_init_fn`` that reseeds the worker's copy of the dataset ("dataloader-worker-rng").

    It replaces ``dataset.rng`` with a new ``numpy.random.Generator`` seeded with
    ``get_worker_info().seed``, the seed that the DataLoader gives this worker: different for every
    worker and every epoch, and reproducible when the DataLoader has a seeded ``generator=``.

    Args:
        worker_id: the worker's index, as the DataLoader passes it (the seed already includes it).

    Raises:
        RuntimeError: called outside a DataLoader worker.

    >>> seed_worker_generator(0)
    Traceback (most recent call last):
    ...
    RuntimeError: seed_worker_generator runs in a DataLoader worker (as worker_init_fn) only
    """
    info = get_worker_info()
    if info is None:
        raise RuntimeError(
            "seed_worker_generator runs in a DataLoader worker (as worker_init_fn) only"
        )
    info.dataset.rng = np.random.default_rng(info.seed)


class NumberStream(IterableDataset):
    """The numbers ``start, …, end - 1``, streamed ("iterable-dataset-duplicates").

    It stands in for a stream read from files or a database: ``__iter__`` yields every item, and
    every DataLoader worker runs its own copy of ``__iter__``. ``len()`` is the number of items.

    Args:
        start: first number (``int`` ≥ 0).
        end: one past the last number (``int`` ≥ ``start``).

    Raises:
        ValueError: ``start`` or ``end`` is not a non-negative ``int``, or ``end < start``.

    >>> stream = NumberStream(0, 4)
    >>> stream, len(stream), list(stream)
    (NumberStream(0, 4), 4, [0, 1, 2, 3])
    """

    def __init__(self, start: int, end: int) -> None:
        self.start = _check_count("start", start)
        self.end = _check_count("end", end)
        if end < start:
            raise ValueError(f"end must be ≥ start, got start={start}, end={end}")

    def __len__(self) -> int:
        return self.end - self.start

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.start}, {self.end})"

    def __iter__(self):
        yield from range(self.start, self.end)


class ShardedNumberStream(NumberStream):
    """:class:`NumberStream` that gives each worker its own share ("iterable-dataset-duplicates").

    Worker ``k`` of ``n`` yields every ``n``-th number, starting from ``start + k``; in the main
    process (``num_workers=0``) :func:`~torch.utils.data.get_worker_info` returns ``None`` and the
    whole range is yielded.

    >>> list(ShardedNumberStream(0, 4))
    [0, 1, 2, 3]
    """

    def __iter__(self):
        info = get_worker_info()
        if info is None:  # loading in the main process: one copy, the whole stream
            yield from range(self.start, self.end)
        else:  # worker info.id of info.num_workers: every num_workers-th item
            yield from range(self.start + info.id, self.end, info.num_workers)


class EpochItems(Dataset):
    """Items that report the dataset's ``epoch`` when they were loaded ("dataset-state-in-workers").

    Each item is a dict: ``index``, ``epoch`` (the value of ``self.epoch`` at the moment the item
    is loaded; it stands in for any state a training loop changes on its dataset, such as a
    curriculum's difficulty) and ``worker``, the id of the DataLoader worker that loaded it
    (``-1`` in the main process). The training loop sets ``dataset.epoch``; a worker reads its own
    copy of the dataset.

    Args:
        n: number of items (``int`` ≥ 0).

    Raises:
        ValueError: ``n`` is not a non-negative ``int``.
        IndexError: an index outside ``range(n)``.

    >>> dataset = EpochItems(4)
    >>> dataset.epoch = 2
    >>> dataset[3]
    {'index': 3, 'epoch': 2, 'worker': -1}
    """

    def __init__(self, n: int = 4) -> None:
        self.n = _check_count("n", n)
        self.epoch = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, int]:
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} is out of range for {self.n} items")
        info = get_worker_info()
        return {"index": index, "epoch": int(self.epoch), "worker": -1 if info is None else info.id}


class SharedEpochItems(EpochItems):
    """:class:`EpochItems` whose ``epoch`` lives in shared memory ("dataset-state-in-workers").

    ``epoch`` is a property over a one-element tensor moved to shared memory with
    :meth:`~torch.Tensor.share_memory_`: a worker's copy of the dataset, inherited ("fork") or
    unpickled ("spawn", "forkserver"), refers to the same memory, so a value set in the main
    process is the one every worker reads at its next item.

    >>> dataset = SharedEpochItems(4)
    >>> dataset.epoch = 5
    >>> dataset.epoch, dataset[0]["epoch"], dataset.shared.is_shared()
    (5, 5, True)
    """

    def __init__(self, n: int = 4) -> None:
        self.shared = torch.zeros((), dtype=torch.int64).share_memory_()
        super().__init__(n)

    @property
    def epoch(self) -> int:
        return int(self.shared)

    @epoch.setter
    def epoch(self, value: int) -> None:
        self.shared.fill_(value)


class EpochSampler(Sampler):
    """A sampler that sends the epoch with every index ("dataset-state-in-workers").

    It yields ``(epoch, index)`` for ``index`` in ``range(n)``, in order; ``set_epoch(e)`` sets the
    epoch of the next pass, as :class:`~torch.utils.data.distributed.DistributedSampler` does. A
    sampler runs in the main process: what it yields is sent to the workers with each batch.

    >>> sampler = EpochSampler(3)
    >>> sampler.set_epoch(1)
    >>> list(sampler)
    [(1, 0), (1, 1), (1, 2)]
    """

    def __init__(self, n: int) -> None:
        self.n = _check_count("n", n)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that the next pass over the sampler yields with its indices."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        epoch = self.epoch  # read once, when the DataLoader starts the pass
        return iter([(epoch, index) for index in range(self.n)])


class EpochFromSampler(EpochItems):
    """:class:`EpochItems` that takes the epoch from its key, ``(epoch, index)``.

    Introduced on "dataset-state-in-workers".

    Use it with :class:`EpochSampler`: the epoch arrives with each index instead of being read from
    the worker's copy of the dataset.

    >>> EpochFromSampler(4)[(3, 1)]
    {'index': 1, 'epoch': 3, 'worker': -1}
    """

    def __getitem__(self, key: tuple[int, int]) -> dict[str, int]:
        epoch, index = key
        return {**super().__getitem__(index), "epoch": epoch}
