"""
.. _backward-step-zero-grad:

One training step, and clearing gradients
=========================================

A training step is three calls: :meth:`~torch.Tensor.backward` computes gradients,
:meth:`optimizer.step() <torch.optim.Optimizer.step>` uses them, and
:meth:`optimizer.zero_grad() <torch.optim.Optimizer.zero_grad>` clears them.
Forget the last one and nothing fails: backward adds the new gradients to the old ones, and the
optimizer takes steps that are too large, in directions mixed from several batches.
Clear them the modern way and code written for older releases can break, because a cleared
gradient is now ``None`` rather than a tensor of zeros.

.. admonition:: What you will learn

   * that :meth:`~torch.Tensor.backward` *adds* into :attr:`~torch.Tensor.grad`, and what
     :meth:`~torch.optim.Optimizer.step` does with it, checked number by number;
   * why a network whose parameters all share one constant gets almost no gradient in its
     convolutions today, and where the clearly non-zero ones of a classic write-up came from;
   * what changed in PyTorch 2.0 about ``zero_grad()``, and when ``set_to_none`` matters;
   * what a ``zero_grad()`` placed between ``backward()`` and ``step()`` does to the step;
   * when :meth:`model.zero_grad() <torch.nn.Module.zero_grad>` and
     :meth:`optimizer.zero_grad() <torch.optim.Optimizer.zero_grad>` differ.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (which tensors get a gradient) and :ref:`freezing-layers`
   (an optimizer that holds only some parameters).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:class:`~torch_pitfalls.TwoConvNet`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# The network is :class:`~torch_pitfalls.TwoConvNet`: two 3×3 convolutions (3→16→32 channels) and
# a linear classifier to 20 classes.
# The batch is 8 images of 3×10×10 filled with ones, and every target is class 1.
# Before any backward, no parameter has a gradient: :attr:`~torch.Tensor.grad` is ``None``.
import inspect

import torch
import torch.nn.functional as F

from torch_pitfalls import (
    PitfallWarning,
    TwoConvNet,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

net = TwoConvNet().to(device)
images = torch.ones(8, 3, 10, 10, device=device)
targets = torch.ones(8, dtype=torch.long, device=device)
grads_before_backward = {name: p.grad for name, p in net.named_parameters()}
print("grad before backward:", grads_before_backward)
assert all(g is None for g in grads_before_backward.values())

# %%
# One backward fills every :attr:`~torch.Tensor.grad`.
# **A second backward on the same batch, without clearing in between, gives gradients exactly
# twice as large.**
# (On a GPU, cuDNN may pick convolution algorithms whose sums are not bit-for-bit reproducible, so
# this cell asks it for deterministic ones; on the CPU the setting changes nothing.)

with torch.backends.cudnn.flags(enabled=True, deterministic=True):
    F.cross_entropy(net(images), targets).backward()
    first_grads = {name: p.grad.clone() for name, p in net.named_parameters()}
    F.cross_entropy(net(images), targets).backward()  # no zero_grad() in between
doubled = {name: torch.equal(p.grad, 2 * first_grads[name]) for name, p in net.named_parameters()}
print("grad after the second backward == 2 × grad after the first:", doubled)
assert all(doubled.values())

# %%
# The next :meth:`~torch.optim.Optimizer.step` would move every weight twice as far as one batch
# asks for.
# In a training loop the gradients of every past batch keep piling up.
#
# Why
# ---
#
# **Backward accumulates: it adds each new gradient to** :attr:`~torch.Tensor.grad` **instead of
# replacing it.**
# That is deliberate: it is how gradients of several batches are summed on purpose
# (:ref:`gradient-accumulation`).
# Clearing is the caller's job.
# Here is one full step, in order, on a freshly seeded network with the default initialisation,
# and :class:`torch.optim.SGD` with learning rate 1.0.

seed_everything(0)
net = TwoConvNet().to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
loss_before = F.cross_entropy(net(images), targets)
loss_before.backward()
grad_norms = {name: p.grad.norm().item() for name, p in net.named_parameters()}
print("gradient norms after backward:", {name: round(n, 4) for name, n in grad_norms.items()})
assert all(n > 0 for n in grad_norms.values())

# %%
# :meth:`~torch.optim.Optimizer.step` applies ``w ← w − lr · grad`` to every parameter.
# We check it against a copy of the weights taken just before the step.
# As the classic write-up of this walkthrough does (next section), we also print one row of the
# first filter, ``conv1.weight[0][0][0]``, before and after the step: with a learning rate of 1.0
# the new row is the old row minus its gradient.

weights_before = {name: p.detach().clone() for name, p in net.named_parameters()}
print("conv1.weight[0][0][0] before the step:", net.conv1.weight[0][0][0])
print("its gradient:                          ", net.conv1.weight.grad[0][0][0])
optimizer.step()
row_after = net.conv1.weight[0][0][0]
print("conv1.weight[0][0][0] after the step: ", row_after)
for name, p in net.named_parameters():
    torch.testing.assert_close(p.detach(), weights_before[name] - 1.0 * p.grad)
changed = [name for name, p in net.named_parameters() if not torch.equal(p, weights_before[name])]
print("parameters changed by the step:", changed)
assert changed == [name for name, _ in net.named_parameters()]
torch.testing.assert_close(
    row_after.detach(), weights_before["conv1.weight"][0][0][0] - net.conv1.weight.grad[0][0][0]
)

# %%
# The ``grad_fn`` printed with the rows belongs to the indexing, not to the weight.
# The weight is a leaf tensor, with no ``grad_fn``; ``[0][0][0]`` makes a view of it by three
# selections, and the last one is recorded as ``SelectBackward0``.
# The classic write-up printed ``SelectBackward`` in the same place: this build names the node
# ``SelectBackward0``.

print("conv1.weight.grad_fn:", net.conv1.weight.grad_fn)
print("conv1.weight[0][0][0].grad_fn:", row_after.grad_fn.name())
assert net.conv1.weight.is_leaf and net.conv1.weight.grad_fn is None
assert row_after.grad_fn.name() == "SelectBackward0"

# %%
# A learning rate of 1.0 is far too large for this network: the step overshoots, and the loss on
# the very same batch goes up.
# The point here is the mechanics, which are the same at any learning rate.

loss_after = F.cross_entropy(net(images), targets)
print(f"loss on the batch: {loss_before.item():.4f} before the step, {loss_after.item():.4f} after")
assert loss_after > loss_before

# %%
# Last, :meth:`~torch.optim.Optimizer.zero_grad` clears the gradients for the next step.

optimizer.zero_grad()
grads_after_zero_grad = {name: p.grad for name, p in net.named_parameters()}
print("grad after zero_grad():", grads_after_zero_grad)
assert all(g is None for g in grads_after_zero_grad.values())

# %%
# Every parameter set to one constant
# -----------------------------------
#
# The classic write-up of this walkthrough, the Zhihu post
# `浅谈 PyTorch 中的 tensor 及使用 <https://pythonjishu.com/nfhvamxjpajd>`_ (read here in a
# copy that credits it), builds the same network with a classifier without bias, sets every
# parameter to 0.1 and, after one backward, prints a row of ``conv1.weight.grad`` with entries of
# about −0.08, then the same row of the weight after a step with learning rate 1.0.
# Its tensors print with no device, so it ran on the CPU: this section runs on the CPU on every
# build.
# We set every parameter of :class:`~torch_pitfalls.TwoConvNet` to 0.1 with
# :func:`torch.nn.init.constant_` (its classifier's bias too, which adds the same 0.1 to every
# logit).
# To see the gradient that reaches the features (the classifier's input), we run the layers one
# by one and call :meth:`~torch.Tensor.retain_grad` on the features.

cpu_images, cpu_targets = images.cpu(), targets.cpu()


def constant_net():
    """A TwoConvNet on the CPU with every parameter set to 0.1, as in the classic write-up."""
    model = TwoConvNet()
    for p in model.parameters():
        torch.nn.init.constant_(p, 0.1)
    return model


const_net = constant_net()
features = const_net.conv2(const_net.conv1(cpu_images)).flatten(1)
features.retain_grad()
const_logits = const_net.fc(features)
F.cross_entropy(const_logits, cpu_targets).backward()
const_max = {name: p.grad.abs().max().item() for name, p in const_net.named_parameters()}
feature_grad_max = features.grad.abs().max().item()
print("conv1.weight.grad[0][0][0]:", const_net.conv1.weight.grad[0][0][0])
print("largest |grad| per parameter:", const_max)
print("largest |grad| reaching the features:", feature_grad_max)

# %%
# **Today the classifier gets real gradients, and the convolutions get gradients smaller by many
# orders of magnitude, at the level of float rounding**: nothing like the classic's −0.08.

conv_to_fc = max(const_max["conv1.weight"], const_max["conv2.weight"]) / const_max["fc.weight"]
print(f"largest conv |grad| / largest fc.weight |grad|: {conv_to_fc:.2e}")
assert const_max["fc.weight"] > 1.0
assert conv_to_fc < 1e-5
assert feature_grad_max / const_max["fc.weight"] < 1e-5

# %%
# Why: with every weight equal, the 20 rows of the classifier are identical, so all 20 logits are
# equal and softmax gives every class the same probability, ``1/20``.
# For cross-entropy, the gradient of the loss with respect to logit ``j`` is ``(p_j − y_j) / N``,
# where ``y`` is the one-hot target.
# The gradient reaching feature ``k`` sums these over the classes, weighted by ``W[j, k] = c``:
# ``c · Σ_j (p_j − y_j) / N``.
# Both ``p`` and ``y`` sum to one, so **with identical classifier rows the gradient reaching the
# features is zero**, and so is everything behind it: the convolutions.
# What is left is float rounding: 20 float probabilities need not add up to exactly one.

probs = const_logits.detach().softmax(dim=1)
print("softmax of the first image:", probs[0])
torch.testing.assert_close(probs, torch.full_like(probs, 1 / 20))
sum_p_minus_y = (probs - F.one_hot(cpu_targets, 20)).sum(dim=1)
print("sum over classes of p − y, per image:", sum_p_minus_y)
assert sum_p_minus_y.abs().max() < 1e-6

# %%
# Where the classic's gradients came from
# ---------------------------------------
#
# Not from another initialisation or another network: from float32 rounding in the CPU
# :func:`~torch.nn.functional.log_softmax` of its time, which
# :func:`~torch.nn.functional.cross_entropy` applies before
# :func:`~torch.nn.functional.nll_loss`.
# The logits of this network are large, and float32 numbers that large are ``2⁻¹⁰`` (about
# 0.001) apart.

assert torch.equal(
    F.cross_entropy(const_logits, cpu_targets),
    F.nll_loss(F.log_softmax(const_logits, dim=1), cpu_targets),
)
logit = const_logits[0, 0].detach()
spacing = (torch.nextafter(logit, torch.tensor(float("inf"))) - logit).item()
print(f"a logit: {logit.item()}   spacing of float32 numbers there: {spacing}")
assert spacing == 2**-10

# %%
# ``log_softmax`` subtracts the log-sum-exp, ``max + log Σ exp(x − max)``, from every logit
# ``x``.
# The CPU kernel of the time added ``max`` and the logarithm first, so the log-sum-exp, a number
# near 9833, was rounded to a multiple of ``2⁻¹⁰``, and every log-probability inherited that
# error.
# `PR 21672 <https://github.com/pytorch/pytorch/pull/21672>`_, opened in June 2019 to fix
# `issue 11752 <https://github.com/pytorch/pytorch/issues/11752>`_ (a wrong cross-entropy for
# large logits), changed the kernel to compute ``x − max − log Σ exp(x − max)``: the large numbers
# cancel before anything is rounded.
# ``OldCpuLogSoftmax`` below redoes the old computation in float32, with the backward formula of
# the kernel, ``grad − exp(output) · Σ grad``.


class OldCpuLogSoftmax(torch.autograd.Function):
    """log_softmax over dim 1, computed as the CPU kernel did before PR 21672 (float32)."""

    @staticmethod
    def forward(ctx, x):
        x_max = x.amax(dim=1, keepdim=True)
        log_sum_exp = (x - x_max).exp().sum(dim=1, keepdim=True).log() + x_max  # rounded here
        output = x - log_sum_exp
        ctx.save_for_backward(output)
        return output

    @staticmethod
    def backward(ctx, grad):
        (output,) = ctx.saved_tensors
        return grad - output.exp() * grad.sum(dim=1, keepdim=True)


old_net = constant_net()
old_log_probs = OldCpuLogSoftmax.apply(old_net(cpu_images))
F.nll_loss(old_log_probs, cpu_targets).backward()
today_log_probs = F.log_softmax(const_logits.detach(), dim=1)
print("log-probability of every class, old kernel:", old_log_probs[0, 0].item())
print("log-probability of every class, today:     ", today_log_probs[0, 0].item())
old_prob_sum = old_log_probs[0].detach().exp().sum().item()
print("the 20 probabilities add up to, old kernel:", old_prob_sum)

# %%
# The old log-probability is a multiple of ``2⁻¹⁰``, about 0.0004 away from today's, and the 20
# probabilities add up to about 0.9996 instead of one.
# Today's log-probabilities of these logits are exactly those of 20 logits equal to zero: the
# size of the logits no longer matters.

for log_probs in (old_log_probs, today_log_probs):
    assert (log_probs == log_probs[0, 0]).all()  # the same for every class and every image
assert torch.equal(old_log_probs * 1024, (old_log_probs * 1024).round())
log_prob_gap = (old_log_probs - today_log_probs).detach().abs()
assert log_prob_gap.min() > 3e-4 and log_prob_gap.max() < 5e-4
assert 0.9995 < old_prob_sum < 0.9997
assert torch.equal(today_log_probs, F.log_softmax(torch.zeros_like(today_log_probs), dim=1))

# %%
# The missing 0.0004 of probability is what the identical classifier rows no longer cancel: it
# flows back to the convolutions.
# **The old kernel's rounding reproduces the classic's numbers to every printed digit**, and
# today's gradients are smaller by more than four orders of magnitude.
# The classic's values are typed in from the write-up; ours are computed.

CLASSIC_CONV1_GRAD = torch.tensor([-0.0782, -0.0842, -0.0782])  # printed by the write-up
CLASSIC_CONV1_AFTER_STEP = torch.tensor([0.1782, 0.1842, 0.1782])  # printed by the write-up
old_row_grad = old_net.conv1.weight.grad[0][0][0]
print("conv1.weight.grad[0][0][0], old kernel:", old_row_grad)
print("conv1.weight.grad[0][0][0], classic:   ", CLASSIC_CONV1_GRAD)
print("conv1.weight.grad[0][0][0], today:     ", const_net.conv1.weight.grad[0][0][0])
torch.optim.SGD(old_net.parameters(), lr=1.0).step()
old_row_after = old_net.conv1.weight[0][0][0]
print("conv1.weight[0][0][0] after the step, old kernel:", old_row_after)
print("conv1.weight[0][0][0] after the step, classic:   ", CLASSIC_CONV1_AFTER_STEP)
torch.testing.assert_close(old_row_grad, CLASSIC_CONV1_GRAD, rtol=0, atol=5e-5)
torch.testing.assert_close(old_row_after.detach(), CLASSIC_CONV1_AFTER_STEP, rtol=0, atol=5e-5)
today_to_old = const_max["conv1.weight"] / old_net.conv1.weight.grad.abs().max().item()
print(f"largest conv1 |grad|, today / old kernel: {today_to_old:.1e}")
assert today_to_old < 1e-4

# %%
# The walkthrough above used the seeded default initialisation instead, which gives every layer a
# real gradient.
#
# Changed in PyTorch 2.0: cleared gradients are ``None``
# ------------------------------------------------------
#
# Since PyTorch 2.0, both :meth:`Optimizer.zero_grad() <torch.optim.Optimizer.zero_grad>` and
# :meth:`Module.zero_grad() <torch.nn.Module.zero_grad>` default to ``set_to_none=True``: they
# set :attr:`~torch.Tensor.grad` to ``None`` instead of filling it with zeros
# (`release notes <https://github.com/pytorch/pytorch/releases/tag/v2.0.0>`_,
# `PR 92731 <https://github.com/pytorch/pytorch/pull/92731>`_, one change for both).
# The classic write-up printed a row of zeros after ``optimizer.zero_grad()``; today there is no
# row to print.

set_to_none_defaults = {
    f"{cls.__name__}.zero_grad": inspect.signature(cls.zero_grad).parameters["set_to_none"].default
    for cls in (torch.optim.Optimizer, torch.nn.Module)
}
print("default of set_to_none:", set_to_none_defaults)
assert set_to_none_defaults == {"Optimizer.zero_grad": True, "Module.zero_grad": True}

# %%
# **Code that reads or edits** ``.grad`` **after** ``zero_grad()`` **now finds** ``None``, for
# example an old loop that zeroes gradients by hand:

optimizer.zero_grad()
print("conv1.weight.grad after zero_grad():", net.conv1.weight.grad)
assert net.conv1.weight.grad is None
with expect_raises(AttributeError, "'NoneType' object has no attribute 'zero_'"):
    net.conv1.weight.grad.zero_()

# %%
# Such code should check ``p.grad is not None`` first, or ask for zeros with
# ``zero_grad(set_to_none=False)``.
# The two settings also differ for the optimizer: it skips every parameter whose gradient is
# ``None``, but a gradient of zeros is a real gradient, and a step with it is not always a no-op.
# Plain SGD, without momentum or weight decay, moves the weights by ``lr · 0`` and leaves them
# where they are; weight decay adds ``weight_decay · w`` to the zero gradient and shrinks them;
# momentum and Adam keep moving them with the state they carry from earlier steps.
# We take one real step, clear, and call :meth:`~torch.optim.Optimizer.step` again.


def moves_after_clearing(make_optimizer, set_to_none):
    """Whether a step() right after zero_grad(set_to_none=...) still changes the weights."""
    seed_everything(0)
    model = TwoConvNet().to(device)
    opt = make_optimizer(model.parameters())
    F.cross_entropy(model(images), targets).backward()
    opt.step()
    opt.zero_grad(set_to_none=set_to_none)
    before = [p.detach().clone() for p in model.parameters()]
    opt.step()
    return any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))


optimizers = {
    "SGD": lambda params: torch.optim.SGD(params, lr=1.0),
    "SGD, weight_decay=0.1": lambda params: torch.optim.SGD(params, lr=1.0, weight_decay=0.1),
    "SGD, momentum=0.9": lambda params: torch.optim.SGD(params, lr=1.0, momentum=0.9),
    "Adam": lambda params: torch.optim.Adam(params, lr=1e-3),
}
moves = {
    (name, set_to_none): moves_after_clearing(make, set_to_none)
    for name, make in optimizers.items()
    for set_to_none in (True, False)
}
for (name, set_to_none), moved in moves.items():
    print(f"{name:22} set_to_none={set_to_none!s:5}  weights move on the next step: {moved}")
assert not any(moved for (_, set_to_none), moved in moves.items() if set_to_none)
assert moves == {
    ("SGD", True): False,
    ("SGD", False): False,
    ("SGD, weight_decay=0.1", True): False,
    ("SGD, weight_decay=0.1", False): True,
    ("SGD, momentum=0.9", True): False,
    ("SGD, momentum=0.9", False): True,
    ("Adam", True): False,
    ("Adam", False): True,
}

# %%
# In an ordinary loop every parameter gets a fresh gradient at every step, so this difference
# matters for parameters that got no gradient in this step (a frozen layer, an unused branch).
# There, ``None`` means "skip this parameter" and zeros mean "step anyway": with momentum,
# weight decay or Adam's running averages, the parameter still moves.
#
# Clearing between the backward and the step
# -------------------------------------------
#
# The order of the three calls matters too.
# **A** ``zero_grad()`` **placed between** ``backward()`` **and** ``step()`` **throws away the
# gradients the step was to use**: the step finds ``None`` on every parameter, skips them all, and
# the weights do not move.
# Nothing fails.
# Here is that order on a fresh network, with a copy of the weights taken before the step and the
# gradients read when the step runs:

seed_everything(0)
net = TwoConvNet().to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
weights_at_start = {name: p.detach().clone() for name, p in net.named_parameters()}
F.cross_entropy(net(images), targets).backward()
optimizer.zero_grad()  # after the backward, before the step: the wrong place
grads_at_step = {name: p.grad for name, p in net.named_parameters()}
optimizer.step()
unchanged = {name: torch.equal(p, weights_at_start[name]) for name, p in net.named_parameters()}
print("grad when step() runs:", grads_at_step)
print("parameter unchanged by the step:", unchanged)
assert all(g is None for g in grads_at_step.values())
assert all(unchanged.values())

# %%
# In a training loop every step does the same: the weights stay where they were initialised, and
# the loss on the batch does not fall.

wrong_order_losses = []
for _ in range(3):
    loss = F.cross_entropy(net(images), targets)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    wrong_order_losses.append(loss.item())
print("loss at each step, zero_grad() before step():", [round(v, 4) for v in wrong_order_losses])
assert all(torch.equal(p, weights_at_start[name]) for name, p in net.named_parameters())
assert max(wrong_order_losses) - min(wrong_order_losses) < 1e-6

# %%
# The fix
# -------
#
# **Clear the gradients once per step, before the backward: zero_grad, forward, backward, step.**
# Repeat the two backward passes of the symptom with a ``zero_grad()`` before each: the second
# gives the same gradients as the first, not twice them.

seed_everything(0)
net = TwoConvNet().to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
cleared_grads = []
for _ in range(2):
    optimizer.zero_grad()
    F.cross_entropy(net(images), targets).backward()
    cleared_grads.append({name: p.grad.clone() for name, p in net.named_parameters()})
for name, g in cleared_grads[1].items():
    torch.testing.assert_close(g, cleared_grads[0][name])
    assert not torch.allclose(g, 2 * cleared_grads[0][name])
print("second backward, after zero_grad(), gives the same gradients as the first")

# %%
# The whole loop, with a learning rate that suits this network (0.01): the loss on the batch
# falls at every step.

losses = []
for _ in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(net(images), targets)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("loss at each step:", [round(v, 4) for v in losses])
assert losses[0] > losses[1] > losses[2]

# %%
# Which ``zero_grad`` to call?
# :meth:`model.zero_grad() <torch.nn.Module.zero_grad>` clears every parameter of the model;
# :meth:`optimizer.zero_grad() <torch.optim.Optimizer.zero_grad>` clears the parameters the
# optimizer holds.
# When the optimizer holds all the parameters they do the same thing.
# When it holds only some, say only the classifier, the others keep their gradients and go on
# accumulating:


def grads_left(optimizer_params, clear):
    """Names of the parameters that still have a gradient after ``clear`` is called."""
    seed_everything(0)
    model = TwoConvNet().to(device)
    opt = torch.optim.SGD(optimizer_params(model), lr=1.0)
    F.cross_entropy(model(images), targets).backward()
    if clear == "model":
        model.zero_grad()
    else:
        opt.zero_grad()
    return [name for name, p in model.named_parameters() if p.grad is not None]


left = {
    (holds, clear): grads_left(params, clear)
    for holds, params in {
        "all parameters": lambda m: m.parameters(),
        "fc only": lambda m: m.fc.parameters(),
    }.items()
    for clear in ("model", "optimizer")
}
for (holds, clear), names in left.items():
    print(f"optimizer holds {holds:14}  {clear}.zero_grad()  leaves a gradient on: {names}")
assert left[("all parameters", "model")] == left[("all parameters", "optimizer")] == []
assert left[("fc only", "model")] == []
assert left[("fc only", "optimizer")] == ["conv1.weight", "conv2.weight"]

# %%
# Detectors
# ---------
#
# Four rules detect this pitfall in your own code (see :doc:`/detectors`): the runtime guard
# ``TP005`` (a backward that adds to gradients left from before the last optimizer step), and
# three rules of the static checker, ``TP103`` (a loop that calls ``backward()`` and ``step()``
# but never clears the gradients), ``TP124`` (a ``zero_grad()`` between a ``backward()`` and the
# ``step()`` that should use its gradients) and ``TP129`` (a loop that clears other optimizers'
# gradients but not those of an optimizer it steps).
# Under :mod:`torch_pitfalls.guards`, the loop without ``zero_grad()`` warns, once per line, and
# the fixed loop is silent.
# So is gradient accumulation on purpose (:ref:`gradient-accumulation`): several backward passes
# between two clearings, and one step.

seed_everything(0)
net = TwoConvNet().to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP005 "):
        for _ in range(3):
            F.cross_entropy(net(images), targets).backward()  # no zero_grad()
            optimizer.step()
with guards(language="en") as fixed:
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(net(images), targets).backward()
        optimizer.step()
    for _ in range(2):  # one step for the gradients of two half-batches, added on purpose
        optimizer.zero_grad()
        for part, part_targets in zip(images.chunk(2), targets.chunk(2), strict=True):
            (F.cross_entropy(net(part), part_targets) / 2).backward()
        optimizer.step()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP005"] and fixed.ids == []

# %%
# ``TP124`` is opt-in (``--enable TP124``): it found nothing in the public code it was tried on,
# so its rate of false alarms is not measured yet.
# It reports a ``zero_grad()`` called on the optimizer that the step steps, or on a model whose
# parameters that optimizer holds, in one block of straight-line code.
# Gradient accumulation, which steps and clears every few batches under an ``if``, is left alone,
# and so is a GAN, where each network is cleared before its own backward.
# Run on the wrong order above and on the fix, it flags the first only:

from torch_pitfalls.lint import check_source

wrong_code = """
import torch.nn.functional as F

