"""
.. _resume-training:

Resuming training from a checkpoint
===================================

A long training run is interrupted, and resumed from the last checkpoint.
If the checkpoint holds only the model's weights, the resumed run is not the run that was
interrupted: the optimizer starts again without its statistics, the learning rate schedule
starts again from the top, and the random number generators replay the first epoch's shuffling
and dropout masks.
The loss jumps at the restart, and the run never returns to the trajectory it was on.

.. admonition:: What you will learn

   * which objects hold training state besides the model: the optimizer, the learning rate
     scheduler, the gradient scaler and the random number generators;
   * what each of them changes in the continued run when it is not restored;
   * how to write a checkpoint that resumes a run exactly, and load it on another device with
     ``map_location``.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (a training step), :ref:`torch-load-weights-only` (saving and
   loading state dicts) and :ref:`dataloader-worker-rng` (the DataLoader's ``generator``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A small regression network with dropout, trained with :class:`~torch.optim.Adam` and a
# learning rate that ``StepLR`` halves every three epochs.
# The DataLoader shuffles the data with a generator of its own.
# The script seeds everything when it starts, as a training script should.
# After every step we also record the loss on the whole data set in evaluation mode (the "full
# loss"), a smoother measure of where the model is than the batch loss.
# Here is the run without interruption, eight epochs of eight batches:
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

device = get_device()
print(f"device: {device}")

workdir = tempfile.TemporaryDirectory()
folder = Path(workdir.name)

seed_everything(0)
inputs = torch.randn(256, 8)  # drawn on the CPU: the same data on every device
targets = torch.tanh(inputs @ torch.randn(8, 4) / 2) @ torch.randn(4, 1) + 0.1 * torch.randn(256, 1)
inputs, targets = inputs.to(device), targets.to(device)
EPOCHS, INTERRUPTED_AFTER, LR = 8, 4, 0.03


def start():
    """What the script does when it starts: seed, build the model, optimizer, scheduler, loader."""
    seed_everything(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 1))
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    shuffling = torch.Generator().manual_seed(0)
    loader = DataLoader(
        TensorDataset(inputs, targets), batch_size=32, shuffle=True, generator=shuffling
    )
    return model, optimizer, scheduler, loader


def full_loss(model):
    model.eval()
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(inputs), targets).item()
    model.train()
    return loss


def dropout_rng_state():
    """The state of the generator that dropout draws from on this device."""
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


@dataclass
class Run:
    """What a training run recorded: per step, the batch loss and the full loss; per epoch, the
    learning rate, dropout's generator state and the first input row of the first batch (which
    shows the shuffling)."""

    losses: list = field(default_factory=list)
    full: list = field(default_factory=list)
    lrs: list = field(default_factory=list)
    rng: list = field(default_factory=list)
    first_rows: list = field(default_factory=list)


def train(model, optimizer, scheduler, loader, epochs):
    run = Run()
    model.train()
    for _ in epochs:
        run.lrs.append(optimizer.param_groups[0]["lr"])
        run.rng.append(dropout_rng_state())
        for step, (x, y) in enumerate(loader):
            if step == 0:
                run.first_rows.append(x[0].tolist())
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            run.losses.append(loss.item())
            run.full.append(full_loss(model))
        scheduler.step()
    return run


reference = train(*start(), range(EPOCHS))
steps_per_epoch = len(reference.losses) // EPOCHS
print(f"{len(reference.losses)} steps; full loss at the end of each epoch:")
print([round(loss, 4) for loss in reference.full[steps_per_epoch - 1 :: steps_per_epoch]])
print("learning rate of each epoch:", reference.lrs)

# %%
# Now the same run is interrupted after four epochs.
# Its checkpoint holds the model's state dict, the usual minimum:

model, optimizer, scheduler, loader = start()
before = train(model, optimizer, scheduler, loader, range(INTERRUPTED_AFTER))
n = len(before.losses)
assert before.losses == reference.losses[:n]  # so far, the same run
adam_state_at_interruption = len(optimizer.state)
torch.save({"model": model.state_dict(), "epoch": INTERRUPTED_AFTER}, folder / "weights.pt")

# %%
# The script starts again, loads the weights and trains the last four epochs.
# The full loss right before the interruption, then after each of the first steps of the resumed
# run:

model, optimizer, scheduler, loader = start()
checkpoint = torch.load(folder / "weights.pt", map_location=device)
model.load_state_dict(checkpoint["model"])
weights_only = train(model, optimizer, scheduler, loader, range(checkpoint["epoch"], EPOCHS))
continued = reference.full[n:]
print(f"before the interruption: {before.full[-1]:.4f}")
print("uninterrupted run:", [round(loss, 4) for loss in continued[:6]])
print("weights restored: ", [round(loss, 4) for loss in weights_only.full[:6]])
jump = weights_only.full[0] / before.full[-1]
print(f"the first step after the restart multiplied the full loss by {jump:.1f}")
assert jump > 1.5 and continued[0] < 1.1 * before.full[-1]

# %%
# **The resumed run jumps away from where the interrupted run was, then goes its own way.**
# Nothing fails and the loss comes down again, so the jump is easy to dismiss as noise, but from
# here on this is a different training run.
#
# Why
# ---
#
# **A run's state is more than its weights: the optimizer, the learning rate scheduler and the
# random number generators each carry state from one step to the next.**
# Restarting rebuilds each of them from scratch.
#
# The learning rate of each param group is stored in the optimizer, and the scheduler counts
# epochs to decide when to change it.
# Rebuilt, both start from the top: the resumed epochs run at the initial learning rate again.

print(
    "learning rate of the resumed epochs: uninterrupted", reference.lrs[INTERRUPTED_AFTER:], end=""
)
print(", weights restored", weights_only.lrs)
assert weights_only.lrs[0] == LR > reference.lrs[INTERRUPTED_AFTER]

# %%
# :class:`~torch.optim.Adam` keeps, for every parameter, running averages of the gradient and of
# its square, and a step count.
# A fresh Adam has none of them (it creates them at its first step), and its bias correction
# makes the first update of every weight as large as the learning rate, whatever the size of its
# gradient: only the gradient's sign is left.
# One step from the restored weights, with a fresh optimizer:


def first_update(model, optimizer, loader):
    """Take one training step on the loader's first batch; return how far each weight moved."""
    before = [p.detach().clone() for p in model.parameters()]
    x, y = next(iter(loader))
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    return torch.cat(
        [(p.detach() - b).abs().flatten() for p, b in zip(model.parameters(), before, strict=True)]
    )


