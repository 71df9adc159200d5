"""
.. _cuda-in-forked-workers:

CUDA in ``__getitem__`` with forked DataLoader workers
======================================================

A dataset moves each sample to the GPU at the end of ``__getitem__`` (``return x.to("cuda")``),
so that the training loop receives batches that are ready to use.
With ``num_workers=0`` it trains.
With ``num_workers=2`` on Linux (whose workers start with "fork" up to Python 3.13), the first
batch fails with "Caught RuntimeError in DataLoader worker process 0", and the traceback below it
ends with "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you
must use the 'spawn' start method".
On a machine without a GPU the same code runs fine, so the bug waits for the first GPU run.

.. admonition:: What you will learn

   * which start method the DataLoader's workers use, and what a worker started with "fork"
     inherits from the main process;
   * why CUDA refuses to start in such a worker once the main process has used it;
   * the fix: workers build batches on the CPU, and the loop moves them to the GPU.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.DataLoader` with ``num_workers``; :ref:`device-agnostic-code`
   (tensors, devices and :meth:`Tensor.to() <torch.Tensor.to>`).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.expect_raises`,
:func:`~torch_pitfalls.cuda_section` (the CUDA-only parts of this page) and
:func:`~torch_pitfalls.run_isolated`, which runs Python code in a fresh interpreter.
"""

# %%
# The symptom
# -----------
#
# The dataset of the report: each item is made on ``device``, inside ``__getitem__``.
# The loop does what training loops do first, moving a model to the device, then loads the batches
# with two workers.
# Every DataLoader on this page starts its workers with "fork", the start method of this pitfall,
# and has a ``timeout``, so that a stuck worker fails the build instead of hanging it.
import multiprocessing
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

from torch_pitfalls import cuda_section, expect_raises, get_device, run_isolated

device = get_device()
print(f"device: {device}")


class MadeOnDevice(Dataset):
    """Item ``i`` is ``[i, i, i]``, created on ``device`` in ``__getitem__``."""

    def __init__(self, size, device):
        self.size, self.device = size, device

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return torch.full((3,), float(index), device=self.device)


def fork_loader(dataset, batch_size=2, **options):
    return DataLoader(
        dataset, batch_size, num_workers=2, multiprocessing_context="fork", timeout=60, **options
    )


used_before = torch.cuda.is_initialized()  # by earlier pages, in a docs build or a test session
model = nn.Linear(3, 1).to(device)
print("CUDA initialised in the main process:", torch.cuda.is_initialized())
assert torch.cuda.is_initialized() == (device.type == "cuda" or used_before)

with cuda_section(device, "CUDA in __getitem__ of a forked worker") as live:
    if live:
        loader = fork_loader(MadeOnDevice(4, device))
        with expect_raises(
            RuntimeError, "Cannot re-initialize CUDA in forked subprocess", show=False
        ) as caught:
            next(iter(loader))
        lines = str(caught.exception).strip().splitlines()
        print("first line of the error:", lines[0])
        print("last line of the error: ", lines[-1])
        assert lines[0] == "Caught RuntimeError in DataLoader worker process 0."
        assert lines[-1] == (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method"
        )

# %%
# On a GPU, the section above shows the error: the main process had initialised CUDA (to move the
# model), and the worker that loads the first batch fails as soon as it creates a tensor on
# ``cuda``.
# The DataLoader catches the worker's exception, sends it to the main process and raises it there
# again, as a :class:`RuntimeError` whose message starts with "Caught RuntimeError in DataLoader
# worker process 0." and carries the worker's traceback.
#
# On the CPU, ``device`` is the CPU, the main process has not initialised CUDA (``False`` above
# when the page runs without a GPU), and the same DataLoader loads its batches.
# The dataset below makes its items on the CPU whatever the page's device, so that on a GPU too
# this cell shows the loader working when its workers leave CUDA alone:

batches = [batch.tolist() for batch in fork_loader(MadeOnDevice(4, torch.device("cpu")))]
print("batches:", batches)
assert batches == [[[0.0] * 3, [1.0] * 3], [[2.0] * 3, [3.0] * 3]]

# %%
# Why
# ---
#
# **A worker started with "fork" is a copy of the main process, made at the moment the worker
# starts, and the CUDA state in that copy cannot be used.**
#
# The DataLoader starts its workers with the ``multiprocessing_context`` it is given; by default
# (``None``), with :mod:`multiprocessing`'s default start method:

method = multiprocessing.get_start_method()
print(
    "DataLoader(...).multiprocessing_context by default:",
    DataLoader(range(4)).multiprocessing_context,
)
print("the default start method of this machine:", method)
print("start methods this platform offers:", multiprocessing.get_all_start_methods())
assert DataLoader(range(4)).multiprocessing_context is None
assert method in multiprocessing.get_all_start_methods()

