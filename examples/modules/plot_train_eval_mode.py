"""
.. _train-eval-mode:

``model.train()`` and ``model.eval()``
======================================

:class:`~torch.nn.Dropout` and :class:`~torch.nn.BatchNorm1d` compute different things in
training mode and in evaluation mode.
A model evaluated while still in training mode gives a different prediction every time it sees
the same input, and the prediction for one sample depends on the other samples of its batch.
Nothing warns: the numbers are just worse, and they change from run to run.

.. admonition:: What you will learn

   * what :class:`~torch.nn.Dropout` and :class:`~torch.nn.BatchNorm1d` compute in each mode;
   * what :meth:`~torch.nn.Module.eval` and :meth:`~torch.nn.Module.train` actually change;
   * how to write an evaluation function that switches modes and back;
   * why a layer created inside ``forward`` never reaches evaluation mode;
   * why BatchNorm refuses a batch of one sample in training mode;
   * what happens when training goes on after an evaluation left the model in evaluation mode.

.. admonition:: Prerequisites

   Building a model from :class:`torch.nn.Module` subclasses; :ref:`no-grad-evaluation`
   (what :class:`torch.no_grad` does) helps.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`, :func:`torch_pitfalls.guards.allow`.
"""

# %%
# The symptom
# -----------
#
# A small classifier with :class:`~torch.nn.BatchNorm1d` and :class:`~torch.nn.Dropout`.
# A freshly built module is in training mode.
# We ask it twice for its prediction on the same batch, as an evaluation loop that forgot to
# switch modes would.
import torch
from torch import nn