model, optimizer, scheduler, loader = start()
model.load_state_dict(checkpoint["model"])
print(f"Adam's state: {adam_state_at_interruption} parameters at the interruption, ", end="")
print(f"{len(optimizer.state)} after the restart")
fresh_moves = first_update(model, optimizer, loader)
at_lr = (fresh_moves - LR).abs() < 0.01 * LR
print(
    f"{at_lr.sum()} of {len(fresh_moves)} weights moved by the learning rate (within 1%); ", end=""
)
print(f"median move: {fresh_moves.median():.5f}")
assert adam_state_at_interruption == 4 and at_lr.float().mean() > 0.9

# %%
# And seeding at start-up puts the random number generators back where they were at the start of
# the first epoch: the resumed run shuffles its first epoch in the order of the run's first
# epoch, and draws the first epoch's dropout masks.

same_order_as_epoch_0 = weights_only.first_rows[0] == reference.first_rows[0]
same_masks_as_epoch_0 = torch.equal(weights_only.rng[0], reference.rng[0])
print("the resumed epoch starts with the first epoch's first sample:", same_order_as_epoch_0)
print("dropout's generator is in the state it had at the first epoch:", same_masks_as_epoch_0)
assert same_order_as_epoch_0 and reference.first_rows[INTERRUPTED_AFTER] != reference.first_rows[0]
assert same_masks_as_epoch_0 and not torch.equal(reference.rng[INTERRUPTED_AFTER], reference.rng[0])

