"""
.. _meshgrid-indexing:

``torch.meshgrid`` is ``ij``, NumPy's is ``xy``
===============================================

Code that builds pixel coordinates with ``X, Y = np.meshgrid(xs, ys)`` and is ported to PyTorch
as ``torch.meshgrid(xs, ys)`` gets grids of the transposed shape: ``(W, H)`` instead of
``(H, W)``.
On a square image nothing fails: every coordinate lookup returns ``(y, x)`` where the code
expects ``(x, y)``, boxes decoded from a grid land in the mirrored cell and a warp built for
:func:`~torch.nn.functional.grid_sample` transposes the image.
PyTorch warns once per process that ``indexing`` will become required, a warning that is easily
missed or filtered out.

.. admonition:: What you will learn

   * what the two indexing modes return, and which one each library uses by default;
   * how a transposed grid fails loudly on a non-square image and silently on a square one;
   * why passing ``indexing=`` on every call is the whole fix.

.. admonition:: Prerequisites

   Tensor shapes, and ``(H, W)`` as the layout of an image.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# An image of height 3 and width 4. NumPy code builds its pixel coordinates with
# ``np.meshgrid(xs, ys)``, which returns two ``(H, W)`` arrays: ``X[r, c]`` is the column ``c``
# and ``Y[r, c]`` the row ``r``. The same call in PyTorch warns, and returns ``(W, H)`` grids.
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from torch_pitfalls import expect_raises, expect_warns, get_device

device = get_device()
print(f"device: {device}")

H, W = 3, 4
xs = torch.arange(W, device=device)  # column coordinates
ys = torch.arange(H, device=device)  # row coordinates
X_np, Y_np = np.meshgrid(xs.cpu().numpy(), ys.cpu().numpy())

# The warning comes from PyTorch's C++ code once per process; ask for it every time so it shows.
warn_always = torch.is_warn_always_enabled()
torch.set_warn_always(True)
try:
    with expect_warns(UserWarning, "it will be required to pass the indexing argument"):
        X, Y = torch.meshgrid(xs, ys)
finally:
    torch.set_warn_always(warn_always)
print("np.meshgrid(xs, ys):   ", X_np.shape)
print("torch.meshgrid(xs, ys):", tuple(X.shape))
print("X from NumPy:", X_np, "X from PyTorch:", X.cpu(), sep="\n")
assert X_np.shape == (H, W) and X.shape == (W, H)
assert torch.equal(X.cpu(), torch.from_numpy(X_np).T)

# %%
# **PyTorch's grid is NumPy's, transposed.**
# With a non-square image, the mistake surfaces at the first operation that combines the grid
# with an image-shaped tensor, here a per-pixel offset of shape ``(H, W)``:

offset_x = torch.zeros(H, W, device=device)
with expect_raises(RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b"):
    X + offset_x

# %%
# With a square image nothing fails, and every lookup is transposed.
# The coordinates stored at row 0, column 2 of a 3 × 3 image should be ``(x=2, y=0)``.
# Here the script silences warnings, as many training scripts do:

S = 3
side = torch.arange(S, device=device)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    Xs, Ys = torch.meshgrid(side, side)  # the code ported from NumPy
coords = torch.stack([Xs, Ys], dim=-1)  # coords[r, c] meant as (x, y)
print("coords[0, 2] (row 0, column 2):", coords[0, 2].tolist())
assert coords[0, 2].tolist() == [0, 2]

# %%
# The same grid, normalised to ``[-1, 1]``, is the identity warp of
# :func:`~torch.nn.functional.grid_sample`, whose grid holds ``(x, y)`` in its last dimension.
# Built with the default indexing, it transposes the image:

image = torch.arange(S * S, dtype=torch.float32, device=device).view(1, 1, S, S)
grid = coords.float().div(S - 1).mul(2).sub(1).unsqueeze(0)  # (1, S, S, 2), (x, y) in [-1, 1]
warped = F.grid_sample(image, grid, align_corners=True)
print("image:", image[0, 0].cpu(), "warped with the identity grid:", warped[0, 0].cpu(), sep="\n")
assert torch.equal(warped[0, 0], image[0, 0].T)

# %%
# Why
# ---
#
# :func:`torch.meshgrid` has two indexing modes, and so does ``numpy.meshgrid``; **the defaults
# differ**.
#
# * ``indexing="ij"`` (matrix indexing, PyTorch's default): dimension ``k`` of every output runs
#   along input ``k``. For inputs of lengths ``(A, B)`` the grids are ``(A, B)``.
# * ``indexing="xy"`` (Cartesian indexing, NumPy's default): the first two dimensions are
#   swapped, so that the first input varies along the columns. For ``(A, B)`` the grids are
#   ``(B, A)``.

for indexing in ("ij", "xy"):
    X_t, Y_t = torch.meshgrid(xs, ys, indexing=indexing)
    X_n, Y_n = np.meshgrid(xs.cpu().numpy(), ys.cpu().numpy(), indexing=indexing)
    print(f'indexing="{indexing}": torch {tuple(X_t.shape)}, numpy {X_n.shape}')
    assert np.array_equal(X_t.cpu().numpy(), X_n) and np.array_equal(Y_t.cpu().numpy(), Y_n)

# %%
# With three inputs, ``"xy"`` swaps only the first two dimensions; the third stays in place:

zs = torch.arange(5, device=device)
shape_ij = torch.meshgrid(xs, ys, zs, indexing="ij")[0].shape
shape_xy = torch.meshgrid(xs, ys, zs, indexing="xy")[0].shape
print("three inputs of lengths (4, 3, 5): ij", tuple(shape_ij), "| xy", tuple(shape_xy))
assert shape_ij == (W, H, 5) and shape_xy == (H, W, 5)

# %%
# The documentation of :func:`torch.meshgrid` states the difference in a warning box, and adds
# that the default is meant to move to ``"xy"`` in the future: code that relies on the default
# can change meaning with a release.
# A call without ``indexing`` warns that the argument will be required; the warning is issued
# once per process, among the first lines of a training log, and
# ``warnings.filterwarnings("ignore")`` hides it. The transposed grid stays.
#
# The fix
# -------
#
# **Pass** ``indexing=`` **on every call.**
# For an image, the clearest is matrix indexing with the rows first, which gives grids in the
# image's own ``(H, W)`` layout; Cartesian indexing with the columns first returns the same two
# grids, as NumPy does:

Y_ij, X_ij = torch.meshgrid(ys, xs, indexing="ij")  # rows, then columns: (H, W) grids
X_xy, Y_xy = torch.meshgrid(xs, ys, indexing="xy")  # NumPy's call, NumPy's result
print("ij with (ys, xs):", tuple(X_ij.shape), "| xy with (xs, ys):", tuple(X_xy.shape))
assert torch.equal(X_ij, X_xy) and torch.equal(Y_ij, Y_xy)
assert np.array_equal(X_xy.cpu().numpy(), X_np) and np.array_equal(Y_xy.cpu().numpy(), Y_np)
print("offset added:", tuple((X_ij + offset_x).shape))

# %%
# The square image's lookup and warp are right again:

Ys_fixed, Xs_fixed = torch.meshgrid(side, side, indexing="ij")
coords = torch.stack([Xs_fixed, Ys_fixed], dim=-1)
print("coords[0, 2] (row 0, column 2):", coords[0, 2].tolist())
assert coords[0, 2].tolist() == [2, 0]
grid = coords.float().div(S - 1).mul(2).sub(1).unsqueeze(0)
warped = F.grid_sample(image, grid, align_corners=True)
print("warped with the identity grid:", warped[0, 0].cpu(), sep="\n")
assert torch.equal(warped[0, 0], image[0, 0])

# %%
# A real-world report: grids for box decoding
# -------------------------------------------
#
# A user implementing the YOLO detector rebuilt the grid of cell offsets with
# :func:`torch.meshgrid` and reported that it differs from ``numpy.meshgrid``: the two calls
# with the same inputs return transposed grids, which matters when boxes are recovered from the
# offsets to the grid cells. A maintainer answered that PyTorch's behaviour is ``ij``,
# NumPy's default ``xy``, and proposed an ``indexing`` option like NumPy's
# (`PyTorch issue 15301 <https://github.com/pytorch/pytorch/issues/15301>`_).
# In a later issue about the divergence, opened by a maintainer, a user porting EfficientDet
# describes getting badly wrong bounding boxes from it, and hours lost finding the cause
# (`PyTorch issue 50276 <https://github.com/pytorch/pytorch/issues/50276>`_).
# That issue is still the one the documentation names for the planned move of the default to
# ``xy``; until then the default is ``ij``, as the symptom above shows.
#
# Detectors
# ---------
#
# The static checker's rule ``TP114`` (see :doc:`/detectors`) finds :func:`torch.meshgrid` called
# without ``indexing=`` in your own code; its message says that ``indexing="ij"`` keeps what the
# call does today, and ``python -m torch_pitfalls.lint --fix`` writes it. The fallback some projects
# keep for PyTorch older than 1.10 (a call without the argument in an ``except TypeError`` or under
# a version test) is left alone. It is on by default.
#
# Takeaway
# --------
#
# **torch.meshgrid(xs, ys) is NumPy's meshgrid transposed: write indexing="ij" or
# indexing="xy" in every call.**
# For image coordinates, ``torch.meshgrid(ys, xs, indexing="ij")`` gives ``(H, W)`` grids that
# line up with the image; a sampling grid for :func:`~torch.nn.functional.grid_sample` holds
# ``(x, y)``, and its corners depend on ``align_corners`` (:ref:`align-corners`).