from torch_pitfalls import (
    PitfallWarning,
    allow,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(
    nn.Linear(8, 16),
    nn.BatchNorm1d(16),
    nn.ReLU(),
    nn.Dropout(0.5),
    nn.Linear(16, 3),
).to(device)
x = torch.randn(8, 8, device=device)

first, second = model(x), model(x)
print("in training mode:", model.training)
print("same prediction twice:", torch.equal(first, second))
assert model.training and not torch.equal(first, second)

# %%
# The same batch in evaluation mode gives the same answer every time,
# and the answer for the first four samples does not depend on the four others.

_ = model.eval()
third, fourth = model(x), model(x)
first_half = model(x[:4])
print("same prediction twice in eval mode:", torch.equal(third, fourth))
print("first half alone equals first half of the batch:", torch.allclose(first_half, third[:4]))
assert torch.equal(third, fourth)
torch.testing.assert_close(first_half, third[:4])

# %%
# Why: Dropout
# ------------
#
# In training mode :class:`~torch.nn.Dropout` zeroes each element with probability ``p`` and
# multiplies the others by ``1 / (1 - p)``, so that the expected value is unchanged.
# **In evaluation mode Dropout is the identity.**
# A tensor of ones makes both visible.

p = 0.5
drop = nn.Dropout(p).to(device)
ones = torch.ones(4, 8, device=device)

dropped = drop.train()(ones)
print("train mode:\n", dropped)
dropout_values = set(dropped.unique().tolist())
print("values seen:", sorted(dropout_values), " expected: 0 and", 1 / (1 - p))
assert dropout_values == {0.0, 1 / (1 - p)}

identity = drop.eval()(ones)
print("eval mode is the identity:", torch.equal(identity, ones))
assert torch.equal(identity, ones)

# %%
# Changed in PyTorch 2.7: other masks for the same seed
# ------------------------------------------------------
#
# Which elements are zeroed depends on the release, and so do the random numbers drawn after a
# dropout.
# Up to PyTorch 2.6, builds of PyTorch that include Intel MKL drew dropout's mask on the CPU from
# MKL's generator, seeded with one number from PyTorch's generator; since PyTorch 2.7 every build
# draws one number per element from PyTorch's generator, as builds without MKL (for Arm
# processors, for example) already did (see :ref:`functional-dropout`).
# **On a build with MKL, with the same seed, the mask above and the batch drawn below differ
# between 2.6 and 2.7.**

with torch.random.fork_rng(devices=[]):  # leaves the page's generator as it was
    torch.manual_seed(0)
    nn.Dropout(p)(torch.ones(1000))
    after_1000 = torch.rand(1)
    torch.manual_seed(0)
    nn.Dropout(p)(torch.ones(10))
    after_10 = torch.rand(1)
per_element = not torch.equal(after_1000, after_10)
print("a dropout on the CPU advances the generator by its number of elements:", per_element)
assert per_element == (torch.__version__ >= "2.7" or not torch.backends.mkl.is_available())

# %%
# Why: BatchNorm
# --------------
#
# In training mode :class:`~torch.nn.BatchNorm1d` normalises each feature with the mean and
# variance of the *current batch*: every output column has mean zero and variance one.
# In evaluation mode it uses the *running* mean and variance it accumulated during training
# (see :ref:`batchnorm-running-stats`).
# **Train mode normalises with batch statistics, eval mode with running statistics.**

bn = nn.BatchNorm1d(4).to(device)
features = 3 * torch.randn(16, 4, device=device) + 5

out_train = bn.train()(features)
print("train mode, per-feature mean:", out_train.mean(dim=0).detach())
print("train mode, per-feature variance:", out_train.var(dim=0, unbiased=False).detach())
torch.testing.assert_close(out_train.mean(dim=0), torch.zeros(4, device=device), atol=1e-5, rtol=0)
torch.testing.assert_close(
    out_train.var(dim=0, unbiased=False), torch.ones(4, device=device), atol=1e-3, rtol=0
)

# %%
# In evaluation mode the output is ``(x - running_mean) / sqrt(running_var + eps)``, times the
# layer's weight plus its bias, for every sample on its own.
# The statistics of the batch play no part, so one sample gives the same output alone or in a
# batch.

out_eval = bn.eval()(features)
expected = (features - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
print("eval mode, per-feature mean:", out_eval.mean(dim=0).detach())
torch.testing.assert_close(out_eval, expected)
torch.testing.assert_close(bn(features[:1]), out_eval[:1])
assert not torch.allclose(out_eval.mean(dim=0), torch.zeros(4, device=device), atol=0.1)

# %%
# Why: the ``training`` flag
# --------------------------
#
# Every :class:`~torch.nn.Module` has a boolean attribute ``training``.
# :meth:`~torch.nn.Module.eval` is ``train(False)``: it sets that flag on the module and on
# every registered submodule, recursively, and changes nothing else.
# Each layer's ``forward`` reads its own flag.

_ = model.train()
flags_train = [m.training for m in model.modules()]
_ = model.eval()
flags_eval = [m.training for m in model.modules()]
print("training flags after train():", flags_train)
print("training flags after eval(): ", flags_eval)
assert all(flags_train) and not any(flags_eval)

# %%
# The fix
# -------
#
# **Switch to eval() before evaluating, and back to train() before training again.**
# ``eval()`` does not switch off autograd: outputs computed in evaluation mode still require
# grad and keep a graph, so evaluate under :class:`torch.no_grad` as well
# (:ref:`no-grad-evaluation` measures what it saves).

_ = model.eval()
print("eval mode output requires grad:", model(x).requires_grad)
assert model(x).requires_grad


def evaluate(model, batch):
    was_training = model.training
    _ = model.eval()
    with torch.no_grad():
        logits = model(batch)
    _ = model.train(was_training)
    return logits


_ = model.train()
logits_a, logits_b = evaluate(model, x), evaluate(model, x)
print("repeatable:", torch.equal(logits_a, logits_b), " requires grad:", logits_a.requires_grad)
print("back in training mode:", model.training)
assert torch.equal(logits_a, logits_b) and not logits_a.requires_grad and model.training

# %%
# A layer created inside ``forward``
# ----------------------------------
#
# :meth:`~torch.nn.Module.eval` only reaches *registered* submodules: those assigned as
# attributes in ``__init__`` (or held in a :class:`~torch.nn.ModuleList` and the like).
# A layer built inside ``forward`` is a new object on every call, in training mode by default,
# and the model does not know it exists.


class Unregistered(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        x = nn.BatchNorm1d(8).to(x.device)(x)  # a new, unregistered layer on every call
        return nn.Dropout(0.5)(x)  # same here


bad = Unregistered().to(device)
_ = bad.eval()
bad_a, bad_b = bad(x), bad(x)
print("model in eval mode:", not bad.training)
print("zeros in the eval output:", int((bad_a == 0).sum()), "of", bad_a.numel())
print("same output twice:", torch.equal(bad_a, bad_b))
assert not bad.training and (bad_a == 0).any() and not torch.equal(bad_a, bad_b)

# %%
# The model does not list those layers, so it cannot switch them, the optimizer never sees
# BatchNorm's weight and bias, and :meth:`~torch.nn.Module.state_dict` does not save them.

bad_modules = [name for name, _ in bad.named_modules()]
bad_keys = list(bad.state_dict())
print("submodules:", bad_modules)
print("state_dict keys:", bad_keys)
print("parameters:", sum(1 for _ in bad.parameters()))
assert bad_modules == ["", "fc"] and bad_keys == ["fc.weight", "fc.bias"]

# %%
# **Create every layer in __init__, and only call it in forward.**
# Registered, the layers follow :meth:`~torch.nn.Module.eval` and appear in the state dict.


class Registered(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.fc(x)))


good = Registered().to(device)
_ = good.eval()
good_keys = list(good.state_dict())
print("same output twice:", torch.equal(good(x), good(x)))
print("state_dict keys:", good_keys)
assert torch.equal(good(x), good(x))
assert {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"} <= set(good_keys)

# %%
# BatchNorm with a batch of one
# -----------------------------
#
# In training mode BatchNorm needs the variance of each channel over the batch, and one value
# has none.
# A batch of one sample for :class:`~torch.nn.BatchNorm1d` fails:

bn = nn.BatchNorm1d(4).to(device).train()
with expect_raises(ValueError, "Expected more than 1 value per channel when training"):
    bn(torch.randn(1, 4, device=device))

# %%
# What counts is the number of values per channel, batch times spatial size: one image of
# 2×2 pixels is enough for :class:`~torch.nn.BatchNorm2d`, and in evaluation mode a single
# sample is always fine.

bn2d = nn.BatchNorm2d(4).to(device).train()
one_image = bn2d(torch.randn(1, 4, 2, 2, device=device))
one_sample_eval = bn.eval()(torch.randn(1, 4, device=device))
print("one 2x2 image in train mode:", tuple(one_image.shape))
print("one sample in eval mode:", tuple(one_sample_eval.shape))
assert one_image.shape == (1, 4, 2, 2) and one_sample_eval.shape == (1, 4)

# %%
# During training, a batch of one usually comes from the last, incomplete batch of an epoch.
# ``drop_last=True`` of :class:`~torch.utils.data.DataLoader` drops it.

from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(10, 4))
sizes = [len(b) for (b,) in DataLoader(dataset, batch_size=3)]
sizes_drop_last = [len(b) for (b,) in DataLoader(dataset, batch_size=3, drop_last=True)]
print("batch sizes:", sizes, " with drop_last=True:", sizes_drop_last)
assert sizes[-1] == 1 and min(sizes_drop_last) == 3

# %%
# Training on in evaluation mode
# ------------------------------
#
# The opposite mistake: an evaluation switches the model to ``eval()``, and nothing switches it
# back, so the next epoch trains with dropout off and BatchNorm normalising with its running
# statistics.
# Nothing fails; the running statistics simply stop following the data.

trained = nn.Sequential(
    nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3)
).to(device)
optimizer = torch.optim.SGD(trained.parameters(), lr=0.1)
labels = torch.randint(0, 3, (8,), device=device)


def train_epoch(model, optimizer, steps=3):
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), labels).backward()
        optimizer.step()


