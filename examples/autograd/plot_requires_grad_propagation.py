"""
.. _requires-grad-propagation:

``requires_grad`` propagates through operations
===============================================

Autograd records an operation only when at least one of its inputs requires gradients.
A batch of data does not, a module's parameters do, and so the network's output does.
Setting ``requires_grad=True`` on inputs or targets "to be safe" makes every preprocessing step
part of the graph: more nodes, more memory kept for backward, and gradients that nobody reads.
Freezing every parameter has the opposite effect: nothing requires grad and ``backward()`` fails.

.. admonition:: What you will learn

   * the rule: the output of an operation requires grad if any of its inputs does;
   * what ``requires_grad=True`` on data and targets costs, counted in graph nodes and bytes;
   * what ``backward()`` says when no input of the graph requires grad, and why
     ``loss.requires_grad_()`` only hides it.

.. admonition:: Prerequisites

   Tensors, :class:`torch.nn.Module` and a basic training loop.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.saved_tensors`, :func:`~torch_pitfalls.graph_nodes`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A small regression model, a batch of inputs and a batch of targets.
# The data as loaded does not require grad; every parameter of the model does.
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, graph_nodes, saved_tensors, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(nn.Linear(256, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
inputs = torch.randn(64, 256, device=device) * 3 + 1
targets = torch.randn(64, 1, device=device)
params_require_grad = [p.requires_grad for p in model.parameters()]
print(
    "inputs.requires_grad:", inputs.requires_grad, " targets.requires_grad:", targets.requires_grad
)
print("parameters' requires_grad:", params_require_grad)
assert not inputs.requires_grad and not targets.requires_grad
assert all(params_require_grad)

# %%
# The output of the model requires grad, and so does the loss: both have a
# :attr:`~torch.Tensor.grad_fn`, the node of the graph that produced them.

output = model(inputs)
loss = nn.functional.mse_loss(output, targets)
print("output requires grad:", output.requires_grad, " grad_fn:", type(output.grad_fn).__name__)
print("loss requires grad:  ", loss.requires_grad, " grad_fn:", type(loss.grad_fn).__name__)
assert output.requires_grad and loss.requires_grad
assert type(loss.grad_fn).__name__ == "MseLossBackward0"

# %%
# A common reaction to gradient trouble is to set ``requires_grad=True`` on everything.
# Here the inputs go through a preprocessing step (normalise, then ``tanh``) before the model.
# We record the same forward pass twice: once with the data as loaded, once with
# ``requires_grad=True`` on inputs and targets, counting the graph's nodes and the bytes
# autograd saves for backward.


def preprocess(x):
    return torch.tanh((x - x.mean(dim=0)) / x.std(dim=0))


def forward_loss(x, y):
    with saved_tensors() as saved:
        loss = nn.functional.mse_loss(model(preprocess(x)), y)
    return loss, saved


loss_plain, saved_plain = forward_loss(inputs, targets)
inputs_rg = inputs.clone().requires_grad_()
targets_rg = targets.clone().requires_grad_()
loss_rg, saved_rg = forward_loss(inputs_rg, targets_rg)
nodes_plain, nodes_rg = graph_nodes(loss_plain), graph_nodes(loss_rg)
torch.testing.assert_close(loss_plain, loss_rg)
print(f"data as loaded:      {nodes_plain} nodes, {saved_plain.nbytes} bytes saved for backward")
print(f"requires_grad=True:  {nodes_rg} nodes, {saved_rg.nbytes} bytes saved for backward")
print(f"ratio of saved bytes: {saved_rg.nbytes / saved_plain.nbytes:.2f}")
assert nodes_rg > nodes_plain
assert saved_rg.nbytes > saved_plain.nbytes

# %%
# The loss is the same; the graph is larger and holds more memory until backward frees it.

import matplotlib.pyplot as plt

labels = ["data as loaded", "requires_grad=True\non inputs and targets"]
fig, (ax_bytes, ax_nodes) = plt.subplots(1, 2, figsize=(6, 3.5), layout="constrained")
ax_bytes.bar(labels, [saved_plain.nbytes / 1024, saved_rg.nbytes / 1024], color=["C0", "C3"])
ax_bytes.set_ylabel("saved for backward (KiB)")
ax_bytes.set_title("Memory kept for backward")
ax_nodes.bar(labels, [nodes_plain, nodes_rg], color=["C0", "C3"])
ax_nodes.set_ylabel("nodes in the autograd graph")
ax_nodes.set_title("Graph size")
ax_bytes.tick_params(axis="x", labelsize=8)
ax_nodes.tick_params(axis="x", labelsize=8)

# %%
# Backward then computes gradients for the inputs and targets as well.
# They are as large as the data itself, and no optimizer ever reads them.

loss_plain.backward()
loss_rg.backward()
unused_grad_bytes = inputs_rg.grad.nbytes + targets_rg.grad.nbytes
print("inputs.grad with the data as loaded:", inputs.grad)
print(f"bytes of gradients nobody uses: {unused_grad_bytes}")
assert inputs.grad is None and targets.grad is None
assert unused_grad_bytes == inputs.nbytes + targets.nbytes

# %%
# Why
# ---
#
# **The output of an operation requires grad if any of its inputs does.**
# Only such an operation is recorded: autograd adds a node to the graph and saves the tensors its
# backward formula needs.
# An operation whose inputs are all plain data is computed and forgotten, with no
# :attr:`~torch.Tensor.grad_fn`.

data = torch.ones(3, device=device)
weight = torch.ones(3, device=device, requires_grad=True)
only_data = data * 2
mixed = data * weight
print("data * 2 requires grad:     ", only_data.requires_grad, " grad_fn:", only_data.grad_fn)
print(
    "data * weight requires grad:", mixed.requires_grad, " grad_fn:", type(mixed.grad_fn).__name__
)
assert not only_data.requires_grad and only_data.grad_fn is None
assert mixed.requires_grad and mixed.grad_fn is not None

# %%
# With the data as loaded, the preprocessing ops only see the data, so none of them is recorded.
# The first layer is the first operation with a parameter as input; the graph starts there.
# With ``requires_grad=True`` on the inputs, the mean, the subtraction, the division and ``tanh``
# are all recorded and keep their operands alive.

preprocessed_plain = preprocess(inputs)
preprocessed_rg = preprocess(inputs_rg)
print("grad_fn of preprocess(data as loaded):", preprocessed_plain.grad_fn)
print("grad_fn of preprocess(requires_grad): ", type(preprocessed_rg.grad_fn).__name__)
assert preprocessed_plain.grad_fn is None
assert type(preprocessed_rg.grad_fn).__name__ == "TanhBackward0"

# %%
# The fix
# -------
#
# **Leave data and targets as they are loaded: the parameters already make the loss require
# grad.**
# Set ``requires_grad=True`` on an input only when you want the gradient with respect to that
# input, for example for a saliency map, and then on that input alone.
# :func:`torch.autograd.grad` returns that gradient without touching the parameters' ``.grad``.

saliency_input = inputs.clone().requires_grad_()
(saliency,) = torch.autograd.grad(model(preprocess(saliency_input)).sum(), saliency_input)
print("saliency map shape:", tuple(saliency.shape))
assert saliency.shape == inputs.shape

# %%
# When nothing requires grad
# --------------------------
#
# Freeze every parameter with :meth:`~torch.nn.Module.requires_grad_` and no input of any
# operation requires grad.
# **If nothing in the forward pass requires grad, the loss has no graph and backward raises.**
# (See :ref:`freezing-layers` for freezing only a part of a network.)

frozen = nn.Sequential(nn.Linear(256, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
_ = frozen.requires_grad_(False)
frozen_loss = nn.functional.mse_loss(frozen(inputs), targets)
print("loss.requires_grad:", frozen_loss.requires_grad, " grad_fn:", frozen_loss.grad_fn)
assert not frozen_loss.requires_grad and frozen_loss.grad_fn is None

with expect_raises(RuntimeError, "does not require grad and does not have a grad_fn"):
    frozen_loss.backward()

# %%
# That error is useful: it tells you that no parameter would be trained.
# An input with ``requires_grad=True`` hides it.
# Backward then runs without complaint, fills only the input's gradient, and no parameter gets one.

probe = inputs.clone().requires_grad_()
hidden_loss = nn.functional.mse_loss(frozen(probe), targets)
hidden_loss.backward()
frozen_grads = [p.grad for p in frozen.parameters()]
print("backward ran; parameters' grads:", frozen_grads)
print("input gradient filled:", probe.grad is not None)
assert all(g is None for g in frozen_grads)
assert probe.grad is not None

# %%
# ``loss.requires_grad_()``, an answer often given to the error above, hides it the same way.
# Backward runs on a graph of one node, no parameter gets a gradient, and the optimizer's step
# changes nothing.
# **The error meant that nothing would be trained; silencing it keeps it true.**

optimizer = torch.optim.SGD(frozen.parameters(), lr=0.1)
weights_before = [p.detach().clone() for p in frozen.parameters()]
silenced = nn.functional.mse_loss(frozen(inputs), targets).requires_grad_()
silenced.backward()
optimizer.step()
unchanged = all(torch.equal(a, b) for a, b in zip(weights_before, frozen.parameters(), strict=True))
print("every parameter unchanged by the step:", unchanged)
assert unchanged

# %%
# Detectors
# ---------
#
# The runtime guard ``TP012`` detects this pitfall in your own code (see :doc:`/detectors`): an
# optimizer step while no parameter the optimizer holds has a gradient.
# It is flagged when no parameter requires grad, or when the optimizer has had no gradient in any
# of its first three steps, so that an optimizer with nothing to do on some batches (the head of
# a multi-task model that a batch does not use) is not flagged.
# Under :mod:`torch_pitfalls.guards`, the silenced loss of this page warns, and training a
# layer that was unfrozen is silent.
from torch_pitfalls import PitfallWarning, expect_warns, guards

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP012 "):
        silenced = nn.functional.mse_loss(frozen(inputs), targets).requires_grad_()
        silenced.backward()
        optimizer.step()
_ = frozen[2].requires_grad_(True)  # the layer to train
head_optimizer = torch.optim.SGD(frozen[2].parameters(), lr=0.1)
with guards(language="en") as fixed:
    nn.functional.mse_loss(frozen(inputs), targets).backward()
    head_optimizer.step()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP012"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **An operation is recorded only if one of its inputs requires grad, so parameters are enough.**
# ``requires_grad=True`` on data or targets costs graph nodes, saved memory and unused gradients,
# and it can hide the error that says no parameter is being trained.