# %%
# "fork" is the default on Linux up to Python 3.13; macOS and Windows default to "spawn", and
# Linux defaults to "forkserver" since Python 3.14.
# A forked worker runs nothing of your script again (see :ref:`spawn-main-guard`): its memory is a
# copy of the main process's memory, Python objects and the state of the libraries included.
# A global that the main process changes at run time shows it: the worker reads the changed
# value, in a process of its own.


parent = {}  # filled by the main process below, after the dataset is created


class Probe(Dataset):
    """What a worker sees: its process, a value the main process set, and its CUDA state."""

    def __len__(self):
        return 2

    def __getitem__(self, index):
        return {
            "worker": get_worker_info().id,
            "pid": os.getpid(),
            "parent pid": os.getppid(),
            "value": parent.get("value"),
            "CUDA initialised in the worker": torch.cuda.is_initialized(),
        }


probe = Probe()
parent["value"] = "set after the dataset was created"
context = None if method == "fork" else "fork"  # the default where it is "fork"
seen = list(
    DataLoader(probe, batch_size=None, num_workers=2, multiprocessing_context=context, timeout=60)
)
for item in seen:
    print(
        f"worker {item['worker']}: a process of its own: {item['pid'] != os.getpid()}, "
        f"started by the main process: {item['parent pid'] == os.getpid()}, "
        f"reads the value the main process set: {item['value'] == parent['value']}"
    )
assert [item["worker"] for item in seen] == [0, 1]
assert all(item["pid"] != os.getpid() and item["parent pid"] == os.getpid() for item in seen)
assert all(item["value"] == parent["value"] for item in seen)

# %%
# The CUDA state of the main process is copied the same way: PyTorch's record that CUDA is
# initialised, and the handles of a CUDA context that belongs to the main process.
# "The CUDA runtime does not support the fork start method", says PyTorch's note on
# `CUDA in multiprocessing
# <https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing>`_:
# a forked process can neither use that context nor initialise CUDA again, and PyTorch checks
# for it before the CUDA call would fail.
# PyTorch therefore marks every process forked after CUDA was initialised in the main process,
# and :func:`torch.cuda.is_initialized` answers ``False`` there; the first CUDA call in it (here,
# a tensor created with ``device="cuda"``) tries to initialise CUDA again, and PyTorch refuses
# with "Cannot re-initialize CUDA in forked subprocess".
# A process without CUDA has no CUDA state to copy, which is why the error needs a GPU to appear.
# On a GPU, the section below shows both sides: the main process, then its forked workers.

print("the workers' CUDA state here:", [item["CUDA initialised in the worker"] for item in seen])
assert not any(item["CUDA initialised in the worker"] for item in seen)

with cuda_section(device, "the CUDA state of the main process and of its forked workers") as live:
    if live:
        seen = list(fork_loader(Probe(), batch_size=None))
        in_workers = [item["CUDA initialised in the worker"] for item in seen]
        print("main process:", torch.cuda.is_initialized(), "| its forked workers:", in_workers)
        assert torch.cuda.is_initialized() and in_workers == [False, False]

# %%
# What "initialised" means here is wider than it looks.
# With a GPU, :func:`torch.cuda.is_available` asks the CUDA runtime for the number of devices, and
# that call alone marks the later forks, while :func:`torch.cuda.is_initialized` still says
# ``False`` (PyTorch's documentation of :func:`~torch.cuda.is_available` calls this "poisoning"
# fork, and names ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` as the way to check without it).
# A fresh interpreter on a GPU shows it: its forked workers can use CUDA before the first CUDA call
# of the main process, and fail after a single call to :func:`~torch.cuda.is_available`.
# This is also why the same dataset can work in a quick test that loads a few batches before
# anything touches the GPU, and fail in the training script.

FRESH = """\
import torch
from torch.utils.data import DataLoader


def on_gpu(batch):  # the collate function runs in the worker
    return torch.tensor(batch, device="cuda").device.type, torch.cuda.is_initialized()


def load():
    loader = DataLoader(range(2), batch_size=1, num_workers=1, multiprocessing_context="fork",
                        timeout=60, collate_fn=on_gpu)
    try:
        return [tuple(item) for item in loader]
    except RuntimeError as error:
        return str(error).strip().splitlines()[-1]


print("before any CUDA call:", load())
print("is_available:", torch.cuda.is_available(), "| is_initialized:", torch.cuda.is_initialized())
print("after is_available:", load())
"""

