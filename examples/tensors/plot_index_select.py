"""
.. _index-select:

Indices for ``torch.index_select``: type, shape and range
=========================================================

:func:`torch.index_select` picks whole rows, columns or slices of a tensor with an index tensor.
It is strict about that index: only a one-dimensional tensor of ``int64`` or ``int32`` values is
accepted, and every value must lie inside the selected dimension.
A wrong type or shape is refused at once, on every device.
A value out of range is refused at once on the CPU, with an exception whose class and wording
depend on the code path; on CUDA it triggers a device-side assert that is reported later, at some
other call, and that leaves the process unable to use the GPU at all.

.. admonition:: What you will learn

   * how to select rows and columns, and which index dtypes and shapes are accepted;
   * what the CPU raises for an index out of range, on several code paths;
   * why an out-of-range index on CUDA fails late and poisons the whole CUDA context;
   * how ``CUDA_LAUNCH_BLOCKING=1`` and a CPU run find the call that failed, and how to check
     indices before they reach the GPU.

.. admonition:: Prerequisites

   Tensor shapes and dimensions; :ref:`device-agnostic-code` (choosing the device once).

.. seealso::

   :ref:`legacy-tensor-constructor` (``torch.Tensor([...])`` makes a float index).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.run_isolated`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# First, what works: a 3×4 tensor, two rows picked along dimension 0 and two columns along
# dimension 1.
# The result keeps every other dimension and has as many slices as the index has values, in the
# order of the index.
import torch

from torch_pitfalls import cuda_section, expect_raises, get_device, run_isolated, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.arange(12.0, device=device).reshape(3, 4)
rows = torch.index_select(x, 0, torch.tensor([2, 0], device=device))
cols = x.index_select(1, torch.tensor([3, 1], device=device))
print("x:", x, "rows 2 and 0:", rows, "columns 3 and 1:", cols, sep="\n")
assert rows.shape == (2, 4) and cols.shape == (3, 2)
assert torch.equal(rows[0], x[2]) and torch.equal(rows[1], x[0])
assert torch.equal(cols[:, 0], x[:, 3]) and torch.equal(cols[:, 1], x[:, 1])

# %%
# The index must hold integers of one of two dtypes.
# ``int64`` and ``int32`` are accepted; the other integer types, ``bool`` and floating point are
# refused, even when their values are perfectly good row numbers.

accepted, refused = [], []
for dtype in (torch.int64, torch.int32):
    picked = x.index_select(0, torch.tensor([1, 0], device=device, dtype=dtype))
    assert torch.equal(picked, x[[1, 0]])
    accepted.append(str(dtype))
for dtype in (torch.int16, torch.uint8, torch.bool, torch.float32):
    index = torch.tensor([1, 0], device=device).to(dtype)
    with expect_raises(RuntimeError, "int32 or int64|not implemented for", show=False):
        x.index_select(0, index)
    refused.append(str(dtype))
print("accepted:", accepted)
print("refused: ", refused)

# %%
# A float index, typically the result of a division or of ``torch.tensor`` on floats, gets this
# message.
# On the CPU it names the two accepted dtypes; the CUDA kernel words it differently.
# The message printed below is the one raised on this build's device.

float_index = torch.tensor([1.0, 0.0], device=device)
with expect_raises(RuntimeError, r"Expected dtype int32 or int64|not implemented for 'Float'"):
    x.index_select(0, float_index)

# %%
# The index must also be a vector: a 2-D index is refused.
# A 0-d index (a single number as a tensor) counts as a vector of one value, so the selected
# dimension is kept, with size 1.

index_2d = torch.tensor([[0, 1], [2, 0]], device=device)
with expect_raises((IndexError, RuntimeError), r"supposed to be (an empty tensor or )?a vector"):
    x.index_select(0, index_2d)
one_row = x.index_select(0, torch.tensor(1, device=device))
print("0-d index gives shape", tuple(one_row.shape))
assert one_row.shape == (1, 4)

# %%
# Now an index that is out of range: ``x`` has rows 0, 1 and 2, and the index asks for row 5.
# We run every out-of-range call of this section on the CPU on purpose, whatever the device of
# the page: on CUDA the same calls trigger the device-side assert of the next section.
# On the CPU the call itself raises: the line after it never runs.

x_cpu = x.cpu()
bad_index = torch.tensor([0, 5])
out_of_range = {}
reached_next_line = False
with expect_raises(IndexError, "index out of range in self") as caught:
    torch.index_select(x_cpu, 0, bad_index)
    reached_next_line = True
out_of_range["index_select, dimension 0"] = type(caught.exception).__name__
print("line after the failing call ran:", reached_next_line)
assert not reached_next_line

# %%
# The exception class and the message depend on the code path, even inside ``index_select``:
# along dimension 1 of this 2-D tensor another CPU kernel runs, and it raises a
# :exc:`RuntimeError` with a message of its own.
# ``index_select`` does not wrap negative values either: ``-1`` is simply out of range.

with expect_raises(RuntimeError, "out of DATA bounds") as caught:
    x_cpu.index_select(1, torch.tensor([4]))
out_of_range["index_select, dimension 1"] = type(caught.exception).__name__
with expect_raises(IndexError, "index out of range in self") as caught:
    x_cpu.index_select(0, torch.tensor([-1]))
out_of_range["index_select, dimension 0, index -1"] = type(caught.exception).__name__

# %%
# The neighbours of ``index_select`` check their indices with their own words and classes:
# indexing with brackets (advanced indexing) and :class:`~torch.nn.Embedding` raise
# :exc:`IndexError`, :func:`torch.gather` raises :exc:`RuntimeError`.
# Brackets, unlike ``index_select``, accept ``-1`` and count it from the end.

with expect_raises(IndexError, "index 5 is out of bounds for dimension 0 with size 3") as caught:
    x_cpu[bad_index]
out_of_range["x[index]"] = type(caught.exception).__name__
with expect_raises(RuntimeError, "index 5 is out of bounds for dimension 0") as caught:
    torch.gather(x_cpu, 0, torch.tensor([[5, 0, 0, 0]]))
out_of_range["torch.gather"] = type(caught.exception).__name__
embedding = torch.nn.Embedding(3, 4)  # a table of 3 rows, like x
with expect_raises(IndexError, "index out of range in self") as caught:
    embedding(bad_index)
out_of_range["nn.Embedding"] = type(caught.exception).__name__
last_row = x_cpu[torch.tensor([-1])]
for path, name in out_of_range.items():
    print(f"{path:>36}: {name}")
print("x[tensor([-1])] is the last row:", last_row)
assert out_of_range == {
    "index_select, dimension 0": "IndexError",
    "index_select, dimension 1": "RuntimeError",
    "index_select, dimension 0, index -1": "IndexError",
    "x[index]": "IndexError",
    "torch.gather": "RuntimeError",
    "nn.Embedding": "IndexError",
}
assert torch.equal(last_row, x_cpu[2:])

# %%
# So ``except IndexError`` catches some of these errors and lets others through.
# **Catch both** ``IndexError`` **and** ``RuntimeError``, **or better, check the indices before
# the call** (see the fix below).
#
# On CUDA: a device-side assert, reported late
# --------------------------------------------
#
# On a GPU the same out-of-range ``index_select`` does not raise where it is called.
# The demonstration runs in a child process, because after a device-side assert that process
# cannot use CUDA any more: this is its source.

CUDA_CHILD = """
import traceback

