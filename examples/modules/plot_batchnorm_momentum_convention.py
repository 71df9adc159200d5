"""
.. _batchnorm-momentum-convention:

BatchNorm ``momentum`` is the weight of the new batch
=====================================================

The ``momentum`` of :class:`~torch.nn.BatchNorm1d`, :class:`~torch.nn.BatchNorm2d` and the other
BatchNorm layers is the weight that the running statistics give to the *new* batch: PyTorch's
default 0.1 means "10 % new batch, 90 % old value".
Keras and TensorFlow use the same word for the weight of the *old* value: their default 0.99 means
"99 % old value".
A model ported with ``momentum=0.99`` trains normally, because a training forward normalises with
the batch's own statistics, but its running mean and variance are, to 99 %, those of the last
training batch.
In evaluation mode every input is normalised with them, and the model's predictions depend on
which batch happened to come last.

.. admonition:: What you will learn

   * PyTorch's update rule for the running statistics, and Keras's rule with the same word;
   * how a ported 0.99 makes the running statistics follow the last batch, and what evaluation
     mode then computes;
   * how to translate a momentum (``1 - m``), how to find ported values in a model, and how many
     batches each value needs to forget its past.

.. admonition:: Prerequisites

   :ref:`batchnorm-running-stats` (the running statistics are buffers that every train-mode
   forward updates).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A layer ported from a Keras model keeps Keras's ``momentum=0.99``; the same layer with
# PyTorch's default (0.1) serves as the reference.
# Both see the same 200 training batches of 16 samples, drawn from a distribution whose two
# features have means 2 and −1 and standard deviation 1, and we record the running mean after
# each batch.
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

true_mean = torch.tensor([2.0, -1.0], device=device)
batches = [torch.randn(16, 2, device=device) + true_mean for _ in range(200)]


def running_means(momentum):
    """The running mean of a fresh BatchNorm1d(2) after each of the training batches."""
    bn = nn.BatchNorm1d(2, momentum=momentum).to(device)
    history = []
    for batch in batches:
        _ = bn(batch)  # a train-mode forward: the rest of the training step does not matter
        history.append(bn.running_mean.clone())
    return bn, torch.stack(history)


ported, ported_history = running_means(0.99)
default, default_history = running_means(0.1)
last_batch_mean = batches[-1].mean(dim=0)
print("mean of the last batch:        ", last_batch_mean)
print("running_mean, momentum=0.99:   ", ported.running_mean)
print("running_mean, momentum=0.1:    ", default.running_mean)
print("true mean of the data:         ", true_mean)
torch.testing.assert_close(ported.running_mean, last_batch_mean, atol=0.02, rtol=0)

# %%
# **With 0.99 the running mean is the mean of the last batch**, within 0.02: the 199 batches
# before it hardly count.
# The last batch is a sample of 16, so its mean is off the true mean by about
# 1 / √16 = 0.25, and it changes with every batch.
# Over the last 100 batches, the running mean of the ported layer wanders as much as the batch
# means themselves; with 0.1 it stays close to the true mean:

batch_means = torch.stack([batch.mean(dim=0) for batch in batches])
spread_batches = batch_means[100:].std(dim=0)
spread_ported = ported_history[100:].std(dim=0)
spread_default = default_history[100:].std(dim=0)
print("standard deviation over the last 100 batches, per feature:")
print("  batch means:                 ", spread_batches)
print("  running_mean, momentum=0.99: ", spread_ported)
print("  running_mean, momentum=0.1:  ", spread_default)
torch.testing.assert_close(spread_ported, spread_batches, atol=0.02, rtol=0.1)
assert (spread_ported > 3 * spread_default).all()

# %%
# Evaluation mode normalises with these statistics.
# An input equal to the true mean should come out as about zero; after each of the last five
# training batches, the ported layer gives it a different output, off by up to a few tenths:

average_input = true_mean.unsqueeze(0)


def eval_outputs(momentum, last=5):
    bn = nn.BatchNorm1d(2, momentum=momentum).to(device)
    outputs = []
    for i, batch in enumerate(batches):
        _ = bn.train()(batch)
        if i >= len(batches) - last:
            with torch.no_grad():
                outputs.append(bn.eval()(average_input)[0])
    return torch.stack(outputs)


outputs_ported = eval_outputs(0.99)
outputs_default = eval_outputs(0.1)
print("eval output of the average input after each of the last 5 batches:")
print("momentum=0.99:", outputs_ported, sep="\n")
print("momentum=0.1: ", outputs_default, sep="\n")
assert outputs_ported.abs().max() > 2 * outputs_default.abs().max()

# %%
# The running mean over all 200 batches, for the first feature:

import matplotlib.pyplot as plt

steps = range(1, len(batches) + 1)
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
ax.plot(steps, batch_means[:, 0].cpu(), ".", color="grey", markersize=3, label="batch mean")
ax.plot(steps, ported_history[:, 0].cpu(), color="C3", label="momentum=0.99 (ported)")
ax.plot(steps, default_history[:, 0].cpu(), color="C0", label="momentum=0.1 (default)")
ax.axhline(float(true_mean[0]), color="black", linewidth=0.8, linestyle="--")
ax.set_xlabel("training batch")
ax.set_ylabel("running_mean (feature 0)")
ax.set_title("A ported momentum=0.99 follows each batch")
_ = ax.legend(loc="lower right", fontsize="small")

# %%
# Why
# ---
#
# PyTorch updates each running statistic with
# ``running = (1 - momentum) * running + momentum * batch_statistic``: ``momentum`` is the
# weight of the new batch.
# The documentation of the BatchNorm layers warns that this momentum differs from the one of the
# optimizers and from the usual notion of momentum.
# One batch through a fresh layer (running mean 0, running variance 1) shows the rule:

bn = nn.BatchNorm1d(2, momentum=0.99).to(device)
batch = batches[0]
_ = bn(batch)
torch.testing.assert_close(bn.running_mean, 0.01 * 0.0 + 0.99 * batch.mean(dim=0))
torch.testing.assert_close(bn.running_var, 0.01 * 1.0 + 0.99 * batch.var(dim=0))
print("after one batch, running_mean = 0.99 * batch mean:", bn.running_mean)
print("PyTorch's default momentum:", nn.BatchNorm1d(2).momentum)
assert nn.BatchNorm1d(2).momentum == 0.1

# %%
# Keras's `BatchNormalization
# <https://www.tensorflow.org/versions/r2.6/api_docs/python/tf/keras/layers/BatchNormalization>`_
# documents the rule the other way round, with a default of 0.99:
# ``moving = moving * momentum + batch_statistic * (1 - momentum)``.
# Written out in tensor arithmetic, Keras's rule with ``momentum=m`` gives exactly what PyTorch
# computes with ``momentum=1 - m``:


def keras_rule(batches, momentum):
    """Keras's documented update of the moving mean, from its initial value 0."""
    moving = torch.zeros(2, device=device)
    for batch in batches:
        moving = moving * momentum + batch.mean(dim=0) * (1 - momentum)
    return moving


