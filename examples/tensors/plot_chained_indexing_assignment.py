"""
.. _chained-indexing-assignment:

Writing through advanced indexing writes into a copy
====================================================

``x[mask][0] = 5`` reads as "set the first selected element of ``x`` to 5".
It runs without an error or a warning, and ``x`` does not change.
The same happens to ``x[idx].fill_(0)``, and to ``nn.init.normal_(emb.weight[idx])`` meant to
re-initialise a few rows of an embedding: indexing with a mask, a list or an index tensor
returns a *copy*, and the write lands in that copy, which is thrown away at once.
With slices and integers the same lines do write, which is why the habit survives.

.. admonition:: What you will learn

   * which indexing returns a view (slices, integers) and which one a copy (masks, lists and
     index tensors);
   * why ``x[mask] = 5`` writes and ``x[mask][0] = 5`` does not;
   * the single expressions and in-place methods that write where you mean:
     ``x[mask_rows, col] = v``, :meth:`~torch.Tensor.index_put_`,
     :meth:`~torch.Tensor.masked_fill_`, :meth:`~torch.Tensor.index_fill_`.

.. admonition:: Prerequisites

   :ref:`expand-inplace-write` (views share memory with the tensor they come from); boolean
   masks and index tensors.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# Three writes that each select part of a tensor with a mask or an index tensor, then write into
# the selection: set the first masked value to 5, fill two positions with 7, and re-initialise
# rows 0 and 3 of an embedding to zero with :func:`torch.nn.init.zeros_`.
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.zeros(6, device=device)
mask = torch.tensor([False, True, True, False, True, False], device=device)
idx = torch.tensor([0, 3], device=device)

x[mask][0] = 5.0
x[idx].fill_(7.0)
print("x after x[mask][0] = 5 and x[idx].fill_(7):", x)
assert (x == 0).all()

emb = nn.Embedding(5, 3).to(device)
before = emb.weight.detach().clone()
nn.init.zeros_(emb.weight[idx])
print("embedding rows 0 and 3 after nn.init.zeros_(emb.weight[idx]):", emb.weight[idx], sep="\n")
assert torch.equal(emb.weight, before) and (emb.weight[idx] != 0).all()

# %%
# **Nothing changed, and nothing said so.**
# The same writes through slices and integers do change ``x``:

x[1:3].fill_(7.0)
x[4] = 5.0
print("x after x[1:3].fill_(7) and x[4] = 5:", x)
assert x.tolist() == [0.0, 7.0, 7.0, 0.0, 5.0, 0.0]

# %%
# Why
# ---
#
# PyTorch follows NumPy's two kinds of indexing.
# **Basic indexing** (integers, slices, ``None``, ``...``) only changes the shape, strides and
# offset: the result is a *view* of the same memory, and a write into it is a write into ``x``.
# **Advanced indexing** (a boolean mask, a list, an index tensor) selects arbitrary elements,
# which no strides can describe: the result is a new tensor, with memory of its own.

selections = {"x[1:3]": x[1:3], "x[4]": x[4], "x[mask]": x[mask], "x[idx]": x[idx]}
for name, selected in selections.items():
    shares = selected.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    print(f"{name:8} is a view: {selected._is_view()!s:5}  shares x's memory: {shares}")
assert [s._is_view() for s in selections.values()] == [True, True, False, False]

# %%
# Yet ``x[mask] = 5`` does write into ``x``.
# An assignment to an indexing expression is not a read followed by a write: Python calls
# ``x.__setitem__(mask, 5)``, which writes into ``x`` in place, as
# :meth:`~torch.Tensor.index_put_` does.
# In ``x[mask][0] = 5``, however, only the *last* pair of brackets is the assignment; the first is
# an ordinary read.
# Python runs it as these two statements:

x = torch.zeros(6, device=device)
selected = x[mask]  # __getitem__: advanced indexing, a copy
selected[0] = 5.0  # __setitem__ on the copy
print("the copy:", selected, "| x:", x)
assert selected.tolist() == [5.0, 0.0, 0.0] and (x == 0).all()

x[mask] = 5.0  # __setitem__ on x itself
print("after x[mask] = 5:", x)
assert x.tolist() == [0.0, 5.0, 5.0, 0.0, 5.0, 0.0]

# %%
# ``x[idx].fill_(7)`` and ``nn.init.zeros_(emb.weight[idx])`` are the same mistake with a method:
# the method receives the copy and fills it.
# The ``grad_fn=<IndexBackward0>`` printed above says the same: the selected rows of a parameter
# are the output of an indexing operation, not the parameter.
#
# The order of the brackets decides
# ---------------------------------
#
# A chain writes through only when every read in it is basic indexing and the advanced index
# comes last, in the assignment.
# Setting column 0 of the masked rows of a matrix works one way round and not the other:

rows = torch.tensor([True, False, True], device=device)
m = torch.zeros(3, 4, device=device)
m[rows][:, 0] = 1.0  # read with the mask (a copy), then write: lost
lost = m.count_nonzero().item()
m[:, 0][rows] = 1.0  # read a column (a view), then write with the mask: written
print(
    "m[rows][:, 0] = 1 writes", lost, "values; m[:, 0][rows] = 1 writes", m.count_nonzero().item()
)
assert lost == 0 and m[:, 0].tolist() == [1.0, 0.0, 1.0]

# %%
# Duplicate indices in an augmented assignment
# --------------------------------------------
#
# ``x[idx] += 1`` does reach ``x``: Python reads ``x[idx]`` (a copy), adds 1 to the copy, and
# assigns the copy back with ``__setitem__``.
# Each selected element gets one value back, so an index that appears twice is incremented once:

counts = torch.zeros(4, device=device)
labels = torch.tensor([0, 2, 2, 2], device=device)
counts[labels] += 1
print("counts[labels] += 1 with labels [0, 2, 2, 2]:", counts)
assert counts.tolist() == [1.0, 0.0, 1.0, 0.0]

# %%
# To add once per occurrence, accumulate: ``index_put_(…, accumulate=True)`` or
# :meth:`~torch.Tensor.index_add_`.

counts = torch.zeros(4, device=device)
counts.index_put_((labels,), torch.ones(len(labels), device=device), accumulate=True)
print("index_put_(accumulate=True):", counts)
assert counts.tolist() == [1.0, 0.0, 3.0, 0.0]

# %%
# The fix
# -------
#
# **Write with one indexing expression on the tensor itself, or with an in-place method of the
# tensor itself, never into the result of an advanced index.**
# Combine the indices into one subscript, or turn a mask into the positions you want first:

x = torch.zeros(6, device=device)
first = mask.nonzero()[0]  # the position of the first True
x[first] = 5.0  # "the first masked value"
m = torch.zeros(3, 4, device=device)
m[rows, 0] = 1.0  # one expression: masked rows, column 0
print("x[mask.nonzero()[0]] = 5:", x)
print("m[rows, 0] = 1:", m, sep="\n")
assert x.tolist() == [0.0, 5.0, 0.0, 0.0, 0.0, 0.0] and m[:, 0].tolist() == [1.0, 0.0, 1.0]

# %%
# The in-place methods with a trailing underscore write into the tensor they are called on:
# :meth:`~torch.Tensor.masked_fill_` for a mask, :meth:`~torch.Tensor.index_fill_` for positions
# along a dimension, :meth:`~torch.Tensor.index_put_` for any index.
# (Without the underscore, ``masked_fill`` returns a new tensor and leaves ``x`` alone, a quieter
# form of the same mistake.)

x = torch.zeros(6, device=device)
x.masked_fill(mask, 9.0)  # result discarded: x unchanged
unchanged = (x == 0).all().item()
x.masked_fill_(mask, 9.0).index_fill_(0, idx, 7.0)
print("x.masked_fill(mask, 9) alone leaves x unchanged:", unchanged)
print("x.masked_fill_(mask, 9).index_fill_(0, idx, 7):", x)
assert unchanged and x.tolist() == [7.0, 9.0, 9.0, 7.0, 9.0, 0.0]

# %%
# To re-initialise some rows of a parameter, draw the new values into a tensor of their own and
# assign them with one expression.
# The assignment writes into the parameter in place, which autograd refuses for a leaf that
# requires grad:

new_rows = nn.init.zeros_(torch.empty(len(idx), 3, device=device))
with expect_raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"):
    emb.weight[idx] = new_rows

# %%
# so it goes under :class:`torch.no_grad`, like any initialisation:

with torch.no_grad():
    emb.weight[idx] = new_rows
others = torch.tensor([1, 2, 4], device=device)
print("rows 0 and 3 after the assignment:", emb.weight[idx], sep="\n")
assert (emb.weight[idx] == 0).all() and torch.equal(emb.weight[others], before[others])

# %%
# A real-world report
# -------------------
#
# A user set one channel of the pixels selected by a boolean mask with ``b[a][:, 0] = 1`` and
# found nothing assigned, while ``b[..., 0][a] = 1`` worked
# (`PyTorch issue 80155 <https://github.com/pytorch/pytorch/issues/80155>`_, 2022); a maintainer
# answered that this is the expected behaviour, since ``b[a]`` returns a new tensor, not a view,
# and the assignment goes to that temporary.
# Three years earlier, ``a[mask][1:] = -1`` on an ``arange`` had been reported as a bug and
# closed with the same explanation: indexing with a mask is not slicing, it returns a copy
# (`PyTorch issue 20962 <https://github.com/pytorch/pytorch/issues/20962>`_, 2019).
#
# Takeaway
# --------
#
# **A mask, a list or an index tensor inside brackets copies, unless the brackets are the target
# of the assignment: write x[rows, col] = v, or call index_put_, masked_fill_ or index_fill_ on
# x itself.**
# Slices and integers give views, so ``x[1:3][0] = v`` writes; ``x[mask][0] = v`` and
# ``x[idx].fill_(v)`` write into a copy that nobody keeps.
