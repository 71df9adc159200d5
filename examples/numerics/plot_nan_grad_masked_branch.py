"""
.. _nan-grad-masked-branch:

NaN gradients from the branch you did not take
==============================================

:func:`torch.where` picks, element by element, between two tensors that have both been computed.
When one of them is invalid where it is not picked — a square root of a negative number, a
logarithm of zero — the forward pass hides it, but the backward pass does not: the gradient is NaN
exactly there, and one optimizer step later so are the weights.
A norm written by hand, ``sqrt((v ** 2).sum())``, fails the same way at zero.

.. admonition:: What you will learn

   * why a branch that :func:`torch.where` did not select still sends a NaN into the gradient;
   * how :class:`torch.autograd.detect_anomaly` names the operation whose backward produced it,
     and the line of your forward pass that called it;
   * how to make the untaken branch safe ("double where"), and which built-in functions already
     handle zero.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (what autograd records) and
   :ref:`backward-step-zero-grad` (what ``backward()`` writes into ``.grad``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A function that should be ``sqrt(x)`` for positive ``x`` and 0 elsewhere, written with
# :func:`torch.where`.
# The forward pass gives exactly what we want:
import torch

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


def masked_sqrt(x):
    return torch.where(x > 0, torch.sqrt(x), 0.0)


x = torch.tensor([-1.0, 0.0, 4.0], device=device, requires_grad=True)
y = masked_sqrt(x)
print("forward:", y.tolist())
assert y.tolist() == [0.0, 0.0, 2.0]

# %%
# The gradient of the selected branches is 0 for ``x ≤ 0`` and ``1 / (2 * sqrt(x))`` for
# ``x > 0``, that is ``[0, 0, 0.25]``. Autograd gives:

y.sum().backward()
print("gradient:", x.grad.tolist())
assert x.grad.isnan().tolist() == [True, True, False] and x.grad[2].item() == 0.25

# %%
# **The gradient is NaN wherever the square root was invalid or infinite, although where() never
# selected it there.**
# One optimizer step spreads the NaN to the weights, and from there to every later output.
#
# A norm written by hand has the same problem at zero, for example a distance between two
# embeddings that happen to be equal:

v = torch.zeros(3, device=device, requires_grad=True)
norm = torch.sqrt((v**2).sum())
norm.backward()
print(f"norm: {norm.item()} | gradient: {v.grad.tolist()}")
assert norm.item() == 0.0 and v.grad.isnan().all()

# %%
# Finding where the NaN comes from
# --------------------------------
#
# In a real model the NaN shows up far from its origin: in the loss a few steps later, or in the
# weights.
# :class:`torch.autograd.detect_anomaly` checks the output of every backward function: the first
# one that returns a NaN raises an error naming it, and a warning shows the line of the forward
# pass that created it.
# It slows everything down, so turn it on only to debug.

x = torch.tensor([-1.0, 0.0, 4.0], device=device, requires_grad=True)
with expect_warns(UserWarning, "Error detected in SqrtBackward0", show=False) as caught:
    with expect_raises(RuntimeError, "Function 'SqrtBackward0' returned nan values"):
        with torch.autograd.detect_anomaly():
            masked_sqrt(x).sum().backward()

trace = caught.message.splitlines()
source_lines = [line.strip() for line in trace if line.startswith("    ")]
print(trace[0])
print("the innermost line of the forward traceback:", source_lines[-1])
assert "torch.sqrt(x)" in source_lines[-1]

# %%
# ``SqrtBackward0`` is the backward of :func:`torch.sqrt`, and the traceback points at the
# ``where`` line inside ``masked_sqrt``.
#
# Why
# ---
#
# Backward applies the chain rule to every operation of the forward pass, element by element.
# The backward of ``where`` sends the incoming gradient to the selected branch and a gradient of
# **zero** to the other one.
# The backward of ``sqrt`` then multiplies that zero by its own derivative, ``1 / (2 * sqrt(x))``,
# which is NaN for ``x < 0`` and infinite for ``x = 0``.
# **Autograd does not skip elements whose incoming gradient is zero, and in floating point, zero
# times infinity or NaN is NaN:**

zero = torch.tensor(0.0, device=device)
products = [(zero * torch.tensor(v, device=device)).item() for v in (float("inf"), float("nan"))]
print("0 × inf, 0 × nan:", products)
assert all(torch.tensor(products).isnan())

# %%
# The same happens with a mask written as a product, ``mask * torch.sqrt(x)``, and with any
# function whose derivative is infinite or NaN where it is masked out: ``log`` at 0, ``exp`` of a
# large number that overflows, a division by zero.
# With ``log``, anomaly mode names ``LogBackward0``:

x = torch.tensor([0.0, 1.0, 2.0], device=device, requires_grad=True)
with expect_warns(UserWarning, "Error detected in LogBackward0", show=False):
    with expect_raises(RuntimeError, "Function 'LogBackward0' returned nan values"):
        with torch.autograd.detect_anomaly():
            torch.where(x > 0, torch.log(x), 0.0).sum().backward()

# %%
# Clamping the input to 0 is not enough for ``sqrt``: it removes the NaN at ``x < 0`` and keeps
# the infinite derivative at ``x = 0``, whose NaN ``clamp`` passes on to ``x`` (since PyTorch
# 2.14 it stops it there, by accident of its gradient at the bound: see "Changed in PyTorch 2.14"
# below):

x = torch.tensor([-1.0, 0.0, 4.0], device=device, requires_grad=True)
torch.where(x > 0, torch.sqrt(x.clamp(min=0)), 0.0).sum().backward()
print("gradient with clamp(min=0):", x.grad.tolist())
if torch.__version__ >= "2.14":
    assert x.grad.tolist() == [0.0, 0.0, 0.25]  # clamp's gradient at its bound is 0
else:  # PyTorch 2.13 and older: clamp passes the gradient through at its bound, NaN included
    assert x.grad.isnan().tolist() == [False, True, False]
(product_grad,) = torch.autograd.grad(((x > 0) * torch.sqrt(x)).sum(), x)  # mask as a product
assert product_grad.isnan().tolist() == [True, True, False]

# %%
# The fix
# -------
#
# **Make the untaken branch safe: replace the input where it will not be selected by a harmless
# value, then select as before.**
# This "double where" computes ``sqrt`` only of valid numbers, so its derivative is finite
# everywhere, and the zero gradient stays zero:


def safe_masked_sqrt(x):
    positive = x > 0
    safe_x = torch.where(positive, x, 1.0)  # any value where sqrt is well behaved
    return torch.where(positive, torch.sqrt(safe_x), 0.0)


x = torch.tensor([-1.0, 0.0, 4.0], device=device, requires_grad=True)
y_safe = safe_masked_sqrt(x)
y_safe.sum().backward()
print("forward:", y_safe.tolist(), "| gradient:", x.grad.tolist())
assert y_safe.tolist() == [0.0, 0.0, 2.0] and x.grad.tolist() == [0.0, 0.0, 0.25]

# %%
# For norms, use :func:`torch.linalg.vector_norm`: its gradient at zero is zero, a valid
# subgradient.
# Adding a small constant under the square root also works, at the price of a slightly wrong
# value everywhere.

v = torch.zeros(3, device=device, requires_grad=True)
torch.linalg.vector_norm(v).backward()
print("vector_norm gradient at zero:", v.grad.tolist())
assert v.grad.tolist() == [0.0, 0.0, 0.0]

# the report below: exp(a) for a <= 0, 1 + a otherwise, at a = 100; then with a double where
a = torch.tensor(100.0, device=device, requires_grad=True)
(report_grad,) = torch.autograd.grad(torch.where(a <= 0, torch.exp(a), 1 + a), a)
safe_a = torch.where(a <= 0, a, 0.0)
(report_fixed,) = torch.autograd.grad(torch.where(a <= 0, torch.exp(safe_a), 1 + a), a)
assert torch.exp(a).isinf() and report_grad.isnan() and report_fixed.item() == 1.0

# %%
# Changed in PyTorch 2.14: the gradient of ``clamp`` at its bound
# ---------------------------------------------------------------
#
# Up to PyTorch 2.13, :func:`torch.clamp`, ``clamp_min`` and ``clamp_max`` with a number as bound
# passed the incoming gradient through where the input equals the bound (a subgradient of 1,
# chosen in 2018 by `pull request #7049 <https://github.com/pytorch/pytorch/pull/7049>`_), while
# :func:`~torch.nn.functional.relu` and :func:`~torch.nn.functional.hardtanh`, the same functions,
# gave 0 there.
# `Pull request #191142 <https://github.com/pytorch/pytorch/pull/191142>`_ (after
# `issue #184574 <https://github.com/pytorch/pytorch/issues/184574>`_) made ``clamp`` give 0 at
# its bound, the minimum-norm subgradient, first released in PyTorch 2.14.
# **Since then, the NaN that sqrt's backward makes at x = 0 stops at clamp(min=0), a side effect
# of the bound's gradient: code without the clamp, like the mask written as a product above,
# still gets NaN, and the double where works on every release.**

at_bound = torch.tensor([0.0], device=device, requires_grad=True)
(clamp_grad,) = torch.autograd.grad(at_bound.clamp(min=0).sum(), at_bound)
(relu_grad,) = torch.autograd.grad(torch.relu(at_bound).sum(), at_bound)
print(f"gradient at the bound x = 0: clamp(min=0) {clamp_grad.item()}, relu {relu_grad.item()}")
assert relu_grad.item() == 0.0
assert clamp_grad.item() == (0.0 if torch.__version__ >= "2.14" else 1.0)

# %%
# acos and asin after clamp(-1, 1)
# --------------------------------
#
# An angle between two vectors is often computed as the arc cosine of their cosine similarity,
# for an angular loss or a geodesic distance.
# Rounding can push a cosine just above 1, where :func:`torch.acos` is NaN already in the
# forward pass, so the cosine is clamped into ``[-1, 1]`` first:

print("acos(1.0000001):", torch.acos(torch.tensor(1.0000001, device=device)).item())
assert torch.acos(torch.tensor(1.0000001, device=device)).isnan()

# %%
# The clamp fixes the forward pass, and puts the input exactly on the bound, where the
# derivatives of ``acos`` and ``asin``, ``∓1 / sqrt(1 - x²)``, are infinite.
# Below, the first prediction points in the direction of its target (its cosine is exactly 1:
# every number involved is an integer); the second is at a right angle to its target.

pred = torch.tensor([[2.0, 4.0, 4.0], [0.0, 1.0, 0.0]], device=device, requires_grad=True)
target = torch.tensor([[1.0, 2.0, 2.0], [1.0, 0.0, 0.0]], device=device)
cos = torch.nn.functional.cosine_similarity(pred, target, dim=1)
angle = torch.acos(cos.clamp(-1, 1))
(angle_grad,) = torch.autograd.grad(angle.sum(), pred)
print("cosine:", cos.tolist(), "| angle:", angle.tolist())
print("gradient of the angles:", angle_grad.tolist())
assert cos.tolist() == [1.0, 0.0] and angle.tolist()[0] == 0.0
if torch.__version__ >= "2.14":
    assert angle_grad[0].tolist() == [0.0, 0.0, 0.0]  # clamp's gradient at its bound is 0
else:  # PyTorch 2.13 and older: -inf passes the clamp, and 0 × -inf = NaN in the cosine
    assert angle_grad[0].isnan().all()
assert angle_grad[1].isfinite().all()

# %%
# Up to PyTorch 2.13, ``clamp`` passes the derivative at its bound through (see "Changed in
# PyTorch 2.14" above): ``acos`` at exactly 1 sends ``-inf`` back into the cosine similarity,
# whose own gradient at two parallel vectors is zero, and zero times infinity is NaN.
# **A prediction that is exactly right gets a NaN gradient.**
# Since PyTorch 2.14, the clamp gives 0 at its bound and stops the infinity there.
# The derivative of the clamped functions at the bound:

at_one = torch.tensor(1.0, device=device, requires_grad=True)
(acos_at_one,) = torch.autograd.grad(torch.acos(at_one.clamp(-1, 1)), at_one)
(asin_at_one,) = torch.autograd.grad(torch.asin(at_one.clamp(-1, 1)), at_one)
print(f"at x = 1: acos(clamp) {acos_at_one.item()}, asin(clamp) {asin_at_one.item()}")
if torch.__version__ >= "2.14":
    assert acos_at_one.item() == 0.0 and asin_at_one.item() == 0.0
else:
    assert acos_at_one.item() == float("-inf") and asin_at_one.item() == float("inf")

# %%
# **The double where fixes it on every release: acos only of values strictly inside (-1, 1),
# and a constant (0 or π) on the bounds and beyond.**
# The angles are unchanged, the gradient is 0 where the angle is at its extreme, and it is the
# same as before everywhere else.
# Clamping to ``[-1 + eps, 1 - eps]`` also keeps the gradient finite, but moves every angle near
# 0 or π to ``acos(1 - eps)``.


def safe_acos(c):
    inside = c.abs() < 1
    return torch.where(inside, torch.acos(torch.where(inside, c, 0.0)), (c < 0) * torch.pi)


safe_angle = safe_acos(torch.nn.functional.cosine_similarity(pred, target, dim=1))
(safe_grad,) = torch.autograd.grad(safe_angle.sum(), pred)
print("angle:", safe_angle.tolist(), "| gradient:", safe_grad.tolist())
assert torch.equal(safe_angle, angle) and safe_grad[0].tolist() == [0.0, 0.0, 0.0]
assert torch.equal(safe_grad[1], angle_grad[1])

# %%
# A real-world report: "torch.where produces nan in backward pass"
# ----------------------------------------------------------------
#
# In 2021 a user of PyTorch 1.9 selected ``exp(a)`` for ``a ≤ 0`` and ``1 + a`` otherwise with
# :func:`torch.where`, and got a NaN gradient at ``a = 100``, where the selected branch is
# linear and its derivative is 1
# (`pytorch/pytorch issue #68425 <https://github.com/pytorch/pytorch/issues/68425>`_).
# ``exp(100)`` overflows float32 to infinity in the untaken branch, and its zero gradient times
# infinity gives the NaN shown above.
# The issue is one of many with the same cause on PyTorch's tracker, where it carries the labels
# "module: autograd" and "module: NaNs and Infs".
# Here too the double where fixes it: give ``exp`` a harmless input where ``a > 0``.
#
# Takeaway
# --------
#
# **torch.where does not stop gradients from the branch it did not select: a NaN or infinite
# derivative there makes the gradient NaN.**
# Replace the input of the unsafe branch by a harmless value where it is not selected (double
# where), prefer :func:`torch.linalg.vector_norm` to a hand-written norm, and use
# :class:`torch.autograd.detect_anomaly` to find the operation when a NaN appears.
# Float32 matrix products can also be less exact than float32 suggests: :ref:`tf32-matmul`.
