"""
.. _loss-targets-and-kl:

Targets that require grad; KL divergence
========================================

Loss functions differentiate with respect to their target too.
When the target is produced by another network, as a teacher's output in knowledge distillation,
backward runs through that network and fills its ``.grad``, unless the target was detached.
:class:`~torch.nn.KLDivLoss`, the usual distillation loss, has pitfalls of its own: it wants
log-probabilities as input, and its default reduction is not the KL divergence.

.. admonition:: What you will learn

   * that :class:`~torch.nn.MSELoss` and :class:`~torch.nn.KLDivLoss` compute a gradient for the
     target, and which loss still refuses one;
   * why a teacher's output must be detached, or computed under :class:`torch.no_grad`;
   * what :class:`~torch.nn.KLDivLoss` expects as input and target, and which reduction gives the
     mathematical KL divergence.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` and :ref:`data-vs-detach`;
   :ref:`cross-entropy-expects-logits` for log-probabilities in losses.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.saved_tensors`.
"""

# %%
# The symptom
# -----------
#
# Knowledge distillation: a student learns to match the class distribution of a trained teacher.
# The teacher's softmax output is the target of a :class:`~torch.nn.KLDivLoss`.
# Only the student is being trained, yet after backward the teacher's parameters have gradients.
import torch
from torch import nn

from torch_pitfalls import (
    expect_raises,
    expect_warns,
    get_device,
    saved_tensors,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

teacher = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 5)).to(device)
student = nn.Sequential(nn.Linear(8, 5)).to(device)
inputs = torch.randn(16, 8, device=device)
kl = nn.KLDivLoss(reduction="batchmean")

with saved_tensors() as saved_attached:
    target = teacher(inputs).softmax(dim=1)
    loss = kl(student(inputs).log_softmax(dim=1), target)
loss.backward()
print("target requires grad:", target.requires_grad)
for name, p in teacher.named_parameters():
    print(f"teacher.{name}.grad is set: {p.grad is not None}")
teacher_grads = [p.grad for p in teacher.parameters()]
assert target.requires_grad
assert all(g is not None and g.abs().sum() > 0 for g in teacher_grads)
student_grad_attached = student[0].weight.grad.clone()

# %%
# Nothing warns.
# An optimizer that holds the teacher's parameters (one optimizer over a wrapper module, or
# self-distillation from the same model) would now move the teacher towards the student.
# Even without that, autograd recorded the teacher's forward and kept its activations for a
# backward pass nobody wanted.
#
# Why
# ---
#
# **A loss is just another differentiable function of both its arguments.**
# If the target requires grad, autograd records the loss's dependence on it and backward computes
# its gradient like any other.
# For :class:`~torch.nn.MSELoss` the gradient with respect to the target is exactly the negative of
# the gradient with respect to the input:

prediction = torch.randn(4, 3, device=device, requires_grad=True)
goal = torch.randn(4, 3, device=device, requires_grad=True)
nn.MSELoss()(prediction, goal).backward()
print("prediction.grad:", prediction.grad)
print("goal.grad:      ", goal.grad)
assert torch.equal(goal.grad, -prediction.grad)

# %%
# :class:`~torch.nn.KLDivLoss` computes a target gradient too:

log_probs = torch.randn(4, 3, device=device).log_softmax(dim=1)
soft_target = torch.randn(4, 3, device=device).softmax(dim=1).requires_grad_()
nn.KLDivLoss(reduction="batchmean")(log_probs, soft_target).backward()
print("soft_target.grad:", soft_target.grad)
assert soft_target.grad is not None and soft_target.grad.abs().sum() > 0

# %%
# Changed in PyTorch 0.4.1
# ------------------------
#
# Up to PyTorch 0.4.0, the loss modules refused a target that requires grad: they asserted
# ``not target.requires_grad`` ("nn criterions don't compute the gradient w.r.t. targets"), and
# the classic advice was to mark targets as not requiring gradients.
# `Pull request #8460 <https://github.com/pytorch/pytorch/pull/8460>`_ removed that assertion,
# first released in `PyTorch 0.4.1 <https://github.com/pytorch/pytorch/releases/tag/v0.4.1>`_.
# **Since then, losses differentiate with respect to the target wherever a derivative is
# implemented.**
# A few still have none and refuse; ``nn.SoftMarginLoss`` is one of them:

