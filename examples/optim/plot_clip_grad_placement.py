"""
.. _clip-grad-placement:

Gradient clipping in the wrong place
====================================

:func:`~torch.nn.utils.clip_grad_norm_` is in the training loop, its threshold is set, the norm it
returns is logged, and yet the loss still spikes as if nothing were clipped.
Clipping rescales the gradients that exist at the moment it is called, nothing else: called after
``optimizer.step()``, it edits gradients that were already used; called before ``backward()``, it
finds no gradients, or the previous batch's; called after every micro-batch of gradient
accumulation, it shrinks a partial sum, and the first micro-batches end up counting less than the
last.
None of these raises an error, and in two of them the logged norm looks perfectly normal.

.. admonition:: What you will learn

   * what ``clip_grad_norm_`` changes, and what the number it returns is;
   * what each misplaced call does to the update the optimizer applies;
   * the one order that works, with gradient accumulation and a gradient scaler:
     backward (every micro-batch) → unscale → clip → step, once per optimizer step.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (one training step), :ref:`gradient-accumulation`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A small regression network, trained with plain :class:`~torch.optim.SGD` (no momentum, so the
# update of a step is exactly the learning rate times the gradient it reads) and gradients clipped
# to a total norm of 1.
# The targets are large, so the gradients are well above that threshold and clipping should act
# on every step.
# The same two batches are trained with the four calls of a step in four orders; for each step we
# record the true gradient norm (right after ``backward()``), the norm ``clip_grad_norm_``
# returned, and the norm of the update the optimizer applied.
import copy

import torch
from torch import nn

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
batches = [
    (torch.randn(32, 8, device=device), 20 * torch.randn(32, 1, device=device)) for _ in range(2)
]
LR, MAX_NORM = 0.01, 1.0


def flat(tensors):
    return torch.cat([t.detach().flatten() for t in tensors])


def grad_norm(net):
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    return flat(grads).norm().item() if grads else 0.0


def train(order, batches=batches):
    """Train a copy of the model, one step per batch, calling the four steps in ``order``.

    Returns, per step: the true gradient norm, the norm clip_grad_norm_ returned, the update norm.
    """
    net = copy.deepcopy(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    rows = []
    for x, y in batches:
        before = flat(net.parameters())
        for call in order:
            if call == "zero_grad":
                optimizer.zero_grad()
            elif call == "backward":
                nn.functional.mse_loss(net(x), y).backward()
                true_norm = grad_norm(net)
            elif call == "clip":
                returned = nn.utils.clip_grad_norm_(net.parameters(), MAX_NORM).item()
            elif call == "step":
                optimizer.step()
        update = (flat(net.parameters()) - before).norm().item()
        rows.append((true_norm, returned, update))
    return rows


orders = {
    "clip before step (right)": ["zero_grad", "backward", "clip", "step"],
    "clip after step": ["zero_grad", "backward", "step", "clip"],
    "clip before backward": ["zero_grad", "clip", "backward", "step"],
    "clip before zero_grad": ["clip", "zero_grad", "backward", "step"],
}
results = {name: train(order) for name, order in orders.items()}
print(f"{'':25} step  true norm  clip returned  update norm  update / lr")
for name, rows in results.items():
    for i, (true_norm, returned, update) in enumerate(rows):
        label = name if i == 0 else ""
        print(f"{label:25} {i:4}  {true_norm:9.3f}  {returned:13.3f}  {update:11.4f}", end="")
        print(f"  {update / LR:11.3f}")

# %%
# **Only the first order moved the weights by the learning rate times the clipped norm (0.01 × 1);
# the three others applied the whole gradient: their update divided by the learning rate is the
# true norm.**
# What ``clip_grad_norm_`` returned differs between them, and in two of them it looks right:

right = results["clip before step (right)"]
after_step = results["clip after step"]
before_backward = results["clip before backward"]
before_zero_grad = results["clip before zero_grad"]
for true_norm, returned, update in right:
    assert true_norm > 10 * MAX_NORM
    assert abs(returned - true_norm) < 1e-4 * true_norm
    assert abs(update - LR * MAX_NORM) < 1e-3 * LR
for rows in (after_step, before_backward, before_zero_grad):
    for true_norm, _, update in rows:
        assert abs(update - LR * true_norm) < 1e-3 * LR * true_norm  # the unclipped gradient
assert all(abs(returned - true_norm) < 1e-4 * true_norm for true_norm, returned, _ in after_step)
assert [returned for _, returned, _ in before_backward] == [0.0, 0.0]
assert before_zero_grad[0][1] == 0.0
assert abs(before_zero_grad[1][1] - before_zero_grad[0][0]) < 1e-4 * before_zero_grad[0][0]

# %%
# * **After step()**: the norm returned is the true norm of this step's gradient, so the log is
#   right, but the optimizer had already used the gradient; the clipped copy is thrown away by the
#   next ``zero_grad()``.
# * **Before backward()**, after ``zero_grad()``: there are no gradients yet, and the call
#   returns 0 and clips nothing.
# * **Before zero_grad()**: it clips the *previous* batch's gradients, which ``zero_grad()``
#   then discards; the norm it returns is the previous step's, one step late (0 at the first
#   step), a plausible number in a log.
#
# Why
# ---
#
# ``clip_grad_norm_`` is not part of the optimizer and does not register anything with it.
# It computes the total norm of the ``.grad`` tensors that exist when it is called, multiplies
# each of them in place by ``max_norm / (total_norm + 1e-6)`` when that is below 1, and returns
# the total norm *before* clipping.
# It never touches the parameters:

net = copy.deepcopy(model)
x, y = batches[0]
nn.functional.mse_loss(net(x), y).backward()
weights_before = flat(net.parameters())
returned = nn.utils.clip_grad_norm_(net.parameters(), MAX_NORM).item()
print(f"returned: {returned:.3f} | gradient norm after the call: {grad_norm(net):.4f}")
print("parameters changed by the call:", not torch.equal(weights_before, flat(net.parameters())))
assert abs(grad_norm(net) - MAX_NORM) < 1e-4 and returned > 10 * MAX_NORM
assert torch.equal(weights_before, flat(net.parameters()))

# %%
# ``optimizer.step()`` reads ``p.grad`` at the moment it runs, whatever happens to it afterwards.
# And :meth:`~torch.optim.Optimizer.zero_grad` sets the gradients to ``None`` (its default,
# ``set_to_none=True``), so between ``zero_grad()`` and ``backward()`` there is nothing to clip:

net.zero_grad()
print("gradients after zero_grad():", [p.grad for p in net.parameters()])
print("clip_grad_norm_ returns:", nn.utils.clip_grad_norm_(net.parameters(), MAX_NORM))
assert all(p.grad is None for p in net.parameters())
assert nn.utils.clip_grad_norm_(net.parameters(), MAX_NORM).item() == 0.0

# %%
# Because the returned value is the norm before clipping, a log of it cannot tell a clipped step
# from an unclipped one: it is the same number either way, as the table showed for "clip before
# step" and "clip after step".
# What shows whether clipping acted is the update (or the gradient norm measured right before
# ``step()``).
# The same placement rules hold for ``torch.nn.utils.clip_grad_value_``, which clamps each
# gradient element instead of rescaling them all.
#
# The fix
# -------
#
# **Clip after the last backward() and before step(), once per optimizer step:
# zero_grad → backward → clip → step.**
# That is the first order above.
# In a loop that clears the gradients at the end of the step (``step(); zero_grad()``), the clip
# still goes between ``backward()`` and ``step()``.
#
# With gradient accumulation: once, after the last micro-batch
# -------------------------------------------------------------
#
# With gradient accumulation, the ``.grad`` tensors hold a *partial sum* until the last
# micro-batch's ``backward()``.
# Clipping after every micro-batch rescales that partial sum again and again.
# Four micro-batches, each loss divided by 4; first with a clip after every backward:

K = 4
x_all = torch.randn(4 * K, 8, device=device)
y_all = 20 * torch.randn(4 * K, 1, device=device)
micro_batches = list(zip(x_all.chunk(K), y_all.chunk(K), strict=True))


def micro_gradient(net, xb, yb):
    """The gradient of one micro-batch's loss divided by K, alone."""
    grads = torch.autograd.grad(nn.functional.mse_loss(net(xb), yb) / K, list(net.parameters()))
    return flat(grads)