# %%
# The gradient scaler of mixed-precision training, ``torch.amp.GradScaler``, is one more such
# object: it lowers its scale factor whenever gradients overflow, and a fresh one starts again
# from its initial scale:

print("initial scale of a GradScaler:", torch.amp.GradScaler(device.type).get_scale())

# %%
# The fix
# -------
#
# **Save every state dict of the run in one checkpoint, with the random number generators'
# states and the epoch, and restore all of them after building the objects as before.**
# The states of the generators are tensors, so the checkpoint loads with
# ``torch.load``'s default, ``weights_only=True``.
# Save the state of every other generator your code draws from as well (Python's :mod:`random`,
# NumPy's), and checkpoint at the end of an epoch, or also save the position within the epoch.


def rng_states(loader):
    states = {"torch": torch.get_rng_state(), "shuffling": loader.generator.get_state()}
    if device.type == "cuda":  # dropout on a GPU draws from the CUDA generator
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


model, optimizer, scheduler, loader = start()
train(model, optimizer, scheduler, loader, range(INTERRUPTED_AFTER))
torch.save(
    {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": rng_states(loader),
        "epoch": INTERRUPTED_AFTER,
    },
    folder / "checkpoint.pt",
)


def resume(path, restore=("optimizer", "scheduler", "rng")):
    """Start the script again; restore the model and the parts named in ``restore``."""
    model, optimizer, scheduler, loader = start()
    # on the CPU: generators take their states as CPU tensors only; load_state_dict copies the
    # model's and the optimizer's tensors to the device of each parameter
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    if "optimizer" in restore:
        optimizer.load_state_dict(checkpoint["optimizer"])
    if "scheduler" in restore:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if "rng" in restore:
        torch.set_rng_state(checkpoint["rng"]["torch"])
        loader.generator.set_state(checkpoint["rng"]["shuffling"])
        if device.type == "cuda":
            torch.cuda.set_rng_state(checkpoint["rng"]["cuda"], device)
    return train(model, optimizer, scheduler, loader, range(checkpoint["epoch"], EPOCHS))


restored = resume(folder / "checkpoint.pt")
identical = restored.losses == reference.losses[n:] and restored.full == continued
print("the resumed run is identical to the uninterrupted run:", identical)
assert identical

# %%
# The resumed run is the uninterrupted run, to the last bit.
# Leaving out any one part breaks that.
# For each variant, the largest difference between its full loss and the uninterrupted run's over
# the last four epochs, and the learning rates of those epochs:

variants = {
    "everything restored": restored,
    "all but the optimizer": resume(folder / "checkpoint.pt", ("scheduler", "rng")),
    "all but the scheduler": resume(folder / "checkpoint.pt", ("optimizer", "rng")),
    "all but the RNG states": resume(folder / "checkpoint.pt", ("optimizer", "scheduler")),
    "weights only": weights_only,
}
deviation = {
    name: max(abs(a - b) for a, b in zip(run.full, continued, strict=True))
    for name, run in variants.items()
}
parts = ("optimizer", "scheduler")
print(f"{'uninterrupted':23} {0:.4f}  {reference.lrs[INTERRUPTED_AFTER:]}")
for name, run in variants.items():
    print(f"{name:23} {deviation[name]:.4f}  {run.lrs}")
assert deviation["everything restored"] == 0
assert all(value > 0 for name, value in deviation.items() if name != "everything restored")
assert deviation["weights only"] == max(deviation.values())
resumed_lrs = reference.lrs[INTERRUPTED_AFTER:]
without_optimizer, without_scheduler = (variants[f"all but the {part}"].lrs for part in parts)
assert without_optimizer[0] == LR and without_optimizer != resumed_lrs
assert without_scheduler[0] == resumed_lrs[0] and without_scheduler != resumed_lrs

