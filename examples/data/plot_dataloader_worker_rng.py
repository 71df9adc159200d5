"""
.. _dataloader-worker-rng:

Random augmentation in DataLoader workers
=========================================

A dataset that draws its random augmentations from a generator object created in ``__init__``
works as intended in the main process.
With ``num_workers=2``, each worker process draws from its own copy of that generator, in the same
state: the two workers produce the same "random" augmentations, and when the workers are started
again for the next epoch, they produce the same ones again.
PyTorch seeds each worker's global random number generators, so ``np.random`` and ``torch.rand``
are safe in a dataset today; a generator object of your own is not.

.. admonition:: What you will learn

   * why every worker starts from the same copy of the dataset's generator, whatever the start
     method of its processes;
   * which random number generators the DataLoader seeds in each worker, and that NumPy's global
     one is among them since PyTorch 1.9;
   * how to seed your own generator per worker with ``worker_init_fn`` and
     :func:`~torch.utils.data.get_worker_info`, and how ``generator=`` makes a run reproducible;
   * why the same seed on every rank of a distributed run gives every rank the same
     augmentations.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.Dataset` and :class:`~torch.utils.data.DataLoader`: how a dataset
   returns items and a loader batches them.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`, and the
datasets of :mod:`torch_pitfalls.data`: :class:`~torch_pitfalls.data.RandomAngles`,
:class:`~torch_pitfalls.data.GlobalNumpyAngles`, :class:`~torch_pitfalls.data.TorchAngles` and
:func:`~torch_pitfalls.data.seed_worker_generator`.
"""

# %%
# The symptom
# -----------
#
# The dataset gives each of its 8 samples a random rotation angle, drawn from a NumPy
# ``Generator`` that ``__init__`` creates with a fixed seed.
# Each item also says which worker loaded it.
# The dataset lives in an importable module, :mod:`torch_pitfalls.data`: with the "spawn" start
# method (the default on macOS and Windows), a worker imports the dataset's class by module and
# name, and this keeps the page the same under every start method.
# Here is its code:
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: RandomAngles
#
# In the main process, the generator gives one angle after the other:
import torch
from torch.utils.data import DataLoader

from torch_pitfalls import get_device, seed_everything
from torch_pitfalls.data import (
    GlobalNumpyAngles,
    RandomAngles,
    TorchAngles,
    seed_worker_generator,
)

seed_everything(0)
device = get_device()
print(f"device: {device} (the DataLoader's workers are CPU processes on every device)")

sequence = [item["angle"] for item in RandomAngles(n=8, seed=0)]
print("angles drawn in the main process:", sequence)

# %%
# A DataLoader with two workers, batches of two, and two epochs.
# The two workers take the batches in turn; every DataLoader on this page has a ``timeout``, so
# that a stuck worker fails the build instead of hanging it.


def load_angles(dataset, epochs=2, **options):
    """For each epoch, the (worker, angles) of every batch, in the order they arrive."""
    loader = DataLoader(dataset, batch_size=2, num_workers=2, timeout=60, **options)
    return [
        [(batch["worker"][0].item(), batch["angle"].tolist()) for batch in loader]
        for _ in range(epochs)
    ]


def show(epochs):
    for number, batches in enumerate(epochs):
        print(f"epoch {number}: " + " | ".join(f"worker {w}: {a}" for w, a in batches))


dataset = RandomAngles(n=8, seed=0)
state_before = dataset.rng.bit_generator.state
copied = load_angles(dataset)
show(copied)

# %%
# **The two workers draw the same angles, and the second epoch repeats the first.**
# Each worker replays the start of the sequence above, and the dataset's own generator, in the main
# process, has not moved.

workers = [[w for w, _ in batches] for batches in copied]
assert workers == [[0, 1, 0, 1]] * 2
for batches in copied:
    assert batches[0][1] == batches[1][1] and batches[2][1] == batches[3][1]
    assert batches[0][1] + batches[2][1] == sequence[:4]
assert copied[0] == copied[1]
untouched = dataset.rng.bit_generator.state == state_before
print("the main process's generator is untouched:", untouched)
assert untouched

# %%
# With ``persistent_workers=True`` the workers stay alive between epochs, so each epoch continues
# where its worker stopped.
# The epochs now differ, but the two workers still repeat each other:

persistent = load_angles(RandomAngles(n=8, seed=0), epochs=2, persistent_workers=True)
show(persistent)
assert persistent[0] != persistent[1]
for batches in persistent:
    assert batches[0][1] == batches[1][1] and batches[2][1] == batches[3][1]
