"""
.. _view-noncontiguous:

``view`` after ``transpose``, ``t()`` or ``permute``
====================================================

:meth:`Tensor.view <torch.Tensor.view>` gives a tensor a new shape without copying anything: it
only reinterprets the memory the tensor already uses.
That works only when the new shape can be described by the tensor's strides, and after
:meth:`~torch.Tensor.t`, :meth:`~torch.Tensor.transpose` or :meth:`~torch.Tensor.permute` it
often cannot: ``view`` then raises.
The error is easy to meet in code that used to work, because the layout of a tensor also depends
on the operations that produced it.

.. admonition:: What you will learn

   * what strides are, and why ``view`` refuses some shapes of a transposed tensor;
   * that ``view`` needs compatible strides rather than a contiguous tensor;
   * when :meth:`~torch.Tensor.reshape` copies and when it returns a view, and what
     :meth:`~torch.Tensor.contiguous` does;
   * how the usual top-k accuracy helper broke this way, and how to write it.

.. admonition:: Prerequisites

   Tensor shapes and dimensions.

.. seealso::

   :ref:`reshape-vs-permute` (reordering dimensions is ``permute``'s job, not ``view``'s) and
   :ref:`expand-inplace-write` (another view whose strides matter).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A 2×3 matrix, transposed, then flattened with ``view``: PyTorch refuses, and its message
# already names the fix.
import torch

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.arange(6, device=device).reshape(2, 3)
xt = x.t()
print("x:", x, "x.t():", xt, sep="\n")
with expect_raises(RuntimeError, r"view size is not compatible .* Use \.reshape\(\.\.\.\) instead"):
    xt.view(6)

# %%
# :meth:`~torch.Tensor.transpose`, :meth:`~torch.Tensor.permute` and the ``.T`` property give the
# same error.

images = torch.zeros(2, 4, 4, 3, device=device)  # (N, H, W, C)
with expect_raises(RuntimeError, "view size is not compatible", show=False):
    images.permute(0, 3, 1, 2).view(2, -1)
with expect_raises(RuntimeError, "view size is not compatible", show=False):
    x.transpose(0, 1).view(-1)
with expect_raises(RuntimeError, "view size is not compatible", show=False):
    x.T.view(-1)
print("permute(...).view(2, -1), transpose(0, 1).view(-1) and .T.view(-1) are refused as well")

# %%
# Why
# ---
#
# A tensor is a block of memory (its storage) plus a shape and one stride per dimension: the
# number of elements to skip in memory to move one step along that dimension.
# ``x`` is stored row by row, so its strides are ``(3, 1)``.
# **Transposing copies nothing: it swaps the strides**, and ``x.t()`` reads the same six numbers
# with strides ``(1, 3)``.
# A tensor whose strides are those of a fresh tensor of its shape is called contiguous.

print("x.stride():", x.stride(), " x.is_contiguous():", x.is_contiguous())
print("x.t().stride():", xt.stride(), " x.t().is_contiguous():", xt.is_contiguous())
print("same memory:", xt.data_ptr() == x.data_ptr())
assert x.stride() == (3, 1) and xt.stride() == (1, 3)
assert x.is_contiguous() and not xt.is_contiguous()
assert xt.data_ptr() == x.data_ptr()

# %%
# ``view`` must describe its result with the same storage and one stride per new dimension.
# Reading ``x.t()`` row by row means visiting the storage at offsets 0, 3, 1, 4, 2, 5: no single
# stride walks that sequence, so no view of shape ``(6,)`` exists.

offsets = (
    torch.arange(3, device=device)[:, None] * xt.stride(0)
    + torch.arange(2, device=device) * xt.stride(1)
).flatten()
print("storage offsets of x.t(), read row by row:", offsets.tolist())
assert offsets.tolist() == [0, 3, 1, 4, 2, 5]

# %%
# **What** ``view`` **needs is compatible strides, not a contiguous tensor.**
# Columns 0 to 3 of a 4×6 matrix are not contiguous (each row skips two numbers), yet splitting
# their last dimension is a valid view; merging the rows is not, because of the gap between them.

wide = torch.arange(24, device=device).reshape(4, 6)
left = wide[:, :4]
split = left.view(4, 2, 2)
print(
    "left: shape", tuple(left.shape), "strides", left.stride(), "contiguous", left.is_contiguous()
)
print("left.view(4, 2, 2) works: strides", split.stride())
assert not left.is_contiguous() and split.data_ptr() == left.data_ptr()
with expect_raises(RuntimeError, "view size is not compatible", show=False):
    left.view(16)
print("left.view(16) is refused")

# %%
# The fix
# -------
#
# **Use** :meth:`~torch.Tensor.reshape` **(or** :meth:`~torch.Tensor.flatten` **) when you do not
# need a view.**
# ``reshape`` returns a view when one exists and a copy otherwise, so it never raises for a shape
# with the right number of elements.
# ``x.contiguous().view(...)`` does the same in two steps: :meth:`~torch.Tensor.contiguous`
# copies the tensor into row-by-row order, unless it already is.

flat = xt.reshape(6)
flat_too = xt.contiguous().view(6)
print("x.t().reshape(6):", flat)
assert torch.equal(flat, flat_too) and torch.equal(flat, xt.flatten())
assert flat.tolist() == [0, 3, 1, 4, 2, 5]
print("x.reshape(6) shares x's memory:", x.reshape(6).data_ptr() == x.data_ptr())
print("x.t().reshape(6) shares x's memory:", flat.data_ptr() == x.data_ptr())
assert x.reshape(6).data_ptr() == x.data_ptr() and flat.data_ptr() != x.data_ptr()

# %%
# The copy matters when you write into the result: a write through a view reaches the original,
# a write into a copy does not.
# **Since** ``reshape`` **may return either, never rely on writing through its result.**

x.reshape(6)[0] = 100
xt.reshape(6)[1] = -1
print("x after writing through both results:", x, sep="\n")
assert x[0, 0].item() == 100  # through a view
assert (x != -1).all()  # into a copy: lost
x[0, 0] = 0

# %%
# The top-k accuracy helper that broke
# ------------------------------------
#
# A top-k accuracy function found in many training scripts takes the ``k`` best classes of each
# sample with :meth:`~torch.Tensor.topk`, transposes them to shape ``(k, batch)``, compares them
# with the targets, and flattens the first ``k`` rows of the comparison with ``view(-1)`` to count
# the hits.
# Here is the same logic on a batch of 8 samples and 10 classes:

logits = torch.randn(8, 10).to(device)  # drawn on the CPU: the same values on every device
target = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6], device=device)


def topk_hits(logits, target, k):
    """Comparison of the k best classes (rows) with the target of each sample (columns)."""
    best = logits.topk(k, dim=1).indices.t()  # (k, batch)
    return best.eq(target.view(1, -1).expand_as(best))


hits = topk_hits(logits, target, 5)
print(
    "hits: shape", tuple(hits.shape), "strides", hits.stride(), "contiguous", hits.is_contiguous()
)
print("top-1 hits with view(-1):", hits[:1].view(-1).sum().item())
with expect_raises(RuntimeError, "view size is not compatible"):
    hits[:5].view(-1)
assert hits.stride() == (1, 5) and not hits.is_contiguous()

# %%
# The comparison ``eq`` returns a tensor laid out like its first input, the transposed ``best``,
# so ``hits`` is not contiguous.
# Its first row alone is still a valid view of shape ``(8,)``, which is why top-1 accuracy works
# and top-5 fails.
#
# **Count the hits with** ``reshape(-1)``, **or sum the** ``(k, batch)`` **block directly:** no
# flattening is needed to count.
# Both agree with a count written out sample by sample.

for k in (1, 5):
    by_reshape = hits[:k].reshape(-1).float().sum().item()
    by_sum = hits[:k].sum().item()
    by_hand = sum(target[i].item() in logits[i].topk(k).indices.tolist() for i in range(8))
    print(f"top-{k}: {by_hand} of 8 samples (reshape: {by_reshape:.0f}, sum: {by_sum})")
    assert by_reshape == by_sum == by_hand
top5_hits = hits[:5].sum().item()

# %%
# A real-world report
# -------------------
#
# PyTorch's own ImageNet example had this helper.
# In September 2020 its maintainers replaced ``view`` by ``reshape``
# (`pytorch/examples pull request #820 <https://github.com/pytorch/examples/pull/820>`_); the
# author explained that the layout of the transposed predictions now carried over to the
# comparison, which was therefore no longer contiguous.
# Projects that had copied the helper hit the same error in the same line, at top-5 accuracy
# only: in one of many reports
# (`RAIVNLab/STR issue #4 <https://github.com/RAIVNLab/STR/issues/4>`_, November 2020), the
# evaluation script crashed with this error, and the maintainer advised ``reshape(-1)`` or
# ``contiguous()`` before ``view``.

# %%
# Takeaway
# --------
#
# ``view`` reinterprets memory and needs strides that fit the new shape; after ``t()``,
# ``transpose`` or ``permute`` they often do not.
# **Use** ``reshape`` **or** ``flatten`` **unless you need a view, and never write through the
# result of** ``reshape``.
# To count hits in a ``(k, batch)`` comparison, sum it; no flattening is needed.
#
# A view shares its storage with the tensor it came from, and :func:`torch.save` writes that whole
# storage: see :ref:`save-view-saves-storage`.
