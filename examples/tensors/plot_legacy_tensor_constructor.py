"""
.. _legacy-tensor-constructor:

``torch.Tensor(…)`` versus ``torch.tensor(…)``
==============================================

The class :class:`torch.Tensor` can be called like a function, and the call looks like
:func:`torch.tensor`, but it is an older constructor with other rules.
Given integers, it reads them as a shape and returns an uninitialised tensor: ``torch.Tensor(3)``
is three numbers of whatever the memory held, not the number 3.
Given a list or an array, it always makes ``float32``, whatever the data, and given a tensor it
returns that same memory.
``torch.tensor`` always reads its argument as data and infers the dtype from it.

.. admonition:: What you will learn

   * what ``torch.Tensor(3)``, ``torch.Tensor([3])`` and ``torch.tensor(3)`` return;
   * why an uninitialised tensor is a bug that tests can miss, and how to make it visible;
   * how the two constructors pick dtypes, and which keyword arguments the old one refuses;
   * the factory functions to use instead: ``torch.tensor``, ``torch.empty``, ``torch.zeros``,
     ``torch.as_tensor``.

.. admonition:: Prerequisites

   Tensor dtypes and devices.

.. seealso::

   :ref:`index-select` (an index built with ``torch.Tensor`` is a float index, which is
   refused).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.

.. note::

   An uninitialised tensor holds whatever the memory held before: its values change from run to
   run and from machine to machine.
   This page prints only the shape and dtype of such tensors, never their values.
"""

# %%
# The symptom
# -----------
#
# Two calls that differ by one capital letter:

import torch

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

legacy = torch.Tensor(3)
modern = torch.tensor(3)
print(f"torch.Tensor(3): shape {tuple(legacy.shape)}, dtype {legacy.dtype}")
print(f"torch.tensor(3): shape {tuple(modern.shape)}, dtype {modern.dtype}, value {modern.item()}")
assert legacy.shape == (3,) and legacy.dtype == torch.float32
assert modern.shape == () and modern.dtype == torch.int64 and modern.item() == 3

# %%
# ``torch.Tensor(3)`` is a vector of three ``float32`` numbers that nobody wrote: the memory is
# allocated and handed over as it is, exactly like :func:`torch.empty`.
# Code that starts an accumulator with it, as in ``total = torch.Tensor(1)`` followed by
# ``total += loss``, adds to whatever was in memory.
# Those values depend on what the memory held before: they may look harmless in one run and not
# in the next, so a quick test can miss the bug.
#
# PyTorch can make it visible: in deterministic mode with
# :attr:`torch.utils.deterministic.fill_uninitialized_memory` set (its default),
# uninitialised floating-point memory is filled with NaN, and the accumulator reports it.

import torch.utils.deterministic

assert torch.utils.deterministic.fill_uninitialized_memory
torch.use_deterministic_algorithms(True)
try:
    legacy_total = torch.Tensor(1)
    for loss in (0.5, 0.25):
        legacy_total += loss
    empty_is_nan = torch.empty(3).isnan().all().item()
finally:
    torch.use_deterministic_algorithms(False)
print(
    "accumulator started with torch.Tensor(1), deterministic mode: NaN =",
    legacy_total.isnan().item(),
)
assert legacy_total.isnan().item() and empty_is_nan

# %%
# Why
# ---
#
# ``torch.Tensor`` has two meanings, chosen from the type of its arguments:
# **integers are a shape, a list or an array is data**.
# The same numbers change meaning with their brackets:

shapes_and_data = {
    "torch.Tensor(2, 3)": torch.Tensor(2, 3),
    "torch.Tensor(torch.Size([2, 3]))": torch.Tensor(torch.Size([2, 3])),
    "torch.Tensor([2, 3])": torch.Tensor([2, 3]),
    "torch.Tensor((2, 3))": torch.Tensor((2, 3)),
}
for call, result in shapes_and_data.items():
    print(f"{call:>33}: shape {tuple(result.shape)}")
assert shapes_and_data["torch.Tensor(2, 3)"].shape == (2, 3)
assert shapes_and_data["torch.Tensor(torch.Size([2, 3]))"].shape == (2, 3)
assert shapes_and_data["torch.Tensor([2, 3])"].tolist() == [2.0, 3.0]
assert shapes_and_data["torch.Tensor((2, 3))"].tolist() == [2.0, 3.0]

# %%
# The first two are uninitialised 2×3 tensors; the last two hold the numbers 2 and 3.
# A single Python float is neither a shape nor a sequence, and is refused:

with expect_raises(TypeError, "must be a sequence"):
    torch.Tensor(3.5)

# %%
# **The dtype rules differ too.**
# ``torch.Tensor`` is the class of the default dtype, ``float32``: it converts any list or array
# to it.
# ``torch.tensor`` infers the dtype from the data: integers give ``int64``, Python floats
# ``float32``, a NumPy array keeps its own dtype.
import numpy as np

samples = {
    "[1, 2]": [1, 2],
    "[1.0, 2.0]": [1.0, 2.0],
    "[True, False]": [True, False],
    "np.array([1.5, 2.5])": np.array([1.5, 2.5]),
}
dtypes = {}
for name, data in samples.items():
    dtypes[name] = (torch.Tensor(data).dtype, torch.tensor(data).dtype)
    print(f"{name:>21}: torch.Tensor -> {dtypes[name][0]}, torch.tensor -> {dtypes[name][1]}")
assert dtypes == {
    "[1, 2]": (torch.float32, torch.int64),
    "[1.0, 2.0]": (torch.float32, torch.float32),
    "[True, False]": (torch.float32, torch.bool),
    "np.array([1.5, 2.5])": (torch.float32, torch.float64),
}

