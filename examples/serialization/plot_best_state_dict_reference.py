"""
.. _best-state-dict-reference:

``best = model.state_dict()`` keeps changing
============================================

A training loop keeps the weights of the epoch with the best validation loss, to restore them at
the end: ``best_state = model.state_dict()`` whenever the validation loss improves, then
``model.load_state_dict(best_state)`` after the last epoch.
The restored model scores exactly what the *last* epoch scored, not the best one, and nothing
warns.
:meth:`~torch.nn.Module.state_dict` returns a new dictionary, but its values are the model's own
parameter and buffer tensors, which every later optimizer step changes in place.

.. admonition:: What you will learn

   * what a state dict holds: references to the live tensors, not copies;
   * why a shallow copy of the dictionary, or ``.cpu()`` on a CPU model, does not help;
   * three ways to keep a snapshot: ``copy.deepcopy``, cloned tensors, or saving at once.

.. admonition:: Prerequisites

   Saving and loading with :func:`torch.save` and :meth:`~torch.nn.Module.load_state_dict`
   (:ref:`torch-load-weights-only`).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A small network trained on 24 noisy samples overfits: its validation loss falls at first, then
# rises.
# The loop remembers the best epoch's state dict, as early-stopping code does, and for comparison
# also keeps a deep copy of it.
import copy
import tempfile
from pathlib import Path

import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x_train, x_val = torch.randn(24, 4), torch.randn(64, 4)  # on the CPU: the same data on every device
y_train = x_train[:, :1] + 0.5 * torch.randn(24, 1)
y_val = x_val[:, :1] + 0.5 * torch.randn(64, 1)
x_train, y_train, x_val, y_val = (t.to(device) for t in (x_train, y_train, x_val, y_val))
model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.005)


def validation_loss(net):
    with torch.no_grad():
        return nn.functional.mse_loss(net(x_val), y_val).item()


losses = []
best_loss, best_epoch = float("inf"), None
for epoch in range(10):
    for _ in range(10):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x_train), y_train).backward()
        optimizer.step()
    losses.append(validation_loss(model))
    if losses[-1] < best_loss:
        best_loss, best_epoch = losses[-1], epoch
        best_state = model.state_dict()  # the pitfall
        best_copy = copy.deepcopy(model.state_dict())  # for comparison

print("validation loss per epoch:", [round(loss, 4) for loss in losses])
print(f"best epoch: {best_epoch}, validation loss {best_loss:.4f}")
model.load_state_dict(best_state)
restored = validation_loss(model)
print(f"after load_state_dict(best_state): {restored:.4f}")
assert best_epoch < len(losses) - 1 and losses[-1] > best_loss
assert restored == losses[-1]

# %%
# **The "best" state restored the last epoch's weights, to the last bit.**
# The deep copy taken at the same moment holds the best epoch's weights:

model.load_state_dict(best_copy)
print(f"after load_state_dict(best_copy): {validation_loss(model):.4f}")
assert validation_loss(model) == best_loss

# %%
# Why
# ---
#
# ``model.state_dict()`` builds a new ordered dictionary each time it is called, which makes it
# look like a snapshot.
# Its values are not copies: each one is the parameter or buffer detached from autograd
# (``requires_grad=False``), a different tensor object that shares its memory.

state = model.state_dict()
weight = model[0].weight
print("a new dictionary each call:", state is not model.state_dict())
print("state['0.weight'] is the Parameter object:", state["0.weight"] is weight)
print("it shares the parameter's memory:", state["0.weight"].data_ptr() == weight.data_ptr())
print("requires_grad:", state["0.weight"].requires_grad)
assert state is not model.state_dict() and state["0.weight"] is not weight
assert state["0.weight"].data_ptr() == weight.data_ptr() and not state["0.weight"].requires_grad

# %%
# The optimizer updates every parameter in place (``param.add_(...)``, under ``no_grad``), so one
# step changes what every state dict taken earlier holds.
# A shallow copy of the dictionary, ``dict(state)`` or ``state.copy()``, copies the keys and the
# references, and changes with it:

shallow = state.copy()
before = state["0.weight"].clone()
optimizer.zero_grad()
nn.functional.mse_loss(model(x_train), y_train).backward()
optimizer.step()
print("the state dict changed with the step:", not torch.equal(state["0.weight"], before))
print("so did its shallow copy:", not torch.equal(shallow["0.weight"], before))
assert not torch.equal(state["0.weight"], before) and torch.equal(shallow["0.weight"], weight)

# %%
# Buffers are in the state dict too, and updated in place as well: a
# :class:`~torch.nn.BatchNorm1d` changes its running statistics in a training-mode forward pass,
# without any optimizer step.

norm = nn.BatchNorm1d(4).to(device)
norm_state = norm.state_dict()
norm(x_train)  # training mode: updates running_mean and running_var in place
print("running_mean in the state dict after one forward:", norm_state["running_mean"])
assert norm_state["running_mean"].abs().sum() > 0  # it was all zeros when the dict was taken

# %%
# The same holds for :meth:`torch.optim.Optimizer.state_dict`: its per-parameter state, Adam's
# moving averages, are the optimizer's own tensors.

optimizer_state = optimizer.state_dict()
live = optimizer.state[weight]["exp_avg"]
print(
    "exp_avg shares memory:", optimizer_state["state"][0]["exp_avg"].data_ptr() == live.data_ptr()
)
assert optimizer_state["state"][0]["exp_avg"].data_ptr() == live.data_ptr()

# %%
# The fix
# -------
#
# **Copy the tensors when you keep a state in memory: copy.deepcopy(model.state_dict()), or
# {name: tensor.detach().clone() for each entry}; or write it to disk at once with torch.save.**
# :func:`copy.deepcopy` copies every tensor (and the dictionary's ``_metadata``, which
# ``load_state_dict`` uses for modules that store versioned state), on the device where it is.
# On a GPU that doubles the model's memory there; to keep the copy in host memory, copy it to the
# CPU explicitly: ``tensor.detach().to("cpu", copy=True)``.
# Not ``tensor.cpu()`` alone: it copies a GPU tensor, but returns a CPU tensor itself, so on a CPU
# the "copy" is again a reference.

snapshots = {
    "copy.deepcopy": copy.deepcopy(model.state_dict()),
    "clone()": {name: t.detach().clone() for name, t in model.state_dict().items()},
    "to('cpu', copy=True)": {
        name: t.detach().to("cpu", copy=True) for name, t in model.state_dict().items()
    },
    "cpu() alone": {name: t.cpu() for name, t in model.state_dict().items()},
}
folder = tempfile.TemporaryDirectory()
path = Path(folder.name) / "best.pt"
torch.save(model.state_dict(), path)  # the values at this moment, on disk
snapshot_loss = validation_loss(model)
print("deepcopy keeps the _metadata attribute:", hasattr(snapshots["copy.deepcopy"], "_metadata"))
print("a dict comprehension does not:", hasattr(snapshots["clone()"], "_metadata"))
assert hasattr(snapshots["copy.deepcopy"], "_metadata")
assert not hasattr(snapshots["clone()"], "_metadata")

for _ in range(5):  # training goes on
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x_train), y_train).backward()
    optimizer.step()
print(f"validation loss: snapshot {snapshot_loss:.4f}, ", end="")
print(f"after 5 more steps {validation_loss(model):.4f}")
snapshots["torch.save"] = torch.load(path, map_location=device)

kept = {}
for name, snapshot in snapshots.items():
    probe = copy.deepcopy(model)
    probe.load_state_dict(snapshot)
    kept[name] = validation_loss(probe) == snapshot_loss
    print(f"{name:22} kept the snapshot: {kept[name]}")
assert validation_loss(model) != snapshot_loss
assert all(
    kept[name] for name in ("copy.deepcopy", "clone()", "to('cpu', copy=True)", "torch.save")
)
assert kept["cpu() alone"] == (device.type != "cpu")
assert (model[0].weight.cpu() is model[0].weight) == (device.type == "cpu")

# %%
# ``cpu() alone`` kept the snapshot only if the model is on a GPU: code that works on the training
# machine and restores the last epoch on a CPU.
#
# A real-world report: the tutorial's best model
# ----------------------------------------------
#
# PyTorch's own tutorials once kept the best weights with ``best_model_wts = model.state_dict()``;
# a 2017 pull request replaced it with a deep copy, because otherwise those weights always
# followed the last epoch (`pytorch/tutorials pull request 188
# <https://github.com/pytorch/tutorials/pull/188>`_).
# The same line was still found in 2025 in PyPOTS, a library for time series with missing values:
# a user noticed that training for more epochs gave different results although the best epoch was
# the same, and traced it to the best model's state dict being a reference; the maintainer agreed
# it was a bug and fixed it with a deep copy
# (`PyPOTS issue 667 <https://github.com/WenjieDu/PyPOTS/issues/667>`_).
#
# Detectors
# ---------
#
# The static checker's opt-in rule ``TP117`` (``--enable TP117``, see :doc:`/detectors`) finds
# this pitfall in your own code: ``best = model.state_dict()``, or a shallow copy of it, kept
# under an ``if`` in a training loop and loaded, saved or returned after the loop. It is opt-in
# until it has findings on real code to measure.
#
# Takeaway
# --------
#
# **A state dict holds references to the model's live tensors: keep a snapshot with
# copy.deepcopy(model.state_dict()) or cloned tensors, or save it to disk at once.**
# A shallow copy of the dictionary, or ``.cpu()`` on a model already on the CPU, is still a
# reference.
# The optimizer's state dict is no different; to resume a run, save both at once
# (:ref:`resume-training`).
