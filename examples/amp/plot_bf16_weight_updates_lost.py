"""
.. _bf16-weight-updates-lost:

Pure bfloat16 weights drop small updates
========================================

To save memory, a model is converted with ``model.to(torch.bfloat16)`` and trained with an
ordinary optimizer.
The loss goes down, but much more slowly than in float32, and most weights never change at all:
each update is added to a bfloat16 weight and rounded back to bfloat16, and an update smaller
than half the gap between two neighbouring bfloat16 numbers rounds away.
Nothing warns; the smaller the learning rate, the more weights are frozen by rounding.

.. admonition:: What you will learn

   * which updates a bfloat16 weight can absorb: the gap between neighbours grows with the
     weight, and an update below half of it is lost;
   * how to see it: count the weights an optimizer step changed;
   * the two fixes: float32 weights under :class:`torch.autocast`, or a float32 master copy of
     bfloat16 weights that the optimizer updates.

.. admonition:: Prerequisites

   :ref:`half-precision-accumulation` (the same rounding, in a running total) and a training
   step with :class:`torch.optim.Adam`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A small regression network, converted to bfloat16 with :meth:`torch.nn.Module.to`, takes one
# step of :class:`torch.optim.Adam` with a learning rate of ``1e-4``, a common value for
# fine-tuning.
# The same network in float32 takes the same step.
# We count the weights the step changed:
import matplotlib.pyplot as plt
import torch
from torch import nn

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

generator = torch.Generator().manual_seed(1)
x = torch.randn(64, 32, generator=generator).to(device)  # drawn on the CPU: same on every device
y = torch.sin(x.sum(dim=1, keepdim=True) / 4)


def make_model(dtype):
    seed_everything(0)  # the same initial weights for every variant
    return nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1)).to(device, dtype)


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def one_step(dtype, lr):
    """The weights of a fresh model before and after one Adam step."""
    model = make_model(dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    before = flat(model)
    nn.functional.mse_loss(model(x.to(dtype)).float(), y).backward()
    optimizer.step()
    return before, flat(model)


def fraction_moved(dtype, lr):
    before, after = one_step(dtype, lr)
    return (after != before).float().mean().item()


moved = {str(dtype): fraction_moved(dtype, 1e-4) for dtype in (torch.float32, torch.bfloat16)}
print("weights changed by one Adam step (lr=1e-4):", {k: f"{v:.1%}" for k, v in moved.items()})
assert moved["torch.float32"] == 1.0 and 0.1 < moved["torch.bfloat16"] < 0.25

# %%
# **One step changed every float32 weight, and fewer than one bfloat16 weight in four.**
# The other bfloat16 weights received an update too; it was rounded away.
# Over 100 steps the damage adds up: most bfloat16 weights never move, and the loss falls far
# more slowly.

steps = 100


def train(model, step):
    """Run ``steps`` training steps; return the losses and the fraction of weights never moved."""
    initial = flat(model)
    losses = []
    for _ in range(steps):
        losses.append(step(model).item())
    return losses, (flat(model) == initial).float().mean().item()


def plain_step(optimizer):
    def step(model):
        dtype = next(model.parameters()).dtype
        loss = nn.functional.mse_loss(model(x.to(dtype)).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step


runs = {}
for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
    model = make_model(dtype)
    runs[name] = train(model, plain_step(torch.optim.Adam(model.parameters(), lr=1e-4)))
for name, (losses, never) in runs.items():
    print(f"{name:>8}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, weights never moved: {never:.1%}")
assert runs["float32"][1] == 0.0 and runs["bfloat16"][1] > 0.7
assert runs["bfloat16"][0][-1] > runs["float32"][0][-1] + 0.1

# %%
# Why
# ---
#
# bfloat16 keeps 8 significant bits (float32 keeps 24), so neighbouring bfloat16 numbers are far
# apart, and the gap grows with the number: it is ``torch.finfo(torch.bfloat16).eps`` (``2**-7``)
# times the largest power of two not above it.
# :func:`torch.nextafter` gives the next bfloat16 number up:

weights = torch.tensor([1.0, 0.1, 0.05, 0.01], dtype=torch.bfloat16, device=device)
gaps = torch.nextafter(weights, torch.full_like(weights, float("inf"))) - weights
print("weights:", weights.tolist())
print("gap to the next bfloat16 number:", gaps.tolist())
assert gaps.tolist() == [2**-7, 2**-11, 2**-12, 2**-14]

# %%
# ``w - update`` is computed and rounded to the nearest bfloat16 number.
# An update smaller than half the gap below ``w`` gives back ``w`` itself: a bfloat16 weight
# ignores updates smaller than about ``w / 256`` to ``w / 512``.
# Subtracting ``1e-3`` fifty times from each weight shows it:

in_bfloat16, in_float32 = weights.clone(), weights.float()
for _ in range(50):
    in_bfloat16 = in_bfloat16 - 1e-3
    in_float32 = in_float32 - 1e-3
moved_bf16 = (weights - in_bfloat16).tolist()
moved_fp32 = (weights.float() - in_float32).tolist()
print("moved by 50 updates of -1e-3, in bfloat16:", moved_bf16)
print("                                in float32:", [round(m, 6) for m in moved_fp32])
assert moved_bf16[0] == 0.0  # 1e-3 is below half the gap below 1.0 (2**-9)
assert all(abs(m - 0.05) < 0.002 for m in moved_bf16[1:])
assert all(abs(m - 0.05) < 1e-5 for m in moved_fp32)

# %%
# **The weight 1.0 never moves; in float32 it moves by 0.05 like the others.**
# The smaller weights move, by steps rounded to their own grid; :ref:`half-precision-accumulation`
# shows the same rounding in a running total.
#
# Adam's first step moves every weight by about the learning rate, ``1e-4``, whatever its
# gradient.
# Half the gap is below ``1e-4`` only for weights smaller than ``2**-5 = 0.03125`` in magnitude
# (just below ``2**-5`` the gap is ``2**-13``, just above it ``2**-12``, and half of that is
# ``1.2e-4``), so these are the weights that moved:

initial, after_step = one_step(torch.bfloat16, 1e-4)
changed = after_step != initial
small = initial.abs() < 2**-5
agreement = (changed == small).float().mean().item()
share_small, share_changed = small.float().mean().item(), changed.float().mean().item()
print(f"weights below 2**-5: {share_small:.1%}, weights changed: {share_changed:.1%}")
print(f"changed == below 2**-5 for {agreement:.2%} of the weights")
assert agreement > 0.999

# %%
# (A weight just above ``2**-5`` that moves towards zero enters the finer grid below it, and
# can move too.)
# The smaller the learning rate, the fewer weights can still move: a learning-rate schedule that
# decays at the end of training freezes the bfloat16 model more and more.

by_lr = {lr: fraction_moved(torch.bfloat16, lr) for lr in (1e-3, 1e-4, 1e-5)}
print(
    "bfloat16 weights changed by one Adam step:",
    {f"lr={lr:g}": f"{f:.1%}" for lr, f in by_lr.items()},
)
assert by_lr[1e-3] > 0.9 and by_lr[1e-3] > by_lr[1e-4] > by_lr[1e-5]

# %%
# The fix
# -------
#
# **Keep the weights that the optimizer updates in float32.**
# Two ways, depending on where the memory goes:
#
# 1. *Mixed precision*: keep the model in float32 and run its forward pass under
#    :class:`torch.autocast`; matrix products run in bfloat16, the weights and their updates
#    stay float32.
# 2. *A float32 master copy*: keep a bfloat16 model for the forward and backward passes, give the
#    optimizer float32 copies of its parameters, and copy the updated values back after each
#    step.
#    The master copy accumulates small updates until they reach the bfloat16 gap.


def autocast_step(optimizer):
    def step(model):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            prediction = model(x)
        loss = nn.functional.mse_loss(prediction.float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step


model = make_model(torch.float32)
runs["autocast, float32 weights"] = train(
    model, autocast_step(torch.optim.Adam(model.parameters(), lr=1e-4))
)


def master_copy_step(master, optimizer):
    def step(model):
        loss = nn.functional.mse_loss(model(x.bfloat16()).float(), y)
        loss.backward()
        for master_p, p in zip(master, model.parameters(), strict=True):
            master_p.grad = p.grad.float()
            p.grad = None
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            for master_p, p in zip(master, model.parameters(), strict=True):
                p.copy_(master_p)  # rounded to bfloat16; the master copy keeps the rest
        return loss

    return step


bf16_model = make_model(torch.bfloat16)
master = [p.detach().float() for p in bf16_model.parameters()]
master_optimizer = torch.optim.Adam(master, lr=1e-4)
runs["bfloat16 + float32 master"] = train(bf16_model, master_copy_step(master, master_optimizer))

for name, (losses, never) in runs.items():
    print(f"{name:>25}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, weights never moved: {never:.1%}")
reference = runs["float32"][0][-1]
for name in ("autocast, float32 weights", "bfloat16 + float32 master"):
    assert abs(runs[name][0][-1] - reference) < 0.01 and runs[name][1] < 0.05

fig, ax = plt.subplots(figsize=(6, 3.5))
for name, (losses, _) in runs.items():
    ax.plot(losses, label=name, linestyle="--" if name == "float32" else "-")
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.set_title("Adam, lr=1e-4")
ax.legend()
fig.tight_layout()

# %%
# **Both fixes follow the float32 curve; the pure bfloat16 model falls behind.**
# In the master-copy run a few bfloat16 weights still never changed: their accumulated updates
# have not yet reached half a bfloat16 gap, but the master copy holds them.
#
# The optimizer's state (Adam's moment estimates) is created in the dtype of the tensors it
# updates, so both fixes also keep it in float32.
# The memory bill, in bytes per parameter, for the weights alone and with Adam's two moments:

fp32, bf16 = torch.float32.itemsize, torch.bfloat16.itemsize  # 4 and 2 bytes
bytes_per_parameter = {
    "float32": (fp32, fp32 + 2 * fp32),
    "bfloat16": (bf16, bf16 + 2 * bf16),
    "bfloat16 + float32 master": (bf16 + fp32, bf16 + fp32 + 2 * fp32),
}
master_state = master_optimizer.state[master[0]]
state_dtypes = {str(master_state[k].dtype) for k in ("exp_avg", "exp_avg_sq")}
print("master copy:", master[0].dtype, "| its Adam state:", state_dtypes)
assert state_dtypes == {"torch.float32"}
print("bytes per parameter (weights, with Adam's state):", bytes_per_parameter)

# %%
# Pure bfloat16 saves memory exactly by dropping the digits that small updates need.
# Libraries that train bfloat16 weights without a master copy round the update *stochastically*
# instead (next section).
#
# A real-world report: a feature request for stochastic rounding
# --------------------------------------------------------------
#
# In `PyTorch issue 120376 <https://github.com/pytorch/pytorch/issues/120376>`_ a user asked for
# bfloat16 additions with stochastic rounding, for training large models whose optimizer works
# on bfloat16 weights without the float32 copy; a commenter posted a function that copies a float32
# result into a bfloat16 tensor with stochastic rounding, from their own experiments.
# The issue was still open when this page was written; torchao added such an option to its own
# optimizers in
# `pytorch/ao pull request 1124 <https://github.com/pytorch/ao/pull/1124>`_, whose description
# states the problem of this page: with round-to-nearest, an update smaller than about a
# thousandth of the weight leaves a bfloat16 weight unchanged.
#
# Detectors
# ---------
#
# The runtime guard ``TP017`` detects this pitfall in your own code (see :doc:`/detectors`): an
# optimizer step that left unchanged most of the elements of a bfloat16 or float16 parameter
# that had a non-zero gradient, their updates rounded away.

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP017 "):
        one_step(torch.bfloat16, 1e-4)
with guards(language="en") as fixed:
    model = make_model(torch.float32)
    autocast_step(torch.optim.Adam(model.parameters(), lr=1e-4))(model)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP017"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **A bfloat16 weight ignores any update smaller than half the gap to its neighbour, 1/512 to
# 1/256 of its size: train with float32 weights under autocast, or give the optimizer a float32
# master copy.**
# Count the weights a step changed to check: in float32 it is all of them.