import torch

from torch_pitfalls import get_device

device = get_device()
x = torch.arange(12.0, device=device).reshape(3, 4)
index = torch.tensor([0, 5], device=device)  # x has no row 5
try:
    rows = torch.index_select(x, 0, index)
    print("index_select returned", flush=True)
    total = (rows * 2).sum()
    print("a multiplication and a sum returned", flush=True)
    print(total.item())  # .item() waits for the GPU
except RuntimeError:
    traceback.print_exc()  # the first traceback: where the error surfaced
try:
    torch.ones(2, device=device).sum().item()
except RuntimeError:
    print("a fresh CUDA computation fails too", flush=True)
    raise
"""

# %%
# We run it and read what it printed, its last error line and the line of ``CUDA_CHILD`` that
# its first traceback points at.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.
import re


def first_traceback_line(result):
    """The line of ``CUDA_CHILD`` that the child's first traceback points at ('' if none)."""
    match = re.search(r'File "<string>", line (\d+)', result.stderr)
    return CUDA_CHILD.splitlines()[int(match.group(1)) - 1].strip() if match else ""


def show_child(result):
    """Print what a child printed, the kernel's assertion, its last error and where it points."""
    lines = (result.stdout + result.stderr).splitlines()
    kernel_asserts = [line.strip() for line in lines if "Assertion" in line]
    for line in result.stdout.splitlines():
        if "Assertion" not in line:
            print("child:", line)
    if kernel_asserts:
        print("kernel:", kernel_asserts[0])
    print("last error line:", result.last_error_line())
    print("the first traceback points at:", first_traceback_line(result))


