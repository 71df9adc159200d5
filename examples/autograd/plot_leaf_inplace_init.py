"""
.. _leaf-inplace-init:

Initialising a parameter in place
=================================

A custom initialisation often writes ``layer.weight.normal_(0, 0.01)`` or ``w.fill_(0.5)``.
On a parameter, or on any tensor created with ``requires_grad=True``, that line raises at once:
the tensor is a *leaf* that requires grad, and autograd refuses to record an in-place operation
on it.
Rewriting it out of place makes the error go away but silently turns the parameter into a
computed tensor that no optimizer can train.

.. admonition:: What you will learn

   * which tensors are leaves, and why autograd refuses in-place operations on them;
   * how to initialise parameters in place: :class:`torch.no_grad` or :mod:`torch.nn.init`;
   * why ``w = w * 0.01`` is not a fix;
   * how to write a gradient-descent step by hand, ``w -= lr * w.grad``, without the error.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (what autograd records) and :ref:`data-vs-detach`
   (the version counter, and the old ``.data`` way of initialising).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A :class:`~torch.nn.Linear` layer, and the initialisation many papers describe: weights drawn
# from a normal distribution with standard deviation 0.01.
# We write it with the in-place method ``normal_`` on the weight.
# **An in-place operation on a parameter raises before anything is computed.**
import torch

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

layer = torch.nn.Linear(4, 3).to(device)
print("weight is a leaf:", layer.weight.is_leaf, "| requires grad:", layer.weight.requires_grad)
assert layer.weight.is_leaf and layer.weight.requires_grad

with expect_raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"):
    layer.weight.normal_(0, 0.01)

# %%
# The same holds for a plain tensor created with ``requires_grad=True``, and for every in-place
# method (their names end in an underscore), here ``fill_``:

w = torch.zeros(3, device=device, requires_grad=True)
with expect_raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"):
    w.fill_(0.5)
print("w is unchanged:", w)
assert torch.equal(w, torch.zeros(3, device=device))

# %%
# Why
# ---
#
# A **leaf** is a tensor that autograd did not compute: you created it, as with every
# :class:`~torch.nn.Parameter`.
# Its :attr:`~torch.Tensor.grad_fn` is ``None``, and backward stores its gradient in
# :attr:`~torch.Tensor.grad`: leaves that require grad are what an optimizer trains.
# With grad mode on, autograd records every operation on a tensor that requires grad.
# Recording ``normal_`` on the leaf would make the leaf the *result* of an operation, so it would
# stop being a leaf, and its original value, the start of every gradient path, would be gone.
# **Autograd refuses to rewrite the history of a leaf that requires grad, so it raises instead.**
#
# The same line works on a tensor that does not require grad (yet), because nothing is recorded
# for it:

v = torch.zeros(3, device=device)
_ = v.fill_(0.5)
_ = v.requires_grad_()
print("v:", v, "| leaf:", v.is_leaf)
assert v.is_leaf and v.requires_grad
assert torch.equal(v.detach(), torch.full((3,), 0.5, device=device))

# %%
# The tempting rewrite is out of place: ``weight = weight * 0.01``.
# It raises nothing, because it does not touch the leaf: it computes a new tensor.
# That new tensor has a ``grad_fn``, so it is **not** a leaf, backward leaves its ``.grad`` empty,
# and an optimizer refuses it (see :ref:`non-leaf-grad`).

w = torch.randn(3, device=device, requires_grad=True)
w = w * 0.01
print("after w = w * 0.01: leaf:", w.is_leaf, "| grad_fn:", w.grad_fn.name())
assert not w.is_leaf
with expect_raises(ValueError, "can't optimize a non-leaf Tensor"):
    torch.optim.SGD([w], lr=0.1)

# %%
# The fix
# -------
#
# **Initialise parameters inside** :class:`torch.no_grad`: grad mode is off, nothing is recorded,
# and the in-place methods are allowed.
# The weight keeps its identity: it is still the same leaf, still requires grad, and any
# optimizer already holding it sees the new values.

layer = torch.nn.Linear(4, 3).to(device)
weight_before = layer.weight.detach().clone()
weight_object = layer.weight
with torch.no_grad():
    layer.weight.normal_(0, 0.01)
    layer.bias.fill_(0.5)
print("weight:", layer.weight)
print("bias:", layer.bias)
print("still a leaf that requires grad:", layer.weight.is_leaf and layer.weight.requires_grad)
assert layer.weight is weight_object
assert layer.weight.is_leaf and layer.weight.requires_grad and layer.bias.is_leaf
assert not torch.equal(layer.weight.detach(), weight_before)
assert torch.equal(layer.bias.detach(), torch.full((3,), 0.5, device=device))

# %%
# The functions of :mod:`torch.nn.init` do exactly that for you: each runs under ``no_grad`` and
# modifies the tensor in place (their names end in an underscore, like
# :func:`torch.nn.init.normal_` and :func:`torch.nn.init.zeros_`).
# To initialise a whole model, pass a function to :meth:`~torch.nn.Module.apply`, which calls it
# on every submodule.


def init_weights(module):
    """Normal(0, 0.01) weights and zero biases for every Linear layer."""
    if isinstance(module, torch.nn.Linear):
        torch.nn.init.normal_(module.weight, mean=0.0, std=0.01)
        torch.nn.init.zeros_(module.bias)


model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(
    device
)
before_init = [p.detach().clone() for p in model.parameters()]
_ = model.apply(init_weights)
changed = [
    not torch.equal(b, p.detach()) for b, p in zip(before_init, model.parameters(), strict=True)
]
all_leaves = all(p.is_leaf and p.requires_grad for p in model.parameters())
print("each parameter changed:", changed)
print("every parameter still a leaf that requires grad:", all_leaves)
assert all(changed) and all_leaves
assert all(torch.count_nonzero(m.bias) == 0 for m in model if isinstance(m, torch.nn.Linear))

# %%
# The model trains as usual: backward fills every parameter's ``.grad``.

loss = model(torch.randn(5, 4, device=device)).pow(2).mean()
loss.backward()
grads_filled = all(p.grad is not None for p in model.parameters())
print("every parameter has a gradient:", grads_filled)
assert grads_filled

# %%
# Classic code writes ``layer.weight.data.normal_(0, 0.01)`` instead.
# It still works, but ``.data`` bypasses the version counter, and the same habit elsewhere
# silently corrupts gradients: :ref:`data-vs-detach` shows how.
# ``no_grad`` does not hide the edit from the version counter.
# Re-initialise the model between a forward pass and its backward, and the backward raises
# instead of mixing old activations with new weights (:ref:`inplace-saved-tensor`).
# **Initialise before the forward pass, under no_grad; never through .data.**

loss = model(torch.randn(5, 4, device=device)).pow(2).mean()
_ = model.apply(init_weights)
with expect_raises(RuntimeError, "modified by an inplace operation"):
    loss.backward()

# %%
# A hand-written update step
# --------------------------
#
# The same error stops a training loop written without an optimizer, at the update rule of
# gradient descent, ``w -= lr * w.grad``.
# Backward has run, grad mode is still on, and the update is an in-place operation on a leaf that
# requires grad:

data_generator = torch.Generator().manual_seed(2)  # its own CPU generator: the same x everywhere
x = torch.randn(16, 3, generator=data_generator).to(device)
y = x @ torch.tensor([1.0, -2.0, 0.5], device=device)
lr = 0.1


def mse(w):
    return (x @ w - y).pow(2).mean()


w = torch.zeros(3, device=device, requires_grad=True)
mse(w).backward()
with expect_raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"):
    w -= lr * w.grad

# %%
# Written out of place, ``w = w - lr * w.grad``, the first step runs, and makes ``w`` the result
# of a subtraction: a tensor with a ``grad_fn``, no longer a leaf.
# **The next backward leaves its .grad empty: PyTorch warns when it is read, and the second update
# fails on None** (:ref:`non-leaf-grad` explains the warning).

w = torch.zeros(3, device=device, requires_grad=True)
mse(w).backward()
w = w - lr * w.grad
print("after one step: leaf:", w.is_leaf, "| grad_fn:", w.grad_fn.name())
assert not w.is_leaf
mse(w).backward()
with expect_warns(UserWarning, "not a leaf Tensor is being accessed"):
    with expect_raises(TypeError, r"unsupported operand type\(s\) for \*: 'float' and 'NoneType'"):
        w = w - lr * w.grad

# %%
# **Update inside torch.no_grad(), then clear the gradient**, since backward adds to ``.grad``
# (:ref:`backward-step-zero-grad`).
# ``w`` stays the same leaf, step after step, and the loss goes down:

w = torch.zeros(3, device=device, requires_grad=True)
w_object = w
losses = []
for _ in range(20):
    loss = mse(w)
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
    w.grad = None
    losses.append(loss.item())
print(f"loss: step 1 {losses[0]:.4f}, step 20 {losses[-1]:.6f}")
print("the same leaf after 20 steps:", w is w_object and w.is_leaf)
assert w is w_object and w.is_leaf and w.requires_grad
assert losses[-1] < losses[0] / 100

# %%
# This is what :meth:`torch.optim.SGD.step <torch.optim.Optimizer.step>` does for you: it updates
# the parameters in place under ``no_grad``.
# Old tutorials write ``w.data -= lr * w.grad`` instead; it works, with the risks of ``.data``
# that :ref:`data-vs-detach` shows.

# %%
# Takeaway
# --------
#
# **A parameter is a leaf that requires grad: change it in place only inside**
# ``torch.no_grad()`` **or with the** ``torch.nn.init`` **functions, never through** ``.data``
# **and never by reassigning** ``w = w * c``.
# Both fixes keep the same tensor object, still a leaf, still trainable.
