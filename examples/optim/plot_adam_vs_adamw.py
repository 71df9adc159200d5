"""
.. _adam-vs-adamw:

``Adam(weight_decay=…)`` is not AdamW
=====================================

:class:`~torch.optim.Adam` and :class:`~torch.optim.AdamW` both take ``weight_decay``, and with
the same value they do different things.
Adam adds the decay to the gradient, where its adaptive denominator rescales it: every weight
moves by about the learning rate, whatever its size, and weights with small gradients are decayed
far more than weights with large ones.
AdamW shrinks every weight by the same fraction, apart from the gradient: the decoupled weight
decay that most recipes mean by "weight decay" with Adam.

.. admonition:: What you will learn

   * what one Adam step and one AdamW step do to a weight whose gradient is zero;
   * why Adam's decay depends on the gradients' scale, and AdamW's does not;
   * which one to choose, and why a ``weight_decay`` value does not carry over from one to the
     other.

.. admonition:: Prerequisites

   :ref:`weight-decay-norm-bias` (what weight decay does under SGD and AdamW).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# Two weights, one large (1.0) and one small (0.01), with a gradient of zero, and one step of each
# optimizer from the same starting point, with ``lr=1e-3`` and ``weight_decay=0.01``.
# Weight decay should shrink each weight in proportion to its size:
import torch

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

LR, DECAY = 1e-3, 0.01
start = torch.tensor([1.0, 0.01], device=device, dtype=torch.float64)  # exact arithmetic


def one_step(optimizer_class, **options):
    """How much one step with a zero gradient moves each weight (start minus result)."""
    weight = torch.nn.Parameter(start.clone())
    optimizer = optimizer_class([weight], lr=LR, weight_decay=DECAY, **options)
    weight.grad = torch.zeros_like(weight)
    optimizer.step()
    return (start - weight.detach()).tolist()


adam_moves = one_step(torch.optim.Adam)
adamw_moves = one_step(torch.optim.AdamW)
print("Adam moves the weights by: ", [f"{m:.2e}" for m in adam_moves])
print("AdamW moves the weights by:", [f"{m:.2e}" for m in adamw_moves])
fractions = {
    name: [f"{100 * m / w:.3g} %" for m, w in zip(moves, start.tolist(), strict=True)]
    for name, moves in (("Adam", adam_moves), ("AdamW", adamw_moves))
}
print("as a fraction of each weight:", fractions)
assert all(abs(m - LR) < 1e-6 for m in adam_moves)  # the learning rate, for both weights
expected_adamw = [LR * DECAY * w for w in start.tolist()]
assert all(abs(m - e) < 1e-9 for m, e in zip(adamw_moves, expected_adamw, strict=True))

# %%
# **Adam moved both weights by the learning rate: 10 % of the small weight, 0.1 % of the large
# one, and as far as a full step driven by the loss.**
# AdamW shrank each weight by ``lr * weight_decay`` times its value, the same fraction for both.
#
# Why
# ---
#
# **Adam's weight_decay is an L2 penalty: it adds weight_decay * w to the gradient, before the
# adaptive update divides the gradient by the root of its running mean square.**
# With a zero loss gradient, the gradient is ``weight_decay * w`` alone, and Adam's first step,
# ``lr * g / sqrt(g * g)``, is ``lr`` times its sign, whatever its size.
# In general the decay term is divided by the same denominator as the loss gradient: a weight whose
# gradients are large is barely decayed, a weight whose gradients are small is decayed hard.
#
# To see it, two weights equal to 1.0 receive gradients that alternate in sign, so that the loss
# pulls them nowhere on average, one of size 1 and one of size 0.001, for 100 steps
# (``lr=0.01``, ``weight_decay=0.1``):


def alternating(optimizer_class, steps=100, **options):
    """Both weights after ``steps`` steps of gradients +s, -s, +s ... with s = (1, 0.001)."""
    weight = torch.nn.Parameter(torch.ones(2, device=device))
    optimizer = optimizer_class([weight], lr=0.01, weight_decay=0.1, **options)
    size = torch.tensor([1.0, 0.001], device=device)
    for t in range(steps):
        weight.grad = size * (-1) ** t
        optimizer.step()
    return [round(w, 4) for w in weight.tolist()]


adam_after = alternating(torch.optim.Adam)
adamw_after = alternating(torch.optim.AdamW)
print("after 100 steps, gradients of size (1, 0.001):")
print("  Adam: ", adam_after)
print("  AdamW:", adamw_after)
assert adam_after[1] < 0.5 < 0.85 < adam_after[0]  # the small-gradient weight decays far more
assert abs(adamw_after[0] - adamw_after[1]) < 0.01  # AdamW: the same decay for both

# %%
# With Adam, how much a weight decays depends on its gradients, which is not what weight decay is
# for; with AdamW, both weights decayed alike.
# This is the argument of the paper that introduced AdamW,
# `Decoupled Weight Decay Regularization <https://arxiv.org/abs/1711.05101>`_ (Loshchilov and
# Hutter): under SGD, an L2 penalty and weight decay are the same thing up to a rescaling of the
# coefficient; under Adam they are not, and the paper reports better generalisation with the
# decoupled form.
#
# The fix
# -------
#
# **For weight decay with Adam, use AdamW**; keep ``Adam(weight_decay=...)`` for when you really
# want an L2 penalty.
# Since PyTorch 2.7, ``Adam(decoupled_weight_decay=True)`` is AdamW too (older releases refuse the
# argument, see "Changed in PyTorch 2.7" below):

if torch.__version__ >= "2.7":
    as_adamw = one_step(torch.optim.Adam, decoupled_weight_decay=True)
    print("Adam(decoupled_weight_decay=True) moves the weights by:", [f"{m:.2e}" for m in as_adamw])
    assert as_adamw == adamw_moves
else:  # PyTorch 2.6 and older: Adam has no such argument
    with expect_raises(TypeError, "unexpected keyword argument 'decoupled_weight_decay'"):
        one_step(torch.optim.Adam, decoupled_weight_decay=True)

# %%
# The two also differ in their defaults, and a value does not carry over from one to the other:
# AdamW multiplies the decay by the learning rate, so its coefficients are typically much larger
# than the L2 coefficients used with Adam.

defaults = {
    name: cls([torch.nn.Parameter(torch.zeros(1))]).defaults["weight_decay"]
    for name, cls in (("Adam", torch.optim.Adam), ("AdamW", torch.optim.AdamW))
}
print("default weight_decay:", defaults)
assert defaults == {"Adam": 0, "AdamW": 0.01}

# %%
# Whichever you use, leave biases and normalisation weights out of the decay
# (:ref:`weight-decay-norm-bias`).
#
# Changed in PyTorch 2.7: ``Adam(decoupled_weight_decay=True)``
# -------------------------------------------------------------
#
# Up to PyTorch 2.6, :class:`~torch.optim.Adam` and :class:`~torch.optim.AdamW` were two separate
# implementations, and ``Adam`` raised a ``TypeError`` for ``decoupled_weight_decay``.
# `PyTorch 2.7 <https://github.com/pytorch/pytorch/releases/tag/v2.7.0>`_ made AdamW a subclass
# of Adam that sets ``decoupled_weight_decay=True``
# (`pull request #143710 <https://github.com/pytorch/pytorch/pull/143710>`_, "Refactor AdamW into
# Adam").
# On every release, ``AdamW`` is the spelling that works:

print("AdamW is a subclass of Adam:", issubclass(torch.optim.AdamW, torch.optim.Adam))
assert issubclass(torch.optim.AdamW, torch.optim.Adam) == (torch.__version__ >= "2.7")

# %%
# A real-world report
# -------------------
#
# In 2020, a user read in Adam's documentation that its L2 penalty followed the paper on
# decoupled weight decay, concluded that Adam and AdamW were the same, then found a plain L2
# penalty in Adam's source and asked which was right
# (`pytorch/pytorch issue #48793 <https://github.com/pytorch/pytorch/issues/48793>`_).
# The same confusion had been raised a few months earlier
# (`pytorch/pytorch issue #42843 <https://github.com/pytorch/pytorch/issues/42843>`_): the
# sentence referred to a detail of the paper's algorithm, not to decoupled decay, which only AdamW
# implemented.
#
# Takeaway
# --------
#
# **Adam(weight_decay=...) adds an L2 penalty to the gradient, which the adaptive denominator
# rescales; AdamW shrinks the weights directly, by lr * weight_decay of their value.**
# Use AdamW (or ``decoupled_weight_decay=True``) for weight decay, and retune the coefficient when
# switching between the two.
