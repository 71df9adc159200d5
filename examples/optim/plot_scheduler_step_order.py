"""
.. _scheduler-step-order:

``scheduler.step()`` before ``optimizer.step()``
================================================

A learning rate scheduler sets the optimizer's learning rate from a schedule: a warm-up, a decay
at given epochs, a cosine curve.
Called at the start of each epoch, before the optimizer has taken a step, it moves to the
schedule's second value before the first one is ever used: PyTorch warns once, and the whole
schedule runs one epoch early.
Stepped once per batch instead of once per epoch, a schedule written in epochs runs many times
too fast.

.. admonition:: What you will learn

   * that a scheduler applies the first value of its schedule when it is created, and moves to
     the next one at each ``step()``;
   * why ``scheduler.step()`` belongs after ``optimizer.step()``, and what PyTorch's warning
     checks;
   * that a scheduler counts its ``step()`` calls, not epochs: per-epoch and per-batch schedulers;
   * what changed in PyTorch 1.1, and why the warning came later.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (the training step: backward, step, zero_grad).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A warm-up over three epochs: :class:`~torch.optim.lr_scheduler.LinearLR` starts at a quarter of
# the learning rate of 0.1 and reaches the full rate after three scheduler steps.
# The training loop steps the scheduler at the start of each epoch, as many older tutorials do,
# and records the learning rate that each epoch's optimizer steps actually use.
import torch
from torch import nn
from torch.optim.lr_scheduler import LinearLR, OneCycleLR

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

EPOCHS, BATCHES = 5, 4
model = nn.Linear(3, 1).to(device)
data = [
    (torch.randn(8, 3, device=device), torch.randn(8, 1, device=device)) for _ in range(BATCHES)
]


def train_one_epoch(optimizer):
    """One epoch of plain training steps; returns the learning rate its steps used."""
    for x, y in data:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return round(optimizer.param_groups[0]["lr"], 4)


def warm_up():
    """A fresh SGD optimizer and its warm-up scheduler: 0.025, 0.05, 0.075, then 0.1."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return optimizer, LinearLR(optimizer, start_factor=0.25, total_iters=3)


optimizer, scheduler = warm_up()
with expect_warns(UserWarning, r"Detected call of `lr_scheduler.step\(\)` before") as caught:
    used_before = []
    for _epoch in range(EPOCHS):
        scheduler.step()  # at the start of the epoch: too early
        used_before.append(train_one_epoch(optimizer))
print("learning rate used in each epoch, scheduler stepped first:", used_before)
assert used_before == [0.05, 0.075, 0.1, 0.1, 0.1]
assert len(caught.warnings) == 1  # once, at the first scheduler step

# %%
# **The first epoch trains at 0.05: the schedule's first value, 0.025, is never used.**
# Every later value comes one epoch early, and the warning appears once, at the first call.
#
# Why
# ---
#
# **A scheduler applies the first value of its schedule when it is created**: the constructor sets
# the optimizer's learning rate for epoch 0 and sets its counter,
# ``last_epoch``, to 0.
# Each ``scheduler.step()`` adds one to ``last_epoch`` and sets the learning rate for that epoch.
# So the first ``step()`` means "epoch 0 is over": called before any training, it skips epoch 0's
# value.

optimizer, scheduler = warm_up()
created = (scheduler.last_epoch, round(optimizer.param_groups[0]["lr"], 4))
print("after creating the scheduler: last_epoch, lr =", created)
assert created == (0, 0.025)

# %%
# The warning comes from a check in the scheduler: when it is created, it wraps the optimizer's
# ``step`` method to record that it has been called, and at the scheduler's first ``step()`` it
# warns if the optimizer has not stepped yet.
# It checks only that first call, which is why the loop above warned once.
# It cannot see every case: a schedule stepped twice per epoch, or per batch, passes it.
#
# Stepping per batch
# ------------------
#
# **A scheduler counts its step() calls, not epochs**: "epoch" in ``last_epoch`` and
# ``total_iters`` means "call".
# The same warm-up, written for three epochs and stepped after every batch, in the right order,
# is over after three batches of the first epoch:

optimizer, scheduler = warm_up()
per_batch = []
for _epoch in range(2):
    for x, y in data:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        per_batch.append(round(optimizer.param_groups[0]["lr"], 4))
        scheduler.step()  # after every batch: a per-epoch schedule runs BATCHES times too fast
print("learning rate used by each optimizer step, scheduler stepped per batch:", per_batch)
assert per_batch == [0.025, 0.05, 0.075] + [0.1] * (2 * BATCHES - 3)

# %%
# Some schedulers are meant to be stepped per batch: :class:`~torch.optim.lr_scheduler.OneCycleLR`
# takes the total number of optimizer steps (``epochs`` and ``steps_per_epoch``, or
# ``total_steps``) and refuses to step beyond it.
# Given the number of epochs as ``total_steps`` and stepped per batch, it stops with an error
# during the second epoch:

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
one_cycle = OneCycleLR(optimizer, max_lr=0.1, total_steps=EPOCHS)  # epochs, not optimizer steps
with expect_raises(ValueError, f"Tried to step {EPOCHS + 1} times"):
    for _epoch in range(EPOCHS):
        for _batch in data:
            optimizer.step()
            one_cycle.step()
