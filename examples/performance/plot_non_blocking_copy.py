"""
.. _non-blocking-copy:

``non_blocking=True`` and pinned memory
=======================================

``tensor.to(device, non_blocking=True)`` lets the CPU go on while a copy between the host and a
GPU runs.
For a copy to the GPU that is safe to use, because the GPU runs its work in order.
For a copy *to the CPU* it is not: the call returns before the data has arrived, and code that
reads the result at once reads whatever the destination memory held before.
The copy is only asynchronous at all when the CPU side is in pinned (page-locked) memory.

.. admonition:: What you will learn

   * what ``non_blocking=True`` does in each direction, and when the CPU must wait before reading;
   * what pinned memory is, and how :meth:`~torch.Tensor.is_pinned`,
     :meth:`~torch.Tensor.pin_memory` and ``DataLoader(pin_memory=True)`` behave, with and
     without a GPU;
   * how to wait for one copy with a :class:`torch.cuda.Event` instead of the whole device.

.. admonition:: Prerequisites

   :ref:`cuda-async-timing` (CUDA calls return before their work is done).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.measured`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# Pinned memory, seen from the CPU
# --------------------------------
#
# A GPU copies to and from host memory by direct memory access, which needs memory that the
# operating system will not move or swap out: pinned, or page-locked, memory.
# Ordinary CPU tensors are not pinned; :meth:`~torch.Tensor.pin_memory` returns a pinned copy,
# and needs an accelerator to do it.
# Without one, it raises an error whose text depends on the build: the CPU-only wheel says that
# no accelerator is available; a CUDA build on a machine without an NVIDIA driver (the default
# wheel on Linux, on a laptop without an NVIDIA GPU) says "Found no NVIDIA driver on your system"
# in PyTorch 2.8 and later (2.6 said the same as the CPU-only wheel, 2.4 gave a CUDA error).
import time
import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

from torch_pitfalls import (
    cuda_section,
    expect_raises,
    expect_warns,
    get_device,
    measured,
    seed_everything,
)

seed_everything(0)
device = get_device()
if torch.__version__ >= "2.6":
    accelerator = torch.accelerator.is_available()
else:  # PyTorch 2.5 and older: no torch.accelerator, see "Changed in PyTorch 2.6" below
    accelerator = torch.cuda.is_available()
print(f"device: {device} | an accelerator is available: {accelerator}")

host = torch.arange(6, dtype=torch.float32)
print("an ordinary CPU tensor is pinned:", host.is_pinned())
assert not host.is_pinned()
if accelerator:
    pinned = host.pin_memory()
    print("after pin_memory():", pinned.is_pinned())
    assert pinned.is_pinned()
else:  # CPU-only builds (and 2.6), CUDA builds without a driver (2.8 and later, 2.4)
    with expect_raises(
        RuntimeError,
        "Cannot access accelerator device when none is available"
        "|Found no NVIDIA driver on your system|CUDA driver version is insufficient",
    ):
        host.pin_memory()

# %%
# A :class:`~torch.utils.data.DataLoader` with ``pin_memory=True`` puts each batch in pinned
# memory, ready for a fast copy to the GPU.
# Without an accelerator it warns and gives ordinary batches (before PyTorch 2.7, without a
# warning):

loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, pin_memory=True)
if accelerator:
    (batch,) = next(iter(loader))
elif torch.__version__ >= "2.7":
    with expect_warns(UserWarning, "no accelerator is found"):
        (batch,) = next(iter(loader))
else:  # PyTorch 2.6 and older: no warning, see "Changed in PyTorch 2.7" below
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (batch,) = next(iter(loader))
    print("warnings:", [str(w.message) for w in seen])
    assert seen == []
print("the DataLoader's batch is pinned:", batch.is_pinned())
assert batch.is_pinned() == accelerator

# %%
# And ``non_blocking`` means nothing when no copy happens: a CPU tensor moved to the CPU is the
# same tensor.

same = host.to("cpu", non_blocking=True)
print("host.to('cpu', non_blocking=True) is host:", same is host)
assert same is host

# %%
# The symptom: reading a copy that has not arrived
# ------------------------------------------------
#
# On a GPU, ``.to("cpu", non_blocking=True)`` allocates a pinned destination, queues the copy
# behind the GPU's pending work, and returns.
# We queue some work first (20 products of large matrices), then copy a tensor whose values we
# know, and read the result at once.
# We take a snapshot with :meth:`~torch.Tensor.clone`, which copies on the CPU immediately.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

expected = torch.arange(1, 1_000_001, dtype=torch.float32)  # no zero among the values

with cuda_section(device, "reading a device-to-host copy too early") as live:
    if live:
        on_gpu = expected.to(device)
        busy = torch.randn(4096, 4096, device=device)
        torch.cuda.synchronize()
        for _ in range(20):
            _ = busy @ busy  # about a few milliseconds of queued GPU work each
        result = on_gpu.to("cpu", non_blocking=True)
        snapshot = result.clone()  # what code that reads the result at once sees
        early_ok = torch.equal(snapshot, expected)
        print("result pinned:", result.is_pinned(), "| correct when read at once:", early_ok)
        torch.cuda.synchronize()
        late_ok = torch.equal(result, expected)
        print("correct after torch.cuda.synchronize():", late_ok)
        assert result.is_pinned() and not early_ok and late_ok

# %%
# **A device-to-host copy with non_blocking=True is finished only after a synchronisation**;
# until then the tensor holds the old contents of its memory.
# Nothing warns: the values are simply wrong, or right by luck when the GPU was idle, which is
# why such code passes small tests and fails under load.
#
# The other direction has its own trap: a host-to-device copy from pinned memory reads the source
# when the GPU gets to it.
# Changing the source on the CPU before then changes what arrives:

with cuda_section(device, "changing the source of a host-to-device copy") as live:
    if live:
        source = torch.ones(1_000_000).pin_memory()
        target = torch.zeros(1_000_000, device=device)
        torch.cuda.synchronize()
        for _ in range(20):
            _ = busy @ busy
        target.copy_(source, non_blocking=True)
        source.fill_(-1.0)  # the CPU reuses its buffer for the next batch
        torch.cuda.synchronize()
        arrived = target.unique().tolist()
        print("values that arrived on the GPU:", arrived)
        assert arrived == [-1.0]

# %%
# Why
# ---
#
# A GPU runs the work of a stream in order, so a kernel queued after a host-to-device copy sees
# the copied data: **using a non-blocking copy on the GPU is safe, reading one on the CPU is
# not**, because the CPU does not wait for the stream unless it is told to.
# The copy is only asynchronous from pinned memory: from pageable memory the CUDA driver first
# copies the data into a pinned staging buffer, and the call returns only after that copy, which
# is most of the work.
# We time how long the call takes to return, for the same 64 MiB from each kind of memory:

with cuda_section(device, "returning from a copy, pageable or pinned", measured=True) as live:
    if live:
        pageable_src = torch.randn(16 * 1024 * 1024)
        pinned_src = pageable_src.pin_memory()

        def return_time(src):
            torch.cuda.synchronize()
            start = time.perf_counter()
            _ = src.to(device, non_blocking=True)
            elapsed = time.perf_counter() - start
            torch.cuda.synchronize()
            return elapsed

        pageable_s = min(return_time(pageable_src) for _ in range(10))
        pinned_s = min(return_time(pinned_src) for _ in range(10))
        return_ratio = pageable_s / pinned_s
        print(measured(f"the call returns {return_ratio:.0f}× later from pageable memory", device))
        assert return_ratio > 2

# %%
# The fix
# -------
#
# **Synchronise before the CPU reads the result of a non-blocking copy to the host.**
# :func:`torch.cuda.synchronize` waits for everything queued on the device; a
# :class:`torch.cuda.Event` recorded after the copy waits for that copy and the work before it,
# and :meth:`~torch.cuda.Event.query` says whether it is done without waiting.
# The CPU can do other work between the copy and the wait, which is the point of the flag:

with cuda_section(device, "waiting for the copy with an event") as live:
    if live:
        for _ in range(20):
            _ = busy @ busy
        result = on_gpu.to("cpu", non_blocking=True)
        copied = torch.cuda.Event()
        copied.record()  # marks the point in the stream after the copy
        done_at_once = copied.query()
        copied.synchronize()  # waits for this copy (and what was queued before it) only
        late_ok = torch.equal(result, expected)
        print("copy done when queued:", done_at_once, "| correct after the event:", late_ok)
        assert not done_at_once and late_ok

# %%
# For the host-to-device direction, do not write into a pinned buffer while a copy from it may
# be pending: use a new buffer per batch (as the DataLoader's pinning does), or wait for an event
# recorded after the copy before reusing it.
# When in doubt, leave ``non_blocking`` at its default, ``False``: the copy is then complete when
# the call returns.
#
# A real-world report: "to('cpu', non_blocking=True) works weird"
# ---------------------------------------------------------------
#
# In 2022, a user copied GPU tensors to the CPU with ``non_blocking=True`` and found unexpected
# values on the CPU side, with a :func:`time.sleep` where the program needed to wait
# (`pytorch/pytorch issue #86264 <https://github.com/pytorch/pytorch/issues/86264>`_).
# The maintainers closed it as expected behaviour: the CPU goes on before such a copy is
# finished, and only a synchronisation, or a plain blocking copy, guarantees that the data has
# arrived; in 2024 a PyTorch developer opened an issue proposing either to make such copies safe
# or to document beside ``Tensor.to`` that they need a synchronisation
# (`pytorch/pytorch issue #140296 <https://github.com/pytorch/pytorch/issues/140296>`_).
#
# See also :ref:`item-and-tolist`: ``.item()`` and ``.tolist()`` are blocking copies to the host,
# safe to read and costly to call often.
#
# Changed in PyTorch 2.6: ``torch.accelerator``
# ---------------------------------------------
#
# :mod:`torch.accelerator`, which this page asks whether an accelerator is available, first
# appeared in `PyTorch 2.6 <https://github.com/pytorch/pytorch/releases/tag/v2.6.0>`_
# (`pull request #132204 <https://github.com/pytorch/pytorch/pull/132204>`_, "Introduce a
# device-agnostic runtime API design"); on older releases, ``torch.cuda.is_available()`` asks the
# same of CUDA.

print("torch.accelerator exists:", hasattr(torch, "accelerator"))
assert hasattr(torch, "accelerator") == (torch.__version__ >= "2.6")

# %%
# Changed in PyTorch 2.7: the DataLoader warns
# --------------------------------------------
#
# Up to PyTorch 2.6, a ``DataLoader(pin_memory=True)`` on a machine without CUDA gave ordinary
# batches without a word.
# Since `PyTorch 2.7 <https://github.com/pytorch/pytorch/releases/tag/v2.7.0>`_ it asks
# :mod:`torch.accelerator` and warns that "no accelerator is found", as the first section shows.
#
# Takeaway
# --------
#
# **non_blocking=True to the GPU is safe to use on the GPU; non_blocking=True to the CPU must be
# followed by a synchronisation (an event or torch.cuda.synchronize) before the CPU reads the
# result.**
# The flag only makes copies asynchronous from pinned memory: pin with ``pin_memory=True`` in the
# DataLoader, and do not overwrite a pinned source before its copy has run.