# %%
# The learning rates show how the optimizer and the scheduler share the schedule.
# **The current learning rate lives in the optimizer's param groups; the scheduler only counts
# epochs and multiplies that rate when its count says so.**
# Without the optimizer's state dict, the resumed epochs start again at the initial rate, even
# though the scheduler's count is right, and Adam's statistics are missing too.
# Without the scheduler's, the rate is right at first, but the fresh scheduler counts from zero and
# halves it at the wrong epoch.
#
# The full loss step by step, with the interruption after step 32:

import matplotlib.pyplot as plt

plt.rcParams.update({"font.size": 12})
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
steps = range(1, len(reference.full) + 1)
ax.plot(steps, reference.full, color="gray", linewidth=4, label="uninterrupted")
ax.plot(steps[n:], restored.full, color="C0", linestyle="--", label="everything restored")
ax.plot(steps[n:], weights_only.full, color="C3", label="weights only")
ax.axvline(n + 0.5, color="black", linewidth=1, linestyle=":")
ax.set_xlabel("training step")
ax.set_ylabel("loss on the whole data set")
ax.set_title(f"Resumed after step {n}")
_ = ax.legend()

# %%
# A scheduler rebuilt with ``last_epoch=``: ``KeyError: 'initial_lr'``
# ---------------------------------------------------------------------
#
# Many scripts do not save the scheduler's state dict: they pass the epoch to resume from to the
# scheduler's constructor, ``last_epoch`` being the index of the last epoch done.
# With an optimizer that has not loaded its state dict, the constructor raises:

checkpoint = torch.load(folder / "checkpoint.pt", map_location="cpu")
model, *_ = start()
fresh_optimizer = torch.optim.Adam(model.parameters(), lr=LR)
with expect_raises(
    KeyError, "param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"
):
    torch.optim.lr_scheduler.StepLR(
        fresh_optimizer, step_size=3, gamma=0.5, last_epoch=checkpoint["epoch"] - 1
    )

# %%
# **A scheduler computes its rates from the rate each param group started with, and keeps it in
# the optimizer, under the key "initial_lr".**
# Built with the default ``last_epoch=-1``, it writes that key into every param group; built with
# ``last_epoch`` of 0 or more, it expects a resumed optimizer that carries it already.
# The optimizer's state dict does carry it, since the scheduler wrote it there before saving:

print("'initial_lr' in a fresh optimizer:", "initial_lr" in fresh_optimizer.param_groups[0])
saved_group = {k: v for k, v in checkpoint["optimizer"]["param_groups"][0].items() if "lr" in k}
print("in the checkpoint's optimizer:", saved_group)
assert "initial_lr" not in fresh_optimizer.param_groups[0]
assert saved_group == {"lr": reference.lrs[INTERRUPTED_AFTER - 1], "initial_lr": LR}

# %%
# The workaround that circulates for the error, setting ``initial_lr`` to the current rate by
# hand, silences it and restarts the schedule: the rebuilt optimizer's rate is the initial one,
# and ``StepLR`` keeps multiplying that rate.
# The learning rates of the resumed epochs, against the uninterrupted run's:


def resumed_lrs(optimizer, scheduler):
    """The learning rate of each resumed epoch (no gradients: the steps move nothing)."""
    lrs = []
    for _ in range(checkpoint["epoch"], EPOCHS):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


for group in fresh_optimizer.param_groups:
    group.setdefault("initial_lr", group["lr"])
patched = torch.optim.lr_scheduler.StepLR(
    fresh_optimizer, step_size=3, gamma=0.5, last_epoch=checkpoint["epoch"] - 1
)
patched_lrs = resumed_lrs(fresh_optimizer, patched)
print(f"{'uninterrupted:':24}", reference.lrs[INTERRUPTED_AFTER:])
print(f"{'initial_lr set by hand:':24}", patched_lrs)
assert patched_lrs == [2 * lr for lr in reference.lrs[INTERRUPTED_AFTER:]]

