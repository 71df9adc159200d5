"""
.. _interpolate-batch-dim:

``F.interpolate`` needs a batch dimension
=========================================

:func:`torch.nn.functional.interpolate` resizes images, but it reads the shape of its input as
``(N, C, *spatial)``: a batch dimension, a channel dimension, then the spatial dimensions.
Give it one image of shape ``(C, H, W)`` without the batch dimension and it sees a batch of
``C`` one-dimensional signals with ``H`` channels each.
Asking for a new height and width then fails, but the default nearest mode with a single scale
factor or size does not fail: it stretches every row, and only the width changes.

.. admonition:: What you will learn

   * how ``interpolate`` splits a shape into batch, channels and spatial dimensions;
   * which calls on an unbatched image fail, and which silently resize the width only;
   * the fix, ``unsqueeze(0)`` before and ``squeeze(0)`` after, and what became of
     ``F.upsample``.

.. admonition:: Prerequisites

   Tensor shapes; :ref:`softmax-dim` is another function that works along a dimension you may not
   have meant.

.. seealso::

   :ref:`align-corners` (the two pixel conventions of the linear modes) and
   :ref:`reshape-vs-permute` (bringing an ``(H, W, C)`` image into the ``(C, H, W)`` layout).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A tiny synthetic RGB image of 8×8 pixels, in PyTorch's channels-first layout ``(C, H, W)``:
# red grows down the rows, green grows along the columns, and blue is a checkerboard.
# We want it twice as large in both directions, 16×16.
import re

import torch
import torch.nn.functional as F

from torch_pitfalls import (
    PitfallWarning,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

ramp = torch.linspace(0.0, 1.0, 8, device=device)
checker = (torch.arange(8, device=device)[:, None] + torch.arange(8, device=device)) % 2
img = torch.stack([ramp[:, None].expand(8, 8), ramp[None, :].expand(8, 8), checker.float()])
print("image shape (C, H, W):", tuple(img.shape))
assert img.shape == (3, 8, 8)

# %%
# Asking for the new height and width explicitly fails, and the message says why:

with expect_raises(ValueError, r"spatial dimensions of \[8\] and output size of \(16, 16\)"):
    F.interpolate(img, size=(16, 16))

# %%
# The shorter spellings do not fail.
# A single ``scale_factor=2``, or a single ``size=16``, with the default ``mode="nearest"``,
# return a tensor, but **only the width has changed: the image is now 8 rows of 16 pixels.**

stretched = F.interpolate(img, scale_factor=2)
stretched_by_size = F.interpolate(img, size=16)
print("scale_factor=2:", tuple(stretched.shape), " size=16:", tuple(stretched_by_size.shape))
assert stretched.shape == stretched_by_size.shape == (3, 8, 16)
assert torch.equal(stretched, stretched_by_size)

# %%
# Why
# ---
#
# ``interpolate`` takes the first dimension as the batch, the second as the channels, and every
# dimension after those two as spatial.
# **A 3-D input therefore has one spatial dimension: it is read as** ``(N, C, L)``, a batch of
# signals of length ``L``.
# Our image becomes a batch of 3 "signals" (the colours) with 8 "channels" (the rows), each of
# length 8 (the columns); nearest mode repeats every column, and every row is resized on its own.

by_columns = img.repeat_interleave(2, dim=-1)
print("equal to repeating every column twice:", torch.equal(stretched, by_columns))
assert torch.equal(stretched, by_columns)

# %%
# The tuple ``size=(16, 16)`` failed because it names two spatial sizes for one spatial
# dimension.
# The modes that only exist in 2-D refuse a 3-D input outright; ``"bilinear"`` says so:

with expect_raises(NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"):
    F.interpolate(img, scale_factor=2, mode="bilinear")

# %%
# ``"nearest"``, the default, and ``"linear"`` are valid for 1-D signals, so nothing warns.
# The module :class:`torch.nn.Upsample` calls ``interpolate`` and reads shapes the same way:

upsampled = torch.nn.Upsample(scale_factor=2)(img)
print("nn.Upsample(scale_factor=2):", tuple(upsampled.shape))
assert torch.equal(upsampled, stretched)

# %%
# A grayscale image of shape ``(H, W)`` is refused, since no layout has fewer than three
# dimensions (the list of modes in the message has ``lanczos`` only since PyTorch 2.12):

gray = img[0]
if torch.__version__ >= "2.12":
    modes = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
else:  # PyTorch 2.11 and older have no lanczos mode
    modes = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"
with expect_raises(
    NotImplementedError,
    r"Only 3D, 4D and 5D input Tensors supported \(got 2D\) for the modes: " + re.escape(modes),
):
    F.interpolate(gray, scale_factor=2)

# %%
# Changed in PyTorch 0.4.1
# ------------------------
#
# Older code resizes with ``F.upsample``.
# PyTorch 0.4.1 added ``interpolate`` and deprecated ``upsample``
# (`release notes <https://github.com/pytorch/pytorch/releases/tag/v0.4.1>`_,
# `pull request #8591 <https://github.com/pytorch/pytorch/pull/8591>`_);
# today ``upsample`` still works, warns, and calls ``interpolate``.
# **Moving from** ``upsample`` **to** ``interpolate`` **changes nothing about shapes: both need
# the batch dimension.**

with expect_warns(UserWarning, r"upsample` is deprecated\. Use `nn\.functional\.interpolate"):
    old_style = F.upsample(img, scale_factor=2)
print("F.upsample gives the same width-only result:", torch.equal(old_style, stretched))
assert torch.equal(old_style, stretched)

# %%
# The fix
# -------
#
# **Add the batch dimension with** ``img.unsqueeze(0)`` **before interpolating, and remove it with**
# ``squeeze(0)`` **after** (:meth:`~torch.Tensor.unsqueeze`, :meth:`~torch.Tensor.squeeze`).
# Now the tuple ``size`` works, and ``scale_factor=2`` doubles both height and width.

resized = F.interpolate(img.unsqueeze(0), scale_factor=2).squeeze(0)
resized_by_size = F.interpolate(img.unsqueeze(0), size=(16, 16)).squeeze(0)
print("with unsqueeze(0)/squeeze(0):", tuple(resized.shape))
assert resized.shape == (3, 16, 16)
assert torch.equal(resized, resized_by_size)

# %%
# The result is exactly what the image gets inside a real batch, and in nearest mode it repeats
# every pixel twice along both axes.

batch = torch.stack([img, img.flip(-1)])  # two images, (N, C, H, W)
resized_batch = F.interpolate(batch, scale_factor=2)
print("batch shape:", tuple(batch.shape), "->", tuple(resized_batch.shape))
assert torch.equal(resized, resized_batch[0])
assert torch.equal(resized, img.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2))

# %%
# For a grayscale ``(H, W)`` image, add both the batch and the channel dimension.

gray_resized = F.interpolate(gray[None, None], scale_factor=2)[0, 0]
print("grayscale:", tuple(gray.shape), "->", tuple(gray_resized.shape))
assert gray_resized.shape == (16, 16)
assert torch.equal(gray_resized, resized[0])

# %%
# Side by side: the original, the unbatched call that stretched the rows, and the fixed call.
# The three panels share one pixel scale: the original fills a quarter of its panel, the wrong
# result only the top half, and the right one the whole panel.
import matplotlib.pyplot as plt

panels = {"original": img, "unbatched (wrong)": stretched, "unsqueeze(0) (right)": resized}
fig, axes = plt.subplots(1, 3, figsize=(6, 3.5), layout="constrained", sharex=True, sharey=True)
for ax, (title, picture) in zip(axes, panels.items(), strict=True):
    height, width = picture.shape[1:]
    ax.imshow(picture.permute(1, 2, 0).cpu().numpy(), interpolation="nearest")
    ax.set_title(f"{title}\n{height}×{width} pixels", fontsize=9)
    ax.set_xlabel("width (pixels)")
axes[0].set_xlim(-0.5, 15.5)
axes[0].set_ylim(15.5, -0.5)
axes[0].set_ylabel("height (pixels)")
_ = fig.suptitle("Resizing an 8×8 image by a factor of 2")

# %%
# Detectors
# ---------
#
# The runtime guard ``TP006`` detects this pitfall in your own code (see :doc:`/detectors`): a
# 3-D tensor shaped like an image ``(C, H, W)`` with 1, 3 or 4 channels, passed to
# ``F.interpolate`` in any mode but ``"linear"``, which exists only for 1-D signals.
# Under :mod:`torch_pitfalls.guards`, the unbatched call of this page warns, once per line, and
# the fix is silent:

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP006 "):
        F.interpolate(img, scale_factor=2)
with guards(language="en") as fixed:
    F.interpolate(img.unsqueeze(0), scale_factor=2).squeeze(0)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP006"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# ``F.interpolate`` reads its input as ``(N, C, *spatial)``.
# **Resize a single image with** ``F.interpolate(img.unsqueeze(0), ...).squeeze(0)``.
# Without the batch dimension, a tuple ``size`` fails, and a single ``scale_factor`` or ``size`` in
# the default nearest mode silently stretches the width only.
