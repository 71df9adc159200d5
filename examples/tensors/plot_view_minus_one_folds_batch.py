"""
.. _view-minus-one-folds-batch:

``view(-1, C)`` folds positions into the batch
==============================================

A classifier built for one image size pools its last feature map with a fixed kernel, then
flattens it with ``x.view(-1, C)``, because at that size the pooled map is ``1 × 1`` and the
``-1`` is the batch.
Feed it larger images and the fixed pooling leaves several positions per image;
``view(-1, C)`` keeps the ``C`` and turns every extra position into an extra *row*.
Training stops with "Expected input batch_size (16) to match target batch_size (4)", far from the
line that caused it; inference on one image returns several predictions, without an error.

.. admonition:: What you will learn

   * how ``-1`` in :meth:`~torch.Tensor.view` is computed, and why it absorbs whatever the
     other sizes leave over;
   * what the extra rows hold (pieces of one image's channels, not positions);
   * how ``flatten(1)`` or ``view(x.size(0), -1)`` keep the batch, and adaptive pooling keeps
     the features, whatever the input size.

.. admonition:: Prerequisites

   :ref:`view-noncontiguous` (what ``view`` does to a shape); a convolutional network of
   shape ``(N, C, H, W)``.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small classifier for ``28 × 28`` images: a convolution with 8 output channels, a ``4 × 4``
# max-pooling down to ``7 × 7``, then an :class:`~torch.nn.AvgPool2d` with a fixed kernel of 7,
# which leaves ``1 × 1``, and ``view(-1, 8)`` before the linear layer.
# On the images it was written for, the shapes are right:
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

C, NUM_CLASSES = 8, 10


class Classifier(nn.Module):
    def __init__(self, pool):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, C, 3, padding=1), nn.ReLU(), nn.MaxPool2d(4))
        self.pool = pool
        self.head = nn.Linear(C, NUM_CLASSES)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.head(x.view(-1, C))  # the line this page is about


model = Classifier(nn.AvgPool2d(kernel_size=7)).to(device)
N = 4
small = torch.randn(N, 3, 28, 28, device=device)
targets = torch.randint(0, NUM_CLASSES, (N,), device=device)
logits = model(small)
print("28 x 28 images:", tuple(small.shape), "-> logits", tuple(logits.shape))
assert logits.shape == (N, NUM_CLASSES)

# %%
# The same batch of 4 images at ``56 × 56`` (a new data set, a larger crop) goes through the
# model without a complaint, but comes out as 16 rows of logits, and the loss refuses it:

large = torch.randn(N, 3, 56, 56, device=device)
logits_large = model(large)
print("56 x 56 images:", tuple(large.shape), "-> logits", tuple(logits_large.shape))
assert logits_large.shape == (4 * N, NUM_CLASSES)
with expect_raises(ValueError, r"input batch_size \(16\) to match target batch_size \(4\)"):
    F.cross_entropy(logits_large, targets)

# %%
# At inference there is no target to compare with.
# One ``56 × 56`` image gives 4 rows of logits, so 4 predicted classes, and code that reads
# ``logits[0]`` or ``logits.argmax(1)[0]`` takes one of them and reports it, silently:

one_image = large[:1]
logits_one = model(one_image)
predictions = logits_one.argmax(dim=1)
print("one 56 x 56 image -> logits", tuple(logits_one.shape), "-> classes", predictions.tolist())
assert logits_one.shape == (4, NUM_CLASSES) and predictions.numel() == 4

# %%
# Why
# ---
#
# ``view`` accepts one ``-1`` and computes it so that the number of elements stays the same:
# ``numel / (product of the other sizes)``.
# It does not know which dimension was the batch; it only divides.
# After the fixed pooling, the ``56 × 56`` batch is ``(4, 8, 2, 2)``: 128 numbers, and
# ``128 / 8 = 16`` rows.

pooled = model.pool(model.features(large))
print(
    "pooled:",
    tuple(pooled.shape),
    "| numel:",
    pooled.numel(),
    "| rows of view(-1, 8):",
    pooled.numel() // C,
)
assert pooled.shape == (N, C, 2, 2) and pooled.numel() // C == 16

# %%
# A fixed kernel of 7 was chosen for a ``7 × 7`` map: it averages each ``7 × 7`` block and
# leaves one value per block.
# A ``14 × 14`` map has four blocks, so ``(2, 2)`` positions per image, and ``-1`` takes
# ``N × 2 × 2``.
#
# **The extra rows are not even positions.**
# ``view`` regroups the numbers in memory order, which is channel by channel for each image:
# each row takes the next 8 numbers, that is channel 0 at the 4 positions, then channel 1 at the
# 4 positions.
# Labelling every number with its channel shows what the first row of an image holds:

channel_of = torch.arange(C, device=device).view(1, C, 1, 1).expand(N, C, 2, 2)
rows_channels = channel_of.reshape(-1, C)
print("channel of each number in the first two rows of view(-1, 8):", rows_channels[:2].tolist())
assert rows_channels[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]

# %%
# The linear layer reads these 8 numbers as the 8 channels it was trained on: the rows are
# meaningless features, not four local predictions.
#
# Rows stay within one image here only because ``C × 2 × 2`` is a multiple of ``C``.
# The other common form flattens the whole map with a hard-coded size, ``view(-1, C * 7 * 7)``
# for a linear layer of ``8 × 7 × 7 = 392`` inputs.
# Seven ``28 × 32`` images give seven ``(8, 7, 8)`` maps, 3136 numbers: 8 rows of 392, and
# labelling each number with its image shows rows that hold the end of one image and the start
# of the next:

image_of = torch.arange(7, device=device).view(7, 1, 1, 1).expand(7, C, 7, 8)
rows_images = image_of.reshape(-1, C * 7 * 7)
straddling = [r for r in range(rows_images.size(0)) if rows_images[r].unique().numel() > 1]
print(
    "rows of view(-1, 392) for 7 images:",
    rows_images.size(0),
    "| rows holding two images:",
    straddling,
)
assert rows_images.size(0) == 8 and straddling == [1, 2, 3, 4, 5, 6]

# %%
# The fix
# -------
#
# **Flatten with the batch size stated: x.flatten(1), or x.view(x.size(0), -1).**
# The batch can then never change, and a wrong input size fails at the first layer that cannot
# take it, with a message that names the shapes:


class FlattenClassifier(Classifier):
    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))


strict = FlattenClassifier(nn.AvgPool2d(kernel_size=7)).to(device)
strict.load_state_dict(model.state_dict())
torch.testing.assert_close(strict(small), model(small))  # the same model on 28 x 28
with expect_raises(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(4x32 and 8x10\)"):
    strict(large)

# %%
# ``flatten(1)`` keeps dimension 0 and multiplies the rest: ``(4, 8, 2, 2)`` becomes ``(4, 32)``,
# which the linear layer refuses.
# To *accept* any input size, pool to a fixed output size instead of with a fixed kernel:
# :class:`~torch.nn.AdaptiveAvgPool2d` with an output of ``1`` averages the whole map, whatever
# its size, and ``flatten(1)`` after it gives ``(N, C)`` for any input.

adaptive = FlattenClassifier(nn.AdaptiveAvgPool2d(1)).to(device)
adaptive.load_state_dict(model.state_dict())
torch.testing.assert_close(adaptive(small), model(small))  # identical where the old one worked
out_large, out_one = adaptive(large), adaptive(one_image)
print(
    "adaptive pooling: 56 x 56 batch ->",
    tuple(out_large.shape),
    "| one image ->",
    tuple(out_one.shape),
)
assert out_large.shape == (N, NUM_CLASSES) and out_one.shape == (1, NUM_CLASSES)
loss = F.cross_entropy(out_large, targets)
assert loss.isfinite()

# %%
# A real-world report
# -------------------
#
# A user of a Pseudo-3D residual network for video tried clips of 32 frames instead of the 16
# it was designed for, and training failed with "Expected input batch_size (128) to match target
# batch_size (64)"
# (`pseudo-3d-pytorch issue 28 <https://github.com/qijiezhao/pseudo-3d-pytorch/issues/28>`_).
# The model folds its time dimension into the batch with ``view(-1, …)``, assuming that the
# earlier pooling has reduced 16 frames to one; with 32 frames two remained, and the batch
# doubled, as on this page.
# The PyTorch tutorials replaced their ``view(-1, …)`` calls before a linear layer by
# ``flatten(start_dim=1)`` for clarity
# (`pytorch/tutorials pull request 1507 <https://github.com/pytorch/tutorials/pull/1507>`_).
#
# Takeaway
# --------
#
# **Never let -1 stand for the batch: flatten with x.flatten(1) or x.view(x.size(0), -1), and
# pool with AdaptiveAvgPool2d when the input size can change.**
# ``view(-1, C)`` runs on any input whose size is a multiple of ``C``, and turns what the pooling
# left over into extra samples.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because token-level code folds
# positions into rows on purpose, and whether ``-1`` swallows the batch depends on sizes known only
# at run time.
