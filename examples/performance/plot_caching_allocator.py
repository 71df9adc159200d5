"""
.. _caching-allocator:

What ``torch.cuda.empty_cache()`` does and does not do
======================================================

After ``del model`` or at the end of an epoch, ``nvidia-smi`` still shows the GPU memory in use,
and :func:`torch.cuda.empty_cache` is called to "free" it, with little effect on the next
out-of-memory error.
PyTorch keeps the GPU memory of freed tensors in a cache to reuse it, and ``empty_cache`` only
returns that cached part: memory still held by a tensor, because something still refers to it,
stays where it is.

.. admonition:: What you will learn

   * the difference between allocated memory (:func:`torch.cuda.memory_allocated`) and reserved
     memory (:func:`torch.cuda.memory_reserved`), and what ``nvidia-smi`` shows;
   * what :func:`torch.cuda.empty_cache` returns to the GPU, and why that does not make room for
     more tensors in the same program;
   * which references keep memory alive: views, lists of losses, the names left in a notebook.

.. admonition:: Prerequisites

   :ref:`item-and-tolist` (a logged loss tensor keeps its graph alive).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# Memory is freed when the last reference goes
# ---------------------------------------------
#
# A tensor's memory belongs to its storage, and the storage is freed when nothing refers to it
# any more, on every device.
# ``del`` removes one name, not the memory: a view keeps the whole storage of the tensor it was
# taken from.
# We take one row of a 16 MiB matrix, delete the matrix, and look at the storage the row keeps:
import gc

import torch

from torch_pitfalls import cuda_section, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

matrix = torch.randn(4096, 1024, device=device)  # 4096 × 1024 float32 = 16 MiB
row = matrix[0]
del matrix
kept_by_view = row.untyped_storage().nbytes()
print(f"the row holds {row.nbytes} bytes and keeps a storage of {kept_by_view / 2**20:.0f} MiB")
assert row.nbytes == 4096 and kept_by_view == 16 * 2**20

# %%
# **A view keeps the whole storage alive; clone() what you keep.**
# The clone has a storage of its own, and the matrix's memory goes with the view:

row = row.clone()
print(f"after clone(): a storage of {row.untyped_storage().nbytes()} bytes")
assert row.untyped_storage().nbytes() == 4096

# %%
# The same holds for every other reference: a list of loss tensors kept for logging keeps every
# step's graph and activations (:ref:`item-and-tolist`), an exception's traceback keeps the
# frame's tensors, and in a notebook the output history (``_``, ``Out``) keeps the values of
# cells.
# No cache function can free memory that a reference still uses.
#
# Allocated and reserved memory
# -----------------------------
#
# On a GPU, asking the driver for memory (``cudaMalloc``) is slow and giving it back
# (``cudaFree``) synchronises the device, so PyTorch's **caching allocator keeps the memory of
# freed tensors reserved, to give it to the next tensors**.
# Two numbers describe it: :func:`torch.cuda.memory_allocated`, the bytes used by live tensors,
# and :func:`torch.cuda.memory_reserved`, the bytes the allocator holds, used or cached.
# ``nvidia-smi`` shows the reserved memory plus the CUDA context of the process.
# We allocate 256 MiB, delete it, and call :func:`torch.cuda.empty_cache`.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

MiB = 2**20

with cuda_section(device, "allocated and reserved memory") as live:
    if live:

        def clean_start():
            """Both counters now, from a clean state: the numbers shown are changes from here."""
            gc.collect()  # free unreachable tensors now, not in the middle of the measurement
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            return torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)

        def show(moment, start):
            """Print and return the changes of both counters since ``start``, in bytes."""
            allocated = torch.cuda.memory_allocated(device) - start[0]
            reserved = torch.cuda.memory_reserved(device) - start[1]
            print(
                f"{moment:<26} allocated +{allocated // MiB:>3} MiB, "
                f"reserved +{reserved // MiB:>3} MiB"
            )
            return allocated, reserved

        start = clean_start()
        block = torch.empty(256 * MiB, dtype=torch.uint8, device=device)
        after_alloc = show("after torch.empty:", start)
        del block
        after_del = show("after del:", start)
        torch.cuda.empty_cache()
        after_empty = show("after empty_cache():", start)
        assert after_alloc == (256 * MiB, 256 * MiB) and after_del == (0, 256 * MiB)
        assert after_empty == (0, 0)

# %%
# **del frees the tensor but the allocator keeps its memory; empty_cache() returns the cached
# memory to the driver**, and ``nvidia-smi`` shows it go.
# Inside the program nothing is gained: the next allocation would have reused the cached memory
# anyway, and now has to ask the driver again.
#
# ``empty_cache`` and a tensor still referenced
# ---------------------------------------------
#
# With a view still alive, as in the first section, neither ``del`` nor ``empty_cache`` frees
# anything:

with cuda_section(device, "empty_cache with a view still alive") as live:
    if live:
        start = clean_start()
        block = torch.empty(256 * MiB, dtype=torch.uint8, device=device)
        first_bytes = block[:16]
        del block
        torch.cuda.empty_cache()
        with_view = show("view alive, after empty_cache:", start)
        del first_bytes
        torch.cuda.empty_cache()
        without_view = show("view deleted, after empty_cache:", start)
        assert with_view == (256 * MiB, 256 * MiB) and without_view == (0, 0)

# %%
# The driver's view: the CUDA context
# -----------------------------------
#
# The memory in use on the device, as the driver reports it (:func:`torch.cuda.mem_get_info`),
# is more than PyTorch reserves: the CUDA context of each process (the driver's state and the
# loaded kernels of PyTorch and its CUDA libraries) takes more than 100 MiB that no PyTorch call
# returns (the workspaces of cuBLAS and cuDNN come from PyTorch's allocator, and count in its
# numbers).
# This is the memory that ``nvidia-smi`` still shows after ``empty_cache()`` with no tensor left:

with cuda_section(device, "memory in use on the device") as live:
    if live:
        free, total = torch.cuda.mem_get_info(device)
        in_use = total - free
        reserved_now = torch.cuda.memory_reserved(device)
        print(
            f"reserved by PyTorch: {reserved_now // MiB} MiB; "
            f"in use on the device: {in_use // MiB} MiB"
        )
        assert in_use - reserved_now > 100 * MiB

# %%
# (On a GPU shared with other processes, their memory counts in the driver's number too.)
#
# The fix
# -------
#
# **To make room for more tensors, drop the references, not the cache.**
# Keep Python numbers for logging (``loss.item()``), ``clone()`` the slices you keep, delete the
# names of large tensors (and of the model and optimizer between two trainings in one process),
# and read :func:`torch.cuda.memory_allocated` to see what is really used.
# Call :func:`torch.cuda.empty_cache` only to hand memory to *another* process, or to measure
# memory from a clean state; when memory is free but fragmented into blocks too small for a
# large tensor, the allocator's ``expandable_segments`` option (set in the
# ``PYTORCH_CUDA_ALLOC_CONF`` environment variable) is the tool, as PyTorch's `CUDA memory
# management notes <https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management>`_
# explain.
#
# A real-world report: "GPU memory is not freed correctly"
# --------------------------------------------------------
#
# In 2021, a user created one 61 MiB tensor on the GPU, deleted it, called ``empty_cache()``, and
# found ``nvidia-smi`` still reporting more than a gigabyte for the process
# (`pytorch/pytorch issue #60150 <https://github.com/pytorch/pytorch/issues/60150>`_).
# The tensor had been freed and its memory returned; what remained was the CUDA context of the
# process, which the last section measures, and which stays until the process ends.
#
# See also :ref:`no-grad-evaluation`, which measures the memory an evaluation loop without
# :class:`torch.no_grad` keeps.
#
# Takeaway
# --------
#
# **torch.cuda.empty_cache() returns only memory that no tensor uses; memory is freed by dropping
# the last reference to a tensor.**
# Read ``memory_allocated()`` for what tensors use, ``memory_reserved()`` for what PyTorch holds,
# and expect ``nvidia-smi`` to add the CUDA context on top.