with expect_raises(RuntimeError, "not differentiable with respect to argument 'target'"):
    nn.SoftMarginLoss()(prediction, torch.rand(4, 3, device=device, requires_grad=True))

# %%
# The fix
# -------
#
# **A target from another network is a constant: compute it under** :class:`torch.no_grad`
# **or call** :meth:`~torch.Tensor.detach` **on it.**
# The student's gradient is the same as before; only the teacher is left alone, and nothing
# of the teacher's forward is kept for backward.

teacher.zero_grad()
student.zero_grad()
with saved_tensors() as saved_detached:
    with torch.no_grad():
        target = teacher(inputs).softmax(dim=1)
    loss = kl(student(inputs).log_softmax(dim=1), target)
loss.backward()
print("target requires grad:", target.requires_grad)
print("teacher grads:", [p.grad for p in teacher.parameters()])
print(f"bytes saved for backward: {saved_attached.nbytes} with the teacher attached, ", end="")
print(f"{saved_detached.nbytes} with it detached")
assert not target.requires_grad
assert all(p.grad is None for p in teacher.parameters())
torch.testing.assert_close(student[0].weight.grad, student_grad_attached)
assert saved_detached.nbytes < saved_attached.nbytes

# %%
# KL divergence: log-probabilities in, probabilities as target
# ------------------------------------------------------------
#
# ``KL(p ‖ q) = Σ p · (log p − log q)``.
# :class:`~torch.nn.KLDivLoss` takes ``log q`` as its input (log-probabilities, e.g. from
# :func:`~torch.log_softmax`) and ``p`` as its target (probabilities).
# **Only** ``reduction="batchmean"`` **gives this KL divergence**, averaged over the batch:

log_q = torch.randn(4, 5, device=device).log_softmax(dim=1)
p = torch.randn(4, 5, device=device).softmax(dim=1)
kl_by_hand = (p * (p.log() - log_q)).sum(dim=1).mean()
kl_batchmean = nn.KLDivLoss(reduction="batchmean")(log_q, p)
print(f"by hand: {kl_by_hand:.6f}  batchmean: {kl_batchmean:.6f}")
torch.testing.assert_close(kl_batchmean, kl_by_hand)

# %%
# The default, ``reduction="mean"``, averages over every element instead, which divides by the
# number of classes as well, and PyTorch warns about it:

with expect_warns(UserWarning, "batchmean"):
    kl_mean = nn.KLDivLoss()(log_q, p)
print(f"mean: {kl_mean:.6f}  batchmean / number of classes: {kl_batchmean / 5:.6f}")
torch.testing.assert_close(kl_mean, kl_batchmean / 5)

# %%
# If the target is available as log-probabilities too, say so with ``log_target=True``:

kl_log_target = nn.KLDivLoss(reduction="batchmean", log_target=True)(log_q, p.log())
print(f"log_target=True: {kl_log_target:.6f}")
torch.testing.assert_close(kl_log_target, kl_batchmean)

# %%
# Passing probabilities as the input is the classic mistake.
# The loss computes ``Σ p · (log p − q)``, which is ``−H(p) − Σ p · q``: never positive, so the
# "divergence" comes out negative, which a real KL divergence never is:

q = log_q.exp()
kl_wrong = nn.KLDivLoss(reduction="batchmean")(q, p)
print(f"probabilities as input: {kl_wrong:.6f}")
assert kl_wrong < 0
torch.testing.assert_close(kl_wrong, (p * p.log()).sum(dim=1).mean() - (p * q).sum(dim=1).mean())

# %%
# Takeaway
# --------
#
# **Losses differentiate with respect to their target: detach a target that comes from another
# network, or compute it under** ``torch.no_grad()``.
# For :class:`~torch.nn.KLDivLoss`, pass log-probabilities as input, probabilities as target (or
# ``log_target=True``), and ``reduction="batchmean"``; a negative value means probabilities went
# in as input.
#
# See also :ref:`mse-broadcasting`: :class:`~torch.nn.MSELoss` also needs a target of the input's
# shape, or it compares every prediction with every target.