for images, targets in loader:
    loss = F.cross_entropy(net(images), targets)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
"""
fixed_code = """
import torch.nn.functional as F

for images, targets in loader:
    optimizer.zero_grad()
    loss = F.cross_entropy(net(images), targets)
    loss.backward()
    optimizer.step()
"""
static = {
    name: check_source(code, path=f"{name}.py", language="en", enable="TP124")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [(f.line, f.rule) for f in static["wrong"]] == [(7, "TP124")] and static["fixed"] == []

# %%
# ``TP129``, opt-in too (``--enable TP129``) and for the same reason, finds the slip of the
# section above in a loop with two optimizers: it steps one whose ``zero_grad()`` it never calls
# while it clears another's, so the first one's gradients keep accumulating.
# A loop that also calls ``model.zero_grad()``, clears gradients by hand, or calls a function of
# the same file that may clear them is left alone:

two_optimizers = """
import torch
import torch.nn.functional as F

for images, targets in loader:
    optimizer_features.zero_grad()
    F.cross_entropy(net(images), targets).backward()
    optimizer_features.step()
    optimizer_classifier.step()
"""
found = check_source(two_optimizers, path="two.py", language="en", enable="TP129")
for finding in found:
    print(finding)
assert [(f.line, f.rule) for f in found] == [(9, "TP129")]

# %%
# Takeaway
# --------
#
# **Backward adds to the gradients: call** ``optimizer.zero_grad()`` **once per step, before
# the backward, or the gradients of past batches pile up.**
# Never call it between the backward and the step: there it clears the gradients the step was to
# use, and the weights do not move.
# Since PyTorch 2.0 a cleared gradient is ``None``, not zeros: check for ``None`` before touching
# ``.grad``, and remember that a gradient of zeros still lets momentum, weight decay and Adam move
# the weights.
# Use ``model.zero_grad()`` when the optimizer does not hold every parameter.
