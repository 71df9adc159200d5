"""
.. _bce-with-logits:

``BCELoss(sigmoid(x))`` versus ``BCEWithLogitsLoss``
====================================================

A binary classifier that ends in a sigmoid and feeds the probability to
:class:`~torch.nn.BCELoss` computes the same loss as :class:`~torch.nn.BCEWithLogitsLoss` on the
logit, as long as the logit is moderate.
When the model is confidently wrong, the sigmoid rounds to exactly 0 or 1: the loss is clamped and
the gradient vanishes, so the examples the model most needs to learn from teach it nothing.
Under CUDA autocast, :class:`~torch.nn.BCELoss` is refused outright.
And a binary classifier with one output unit fed to :class:`~torch.nn.CrossEntropyLoss` gets a loss
of exactly zero.

.. admonition:: What you will learn

   * why the gradient through ``sigmoid`` and :class:`~torch.nn.BCELoss` vanishes for large
     logits, and why :class:`~torch.nn.BCEWithLogitsLoss` stays exact;
   * why CUDA autocast refuses :class:`~torch.nn.BCELoss` and accepts
     :class:`~torch.nn.BCEWithLogitsLoss`;
   * why :class:`~torch.nn.CrossEntropyLoss` on a single output unit is always zero, and the two
     correct ways to build a binary classifier.

.. admonition:: Prerequisites

   :ref:`cross-entropy-expects-logits` (losses that take logits, and probability targets).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.cuda_section`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# Five logits of a binary classifier, from mildly to extremely confident that the class is 1,
# while the true class of all five is 0.
# Each loss is computed both ways, per sample (``reduction="sum"``, so that the gradient of each
# logit is that sample's own), next to the exact value ``log(1 + eˣ)`` computed in float64:
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

values = [2.0, 5.0, 10.0, 20.0, 50.0]
target = torch.zeros(len(values), device=device)

logits_a = torch.tensor(values, device=device, requires_grad=True)
loss_bce = F.binary_cross_entropy(torch.sigmoid(logits_a), target, reduction="none")
loss_bce.sum().backward()

logits_b = torch.tensor(values, device=device, requires_grad=True)
loss_logits = F.binary_cross_entropy_with_logits(logits_b, target, reduction="none")
loss_logits.sum().backward()

exact = F.softplus(torch.tensor(values, dtype=torch.float64))  # log(1 + e^x), the true loss
exact_grad = torch.sigmoid(torch.tensor(values, dtype=torch.float64))  # sigmoid(x) - target
print("logit   exact loss   BCELoss(sigmoid)   BCEWithLogitsLoss   grad: BCELoss   WithLogits")
for i, value in enumerate(values):
    print(
        f"{value:5.0f}   {exact[i]:10.4f}   {loss_bce[i]:16.4f}   {loss_logits[i]:17.4f}"
        f"   {logits_a.grad[i]:13.4f}   {logits_b.grad[i]:10.4f}"
    )
torch.testing.assert_close(loss_logits.double().cpu(), exact, rtol=1e-6, atol=0)
torch.testing.assert_close(logits_b.grad.double().cpu(), exact_grad, rtol=1e-6, atol=0)
saturated = torch.tensor(values, device=device) >= 20
assert (loss_bce[saturated] == 100).all() and (logits_a.grad[saturated] == 0).all()

# %%
# For the two most confident mistakes, :class:`~torch.nn.BCELoss` reports a loss of exactly 100,
# whatever the logit, and a gradient of exactly zero; :class:`~torch.nn.BCEWithLogitsLoss` reports
# the true loss and a gradient close to 1.
# In training, that zero gradient means the model never corrects these examples.
# A single logit stuck at 20 for an example of class 0, trained with plain gradient descent on
# each loss:


def train_logit(with_logits, steps=30):
    logit = torch.tensor([20.0], device=device, requires_grad=True)
    optimizer = torch.optim.SGD([logit], lr=1.0)
    zero = torch.zeros(1, device=device)
    for _ in range(steps):
        optimizer.zero_grad()
        if with_logits:
            loss = F.binary_cross_entropy_with_logits(logit, zero)
        else:
            loss = F.binary_cross_entropy(torch.sigmoid(logit), zero)
        loss.backward()
        optimizer.step()
    return logit.item()


logit_after_bce = train_logit(with_logits=False)
logit_after_logits = train_logit(with_logits=True)
print(
    f"after 30 steps: BCELoss(sigmoid) {logit_after_bce:.4f}, "
    f"BCEWithLogitsLoss {logit_after_logits:.4f}"
)
assert logit_after_bce == 20.0 and logit_after_logits < 0

# %%
# With :class:`~torch.nn.BCELoss` the logit has not moved at all; with
# :class:`~torch.nn.BCEWithLogitsLoss` it crossed 0, so the example is now classified correctly.
#
# Why
# ---
#
# **In float32 the sigmoid of 20 is exactly 1.**
# ``σ(20) = 1 − 2·10⁻⁹``, but the largest float32 number below 1 is ``1 − 6·10⁻⁸``, so the result
# rounds to 1.0.
# The probability of class 0 is then ``1 − p = 0``, and its log is ``−∞``.
# :class:`~torch.nn.BCELoss` clamps its logs at −100 (its documentation says so), which is where
# the loss of 100 comes from.
# On the way back, the sigmoid's derivative ``p·(1 − p)`` is ``1 · 0 = 0``, and no gradient
# reaches the logit:

one = torch.tensor(1.0, device=device)
largest_below_one = torch.nextafter(one, torch.tensor(0.0, device=device))
p20 = torch.sigmoid(torch.tensor(20.0, device=device))
print(f"largest float32 below 1: {largest_below_one.item():.10f}")
print(f"sigmoid(20) in float32:  {p20.item():.10f}  equal to 1: {bool(p20 == 1)}")
print(f"log(1 - sigmoid(20)): {torch.log(1 - p20).item()}  derivative p(1 - p): {p20 * (1 - p20)}")
assert p20 == 1 and torch.log(1 - p20) == float("-inf") and p20 * (1 - p20) == 0

# %%
# **The logit still holds the information that the probability lost.**
# :class:`~torch.nn.BCEWithLogitsLoss` never forms the probability: for a logit ``x`` and a
# target ``y`` it evaluates ``max(x, 0) − x·y + log(1 + e^(−|x|))``, the same loss written so that
# no term overflows or rounds to nothing (the log-sum-exp trick its documentation mentions),
# and its gradient is ``σ(x) − y``, which is 1 − 2·10⁻⁹ here, not 0:

x, y = torch.tensor(values, device=device), target
stable = x.clamp(min=0) - x * y + torch.log1p(torch.exp(-x.abs()))
print("by hand:", stable)
torch.testing.assert_close(stable, loss_logits.detach())

# %%
# The fix
# -------
#
# **End the model with the logit, and give it to** :class:`~torch.nn.BCEWithLogitsLoss`.
# Apply :func:`torch.sigmoid` only where a probability is needed, outside the loss; for a
# prediction, a logit above 0 is a probability above 0.5:

seed_everything(0)
classifier = nn.Linear(4, 1).to(device)  # no nn.Sigmoid() at the end
features = torch.randn(8, 4).to(device)  # drawn on the CPU: the same values on every device
labels = torch.randint(0, 2, (8, 1)).float().to(device)
logits = classifier(features)
loss = nn.BCEWithLogitsLoss()(logits, labels)
probabilities = torch.sigmoid(logits)  # for reporting only
print(f"loss: {loss.item():.4f}  predicted classes: {(logits > 0).int().flatten().tolist()}")
assert torch.equal(logits > 0, probabilities > 0.5)
torch.testing.assert_close(loss, nn.BCELoss()(probabilities, labels))  # moderate logits: same

# %%
# The opposite slip, the logits given to :class:`~torch.nn.BCELoss`, which expects
# probabilities, stops at the first value outside ``[0, 1]``: on the CPU with the error below,
# on CUDA with a device-side assert (see :ref:`index-select`).

assert ((logits < 0) | (logits > 1)).any()  # this batch's logits leave [0, 1]
with expect_raises(RuntimeError, "all elements of input should be between 0 and 1"):
    nn.BCELoss()(logits.detach().cpu(), labels.cpu())

# %%
# Under CUDA autocast, ``BCELoss`` is refused
# -------------------------------------------
#
# CUDA autocast (:class:`torch.autocast` with ``device_type="cuda"``) refuses
# :func:`~torch.nn.functional.binary_cross_entropy` and :class:`~torch.nn.BCELoss` with an error.
# PyTorch's `autocast op reference
# <https://docs.pytorch.org/docs/stable/amp.html#autocast-op-reference>`_ gives the reason: their
# backward can produce gradients that float16 cannot represent, and casting a float16 input up to
# float32 would not help, because backward casts the gradient back to float16.
# The error message recommends the logits version, which autocast runs in float32.
# **Code that trains fine in float32 fails the moment mixed precision is switched on.**
#
# Float16 also makes the sigmoid saturate much sooner: its largest number below 1 is
# ``1 − 5·10⁻⁴``, so the sigmoid already rounds to 1 at a logit of 9:

half_one = torch.tensor(1.0, device=device, dtype=torch.float16)
half_below_one = torch.nextafter(half_one, torch.zeros_like(half_one))
p9 = torch.sigmoid(torch.tensor(9.0, device=device, dtype=torch.float16))
print(f"largest float16 below 1: {half_below_one.item()}  sigmoid(9) in float16: {p9.item()}")
assert p9 == 1 and 1 - half_below_one.item() > 4e-4

# %%
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

with cuda_section(device, "BCELoss under CUDA autocast") as live:
    if live:
        with torch.autocast(device_type="cuda"):
            half_logits = classifier(features)
            print("logits under autocast:", half_logits.dtype)
            with expect_raises(RuntimeError, "unsafe to autocast"):
                nn.BCELoss()(torch.sigmoid(half_logits), labels)
            autocast_loss = nn.BCEWithLogitsLoss()(half_logits, labels)
        print("BCEWithLogitsLoss under autocast:", autocast_loss.dtype)
        assert half_logits.dtype == torch.float16 and autocast_loss.dtype == torch.float32

# %%
# The refusal is CUDA's only.
# CPU autocast, in bfloat16, runs :class:`~torch.nn.BCELoss` in float32 without a word, so a test
# suite that runs on the CPU does not catch what the GPU run will refuse:

with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    cpu_logits = classifier.cpu()(features.cpu())
    cpu_loss = nn.BCELoss()(torch.sigmoid(cpu_logits), labels.cpu())
classifier.to(device)
print("CPU autocast: logits", cpu_logits.dtype, " BCELoss", cpu_loss.dtype)
assert cpu_logits.dtype == torch.bfloat16 and cpu_loss.dtype == torch.float32

# %%
# The CPU's and CUDA's lists of operations that autocast runs in float32 differ in other ways too,
# and a loss written by hand is on neither (:ref:`half-precision-accumulation`).
#
# One output unit and ``CrossEntropyLoss``: a loss of exactly zero
# ----------------------------------------------------------------
#
# A related mistake: a binary classifier with a single output unit, its 0/1 labels as floats of
# shape ``(N, 1)`` (as :class:`~torch.nn.BCEWithLogitsLoss` wants them), and
# :class:`~torch.nn.CrossEntropyLoss` as the loss.
# Nothing fails, the loss is zero from the first step, and the weights never change:

seed_everything(0)
one_unit = nn.Linear(4, 1).to(device)
weight_before = one_unit.weight.detach().clone()
optimizer = torch.optim.SGD(one_unit.parameters(), lr=1.0)
for _ in range(10):
    optimizer.zero_grad()
    zero_loss = nn.CrossEntropyLoss()(one_unit(features), labels)
    zero_loss.backward()
    optimizer.step()
print(f"loss: {abs(zero_loss.item())}  (equal to 0: {zero_loss.item() == 0})")
print("weight gradient:", one_unit.weight.grad)
print("weights unchanged after 10 steps:", torch.equal(one_unit.weight, weight_before))
assert zero_loss.item() == 0 and torch.equal(one_unit.weight, weight_before)

# %%
# **A softmax over a single class is always 1, so its log is always 0.**
# :class:`~torch.nn.CrossEntropyLoss` applies :func:`~torch.log_softmax` across the output units;
# with one unit, every row is ``[0]``.
# A float target of the input's shape is read as class probabilities (see
# :ref:`cross-entropy-expects-logits`), and the loss ``−Σ y · log_softmax(x)`` is ``−y · 0`` for
# every sample: zero, whatever the model outputs.
# With class indices as the target instead, label 1 is out of range for one class, and the CPU
# says so (on CUDA it is a device-side assert, see :ref:`cross-entropy-expects-logits`):

print("log_softmax over one unit:", one_unit(features).log_softmax(dim=1).flatten())
assert (one_unit(features).log_softmax(dim=1) == 0).all()
with expect_raises(IndexError, "out of bounds"):
    nn.CrossEntropyLoss()(one_unit(features).cpu(), labels.long().flatten().cpu())

# %%
# **Two classes need either one output unit with** :class:`~torch.nn.BCEWithLogitsLoss` **or two
# output units with** :class:`~torch.nn.CrossEntropyLoss` **and class indices.**
# Both are the same model: two logits ``[0, z]`` give the softmax probability ``σ(z)`` for class
# 1, so cross-entropy on them equals the binary loss on ``z``:

z = one_unit(features)
two_logits = torch.cat([torch.zeros_like(z), z], dim=1)  # (N, 2)
loss_one_unit = nn.BCEWithLogitsLoss()(z, labels)
loss_two_units = nn.CrossEntropyLoss()(two_logits, labels.long().flatten())
print(
    f"BCEWithLogitsLoss on 1 unit: {loss_one_unit.item():.6f}  "
    f"CrossEntropyLoss on 2 units: {loss_two_units.item():.6f}"
)
torch.testing.assert_close(loss_one_unit, loss_two_units)

# %%
# Changed in PyTorch 1.10
# -----------------------
#
# Up to PyTorch 1.9, the target of :class:`~torch.nn.CrossEntropyLoss` held class indices only:
# float 0/1 labels of shape ``(N, 1)`` had the wrong dtype and shape, and the call failed.
# Since `PyTorch 1.10 <https://github.com/pytorch/pytorch/releases/tag/v1.10.0>`_, a float target
# of the input's shape is read as class probabilities
# (`#61044 <https://github.com/pytorch/pytorch/pull/61044>`_).
# **The single-output mistake that used to raise now runs, with a loss of zero.**

# %%
# A real-world report
# -------------------
#
# In `Lightning issue #13871 <https://github.com/Lightning-AI/pytorch-lightning/issues/13871>`_, a
# model whose forward pass ended in a sigmoid, trained with :class:`~torch.nn.BCELoss`, worked in
# full precision and stopped with the "unsafe to autocast" error as soon as the trainer was set to
# 16-bit precision.
# The cure is the one above: return the logit from the model, use
# :class:`~torch.nn.BCEWithLogitsLoss`, and apply the sigmoid only for predictions.

# %%
# Detectors
# ---------
#
# The runtime guard ``TP011`` detects the single output unit in your own code (see
# :doc:`/detectors`): :func:`~torch.nn.functional.cross_entropy`, which
# :class:`~torch.nn.CrossEntropyLoss` calls, receiving an input with one class (``C == 1``), whose
# loss is zero whatever the values.
# Under :mod:`torch_pitfalls.guards`, the single-unit loss of this page warns, and both fixes are
# silent.
# The sigmoid in front of :class:`~torch.nn.BCELoss` has no detector: a probability looks like
# any other input in ``(0, 1)``.
from torch_pitfalls import PitfallWarning, expect_warns, guards

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP011 "):
        nn.CrossEntropyLoss()(one_unit(features), labels)
with guards(language="en") as fixed:
    nn.BCEWithLogitsLoss()(one_unit(features), labels)
    nn.CrossEntropyLoss()(two_logits, labels.long().flatten())
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP011"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **Never put a sigmoid in front of a loss: give the logit to** ``BCEWithLogitsLoss``.
# It is exact where ``BCELoss(sigmoid(x))`` clamps the loss and loses the gradient, and CUDA
# autocast accepts it.
# For two classes use one output unit with :class:`~torch.nn.BCEWithLogitsLoss`, or two with
# :class:`~torch.nn.CrossEntropyLoss`; a single unit under :class:`~torch.nn.CrossEntropyLoss`
# always has a loss of zero.
# The same rule for several classes is :ref:`cross-entropy-expects-logits`.