pieces = [micro_gradient(model, xb, yb) for xb, yb in micro_batches]
full_batch_gradient = sum(pieces)

every_time = copy.deepcopy(model)
factors = []
for xb, yb in micro_batches:
    (nn.functional.mse_loss(every_time(xb), yb) / K).backward()
    norm = nn.utils.clip_grad_norm_(every_time.parameters(), MAX_NORM).item()
    factors.append(min(1.0, MAX_NORM / (norm + 1e-6)))  # what the call multiplied the sum by
clipped_every_time = flat(p.grad for p in every_time.parameters())

# %%
# Each clip multiplied everything accumulated so far, so micro-batch *i* was shrunk by the clip
# factors of every call from its own onwards.
# The weights of the four micro-batches in the final gradient, and the same check against the
# separately computed gradients:

weights = [torch.tensor(factors[i:]).prod().item() for i in range(K)]
rebuilt = sum(w * g for w, g in zip(weights, pieces, strict=True))
torch.testing.assert_close(clipped_every_time, rebuilt, rtol=1e-4, atol=1e-6)
print("clip factor of each call:        ", [round(f, 4) for f in factors])
print("weight of each micro-batch:       ", [round(w, 4) for w in weights])
print(f"the last micro-batch counts {weights[-1] / weights[0]:.0f}× as much as the first")
assert all(f < 1 for f in factors)
assert weights == sorted(set(weights))  # strictly increasing

# %%
# Clipped once, after the last micro-batch, every micro-batch has the same weight, and the result
# is the full batch's gradient clipped, as one large batch would give:

once = copy.deepcopy(model)
for xb, yb in micro_batches:
    (nn.functional.mse_loss(once(xb), yb) / K).backward()
norm_once = nn.utils.clip_grad_norm_(once.parameters(), MAX_NORM).item()
clipped_once = flat(p.grad for p in once.parameters())
expected = full_batch_gradient * (MAX_NORM / (full_batch_gradient.norm() + 1e-6))
torch.testing.assert_close(clipped_once, expected, rtol=1e-4, atol=1e-6)
cosine = nn.functional.cosine_similarity(clipped_every_time, clipped_once, dim=0).item()
print(f"norm: clipped every time {clipped_every_time.norm():.4f}, once {clipped_once.norm():.4f}")
print(f"cosine similarity between the two gradients: {cosine:.3f}")
assert abs(clipped_every_time.norm().item() - clipped_once.norm().item()) < 1e-3
assert cosine < 0.99

# %%
# **Both gradients have a norm of 1, so nothing looks wrong in a log of norms; only their
# directions differ.**
# The accumulated step becomes a weighted average that favours the last micro-batches, and it
# changes with the number of accumulation steps.
#
# The whole step, with a gradient scaler
# --------------------------------------
#
# The order in one function: clear, accumulate every micro-batch, clip once, step once.
# With a ``torch.amp.GradScaler`` (mixed precision), the gradients are multiplied by the scale
# until ``scaler.unscale_(optimizer)``, which goes right before the clip
# (:ref:`amp-unscale-before-clip`); without a scaler, that line is left out.


def accumulated_step(net, optimizer, micro_batches, scaler=None):
    optimizer.zero_grad()
    for xb, yb in micro_batches:
        loss = nn.functional.mse_loss(net(xb), yb) / len(micro_batches)
        (scaler.scale(loss) if scaler else loss).backward()
    if scaler:
        scaler.unscale_(optimizer)  # the true gradients, before reading them
    norm = nn.utils.clip_grad_norm_(net.parameters(), MAX_NORM)
    if scaler:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return norm.item()


updates = {}
for name in ("without a scaler", "with a GradScaler"):
    net = copy.deepcopy(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    scaler = torch.amp.GradScaler(device.type) if name == "with a GradScaler" else None
    before = flat(net.parameters())
    norm = accumulated_step(net, optimizer, micro_batches, scaler)
    updates[name] = before - flat(net.parameters())
    print(f"{name}: norm returned {norm:.3f}, update norm {updates[name].norm():.4f}")
    torch.testing.assert_close(updates[name], LR * expected, rtol=1e-3, atol=1e-7)

# %%
# Both applied the full batch's gradient clipped to a norm of 1, times the learning rate.
#
# A real-world report: clipping that never clipped
# ------------------------------------------------
#
# In the training script of a PyTorch implementation of Onsets and Frames, a piano-transcription
# model, a reader pointed out that the gradients were clipped after ``backward()`` *and*
# ``step()``; the author agreed that the clip
# belonged between the two, and added that during most of training the gradient norm had stayed
# below the threshold anyway, which is how such a bug survives
# (`onsets-and-frames issue 24 <https://github.com/jongwook/onsets-and-frames/issues/24>`_).
# The accumulation variant was reported against Hugging Face's transformers library, whose
# training code clipped after every ``backward()`` while stepping only every few micro-batches;
# the report says the clip belongs right before ``optimizer.step()``, and it was closed once a
# pull request fixing it was merged
# (`transformers issue 1563 <https://github.com/huggingface/transformers/issues/1563>`_).
# An earlier issue there had worked out by hand, with two orthogonal gradients, that clipping each
# partial sum gives the later gradients more weight
# (`transformers issue 986 <https://github.com/huggingface/transformers/issues/986>`_).
#
# Detectors
# ---------
#
# The static checker's opt-in rule ``TP118`` (``--enable TP118``, see :doc:`/detectors`) finds
# clipping placed after ``optimizer.step()``, before ``backward()``, or after each micro-batch's
# ``backward()`` in one loop body, as on this page. It is opt-in until it has findings on real
# code to measure.
#
# The runtime guard ``TP020`` detects, as the code runs, a call of ``clip_grad_norm_`` or
# ``clip_grad_value_`` on parameters none of which has a gradient: the clip before
# ``backward()`` above (the two other misplaced clips find gradients, which only ``TP118`` sees).

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP020 "):
        train(orders["clip before backward"], batches[:1])
with guards(language="en") as fixed:
    train(orders["clip before step (right)"], batches[:1])
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP020"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **Clip once per optimizer step, after the last backward() (and after scaler.unscale_) and right
# before step(): anywhere else, clip_grad_norm_ rescales gradients that are gone, not there yet,
# or only partly summed.**
# Its return value is the norm before clipping, so check the update, not the log.
# The parameters given to the clip should be those the optimizer steps, kept in a list rather than
# a generator: :ref:`params-generator-exhausted`.
