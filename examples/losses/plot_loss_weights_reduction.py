"""
.. _loss-weights-reduction:

Class weights and ``reduction="mean"``
======================================

Class weights (``weight=``) are the usual answer to an imbalanced data set: a rare class gets a
larger weight, so that its mistakes cost more.
With the default ``reduction="mean"``, :class:`~torch.nn.CrossEntropyLoss` and
:class:`~torch.nn.NLLLoss` then divide by the sum of the weights of the batch's targets, not by
the number of samples, and targets equal to ``ignore_index`` leave the denominator too.
The loss is a weighted average *within* each batch, which changes what a batch's loss means: it
cannot be averaged over batches or accumulated over micro-batches like an ordinary mean.

.. admonition:: What you will learn

   * what the mean of a class-weighted loss divides by, and what ``ignore_index`` removes;
   * why weights have no effect at all on a batch of one sample;
   * why averaging weighted batch losses, or accumulating them over micro-batches, gives another
     loss than the whole batch, and how to compute the right one;
   * why an epoch's loss averaged over batch means is wrong, even without weights, when the last
     batch is smaller;
   * which losses divide by the number of elements instead.

.. admonition:: Prerequisites

   :ref:`cross-entropy-expects-logits` (what :class:`~torch.nn.CrossEntropyLoss` computes) and
   :ref:`gradient-accumulation` (micro-batches).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A batch of six samples from three classes, four of them from class 0, with class weights
# ``[1, 4, 8]`` that favour the rare classes.
# The per-sample losses (``reduction="none"``) are already multiplied by the weights, yet their
# mean is not the loss that ``reduction="mean"`` returns:
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

class_weights = torch.tensor([1.0, 4.0, 8.0], device=device)
logits = torch.randn(6, 3).to(device)  # drawn on the CPU: the same values on every device
targets = torch.tensor([0, 0, 0, 0, 1, 2], device=device)

per_sample = F.cross_entropy(logits, targets, weight=class_weights, reduction="none")
loss_mean = F.cross_entropy(logits, targets, weight=class_weights)
print("per-sample weighted losses:", per_sample)
print(f"their mean: {per_sample.mean().item():.4f}   reduction='mean': {loss_mean.item():.4f}")
assert loss_mean < per_sample.mean() / 2

# %%
# Why
# ---
#
# **The weighted mean divides by the sum of the weights of the targets in the batch:**
# ``Σ wᵢ·lᵢ / Σ wᵢ``, where ``wᵢ`` is the weight of sample ``i``'s class and ``lᵢ`` its
# unweighted loss.
# Here that sum is ``4·1 + 4 + 8 = 16``, not 6:

sample_weights = class_weights[targets]
by_hand = per_sample.sum() / sample_weights.sum()
print(f"sum of the targets' weights: {sample_weights.sum().item():.0f}")
print(f"sum of weighted losses / sum of weights: {by_hand.item():.4f}")
torch.testing.assert_close(loss_mean, by_hand)

# %%
# The result is a weighted *average* of the per-sample losses: sample ``i`` counts with the share
# ``wᵢ / Σ w``, and the shares add up to 1.
# The weights trade the samples of one batch off against each other; they do not make a batch
# that contains rare classes cost more than one that does not.
# The extreme case is a batch of one sample, where the weight cancels out: the loss and its
# gradient are the unweighted ones, and the weights do nothing at all:

shares = sample_weights / sample_weights.sum()
print("shares of the six samples:", [round(s, 4) for s in shares.tolist()])
one_logit = logits[4:5].clone().requires_grad_()
F.cross_entropy(one_logit, targets[4:5], weight=class_weights).backward()
grad_weighted = one_logit.grad.clone()
one_logit.grad = None
F.cross_entropy(one_logit, targets[4:5]).backward()
print("batch of one, gradient with weights:   ", grad_weighted)
print("batch of one, gradient without weights:", one_logit.grad)
torch.testing.assert_close(shares.sum(), torch.tensor(1.0, device=device))
torch.testing.assert_close(grad_weighted, one_logit.grad)

# %%
# **Targets equal to** ``ignore_index`` **(default −100) leave both sums.**
# Their per-sample loss is 0 in ``reduction="none"``, so taking ``.mean()`` of that output counts
# them in the denominator after all; and a batch in which every target is ignored has a mean of
# ``0 / 0``, not a number:

ignored = targets.clone()
ignored[1] = -100
per_sample_ignored = F.cross_entropy(logits, ignored, weight=class_weights, reduction="none")
loss_ignored = F.cross_entropy(logits, ignored, weight=class_weights)
kept = ignored != -100
print("per-sample losses, sample 1 ignored:", per_sample_ignored)
print(
    f"reduction='mean': {loss_ignored.item():.4f}   "
    f"sum / weights of the kept targets: "
    f"{(per_sample_ignored.sum() / class_weights[ignored[kept]].sum()).item():.4f}   "
    f".mean() of 'none': {per_sample_ignored.mean().item():.4f}"
)
all_ignored = F.cross_entropy(logits[:2], torch.full((2,), -100, device=device))
print(f"every target ignored: {all_ignored.item()}")
assert per_sample_ignored[1] == 0
torch.testing.assert_close(
    loss_ignored, per_sample_ignored.sum() / class_weights[ignored[kept]].sum()
)
assert torch.isnan(all_ignored)

# %%
# When it matters: averaging over batches
# ---------------------------------------
#
# **The mean of weighted batch losses is not the weighted loss of all their samples, even with
# batches of equal size.**
# Each batch divides by its own sum of weights.
# Twelve samples in two batches of six, the first with one rare sample, the second with four:
# averaging the two batch losses, as an epoch's log usually does, gives another value than the
# loss of all twelve; without class weights the two agree:

seed_everything(1)
model = nn.Linear(5, 3).to(device)
inputs = torch.randn(12, 5).to(device)
labels = torch.tensor([0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 2, 2], device=device)
halves = list(zip(inputs.split(6), labels.split(6), strict=True))
with torch.no_grad():
    batch_losses = [F.cross_entropy(model(xb), yb, weight=class_weights) for xb, yb in halves]
    whole = F.cross_entropy(model(inputs), labels, weight=class_weights)
    plain_batches = [F.cross_entropy(model(xb), yb) for xb, yb in halves]
    plain_whole = F.cross_entropy(model(inputs), labels)
mean_of_batches = torch.stack(batch_losses).mean()
print("sum of weights per batch:", [class_weights[yb].sum().item() for _, yb in halves])
print(
    f"weighted:   mean of the 2 batch losses {mean_of_batches.item():.4f}, "
    f"loss of all 12 {whole.item():.4f}"
)
print(
    f"unweighted: mean of the 2 batch losses {torch.stack(plain_batches).mean().item():.4f}, "
    f"loss of all 12 {plain_whole.item():.4f}"
)
assert abs(mean_of_batches - whole) > 0.01
torch.testing.assert_close(torch.stack(plain_batches).mean(), plain_whole)

# %%
# When it matters: a smaller last batch
# -------------------------------------
#
# Without class weights, the mean of the batch losses was right above only because both batches
# held six samples.
# An epoch rarely divides evenly: a :class:`~torch.utils.data.DataLoader` with ``batch_size=5``
# cuts the twelve samples into batches of 5, 5 and 2 (``drop_last=False``, the default).
# **Averaging the three batch means gives each of the last batch's two samples 2.5 times the
# weight of a sample in a full batch**, and the epoch's loss is not the loss of its samples:

from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(inputs, labels), batch_size=5)
sizes, batch_means = [], []
with torch.no_grad():
    for xb, yb in loader:
        sizes.append(len(yb))
        batch_means.append(F.cross_entropy(model(xb), yb).item())
epoch_mean_of_means = sum(batch_means) / len(batch_means)
print("batch sizes:", sizes)
print(
    f"mean of the batch losses {epoch_mean_of_means:.4f}, "
    f"loss of all {len(labels)} samples {plain_whole.item():.4f}"
)
last_sample_counts = sizes[0] / sizes[-1]  # its share 1 / (3·2) against 1 / (3·5)
print(f"a sample of the last batch counts {last_sample_counts}× a sample of a full batch")
assert sizes == [5, 5, 2] and last_sample_counts == 2.5
assert abs(epoch_mean_of_means - plain_whole.item()) > 0.01

# %%
# **Weight each batch's mean by its number of samples (or add up** ``reduction="sum"`` **losses)
# and divide by the number of samples at the end.**
# ``drop_last=True`` also makes the batches equal, by leaving samples out: acceptable for training
# batches, not for an evaluation that should see every sample.

total_loss, seen = 0.0, 0
with torch.no_grad():
    for xb, yb in loader:
        total_loss += F.cross_entropy(model(xb), yb).item() * len(yb)
        seen += len(yb)
epoch_loss = total_loss / seen
print(f"sum of (batch mean × batch size) / samples: {epoch_loss:.4f}")
assert seen == len(labels) and abs(epoch_loss - plain_whole.item()) < 1e-5

# %%
# When it matters: gradient accumulation
# --------------------------------------
#
# The fix of :ref:`gradient-accumulation`, dividing each micro-batch's mean loss by the number of
# micro-batches, relies on every micro-batch mean having the same denominator.
# With class weights it has not, and the accumulated gradient differs from the gradient of the
# whole batch, although both micro-batches hold six samples:


def flat_grad(module):
    """All parameter gradients of ``module`` as one vector (a copy)."""
    return torch.cat([p.grad.flatten() for p in module.parameters()]).clone()


model.zero_grad()
F.cross_entropy(model(inputs), labels, weight=class_weights).backward()
full = flat_grad(model)

model.zero_grad()
for xb, yb in halves:
    (F.cross_entropy(model(xb), yb, weight=class_weights) / len(halves)).backward()
divided_by_k = flat_grad(model)
relative = ((divided_by_k - full).norm() / full.norm()).item()
print(f"accumulated (each mean / 2) vs whole batch, relative difference: {relative:.3f}")
assert relative > 0.05

# %%
# The fix
# -------
#
# **Sum the weighted losses, and divide once by the sum of the weights of the whole batch.**
# Count that sum before the micro-batch loop (``class_weights[labels].sum()``, leaving out
# ignored targets), use ``reduction="sum"`` for each micro-batch, and divide by the total; the
# accumulated gradient is then the whole batch's gradient, to rounding:

total_weight = class_weights[labels[labels != -100]].sum()
model.zero_grad()
for xb, yb in halves:
    (
        F.cross_entropy(model(xb), yb, weight=class_weights, reduction="sum") / total_weight
    ).backward()
by_total_weight = flat_grad(model)
max_diff = (by_total_weight - full).abs().max().item()
print(f"sum / total weight of the batch: largest difference from the whole batch {max_diff:.3g}")
assert torch.allclose(by_total_weight, full, rtol=1e-5, atol=1e-6)

# %%
# The same division gives an epoch's loss that matches the loss of all its samples: add up each
# batch's ``reduction="sum"`` loss and each batch's sum of weights, and divide at the end.
# And if what you want is a plain mean of weighted per-sample losses, say so:
# ``F.cross_entropy(..., reduction="none").mean()`` divides by the number of samples (ignored
# targets included).
#
# Not every weighted loss divides by the weights
# ----------------------------------------------
#
# **The weighted mean over the sum of weights is the rule for class-index targets only.**
# With class-probability targets (see :ref:`cross-entropy-expects-logits`),
# :class:`~torch.nn.CrossEntropyLoss` divides by the number of samples, so one-hot probabilities
# and the same classes as indices give different losses once weights are set; and
# :class:`~torch.nn.BCEWithLogitsLoss` multiplies each element by its ``weight`` and divides by
# the number of elements:

one_hot = F.one_hot(targets, 3).float()
loss_indices = F.cross_entropy(logits, targets, weight=class_weights)
loss_one_hot = F.cross_entropy(logits, one_hot, weight=class_weights)
print(
    f"weighted, class indices: {loss_indices.item():.4f}   "
    f"one-hot probabilities: {loss_one_hot.item():.4f}   "
    f"sum / number of samples: {(per_sample.sum() / len(targets)).item():.4f}"
)
torch.testing.assert_close(loss_one_hot, per_sample.sum() / len(targets))
assert abs(loss_one_hot - loss_indices) > 0.5

binary_logits = torch.randn(4).to(device)
binary_targets = torch.tensor([0.0, 1.0, 1.0, 0.0], device=device)
element_weights = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
loss_bce = F.binary_cross_entropy_with_logits(binary_logits, binary_targets, weight=element_weights)
elementwise = F.binary_cross_entropy_with_logits(binary_logits, binary_targets, reduction="none")
print(
    f"BCEWithLogitsLoss(weight=...): {loss_bce.item():.4f}   "
    f"mean of weighted elements: {(elementwise * element_weights).mean().item():.4f}"
)
torch.testing.assert_close(loss_bce, (elementwise * element_weights).mean())

# %%
# A real-world report
# -------------------
#
# In `PyTorch issue #72047 <https://github.com/pytorch/pytorch/issues/72047>`_, a user found the
# weighted mean of :class:`~torch.nn.CrossEntropyLoss` counter-intuitive, and found that it
# broke gradient accumulation: scaling each micro-batch loss to account for the number of
# accumulation steps no longer reproduced the gradient of the large batch, as shown above.
# Earlier reports, such as `issue #40560 <https://github.com/pytorch/pytorch/issues/40560>`_, had
# taken the difference between ``reduction="mean"`` and the ``.mean()`` of ``reduction="none"``
# for a bug.

# %%
# Takeaway
# --------
#
# **With class weights,** ``reduction="mean"`` **divides by the sum of the targets' weights
# (ignored targets excluded), so each batch's loss is a weighted average of its own samples.**
# To average over batches or accumulate over micro-batches, sum with ``reduction="sum"`` and
# divide once by the total weight; class-probability targets and
# :class:`~torch.nn.BCEWithLogitsLoss` divide by the number of elements instead.
# For token-level losses, where ``ignore_index`` marks the padding, see
# :ref:`token-mean-accumulation`.
