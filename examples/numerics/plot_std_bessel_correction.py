"""
.. _std-bessel-correction:

``torch.std`` and ``torch.var`` divide by ``n - 1``
===================================================

:func:`torch.std` and :func:`torch.var` apply Bessel's correction by default: they divide the
sum of squared deviations by ``n - 1``, where NumPy's ``np.std`` and ``np.var`` divide by ``n``.
Statistics ported from NumPy come out larger, a hand-written normalisation does not match
:class:`~torch.nn.LayerNorm`, and a test that compares the two libraries fails, by a factor that
is large for a few elements and invisible for many.
With one element per group, the default gives NaN.

.. admonition:: What you will learn

   * what ``correction`` is, and which default each library and each layer uses;
   * how large the difference is for ``n`` elements, and where ``n`` is small without looking so;
   * to pass ``correction=`` every time: ``0`` to describe the numbers you have, ``1`` to
     estimate the variance of the population they were drawn from.

.. admonition:: Prerequisites

   Mean and variance; :ref:`batchnorm-running-stats` for the BatchNorm part.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# The same four numbers, their standard deviation and variance in NumPy and in PyTorch:
import math

import numpy as np
import torch
from torch import nn

from torch_pitfalls import expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

values = [1.0, 2.0, 3.0, 4.0]
x = torch.tensor(values, device=device)
a = np.array(values)
print(f"np.std: {a.std():.4f}   torch.std: {x.std().item():.4f}")
print(f"np.var: {a.var():.4f}   torch.var: {x.var().item():.4f}")
assert math.isclose(a.var(), 1.25) and math.isclose(x.var().item(), 5 / 3, rel_tol=1e-6)

# %%
# **Same data, two answers: PyTorch's variance is 4/3 of NumPy's.**
# A feature-normalisation step ported from NumPy, or a hand-written layer normalisation, inherits
# the difference.
# Here a layer normalisation over 4 features written with ``var(-1)``, next to
# :class:`~torch.nn.LayerNorm`, which it was meant to reproduce:

features = torch.randn(3, 4, device=device)


def hand_layer_norm(t, eps=1e-5):
    return (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, keepdim=True) + eps)


layer_norm = nn.LayerNorm(4, elementwise_affine=False).to(device)
ratio = layer_norm(features) / hand_layer_norm(features)
print("LayerNorm / hand-written version, element by element:", ratio, sep="\n")
torch.testing.assert_close(ratio, torch.full_like(ratio, math.sqrt(4 / 3)), rtol=1e-4, atol=0)
print(f"sqrt(4 / 3) = {math.sqrt(4 / 3):.4f}")

# %%
# Every output of the hand-written version is smaller by the same factor, ``√(4/3)``: it runs,
# its outputs look normalised, and its standard deviation over the features is not 1.
#
# Why
# ---
#
# The variance of ``n`` numbers is the mean squared deviation from their mean, the sum of the
# squared deviations divided by ``n``.
# Computed on a *sample*, that number underestimates the variance of the population the sample
# was drawn from, because the deviations are taken from the sample's own mean; dividing by
# ``n - 1`` instead (**Bessel's correction**) removes that bias.
# Both functions take the amount to subtract from ``n`` as ``correction``, and the default is
# ``correction=1``; NumPy's equivalent is ``ddof``, with a default of 0.

squared_deviations = ((x - x.mean()) ** 2).sum().item()
n = x.numel()
print(f"sum of squared deviations: {squared_deviations}, n = {n}")
print(f"/ n = {squared_deviations / n}   (np.var, torch.var(correction=0))")
print(f"/ (n - 1) = {squared_deviations / (n - 1):.4f}   (torch.var(), np.var(ddof=1))")
assert x.var(correction=0).item() == squared_deviations / n == a.var()
assert math.isclose(x.var().item(), a.var(ddof=1), rel_tol=1e-6)

# %%
# The two standard deviations differ by the factor ``√(n / (n - 1))``.
# It is 15 % for 4 numbers and 0.05 % for a thousand, which is why a comparison on large arrays
# passes and the same code fails on the per-row statistics of a small layer:

for size in (2, 4, 16, 1000):
    t = torch.randn(size, device=device)
    factor = (t.std() / t.std(correction=0)).item()
    print(f"n = {size:4}: std() / std(correction=0) = {factor:.4f}")
    assert math.isclose(factor, math.sqrt(size / (size - 1)), rel_tol=1e-4)

# %%
# With one number per group
# -------------------------
#
# ``n - 1`` is 0 for a group of one: the default returns NaN, with a warning that is easy to
# miss in a training log.
# A statistic over the batch dimension meets it on a last batch of one sample:

last_batch = torch.randn(1, 3, device=device)
with expect_warns(UserWarning, r"std\(\): degrees of freedom is <= 0"):
    per_feature_std = last_batch.std(dim=0)
print("std over a batch of one:", per_feature_std)
print("with correction=0:      ", last_batch.std(dim=0, correction=0))
assert per_feature_std.isnan().all() and (last_batch.std(dim=0, correction=0) == 0).all()

# %%
# PyTorch's own layers choose for themselves
# ------------------------------------------
#
# Normalisation layers do not call ``std()`` with its default.
# :class:`~torch.nn.LayerNorm` and :class:`~torch.nn.BatchNorm1d` normalise with the
# uncorrected variance (``correction=0``), as the layer normalisation above showed.
# BatchNorm, however, stores the **corrected** batch variance in its running estimate
# (``running_var``), which is meant to estimate the variance of the whole data set:

bn = nn.BatchNorm1d(1, momentum=1.0).to(device)  # momentum 1: keep the last batch only
batch = x.view(4, 1)
out = bn(batch)
normalised_with = batch.var(correction=0)
print(f"normalised with the variance {normalised_with.item():.4f} (correction=0)")
print(f"running_var: {bn.running_var.item():.4f}   batch.var(): {batch.var().item():.4f}")
torch.testing.assert_close(out, (batch - batch.mean()) / torch.sqrt(normalised_with + bn.eps))
torch.testing.assert_close(bn.running_var, batch.var(dim=0))

# %%
# So a BatchNorm in evaluation mode, on the very batch it was trained on, does not give the same
# output as in training mode: the running variance is ``n / (n - 1)`` times the one it
# normalised with (:ref:`batchnorm-running-stats` shows the full update rule).
#
# The fix
# -------
#
# **Pass correction= every time you call std, var, std_mean or var_mean.**
# ``correction=0`` describes the numbers at hand: normalising activations or features, matching
# NumPy's default, :class:`~torch.nn.LayerNorm` and BatchNorm's normalisation.
# ``correction=1`` estimates the variance of a population from a sample: error bars, a
# statistical test, ``np.std(ddof=1)`` on the NumPy side.

print(f"np.std: {a.std():.4f}   torch.std(correction=0): {x.std(correction=0).item():.4f}")
assert math.isclose(x.std(correction=0).item(), a.std(), rel_tol=1e-6)


def fixed_layer_norm(t, eps=1e-5):
    var, mean = torch.var_mean(t, dim=-1, keepdim=True, correction=0)
    return (t - mean) / torch.sqrt(var + eps)


torch.testing.assert_close(fixed_layer_norm(features), layer_norm(features))

# %%
# Older code spells the same choice ``unbiased=False`` (``correction=0``) and ``unbiased=True``
# (``correction=1``); ``correction`` is the current argument, and also takes other integers.

assert torch.equal(x.var(unbiased=False), x.var(correction=0))
assert torch.equal(x.var(unbiased=True), x.var(correction=1))

# %%
# A real-world report
# -------------------
#
# In March 2017 a user computed the standard deviation of the same float64 series with NumPy and
# with PyTorch, got two different values, and asked whether that was normal
# (`PyTorch issue 1082 <https://github.com/pytorch/pytorch/issues/1082>`_): another user pointed
# to Bessel's correction, applied by PyTorch and not by NumPy.
# The same question came back as a bug report several times in 2017 (for instance
# `PyTorch issue 2436 <https://github.com/pytorch/pytorch/issues/2436>`_), each time answered as
# the intended behaviour.
# In 2021 a maintainer proposed to deprecate PyTorch's default and move to NumPy's
# (`PyTorch issue 50010 <https://github.com/pytorch/pytorch/issues/50010>`_): the ``correction``
# argument was added, but the pull requests that would have deprecated the default were closed
# in 2024, the deprecation not going ahead
# (`PyTorch pull request 55679 <https://github.com/pytorch/pytorch/pull/55679>`_).
# The default stays ``correction=1``.
#
# Takeaway
# --------
#
# **torch.std and torch.var divide by n - 1 by default, NumPy by n: write correction=0 or
# correction=1 in every call.**
# The difference is ``√(n / (n - 1))`` on a standard deviation, large for small groups, and a
# group of one gives NaN unless ``correction=0``.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because both corrections are
# right for some code, and which one a port meant is not in the source.