# %%
# **The fix: load the optimizer's state dict first.**
# It restores the current rate and ``initial_lr``; then either build the scheduler with
# ``last_epoch``, or build it as usual and load its own state dict, as ``resume`` above does
# (the safer choice: a scheduler's state can hold more than its epoch count).
# Both give the uninterrupted run's rates:

model, *_ = start()
optimizer = torch.optim.Adam(model.parameters(), lr=LR)
optimizer.load_state_dict(checkpoint["optimizer"])
with_last_epoch = torch.optim.lr_scheduler.StepLR(
    optimizer, step_size=3, gamma=0.5, last_epoch=checkpoint["epoch"] - 1
)
last_epoch_lrs = resumed_lrs(optimizer, with_last_epoch)
model, optimizer, scheduler, loader = start()
optimizer.load_state_dict(checkpoint["optimizer"])
scheduler.load_state_dict(checkpoint["scheduler"])
state_dict_lrs = resumed_lrs(optimizer, scheduler)
print(f"{'optimizer loaded, then last_epoch=:':38}", last_epoch_lrs)
print(f"{'optimizer and scheduler state dicts:':38}", state_dict_lrs)
assert last_epoch_lrs == state_dict_lrs == reference.lrs[INTERRUPTED_AFTER:]

# %%
# In `PyTorch issue 160626 <https://github.com/pytorch/pytorch/issues/160626>`_, a user reported
# the error as a bug of the scheduler with the hand-set ``initial_lr`` as the workaround, and a
# reply asked for a clearer message; recent releases' message names the likely cause, an
# optimizer state that was not loaded.
# It is still met: in
# `speculators issue 1048 <https://github.com/vllm-project/speculators/issues/1048>`_ (PyTorch
# 2.11), a resume test failed because the optimizer's state was loaded by a distributed helper
# that left ``initial_lr`` out, before a scheduler was rebuilt with ``last_epoch``.

# %%
# On a GPU: checkpoints across devices
# ------------------------------------
#
# A checkpoint written on a GPU stores each tensor with its device, and :func:`torch.load`
# puts it back there unless ``map_location`` says otherwise.
# ``map_location="cpu"`` (or ``map_location=device``) loads it on the device you choose, and
# ``optimizer.load_state_dict`` moves the optimizer's state to the device of each parameter.
# That is why the order matters: **move the model to its device first, then build the optimizer
# and load its state**.
# Moving the model afterwards leaves the optimizer's state behind, and the next step fails.
# Random number generators differ: a generator takes its state as a CPU tensor only, so load a
# checkpoint that holds generator states with ``map_location="cpu"``, as ``resume`` above does.
# The section also restores a ``torch.amp.GradScaler`` whose scale has backed off after overflows.
# The scaler skips every step whose float16 gradients overflow, and halves its scale: here the first
# two steps overflow at its initial scale, so Adam has no state to save before the third; one more
# overflow is then forced by an infinite loss.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.