print("OneCycleLR stepped per batch stopped at last_epoch =", one_cycle.last_epoch)
assert one_cycle.last_epoch == EPOCHS + 1

# %%
# The fix
# -------
#
# **Call scheduler.step() after optimizer.step(), as many times as the schedule counts**: once at
# the end of each epoch for a schedule in epochs (:class:`~torch.optim.lr_scheduler.StepLR`,
# :class:`~torch.optim.lr_scheduler.MultiStepLR`, a warm-up in epochs), after every
# optimizer step for a schedule in steps (``OneCycleLR``, a warm-up in steps).

optimizer, scheduler = warm_up()
used_after = []
for _epoch in range(EPOCHS):
    used_after.append(train_one_epoch(optimizer))
    scheduler.step()  # at the end of the epoch
print("learning rate used in each epoch, scheduler stepped last:", used_after)
assert used_after == [0.025, 0.05, 0.075, 0.1, 0.1]
assert used_after[1:] == used_before[:-1]  # the wrong order is the same schedule, one epoch early

# %%
# The per-batch schedule with the number of optimizer steps it will see:

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
one_cycle = OneCycleLR(optimizer, max_lr=0.1, epochs=EPOCHS, steps_per_epoch=BATCHES)
peak = 0.0
for _epoch in range(EPOCHS):
    for x, y in data:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        peak = max(peak, optimizer.param_groups[0]["lr"])
        one_cycle.step()
print(f"OneCycleLR: {one_cycle.last_epoch} steps of {EPOCHS * BATCHES}, peak rate {peak:.3f}")
assert one_cycle.last_epoch == EPOCHS * BATCHES and abs(peak - 0.1) < 0.01

# %%
# With gradient accumulation (:ref:`gradient-accumulation`), a per-step schedule counts optimizer
# steps, not micro-batches: step the scheduler right after the optimizer.
#
# Changed in PyTorch 1.1
# ----------------------
#
# Up to PyTorch 1.0, the scheduler was meant to be stepped at the *start* of each epoch: its
# constructor left ``last_epoch`` at -1 and the first ``step()`` applied epoch 0's value.
# `PyTorch 1.1 <https://github.com/pytorch/pytorch/releases/tag/v1.1.0>`_ made the constructor
# leave ``last_epoch`` at 0, so that the first ``step()`` moves on to epoch 1's value and the
# scheduler is stepped *after* the optimizer
# (`pull request #7889 <https://github.com/pytorch/pytorch/pull/7889>`_, whose title marks it as a
# change that breaks backward compatibility).
# PyTorch's optimizer documentation
# (`How to adjust learning rate <https://docs.pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate>`_)
# still carries a warning about this change.
# **Code written for PyTorch 1.0 silently skips the first value of its schedule since 1.1.**
# The warning shown above did not exist in 1.1: it was requested just after that release
# (`pytorch/pytorch issue #20124 <https://github.com/pytorch/pytorch/issues/20124>`_) and added by
# `pull request #20203 <https://github.com/pytorch/pytorch/pull/20203>`_; users report it from
# PyTorch 1.2 on.
#
# A real-world report
# -------------------
#
# In 2021, a user of a person re-identification baseline, on PyTorch 1.3, asked whether this
# warning was something to worry about
# (`michuanhaohao/reid-strong-baseline issue #190 <https://github.com/michuanhaohao/reid-strong-baseline/issues/190>`_).
# The training script stepped its scheduler when each epoch started; the user proposed to step it
# when each epoch ends, and the author agreed, adding that the effect on the results was small.
# The effect depends on the schedule: with a warm-up of a few epochs, the skipped value is the
# gentlest learning rate of the run.

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP106`` (see :doc:`/detectors`) finds this pitfall in your own code:
# ``scheduler.step()``, without argument, in a loop body before the statement that steps the
# optimizer, directly or through a function whose name starts with ``train``.
# ``scheduler.step(epoch)`` and ``ReduceLROnPlateau``'s ``scheduler.step(metric)`` are left alone,
# and so is a scheduler of another library, which may expect to be stepped first.
# Run on the page's wrong loop and on its fix, it flags the first only:

from torch_pitfalls.lint import check_source

wrong_code = """
from torch.optim.lr_scheduler import LinearLR

scheduler = LinearLR(optimizer, start_factor=0.25, total_iters=3)
for epoch in range(EPOCHS):
    scheduler.step()
    train_one_epoch(optimizer)
"""
fixed_code = """
from torch.optim.lr_scheduler import LinearLR

scheduler = LinearLR(optimizer, start_factor=0.25, total_iters=3)
for epoch in range(EPOCHS):
    train_one_epoch(optimizer)
    scheduler.step()
"""
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [f.rule for f in static["wrong"]] == ["TP106"] and static["fixed"] == []

# %%
# Takeaway
# --------
#
# **Step the optimizer, then the scheduler: the scheduler's constructor already applied the first
# value, and each step() moves to the next.**
# Step a schedule in epochs once per epoch and a schedule in steps once per optimizer step, and
# size ``OneCycleLR`` by optimizer steps, not epochs.
