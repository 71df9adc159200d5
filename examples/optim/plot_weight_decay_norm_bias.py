"""
.. _weight-decay-norm-bias:

Weight decay on normalisation weights and biases
================================================

``weight_decay=`` given to an optimizer applies to every parameter it holds: the weight matrices
it is meant for, but also the biases and the weights (scales) of BatchNorm and LayerNorm.
The decay does not depend on the loss: it shrinks those parameters at every step, even when
their gradient is zero, pulling each normalisation's scale towards 0 instead of 1.
Most training recipes leave biases and normalisation weights undecayed, with parameter groups.

.. admonition:: What you will learn

   * that weight decay shrinks every parameter it is given at every step, whatever its gradient;
   * which parameters are usually left undecayed, and why;
   * how to build two parameter groups, with and without decay, by a rule that does not depend on
     the parameters' names.

.. admonition:: Prerequisites

   :ref:`params-not-in-optimizer` (an optimizer holds parameter groups) and
   :ref:`backward-step-zero-grad` (gradients set to ``None``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small network with a :class:`~torch.nn.BatchNorm1d` and a :class:`~torch.nn.LayerNorm`,
# trained with :class:`~torch.optim.AdamW` and ``weight_decay=0.1``, a common setting.
# To isolate what the decay does, every gradient is zero for 300 steps with a learning rate of
# 0.03: the loss asks nothing of any parameter.
# The normalisation biases start at 0.5, as if they had been learned.
import inspect

import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

LR, DECAY, STEPS = 0.03, 0.1, 300


def make_model():
    model = nn.Sequential(
        nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 16), nn.LayerNorm(16)
    ).to(device)
    with torch.no_grad():
        model[1].bias.fill_(0.5)
        model[4].bias.fill_(0.5)
    return model


def steps_with_zero_gradients(model, optimizer, steps=STEPS):
    """Take ``steps`` optimizer steps in which every gradient is a tensor of zeros."""
    for _ in range(steps):
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        optimizer.step()


def norm_params(model):
    """The values of the two normalisation layers' weights and biases (all equal per tensor)."""
    return {
        f"{i}.{kind}": round(getattr(model[i], kind).mean().item(), 4)
        for i in (1, 4)
        for kind in ("weight", "bias")
    }


model = make_model()
print("before:", norm_params(model))
optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=DECAY)
steps_with_zero_gradients(model, optimizer)
decayed = norm_params(model)
print(f"after {STEPS} steps with zero gradients:", decayed)
factor = (1 - LR * DECAY) ** STEPS
print(f"expected factor (1 - lr * weight_decay) ** steps = {factor:.4f}")
assert all(
    abs(v - expected * factor) < 1e-3
    for v, expected in zip(decayed.values(), [1, 0.5] * 2, strict=True)
)

# %%
# **With zero gradients, every normalisation weight and bias shrank by the same factor, the one
# the decay alone predicts.**
# The weights are the scales that the normalisation multiplies its output by; decayed towards 0,
# they shrink the layer's output, and the loss has to fight the decay to keep them.
#
# Why
# ---
#
# **Weight decay is applied to each parameter the optimizer holds, at every step, and the
# optimizer does not know which parameter plays which role.**
# AdamW multiplies each parameter by ``1 - lr * weight_decay`` before its update; SGD adds
# ``weight_decay * p`` to the gradient, with the same result here.
# The decay depends on the parameter's value only, so a zero gradient does not stop it.
# A gradient of ``None`` does: the optimizer skips such a parameter entirely, decay included.

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=LR, weight_decay=DECAY)
for _ in range(STEPS):
    for name, p in model.named_parameters():
        p.grad = None if name.startswith("4.") else torch.zeros_like(p)
    optimizer.step()
sgd = norm_params(model)
print("SGD, zero gradients for the BatchNorm, None for the LayerNorm:", sgd)
assert abs(sgd["1.weight"] - factor) < 1e-3 and sgd["4.weight"] == 1.0 and sgd["4.bias"] == 0.5

# %%
# Weight decay is there to keep weight matrices small, a regulariser against overfitting.
# Biases and normalisation weights are few (one value per channel), shift or scale whole
# channels, and have natural values other than 0: pulling a normalisation's scale towards 0 only
# works against the normalisation.
# Most recipes for transformers and convolutional networks therefore decay the matrices and
# convolution kernels and leave the one-dimensional parameters alone.
#
# The fix
# -------
#
# **Give the optimizer two parameter groups: one with weight decay for the weight matrices, one
# with** ``weight_decay=0`` **for biases and normalisation weights.**
# A rule on the number of dimensions separates them without looking at names: matrices and
# kernels have two or more, biases and normalisation weights one.


