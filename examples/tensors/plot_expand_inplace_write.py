"""
.. _expand-inplace-write:

Writing into an expanded tensor
===============================

:meth:`Tensor.expand <torch.Tensor.expand>` repeats a tensor along dimensions of size 1 without
copying anything: every row of the result is the same memory.
That is what makes it free, and what makes writing into it dangerous.
An in-place arithmetic operation on it raises an error, but an assignment to one row, or a
:meth:`~torch.Tensor.fill_`, runs without a word and changes every row, and the original tensor
too.

.. admonition:: What you will learn

   * what a stride of 0 is, and why every row of an expanded tensor is one row in memory;
   * which writes PyTorch refuses, which ones only warn, and which ones it lets through;
   * how :meth:`~torch.Tensor.clone` and :meth:`~torch.Tensor.repeat` give rows of their own.

.. admonition:: Prerequisites

   :ref:`view-noncontiguous` (strides and views).

.. seealso::

   :ref:`reshape-vs-permute` (another view that copies nothing).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A row of four start values, expanded to a batch of three rows, one per sample.
# We then want to give sample 1 values of its own:

import torch

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

start = torch.zeros(1, 4, device=device)
batch = start.expand(3, 4)
batch[1] = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
print("batch after batch[1] = [1, 2, 3, 4]:", batch, sep="\n")
print("start:", start)
assert (batch == torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)).all()
assert torch.equal(start[0], batch[1])

# %%
# **All three rows changed, and so did** ``start``, **without an error or a warning.**
# A :meth:`~torch.Tensor.fill_` or :meth:`~torch.Tensor.zero_` on the expanded tensor also runs
# silently, and also lands in ``start``:

batch.fill_(7.0)
print("start after batch.fill_(7):", start)
assert (start == 7).all()
batch.zero_()
assert (start == 0).all()

# %%
# An in-place arithmetic operation, on the other hand, is refused, with a message that names the
# problem and the fix:

with expect_raises(
    RuntimeError, "more than one element of the written-to tensor refers to a single"
):
    batch += 1

# %%
# The other in-place operations get the same error: :meth:`~torch.Tensor.mul_`,
# :meth:`~torch.Tensor.copy_` of a full batch, an assignment to a column.
# A write through a boolean mask runs, and only warns that it is deprecated:

refused = []
with expect_raises(RuntimeError, "single memory location", show=False):
    batch.mul_(2)
refused.append("batch.mul_(2)")
with expect_raises(RuntimeError, "single memory location", show=False):
    batch.copy_(torch.arange(12.0, device=device).reshape(3, 4))
refused.append("batch.copy_(a 3x4 tensor)")
with expect_raises(RuntimeError, "single memory location", show=False):
    batch[:, 0] = torch.tensor([1.0, 2.0, 3.0], device=device)
refused.append("batch[:, 0] = [1, 2, 3]")
print("refused:", refused)
with expect_warns(UserWarning, "on expanded tensors is deprecated"):
    batch[batch == 0] = 5.0
print("start after batch[batch == 0] = 5:", start)
assert (start == 5).all()

# %%
# Why
# ---
#
# ``expand`` returns a view whose expanded dimension has **a stride of 0**: moving one row down
# moves zero elements in memory.
# The three rows of ``batch`` are the four numbers of ``start``, read three times; the expanded
# tensor allocates nothing.

print("start.stride():", start.stride(), " batch.stride():", batch.stride())
print("same memory:", batch.data_ptr() == start.data_ptr())
print("bytes of memory behind batch:", batch.untyped_storage().nbytes())
assert batch.stride() == (0, 1) and batch.data_ptr() == start.data_ptr()
assert batch.untyped_storage().nbytes() == 4 * start.element_size()

# %%
# **Element-wise in-place operations check whether the tensor they write overlaps itself, and
# refuse when it does**: ``batch += 1`` would add 1 to each of the four numbers once per row that
# shares it.
# The row assignment passes the check because it writes into ``batch[1]``, a single row: a view of
# four distinct numbers, so the assignment is an ordinary copy, into the memory that every row
# shares.
# ``fill_`` and ``zero_`` write one value everywhere, so they skip the check, and the masked write
# checks but only warns.
#
# The :meth:`~torch.Tensor.expand` documentation says as much: more than one element of an
# expanded tensor may refer to one memory location, so clone it before writing to it.
#
# The fix
# -------
#
# **Before writing, give the batch memory of its own:** ``expand(...).clone()``, or
# :meth:`~torch.Tensor.repeat`, which copies from the start.
# Then a row is a row:

start = torch.zeros(1, 4, device=device)
cloned = start.expand(3, 4).clone()
repeated = start.repeat(3, 1)
for own in (cloned, repeated):
    own[1] = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    own += 1
print("expand(3, 4).clone() after the same writes:", cloned, sep="\n")
print("start:", start)
assert torch.equal(cloned, repeated)
assert cloned.stride() == (4, 1) and cloned[0].tolist() == [1.0, 1.0, 1.0, 1.0]
assert cloned[1].tolist() == [2.0, 3.0, 4.0, 5.0] and (start == 0).all()

# %%
# Keep ``expand`` where nobody writes: reading, and arithmetic that creates a new tensor.
# ``start.expand(3, 4) + 1``, or plain broadcasting ``start + torch.ones(3, 4)``, allocate a
# result of their own and leave ``start`` alone.

summed = start.expand(3, 4) + 1
broadcast = start + torch.ones(3, 4, device=device)
print(
    "new tensors:", summed.data_ptr() != start.data_ptr(), broadcast.data_ptr() != start.data_ptr()
)
assert torch.equal(summed, broadcast) and (start == 0).all()

# %%
# A real-world report
# -------------------
#
# A user added a dimension with ``unsqueeze`` and ``expand``, then assigned ones to the first
# entry of the new dimension, and found every entry set to one
# (`pytorch/pytorch issue #8994 <https://github.com/pytorch/pytorch/issues/8994>`_, PyTorch
# 0.4.0); the issue was closed as the expected behaviour of an expanded tensor.
# Years later, another user built a batch of identity matrices with ``expand`` and tried to fill
# it column by column
# (`pytorch/pytorch issue #69204 <https://github.com/pytorch/pytorch/issues/69204>`_, 2021):
# that assignment raised the overlap error, and the answer was to ``clone()`` first, or to build
# the batch without ``expand``.
# The same line of thought, assigning into one part of an expanded tensor, is silent in one case
# and refused in the other, as this page shows.

# %%
# Takeaway
# --------
#
# Every row of an expanded tensor is the same memory as the tensor it came from.
# **Never write into the result of** ``expand``: call ``.clone()`` on it, or use ``repeat``,
# first.
# PyTorch refuses only the element-wise in-place operations; a row assignment or a ``fill_``
# writes every row, and the original.