with cuda_section(device, "the device-side assert in a child process") as live:
    if live:
        async_run = run_isolated(CUDA_CHILD, device=str(device))
        show_child(async_run)
        assert async_run.returncode != 0
        assert "device-side assert" in async_run.last_error_line()
        assert "a fresh CUDA computation fails too" in async_run.stdout

# %%
# On a GPU, the lines the child prints show how far it got before the error surfaced: past
# ``index_select``, at a later operation, the first that asked CUDA for its status, possibly
# well after the failing call (in the run recorded on an H200, already the next computation,
# ``(rows * 2).sum()``).
# The Python error names no operation, and its traceback points at that later line.
# The kernel's assertion message, which the GPU runtime prints outside the Python error, names
# the kernel (here ``indexSelectSmallIndex``) and its source file in PyTorch, not your Python line.
# Then even ``torch.ones(2)`` fails: **after a device-side assert, every CUDA call of that process
# fails, and only a new process can use the GPU again.**
#
# Why
# ---
#
# Checking that an index is in range means reading every index value.
# On the CPU the kernel reads them as it copies and raises in the calling thread, inside the call.
# **On CUDA, PyTorch only queues the kernel and returns at once; the GPU checks the indices later.**
# The check is a device-side assertion: it stops the kernel and sets an error on the whole CUDA
# context, which the next call that asks CUDA for its status reports, wherever it is.
# Such an error is sticky: the CUDA runtime refuses every later call in that process.

# %%
# An :class:`~torch.nn.Embedding` fed token ids from a larger vocabulary fails in exactly this way
# on a GPU, and so do class labels beyond the number of classes in a loss.
# The dtype and shape checks are different: PyTorch makes them on the CPU before it launches
# anything, so they raise at once on every device.
#
# Changed in PyTorch 1.8
# ----------------------
#
# Up to PyTorch 1.7, ``index_select`` on the CPU refused ``int32`` indices with "Expected dtype
# int64 for index".
# `PyTorch 1.8 <https://github.com/pytorch/pytorch/releases/tag/v1.8.0>`_ is the first release
# that accepts them (`pull request #47536 <https://github.com/pytorch/pytorch/pull/47536>`_,
# "Support the int32 index type").
# Bracket indexing refused ``int32`` indices for longer
# (`issue #83702 <https://github.com/pytorch/pytorch/issues/83702>`_) and accepts them since
# `PyTorch 2.0 <https://github.com/pytorch/pytorch/releases/tag/v2.0.0>`_
# (`pull request #86309 <https://github.com/pytorch/pytorch/pull/86309>`_).
# **Today both take an** ``int32`` **index as it is, and pick the same rows:**

int32_index = torch.tensor([2, 0], device=device, dtype=torch.int32)
by_brackets = x[int32_index]
by_index_select = x.index_select(0, int32_index)
print("int32 index, brackets:", by_brackets, "index_select:", by_index_select, sep="\n")
assert torch.equal(by_brackets, rows) and torch.equal(by_index_select, rows)

