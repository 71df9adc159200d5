"""
.. _batchnorm-running-stats:

BatchNorm running statistics change on every train-mode forward
===============================================================

A BatchNorm layer keeps a running mean and a running variance, and uses them in evaluation mode.
Every forward pass in training mode updates them — no backward pass, no optimizer step needed,
and neither :class:`torch.no_grad` nor frozen parameters stop it.
A validation loop that forgets :meth:`model.eval() <torch.nn.Module.eval>` therefore changes the
model it measures: the running statistics drift towards the validation data.

.. admonition:: What you will learn

   * that ``running_mean`` and ``running_var`` are buffers, updated by the forward pass;
   * the update rule, and which switches do *not* stop it;
   * how to keep them fixed with :meth:`~torch.nn.Module.eval`, and how to recompute them.

.. admonition:: Prerequisites

   :ref:`train-eval-mode` (what BatchNorm computes in each mode).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A model whose input goes through :class:`~torch.nn.BatchNorm1d` with three channels.
# We "train" it on 40 batches whose channel means are 0, 1 and −1, and record the running mean
# after each batch.
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

train_means = torch.tensor([0.0, 1.0, -1.0], device=device)
val_means = train_means + 2.0  # the validation data comes from a shifted distribution
train_batches = [torch.randn(64, 3, device=device) + train_means for _ in range(40)]
val_batches = [3 * torch.randn(64, 3, device=device) + val_means for _ in range(40)]

model = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 2)).to(device)
bn = model[0]
history_train = []
for batch in train_batches:
    _ = model(batch)  # the rest of the training step does not matter here
    history_train.append(bn.running_mean.clone())
mean_after_training = bn.running_mean.clone()
trained_state = {name: value.clone() for name, value in model.state_dict().items()}
print("running_mean after training:", mean_after_training)
torch.testing.assert_close(mean_after_training, train_means, atol=0.2, rtol=0)

# %%
# Now a validation loop that uses :class:`torch.no_grad` but forgets
# :meth:`~torch.nn.Module.eval`.
# We record the running mean again, and compare with the same loop in evaluation mode.

probe = train_batches[0]
_ = model.eval()
with torch.no_grad():
    prediction_before = model(probe)

history_val_train_mode = []
_ = model.train()
with torch.no_grad():
    for batch in val_batches:
        _ = model(batch)
        history_val_train_mode.append(bn.running_mean.clone())
mean_after_validation = bn.running_mean.clone()
print("running_mean after validation in train mode:", mean_after_validation)
torch.testing.assert_close(mean_after_validation, val_means, atol=0.3, rtol=0)

# %%
# The running mean has moved from the training means to the validation means.
# **The validation loop changed the model: the same input now gets a different prediction.**

_ = model.eval()
with torch.no_grad():
    prediction_after = model(probe)
prediction_changed = not torch.allclose(prediction_before, prediction_after)
print("prediction for the same batch changed:", prediction_changed)
assert prediction_changed

# %%
# The same validation loop in evaluation mode leaves the running statistics where they were.

_ = model.load_state_dict(trained_state)  # start again from the trained state
history_val_eval_mode = []
_ = model.eval()
with torch.no_grad():
    for batch in val_batches:
        _ = model(batch)
        history_val_eval_mode.append(bn.running_mean.clone())
eval_mode_kept = all(torch.equal(m, mean_after_training) for m in history_val_eval_mode)
print("running_mean unchanged by validation in eval mode:", eval_mode_kept)
assert eval_mode_kept

# %%
# Batch by batch:

import matplotlib.pyplot as plt

n_train = len(history_train)
train_curve = torch.stack(history_train).cpu()
val_train_curve = torch.stack(history_val_train_mode).cpu()
val_eval_curve = torch.stack(history_val_eval_mode).cpu()
val_index = range(n_train, n_train + len(val_batches))
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
for channel in range(3):
    color = f"C{channel}"
    ax.plot(range(n_train), train_curve[:, channel], color=color, label=f"channel {channel}")
    ax.plot(val_index, val_train_curve[:, channel], color=color)
    ax.plot(val_index, val_eval_curve[:, channel], color=color, linestyle="--")
ax.axvline(n_train - 0.5, color="grey", linewidth=0.8)
ax.set_xlabel("batch index (training, then validation)")
ax.set_ylabel("running_mean")
ax.set_title("Validation in train mode (solid) vs eval mode (dashed)")
_ = ax.legend(loc="upper left", fontsize="small")

# %%
# Why
# ---
#
# ``running_mean`` and ``running_var`` are **buffers**, not parameters: tensors registered with
# :meth:`~torch.nn.Module.register_buffer`, saved in the state dict and moved by
# :meth:`~torch.nn.Module.to`, but not returned by :meth:`~torch.nn.Module.parameters`.
# No optimizer touches them.
# (:ref:`register-buffer` shows how to give your own modules such tensors.)

bn = nn.BatchNorm1d(3).to(device)
buffer_names = [name for name, _ in bn.named_buffers()]
parameter_names = [name for name, _ in bn.named_parameters()]
print("buffers:", buffer_names)
print("parameters:", parameter_names)
assert buffer_names == ["running_mean", "running_var", "num_batches_tracked"]
assert parameter_names == ["weight", "bias"]
assert set(buffer_names) <= set(bn.state_dict())

# %%
# **In training mode, the forward pass itself updates the buffers**, with
# ``running = (1 - momentum) * running + momentum * batch_statistic`` (``momentum`` is 0.1 by
# default).
# The variance that goes into the running average is the unbiased one, divided by ``n - 1``.

batch = val_batches[0]
old_mean, old_var = bn.running_mean.clone(), bn.running_var.clone()
_ = bn(batch)
expected_mean = (1 - bn.momentum) * old_mean + bn.momentum * batch.mean(dim=0)
expected_var = (1 - bn.momentum) * old_var + bn.momentum * batch.var(dim=0, unbiased=True)
print("momentum:", bn.momentum, " batches tracked:", int(bn.num_batches_tracked))
torch.testing.assert_close(bn.running_mean, expected_mean)
torch.testing.assert_close(bn.running_var, expected_var)
assert bn.momentum == 0.1 and int(bn.num_batches_tracked) == 1

# %%
# Neither :class:`torch.no_grad` nor parameters with ``requires_grad=False`` change that: they
# concern autograd, and the update is not a gradient step.
# Only the ``training`` flag does.
# This is why a backbone frozen with ``requires_grad_(False)`` keeps changing (see
# :ref:`freezing-layers`).


def running_mean_moves(layer, batch):
    before = layer.running_mean.clone()
    _ = layer(batch)
    return not torch.equal(before, layer.running_mean)


moves_forward_only = running_mean_moves(bn.train(), batch)
with torch.no_grad():
    moves_under_no_grad = running_mean_moves(bn.train(), batch)
_ = bn.requires_grad_(False)
moves_when_frozen = running_mean_moves(bn.train(), batch)
moves_in_eval = running_mean_moves(bn.eval(), batch)
print("forward only, no backward or step:", moves_forward_only)
print("under torch.no_grad():            ", moves_under_no_grad)
print("parameters requires_grad=False:   ", moves_when_frozen)
print("in eval mode:                     ", moves_in_eval)
assert moves_forward_only and moves_under_no_grad and moves_when_frozen
assert not moves_in_eval

# %%
# The fix
# -------
#
# **Run validation, and any forward pass that must not change the model, in eval() mode.**
# For a frozen backbone that still contains BatchNorm, put those layers in ``eval()`` after every
# ``model.train()``, as :ref:`freezing-layers` shows.
# In evaluation mode even a gradient-recording forward leaves the buffers alone:

model = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 2)).to(device)
_ = model.eval()
buffers_before = {k: v.clone() for k, v in model.state_dict().items() if "running" in k}
for batch in val_batches:
    model(batch).sum().backward()
unchanged = all(torch.equal(model.state_dict()[k], v) for k, v in buffers_before.items())
print("running statistics unchanged after 40 eval-mode batches with backward:", unchanged)
assert unchanged

# %%
# ``momentum=None``: a cumulative average
# ---------------------------------------
#
# With ``momentum=None`` the running statistics are the plain average over all batches seen
# since the last ``reset_running_stats()``, not an exponential moving average.
# After the training batches, the running mean is exactly the mean of the batch means.

cumulative = nn.BatchNorm1d(3, momentum=None).to(device)
for batch in train_batches:
    _ = cumulative(batch)
mean_of_batch_means = torch.stack([b.mean(dim=0) for b in train_batches]).mean(dim=0)
print("running_mean:        ", cumulative.running_mean)
print("mean of batch means: ", mean_of_batch_means)
torch.testing.assert_close(cumulative.running_mean, mean_of_batch_means)

# %%
# Recomputing the statistics
# --------------------------
#
# When the running statistics are spoiled (or were never right, as after averaging weights),
# ``torch.optim.swa_utils.update_bn`` recomputes them: it resets them, runs the model over the
# data you give it in training mode with ``momentum=None``, and restores the momentum and the
# mode.
# Here it repairs the model that the train-mode validation loop spoiled.

spoiled = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 2)).to(device)
with torch.no_grad():
    for batch in val_batches:  # validation in train mode, as in the symptom
        _ = spoiled(batch)
_ = spoiled.eval()
torch.optim.swa_utils.update_bn(train_batches, spoiled)
print("recomputed running_mean:", spoiled[0].running_mean)
print("momentum restored:", spoiled[0].momentum, " still in eval mode:", not spoiled.training)
torch.testing.assert_close(spoiled[0].running_mean, mean_of_batch_means)
assert spoiled[0].momentum == 0.1 and not spoiled.training

# %%
# Takeaway
# --------
#
# **BatchNorm's running statistics are buffers that every train-mode forward updates; only
# eval() stops it, not torch.no_grad() and not requires_grad=False.**
# Validate in ``eval()`` mode, keep frozen BatchNorm layers in ``eval()``, and recompute
# spoiled statistics with ``torch.optim.swa_utils.update_bn``.