with cuda_section(device, "a GPU checkpoint with optimizer and scaler, resumed elsewhere") as live:
    if live:
        gpu_model = nn.Linear(8, 1).to(device)
        gpu_optimizer = torch.optim.Adam(gpu_model.parameters(), lr=LR)
        scaler = torch.amp.GradScaler("cuda")

        def amp_step(factor=1.0):
            gpu_optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                loss = nn.functional.mse_loss(gpu_model(inputs), targets) * factor
            scaler.scale(loss).backward()
            scaler.step(gpu_optimizer)  # skipped when the scaled gradients overflow
            scaler.update()

        scales = []
        while not gpu_optimizer.state and len(scales) < 10:  # Adam's state: from its first step
            scales.append(scaler.get_scale())
            amp_step()
        print(f"scale of each step until Adam's first step: {scales}")
        assert scales == [65536.0, 32768.0, 16384.0] and gpu_optimizer.state
        amp_step(float("inf"))  # then an overflow, forced
        gpu_checkpoint = {
            "model": gpu_model.state_dict(),
            "optimizer": gpu_optimizer.state_dict(),
            "scaler": scaler.state_dict(),
        }
        torch.save(gpu_checkpoint, folder / "gpu.pt")

        as_saved = torch.load(folder / "gpu.pt")
        on_cpu = torch.load(folder / "gpu.pt", map_location="cpu")
        print("exp_avg without map_location:", as_saved["optimizer"]["state"][0]["exp_avg"].device)
        print("exp_avg with map_location='cpu':", on_cpu["optimizer"]["state"][0]["exp_avg"].device)
        assert as_saved["optimizer"]["state"][0]["exp_avg"].is_cuda
        assert on_cpu["optimizer"]["state"][0]["exp_avg"].device.type == "cpu"
        with expect_raises(TypeError, "RNG state must be a torch.ByteTensor"):
            torch.set_rng_state(torch.get_rng_state().to(device))  # a generator state on the GPU

        moved_first = nn.Linear(8, 1).to(device)  # the model first, on its device ...
        moved_first.load_state_dict(on_cpu["model"])
        moved_first_optimizer = torch.optim.Adam(moved_first.parameters(), lr=LR)  # ... then this
        moved_first_optimizer.load_state_dict(on_cpu["optimizer"])
        state_device = moved_first_optimizer.state[moved_first.weight]["exp_avg"].device
        print("after load_state_dict, exp_avg is on:", state_device)
        assert state_device == moved_first.weight.device

        restored_scaler = torch.amp.GradScaler("cuda")
        restored_scaler.load_state_dict(on_cpu["scaler"])
        print(
            f"scale: {scaler.get_scale()} saved, {restored_scaler.get_scale()} restored, ", end=""
        )
        print(f"{torch.amp.GradScaler('cuda').get_scale()} in a fresh GradScaler")
        assert restored_scaler.get_scale() == scaler.get_scale() < 65536.0

        late = nn.Linear(8, 1)  # built on the CPU ...
        late.load_state_dict(on_cpu["model"])
        late_optimizer = torch.optim.Adam(late.parameters(), lr=LR)
        late_optimizer.load_state_dict(on_cpu["optimizer"])  # ... state on the CPU too
        late.to(device)  # moves the parameters, not the optimizer's state
        nn.functional.mse_loss(late(inputs), targets).backward()
        with expect_raises(RuntimeError, "device"):
            late_optimizer.step()

# %%
# Changed in PyTorch 2.7: the dropout masks of a seeded run
# ---------------------------------------------------------
#
# The losses and weights printed on this page depend on the release.
# Up to PyTorch 2.6, builds of PyTorch that include Intel MKL drew dropout's masks on the CPU from
# MKL's generator, seeded with one number from PyTorch's generator; since PyTorch 2.7 every build
# draws one number per element from PyTorch's generator, as builds without MKL (for Arm
# processors, for example) already did (see :ref:`functional-dropout`).
# **On a build with MKL, a seeded run with dropout takes other steps on 2.6 and on 2.7, and a
# checkpoint saved with one resumes with other masks under the other; on one release, restoring
# every generator's state repeats the run exactly, as shown above.**

# %%
# A real-world report
# -------------------
#
# In `NVlabs/stylegan2-ada-pytorch issue #108
# <https://github.com/NVlabs/stylegan2-ada-pytorch/issues/108>`_, a user read the training code
# of this widely used GAN and asked why resuming from a checkpoint restored the networks but not
# the Adam optimizers' states, and whether that harmed the resumed training.
# A later comment made the point this page measured: with fresh optimizer states, the first
# update after resuming moves every weight by the same amount, and only the direction differs.
#
# Takeaway
# --------
#
# **Checkpoint the whole run: the state dicts of the model, optimizer, scheduler and gradient
# scaler, the random number generators' states and the epoch; restore them all after building
# the objects as before, with the model on its device before the optimizer loads its state.**
# A checkpoint with the weights alone is for inference or fine-tuning, not for resuming.
# See also :ref:`state-dict-prefix` for checkpoints written from a wrapped model.

workdir.cleanup()
