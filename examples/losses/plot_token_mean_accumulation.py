"""
.. _token-mean-accumulation:

Token means across micro-batches
================================

A language model's loss is the mean over the real tokens of a batch, padding left out.
When the batch is split into micro-batches for gradient accumulation, each micro-batch's
cross-entropy is the mean over *its own* real tokens, and averaging those means is not the mean
over all tokens: micro-batches of short sequences count as much as micro-batches of long ones,
so each of their tokens counts more.
The gradient is then not the gradient of the large batch, however carefully the micro-batch
losses are scaled by their number.

.. admonition:: What you will learn

   * why the mean of per-micro-batch token means differs from the token mean of the whole batch;
   * how much more a token of a short micro-batch counts;
   * the fix: sum the token losses and divide by the number of real tokens of the whole batch.

.. admonition:: Prerequisites

   :ref:`gradient-accumulation` (micro-batches and scaling their losses) and
   :ref:`loss-weights-reduction` (``ignore_index`` and what a mean divides by).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A tiny next-token model (an embedding and a linear layer over a vocabulary of 11 tokens) and a
# batch of four sequences, padded to 10 positions.
# The labels hold the next token at real positions and ``-100``, the default ``ignore_index`` of
# :func:`~torch.nn.functional.cross_entropy`, at padded ones.
# The two short sequences go into the first micro-batch, the two long ones into the second:
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(4)
device = get_device()
print(f"device: {device}")

vocab, length = 11, 10
lengths = [2, 3, 9, 10]  # real tokens to predict in each sequence
tokens = torch.randint(0, vocab, (4, length))
labels = torch.randint(0, vocab, (4, length))
for row, n in enumerate(lengths):
    labels[row, n:] = -100  # padding: no loss here
tokens, labels = tokens.to(device), labels.to(device)  # the same values on every device

model = nn.Sequential(nn.Embedding(vocab, 8), nn.Linear(8, vocab)).to(device)


def token_loss(rows, reduction="mean"):
    """Cross-entropy of the model over the real tokens of the sequences ``rows``."""
    logits = model(tokens[rows])  # (sequences, positions, vocab)
    return F.cross_entropy(logits.flatten(0, 1), labels[rows].flatten(), reduction=reduction)


def flat_grad(module):
    """All parameter gradients of ``module`` as one vector (a copy)."""
    return torch.cat([p.grad.flatten() for p in module.parameters()]).clone()


micro_batches = [[0, 1], [2, 3]]
real_tokens = [int((labels[rows] != -100).sum()) for rows in micro_batches]
print("real tokens per micro-batch:", real_tokens)

model.zero_grad()
full_loss = token_loss([0, 1, 2, 3])
full_loss.backward()
full = flat_grad(model)

model.zero_grad()
micro_losses = []
for rows in micro_batches:
    loss = token_loss(rows) / len(micro_batches)
    loss.backward()
    micro_losses.append(loss.item())
accumulated = flat_grad(model)
relative = ((accumulated - full).norm() / full.norm()).item()
print(f"token mean of the whole batch:        {full_loss.item():.4f}")
print(f"sum of (micro-batch mean / 2):        {sum(micro_losses):.4f}")
print(f"gradient, relative difference:        {relative:.3f}")
assert real_tokens == [5, 19]
assert abs(sum(micro_losses) - full_loss.item()) > 0.05 and relative > 0.05

# %%
# Both micro-batches hold two sequences, and each loss was divided by the number of
# micro-batches, as :ref:`gradient-accumulation` recommends; still, neither the loss nor the
# gradient is the whole batch's.
#
# Why
# ---
#
# **A mean of means weighs each part equally, whatever its size.**
# With ``s₁, s₂`` the sums of the token losses and ``n₁, n₂`` the numbers of real tokens, the
# accumulation computes ``(s₁/n₁ + s₂/n₂) / 2`` and the whole batch ``(s₁ + s₂) / (n₁ + n₂)``; the
# two agree only when ``n₁ = n₂``.
# Per token, the weight is ``1 / (2·n)`` of its own micro-batch instead of ``1 / 24`` for every
# token, so a token of the short micro-batch counts almost four times as much as a token of the
# long one:

total_tokens = sum(real_tokens)
weights = [1 / (len(micro_batches) * n) for n in real_tokens]
print(
    f"weight of one token: short micro-batch {weights[0]:.4f}, long {weights[1]:.4f}, "
    f"whole batch {1 / total_tokens:.4f}"
)
print(f"a short-batch token counts {weights[0] / weights[1]:.2f}× a long-batch token")
sums = [token_loss(rows, reduction="sum").item() for rows in micro_batches]
mean_of_means = sum(s / n for s, n in zip(sums, real_tokens, strict=True)) / 2
print(
    f"(s1/n1 + s2/n2) / 2 = {mean_of_means:.4f}   (s1 + s2) / (n1 + n2) = "
    f"{sum(sums) / total_tokens:.4f}"
)
print(
    f"token mean of the short micro-batch: {sums[0] / real_tokens[0]:.4f}, "
    f"of the long one: {sums[1] / real_tokens[1]:.4f}"
)
assert sums[0] / real_tokens[0] > sums[1] / real_tokens[1]
assert abs(weights[0] / weights[1] - 19 / 5) < 1e-12
torch.testing.assert_close(mean_of_means, sum(micro_losses), rtol=1e-5, atol=0)
torch.testing.assert_close(sum(sums) / total_tokens, full_loss.item(), rtol=1e-5, atol=0)

# %%
# How far the loss is off depends on how the token losses of the two micro-batches differ: here
# the short sequences have the higher token mean, and counting them more pushes the loss up.
# Sequences of different lengths are the normal case, and so are micro-batches with different
# numbers of real tokens: the error is there in almost every step, and larger the more the lengths
# vary.
#
# The fix
# -------
#
# **Count the real tokens of the whole batch before the loop; sum the token losses of each
# micro-batch and divide by that count.**
# With ``reduction="sum"`` and that division, every token has the weight ``1 / 24``, and the
# accumulated gradient is the whole batch's, to rounding:

total = int((labels != -100).sum())  # real tokens of the whole batch, counted once
model.zero_grad()
for rows in micro_batches:
    (token_loss(rows, reduction="sum") / total).backward()
fixed = flat_grad(model)
max_diff = (fixed - full).abs().max().item()
print(f"real tokens in the batch: {total}; largest gradient difference: {max_diff:.3g}")
assert total == 24
assert torch.allclose(fixed, full, rtol=1e-5, atol=1e-6)

# %%
# This is the rule of :ref:`gradient-accumulation`, "weight each micro-batch by its share",
# with the share counted in tokens: ``mean · n / 24`` is ``sum / 24``.
# The sum has a second advantage: a micro-batch whose targets are all padding gives a sum of 0,
# where its mean is ``0 / 0`` (see :ref:`loss-weights-reduction`):

padding_only = torch.full((length,), -100, device=device)
empty_logits = model(tokens[0])
empty_mean = F.cross_entropy(empty_logits, padding_only)
empty_sum = F.cross_entropy(empty_logits, padding_only, reduction="sum")
print(f"all padding: mean {empty_mean.item()}, sum {empty_sum.item()}")
assert torch.isnan(empty_mean) and empty_sum.item() == 0

# %%
# Padding must also stay out of the count.
# Taking ``.mean()`` of the ``reduction="none"`` output divides by every position, padded or not
# (here 40 instead of 24): the more padding a batch holds, the smaller its loss looks:

per_position = F.cross_entropy(model(tokens).flatten(0, 1), labels.flatten(), reduction="none")
print(
    f"mean over all {per_position.numel()} positions: {per_position.mean().item():.4f}   "
    f"over the {total} real tokens: {full_loss.item():.4f}"
)
torch.testing.assert_close(per_position.mean() * per_position.numel() / total, full_loss)

# %%
# A real-world report
# -------------------
#
# In `transformers issue #24725 <https://github.com/huggingface/transformers/issues/24725>`_, a
# user showed that training on two samples of 11 and 101 tokens with two accumulation steps of one
# sample each gave another gradient than one batch of both, because the library's models returned
# a mean over each batch's tokens: every token of the short sample weighed about ten times as much.
# Libraries later changed their training loops to count the tokens of the whole step first, as
# in `torchtune pull request #1875 <https://github.com/meta-pytorch/torchtune/pull/1875>`_, which
# divides the summed loss by the number of non-padding tokens of all the micro-batches.

# %%
# Takeaway
# --------
#
# **When the loss is a mean over tokens, accumulate sums: divide each micro-batch's summed token
# loss by the number of real tokens of the whole batch, counted before the loop.**
# Dividing per-micro-batch means by the number of micro-batches is right only when every
# micro-batch has the same number of real tokens.