# %%
# The ``float32`` of ``torch.Tensor`` is why class labels or indices built with it are refused by
# the functions that need integers; ``index_select`` (see :ref:`index-select`):

x = torch.arange(6.0, device=device).reshape(3, 2)
with expect_raises(RuntimeError, r"int32 or int64|not implemented for 'Float'"):
    x.index_select(0, torch.Tensor([2, 0]).to(device))

# %%
# Given a tensor, ``torch.Tensor`` copies nothing: it returns a tensor on the same memory, with the
# input's dtype.
# ``torch.tensor`` copies, and warns that ``detach().clone()`` is the clearer way to copy a tensor:

source = torch.tensor([1, 2])
alias = torch.Tensor(source)
same_memory = alias.data_ptr() == source.data_ptr()
print("torch.Tensor(an int64 tensor): dtype", alias.dtype, "| same memory:", same_memory)
assert alias.dtype == torch.int64 and same_memory
if torch.__version__ >= "2.7":
    copy_advice = r"recommended to use sourceTensor\.detach\(\)\.clone\(\)"
else:  # PyTorch 2.6 and older, see "Changed in PyTorch 2.7" below
    copy_advice = r"recommended to use sourceTensor\.clone\(\)\.detach\(\)"
with expect_warns(UserWarning, copy_advice):
    copy = torch.tensor(source)
assert copy.data_ptr() != source.data_ptr()

# %%
# Finally, ``torch.Tensor`` takes no ``dtype=`` at all, and only the default device type,
# the CPU: asking for a GPU tensor fails, on a machine with a GPU or without one.

with expect_raises(TypeError, r"new\(\) received an invalid combination of arguments"):
    torch.Tensor([1, 2], dtype=torch.float64)
with expect_raises(
    RuntimeError, "legacy constructor expects device type: cpu but device type: cuda"
):
    torch.Tensor(3, device="cuda")

# %%
# The fix
# -------
#
# **Use** :func:`torch.tensor` **for data and the factory functions for shapes**, each with
# ``dtype=`` and ``device=`` where they matter:
#
# * data: ``torch.tensor(3)``, ``torch.tensor([2, 0])``,
#   ``torch.tensor(data, dtype=torch.float32)``;
# * a shape filled with a value: :func:`torch.zeros`, :func:`torch.ones`, :func:`torch.full`;
# * a shape you will overwrite entirely: :func:`torch.empty`, which says what it does;
# * an existing array without a copy: :func:`torch.as_tensor` or :func:`torch.from_numpy`;
# * an existing tensor: ``t.detach().clone()``.

total = torch.zeros(1, device=device)
for loss in (0.5, 0.25):
    total += loss
labels = torch.tensor([2, 0], device=device)
weights = torch.tensor([1, 2], dtype=torch.float32, device=device)
scratch = torch.empty(2, 3, device=device)
array = np.array([1.5, 2.5])
shared = torch.as_tensor(array)
print("accumulator:", total.item(), "| labels:", labels.dtype, "| weights:", weights.dtype)
print("torch.empty(2, 3): shape", tuple(scratch.shape), "| torch.as_tensor(array):", shared.dtype)
assert total.item() == 0.75
assert labels.dtype == torch.int64 and weights.dtype == torch.float32
assert torch.equal(x.index_select(0, labels), x[[2, 0]])
assert shared.dtype == torch.float64 and shared.data_ptr() == array.ctypes.data

# %%
# A real-world report
# -------------------
#
# A published orthogonal-regularisation snippet started its penalty from ``torch.FloatTensor(1)``,
# one of ``torch.Tensor``'s typed siblings, and added each layer's term to it
# (`kevinzakka/pytorch-goodies issue #8 <https://github.com/kevinzakka/pytorch-goodies/issues/8>`_,
# 2019).
# The reporter pointed out that the starting value is uninitialised memory and suggested
# ``torch.zeros(1)``, and the author changed the code.
# In another thread
# (`pytorch/pytorch issue #28867 <https://github.com/pytorch/pytorch/issues/28867>`_), a user
# asked why ``torch.FloatTensor(10)`` gives ten arbitrary numbers while
# ``torch.tensor(10, dtype=torch.float)`` gives 10; a maintainer explained the two meanings of the
# legacy constructors, and that ``torch.tensor`` (for data) and ``torch.empty`` (for shapes) were
# introduced to separate them.

typed = torch.FloatTensor(1)
print(f"torch.FloatTensor(1): shape {tuple(typed.shape)}, dtype {typed.dtype}")
assert typed.shape == (1,) and typed.dtype == torch.float32

# %%
# Changed in PyTorch 2.7: the message
# -----------------------------------
#
# Before `PyTorch 2.7 <https://github.com/pytorch/pytorch/releases/tag/v2.7.0>`_ the warning of
# ``torch.tensor(source)`` recommended the other order, ``sourceTensor.clone().detach()``; since
# 2.7 it recommends ``sourceTensor.detach().clone()``, which does not record the copy in the
# graph.
# Both give the same tensor.

# %%
# Takeaway
# --------
#
# ``torch.Tensor(n)`` is an uninitialised tensor of shape ``(n,)``, and ``torch.Tensor`` of a list
# is always ``float32``.
# **Write** ``torch.tensor(data)`` **for values and** ``torch.zeros`` **,** ``torch.empty`` **or**
# ``torch.full`` **for shapes**, with ``dtype=`` and ``device=``; to catch uninitialised memory in
# tests, run them in deterministic mode, which fills it with NaN.