def decay_groups(model, weight_decay):
    """Two parameter groups: decay for parameters with 2 or more dimensions, none for the rest."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


model = make_model()
no_decay_names = [name for name, p in model.named_parameters() if p.ndim < 2]
print("not decayed:", no_decay_names)
assert no_decay_names == ["0.bias", "1.weight", "1.bias", "3.bias", "4.weight", "4.bias"]
weights_before = [model[i].weight.detach().clone() for i in (0, 3)]
optimizer = torch.optim.AdamW(decay_groups(model, DECAY), lr=LR)
steps_with_zero_gradients(model, optimizer)
kept = norm_params(model)
matrix_factors = [
    (model[i].weight / before).mean().item()
    for i, before in zip((0, 3), weights_before, strict=True)
]
print(f"normalisation parameters after {STEPS} steps:", kept)
print("weight matrices shrunk by:", [round(f, 4) for f in matrix_factors])
assert kept == {"1.weight": 1.0, "1.bias": 0.5, "4.weight": 1.0, "4.bias": 0.5}
assert all(abs(f - factor) < 1e-3 for f in matrix_factors)
torch.optim.AdamW(decay_groups(model, DECAY)[:1], lr=LR)  # a group left out: no error
assert nn.Embedding(10, 4).weight.ndim == 2  # an embedding lands in the decayed group

# %%
# The groups together must hold every parameter exactly once (see :ref:`params-not-in-optimizer`):
# PyTorch refuses a parameter in two groups, but not one left out.
# An embedding's weight is a matrix and lands in the decayed group; some recipes leave embeddings
# undecayed too, which is a choice to make explicitly.
#
# Changed in PyTorch 2.12: ``bias=False`` for BatchNorm, InstanceNorm and GroupNorm
# ---------------------------------------------------------------------------------
#
# A normalisation layer without a bias has one parameter less to leave undecayed.
# :class:`~torch.nn.LayerNorm` has a ``bias`` argument on every release this page runs on;
# the batch, instance and group normalisations have one since PyTorch 2.12
# (`pull request #176573 <https://github.com/pytorch/pytorch/pull/176573>`_), and
# ``nn.RMSNorm``, which has no bias, none:

norm_layers = [nn.BatchNorm1d, nn.InstanceNorm1d, nn.GroupNorm, nn.LayerNorm, nn.RMSNorm]
with_bias_argument = [
    layer.__name__ for layer in norm_layers if "bias" in inspect.signature(layer).parameters
]
print("take bias=:", with_bias_argument)
if torch.__version__ >= "2.12":
    assert with_bias_argument == ["BatchNorm1d", "InstanceNorm1d", "GroupNorm", "LayerNorm"]
    batch_norm = nn.BatchNorm1d(16, bias=False)
    print("BatchNorm1d(16, bias=False) parameters:", [n for n, _ in batch_norm.named_parameters()])
    assert batch_norm.bias is None and batch_norm.weight.ndim == 1
else:  # PyTorch 2.11 and older
    assert with_bias_argument == ["LayerNorm"]
    with expect_raises(TypeError, "unexpected keyword argument 'bias'"):
        nn.BatchNorm1d(16, bias=False)

# %%
# The rule on the number of dimensions needs no change: the normalisation weight that remains is
# one-dimensional and stays in the group without decay.
#
# A real-world report
# -------------------
#
# A user of Lightning AI's lit-llama, an implementation of the LLaMA language model, noticed that
# its pre-training script applied weight decay to every parameter, LayerNorm and biases included
# (`Lightning-AI/lit-llama issue #254 <https://github.com/Lightning-AI/lit-llama/issues/254>`_,
# 2023).
# A maintainer agreed and pointed to nanoGPT, which splits its parameters into two groups by
# number of dimensions, as above.
#
# Takeaway
# --------
#
# **Weight decay shrinks every parameter it is given, at every step, whatever the gradient: give
# biases and normalisation weights a parameter group with weight_decay=0.**
# Split by ``p.ndim >= 2`` rather than by names, and check that the groups hold every parameter.