keras_099 = keras_rule(batches, momentum=0.99)
translated, _ = running_means(1 - 0.99)
print("Keras rule, momentum=0.99:     ", keras_099)
print("PyTorch, momentum=1 - 0.99:    ", translated.running_mean)
torch.testing.assert_close(translated.running_mean, keras_099)
torch.testing.assert_close(ported.running_mean, keras_rule(batches, momentum=1 - 0.99))

# %%
# **The same number means opposite things: Keras's 0.99 is PyTorch's 0.01, and PyTorch's 0.1 is
# Keras's 0.9.**
# Nothing checks the value: any ``momentum`` between 0 and 1 is a valid exponential moving
# average.
# And a train-mode forward normalises with the batch's own statistics, so the training outputs,
# and the training loss, are the same whatever the momentum; the mistake only shows in
# evaluation mode.

same_in_training = torch.equal(
    nn.BatchNorm1d(2, momentum=0.99).to(device)(batch), nn.BatchNorm1d(2).to(device)(batch)
)
print("train-mode outputs with momentum 0.99 and 0.1 are equal:", same_in_training)
assert same_in_training

# %%
#
# How long each value remembers
# -----------------------------
#
# After ``k`` batches, the initial value still weighs ``(1 - momentum) ** k``.
# Feeding batches whose features are all 1 into fresh layers (running mean 0) counts how many
# batches each momentum needs to cover half the distance:


def batches_to_half(momentum):
    bn = nn.BatchNorm1d(2, momentum=momentum).to(device)
    ones = torch.ones(4, 2, device=device)
    count = 0
    while bn.running_mean[0] < 0.5:
        _ = bn(ones)
        count += 1
    return count


