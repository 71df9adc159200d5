"""
.. _amp-unscale-before-clip:

``GradScaler`` and gradient clipping
====================================

Mixed-precision training multiplies the loss by a large scale factor before ``backward()``, so
every gradient arrives multiplied by that factor too.
:func:`~torch.nn.utils.clip_grad_norm_` called right after ``backward()`` measures those scaled
gradients: it reports a norm tens of thousands of times too large and clips gradients that did not
need it, and the optimizer then moves the weights by a tiny fraction of the intended step.
One call, ``scaler.unscale_(optimizer)``, before clipping fixes it.

.. admonition:: What you will learn

   * what ``torch.amp.GradScaler`` does to the loss and the gradients, and why float16
     training needs it;
   * why clipping the scaled gradients clips the wrong norm, and what the optimizer then applies;
   * the order of the calls with ``unscale_``, and what the scaler does with a step whose gradients
     overflowed.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (one training step) and gradient clipping with
   :func:`~torch.nn.utils.clip_grad_norm_`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small regression model, one batch, and the usual mixed-precision step with a
# ``torch.amp.GradScaler`` for the page's device (the CPU has one too).
# The loss is multiplied by the scaler's scale before ``backward()``, and the gradients are
# clipped to a norm of 1 before the step:
import copy
import math

import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
x = torch.randn(64, 16, device=device)
y = 3 * torch.randn(64, 1, device=device)
max_norm = 1.0


def training_step(net, *, unscale_first):
    """One scaled step with SGD(lr=1): returns the norm clipping saw and the update applied."""
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler(device.type)
    before = [p.detach().clone() for p in net.parameters()]
    loss = nn.functional.mse_loss(net(x), y)
    scaler.scale(loss).backward()
    if unscale_first:
        scaler.unscale_(optimizer)
    seen = nn.utils.clip_grad_norm_(net.parameters(), max_norm).item()
    scaler.step(optimizer)
    scaler.update()
    update = [b - p.detach() for b, p in zip(before, net.parameters(), strict=True)]
    return scaler, seen, update


def total_norm(tensors):
    return torch.linalg.vector_norm(torch.stack([t.norm() for t in tensors])).item()


scaler, seen_scaled, update_scaled = training_step(copy.deepcopy(model), unscale_first=False)
print(f"scale: {scaler.get_scale():.0f}")
print(f"norm seen by clip_grad_norm_: {seen_scaled:.1f}")
print(f"norm of the update the optimizer applied: {total_norm(update_scaled):.3g}")

# %%
# The reference is the same step without any scaler: the true gradient, and the update that
# clipping to a norm of 1 should give.

reference = copy.deepcopy(model)
nn.functional.mse_loss(reference(x), y).backward()
true_grads = [p.grad.clone() for p in reference.parameters()]
true_norm = total_norm(true_grads)
clip_factor = min(1.0, max_norm / (true_norm + 1e-6))
intended = [g * clip_factor for g in true_grads]
print(f"true gradient norm: {true_norm:.3f} | intended update norm: {total_norm(intended):.3f}")
assert true_norm > max_norm
torch.testing.assert_close(seen_scaled, true_norm * scaler.get_scale(), rtol=1e-4, atol=0)
ratio = total_norm(intended) / total_norm(update_scaled)
print(f"the applied update is {ratio:.0f}× smaller than intended")
assert math.isclose(ratio, scaler.get_scale(), rel_tol=1e-3)

# %%
# **clip_grad_norm_ saw the true norm multiplied by the scale, so it shrank the gradients to a
# norm of 1 in scaled units: once the scaler divides them by the scale, the update is smaller than
# intended by the scale factor itself.**
# The model hardly trains, and nothing fails: the loss just stops improving.
# Clipping is meant to act only on the rare steps whose gradient is too large; here it acts on
# every step, whatever the gradient.
#
# Why
# ---
#
# float16 has a narrow range, and many gradients are smaller than the smallest positive number it
# can hold.
# They underflow to zero in float16, while the same values multiplied by 65,536 survive:

smallest_float16 = torch.finfo(torch.float16).smallest_normal * torch.finfo(torch.float16).eps
print(f"smallest positive float16: {smallest_float16:.3g}")
assert torch.tensor(smallest_float16).half().item() > 0
assert torch.tensor(smallest_float16 / 2).half().item() == 0
small_gradient = torch.tensor(1e-8, device=device)
print("1e-8 in float16:", small_gradient.half().item())
print("1e-8 × 65536 in float16:", (small_gradient * 65536).half().item())
assert small_gradient.half().item() == 0.0
assert (small_gradient * 65536).half().item() > 0

# %%
# So ``GradScaler`` multiplies the loss by its scale (65,536 to start with), and
# by the chain rule every gradient is multiplied by the same factor.
# ``scaler.step(optimizer)`` divides the gradients by the scale before the optimizer's own step,
# unless they have been divided already.
# **Between backward() and scaler.step(), the gradients are the true ones times the scale**, and
# anything that reads them there — clipping, a gradient norm you log, a gradient penalty — reads
# the scaled values.
# The scale also changes during training: the scaler halves it after a step whose gradients
# overflowed and doubles it after a run of steps without overflow, so a threshold tuned on scaled
# gradients drifts:

print(
    f"backoff factor: {scaler.get_backoff_factor()}, growth factor: {scaler.get_growth_factor()},"
    f" growth interval: {scaler.get_growth_interval()} steps"
)
assert (scaler.get_backoff_factor(), scaler.get_growth_factor()) == (0.5, 2.0)

# %%
#
# The fix
# -------
#
# **Call scaler.unscale_(optimizer) before clipping: it divides the gradients of that optimizer's
# parameters by the scale, in place, and scaler.step() then does not divide them again.**

scaler_fixed, seen_fixed, update_fixed = training_step(copy.deepcopy(model), unscale_first=True)
print(f"norm seen by clip_grad_norm_: {seen_fixed:.3f}")
print(f"norm of the update the optimizer applied: {total_norm(update_fixed):.3f}")
torch.testing.assert_close(seen_fixed, true_norm, rtol=1e-5, atol=0)
for applied, wanted in zip(update_fixed, intended, strict=True):
    torch.testing.assert_close(applied, wanted)

# %%
# The order is: ``scaler.scale(loss).backward()``, ``scaler.unscale_(optimizer)``, clip,
# ``scaler.step(optimizer)``, ``scaler.update()``.
# ``unscale_`` may be called once per optimizer and step; a second call raises:

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler(device.type)
scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
scaler.unscale_(optimizer)
with expect_raises(RuntimeError, "unscale_\\(\\) has already been called on this optimizer"):
    scaler.unscale_(optimizer)
optimizer.zero_grad()

# %%
# With gradient accumulation (:ref:`gradient-accumulation`), the gradients of several backward
# passes add up first: call ``unscale_`` once, after the last one, right before clipping.
#
# A step whose gradients overflowed
# ---------------------------------
#
# When the scale is too large for a step, some scaled gradients overflow to ``inf``.
# Clipping does not need a guard for this case: ``unscale_`` records the overflow, ``step`` skips
# the optimizer's step, and ``update`` halves the scale.
# We write an ``inf`` into one gradient after the backward pass, as an overflow would:

overflowing = copy.deepcopy(model)
optimizer = torch.optim.SGD(overflowing.parameters(), lr=1.0)
scaler = torch.amp.GradScaler(device.type)
before = [p.detach().clone() for p in overflowing.parameters()]
scaler.scale(nn.functional.mse_loss(overflowing(x), y)).backward()
overflowing[0].weight.grad[0, 0] = float("inf")
scaler.unscale_(optimizer)
norm_inf = nn.utils.clip_grad_norm_(overflowing.parameters(), max_norm).item()
scale_before = scaler.get_scale()
scaler.step(optimizer)
scaler.update()
unchanged = all(torch.equal(b, p) for b, p in zip(before, overflowing.parameters(), strict=True))
print(f"norm seen by clip_grad_norm_: {norm_inf} | parameters unchanged: {unchanged}")
print(f"scale: {scale_before:.0f} before the skipped step, {scaler.get_scale():.0f} after it")
assert math.isinf(norm_inf) and unchanged
assert scaler.get_scale() == scale_before / 2

# %%
# float16 weights: "Attempting to unscale FP16 gradients"
# --------------------------------------------------------
#
# A common shortcut to mixed precision is to convert the whole model to float16 with
# :meth:`~torch.nn.Module.half` (or to load a checkpoint stored in float16) and to keep the
# scaler.
# The forward and backward passes run, and the first ``unscale_`` (or ``scaler.step``, which
# calls it) raises:

half_model = copy.deepcopy(model).half()
half_params = [name for name, p in half_model.named_parameters() if p.requires_grad]
optimizer = torch.optim.SGD(half_model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler(device.type)
loss = nn.functional.mse_loss(half_model(x.half()).float(), y)
scaler.scale(loss).backward()
print("gradient dtypes:", sorted({str(p.grad.dtype) for p in half_model.parameters()}))
with expect_raises(ValueError, "Attempting to unscale FP16 gradients"):
    scaler.unscale_(optimizer)
print("float16 parameters that require grad:", half_params)
assert all(p.grad.dtype == torch.float16 for p in half_model.parameters())

# %%
# One float16 module is enough: the check looks at every gradient of the optimizer's
# parameters, and it raises at the first float16 one.
# Frozen float16 parameters (``requires_grad=False``) have no gradient and never reach the check.
#
# **The scaler expects float32 parameters.**
# Unscaling divides each gradient by the scale in the gradient's own dtype: a float16 gradient
# divided back to its true size underflows to zero again, exactly as it would have without
# scaling, and the update applied to a float16 weight is rounded to the spacing of float16 near
# that weight:

scale = 65536.0
scaled_gradient = (small_gradient * scale).half()
print(f"scaled gradient in float16: {scaled_gradient.item():.3g}")
print(f"unscaled in float16: {(scaled_gradient / scale).item()}")
print(f"unscaled in float32: {(scaled_gradient.float() / scale).item():.3g}")
assert (scaled_gradient / scale).item() == 0.0 and (scaled_gradient.float() / scale).item() > 0
weight = torch.tensor(1.0, dtype=torch.float16, device=device)
print(f"1.0 - 1e-4 in float16: {(weight - 1e-4).item()}")
assert (weight - 1e-4).item() == 1.0

# %%
# **The fix: keep the parameters in float32 and let** :class:`torch.autocast` **run the forward
# pass in float16.**
# Autocast casts the weights to float16 inside each matmul or convolution; the gradients flow
# back through that cast to the float32 parameters, so they arrive in float32, and the
# scaler unscales them without losing the small ones:

amp_model = copy.deepcopy(model)
optimizer = torch.optim.SGD(amp_model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler(device.type)
losses, scales = [], []
for _ in range(5):
    optimizer.zero_grad()
    with torch.autocast(device.type, dtype=torch.float16):
        prediction = amp_model(x)
    loss = nn.functional.mse_loss(prediction.float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(amp_model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    losses.append(round(loss.item(), 3))
    scales.append(scaler.get_scale())
print(f"forward output: {prediction.dtype} | parameters: {amp_model[0].weight.dtype}")
print("gradient dtypes:", sorted({str(p.grad.dtype) for p in amp_model.parameters()}))
print(f"losses: {losses}")
print(f"scale after each step: {scales}")
assert prediction.dtype == torch.float16 and losses[-1] < losses[0]
assert all(p.dtype == p.grad.dtype == torch.float32 for p in amp_model.parameters())

# %%
# Five steps train the model; a step whose float16 backward pass overflowed is skipped and the
# scale halved, as in the section above.
# A model that must stay in a 16-bit dtype (too large for float32 weights) is usually trained in
# bfloat16, which has float32's range and needs no scaler; or its float16 base stays frozen and
# only float32 adapters are trained.
# The failing line is then the one that converts the trainable part to float16.
#
# The error is reported in many fine-tuning projects; in
# `PyTorch issue 74739 <https://github.com/pytorch/pytorch/issues/74739>`_ users ask why
# ``unscale_`` refuses float16 gradients, one of them hitting it with a whole float16 model and
# with a single float16 module in a float32 model, and a later comment traces it to float16
# weights.
# When the scaler was added, its author explained in the review of
# `PyTorch pull request 26512 <https://github.com/pytorch/pytorch/pull/26512>`_ that the
# parameters the optimizer owns are expected to stay float32.
# In `AdaFace issue 127 <https://github.com/mk-minchul/AdaFace/issues/127>`_, the cause turned out
# to be one PReLU layer the user had changed to float16.

# %%
# A real-world report: "gradients are clipped before the unscaling"
# -----------------------------------------------------------------
#
# In 2023 a reader of a popular PyTorch U-Net implementation noticed that its training script
# clipped the gradients right after the scaled backward pass, without ``unscale_``
# (`milesial/Pytorch-UNet issue #468 <https://github.com/milesial/Pytorch-UNet/issues/468>`_).
# The project merged a pull request that adds the ``unscale_`` call before clipping, as PyTorch's
# automatic mixed precision recipe prescribes
# (`milesial/Pytorch-UNet pull request #470 <https://github.com/milesial/Pytorch-UNet/pull/470>`_);
# in the issue, a reply argued that the scaler's own overflow check made clipping unnecessary.
# The same bug and the same fix appear in many training scripts: a clipping threshold that only
# "works" when set tens of thousands of times higher than usual is its sign.

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP107`` (see :doc:`/detectors`) finds this pitfall in your own code:
# ``clip_grad_norm_`` or ``clip_grad_value_`` called after ``scaler.scale(loss).backward()`` in a
# function that never calls ``unscale_``.
# It reads one function at a time and does not follow an ``if``: ``training_step`` above, which
# calls ``unscale_`` under an ``if``, is not flagged.
# The two orders as functions of their own, run once each, then checked:

import inspect

from torch_pitfalls.lint import check_source


def clip_scaled(net):
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler(device.type)
    scaler.scale(nn.functional.mse_loss(net(x), y)).backward()
    seen = nn.utils.clip_grad_norm_(net.parameters(), max_norm).item()
    scaler.step(optimizer)
    scaler.update()
    return seen


def clip_unscaled(net):
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler(device.type)
    scaler.scale(nn.functional.mse_loss(net(x), y)).backward()
    scaler.unscale_(optimizer)
    seen = nn.utils.clip_grad_norm_(net.parameters(), max_norm).item()
    scaler.step(optimizer)
    scaler.update()
    return seen


static = {}
for function in (clip_scaled, clip_unscaled):
    seen = function(copy.deepcopy(model))
    code = "import torch\nfrom torch import nn\n\n" + inspect.getsource(function)
    static[function.__name__] = check_source(code, path="train.py", language="en")
    print(f"{function.__name__}: norm seen {seen:.3f}, findings:")
    for finding in static[function.__name__]:
        print(f"  {finding}")
assert [f.rule for f in static["clip_scaled"]] == ["TP107"] and static["clip_unscaled"] == []

# %%
# Takeaway
# --------
#
# **With a GradScaler, the gradients after backward() are scaled: call scaler.unscale_(optimizer)
# before clipping them, logging their norm or reading them in any way.**
# Then ``scaler.step(optimizer)`` and ``scaler.update()`` as usual; a step whose gradients
# overflowed is skipped by the scaler, clipped or not.
# Sums and losses computed in float16 or bfloat16 have pitfalls of their own:
# :ref:`half-precision-accumulation`.