assert [a for _, a in persistent[1][::2]] == [sequence[4:6], sequence[6:8]]

# %%
# Why
# ---
#
# **Every worker process gets its own copy of the dataset, generator included, in the state it
# had in the main process.**
# How the copy is made depends on the process start method: with "fork" (the default on Linux up
# to Python 3.13) the worker inherits a copy of the main process's memory; with "spawn" (the
# default on macOS and Windows) and "forkserver" (the default on Linux since Python 3.14) the
# dataset is pickled and unpickled in the worker, and a ``Generator`` pickles with its state.
# Either way the copies are identical, and each worker draws the same numbers from its own copy.
# Without ``persistent_workers``, the workers are started again for every epoch, from the main
# process's dataset, whose generator never moved.
#
# The DataLoader does seed each worker, but only the global generators it knows: Python's
# :mod:`random`, torch's, and NumPy's global one, each from a per-worker seed
# (``base_seed + worker_id``, where ``base_seed`` is drawn anew each time the workers start).
# It cannot know about a generator stored in your dataset.
# A dataset that draws from torch's generator gets different angles in each worker and each
# epoch:

torch_angles = load_angles(TorchAngles(n=8))
show(torch_angles)
for batches in torch_angles:
    assert batches[0][1] != batches[1][1] and batches[2][1] != batches[3][1]
assert torch_angles[0] != torch_angles[1]

# %%
# Changed in PyTorch 1.9
# ----------------------
#
# Many posts about this pitfall show it with NumPy's global generator, ``np.random``, and
# recommend a ``worker_init_fn`` that calls ``np.random.seed``.
# That advice predates `PyTorch 1.9 <https://github.com/pytorch/pytorch/releases/tag/v1.9.0>`_,
# whose DataLoader seeds NumPy's global generator in each worker, as it does torch's
# (`pull request #56488 <https://github.com/pytorch/pytorch/pull/56488>`_; until then, workers
# started with "fork" inherited the same NumPy state).
# Today the global form is fine:

numpy_angles = load_angles(GlobalNumpyAngles(n=8))
show(numpy_angles)
for batches in numpy_angles:
    assert batches[0][1] != batches[1][1] and batches[2][1] != batches[3][1]
assert numpy_angles[0] != numpy_angles[1]

# %%
# **A generator object of your own is a different matter: PyTorch 1.9 changed nothing for it.**
# NumPy's documentation calls the global functions legacy and recommends a dedicated ``Generator``
# (`numpy.random.seed <https://numpy.org/doc/stable/reference/random/generated/numpy.random.seed.html>`_),
# and some libraries of transforms keep a generator in each transform object, so the pitfall has
# moved rather than disappeared.
#
# The fix
# -------
#
# **Seed your generator in each worker, from the seed the DataLoader gives that worker.**
# ``worker_init_fn`` runs in each worker before it loads anything, and
# :func:`~torch.utils.data.get_worker_info` returns the worker's copy of the dataset and its seed:
#
# .. literalinclude:: /../src/torch_pitfalls/data.py
#    :pyobject: seed_worker_generator
#
# (Like the dataset, the function lives in an importable module: with "spawn" a worker imports
# ``worker_init_fn`` by name.)
# For a run that is reproducible from start to end, also give the DataLoader a seeded
# :class:`torch.Generator`: it then draws the workers' ``base_seed`` and the shuffling order from
# it instead of from the global generator.
# Two runs with the same seed, shuffled:


def reproducible_run():
    loader = DataLoader(
        RandomAngles(n=8, seed=0),
        batch_size=2,
        shuffle=True,
        num_workers=2,
        timeout=60,
        worker_init_fn=seed_worker_generator,
        generator=torch.Generator().manual_seed(0),
    )
    return [
        [(batch["index"].tolist(), batch["angle"].tolist()) for batch in loader] for _ in range(2)
    ]


first_run, second_run = reproducible_run(), reproducible_run()
for number, batches in enumerate(first_run):
    print(f"epoch {number}: " + " | ".join(f"samples {i} → {a}" for i, a in batches))
print("the second run is identical:", first_run == second_run)
assert first_run == second_run
for batches in first_run:  # no two batches of an epoch share their angles
    assert len({tuple(angles) for _, angles in batches}) == len(batches)
assert [a for _, a in first_run[0]] != [a for _, a in first_run[1]]
assert [i for _, indices in first_run[0] for i in indices] != list(range(8))

