"""
.. _ctc-loss-inputs:

What ``CTCLoss`` needs
======================

:class:`~torch.nn.CTCLoss` trains a recogniser (speech, handwriting, licence plates) whose
output frames are not aligned with the target's characters.
It needs four things to be exactly right: log-probabilities laid out ``(T, N, C)``, the index of
the *blank* class, the number of valid frames of each sample *after* the network's downsampling,
and targets that fit in those frames.
Some mistakes raise an error; the others give a number.
The worst is a target that does not fit: its loss is ``inf``, the mean over the batch is ``inf``,
the backward pass fills every gradient with NaN, and after one optimizer step the whole model
is NaN.

.. admonition:: What you will learn

   * how many frames a target needs: its length plus one frame per repeated character;
   * what each wrong input gives: an error, a shifted loss, ``inf`` then NaN;
   * what ``zero_infinity=True`` does, and what it hides;
   * the fix: ``log_softmax`` over classes in ``(T, N, C)``, lengths after downsampling, and a
     check of every sample's length before training.

.. admonition:: Prerequisites

   :ref:`cross-entropy-expects-logits` (logits, log-probabilities and ``log_softmax``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A tiny recogniser: a 1-d convolution with stride 4 turns 48 feature frames into 12 output
# frames, over 6 classes, the blank (index 0) and the letters ``a`` to ``e`` (1 to 5).
# Three recordings of 48, 40 and 20 frames (zero-padded to 48) are transcribed as ``bad``,
# ``abed`` and ``added``.
# The code permutes the output to ``(T, N, C)``, takes ``log_softmax`` over the classes, and
# divides each recording's length by the stride: 12, 10 and 5 output frames.
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

stride, blank = 4, 0
letters = "abcde"
words = ["bad", "abed", "added"]
raw_lengths = torch.tensor([48, 40, 20])
features = torch.randn(3, 8, 48)
for row, length in enumerate(raw_lengths):
    features[row, :, length:] = 0  # padding
features = features.to(device)
targets = torch.tensor([letters.index(ch) + 1 for word in words for ch in word], device=device)
target_lengths = torch.tensor([len(word) for word in words], device=device)
input_lengths = (raw_lengths // stride).to(device)

model = nn.Conv1d(8, 1 + len(letters), kernel_size=stride, stride=stride).to(device)


def log_probs_of(model):
    return model(features).permute(2, 0, 1).log_softmax(dim=2)  # (N, C, T) -> (T, N, C)


log_probs = log_probs_of(model)
loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank)
loss.backward()
print("log_probs:", tuple(log_probs.shape), "| input lengths:", input_lengths.tolist())
print("loss:", loss.item())
grad_all_nan = all(p.grad.isnan().all().item() for p in model.parameters())
print("every gradient entirely NaN:", grad_all_nan)
with torch.no_grad():
    for p in model.parameters():
        p -= 0.1 * p.grad
after_step = F.ctc_loss(log_probs_of(model), targets, input_lengths, target_lengths)
print("loss after one SGD step:", after_step.item())
print("NaN in the weights:", model.weight.isnan().all().item())
assert loss.item() == float("inf") and grad_all_nan
assert after_step.isnan() and model.weight.isnan().all()

# %%
# **One sample made the loss inf, the gradient NaN, and after one step every weight NaN.**
# A loop that logs the loss sees ``inf`` once, then NaN at every step after it.
#
# Why
# ---
#
# CTC sums the probabilities of every alignment of the target to the frames: each frame emits a
# letter or the blank, repeated letters are merged, blanks are removed.
# Two equal letters in a row can only be told apart with a blank between them, so a target of
# length ``L`` with ``r`` repeated neighbours needs at least ``L + r`` frames.
# With fewer frames, no alignment exists, the probability is 0 and the loss ``-log 0 = inf``
# (a fresh model, since the first one is NaN now):

model = nn.Conv1d(8, 1 + len(letters), kernel_size=stride, stride=stride).to(device)
per_sample = F.ctc_loss(
    log_probs_of(model), targets, input_lengths, target_lengths, reduction="none"
)


def frames_needed(word):
    return len(word) + sum(a == b for a, b in zip(word, word[1:], strict=False))


needed = [frames_needed(word) for word in words]
rows = zip(words, input_lengths.tolist(), needed, per_sample.tolist(), strict=True)
for word, frames, need, value in rows:
    print(f"{word!r:8} frames {frames:2d}, needs {need}: loss {value:.4f}")
assert needed == [3, 4, 6] and per_sample.isinf().tolist() == [False, False, True]

# %%
# ``added`` has 5 letters and 5 frames, but its ``dd`` needs a blank in between.
# With one frame more it has a finite loss, and a word of 5 letters without repetition fits in
# 5 frames:

one_more = (input_lengths + torch.tensor([0, 0, 1], device=device)).clamp(max=12)
with_six = F.ctc_loss(log_probs_of(model), targets, one_more, target_lengths, reduction="none")
no_repeat = torch.tensor([letters.index(ch) + 1 for ch in "abcde"], device=device)
five_letters = F.ctc_loss(
    log_probs_of(model)[:, 2:],
    no_repeat[None],
    input_lengths[2:],
    torch.tensor([5], device=device),
    reduction="none",
)
print(f"'added' in 6 frames: {with_six[2].item():.4f}")
print(f"'abcde' in 5 frames: {five_letters.item():.4f}")
assert with_six.isfinite().all() and five_letters.isfinite()

# %%
# The mean over the batch is inf as soon as one sample's loss is, and the gradient of ``inf``
# through the mean is NaN for every parameter, not only for the frames of that sample.
#
# Each mistake's loss
# -------------------
#
# **Lengths before downsampling.** The lengths must count output frames.
# The lengths of the recordings are refused when they exceed the output's ``T``:

with expect_raises(RuntimeError, r"Expected input_lengths to have value at most 12, but got"):
    F.ctc_loss(log_probs_of(model), targets, raw_lengths.to(device), target_lengths)

# %%
# A length that is too short is not refused: a downsampling formula that rounds down once too
# often drops the last frames of a sample, and can push a long target below its ``L + r``.
#
# **Batch first.** The model's output permuted to ``(N, T, C)`` instead of ``(T, N, C)`` is
# read as a batch of ``T`` samples:

batch_first = model(features).permute(0, 2, 1).log_softmax(dim=2)  # (N, T, C)
with expect_raises(RuntimeError, "input_lengths must be of size batch_size"):
    F.ctc_loss(batch_first, targets, input_lengths, target_lengths)

# %%
# **Logits instead of log-probabilities.** Nothing checks that each frame's probabilities add up
# to 1. Without ``log_softmax``, adding a constant ``k`` to every logit, which changes no
# prediction, lowers the "loss" of a sample by exactly ``k × T`` (here 5 × 12 and 5 × 10), and
# it can be negative:

logits = model(features).permute(2, 0, 1)


def fmt(losses):
    return ", ".join(f"{value:.4f}" for value in losses.tolist())


valid = [0, 1]  # the two samples that fit
raw = F.ctc_loss(
    logits[:, valid], targets[:7], input_lengths[valid], target_lengths[valid], reduction="none"
)
raw_shifted = F.ctc_loss(
    logits[:, valid] + 5, targets[:7], input_lengths[valid], target_lengths[valid], reduction="none"
)
print(f"on logits: {fmt(raw)}\non logits + 5: {fmt(raw_shifted)}")
torch.testing.assert_close(
    raw - raw_shifted, 5.0 * input_lengths[valid].float(), rtol=1e-5, atol=1e-4
)
assert (raw_shifted < 0).all()

# %%
# **The wrong blank.** The letters are often encoded from 0, with the blank last.
# With the default ``blank=0``, the letter ``a`` is then the blank: the loss is computed anyway,
# for another problem than the one intended.

targets_from_0 = targets - 1  # a = 0, ..., e = 4; the blank meant to be 5
default_blank = F.ctc_loss(
    logits.log_softmax(2)[:, valid],
    targets_from_0[:7],
    input_lengths[valid],
    target_lengths[valid],
    reduction="none",
)
blank_last = F.ctc_loss(
    logits.log_softmax(2)[:, valid],
    targets_from_0[:7],
    input_lengths[valid],
    target_lengths[valid],
    blank=5,
    reduction="none",
)
print(f"blank=0 (default): {fmt(default_blank)}\nblank=5: {fmt(blank_last)}")
assert default_blank.isfinite().all() and not torch.allclose(default_blank, blank_last)

# %%
# ``zero_infinity=True`` and what it hides
# ----------------------------------------
#
# ``zero_infinity=True`` replaces each infinite loss by 0, and its gradient by 0.
# The batch trains again; the sample that does not fit is silently left out at every step, and
# it still counts in the mean's denominator.
# With ``reduction="mean"``, each sample's loss is first divided by its target length:

log_probs = log_probs_of(model).detach().requires_grad_()
hidden = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, zero_infinity=True)
hidden.backward()
finite = per_sample[:2].detach() / target_lengths[:2]
print(
    f"loss with zero_infinity=True: {hidden.item():.4f} = ({finite[0].item():.4f} + "
    f"{finite[1].item():.4f} + 0) / 3"
)
print("gradient of the frames of 'added':", log_probs.grad[:, 2].abs().max().item())
torch.testing.assert_close(hidden, finite.sum() / 3)
assert log_probs.grad[:, 2].abs().max() == 0 and log_probs.grad[:, :2].abs().max() > 0

# %%
# The fix
# -------
#
# **Feed log_softmax over the classes in (T, N, C), pass the lengths after downsampling, and
# check that every target fits before it reaches the loss.**
# A check in the data pipeline names the samples that can never be learned, instead of hiding
# them: here ``added`` needs a longer recording, or a network that downsamples less.


def check_fits(words, input_lengths):
    """The targets that cannot be aligned to their number of output frames."""
    pairs = zip(words, input_lengths.tolist(), strict=True)
    return [word for word, frames in pairs if frames_needed(word) > frames]


print("targets that cannot fit their frames:", check_fits(words, input_lengths))
assert check_fits(words, input_lengths) == ["added"]
keep = [0, 1]
fixed = F.ctc_loss(
    log_probs_of(model)[:, keep],
    targets[: int(target_lengths[keep].sum())],
    input_lengths[keep],
    target_lengths[keep],
)
fixed.backward()
print(
    f"loss over the samples that fit: {fixed.item():.4f}; finite gradient:",
    model.weight.grad.isfinite().all().item(),
)
assert fixed.isfinite() and model.weight.grad.isfinite().all()

# %%
# A real-world report
# -------------------
#
# In `captcha_break issue 29 <https://github.com/ypwhs/captcha_break/issues/29>`_, a user of a
# captcha recogniser changed the image size and the number of output frames it assumed, and the
# CTC loss turned NaN during training; a smaller batch or learning rate only delayed it.
# The maintainer's diagnosis was a target too long for its number of frames, since the blanks
# between characters need frames too, and the fixes were wider images or less horizontal pooling.
# A later error in the thread came from an input length that no longer matched the model's real
# number of output frames, which the maintainer told the user to measure by running the model.
# The maintainer's rule of thumb leaves room for a blank around every character, more than CTC
# needs: as shown above, a target needs one frame per character plus one per repeated pair.
#
# Takeaway
# --------
#
# **CTCLoss needs (T, N, C) log-probabilities, the right blank index, and lengths counted after
# downsampling with at least L + repeats frames per target: otherwise an error, a meaningless
# number, or inf, then NaN.**
# ``zero_infinity=True`` keeps training alive but drops the samples that cannot fit without a
# word: check the lengths instead.