with cuda_section(device, "a fresh process, before and after torch.cuda.is_available()") as live:
    if live:
        fresh = run_isolated(FRESH, env={"PYTORCH_NVML_BASED_CUDA_CHECK": "0"}, timeout=120)
        print(fresh.stdout, end="")
        assert fresh.returncode == 0, fresh.stderr
        assert fresh.stdout.splitlines() == [
            "before any CUDA call: [('cuda', True), ('cuda', True)]",
            "is_available: True | is_initialized: False",
            "after is_available: RuntimeError: Cannot re-initialize CUDA in forked subprocess. "
            "To use CUDA with multiprocessing, you must use the 'spawn' start method",
        ]

# %%
# Do not build on that window: every worker that uses CUDA creates a CUDA context of its own,
# which takes GPU memory in every worker, and a CUDA tensor returned by a worker reaches the main
# process through CUDA's inter-process sharing.
#
# The fix
# -------
#
# **Keep the workers on the CPU: __getitem__ returns CPU tensors, and the training loop
# moves each batch to the device.**
# The workers then never touch CUDA, whatever the main process did before.
# With ``pin_memory=True`` (only with a GPU: without one, the DataLoader warns and ignores it), a
# thread of the main process copies each batch into pinned memory, and
# ``batch.to(device, non_blocking=True)`` can then copy it to the GPU without making the CPU wait
# (see :ref:`non-blocking-copy`).


class MadeOnCPU(Dataset):
    """Item ``i`` is ``[i, i, i]``, a CPU tensor: what a worker should return."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return torch.full((3,), float(index))


loader = fork_loader(MadeOnCPU(), pin_memory=device.type == "cuda")
outputs, pinned = [], []
for batch in loader:
    pinned.append(batch.is_pinned())
    batch = batch.to(device, non_blocking=True)
    outputs.append(model(batch))

dataset = MadeOnCPU()
expected = [model(torch.stack([dataset[i], dataset[i + 1]]).to(device)) for i in (0, 2)]
print(
    "outputs on:", [str(out.device) for out in outputs], "| shapes:", [out.shape for out in outputs]
)
assert all(out.device == model.weight.device for out in outputs)
assert all(torch.equal(out, ref) for out, ref in zip(outputs, expected, strict=True))
print("batches in pinned memory when they reach the loop:", pinned)
if device.type == "cpu":
    assert pinned == [False, False]

with cuda_section(device, "the fix: CPU workers, pinned batches, moved in the loop") as live:
    if live:
        print("CUDA initialised in the main process:", torch.cuda.is_initialized())
        print("batches in pinned memory when they reach the loop:", pinned)
        print("outputs on:", [str(out.device) for out in outputs])
        assert torch.cuda.is_initialized() and pinned == [True, True]
        assert all(out.device.type == "cuda" for out in outputs)

# %%
# The error's own advice, the "spawn" start method (``multiprocessing_context="spawn"``, or
# "forkserver"), lets each worker initialise CUDA for itself, since it starts a fresh interpreter:
# it then needs the ``if __name__ == "__main__":`` guard of :ref:`spawn-main-guard`, every worker
# holds a CUDA context of its own, and the batches come back as CUDA tensors shared between
# processes, which the `DataLoader's documentation
# <https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading>`_ advises against, in
# favour of ``pin_memory=True``.
# GPU work on whole batches, such as augmentations, is better done in the loop, after the copy,
# where it runs in the main process's CUDA context.
# ``num_workers=0`` also makes the error disappear, by loading every batch in the main process,
# between the training steps.
#
# A real-world report: CUDA at the end of ``__getitem__``
# -------------------------------------------------------
#
# In `PyTorch issue 77159 <https://github.com/pytorch/pytorch/issues/77159>`_, a user reports
# seeing several people and groups train with ``num_workers=0``, and leave their GPUs mostly idle,
# because ``num_workers`` above zero gave them "Cannot re-initialize CUDA in forked subprocess";
# switching to "spawn", as the message suggests, did not solve it for them.
# The cause, found in their custom datasets, was the one of this page: the last step of
# ``__getitem__`` moved the sample to the GPU.
# The issue asks for a clearer error, such as a warning when a worker creates a tensor that is not
# on the CPU; the pull request that followed, which warned in ``default_collate`` about such
# tensors (`PyTorch pull request 77639 <https://github.com/pytorch/pytorch/pull/77639>`_), was
# closed without being merged.
#
# Takeaway
# --------
#
# **Return CPU tensors from** ``__getitem__`` **and move each batch to the GPU in the training loop
# (with** ``pin_memory=True`` **and** ``non_blocking=True``\ **): a worker forked from a process
# that has used CUDA cannot use CUDA.**
# "Used" includes :func:`torch.cuda.is_available`, and a machine without a GPU never shows the
# error.