# %%
# The other fix is the one the previous section showed: draw from torch's generator or NumPy's
# global one, which the DataLoader seeds for you.
# And an augmentation belongs to the training data only: :ref:`split-shared-transform` shows how
# a validation split can take it away from the training split.
#
# In distributed training the shuffling moves from the DataLoader into a
# :class:`~torch.utils.data.distributed.DistributedSampler`, which has its own way of seeding each
# epoch: :ref:`sampler-set-epoch`.
# Seeds make the random numbers repeat, not every computation: :ref:`cuda-nondeterminism` shows
# the operations that still differ between two runs with the same seeds.

# %%
# Every rank with the same seed
# -----------------------------
#
# Distributed training runs one copy of the script per GPU, and every copy, every *rank*, usually
# starts with the same ``seed_everything(seed)``.
# A :class:`~torch.utils.data.distributed.DistributedSampler` gives each rank other samples, but
# the random numbers are another matter: **each rank's DataLoader draws its workers' base_seed
# from torch's global generator, which is in the same state on every rank, so worker 0 of rank 0
# and worker 0 of rank 1 draw the same augmentations, batch after batch.**
# We simulate two ranks one after the other in this process: the sampler takes ``num_replicas``
# and ``rank`` as arguments, so no process group is needed.

from torch.utils.data.distributed import DistributedSampler


def rank_angles(rank, seed=0, **options):
    """The (sample indices, angles) of each batch that ``rank`` of 2 loads in one epoch."""
    seed_everything(seed)  # what each rank's script does first
    dataset = TorchAngles(n=8)
    sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=False)
    loader = DataLoader(
        dataset, batch_size=2, num_workers=2, timeout=60, sampler=sampler, **options
    )
    return [(batch["index"].tolist(), batch["angle"].tolist()) for batch in loader]


def show_ranks(runs):
    for rank, batches in enumerate(runs):
        print(f"rank {rank}: " + " | ".join(f"samples {i} → {a}" for i, a in batches))


same_seed = [rank_angles(rank) for rank in (0, 1)]
show_ranks(same_seed)
rank_indices = [[i for i, _ in batches] for batches in same_seed]
rank_angle_lists = [[a for _, a in batches] for batches in same_seed]
assert rank_indices[0] != rank_indices[1]  # other samples on each rank
assert rank_angle_lists[0] == rank_angle_lists[1]  # the same augmentations

# %%
# The global batch of ``2 × batch_size`` samples then holds pairs of samples augmented the same
# way: with ``N`` GPUs, each augmentation is repeated ``N`` times, and the data set looks less
# varied than it is.
# (With ``num_workers=0`` the augmentations come from the global generator itself, the same on
# every rank.)
# **Make the random numbers depend on the rank.**
# Seeding the whole script with ``seed + rank`` does it; to keep the global generator identical on
# every rank (for code that relies on it), give the DataLoader its own generator seeded with the
# rank: its workers' seeds come from it.
# Each rank then draws its own augmentations, and a second run repeats the first:


def seeded_by_rank(rank, seed=0):
    return rank_angles(rank, seed, generator=torch.Generator().manual_seed(seed + rank))


by_rank = [seeded_by_rank(rank) for rank in (0, 1)]
show_ranks(by_rank)
print("the run is reproducible:", seeded_by_rank(0) == by_rank[0])
assert [a for _, a in by_rank[0]] != [a for _, a in by_rank[1]]
assert seeded_by_rank(0) == by_rank[0]

# %%
# A real-world report: "each worker generates the same sequence of random numbers"
# --------------------------------------------------------------------------------
#
# In 2025, a user of TorchSig, a signal-processing library built on PyTorch, found that with
# several DataLoader workers the library's random transforms produced identical values in every
# worker
# (`TorchDSP/torchsig issue #343 <https://github.com/TorchDSP/torchsig/issues/343>`_; the user
# ran macOS, where workers start with "spawn").
# The transforms each kept a generator object, seeded once when it was created: exactly the
# dataset above.
# PyTorch 1.9's seeding of NumPy's global generator did not reach those objects, and the
# maintainers added a function that seeds every worker's generators.
#
# Takeaway
# --------
#
# **Every DataLoader worker starts from a copy of your dataset: a generator object inside it is
# copied in the same state, so the workers repeat each other's random augmentations.**
# Seed such generators in ``worker_init_fn`` from ``get_worker_info().seed``, or draw from torch's
# or NumPy's global generators, which the DataLoader seeds per worker (NumPy's since PyTorch 1.9);
# pass a seeded ``generator=`` for a reproducible run.
