"""
.. _bce-weight-broadcast:

BCE ``weight`` and ``pos_weight`` broadcast from the right
==========================================================

A multi-label segmentation model predicts ``C`` masks, one logit per class and pixel: input and
target of shape ``(N, C, H, W)``.
To counter rare classes, the code gives :class:`~torch.nn.BCEWithLogitsLoss` a ``pos_weight`` (or
a ``weight``) of ``C`` values, one per class, as it would to a multi-label classifier of shape
``(N, C)``.
Both arguments are broadcast against the input like any tensor, aligned from the *last*
dimension: against ``(N, C, H, W)`` the ``C`` values line up with the width ``W``.
When ``W`` differs from ``C`` this is an error about tensor sizes; when the images happen to be
``C`` pixels wide, it runs and weights the columns of every mask instead of the classes.

.. admonition:: What you will learn

   * what ``weight`` and ``pos_weight`` multiply, element by element, checked against a hand
     computation;
   * why a vector of ``C`` values works for ``(N, C)`` and not for ``(N, C, H, W)``;
   * the fix: shape ``(C, 1, 1)`` for per-class values, and per-element weights built from the
     target when positives and negatives need different weights.

.. admonition:: Prerequisites

   :ref:`bce-with-logits` (what :class:`~torch.nn.BCEWithLogitsLoss` computes) and
   :ref:`mse-broadcasting` (broadcasting in a loss).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# Three classes, images of 3 × 3 pixels, and a ``pos_weight`` that makes a missed pixel of class
# 1 cost 5 times as much and one of class 2 10 times as much.
# The loss runs.
# To see which weight each element received, every logit is 0 and every target 1: the loss of an
# element is then ``pos_weight × log 2``, so dividing by ``log 2`` reads its weight back.
import math

import torch
import torch.nn.functional as F

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

N, C, H, W = 2, 3, 3, 3
pos_weight = torch.tensor([1.0, 5.0, 10.0], device=device)  # meant: one value per class
zeros, ones = torch.zeros(N, C, H, W, device=device), torch.ones(N, C, H, W, device=device)
per_element = F.binary_cross_entropy_with_logits(
    zeros, ones, pos_weight=pos_weight, reduction="none"
)
received = per_element / math.log(2)
print("weight received by each pixel of image 0, class by class (rows of each mask):")
print(received[0].round(decimals=3))
assert torch.allclose(received, pos_weight.expand(N, C, H, W))  # along W
assert not torch.allclose(received, pos_weight.view(C, 1, 1).expand(N, C, H, W))  # along C

# %%
# **Every mask got the weights 1, 5, 10 across its columns; no class got its own weight.**
# With real targets, the positive pixels of each class receive on average the weight of the
# columns they happen to lie in, and the loss differs from the per-class loss computed by hand:


def bce_by_hand(logits, target, pos_weight_per_element, weight_per_element):
    """The loss of BCEWithLogitsLoss, written out: ``-w · [p·y·log σ(x) + (1 - y)·log σ(-x)]``."""
    positive = pos_weight_per_element * target * F.logsigmoid(logits)
    negative = (1 - target) * F.logsigmoid(-logits)
    return (-weight_per_element * (positive + negative)).mean()


logits = torch.randn(N, C, H, W).to(device)  # drawn on the CPU: the same values on every device
target = (torch.rand(N, C, H, W) < 0.3).float().to(device)
for c in range(C):
    positives = target[:, c] == 1
    mean_received = received[:, c][positives].mean().item()
    print(
        f"class {c}: pos_weight meant {pos_weight[c].item():4.1f}, "
        f"received on average {mean_received:.2f}"
    )
    assert mean_received != pos_weight[c].item()
per_class = pos_weight.view(C, 1, 1).expand(N, C, H, W)
loss = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
intended = bce_by_hand(logits, target, per_class, 1.0)
print(f"pos_weight=(C,):        {loss.item():.4f}")
print(f"per class, by hand:     {intended.item():.4f}")
assert not torch.allclose(loss, intended)

# %%
# With images of another width, the same line fails, with a message about tensor sizes that
# does not name ``pos_weight``:

wide = torch.zeros(N, C, H, 4, device=device)
with expect_raises(RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b"):
    F.binary_cross_entropy_with_logits(wide, wide, pos_weight=pos_weight)

# %%
# Why
# ---
#
# :func:`~torch.nn.functional.binary_cross_entropy_with_logits` computes one loss per element of
# the input, ``-w·[p·y·log σ(x) + (1 - y)·log σ(-x)]``, where ``w`` is ``weight`` and ``p`` is
# ``pos_weight``, and both are *broadcast* to the input's shape by the usual rule: dimensions are
# matched from the right.
# There is no class dimension in this loss; ``C`` values reach dimension 1 only when the input
# has two dimensions.
# That is why the habit comes from multi-label classification, where it is right: against
# ``(N, C)``, the vector lines up with the classes, and the loss equals the hand computation.

logits_2d, target_2d = logits[:, :, 0, 0], target[:, :, 0, 0]  # (N, C): a multi-label classifier
loss_2d = F.binary_cross_entropy_with_logits(logits_2d, target_2d, pos_weight=pos_weight)
by_hand_2d = bce_by_hand(logits_2d, target_2d, pos_weight.expand(N, C), 1.0)
print(
    f"(N, C) input: pos_weight=(C,) {loss_2d.item():.4f}, per class by hand {by_hand_2d.item():.4f}"
)
torch.testing.assert_close(loss_2d, by_hand_2d)

# %%
# ``weight`` follows the same rule, and it is a weight *per element*, not per class as in
# :class:`~torch.nn.CrossEntropyLoss`.
# A binary classifier with one output per sample cannot take ``weight=[w_negative, w_positive]``:
# its two values are broadcast against ``(N, 1)`` and do not fit.

logits_binary = torch.randn(4, 1).to(device)
target_binary = torch.tensor([[0.0], [0.0], [0.0], [1.0]], device=device)
class_weights = torch.tensor([1.0, 3.0], device=device)  # meant: negatives 1, positives 3
with expect_raises(RuntimeError, r"doesn't match the broadcast shape \[4, 2\]"):
    F.binary_cross_entropy_with_logits(logits_binary, target_binary, weight=class_weights)

# %%
# The fix
# -------
#
# **Give each per-class value the shape that broadcasts along the class dimension: (C, 1, 1)
# for (N, C, H, W).**
# Then each class's masks get their class's weight, and the loss is the hand computation:

per_class_pos_weight = pos_weight.view(C, 1, 1)
fixed = F.binary_cross_entropy_with_logits(logits, target, pos_weight=per_class_pos_weight)
print(f"pos_weight=(C, 1, 1): {fixed.item():.4f}   per class, by hand: {intended.item():.4f}")
torch.testing.assert_close(fixed, intended)
fixed_received = F.binary_cross_entropy_with_logits(
    zeros, ones, pos_weight=per_class_pos_weight, reduction="none"
) / math.log(2)
print("weight received by row 0 of each mask of image 0:", fixed_received[0, :, 0], sep="\n")
assert torch.allclose(fixed_received, per_class)

# %%
# The same shape works for ``weight`` when it is a per-class factor on both positives and
# negatives: ``weight=class_factor.view(C, 1, 1)``.
#
# **For different weights on positives and negatives, build the weight of each element from the
# target**: ``torch.where(target == 1, w_positive, w_negative)``, of the target's shape, so
# nothing is left to broadcasting.

per_element_weight = torch.where(target_binary == 1, class_weights[1], class_weights[0])
loss_binary = F.binary_cross_entropy_with_logits(
    logits_binary, target_binary, weight=per_element_weight
)
by_hand_binary = bce_by_hand(logits_binary, target_binary, 1.0, per_element_weight)
print(f"per-element weight: {loss_binary.item():.4f}   by hand: {by_hand_binary.item():.4f}")
torch.testing.assert_close(loss_binary, by_hand_binary)

# %%
# ``pos_weight = w_positive / w_negative`` gives the same balance between positives and negatives,
# but not the same scale: its loss is the per-element weighted loss divided by ``w_negative``.
# With weights 2 and 6:

weights_2_6 = torch.where(target_binary == 1, 6.0, 2.0)
loss_2_6 = F.binary_cross_entropy_with_logits(logits_binary, target_binary, weight=weights_2_6)
loss_ratio = F.binary_cross_entropy_with_logits(
    logits_binary, target_binary, pos_weight=torch.tensor(6.0 / 2.0, device=device)
)
print(f"weights 2 and 6: {loss_2_6.item():.4f}   pos_weight=3: {loss_ratio.item():.4f}")
torch.testing.assert_close(loss_2_6, 2 * loss_ratio)

# %%
# A real-world report
# -------------------
#
# `PyTorch issue 5157 <https://github.com/pytorch/pytorch/issues/5157>`_ reports both halves of
# this page for :class:`~torch.nn.BCELoss`: a ``weight`` of one value per sample, as the
# documentation then described it, failed against a three-dimensional input until it was
# reshaped to ``(N, 1, 1)``; and two class weights against an input whose last dimension was 2
# ran without error but weighted that last dimension, not the classes.
# For ``pos_weight``, `PyTorch issue 82496 <https://github.com/pytorch/pytorch/issues/82496>`_
# pointed out that a vector with one value per class, as the documentation then asked for, fails
# for targets with spatial dimensions, which need a ``pos_weight`` with as many dimensions, such
# as ``(C, 1, 1)``.
#
# Takeaway
# --------
#
# **weight and pos_weight are broadcast against the input from the last dimension: per-class
# values for (N, C, H, W) must have the shape (C, 1, 1), and class weights for positives and
# negatives become a per-element weight built from the target.**
