"""
.. _channels-first-1d:

``Conv1d`` and ``BatchNorm1d`` expect ``(N, C, L)``
===================================================

Sequence code usually holds a batch as ``(N, L, C)``: samples, time steps, features per step.
That is what :class:`~torch.nn.Linear`, :class:`~torch.nn.LayerNorm` and the recurrent and
attention layers with ``batch_first=True`` work on.
:class:`~torch.nn.Conv1d` and :class:`~torch.nn.BatchNorm1d` do not: they take the channels (the
features) in dimension 1, ``(N, C, L)``.
Given ``(N, L, C)``, they raise an error when ``L`` and ``C`` differ, and the tempting "fix" of
the error, ``BatchNorm1d(L)``, runs and normalises each *time step* instead of each feature.
When ``L`` equals ``C`` there is not even an error: the convolution slides along the features,
and the model trains on the wrong axis.

.. admonition:: What you will learn

   * which layers take the features last and which take them in dimension 1;
   * what ``Conv1d`` and ``BatchNorm1d`` compute when given ``(N, L, C)``: the errors, and the
     silent cases;
   * the fix: ``transpose(1, 2)`` around them (not ``reshape``), or ``LayerNorm`` over the
     features.

.. admonition:: Prerequisites

   Tensor shapes and dimensions; what BatchNorm computes (:ref:`train-eval-mode`).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A batch of 8 sequences of 20 time steps, each step with 3 features, held as ``(N, L, C)``
# as a sequence model's other layers expect it.
# The three features have very different scales (means 10, 0 and −5), which is why the model
# normalises them.
# A convolution over time with 3 input channels, and a BatchNorm over the 3 features, both
# refuse the batch:
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

N, L, C = 8, 20, 3
feature_means = torch.tensor([10.0, 0.0, -5.0], device=device)
feature_stds = torch.tensor([2.0, 1.0, 0.5], device=device)
x = torch.randn(N, L, C, device=device) * feature_stds + feature_means  # (N, L, C)

conv = nn.Conv1d(C, 4, kernel_size=3, padding=1).to(device)
bn = nn.BatchNorm1d(C).to(device)
with expect_raises(RuntimeError, r"expected input\[8, 20, 3\] to have 3 channels, but got 20"):
    conv(x)
with expect_raises(RuntimeError, "running_mean should contain 20 elements not 3"):
    bn(x)

# %%
# The BatchNorm error suggests its own "fix": give the layer 20 features.
# **BatchNorm1d(L) runs, and normalises each time step over the batch and the features**: every
# time step comes out with mean 0, while the three features come out with different means, far
# from 0.

bn_positions = nn.BatchNorm1d(L).to(device)
out = bn_positions(x).detach()
mean_per_step = out.mean(dim=(0, 2))
mean_per_feature = out.mean(dim=(0, 1))
print("running_mean has one entry per time step:", tuple(bn_positions.running_mean.shape))
print(f"output mean per time step: largest |mean| {mean_per_step.abs().max().item():.1e}")
print("output mean per feature:", mean_per_feature)
assert bn_positions.running_mean.shape == (L,)
assert mean_per_step.abs().max() < 1e-5
assert mean_per_feature[0] > 1 and mean_per_feature[2] < -0.5

# %%
# The layer is now tied to the sequence length: a batch of sequences of 24 steps, at training or
# at inference, is refused.

with expect_raises(RuntimeError, "running_mean should contain 24 elements not 20"):
    bn_positions.eval()(torch.randn(N, 24, C, device=device))

# %%
# When the sequence length equals the number of features, nothing is refused.
# A window of 6 time steps of 6 sensor features, in ``(N, L, C)``, goes through a ``Conv1d(6, …)``
# and a ``BatchNorm1d(6)`` without error; but the convolution slides along the features.
# To see which axis it slides along, we change one value — time step 5, feature 0 — and list the
# output positions that change: with ``padding=1`` and a kernel of 3, a convolution over time
# should change positions 4 and 5.

L6 = C6 = 6
window = torch.randn(N, L6, C6, device=device)  # (N, L, C) with L == C
conv6 = nn.Conv1d(C6, 4, kernel_size=3, padding=1).to(device)


def changed_positions(layer, before, after):
    """The positions along the output's last dimension that differ for sample 0."""
    difference = (layer(after) - layer(before))[0].abs().amax(dim=0)
    return [p for p, d in enumerate(difference.tolist()) if d > 1e-6]


edited = window.clone()
edited[0, 5, 0] += 1.0  # sample 0, time step 5, feature 0
silent = changed_positions(conv6, window, edited)
print("Conv1d(6, 4) output:", tuple(conv6(window).shape), "(no error)")
print("BatchNorm1d(6) output:", tuple(nn.BatchNorm1d(C6).to(device)(window).shape), "(no error)")
print("output positions changed by time step 5:", silent)
assert silent == [0, 1]

# %%
# **The output changed at positions 0 and 1, around feature 0, and not around time step 5**:
# the convolution treated the 6 time steps as input channels and the 6 features as the sequence.
#
# Why
# ---
#
# PyTorch's convolution and normalisation layers take the channels in dimension 1, whatever the
# number of spatial dimensions: ``(N, C, L)`` for the ``1d`` layers, ``(N, C, H, W)`` for the
# ``2d`` ones.
# A ``Conv1d`` mixes all channels and slides along the last dimension; a ``BatchNorm1d`` on a
# 3-D input computes one mean and one variance per index of dimension 1, over dimensions 0
# and 2.
# The layers that sequence models use around them (``Linear``, ``LayerNorm``, the recurrent and
# attention layers with ``batch_first=True``) take the features *last*.
# Checked by hand on the batch above, ``BatchNorm1d(L)`` computed exactly the statistics of each
# time step:

