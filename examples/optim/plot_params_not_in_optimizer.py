"""
.. _params-not-in-optimizer:

Parameters the optimizer never sees
===================================

An optimizer updates the parameters it was given when it was built, and no others.
A layer added or replaced afterwards gets gradients at every backward pass, but no optimizer step
ever applies them: it keeps its initial weights while the rest of the model trains, without an
error or a warning.
The opposite worry is unfounded: moving a model with ``model.to(device)`` after building the
optimizer does not disconnect them.

.. admonition:: What you will learn

   * that an optimizer holds references to parameter objects, fixed when it is built;
   * why a head replaced after that is never updated, and how to check which parameters an
     optimizer misses;
   * why ``model.to()`` after building the optimizer is harmless: a module's ``to()`` keeps its
     parameter objects;
   * the fixes: build the optimizer last, or give it the new parameters with
     ``add_param_group``.

.. admonition:: Prerequisites

   :ref:`freezing-layers` (giving an optimizer only some parameters) and
   :ref:`device-agnostic-code` (``Module.to()`` works in place).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small classifier with a ``body`` and a ``head``, and its optimizer.
# Then the task changes to 3 classes, and the head is replaced by a new
# :class:`~torch.nn.Linear`, as when fine-tuning.
# Twenty training steps later, we compare every parameter with its value before training:
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class Classifier(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.body(x))


x = torch.randn(64, 4, device=device)
y = torch.randint(0, 3, (64,), device=device)


def train(model, optimizer, inputs=x, steps=20):
    """Train for ``steps`` steps; return the names of the parameters that changed."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), y).backward()
        optimizer.step()
    return [name for name, p in model.named_parameters() if not torch.equal(p, before[name])]


model = Classifier(classes=10).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.head = nn.Linear(16, 3).to(device)  # replaced after the optimizer was built
changed = train(model, optimizer)
print("parameters changed by training:", changed)
assert changed == ["body.0.weight", "body.0.bias"]

# %%
# **The new head did not move, although it has gradients.**
# Backward computed them, since the head is part of the model and requires grad; no step used them:

head_grad_norm = model.head.weight.grad.norm().item()
print(f"norm of the new head's gradient: {head_grad_norm:.4f}")
assert head_grad_norm > 0

# %%
# Why
# ---
#
# **An optimizer keeps the parameter objects it was given, in its param_groups; it never asks the
# model again.**
# ``model.parameters()`` is evaluated once, when the optimizer is built.
# Replacing ``model.head`` creates new :class:`~torch.nn.Parameter` objects, which the model now
# uses and the optimizer has never heard of; the old head's parameters are still in the optimizer,
# but get no gradient any more, so each step skips them.
# Comparing the objects, by identity, shows which trainable parameters the optimizer misses:


def not_in_optimizer(model, optimizer):
    """Names of the model's trainable parameters that no parameter group holds."""
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    return [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in held]


missing = not_in_optimizer(model, optimizer)
held_count = sum(len(group["params"]) for group in optimizer.param_groups)
print("trainable parameters missing from the optimizer:", missing)
print("parameters the optimizer holds:", held_count, "(body and the old head)")
assert missing == ["head.weight", "head.bias"] and held_count == 4
current = {id(p) for p in model.parameters()}
old_head = [p for group in optimizer.param_groups for p in group["params"] if id(p) not in current]
assert len(old_head) == 2 and all(p.grad is None for p in old_head)  # no gradient: skipped

# %%
# ``model.to()`` is not the problem
# ---------------------------------
#
# A common warning says to move the model to the GPU *before* building the optimizer, or the
# optimizer will hold the CPU copies.
# **A module's to() converts its parameters in place: each keeps its identity, only its data
# changes.**
# We build the optimizer on the CPU, then move the model to this page's device and to ``float64``
# (so that something changes on every device), and train:

model = Classifier(classes=3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ids_before = [id(p) for p in model.parameters()]
model.to(device, torch.float64)
same_objects = [id(p) for p in model.parameters()] == ids_before
first_weight = model.body[0].weight
print("after model.to(): the same parameter objects:", same_objects)
print("the first weight is now:", first_weight.dtype, "on", first_weight.device)
assert same_objects and first_weight.dtype == torch.float64
moved_changed = train(model, optimizer, inputs=x.double())
print("parameters changed by training:", moved_changed)
assert not not_in_optimizer(model, optimizer) and len(moved_changed) == 4

# %%
# ``Module.to()`` keeps the objects unless a flag of ``torch.__future__`` asks it to replace them,
# and that flag is off by default:

overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
print("torch.__future__.get_overwrite_module_params_on_conversion():", overwrite)
assert overwrite is False

# %%
# Moving the model first is still the better habit, for another reason: an optimizer with state
# (momentum, Adam's moments) creates it at its first step, with the dtype and on the device of the
# parameters at that time.
# A model converted after that step leaves the state behind, and the next step fails:

model = Classifier(classes=3).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
train(model, optimizer, steps=1)
model.to(torch.float64)
state_dtype = optimizer.state[model.head.weight]["exp_avg"].dtype
print("Adam's state after model.to(torch.float64):", state_dtype)
assert state_dtype == torch.float32
with expect_raises(RuntimeError, "(?i)float|double"):
    train(model, optimizer, inputs=x.double(), steps=1)

# %%
# The fix
# -------
#
# **Build the optimizer after the model is complete: after replacing layers, after moving it.**
# When a layer must be added to a running optimizer, give it its parameters with
# :meth:`~torch.optim.Optimizer.add_param_group`, which also lets it have its own learning rate:

model = Classifier(classes=10).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.head = nn.Linear(16, 3).to(device)
optimizer.add_param_group({"params": model.head.parameters(), "lr": 0.5})
print("missing after add_param_group:", not_in_optimizer(model, optimizer))
fixed_changed = train(model, optimizer)
print("parameters changed by training:", fixed_changed)
assert not not_in_optimizer(model, optimizer) and optimizer.param_groups[1]["lr"] == 0.5
assert fixed_changed == ["body.0.weight", "body.0.bias", "head.weight", "head.bias"]

# %%
# ``add_param_group`` refuses a parameter that is already in a group, so "adding everything again"
# with ``model.parameters()`` fails; add only the new layer's parameters:

with expect_raises(ValueError, "some parameters appear in more than one parameter group"):
    optimizer.add_param_group({"params": model.parameters()})

# %%
# A real-world report
# -------------------
#
# A user of Microsoft's NNI toolkit pruned a model, then fine-tuned it and found that the
# parameters did not change
# (`microsoft/nni issue #4521 <https://github.com/microsoft/nni/issues/4521>`_, 2022).
# The pruning step had replaced the model's layers with smaller ones, after the optimizer had been
# built; a maintainer explained that the optimizer still held the replaced layers' parameters, and
# building a new optimizer fixed it.
#
# Takeaway
# --------
#
# **An optimizer updates the parameter objects it was given, never the model's current ones:
# build it after the model is final, or add new layers with add_param_group.**
# ``model.to()`` keeps the parameter objects, so moving the model does not disconnect it; a check
# by identity, as in ``not_in_optimizer`` above, finds what an optimizer misses.