# %%
# Locating the failing call
# -------------------------
#
# Setting the environment variable ``CUDA_LAUNCH_BLOCKING=1`` makes every kernel launch wait until
# the kernel has finished.
# The error is then raised by the call that launched the failing kernel, and the traceback points
# at it.
# It must be set before CUDA starts (in the shell, or in the child's environment as here), and it
# slows everything down: use it to debug only.
# The same child, with the variable set:

with cuda_section(device, "the child run with CUDA_LAUNCH_BLOCKING=1") as live:
    if live:
        blocking_run = run_isolated(
            CUDA_CHILD, device=str(device), env={"CUDA_LAUNCH_BLOCKING": "1"}
        )
        blocking_line = first_traceback_line(blocking_run)
        show_child(blocking_run)
        assert "index_select returned" not in blocking_run.stdout
        assert "torch.index_select(x, 0, index)" in blocking_line

# %%
# The other way, which needs no GPU: run the same code on the CPU.
# **On the CPU an out-of-range index raises in the call that uses it**, with a message that says
# which path failed.
# Here is the child's ``index_select`` again, with its tensors on the CPU:

x_child, index_child = torch.arange(12.0).reshape(3, 4), torch.tensor([0, 5])
with expect_raises(IndexError, "index out of range in self"):
    torch.index_select(x_child, 0, index_child)

# %%
# The parent process never touched the failing kernel, so it still computes on CUDA:

with cuda_section(device, "the check that the parent still computes on CUDA") as live:
    if live:
        after = torch.index_select(x, 0, torch.tensor([2, 0], device=device))
        print(f"after the children, on {after.device}:", after)
        assert torch.equal(after.cpu(), x_cpu[[2, 0]])

# %%
# The fix
# -------
#
# Build index tensors as ``int64`` (the default of ``torch.tensor`` for Python ints) and
# flatten any index that is not a vector.
# A 2-D index can go through ``index_select`` flattened and be reshaped afterwards: the result
# equals bracket indexing with the 2-D index.

flat = x.index_select(0, index_2d.flatten())
picked = flat.view(*index_2d.shape, x.size(1))
print("shape with the 2-D index:", tuple(picked.shape))
assert picked.shape == (2, 2, 4)
assert torch.equal(picked, x[index_2d])

# %%
# **Check the range of indices that come from data before they reach a kernel.**
# This small function raises a clear :exc:`IndexError` on every device, before anything is
# launched, so the CUDA context stays usable.
# On CUDA the check waits for the GPU (it reads the minimum and maximum), so use it while
# debugging, or where the indices come from outside (labels, token ids, file contents).


def checked_index_select(tensor, dim, index):
    """``torch.index_select`` that first checks that every index is in ``[0, size)``."""
    size = tensor.size(dim)
    if index.numel() and not (index.min() >= 0 and index.max() < size):
        low, high = index.min().item(), index.max().item()
        raise IndexError(f"indices must be in [0, {size}) for dim {dim}, got {low}..{high}")
    return tensor.index_select(dim, index)


with expect_raises(IndexError, r"indices must be in \[0, 3\) for dim 0, got 0\.\.5"):
    checked_index_select(x, 0, bad_index.to(device))
good = checked_index_select(x, 0, torch.tensor([2, 0], device=device))
assert torch.equal(good, rows)

# %%
# Takeaway
# --------
#
# **Give** ``index_select`` **a 1-D index of dtype** ``int64`` **or** ``int32`` **whose values
# lie in** ``[0, size)`` **of the selected dimension.**
# On the CPU a bad value raises at once, as ``IndexError`` or ``RuntimeError`` depending on the
# path; on CUDA it surfaces later as a device-side assert that ruins the process: re-run with
# ``CUDA_LAUNCH_BLOCKING=1`` or on the CPU to find the call, and check indices that come from data.
