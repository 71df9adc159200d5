"""
.. _gradient-accumulation:

Gradient accumulation: a large batch from small ones
====================================================

When a large batch does not fit in memory, the usual trick is to run several small
*micro-batches*, let :meth:`~torch.Tensor.backward` add their gradients into ``.grad``, and call
:meth:`~torch.optim.Optimizer.step` once.
Done naively, the accumulated gradient is several times too large; clearing gradients at the
wrong place keeps only the last micro-batch; and with BatchNorm no scaling makes it match the
large batch.

.. admonition:: What you will learn

   * why each micro-batch loss must be divided by the number of micro-batches (mean reduction);
   * where ``zero_grad()`` goes in an accumulation loop;
   * why backwarding one loss ``k`` times with ``retain_graph=True`` does not make a larger batch;
   * why BatchNorm still sees only the small batch.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (backward adds into ``.grad``; clearing it).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A small network, a batch of 16 samples and a mean-squared-error loss (mean over the batch).
# First the gradient of the full batch, as the reference.
# Then the same 16 samples as 4 micro-batches of 4, each backwarded into ``.grad`` before a
# single step would be taken.
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
loss_fn = nn.MSELoss()  # reduction="mean"
x = torch.randn(16, 4, device=device)
y = torch.randn(16, 1, device=device)
k = 4  # micro-batches
micro_batches = list(zip(x.chunk(k), y.chunk(k), strict=True))  # 4 pairs of 4 samples


def flat_grad(module):
    """All parameter gradients of ``module`` as one vector (a copy)."""
    return torch.cat([p.grad.flatten() for p in module.parameters()]).clone()


model.zero_grad()
loss_fn(model(x), y).backward()
full = flat_grad(model)

model.zero_grad()
for xb, yb in micro_batches:
    loss_fn(model(xb), yb).backward()
naive = flat_grad(model)
print(f"accumulated gradient / full-batch gradient (norms): {naive.norm() / full.norm():.4f}")
assert torch.allclose(naive, k * full, rtol=1e-5, atol=1e-6)

# %%
# **The accumulated gradient points the right way but is** ``k`` **times too long:**
# with plain SGD this is a learning rate ``k`` times larger than intended.
#
# Why
# ---
#
# Each ``backward()`` *adds* its gradient into ``.grad``, so after the loop ``.grad`` holds the
# sum of the four micro-batch gradients.
# With ``reduction="mean"`` each micro-batch loss is the mean over its 4 samples, while the
# full-batch loss is the mean over all 16: the mean of the four micro-batch means.
# **The full-batch loss is the sum of the micro-batch losses divided by** ``k``, and so is its
# gradient.

micro_losses = torch.stack([loss_fn(model(xb), yb) for xb, yb in micro_batches])
full_loss = loss_fn(model(x), y)
print(
    f"full-batch loss {full_loss.item():.6f}, sum of micro-batch losses / k "
    f"{micro_losses.sum().item() / k:.6f}"
)
torch.testing.assert_close(full_loss, micro_losses.sum() / k)

# %%
# The fix
# -------
#
# Divide each micro-batch loss by ``k`` before its backward.
# The accumulated gradient then matches the full-batch gradient; not bit for bit, because the
# float32 sums are taken in another order, but within rounding.
# We print the largest difference of any gradient entry and check it with :func:`torch.allclose`
# (``rtol=1e-5``, ``atol=1e-6``, tolerances for float32 rounding).

model.zero_grad()
for xb, yb in micro_batches:
    (loss_fn(model(xb), yb) / k).backward()
accumulated = flat_grad(model)
max_diff = (accumulated - full).abs().max().item()
print(f"largest |accumulated - full| over all gradient entries: {max_diff:.3g}")
print(f"largest |full| for scale: {full.abs().max().item():.3g}")
assert torch.allclose(accumulated, full, rtol=1e-5, atol=1e-6)

# %%
# One optimizer step after the accumulation then moves the weights as one step on the full batch
# would.
# Here ``model_a`` takes the full batch and ``model_b`` accumulates: after the step their weights
# agree within rounding.
import copy

model_a, model_b = copy.deepcopy(model), copy.deepcopy(model)
opt_a = torch.optim.SGD(model_a.parameters(), lr=0.1)
opt_b = torch.optim.SGD(model_b.parameters(), lr=0.1)

opt_a.zero_grad()
loss_fn(model_a(x), y).backward()
opt_a.step()

opt_b.zero_grad()
for xb, yb in micro_batches:
    (loss_fn(model_b(xb), yb) / k).backward()
opt_b.step()

weights_a = torch.cat([p.detach().flatten() for p in model_a.parameters()])
weights_b = torch.cat([p.detach().flatten() for p in model_b.parameters()])
print(f"largest weight difference after one step: {(weights_a - weights_b).abs().max().item():.3g}")
assert torch.allclose(weights_a, weights_b, rtol=1e-5, atol=1e-6)

# %%
# Dividing by ``k`` assumes micro-batches of equal size.
# When they differ (16 samples split as 6, 6 and 4), **weight each micro-batch loss by its share
# of the samples** instead: ``len(xb) / len(x)``.

sizes = [6, 6, 4]
parts = list(zip(x.split(sizes), y.split(sizes), strict=True))

model.zero_grad()
for xb, yb in parts:
    (loss_fn(model(xb), yb) / len(parts)).backward()
by_count = flat_grad(model)

model.zero_grad()
for xb, yb in parts:
    (loss_fn(model(xb), yb) * len(xb) / len(x)).backward()
by_share = flat_grad(model)

print(
    f"largest difference from full batch, divided by the number of micro-batches: "
    f"{(by_count - full).abs().max().item():.3g}"
)
print(
    f"largest difference from full batch, weighted by share of samples:         "
    f"{(by_share - full).abs().max().item():.3g}"
)
assert not torch.allclose(by_count, full, rtol=1e-5, atol=1e-6)
assert torch.allclose(by_share, full, rtol=1e-5, atol=1e-6)

# %%
# The share is counted in what the loss averages over: in real tokens for a language model's
# mean over tokens (:ref:`token-mean-accumulation`), in the targets' weights for a loss with class
# weights (:ref:`loss-weights-reduction`).

# %%
# A real-world report: accumulation has no effect
# -----------------------------------------------
#
# "I accumulate over 4 micro-batches, but training is as noisy as with one small batch."
# The loop clears the gradients *inside* the micro-batch loop, out of habit.
# Each ``zero_grad()`` throws away what the earlier micro-batches added, so
# **only the last micro-batch's gradient reaches the step.**

model.zero_grad()
for xb, yb in micro_batches:
    model.zero_grad()  # the bug: clears the sum so far
    (loss_fn(model(xb), yb) / k).backward()
cleared_inside = flat_grad(model)

last_x, last_y = micro_batches[-1]
model.zero_grad()
(loss_fn(model(last_x), last_y) / k).backward()
last_alone = flat_grad(model)

print(
    "identical to the last micro-batch's gradient alone:", torch.equal(cleared_inside, last_alone)
)
print(f"largest difference from the full batch: {(cleared_inside - full).abs().max().item():.3g}")
assert torch.equal(cleared_inside, last_alone)
assert not torch.allclose(cleared_inside, full, rtol=1e-5, atol=1e-6)

# %%
# Clear the gradients once per *step*: before the first micro-batch, or right after
# ``optimizer.step()``.
#
# A real-world report: one loss, backwarded ``k`` times
# -----------------------------------------------------
#
# A shortcut skips the micro-batches altogether: compute the loss of one small batch, call
# ``loss.backward(retain_graph=True)`` on it ``k`` times, then step, as if ``.grad`` now held
# ``k`` batches.
# The idea that accumulation and ``retain_graph`` belong together turns up in the wild: in
# `an issue of the LaVIN repository <https://github.com/luogen1996/LaVIN/issues/32>`_ a reader
# asked whether an accumulation loop that does not retain the graph keeps only the last
# micro-batch's gradient (the author answered that each micro-batch builds a graph of its own, so
# there is nothing to retain).
# Here is the shortcut on the first micro-batch, against one backward of the same loss.

xb, yb = micro_batches[0]
model.zero_grad()
loss_fn(model(xb), yb).backward()
one_batch = flat_grad(model)

model.zero_grad()
loss = loss_fn(model(xb), yb)
for _ in range(k):
    loss.backward(retain_graph=True)
same_loss_k_times = flat_grad(model)
ratio = (same_loss_k_times.norm() / one_batch.norm()).item()
print(f"k backwards of one loss / one backward (norms): {ratio:.4f}")
assert torch.allclose(same_loss_k_times, k * one_batch, rtol=1e-5, atol=1e-6)

# %%
# **Each backward of the same loss adds the same gradient again: the result is** ``k`` **times
# one batch's gradient, not the gradient of a** ``k`` **times larger batch.**
# No new sample was seen; with plain SGD this is only a learning rate ``k`` times larger.
# Dividing the loss by ``k``, as accumulation does, merely gives back the gradient of the one small
# batch.
# We compare both with the gradient of the mean loss over all 16 samples (``full``) and with
# accumulation over ``k`` *different* micro-batches, divided by ``k`` (``accumulated``, which
# matches ``full``) or not (``naive``, ``k`` times ``full``): relative differences, the norm of the
# difference over the norm of the reference.

model.zero_grad()
loss = loss_fn(model(xb), yb) / k
for _ in range(k):
    loss.backward(retain_graph=True)
same_loss_divided = flat_grad(model)


def relative_difference(a, b):
    """Norm of ``a - b`` over the norm of ``b``."""
    return ((a - b).norm() / b.norm()).item()


differences = {
    "one loss / k, k backwards  vs one backward of it": (same_loss_divided, one_batch),
    "one loss / k, k backwards  vs the 16-sample batch": (same_loss_divided, full),
    "one loss / k, k backwards  vs k micro-batches / k": (same_loss_divided, accumulated),
    "one loss, k backwards      vs k micro-batches": (same_loss_k_times, naive),
    "k micro-batches / k        vs the 16-sample batch": (accumulated, full),
}
for name, (a, b) in differences.items():
    print(f"{name}: {relative_difference(a, b):.3g}")
assert torch.allclose(same_loss_divided, one_batch, rtol=1e-5, atol=1e-6)
assert not torch.allclose(same_loss_divided, full, rtol=1e-5, atol=1e-6)
assert not torch.allclose(same_loss_divided, accumulated, rtol=1e-5, atol=1e-6)
assert not torch.allclose(same_loss_k_times, naive, rtol=1e-5, atol=1e-6)
assert torch.allclose(accumulated, full, rtol=1e-5, atol=1e-6)
assert relative_difference(same_loss_divided, full) > 0.5

# %%
# A larger batch needs more samples: ``k`` micro-batches, each with its own forward and so its own
# graph, which backward frees as usual.
# ``retain_graph=True`` has no place in an accumulation loop (see :ref:`retain-graph` for what it
# keeps alive).
#
# Caveat: BatchNorm still sees the small batch
# --------------------------------------------
#
# In training mode :class:`~torch.nn.BatchNorm1d` normalises with the mean and variance of the
# batch it is given: each micro-batch is normalised with its own 4 samples, not with all 16.
# The accumulated gradient is then the gradient of a different function:
# **no scaling of the loss makes BatchNorm see the large batch.**

model_bn = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)).to(device)
bn_full_model, bn_accumulating_model = copy.deepcopy(model_bn), copy.deepcopy(model_bn)

loss_fn(bn_full_model(x), y).backward()
bn_full = flat_grad(bn_full_model)
for xb, yb in micro_batches:
    (loss_fn(bn_accumulating_model(xb), yb) / k).backward()
bn_accumulated = flat_grad(bn_accumulating_model)

bn_max_diff = (bn_accumulated - bn_full).abs().max().item()
bn_relative = ((bn_accumulated - bn_full).norm() / bn_full.norm()).item()
print(f"largest |accumulated - full| with BatchNorm: {bn_max_diff:.3g}")
print(f"relative difference (norm of difference / norm of full-batch gradient): {bn_relative:.3g}")
assert not torch.allclose(bn_accumulated, bn_full, rtol=1e-5, atol=1e-6)

# %%
# The running statistics differ too: the full batch updated them once from 16 samples,
# the accumulation ``k`` times from 4 samples each.

bn_a, bn_b = bn_full_model[1], bn_accumulating_model[1]
print(
    "running-statistics updates: full batch",
    bn_a.num_batches_tracked.item(),
    "| accumulation",
    bn_b.num_batches_tracked.item(),
)
assert bn_a.num_batches_tracked.item() == 1 and bn_b.num_batches_tracked.item() == k
assert not torch.allclose(bn_a.running_var, bn_b.running_var)

# %%
# A normalisation that does not mix samples, such as ``torch.nn.LayerNorm`` (or
# ``torch.nn.GroupNorm`` in convolutional networks), gives each sample the same output whatever
# batch it is in, so accumulation matches the full batch again.

model_ln = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 1)).to(device)
ln_full_model, ln_accumulating_model = copy.deepcopy(model_ln), copy.deepcopy(model_ln)
loss_fn(ln_full_model(x), y).backward()
for xb, yb in micro_batches:
    (loss_fn(ln_accumulating_model(xb), yb) / k).backward()
ln_max_diff = (flat_grad(ln_accumulating_model) - flat_grad(ln_full_model)).abs().max().item()
print(f"largest |accumulated - full| with LayerNorm: {ln_max_diff:.3g}")
assert torch.allclose(
    flat_grad(ln_accumulating_model), flat_grad(ln_full_model), rtol=1e-5, atol=1e-6
)

# %%
# A learning rate scheduler that counts optimizer steps is stepped once per accumulated step,
# right after the optimizer, not once per micro-batch (see :ref:`scheduler-step-order`).
#
# Takeaway
# --------
#
# **Accumulating gradients reproduces a large batch only if each micro-batch loss is scaled by its
# share of the samples** (``/ k`` for equal micro-batches) **and gradients are cleared once per
# step.**
# BatchNorm still normalises over the micro-batch, so with it accumulation is an approximation.
# With a gradient scaler for mixed precision, unscale and clip once per optimizer step, after the
# last micro-batch's backward pass (:ref:`amp-unscale-before-clip`).
