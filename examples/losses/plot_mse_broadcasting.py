"""
.. _mse-broadcasting:

Prediction ``(N, 1)``, target ``(N,)``: a broadcast loss
========================================================

A regression model usually ends in a linear layer with one output, so its prediction has the
shape ``(N, 1)``; the targets, read from a column of a table, often have the shape ``(N,)``.
:class:`~torch.nn.MSELoss` and :class:`~torch.nn.L1Loss` do not refuse the pair: they broadcast
it to an ``(N, N)`` matrix that compares every prediction with every target.
PyTorch warns once, the loss value is wrong, and the model learns to predict the mean of the
targets.

.. admonition:: What you will learn

   * what shape two tensors of shapes ``(N, 1)`` and ``(N,)`` broadcast to, and which loss
     :class:`~torch.nn.MSELoss` then computes;
   * why a model trained on that loss learns the mean of the targets;
   * how to make the shapes match, and why ``squeeze()`` without a dimension is not the fix.

.. admonition:: Prerequisites

   Broadcasting of tensor shapes; :ref:`backward-step-zero-grad` (one training step);
   :ref:`loss-targets-and-kl` (what else :class:`~torch.nn.MSELoss` does with its target).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# Sixty-four points on the line ``y = 2x + 1``, with some noise, and a linear model with one input
# and one output.
# The inputs have the shape ``(64, 1)`` that :class:`~torch.nn.Linear` expects, so the prediction
# is ``(64, 1)``; the targets are a plain vector of 64 values.
# The loss is computed, with a warning:
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn

from torch_pitfalls import expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

n = 64
x = torch.linspace(-2, 2, n, device=device).unsqueeze(1)  # (64, 1): one feature per sample
noise = 0.3 * torch.randn(n).to(device)  # drawn on the CPU: the same values on every device
y = 2 * x.squeeze(1) + 1 + noise  # (64,): a column of targets
model = nn.Linear(1, 1).to(device)
prediction = model(x)
print("prediction:", tuple(prediction.shape), " target:", tuple(y.shape))

with expect_warns(UserWarning, "different to the input size"):
    loss_wrong = nn.MSELoss()(prediction, y)
loss_right = nn.MSELoss()(prediction, y.unsqueeze(1))
print(f"MSELoss(prediction, y):              {loss_wrong.item():.4f}")
print(f"MSELoss(prediction, y.unsqueeze(1)): {loss_right.item():.4f}")
assert loss_wrong > 1.5 * loss_right

# %%
# The two values differ, and training on the first one goes wrong.
# The same model, from the same initial weights, trained for 200 steps of plain gradient descent
# on each loss:

init = {name: p.detach().clone() for name, p in model.named_parameters()}


def train(target, steps=200):
    """Train a fresh copy of the model on ``MSELoss()(model(x), target)``; return it and losses."""
    fitted = nn.Linear(1, 1).to(device)
    fitted.load_state_dict(init)
    optimizer = torch.optim.SGD(fitted.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.MSELoss()(fitted(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return fitted, losses


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the warning was shown above; a training loop shows it once
    model_wrong, losses_wrong = train(y)
model_right, losses_right = train(y.unsqueeze(1))
slope_wrong, bias_wrong = model_wrong.weight.item(), model_wrong.bias.item()
slope_right, bias_right = model_right.weight.item(), model_right.bias.item()
y_mean = y.mean().item()
print(f"target (N,):   y = {slope_wrong:.4f}·x + {bias_wrong:.4f}")
print(f"target (N, 1): y = {slope_right:.4f}·x + {bias_right:.4f}")
print(f"mean of the targets: {y_mean:.4f}")
assert abs(slope_wrong) < 0.01 and abs(bias_wrong - y_mean) < 0.01
assert abs(slope_right - 2) < 0.1 and abs(bias_right - 1) < 0.1
assert losses_wrong[-1] < losses_wrong[0]

# %%
# With the broadcast target, the slope went to zero and the bias to the mean of the targets:
# the model predicts the same value, the mean, for every input.
# With matching shapes it found the line.
# The training losses do not give it away: the broadcast loss decreased too, and flattened out at
# a value that looks like any other.

plt.rcParams.update({"font.size": 12})
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
grid = torch.linspace(-2, 2, 2, device=device).unsqueeze(1)
with torch.no_grad():
    line_wrong = model_wrong(grid).squeeze(1).cpu()
    line_right = model_right(grid).squeeze(1).cpu()
ax.scatter(x.squeeze(1).cpu(), y.cpu(), s=14, color="gray", label="data")
ax.plot(grid.squeeze(1).cpu(), line_right, linewidth=2.5, label="target (N, 1): same shape")
ax.plot(
    grid.squeeze(1).cpu(), line_wrong, linewidth=2.5, linestyle="--", label="target (N,): broadcast"
)
ax.set_title("Linear fit after 200 steps")
ax.set_xlabel("x")
ax.set_ylabel("y")
_ = ax.legend()
assert abs(line_wrong[1] - line_wrong[0]) < 0.05 < 4 < line_right[1] - line_right[0]

# %%
# Why
# ---
#
# **Two tensors of shapes** ``(N, 1)`` **and** ``(N,)`` **broadcast to** ``(N, N)``.
# Broadcasting aligns shapes from the right: the target's ``N`` lines up with the prediction's
# ``1``, and the prediction's ``N`` with a missing dimension, so both are expanded to ``(N, N)``.
# Element ``[i, j]`` compares prediction ``i`` with target ``j``, and the mean reduction averages
# all ``N²`` pairs:

difference = prediction - y
print("shape of prediction - y:", tuple(difference.shape))
pairs = (difference**2).mean()
print(
    f"mean over all {n}×{n} pairs: {pairs.item():.4f}  (the MSELoss above: {loss_wrong.item():.4f})"
)
assert difference.shape == (n, n)
torch.testing.assert_close(loss_wrong, pairs)

# %%
# **Each prediction is compared with every target, so the best it can do is their mean.**
# Averaged over ``j``, ``(p_i − y_j)²`` is ``(p_i − ȳ)² + Var(y)``, where ``ȳ`` is the mean of
# the targets and ``Var(y)`` their variance (dividing by ``N``).
# The broadcast loss is therefore the mean of ``(p_i − ȳ)²`` plus a constant: it measures how far
# the predictions are from the mean of the targets, and nothing else.
# Its minimum, ``Var(y)``, is reached by predicting ``ȳ`` everywhere, which is where training went:

decomposition = ((prediction - y.mean()) ** 2).mean() + y.var(correction=0)
print(f"mean of (p - mean(y))² + Var(y): {decomposition.item():.4f}")
print(f"Var(y): {y.var(correction=0).item():.4f}  final broadcast loss: {losses_wrong[-1]:.4f}")
torch.testing.assert_close(loss_wrong, decomposition)
torch.testing.assert_close(losses_wrong[-1], y.var(correction=0).item(), rtol=1e-4, atol=0)

# %%
# :class:`~torch.nn.L1Loss` broadcasts the same way, and warns the same way:

with expect_warns(UserWarning, "different to the input size"):
    nn.L1Loss()(prediction, y)

# %%
# **The warning is easy to miss.**
# PyTorch issues it with :func:`warnings.warn`, and Python's default filter shows a warning once
# per place in the code that issues it: a training loop shows it at its first step, in the middle
# of the start-up output, and never again.
# Here are three steps' losses under the default filter:

with warnings.catch_warnings(record=True) as shown:
    warnings.simplefilter("default")
    for _ in range(3):
        nn.MSELoss()(model(x), y)
print(f"warnings shown in 3 steps: {len(shown)}")
assert len(shown) == 1

# %%
# The fix
# -------
#
# **Give the loss a prediction and a target of the same shape.**
# Add the missing dimension to the target with ``y.unsqueeze(1)`` (or ``y.view_as(prediction)``),
# or remove it from the prediction with ``prediction.squeeze(1)``.
# Either way there is no warning, and the loss is the mean over the ``N`` samples:

with warnings.catch_warnings():
    warnings.simplefilter("error")  # any warning here would fail the build
    loss_unsqueezed = nn.MSELoss()(prediction, y.unsqueeze(1))
    loss_squeezed = nn.MSELoss()(prediction.squeeze(1), y)
by_hand = ((prediction.squeeze(1) - y) ** 2).mean()
print(
    f"target unsqueezed: {loss_unsqueezed.item():.4f}  prediction squeezed: "
    f"{loss_squeezed.item():.4f}  by hand: {by_hand.item():.4f}"
)
torch.testing.assert_close(loss_unsqueezed, by_hand)
torch.testing.assert_close(loss_squeezed, by_hand)

# %%
# Name the dimension: ``squeeze(1)``, not ``squeeze()``.
# Without a dimension, :meth:`~torch.Tensor.squeeze` removes every dimension of size 1, and a
# last batch that holds a single sample loses its batch dimension too, so the shapes disagree
# again (here a warning about a 0-dimensional input):

last_prediction, last_target = model(x[:1]), y[:1]
squeezed_all, squeezed_one = last_prediction.squeeze(), last_prediction.squeeze(1)
print(f"squeeze(): {tuple(squeezed_all.shape)}  squeeze(1): {tuple(squeezed_one.shape)}  ", end="")
print(f"target: {tuple(last_target.shape)}")
assert last_prediction.squeeze().shape == () and last_prediction.squeeze(1).shape == (1,)
with expect_warns(UserWarning, r"input size \(torch.Size\(\[\]\)\)"):
    nn.MSELoss()(last_prediction.squeeze(), last_target)

# %%
# A real-world report
# -------------------
#
# In `PyTorch issue #16045 <https://github.com/pytorch/pytorch/issues/16045>`_, a user fitted a
# plain linear regression, ``nn.Linear`` on two features, whose targets were a vector while the
# model's output had a trailing dimension of one.
# The loss never came near the optimum of this convex problem and the fitted coefficients were
# wrong, without any error; reshaping the targets to a column fixed it.
# The reporter asked for an error.
# A contributor replied that popular training loops pass exactly these shapes, a data loader's
# ``(N,)`` targets next to a model's ``(N, 1)`` output, so that an error would break them, and
# proposed a warning instead.
# A warning is what the installed PyTorch gives, as shown above.

# %%
# Takeaway
# --------
#
# **An** ``(N, 1)`` **prediction against an** ``(N,)`` **target is an** ``(N, N)`` **loss: it
# compares every prediction with every target and trains the model to predict their mean.**
# Treat the warning "Using a target size … that is different to the input size" as an error; make
# the shapes equal with ``unsqueeze(1)``, ``view_as`` or ``squeeze(1)``, never with a bare
# ``squeeze()``.
# See also :ref:`loss-targets-and-kl` for the gradient :class:`~torch.nn.MSELoss` sends to its
# target.
