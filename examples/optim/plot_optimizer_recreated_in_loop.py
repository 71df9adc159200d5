"""
.. _optimizer-recreated-in-loop:

Building the optimizer inside the training loop
===============================================

``optimizer = torch.optim.Adam(model.parameters(), lr=...)`` ends up inside the loop: in the
function that runs one training step, or at the top of each epoch, often to set a new learning
rate.
Training runs without an error and the loss comes down at first, then stops improving, or
improves more slowly than the same optimizer should allow.
Each new optimizer starts without the state the previous one built up: Adam's moving averages and
step count, SGD's momentum.

.. admonition:: What you will learn

   * what state :class:`~torch.optim.Adam` and :class:`~torch.optim.SGD` with momentum keep
     between steps, and where it is;
   * what one step of a freshly built optimizer does: Adam moves every weight by the learning
     rate, SGD with momentum is plain SGD;
   * how to change the learning rate, or the parameters, of the optimizer you already have.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (the training step), and Adam and SGD with momentum as update
   rules.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A small regression network trained on one fixed batch of 128 samples for 60 steps with
# :class:`~torch.optim.Adam` at a learning rate of 0.03.
# The same loop twice: with the optimizer built once before the loop, and built again at the top
# of every step.
import copy

import torch
from torch import nn

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.randn(128, 8)  # drawn on the CPU: the same data on every device
y = torch.tanh(x @ torch.randn(8, 4) / 2) @ torch.randn(4, 1) + 0.1 * torch.randn(128, 1)
x, y = x.to(device), y.to(device)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
STEPS, LR = 60, 0.03


def flat(tensors):
    return torch.cat([t.detach().flatten() for t in tensors])


def train(make_optimizer, *, rebuild_every_step):
    """Train a copy of the model.

    Returns the loss of every step, the last optimizer and the last step's update of every weight.
    """
    net = copy.deepcopy(model)
    optimizer = make_optimizer(net.parameters())
    losses = []
    for _ in range(STEPS):
        if rebuild_every_step:
            optimizer = make_optimizer(net.parameters())
        before = flat(net.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, optimizer, flat(net.parameters()) - before


def adam(params):
    return torch.optim.Adam(params, lr=LR)


adam_once, adam_last, last_update_once = train(adam, rebuild_every_step=False)
adam_rebuilt, adam_rebuilt_last, last_update_rebuilt = train(adam, rebuild_every_step=True)
print("step:           ", list(range(0, STEPS, 10)))
print("built once:     ", [round(loss, 4) for loss in adam_once[::10]])
print("built each step:", [round(loss, 4) for loss in adam_rebuilt[::10]])
half = STEPS // 2
print(f"lowest loss, steps 0-{half - 1}: once {min(adam_once[:half]):.4f}, ", end="")
print(f"rebuilt {min(adam_rebuilt[:half]):.4f}")
print(f"lowest loss, steps {half}-{STEPS - 1}: once {min(adam_once[half:]):.4f}, ", end="")
print(f"rebuilt {min(adam_rebuilt[half:]):.4f}")
assert min(adam_rebuilt[half:]) > 0.9 * min(adam_rebuilt[:half])  # no progress any more
assert min(adam_once[half:]) < 0.5 * min(adam_once[:half])
assert adam_once[-1] < adam_rebuilt[-1] / 10

# %%
# **Rebuilt at every step, Adam stops making progress after a few dozen steps, at a loss many
# times higher than the one the same optimizer reaches when it is built once.**
# Nothing fails; a learning rate that "does not work" is the usual conclusion.
#
# Why
# ---
#
# An optimizer is more than its hyperparameters.
# Adam keeps, for every parameter, a moving average of the gradient (``exp_avg``), one of its
# square (``exp_avg_sq``) and a step count, in ``optimizer.state[parameter]``; it creates them at
# its first step.
# The last optimizer of each run, after its last step:

first_weight = next(iter(adam_last.state))
once_state = adam_last.state[first_weight]
rebuilt_state = adam_rebuilt_last.state[next(iter(adam_rebuilt_last.state))]
print("state kept for each parameter:", sorted(once_state))
print(f"built once: step {float(once_state['step']):.0f} | rebuilt: step ", end="")
print(f"{float(rebuilt_state['step']):.0f}")
assert float(once_state["step"]) == STEPS and float(rebuilt_state["step"]) == 1

# %%
# A fresh Adam has seen one gradient ``g``.
# Its bias correction divides the first averages by ``1 − β₁`` and ``1 − β₂``, which gives back
# ``g`` and ``g²``, so its first update is ``lr · g / (|g| + eps)``: **every weight moves by
# the learning rate, in the direction opposite to its gradient, whatever the size of the
# gradient.**
# One step of a fresh Adam from the model's initial weights, against that formula:

net = copy.deepcopy(model)
optimizer = adam(net.parameters())
nn.functional.mse_loss(net(x), y).backward()
gradient, before = flat(p.grad for p in net.parameters()), flat(net.parameters())
optimizer.step()
moved = flat(net.parameters()) - before
torch.testing.assert_close(moved, -LR * gradient / (gradient.abs() + 1e-8), rtol=1e-4, atol=1e-7)
at_lr = ((moved.abs() - LR).abs() < 0.01 * LR).sum().item()
print(f"{at_lr} of {moved.numel()} weights moved by the learning rate {LR} (within 1%)")
assert at_lr == moved.numel()

# %%
# Rebuilt at every step, Adam is this update every time: a step of fixed size per weight.
# Near a minimum the gradients shrink, but the steps do not, so the weights jump over the minimum
# and back.
# The size of each weight's update at the last step, and the last losses of the rebuilt run:

print(
    f"median |update| at step {STEPS - 1}: built once {last_update_once.abs().median():.5f}, ",
    end="",
)
print(f"rebuilt {last_update_rebuilt.abs().median():.5f}")
print("last losses, rebuilt:", [round(loss, 4) for loss in adam_rebuilt[-6:]])
assert ((last_update_rebuilt.abs() - LR).abs() < 0.01 * LR).all()
assert last_update_once.abs().median() < LR / 10
assert (
    abs(adam_rebuilt[-1] - adam_rebuilt[-3]) < 1e-4
    and abs(adam_rebuilt[-1] - adam_rebuilt[-2]) > 1e-2
)

# %%
# **The rebuilt run bounces between two points: its losses alternate between two values.**
# Built once, Adam's average gradient shrinks relative to its average squared gradient as the
# gradient's sign starts to flip, and its steps get smaller and smaller: that is the adaptive step
# size the rebuilt optimizer never gets.
#
# SGD with momentum keeps a velocity for every parameter, ``momentum_buffer``.
# PyTorch's SGD starts it at the first gradient it sees, so a freshly built SGD with momentum takes
# a plain SGD step.
# Rebuilt at every step, it *is* plain SGD: the runs are identical, to the last bit.


def sgd_momentum(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def sgd_plain(params):
    return torch.optim.SGD(params, lr=0.1)


sgd_once, sgd_last, _ = train(sgd_momentum, rebuild_every_step=False)
sgd_rebuilt, _, _ = train(sgd_momentum, rebuild_every_step=True)
plain, _, _ = train(sgd_plain, rebuild_every_step=False)
print("state kept for each parameter:", sorted(next(iter(sgd_last.state.values()))))
print(
    f"final loss, SGD with momentum: built once {sgd_once[-1]:.4f}, rebuilt {sgd_rebuilt[-1]:.4f}"
)
print("rebuilt SGD with momentum is plain SGD:", sgd_rebuilt == plain)
assert sgd_rebuilt == plain and sgd_once[-1] < sgd_rebuilt[-1] / 2

# %%
# The four runs on a logarithmic scale:

import matplotlib.pyplot as plt

plt.rcParams.update({"font.size": 12})
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
ax.plot(adam_once, color="C0", label="Adam, built once")
ax.plot(adam_rebuilt, color="C0", linestyle="--", label="Adam, built every step")
ax.plot(sgd_once, color="C2", label="SGD momentum, built once")
ax.plot(sgd_rebuilt, color="C2", linestyle="--", label="SGD momentum, built every step")
ax.set_yscale("log")
ax.set_xlabel("training step")
ax.set_ylabel("training loss")
ax.set_title("The same optimizer, built once or at every step")
_ = ax.legend()

# %%
# The fix
# -------
#
# **Build the optimizer once, after the model is on its device and before the loop, and keep
# using that object.**
# The training function takes the optimizer as an argument instead of building one.
# That is the "built once" run above.
#
# Rebuilt every epoch to lower the learning rate
# ----------------------------------------------
#
# The rebuild is most often there on purpose: to train each epoch at a lower learning rate,
# ``optimizer = Adam(model.parameters(), lr=LR * 0.5 ** epoch)`` at the top of the epoch.
# The learning rates are the intended ones, but each epoch starts again without Adam's state,
# with a first step that moves every weight by the learning rate.
# The same schedule without a rebuild is :class:`~torch.optim.lr_scheduler.ExponentialLR`
# stepped once per epoch (or writing ``group["lr"]`` for each of ``optimizer.param_groups``).
# Four epochs of four mini-batches each; for every epoch, its learning rate, the median size of its
# first update divided by that rate, and Adam's step count at its end:

EPOCHS, BATCHES = 4, 4


def train_epochs(*, rebuild_each_epoch):
    net = copy.deepcopy(model)
    shuffling = torch.Generator().manual_seed(0)
    optimizer = adam(net.parameters())
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    rates, first_moves, steps = [], [], []
    for epoch in range(EPOCHS):
        if rebuild_each_epoch:
            optimizer = torch.optim.Adam(net.parameters(), lr=LR * 0.5**epoch)
        rates.append(optimizer.param_groups[0]["lr"])
        order = torch.randperm(len(x), generator=shuffling).to(device)
        for i, batch in enumerate(order.chunk(BATCHES)):
            before = flat(net.parameters())
            optimizer.zero_grad()
            nn.functional.mse_loss(net(x[batch]), y[batch]).backward()
            optimizer.step()
            if i == 0:
                move = (flat(net.parameters()) - before).abs().median().item()
                first_moves.append(round(move / rates[-1], 3))
        steps.append(int(optimizer.state[next(net.parameters())]["step"]))
        if not rebuild_each_epoch:
            scheduler.step()
    return rates, first_moves, steps


for rebuild in (True, False):
    rates, first_moves, steps = train_epochs(rebuild_each_epoch=rebuild)
    print("rebuilt each epoch" if rebuild else "one optimizer, ExponentialLR")
    print("  learning rate:             ", rates)
    print("  first update / lr (median):", first_moves)
    print("  Adam's step count:         ", steps)
    if rebuild:
        rebuilt_epochs = rates, first_moves, steps
    else:
        fixed_epochs = rates, first_moves, steps
assert rebuilt_epochs[0] == fixed_epochs[0] == [LR * 0.5**e for e in range(EPOCHS)]
assert rebuilt_epochs[1] == [1.0] * EPOCHS and all(m < 1 for m in fixed_epochs[1][1:])
assert rebuilt_epochs[2] == [BATCHES] * EPOCHS
assert fixed_epochs[2] == [BATCHES * (e + 1) for e in range(EPOCHS)]

# %%
# Same learning rates; but the rebuilt optimizer restarts its count every epoch, and its first
# update of every epoch is a full-size step for every weight, where the kept optimizer's steps
# have already shrunk.
# Whether that costs much depends on the run; it is not the schedule the code asked for.
# To add parameters to an optimizer (a layer unfrozen later) use
# :meth:`~torch.optim.Optimizer.add_param_group` (:ref:`params-not-in-optimizer`); a scheduler
# changes the rate it was given, and belongs after ``optimizer.step()``
# (:ref:`scheduler-step-order`).
# Restarting a script without loading the optimizer's state dict is the same reset
# (:ref:`resume-training`).
#
# A real-world report: "a bug, not a trick"
# -----------------------------------------
#
# A reader of a PyTorch implementation of GlobalPointer, a named-entity recognition model, asked
# why its training script built a new optimizer, at the initial learning rate, at the start of
# every epoch, and whether it was a trick; the author answered that it was a bug
# (`GlobalPointer_pytorch issue 7 <https://github.com/gaohongkui/GlobalPointer_pytorch/issues/7>`_).
# In Vox-Fusion, a dense SLAM system, the authors changed their code to keep their Adam
# optimizers instead of creating new ones for each optimization loop: a new Adam discards its
# accumulated momentum, which made the optimized camera poses oscillate, and keeping the
# optimizers improved their results on the Replica data set
# (`Vox-Fusion issue 31 <https://github.com/zju3dv/Vox-Fusion/issues/31>`_).
#
# Detectors
# ---------
#
# The runtime guard ``TP018`` detects this pitfall in your own code (see :doc:`/detectors`): the
# same parameters stepped again and again by a new optimizer that keeps state, each taking at
# most two steps; the third such optimizer in a row is reported.
# In the source, the opt-in rule ``TP113`` of the static checker (``--enable TP113``) finds an
# optimizer built inside the loop that steps it, leaving alone the loops that build a new model
# each time (one per fold, per task); it is opt-in until it has findings on real code to measure.
# Three steps of the page's training loop, with the optimizer built at every step, then once:


def three_steps(net, rebuild_every_step):
    optimizer = adam(net.parameters())
    for _ in range(3):
        if rebuild_every_step:
            optimizer = adam(net.parameters())
        optimizer.zero_grad()
        nn.functional.mse_loss(net(x), y).backward()
        optimizer.step()


with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP018 "):
        three_steps(copy.deepcopy(model), rebuild_every_step=True)
with guards(language="en") as fixed:
    three_steps(copy.deepcopy(model), rebuild_every_step=False)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP018"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **An optimizer carries state from step to step: build it once, before the loop, and change its
# learning rate through its param groups or a scheduler, never by building a new one.**
# A freshly built Adam moves every weight by the learning rate; a freshly built SGD with momentum
# is plain SGD.
