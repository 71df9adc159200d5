"""
.. _align-corners:

``align_corners`` in ``interpolate`` and ``grid_sample``
========================================================

Resizing or resampling an image means deciding where each output pixel falls on the input.
PyTorch has two conventions for it, chosen by the ``align_corners`` argument of
:func:`torch.nn.functional.interpolate`, :func:`torch.nn.functional.grid_sample` and
:func:`torch.nn.functional.affine_grid`.
They differ by a half-pixel offset in how coordinates are mapped, so the same call gives other
numbers under each, and code written for one convention silently shifts images under the other.
The default is ``False`` everywhere today; for ``grid_sample`` and ``affine_grid`` it was
``True`` until PyTorch 1.3.

.. admonition:: What you will learn

   * what ``align_corners=True`` and ``False`` mean, as coordinates and as numbers;
   * why a sampling grid built with ``torch.linspace(-1, 1, n)`` needs ``align_corners=True``;
   * how to keep ``affine_grid``, ``grid_sample`` and ``interpolate`` consistent;
   * when the default of ``grid_sample`` changed, and why its warning names another release.

.. admonition:: Prerequisites

   :ref:`interpolate-batch-dim` (the ``(N, C, *spatial)`` layout these functions read).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A signal of 4 samples, upsampled to 8 with linear interpolation, once with each convention.
# Both keep the first and last values, but every value in between differs:

import warnings

import torch
import torch.nn.functional as F

from torch_pitfalls import expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

signal = torch.tensor([0.0, 1.0, 4.0, 9.0], device=device).view(1, 1, 4)  # (N, C, L)
up = {
    ac: F.interpolate(signal, size=8, mode="linear", align_corners=ac)[0, 0] for ac in (False, True)
}
for ac, values in up.items():
    print(f"align_corners={ac!s:5}:", [round(v, 3) for v in values.tolist()])
assert up[False][0] == up[True][0] == 0 and up[False][-1] == up[True][-1] == 9
assert not torch.allclose(up[False][1:-1], up[True][1:-1])

# %%
# Why
# ---
#
# Each output sample ``i`` is read from a position ``x`` on the input, in input pixels (pixel
# ``k`` is centred at ``x = k``), and interpolated between the two nearest input samples.
#
# * ``align_corners=True`` **puts the centres of the corner pixels on each other**: output 0 at
#   input 0 and output 7 at input 3, evenly in between, so ``x = i * (4 - 1) / (8 - 1)``.
# * ``align_corners=False`` **puts the outer edges of the images on each other**: the input spans
#   ``[-0.5, 3.5]`` as the output spans ``[-0.5, 7.5]``, so ``x = (i + 0.5) * 4 / 8 - 0.5``.
#   Positions beyond the first or last centre take the edge value.
#
# The two formulas reproduce ``interpolate`` exactly:

i = torch.arange(8, device=device, dtype=torch.float32)
positions = {True: i * (4 - 1) / (8 - 1), False: (i + 0.5) * 4 / 8 - 0.5}


def linear_at(values, x):
    """Linear interpolation of ``values`` (centres at 0, 1, ...) at ``x``, clamped at the ends."""
    x = x.clamp(0, len(values) - 1)
    left = x.floor().long().clamp(max=len(values) - 2)
    weight = x - left
    return values[left] * (1 - weight) + values[left + 1] * weight


for ac in (False, True):
    print(f"align_corners={ac!s:5}: positions", [round(v, 3) for v in positions[ac].tolist()])
    torch.testing.assert_close(linear_at(signal[0, 0], positions[ac]), up[ac])
shift = positions[False] - positions[True]
print("difference in position, False minus True:", [round(v, 3) for v in shift.tolist()])
# ±0.25 exactly in the maths; on CUDA, x / 7 is computed as x * (1 / 7), so the last True position
# is 3 up to float32 rounding (3.0000002), and the ends are compared up to that rounding
torch.testing.assert_close(shift[[0, -1]].cpu(), torch.tensor([-0.25, 0.25]))
assert shift[1:-1].abs().max() < 0.2

# %%
# The positions differ most at the ends, by a quarter of an input pixel in opposite directions,
# and less towards the middle: the ``+ 0.5`` and ``- 0.5`` of the second formula are the
# half-pixel offset between the conventions.
# The figure shows both: the input samples, the line between them, and where each output sample
# is read.
import matplotlib.pyplot as plt

plt.rcParams.update({"font.size": 14})
fig, axes = plt.subplots(2, 1, figsize=(6, 5.6), layout="constrained", sharex=True, sharey=True)
centres = torch.arange(4.0)
for ax, ac in zip(axes, (True, False), strict=True):
    ax.plot(centres, signal[0, 0].cpu(), color="0.6", linewidth=2, label="input, linear")
    ax.plot(centres, signal[0, 0].cpu(), "s", color="0.3", markersize=9, label="input samples")
    ax.plot(
        positions[ac].cpu(), up[ac].cpu(), "o", color="tab:orange", markersize=8, label="output"
    )
    ax.set_title(f"align_corners={ac}")
    ax.set_ylabel("value")
    ax.grid(alpha=0.3)
axes[0].legend(loc="upper left", fontsize=12)
axes[-1].set_xlabel("position on the input (pixels)")
_ = fig.suptitle("4 samples upsampled to 8", fontsize=15)
for ax, ac in zip(axes, (True, False), strict=True):
    xs, ys = ax.lines[2].get_data()
    assert torch.equal(torch.as_tensor(xs), positions[ac].cpu())
    assert torch.equal(torch.as_tensor(ys), up[ac].cpu())

# %%
# With ``False`` the first and last outputs sit a quarter pixel outside the outer centres and take
# the edge values; with ``True`` the outputs span exactly the centres.
# **Neither is wrong; mixing them is.**
#
# ``grid_sample`` and ``affine_grid`` use the same two conventions for the normalised coordinates
# ``-1`` and ``1``: with ``True`` they are the centres of the corner pixels, with ``False`` the
# outer corners of the image.
# An identity transform is only an identity when ``affine_grid`` and ``grid_sample`` agree:

img = torch.arange(16.0, device=device).view(1, 1, 4, 4)
theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)  # identity
for ac in (False, True):
    grid = F.affine_grid(theta, [1, 1, 4, 4], align_corners=ac)
    same = F.grid_sample(img, grid, align_corners=ac)
    print(
        f"align_corners={ac}: grid x along a row:", [round(v, 3) for v in grid[0, 0, :, 0].tolist()]
    )
    torch.testing.assert_close(same, img)
mixed = F.grid_sample(
    img, F.affine_grid(theta, [1, 1, 4, 4], align_corners=True), align_corners=False
)
print(
    "affine_grid True, grid_sample False: first row", [round(v, 3) for v in mixed[0, 0, 0].tolist()]
)
print("the image's first row:                          ", img[0, 0, 0].tolist())
assert not torch.allclose(mixed, img)

# %%
# The symptom in practice
# -----------------------
#
# The common case: a sampling grid built by hand with ``torch.linspace(-1, 1, n)``.
# Those coordinates put ``-1`` and ``1`` on the centres of the corner pixels, which is
# ``align_corners=True``; passed to ``grid_sample`` without the argument, they are read with the
# default, ``False``.
# Then the identity grid is not an identity: every sample lands between pixels, the corner
# samples half a pixel outside the image in both directions, where they blend with the zeros of
# the default padding.
# ``grid_sample`` warns when the argument is missing; this is the warning, word for word:

lin = torch.linspace(-1, 1, 4, device=device)
gy, gx = torch.meshgrid(lin, lin, indexing="ij")
hand_grid = torch.stack([gx, gy], dim=-1).unsqueeze(0)  # (N, H, W, 2), x first
with expect_warns(UserWarning, "Default grid_sample and affine_grid behavior has changed"):
    default_read = F.grid_sample(img, hand_grid)
print("hand-made grid, default align_corners:", default_read[0, 0].cpu(), sep="\n")
assert not torch.allclose(default_read, img)
print("corner pixel: 15 in the image, read as", default_read[0, 0, 3, 3].item())
assert default_read[0, 0, 3, 3] == img[0, 0, 3, 3] / 4
torch.testing.assert_close(default_read, F.grid_sample(img, hand_grid, align_corners=False))

# %%
# ``interpolate``, on the other hand, does not warn: it simply uses ``False``.

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    default_up = F.interpolate(signal, size=8, mode="linear")
print(
    "interpolate without align_corners: warnings",
    len(caught),
    "| same as False:",
    torch.equal(default_up[0, 0], up[False]),
)
assert not caught and torch.equal(default_up[0, 0], up[False])

# %%
# The fix
# -------
#
# **Pass** ``align_corners`` **explicitly in every call, with the convention your coordinates
# use, and the same value in every function that shares them** (``affine_grid`` and
# ``grid_sample``, or the resizing and the sampling of one pipeline).
# A grid made with ``linspace(-1, 1, n)`` goes with ``True``:

with warnings.catch_warnings():
    warnings.simplefilter("error")  # no warning is left
    fixed = F.grid_sample(img, hand_grid, align_corners=True)
print("hand-made grid, align_corners=True:", fixed[0, 0].cpu(), sep="\n")
torch.testing.assert_close(fixed, img)

# %%
# With ``False``, a normalised coordinate means the same place on the image at every
# resolution, which the pull request that made it the default (below) gives as its reason.
# The grid for ``False`` puts the samples at pixel centres ``(2k + 1) / n - 1``; ``affine_grid``
# builds exactly that:

centres_false = (2 * torch.arange(4, device=device) + 1) / 4 - 1
grid_false = F.affine_grid(theta, [1, 1, 4, 4], align_corners=False)
print("pixel centres for align_corners=False:", centres_false.tolist())
torch.testing.assert_close(grid_false[0, 0, :, 0], centres_false)

# %%
# The same image at twice the resolution (each pixel repeated), sampled at the same normalised
# points: with ``False`` both resolutions give the same values, with ``True`` they do not.

fine = F.interpolate(img, scale_factor=2, mode="nearest")  # 8×8, same picture
points = torch.tensor([[[[-0.75, -0.75], [0.25, -0.25], [0.75, 0.75]]]], device=device)
for ac in (False, True):
    coarse_values = F.grid_sample(img, points, align_corners=ac)[0, 0, 0]
    fine_values = F.grid_sample(fine, points, align_corners=ac)[0, 0, 0]
    agree = torch.allclose(coarse_values, fine_values)
    print(f"align_corners={ac!s:5}: 4×4 {coarse_values.tolist()}, 8×8 {fine_values.tolist()}")
    assert agree == (not ac)

# %%
# Changed in PyTorch 1.4
# ----------------------
#
# ``grid_sample`` and ``affine_grid`` had no ``align_corners`` argument up to PyTorch 1.2 and
# worked as ``align_corners=True``.
# `PyTorch 1.3 <https://github.com/pytorch/pytorch/releases/tag/v1.3.0>`_ added the argument with
# the old default, ``True``, and its
# `grid_sample documentation <https://pytorch.org/docs/1.3.0/nn.functional.html#torch.nn.functional.grid_sample>`_
# announced the change to ``False`` for version 1.4.0.
# `PyTorch 1.4 <https://github.com/pytorch/pytorch/releases/tag/v1.4.0>`_ is the first release
# whose default is ``False``
# (`pull request #24929 <https://github.com/pytorch/pytorch/pull/24929>`_, "Add align_corners
# option to grid_sample and affine_grid, change default to False").
# **The warning printed above says "since 1.3.0", but code that relied on the default behaves
# differently from 1.4 on.**

# %%
# A real-world report
# -------------------
#
# A library of models that predict neural responses samples its feature maps with
# ``grid_sample`` in its readouts.
# When PyTorch 1.4 moved the default to ``False``, its maintainers restored the behaviour of
# PyTorch 1.2 by passing ``align_corners=True`` in every readout
# (`sinzlab/neuralpredictors pull request #54 <https://github.com/sinzlab/neuralpredictors/pull/54>`_,
# February 2020).
# The image library Kornia had the same discussion before the release
# (`kornia/kornia issue #388 <https://github.com/kornia/kornia/issues/388>`_).

# %%
# Takeaway
# --------
#
# ``align_corners=True`` aligns the centres of the corner pixels, ``False`` the outer edges of the
# images; the two map coordinates with a half-pixel offset between them.
# **Always pass** ``align_corners`` **to** ``interpolate`` **(linear modes),** ``grid_sample``
# **and** ``affine_grid``, **with the convention of your coordinates**: ``True`` for a grid made
# with ``linspace(-1, 1, n)``, and the same value everywhere the grid is used.
