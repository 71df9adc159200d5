"""
.. _cross-entropy-expects-logits:

No softmax before ``CrossEntropyLoss``
======================================

:class:`~torch.nn.CrossEntropyLoss` expects raw, unnormalised scores (logits) and applies the
softmax itself.
A network that ends in a softmax and feeds its probabilities to the loss gets a second softmax:
nothing fails, but the loss can no longer reach zero, its gradients are much smaller, and the model
trains more slowly.

.. admonition:: What you will learn

   * that :class:`~torch.nn.CrossEntropyLoss` is :func:`~torch.log_softmax` followed by
     :class:`~torch.nn.NLLLoss`;
   * why probabilities fed to it put a floor under the loss and shrink the gradients;
   * which target dtypes and values it accepts, and that probability targets and label smoothing
     are built in;
   * that the classes must be dimension 1 of the input, so sequence logits ``(N, T, C)`` need a
     transpose or a reshape (and give a wrong loss without any error when ``T == C``).

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (one training step).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.run_isolated`, :func:`~torch_pitfalls.cuda_section`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A small classifier for ten classes of synthetic points, trained twice with the same seed, the
# same data and the same initial weights.
# The only difference: the second run puts a softmax between the network and the loss.
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import (
    PitfallWarning,
    cuda_section,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    run_isolated,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

num_classes, num_features = 10, 8
centers = 1.5 * torch.randn(num_classes, num_features)
labels = torch.randint(0, num_classes, (256,))
inputs = (centers[labels] + torch.randn(256, num_features)).to(device)
labels = labels.to(device)


def make_classifier():
    seed_everything(1)  # the same initial weights for both runs
    return nn.Sequential(nn.Linear(num_features, 32), nn.ReLU(), nn.Linear(32, num_classes))


def train(softmax_first, steps=100):
    model = make_classifier().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        logits = model(inputs)
        loss = criterion(logits.softmax(dim=1) if softmax_first else logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        accuracy = (model(inputs).argmax(dim=1) == labels).float().mean().item()
    return losses, accuracy


losses_logits, accuracy_logits = train(softmax_first=False)
losses_softmax, accuracy_softmax = train(softmax_first=True)
print(f"final loss:     logits {losses_logits[-1]:.4f}, softmax first {losses_softmax[-1]:.4f}")
print(f"train accuracy: logits {accuracy_logits:.3f}, softmax first {accuracy_softmax:.3f}")
assert losses_softmax[-1] > 5 * losses_logits[-1]
assert accuracy_softmax < accuracy_logits

# %%
# The two training-loss curves, on one figure (the dashed line is explained below):

floor = math.log(math.e + num_classes - 1) - 1

fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
ax.plot(losses_logits, label="CrossEntropyLoss(logits)")
ax.plot(losses_softmax, label="CrossEntropyLoss(softmax(logits))")
ax.axhline(floor, color="gray", linestyle="--", label="floor with probabilities as input")
ax.set_title(f"Same classifier, same seed, {num_classes} classes")
ax.set_xlabel("training step")
ax.set_ylabel("training loss")
_ = ax.legend()

# %%
# With the softmax first, the loss flattens out high above the other curve, and the accuracy
# after the same number of steps is lower.
#
# Why
# ---
#
# **Cross-entropy loss is** ``log_softmax`` **followed by the negative log-likelihood loss.**
# :class:`~torch.nn.CrossEntropyLoss` computes :func:`~torch.log_softmax` of its input and then
# picks ``−log p[target]`` with :class:`~torch.nn.NLLLoss`; both agree to rounding:

logits = torch.randn(4, num_classes, device=device)
target = torch.tensor([0, 3, 9, 3], device=device)
ce = nn.CrossEntropyLoss()(logits, target)
nll = nn.NLLLoss()(torch.log_softmax(logits, dim=1), target)
by_hand = -torch.log_softmax(logits, dim=1)[torch.arange(4), target].mean()
print(f"CrossEntropyLoss: {ce:.6f}  NLLLoss(log_softmax): {nll:.6f}  by hand: {by_hand:.6f}")
torch.testing.assert_close(ce, nll)
torch.testing.assert_close(ce, by_hand)

# %%
# Given probabilities, it takes them for logits and applies a second softmax.
# Probabilities lie between 0 and 1, so these "logits" differ by at most 1, and the second
# softmax can never become confident.
# The best case is a perfect one-hot prediction, ``1`` for the right class and ``0`` for the
# ``C − 1`` others: the loss is then ``−log(e / (e + C − 1))``, not 0.
# That is the dashed floor above; a perfect prediction reaches it exactly, and no training step
# went below it:

perfect = F.one_hot(target, num_classes).float()
loss_perfect = nn.CrossEntropyLoss()(perfect, target)
print(f"floor for C = {num_classes}: {floor:.4f}; loss of a perfect prediction: {loss_perfect:.4f}")
print(f"lowest training loss with softmax first: {min(losses_softmax):.4f}")
torch.testing.assert_close(loss_perfect.item(), floor)
assert min(losses_softmax) >= floor

# %%
# The extra softmax also shrinks the gradient.
# On the way back, the gradient with respect to the probabilities ``p`` passes through the
# softmax's Jacobian ``diag(p) − p pᵀ`` (one ``C × C`` matrix per row), which multiplies it by a
# factor of at most the row's largest probability ``max p``: the matrix's largest singular value
# is never above ``max p``.
# For the same logits, the gradient that reaches the probabilities is about as large as the one
# that reaches the logits without the extra softmax; the Jacobian then makes it several times
# smaller:

logits = torch.randn(4, num_classes).to(device).requires_grad_()  # same values on every device
nn.CrossEntropyLoss()(logits, target).backward()
grad_norm_logits = logits.grad.norm().item()
logits.grad = None
probs = logits.softmax(dim=1)
probs.retain_grad()
nn.CrossEntropyLoss()(probs, target).backward()
grad_at_logits = logits.grad
grad_norm_probs = probs.grad.norm().item()
grad_norm_softmax = grad_at_logits.norm().item()
print(f"gradient norm reaching the logits, no extra softmax: {grad_norm_logits:.4f}")
print(f"with the extra softmax: at the probabilities {grad_norm_probs:.4f}, ", end="")
shrink = grad_norm_logits / grad_norm_softmax
print(f"at the logits {grad_norm_softmax:.4f} ({shrink:.1f}× smaller)")
assert grad_norm_logits / 2 < grad_norm_probs < 2 * grad_norm_logits
assert grad_norm_softmax < grad_norm_logits / 3

# %%
# Row by row, the gradient shrinks by a factor of at most the Jacobian's largest singular value,
# itself at most ``max p``; and the Jacobian written out by hand is the one that autograd applied:

p = probs.detach()
jacobian = torch.diag_embed(p) - p.unsqueeze(2) * p.unsqueeze(1)
largest_singular_value = torch.linalg.matrix_norm(jacobian, ord=2)
largest_probability = p.max(dim=1).values
shrink_factor = grad_at_logits.norm(dim=1) / probs.grad.norm(dim=1)
print("row   max p   largest singular value   |grad at logits| / |grad at p|")
for row in range(4):
    print(
        f"{row:>3}   {largest_probability[row]:.3f}   {largest_singular_value[row]:>22.3f}"
        f"   {shrink_factor[row]:>30.3f}"
    )
torch.testing.assert_close(grad_at_logits, (jacobian @ probs.grad.unsqueeze(2)).squeeze(2))
assert (shrink_factor <= largest_singular_value * (1 + 1e-4)).all()
assert (largest_singular_value <= largest_probability * (1 + 1e-4)).all()

# %%
# The fix
# -------
#
# **Give** :class:`~torch.nn.CrossEntropyLoss` **the logits, and apply softmax only where you
# need probabilities**, outside the loss.
# The softmax does not change which class is largest, so predictions can use the logits directly.
# A model that must end in a normalisation can end in :class:`~torch.nn.LogSoftmax` and use
# :class:`~torch.nn.NLLLoss`: the same loss.

logits = torch.randn(4, num_classes, device=device)
probabilities = logits.softmax(dim=1)  # for reporting only, never for the loss
assert torch.equal(logits.argmax(dim=1), probabilities.argmax(dim=1))
loss_ce = nn.CrossEntropyLoss()(logits, target)
loss_log_softmax = nn.NLLLoss()(nn.LogSoftmax(dim=1)(logits), target)
print(f"CrossEntropyLoss: {loss_ce:.6f}  LogSoftmax + NLLLoss: {loss_log_softmax:.6f}")
torch.testing.assert_close(loss_ce, loss_log_softmax)

# %%
# Targets: dtype and range
# ------------------------
#
# Class-index targets must be ``int64`` (``Long``, the default of :func:`torch.tensor` for
# integers) or ``uint8`` (``Byte``).
# Every other dtype is refused, float class indices and ``int32`` labels alike: on the CPU with a
# ``RuntimeError`` that names the two accepted dtypes, on CUDA with a ``NotImplementedError`` (the
# kernel has no version for that dtype).
# **A target of floats with the input's shape is something else: a probability target** (see the
# next section).

for dtype, name in ((torch.float32, "Float"), (torch.int32, "Int")):
    if device.type == "cuda":
        refusal = (NotImplementedError, f"not implemented for '{name}'")
    elif torch.__version__ >= "2.12":
        refusal = (RuntimeError, f"expected target dtype to be Long or Byte, but got {name}")
    else:  # PyTorch 2.11 and older, see "Changed in PyTorch 2.12" below
        refusal = (RuntimeError, f"expected scalar type Long but found {name}")
    with expect_raises(*refusal):
        nn.CrossEntropyLoss()(logits, target.to(dtype))
loss_long = nn.CrossEntropyLoss()(logits, target)
loss_byte = nn.CrossEntropyLoss()(logits, target.to(torch.uint8))
print(f"int64 target: {loss_long:.6f}  uint8 target: {loss_byte:.6f}")
torch.testing.assert_close(loss_byte, loss_long)

# %%
# Each class index must lie in ``[0, C)``.
# On the CPU an index out of range raises at once:

with expect_raises(IndexError, "out of bounds"):
    nn.CrossEntropyLoss()(logits.cpu(), torch.tensor([0, 3, num_classes, 3]))

# %%
# On CUDA the same mistake is a device-side assert, which leaves the process's CUDA context
# unusable (see :ref:`index-select`), so it runs in a child process here, with
# ``CUDA_LAUNCH_BLOCKING=1``; the page's own process then still computes on CUDA.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

source = """
import torch
logits = torch.zeros(4, 10, device="cuda")
target = torch.tensor([0, 3, 10, 3], device="cuda")
loss = torch.nn.CrossEntropyLoss()(logits, target)
print(loss.item())
"""
with cuda_section(device, "the out-of-range target on CUDA (a device-side assert)") as live:
    if live:
        child = run_isolated(source, device="cuda", env={"CUDA_LAUNCH_BLOCKING": "1"})
        print("child exit status:", child.returncode)
        print("child's error:", child.last_error_line())
        assert child.returncode != 0
        assert "device-side assert" in child.stderr
        still_works = torch.ones(3, device=device).sum().item()
        print("this process still computes on CUDA:", still_works)
        assert still_works == 3.0

# %%
# Sequences: the classes must be dimension 1
# ------------------------------------------
#
# A language model or a token tagger scores every position of a sequence: its logits have the
# shape ``(N, T, C)``, for ``N`` sequences of ``T`` tokens and ``C`` classes, and its targets the
# shape ``(N, T)``.
# :class:`~torch.nn.CrossEntropyLoss` reads the classes from **dimension 1** of its input, whatever
# the input's rank: it expects ``(N, C, d1, d2, …)`` with a target ``(N, d1, d2, …)``, the layout
# of image segmentation.
# Given ``(N, T, C)``, it takes the ``T`` positions for the classes and the ``C`` classes for a
# spatial dimension, so it expects a target of shape ``(N, C)`` and refuses the ``(N, T)`` one:

seq_batch, seq_len = 2, 7
seq_logits = torch.randn(seq_batch, seq_len, num_classes, device=device)
seq_target = torch.randint(0, num_classes, (seq_batch, seq_len), device=device)
print("logits:", tuple(seq_logits.shape), " target:", tuple(seq_target.shape))
with expect_raises(RuntimeError, r"Expected target size \[2, 10\], got \[2, 7\]"):
    nn.CrossEntropyLoss()(seq_logits, seq_target)

# %%
# **When the sequence is exactly as long as the number of classes (T == C), nothing fails.**
# The target's shape ``(N, T)`` is then also ``(N, C)``, and every class index is a valid
# position index.
# The loss takes its softmax over the positions instead of the classes, and picks entries that
# mean nothing.
# Logits that predict every token perfectly (10 for the right class, 0 elsewhere) show it: their
# loss is near 0 in the right layout and large in the wrong one, which is ``−log_softmax`` over
# dimension 1, the positions, written by hand:

square_target = torch.randint(0, num_classes, (seq_batch, num_classes), device=device)  # T == C
perfect_logits = 10 * F.one_hot(square_target, num_classes).float()  # (N, T, C)
loss_wrong_layout = nn.CrossEntropyLoss()(perfect_logits, square_target)
loss_right_layout = nn.CrossEntropyLoss()(perfect_logits.transpose(1, 2), square_target)
over_positions = torch.log_softmax(perfect_logits, dim=1)  # softmax over the T positions
by_hand_positions = -over_positions.gather(1, square_target.unsqueeze(1)).mean()
print(f"perfect predictions, T == C: (N, T, C) as given {loss_wrong_layout:.4f}, ", end="")
print(f"transposed to (N, C, T) {loss_right_layout:.4f}")
print(f"softmax over the positions, by hand: {by_hand_positions:.4f}")
torch.testing.assert_close(loss_wrong_layout, by_hand_positions)
assert loss_right_layout < 1e-3 and loss_wrong_layout > 1

# %%
# No error, no warning: a model trained with this loss learns the wrong objective.
#
# **The fix: move the classes to dimension 1 with** ``logits.transpose(1, 2)`` (shape
# ``(N, C, T)``), **or flatten the positions into the batch:** ``logits.reshape(-1, C)`` with
# ``target.reshape(-1)``.
# Both give the same loss (:meth:`~torch.Tensor.transpose`, :meth:`~torch.Tensor.reshape`).
# Flattening the logits alone leaves ``N·T`` rows against ``N`` rows of targets, and the loss
# refuses that too:

loss_transposed = nn.CrossEntropyLoss()(seq_logits.transpose(1, 2), seq_target)
loss_flattened = nn.CrossEntropyLoss()(seq_logits.reshape(-1, num_classes), seq_target.reshape(-1))
print(f"transpose(1, 2): {loss_transposed:.6f}  reshape both: {loss_flattened:.6f}")
torch.testing.assert_close(loss_transposed, loss_flattened)
with expect_raises(ValueError, r"Expected input batch_size \(14\) to match target batch_size"):
    nn.CrossEntropyLoss()(seq_logits.reshape(-1, num_classes), seq_target)

# %%
# Both halves have been reported.
# In `DGAI issue 7 <https://github.com/markhliu/DGAI/issues/7>`_, a reader of a book's text
# generation notebook removed its ``transpose(1, 2)`` before the loss, got "Expected target size"
# with the vocabulary size where the sequence length should be, and worked out from the
# documented shapes why the transpose is needed.
# In `PyTorch issue 27626 <https://github.com/pytorch/pytorch/issues/27626>`_, a user who passed
# tagger outputs of shape (batch, sequence length, tags) as they were asked why the
# ``log_softmax`` inside the loss gave vectors that did not sum to one over the tags.
# Its example has twelve target positions and rows of twelve scores: with ``T == C`` nothing
# fails, and the softmax runs over the positions.

# %%
# Changed in PyTorch 1.10
# -----------------------
#
# Since `PyTorch 1.10 <https://github.com/pytorch/pytorch/releases/tag/v1.10.0>`_,
# :class:`~torch.nn.CrossEntropyLoss` also accepts class probabilities as the target
# (`#61044 <https://github.com/pytorch/pytorch/pull/61044>`_) and has a ``label_smoothing``
# argument (`#63122 <https://github.com/pytorch/pytorch/pull/63122>`_).
# **No hand-written soft-target loss is needed any more.**
# A one-hot probability target gives the same loss as the class indices:

one_hot = F.one_hot(target, num_classes).float()
loss_indices = nn.CrossEntropyLoss()(logits, target)
loss_one_hot = nn.CrossEntropyLoss()(logits, one_hot)
print(f"class indices: {loss_indices:.6f}  one-hot probabilities: {loss_one_hot:.6f}")
torch.testing.assert_close(loss_indices, loss_one_hot)

# %%
# Label smoothing ``ε`` is the same as the probability target ``(1 − ε)·one_hot + ε / C``:

eps = 0.1
smoothed = (1 - eps) * one_hot + eps / num_classes
loss_smoothing = nn.CrossEntropyLoss(label_smoothing=eps)(logits, target)
loss_smoothed_target = nn.CrossEntropyLoss()(logits, smoothed)
print(f"label_smoothing={eps}: {loss_smoothing:.6f}  smoothed target: {loss_smoothed_target:.6f}")
torch.testing.assert_close(loss_smoothing, loss_smoothed_target)

# %%
# Changed in PyTorch 2.12: the message
# ------------------------------------
#
# Before PyTorch 2.12 the CPU refused a float or ``int32`` class-index target with
# ``expected scalar type Long but found Float`` (or ``... found Int``), which does not say that
# ``uint8`` is accepted too.
# Since `PyTorch 2.12 <https://github.com/pytorch/pytorch/releases/tag/v2.12.0>`_ the message is
# ``expected target dtype to be Long or Byte, but got Float``
# (`PR 175151 <https://github.com/pytorch/pytorch/pull/175151>`_).
# The refusal itself, and the dtypes accepted, are the same.

# %%
# Detectors
# ---------
#
# Three rules detect this pitfall in your own code (see :doc:`/detectors`): the runtime guards
# ``TP001`` (probabilities fed to cross-entropy) and ``TP002`` (a non-negative input to the NLL
# loss), and ``TP101`` of the static checker (a softmax output passed to either loss).
# Under :mod:`torch_pitfalls.guards`, the wrong code of this page warns, once per line, and its
# fix is silent:

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP001 "):
        train(softmax_first=True, steps=3)
    with expect_warns(PitfallWarning, "^TP002 "):
        nn.NLLLoss()(logits.softmax(dim=1), target)
with guards(language="en") as fixed:
    train(softmax_first=False, steps=3)
    nn.NLLLoss()(logits.log_softmax(dim=1), target)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP001", "TP002"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# :class:`~torch.nn.CrossEntropyLoss` **applies the softmax itself: feed it logits, never
# probabilities.**
# Targets are class indices in ``[0, C)`` of dtype ``int64`` (or ``uint8``), or class probabilities
# with the input's shape; use ``label_smoothing=`` rather than a hand-written loss.
#
# See also: :ref:`bce-with-logits` for binary classifiers (the same rule for the sigmoid, and why
# one output unit under :class:`~torch.nn.CrossEntropyLoss` learns nothing) and
# :ref:`loss-weights-reduction` for class weights.
