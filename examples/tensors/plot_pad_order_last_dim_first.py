"""
.. _pad-order-last-dim-first:

``F.pad`` counts from the last dimension
========================================

:func:`torch.nn.functional.pad` takes its padding as a flat tuple of pairs, and **the first pair
pads the last dimension**: ``(left, right, top, bottom, front, back)`` for a ``(N, C, D, H, W)``
tensor.
Written in the "natural" order, top and bottom first, the tuple pads the width where the height
was meant.
The result is an image with extra columns instead of extra rows: an error several lines later
when a shape no longer fits, and no error at all when a crop restores the shape, or the image is
square and the pad symmetric.

.. admonition:: What you will learn

   * which dimension each pair of the padding tuple pads;
   * how a pad in the wrong order moves an image sideways without changing its shape;
   * why ``padding=`` of :class:`~torch.nn.Conv2d` reads the other way round;
   * a way to write the tuple that cannot be misread.

.. admonition:: Prerequisites

   Image tensors laid out as ``(N, C, H, W)``.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A batch of one image of height 3 and width 5. The code means to add two rows of zeros at the
# top, and writes the tuple as it says it: ``(top, bottom, left, right) = (2, 0, 0, 0)``.
# The height stays 3; the width grows to 7.
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

H, W = 3, 5
image = torch.arange(1.0, H * W + 1, device=device).view(1, 1, H, W)
top, bottom, left, right = 2, 0, 0, 0
padded = F.pad(image, (top, bottom, left, right))  # meant: 2 rows at the top
print("image:", tuple(image.shape), "-> padded:", tuple(padded.shape))
print(padded[0, 0].cpu())
assert padded.shape == (1, 1, H, W + 2)
assert padded[0, 0, :, :2].eq(0).all() and padded[0, 0, 0].ne(0).any()

# %%
# **Two columns of zeros on the left, and not a single new row.**
# When a crop brings the image back to its size, as in a random shift augmentation that pads and
# crops, nothing fails at all.
# Meant: shift a square image 2 pixels *down*. Done: it moves 2 pixels *right*, with the same
# shape:

S = 4
square = torch.arange(1.0, S * S + 1, device=device).view(1, 1, S, S)
shifted = F.pad(square, (2, 0, 0, 0))[..., :S, :S]  # (top, bottom, left, right) in mind
moved_down = torch.zeros_like(square)
moved_down[..., 2:, :] = square[..., : S - 2, :]
moved_right = torch.zeros_like(square)
moved_right[..., :, 2:] = square[..., :, : S - 2]
print("shifted:", shifted[0, 0].cpu(), sep="\n")
print("moved down: ", torch.equal(shifted, moved_down))
print("moved right:", torch.equal(shifted, moved_right))
assert shifted.shape == square.shape
assert torch.equal(shifted, moved_right) and not torch.equal(shifted, moved_down)

# %%
# Why
# ---
#
# The documentation of :func:`~torch.nn.functional.pad` describes the tuple as starting from the
# last dimension and moving forward: ``(padding_left, padding_right)`` for the last dimension,
# then ``(padding_top, padding_bottom)`` for the one before, then ``(padding_front,
# padding_back)``.
# A tuple of ``2 k`` numbers pads the last ``k`` dimensions and leaves the others alone.
# Padding a ``(2, 3, 4, 5)`` tensor by one pair at a time shows which dimension each pair
# reaches:

x = torch.zeros(2, 3, 4, 5, device=device)
grown = []
for pair in range(4):
    pad = [0] * 8
    pad[2 * pair + 1] = 10  # the "after" side of this pair
    changed = [d for d in range(4) if F.pad(x, pad).shape[d] != x.shape[d]]
    grown.append(changed[0])
    print(f"pair {pair} (pad[{2 * pair}:{2 * pair + 2}]) pads dimension {changed[0]}")
assert grown == [3, 2, 1, 0]

# %%
# The modules follow the same order: :class:`~torch.nn.ZeroPad2d` takes
# ``(left, right, top, bottom)``.

module_padded = nn.ZeroPad2d((top, bottom, left, right))(image)
print("ZeroPad2d((2, 0, 0, 0)):", tuple(module_padded.shape))
assert torch.equal(module_padded, padded)

# %%
# The order is easy to get wrong because other parts of PyTorch read the other way round.
# ``padding=(1, 2)`` of :class:`~torch.nn.Conv2d` is ``(height, width)``, first dimension first,
# like its ``kernel_size``.
# With a padding mode other than zeros, the convolution pads its input through
# :func:`~torch.nn.functional.pad`, and has to reverse the pairs to do it:

conv = nn.Conv2d(1, 1, kernel_size=(3, 5), padding=(1, 2), padding_mode="circular").to(device)
by_hand = F.conv2d(F.pad(image, (2, 2, 1, 1), mode="circular"), conv.weight, conv.bias)
print("Conv2d(padding=(1, 2)) output:", tuple(conv(image).shape))
torch.testing.assert_close(conv(image), by_hand)

# %%
# A wrong order is not always silent: reflection padding needs each pad smaller than the size
# of the dimension it pads. Meant as 4 rows above and below a tall, narrow strip, the tuple asks
# for 4 columns on each side of a width of 3:

strip = torch.rand(1, 1, 8, 3, device=device)
with expect_raises(RuntimeError, r"Padding size should be less than the corresponding input"):
    F.pad(strip, (4, 4, 0, 0), mode="reflect")

# %%
# The shortest tuple has the same trap. A batch of sequences ``(N, T, features)`` padded in time
# with ``F.pad(x, (0, k))`` gains ``k`` *features*, and the error comes from the next layer:

N, T, FEATURES = 2, 3, 4
sequences = torch.randn(N, T, FEATURES, device=device)
layer = nn.Linear(FEATURES, 2).to(device)
longer = F.pad(sequences, (0, 2))  # meant: 2 more time steps
print("padded sequences:", tuple(longer.shape))
assert longer.shape == (N, T, FEATURES + 2)
with expect_raises(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(6x6 and 4x2\)"):
    layer(longer)

# %%
# The fix
# -------
#
# **Write the tuple from the last dimension towards the first, and name its parts.**
# For an image, that is ``(left, right, top, bottom)``; for time in ``(N, T, features)``, the
# features come first with ``(0, 0)``:

padded = F.pad(image, (left, right, top, bottom))
print("image:", tuple(image.shape), "-> padded:", tuple(padded.shape))
print(padded[0, 0].cpu())
assert padded.shape == (1, 1, H + 2, W)
assert padded[0, 0, :2].eq(0).all() and torch.equal(padded[..., 2:, :], image)

longer = F.pad(sequences, (0, 0, 0, 2))  # features: (0, 0), time: (0, 2)
print("padded sequences:", tuple(longer.shape), "-> Linear:", tuple(layer(longer).shape))
assert longer.shape == (N, T + 2, FEATURES)

# %%
# The padded time steps are then real inputs to a recurrent layer unless the batch is packed:
# see :ref:`pack-padded-sequence`.

# %%
# Where several dimensions are padded, a small helper that takes the pads by dimension and
# builds the tuple in PyTorch's order leaves nothing to misread:


def pad_dims(tensor, pads, **kwargs):
    """Pad ``tensor`` by ``pads = {dim: (before, after)}``, any dims, in any order."""
    dims = [d % tensor.dim() for d in pads]
    order = []
    for d in range(tensor.dim() - 1, min(dims) - 1, -1):  # last dimension first
        order.extend(pads.get(d, pads.get(d - tensor.dim(), (0, 0))))
    return F.pad(tensor, order, **kwargs)


shifted = pad_dims(square, {2: (2, 0)})[..., :S, :S]  # dimension 2 is the height
print("shifted down:", torch.equal(shifted, moved_down))
assert torch.equal(shifted, moved_down)
assert torch.equal(pad_dims(image, {-2: (2, 0)}), padded)
assert torch.equal(pad_dims(sequences, {1: (0, 2)}), longer)

# %%
# A real-world report: PyTorch's own convolution
# ----------------------------------------------
#
# The order tripped up PyTorch itself. A user found that in PyTorch 1.5.0 a
# :class:`~torch.nn.Conv2d` with ``padding_mode='circular'`` and different paddings for the
# height and the width padded the wrong one: a padding meant for the width was applied to the
# height, so the output shape differed from the same convolution with zero padding, a
# regression from 1.4 (`PyTorch issue 37844 <https://github.com/pytorch/pytorch/issues/37844>`_).
# The fix notes that :func:`~torch.nn.functional.pad` takes the dimensions in reverse order
# (`PyTorch pull request 37881 <https://github.com/pytorch/pytorch/pull/37881>`_), and was
# carried into the 1.5.1 release
# (`PyTorch pull request 38583 <https://github.com/pytorch/pytorch/pull/38583>`_).
#
# Takeaway
# --------
#
# **The padding tuple of F.pad starts with the last dimension: (left, right, top, bottom, …),
# never (top, bottom, left, right).**
# Name the pads, or build the tuple from a dimension-to-pair mapping, and check the padded
# shape, or compare with a hand-shifted image, before trusting it.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because which dimension a
# padding tuple is meant to pad is a convention of the code, not something its syntax shows, and
# both orders are valid calls.