half_lives = {m: batches_to_half(m) for m in (0.99, 0.1, 0.01)}
for m, count in half_lives.items():
    print(f"momentum={m}: half of the way after {count} batch(es)")
assert half_lives == {0.99: 1, 0.1: 7, 0.01: 69}

# %%
# A ported 0.99 forgets everything after one batch.
# The faithful translation, 0.01, is slow: after 200 batches from a running mean of 0 it has
# covered only ``1 - 0.99 ** 200`` of the way, as Keras's own layer would.
# For a short training run or a fine-tuning with few steps, the cumulative average
# (``momentum=None``) or a recomputation with ``torch.optim.swa_utils.update_bn``, both shown in
# :ref:`batchnorm-running-stats`, give better statistics than either.

covered = float(translated.running_mean[0] / true_mean[0])
print(f"momentum=0.01, after 200 batches: {covered:.2f} of the true mean")
assert abs(covered - (1 - 0.99**200)) < 0.05

# %%
# The fix
# -------
#
# **When porting, translate the momentum: PyTorch's momentum is 1 minus Keras's or TensorFlow's.**
# Keras's default ``momentum=0.99, epsilon=1e-3`` becomes ``momentum=0.01, eps=1e-3`` (Keras's
# epsilon differs from PyTorch's 1e-5 too).


def from_keras_momentum(keras_momentum):
    return round(1.0 - keras_momentum, 6)  # round: 1.0 - 0.99 is 0.010000000000000009


bn = nn.BatchNorm1d(2, momentum=from_keras_momentum(0.99), eps=1e-3).to(device)
print(bn)
print("PyTorch's default eps:", nn.BatchNorm1d(2).eps)
assert bn.momentum == 0.01 and nn.BatchNorm1d(2).eps == 1e-5

# %%
# A momentum above 0.5 makes the running statistics weigh the last batch more than everything
# before it; it is almost always a value ported without translation.
# A short scan of a model finds such layers, and the value can be corrected in place before
# training (or before recomputing the statistics of a converted checkpoint):

BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def ported_momenta(model):
    return {
        name: module.momentum
        for name, module in model.named_modules()
        if isinstance(module, BATCHNORMS) and module.momentum is not None and module.momentum > 0.5
    }


model = nn.Sequential(
    nn.Conv1d(2, 8, 3),
    nn.BatchNorm1d(8, momentum=0.99),  # copied from the Keras model
    nn.ReLU(),
    nn.Conv1d(8, 8, 3),
    nn.BatchNorm1d(8),
).to(device)
suspicious = ported_momenta(model)
print("BatchNorm layers with momentum > 0.5:", suspicious)
assert suspicious == {"1": 0.99}

for name in suspicious:
    layer = model.get_submodule(name)
    layer.momentum = from_keras_momentum(layer.momentum)
print("after the fix:", ported_momenta(model), "| model[1].momentum =", model[1].momentum)
assert ported_momenta(model) == {} and model[1].momentum == 0.01

# %%
# A real-world report: a Tacotron port
# ------------------------------------
#
# A PyTorch implementation of Tacotron built its convolution blocks with
# ``BatchNorm1d(..., momentum=0.99, eps=1e-3)`` under a comment saying that it followed
# TensorFlow's default parameters.
# A reader pointed out that PyTorch's momentum means the opposite of TensorFlow's, and the author
# agreed that it was a mistake and fixed it
# (`tacotron_pytorch issue 19 <https://github.com/r9y9/tacotron_pytorch/issues/19>`_).
# The question comes back in many ports: in the PyTorch examples repository, a user asked whether
# the default 0.1 was right when TensorFlow uses 0.9 or 0.99, and a PyTorch maintainer confirmed
# that a TensorFlow momentum ``m`` is ``1 - m`` in PyTorch
# (`pytorch/examples issue 289 <https://github.com/pytorch/examples/issues/289>`_).
#
# Takeaway
# --------
#
# **PyTorch's BatchNorm momentum is the weight of the new batch (default 0.1); Keras's and
# TensorFlow's is the weight of the old value (default 0.99): translate it as 1 − m.**
# A BatchNorm momentum above 0.5 in PyTorch code is almost always an untranslated port, and its
# running statistics are those of the last training batch.
