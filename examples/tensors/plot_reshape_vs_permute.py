"""
.. _reshape-vs-permute:

Reordering dimensions with ``reshape``
======================================

Images usually arrive as ``(H, W, C)``: height, width, then the colour channels (NumPy arrays,
PIL images, most image files), while PyTorch's convolutions want ``(C, H, W)``.
:meth:`~torch.Tensor.reshape` and :meth:`~torch.Tensor.view` happily give such an image the shape
``(C, H, W)``, but they only cut the same sequence of numbers into new pieces: every "channel" of
the result is a mixture of the three colours of a third of the image.
Nothing fails; the model trains on scrambled pictures.
:meth:`~torch.Tensor.permute` is the operation that moves dimensions.

.. admonition:: What you will learn

   * why ``reshape`` (and ``view``) never move a dimension, only regroup the numbers in order;
   * how an image reshaped from ``(H, W, C)`` to ``(C, H, W)`` looks, next to the permuted one;
   * the right call for each conversion, and why a layer does not notice the mistake.

.. admonition:: Prerequisites

   :ref:`view-noncontiguous` (strides, and why a permuted tensor is not contiguous).

.. seealso::

   :ref:`interpolate-batch-dim` (another function that reads dimensions by position) and
   :ref:`expand-inplace-write` (a view that repeats memory instead of moving it).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A small synthetic picture in the ``(H, W, C)`` layout: 24 rows, 32 columns, 3 colours.
# The background fades from blue on the left to red on the right, with a yellow square at the top
# left and a green disc at the bottom right.
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

H, W = 24, 32
rows = torch.arange(H, device=device, dtype=torch.float32)[:, None].expand(H, W)
cols = torch.arange(W, device=device, dtype=torch.float32)[None, :].expand(H, W)
img = torch.stack([cols / (W - 1), 0.15 + 0.25 * rows / (H - 1), 1 - cols / (W - 1)], dim=-1)
square = (rows >= 3) & (rows < 11) & (cols >= 3) & (cols < 11)
disc = (rows - 16) ** 2 + (cols - 23) ** 2 <= 5.5**2
img[square] = torch.tensor([1.0, 0.9, 0.0], device=device)
img[disc] = torch.tensor([0.1, 0.8, 0.2], device=device)
print("image (H, W, C):", tuple(img.shape))

# %%
# Converting it to ``(C, H, W)`` for a convolution, both ways.
# Both results have the shape the convolution expects, and the convolution runs on both:

wrong = img.reshape(3, H, W)
right = img.permute(2, 0, 1)
conv = nn.Conv2d(3, 4, kernel_size=3).to(device)
out_wrong, out_right = conv(wrong.unsqueeze(0)), conv(right.unsqueeze(0))
print("reshape(3, H, W):", tuple(wrong.shape), "-> conv:", tuple(out_wrong.shape))
print("permute(2, 0, 1):", tuple(right.shape), "-> conv:", tuple(out_right.shape))
assert wrong.shape == right.shape == (3, H, W) and out_wrong.shape == out_right.shape
assert not torch.allclose(out_wrong, out_right)

# %%
# But they are not the same picture.
# The first pixel of the image, at the top left corner, is blue.
# In the permuted tensor its three colours are the first value of each channel, as they should
# be; in the reshaped tensor they are the first three values of the "red" channel.


def rounded(values):
    return [round(v, 2) for v in values.tolist()]


print("pixel (0, 0) of the image:         ", rounded(img[0, 0]))
print("permuted: [c, 0, 0] for c = 0, 1, 2:", rounded(right[:, 0, 0]))
print("reshaped: [c, 0, 0] for c = 0, 1, 2:", rounded(wrong[:, 0, 0]))
print("reshaped: [0, 0, 0:3]:              ", rounded(wrong[0, 0, :3]))
assert rounded(img[0, 0]) == [0.0, 0.15, 1.0]  # blue
assert torch.equal(right[:, 0, 0], img[0, 0])
assert torch.equal(wrong[0, 0, :3], img[0, 0])
assert not torch.equal(wrong[:, 0, 0], img[0, 0])

# %%
# Shown as pictures, the difference is plain.
# To display a ``(C, H, W)`` tensor, matplotlib needs ``(H, W, C)`` again, so each tensor goes
# back through ``permute(1, 2, 0)``: the right way back, so that the panels show what the
# convolution received.
import matplotlib.pyplot as plt

plt.rcParams.update({"font.size": 13})
panels = {
    "the image (H, W, C)": img,
    "reshape(3, H, W): wrong": wrong.permute(1, 2, 0),
    "permute(2, 0, 1): right": right.permute(1, 2, 0),
}
fig, axes = plt.subplots(3, 1, figsize=(4.5, 8.4), layout="constrained")
for ax, (title, picture) in zip(axes, panels.items(), strict=True):
    ax.imshow(picture.cpu().numpy(), interpolation="nearest")
    ax.set_title(title, fontsize=14)
    ax.set_ylabel("row")
axes[-1].set_xlabel("column")
_ = fig.suptitle("One 24×32 image, two conversions", fontsize=15)
assert torch.equal(panels["permute(2, 0, 1): right"], img)
assert not torch.equal(panels["reshape(3, H, W): wrong"], img)

# %%
# Nothing of the square or the disc is left in the reshaped picture: each of its pixels takes its
# three values from three places a third of the image apart, and each value may be the red, the
# green or the blue of the pixel it came from.
#
# Why
# ---
#
# A tensor's numbers sit in memory in one order: for ``(H, W, C)``, pixel by pixel along each row,
# the three colours of a pixel side by side.
# ``reshape`` **and** ``view`` **keep that order and only change where it is cut**: the first
# ``H × W`` numbers become channel 0, so channel 0 holds the red, green and blue values of the
# first third of the rows.
# ``permute`` **keeps every element at its coordinates and reorders the dimensions**:
# ``right[c, h, w]`` is ``img[h, w, c]`` for every ``c``, ``h`` and ``w``.

print("reshape keeps the order of the numbers:", torch.equal(wrong.flatten(), img.flatten()))
print("permute keeps the coordinates:", torch.equal(right, torch.einsum("hwc->chw", img)))
assert torch.equal(wrong.flatten(), img.flatten())
assert torch.equal(wrong[0], img[: H // 3].reshape(H, W))
assert all(torch.equal(right[c], img[..., c]) for c in range(3))

# %%
# The channel means show the damage in numbers: each permuted channel keeps the mean of its
# colour, each reshaped channel holds the mean of all three colours of one band of rows, so the
# three come out nearly equal.

true_means = img.mean(dim=(0, 1))
wrong_means = wrong.mean(dim=(1, 2))
print("mean of each colour of the image:", rounded(true_means))
print("mean of each permuted channel:   ", rounded(right.mean(dim=(1, 2))))
print("mean of each reshaped channel:   ", rounded(wrong_means))
torch.testing.assert_close(right.mean(dim=(1, 2)), true_means)
assert true_means.max() - true_means.min() > 0.05 > 0.01 > wrong_means.max() - wrong_means.min()
for c in range(3):
    band = img[c * H // 3 : (c + 1) * H // 3]
    torch.testing.assert_close(wrong[c].mean(), band.mean())

# %%
# ``permute`` copies nothing: it returns a view with reordered strides, which is not contiguous.
# Layers accept it; call :meth:`~torch.Tensor.contiguous` only where something needs the new order
# in memory (``view``, see :ref:`view-noncontiguous`).

print("permuted: strides", right.stride(), "contiguous", right.is_contiguous())
assert right.data_ptr() == img.data_ptr() and not right.is_contiguous()

# %%
# The fix
# -------
#
# **Move dimensions with** ``permute`` **(or** :func:`torch.movedim` **), and keep** ``reshape``
# **for merging or splitting neighbouring dimensions.**
# The usual conversions:

batch_nhwc = img.expand(2, H, W, 3)  # a batch of two (N, H, W, C) images
conversions = {
    "(H, W, C) -> (C, H, W)": (img.permute(2, 0, 1), img.movedim(-1, 0)),
    "(C, H, W) -> (H, W, C)": (right.permute(1, 2, 0), right.movedim(0, -1)),
    "(N, H, W, C) -> (N, C, H, W)": (batch_nhwc.permute(0, 3, 1, 2), batch_nhwc.movedim(-1, 1)),
}
for name, (by_permute, by_movedim) in conversions.items():
    print(f"{name:>29}: {tuple(by_permute.shape)}")
    assert torch.equal(by_permute, by_movedim)
assert torch.equal(conversions["(C, H, W) -> (H, W, C)"][0], img)

# %%
# ``reshape`` is right where neighbouring dimensions are merged or split in memory order, such as
# flattening the spatial dimensions of a ``(C, H, W)`` tensor into ``(C, H × W)``, or the pixels
# of an ``(H, W, C)`` image into a list of ``(H × W, C)`` colours:

pixels = img.reshape(H * W, 3)
per_channel = right.reshape(3, H * W)
print("pixels:", tuple(pixels.shape), " per channel:", tuple(per_channel.shape))
assert torch.equal(pixels[0], img[0, 0]) and torch.equal(per_channel[:, 0], img[0, 0])
assert torch.equal(pixels.t(), per_channel)

# %%
# A real-world report
# -------------------
#
# In the test code of an image-restoration project, outputs of shape ``(1, 3, H, W)`` were
# turned into ``(H, W, 3)`` arrays with ``view`` before the quality metric was computed
# (`jeya-maria-jose/TransWeather issue #2 <https://github.com/jeya-maria-jose/TransWeather/issues/2>`_,
# January 2022).
# A reader who replaced it with ``permute`` measured a PSNR lower by about 0.6 dB; the authors
# agreed that ``permute`` is right and planned to correct the code and the reported value.
# The metric had been computed on scrambled images, without an error or a warning.

# %%
# Takeaway
# --------
#
# ``reshape`` and ``view`` regroup numbers in memory order; they never move a dimension.
# **Convert between** ``(H, W, C)`` **and** ``(C, H, W)`` **with** ``permute`` **(or**
# ``movedim`` **)**; a shape check cannot catch the mistake, since both results have the same
# shape.