_ = trained.eval()  # an evaluation switched modes, and never switched back
before = trained[1].running_mean.clone()
train_epoch(trained, optimizer)
print(
    "BatchNorm's running mean moved in 3 training steps:",
    not torch.equal(before, trained[1].running_mean),
)
assert torch.equal(before, trained[1].running_mean)

# %%
# **Call model.train() at the start of every training epoch, not once before the first.**
# A function such as ``evaluate`` above, which puts the mode back as it found it, avoids both
# mistakes.

_ = trained.train()
train_epoch(trained, optimizer)
print("after train():", not torch.equal(before, trained[1].running_mean))
assert not torch.equal(before, trained[1].running_mean)

# %%
# Detectors
# ---------
#
# Two runtime guards detect this pitfall in your own code (see :doc:`/detectors`).
# ``TP003`` flags a :class:`~torch.nn.BatchNorm1d` or :class:`~torch.nn.Dropout` module that
# runs in training mode while gradients are disabled, the mark of an evaluation that forgot
# ``eval()``.
# ``TP013`` flags an optimizer step whose gradients come from a forward pass of a model in
# evaluation mode that holds Dropout or BatchNorm layers, the mark of a ``train()`` forgotten
# after an evaluation.
# Under :mod:`torch_pitfalls.guards`, the evaluation of this page without ``eval()`` and the
# training in evaluation mode warn, once per line, and ``evaluate`` is silent.
# So is a BatchNorm recalibration with ``momentum=None``, as ``torch.optim.swa_utils.update_bn``
# runs it, and a BatchNorm frozen on purpose (``eval()`` on the BatchNorm layers only, as
# fine-tuning a detection model does): the model itself is in training mode.
# Dropout that you keep on at evaluation (Monte Carlo dropout) warns too; silence it there with
# :func:`torch_pitfalls.guards.allow`:

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP003 "), torch.no_grad():
        model(x)  # model.eval() forgotten
    _ = trained.eval()
    with expect_warns(PitfallWarning, "^TP013 "):
        train_epoch(trained, optimizer)  # model.train() forgotten
with guards(language="en") as fixed:
    _ = trained.train()
    train_epoch(trained, optimizer)
    _ = trained[1].eval()  # BatchNorm frozen on purpose
    train_epoch(trained, optimizer)
    _ = trained.train()
    evaluate(model, x)
    torch.optim.swa_utils.update_bn([features], bn)
    _ = model.eval()
    _ = model[3].train()  # Monte Carlo dropout: BatchNorm in eval mode, dropout on purpose
    with torch.no_grad(), allow("TP003"):
        samples = torch.stack([model(x) for _ in range(5)])
    _ = model.train()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP003", "TP013"] and fixed.ids == []
assert not torch.equal(samples[0], samples[1])  # the Monte Carlo samples differ

# %%
# Takeaway
# --------
#
# **Call model.eval() (and use torch.no_grad()) before evaluating, and model.train() before
# training again; the mode is a flag that only registered submodules receive.**
# Create layers in ``__init__``, never in ``forward``, and keep training batches larger than one
# sample when the model has BatchNorm.