step_mean = x.mean(dim=(0, 2), keepdim=True)
step_var = x.var(dim=(0, 2), unbiased=False, keepdim=True)
by_hand = (x - step_mean) / torch.sqrt(step_var + bn_positions.eps)
torch.testing.assert_close(out, by_hand)
print("BatchNorm1d(L) output == (x - mean over (N, C)) / std over (N, C), per time step: True")

# %%
# Nothing in a tensor says which dimension is which: ``(8, 6, 6)`` is a valid ``(N, C, L)``.
# The error when sizes differ is the only protection, and a ``BatchNorm1d(L)`` or a
# ``Conv1d(L, …)`` removes it.
#
# The fix
# -------
#
# **Move the features to dimension 1 before Conv1d and BatchNorm1d, and back after:
# x.transpose(1, 2).**
# ``transpose`` (or ``permute(0, 2, 1)``) swaps the axes; ``reshape(N, C, L)`` would keep the
# memory order and scramble the values (see :ref:`reshape-vs-permute`).
# A small module keeps the swap in one place:


class ChannelsFirst(nn.Module):
    """Apply ``layer`` (which expects (N, C, L)) to a batch held as (N, L, C)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x.transpose(1, 2)).transpose(1, 2)


fixed_bn = ChannelsFirst(nn.BatchNorm1d(C)).to(device)
out_fixed = fixed_bn(x).detach()
fixed_mean_per_feature = out_fixed.mean(dim=(0, 1))
fixed_std_per_feature = out_fixed.std(dim=(0, 1), unbiased=False)
print("running_mean has one entry per feature:", tuple(fixed_bn.layer.running_mean.shape))
print(f"output mean per feature: largest |mean| {fixed_mean_per_feature.abs().max().item():.1e}")
print("output std per feature:", fixed_std_per_feature)
assert fixed_bn.layer.running_mean.shape == (C,)
torch.testing.assert_close(fixed_mean_per_feature, torch.zeros(C, device=device), atol=1e-5, rtol=0)
torch.testing.assert_close(fixed_std_per_feature, torch.ones(C, device=device), atol=1e-3, rtol=0)

# %%
# The same BatchNorm can also be written without the transpose: flattening the batch and the
# time steps into one dimension gives ``(N * L, C)``, a 2-D input whose statistics are the same.

flat = nn.BatchNorm1d(C).to(device)
out_flat = flat(x.reshape(N * L, C)).reshape(N, L, C).detach()
torch.testing.assert_close(out_flat, out_fixed)
print("BatchNorm1d on (N * L, C) == the transposed version: True")

# %%
# The convolution, with the features moved to dimension 1, slides along time again: the edit at
# time step 5 changes output positions 4 and 5.

fixed_conv = ChannelsFirst(conv6)


def changed_steps(layer, before, after):
    """The time steps of the (N, L, C) output that differ for sample 0."""
    difference = (layer(after) - layer(before))[0].abs().amax(dim=1)
    return [t for t, d in enumerate(difference.tolist()) if d > 1e-6]


fixed_steps = changed_steps(fixed_conv, window, edited)
print("time steps changed by time step 5:", fixed_steps)
assert fixed_steps == [4, 5]

# %%
# Or normalise over the features
# ------------------------------
#
# When what the model needs is each time step's features on a common scale, not batch
# statistics, :class:`~torch.nn.LayerNorm` over the last dimension works on ``(N, L, C)``
# directly: it normalises each time step of each sample over its ``C`` features, with no
# running statistics and the same computation in training and evaluation.
# This is what Transformers use; it is a different normalisation from BatchNorm, not a drop-in
# replacement for a trained one.

layer_norm = nn.LayerNorm(C).to(device)
out_ln = layer_norm(x).detach()
per_step_mean = out_ln.mean(dim=-1)
print("LayerNorm(C), mean over the features of each sample and time step:", end=" ")
print(f"largest |mean| {per_step_mean.abs().max().item():.1e}")
assert per_step_mean.abs().max() < 1e-5
assert dict(layer_norm.named_buffers()) == {}

# %%
# A real-world report: "fixing" the error with the wrong size
# -----------------------------------------------------------
#
# In an image-captioning code base, a user fed region features of shape (batch, 36 regions,
# 2048 features) to a ``BatchNorm1d(2048)`` and got "running_mean should contain 36 elements not
# 2048".
# They changed the layer to ``BatchNorm1d(36)``, training ran, and they asked whether the code
# had a bug; the maintainer answered that the layer's size must be the feature size, and that the
# features were meant to be flattened to (K, 2048) before it
# (`self-critical.pytorch issue 44 <https://github.com/ruotianluo/self-critical.pytorch/issues/44>`_).
# The silent form was reported in a human-activity-recognition project, whose notebook applied
# BatchNorm to pose sequences held as (batch, time steps, features): a reader pointed out that
# BatchNorm expects (batch, features, time steps) and that a transpose was needed
# (`LSTM-for-Human-Activity-Recognition issue 2
# <https://github.com/xieyulai/LSTM-for-Human-Activity-Recognition-using-2D-Pose_Pytorch/issues/2>`_).
#
# Takeaway
# --------
#
# **Conv1d and BatchNorm1d take (N, C, L), features in dimension 1; sequence code holds (N, L, C):
# transpose(1, 2) around them, and never answer their size error by resizing the layer.**
# Test a sequence layer by changing one time step and checking that the output changes at that
# time step; for a per-step normalisation of the features, use ``LayerNorm(C)``.
# The attention layers have the opposite default: see :ref:`transformer-batch-first`.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because the sizes that decide
# the layout are known only at run time, and when they are equal (``L == C``) nothing tells the two
# layouts apart.
