"""
.. _optimizer-step-between-backwards:

An optimizer step between two backward passes
=============================================

A model with a shared trunk and two heads produces two losses from one forward pass.
Backward the first loss, take an optimizer step, backward the second: the second backward fails
with *one of the variables needed for gradient computation has been modified by an inplace
operation*.
The step changed weights that the second loss's graph had saved, and since PyTorch 1.5 autograd
notices.

.. admonition:: What you will learn

   * why :meth:`~torch.optim.Optimizer.step` counts as an in-place modification for autograd;
   * which weights trigger the error, and why older releases gave wrong gradients silently;
   * three fixes: sum the losses, step after all backward calls, or recompute the forward.

.. admonition:: Prerequisites

   :ref:`retain-graph` (why a second backward needs ``retain_graph=True``, and the GAN version of
   this error) and :ref:`inplace-saved-tensor` (the version counter on saved tensors).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A multi-task model: a trunk of two linear layers shared by two heads, each head with its own
# regression target, and one optimizer for all parameters.
# The first loss is backwarded with ``retain_graph=True``, because the second loss goes back through
# the same trunk (:ref:`retain-graph`), and the step is taken as soon as the first gradient is in.
# **The second backward fails: the step changed something its graph needs.**
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

trunk = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6), nn.ReLU()).to(device)
head_a = nn.Linear(6, 1).to(device)
head_b = nn.Linear(6, 1).to(device)
params = [*trunk.parameters(), *head_a.parameters(), *head_b.parameters()]
opt = torch.optim.SGD(params, lr=0.1)
x = torch.randn(5, 4, device=device)
target_a = torch.randn(5, 1, device=device)
target_b = torch.randn(5, 1, device=device)
mse = nn.functional.mse_loss
initial_state = [p.detach().clone() for p in params]

features = trunk(x)
loss_a = mse(head_a(features), target_a)
loss_b = mse(head_b(features), target_b)
opt.zero_grad()
loss_a.backward(retain_graph=True)
opt.step()
with expect_raises(RuntimeError, r"FloatTensor \[8, 6\]\].*is at version \d+; expected version"):
    loss_b.backward()

# %%
# The shape ``[8, 6]`` is that of the trunk's second weight, transposed: a linear layer computes
# ``x @ weight.T`` and saves that transposed view of its weight.

print("trunk[2].weight.T has shape", tuple(trunk[2].weight.T.shape))
assert tuple(trunk[2].weight.T.shape) == (8, 6)

# %%
# Why
# ---
#
# To send the gradient of ``loss_b`` back to the first layer, autograd needs the gradient with
# respect to the second layer's *input*, which is computed from the second layer's weight.
# So the forward pass saved that weight, with its version.
# :meth:`~torch.optim.Optimizer.step` updates each parameter in place, which increments its
# version counter.
# **A step changes every parameter that has a gradient, so every graph that saved one of them
# is stale.**
# We put the parameters back to their initial values, repeat the forward and the first backward,
# and read the versions around the step.


def reset():
    """Put every parameter back to its initial value and clear the gradients."""
    with torch.no_grad():
        for p, p0 in zip(params, initial_state, strict=True):
            p.copy_(p0)
    opt.zero_grad()


reset()
features = trunk(x)
loss_a = mse(head_a(features), target_a)
loss_b = mse(head_b(features), target_b)
loss_a.backward(retain_graph=True)
trunk_version_before = trunk[2].weight._version
head_b_version_before = head_b.weight._version
opt.step()
trunk_bumped = trunk[2].weight._version - trunk_version_before
head_b_bumped = head_b.weight._version - head_b_version_before
print("versions added by the step: trunk[2].weight", trunk_bumped, "| head_b.weight", head_b_bumped)
assert trunk_bumped > 0 and head_b_bumped == 0

# %%
# ``head_b`` was left alone: it had no gradient yet, and an optimizer skips parameters whose
# ``.grad`` is ``None``.
# The trunk's weights had gradients from ``loss_a``, so they moved.
# Without the error, ``loss_b``'s gradient would combine activations computed with the old weights
# with the new weights: the gradient of no function at all.
#
# Changed in PyTorch 1.5
# ----------------------
#
# Older releases ran this loop without complaint and used that mixed gradient.
# Their optimizers updated ``p.data``, and an edit through ``.data`` does not increment the version
# counter (:ref:`data-vs-detach`).
# Pull requests `#33640 <https://github.com/pytorch/pytorch/pull/33640>`_ ("Remove use of
# ``.data`` from optimizers") and `#34211 <https://github.com/pytorch/pytorch/pull/34211>`_ ("End
# of the .data removal in torch/optim") made the updates visible, first released in
# `PyTorch 1.5 <https://github.com/pytorch/pytorch/releases/tag/v1.5.0>`_, whose release notes
# list the change as "torch.optim optimizers changed to fix in-place checks for the changes made
# by the optimizer".
# A step written the old way, through ``.data`` as the SGD of PyTorch 1.4 did, still shows what
# happened then: the version does not move, and the second backward runs without a word.

reset()
features = trunk(x)
loss_a = mse(head_a(features), target_a)
loss_b = mse(head_b(features), target_b)
loss_a.backward(retain_graph=True)
version_before = trunk[2].weight._version
for p in params:  # the update of PyTorch 1.4's SGD, through .data on purpose
    if p.grad is not None:
        p.data.add_(p.grad, alpha=-0.1)  # noqa
data_step_bumped = trunk[2].weight._version - version_before
loss_b.backward()  # no error: autograd cannot see the change
print("versions added by a step through .data:", data_step_bumped, "| second backward: no error")
assert data_step_bumped == 0

# %%
# **Code that "worked" before 1.5 and fails today had wrong gradients all along.**
# :ref:`retain-graph` shows the same change breaking the classic GAN recipe.
#
# The fix
# -------
#
# **Sum the losses and backward once, then step.**
# One backward goes through the trunk once, no ``retain_graph`` is needed, and each parameter gets
# the gradient of the total loss.
# (Weight the terms, ``loss_a + λ · loss_b``, if one task should count more.)

reset()
features = trunk(x)
loss_a = mse(head_a(features), target_a)
loss_b = mse(head_b(features), target_b)
(loss_a + loss_b).backward()
grads_summed = [p.grad.clone() for p in params]
opt.step()
after_summed = [p.detach().clone() for p in params]
print("loss_a + loss_b:", (loss_a + loss_b).item())

# %%
# If the two backward calls must stay separate (a framework that calls them for you, different
# scaling per loss), **take the step only after the last backward**.
# Backward adds into ``.grad``, so the result is the same gradient and the same step, within
# float rounding, since the sums are taken in another order.

reset()
features = trunk(x)
loss_a = mse(head_a(features), target_a)
loss_b = mse(head_b(features), target_b)
loss_a.backward(retain_graph=True)
loss_b.backward()
grads_two_passes = [p.grad.clone() for p in params]
opt.step()
after_two_passes = [p.detach().clone() for p in params]
largest_difference = max(
    (a - b).abs().max().item() for a, b in zip(grads_summed, grads_two_passes, strict=True)
)
print(f"largest gradient difference, summed vs two backward passes: {largest_difference:.2e}")
for a, b in zip(grads_summed, grads_two_passes, strict=True):
    torch.testing.assert_close(a, b)
for a, b in zip(after_summed, after_two_passes, strict=True):
    torch.testing.assert_close(a, b)

# %%
# If you do want two updates, one per task (two optimizers, alternating tasks),
# **recompute the forward pass after each step**: each loss then gets a fresh graph that saved the
# current weights.
# Each backward frees its own graph, so ``retain_graph`` is not needed either.
# The trunk moves twice, the second time with the gradient of ``loss_b`` at the already updated
# weights.

reset()
trunk_start = trunk[2].weight.detach().clone()
loss_a = mse(head_a(trunk(x)), target_a)
opt.zero_grad()
loss_a.backward()
opt.step()
trunk_after_a = trunk[2].weight.detach().clone()
loss_b = mse(head_b(trunk(x)), target_b)  # a new forward, with the updated trunk
opt.zero_grad()
loss_b.backward()
opt.step()
trunk_after_b = trunk[2].weight.detach().clone()
moved_twice = not torch.equal(trunk_start, trunk_after_a) and not torch.equal(
    trunk_after_a, trunk_after_b
)
print("trunk weight moved at each of the two steps:", moved_twice)
assert moved_twice

# %%
# This costs a second forward through the trunk, and it is a different algorithm from the first
# two fixes: two small steps instead of one step on the total loss.
#
# Takeaway
# --------
#
# **Never call** ``optimizer.step()`` **while a graph built with the old weights still has a
# backward to run.**
# Sum the losses and backward once, or call ``step()`` after the last backward, or run a new
# forward pass after each step; ``retain_graph=True`` only postpones the error.
