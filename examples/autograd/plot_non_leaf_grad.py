"""
.. _non-leaf-grad:

``.grad`` of a non-leaf tensor
==============================

After ``loss.backward()`` every parameter has a gradient in :attr:`~torch.Tensor.grad`,
but an intermediate tensor, such as a hidden activation, has ``None`` there, and reading it warns.
The same happens to a weight created as ``torch.randn(3, requires_grad=True) * 0.01`` or with
``.to("cuda")`` at the end: it is no longer a *leaf*, so it gets no gradient and an optimizer
refuses it.

.. admonition:: What you will learn

   * which tensors are leaves (:attr:`~torch.Tensor.is_leaf`), and which ones backward fills
     ``.grad`` for;
   * how to get the gradient of an intermediate tensor: :meth:`~torch.Tensor.retain_grad` or
     :meth:`~torch.Tensor.register_hook`;
   * how to create a trainable tensor so that it stays a leaf.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (what autograd records) and :ref:`backward-step-zero-grad`
   (what backward fills).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A two-layer network, run step by step so that we keep the hidden activation ``hidden``
# (the first layer's output, before the ReLU).
# We want the gradient of the loss with respect to ``hidden``, to see which units matter.
# After backward, the first layer's weight has a gradient; **reading** ``hidden.grad`` **warns
# and gives** ``None``.
import torch
from torch import nn

from torch_pitfalls import cuda_section, expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

first = nn.Linear(3, 4).to(device)
head = nn.Linear(4, 1).to(device)
x = torch.randn(5, 3, device=device)

hidden = first(x)
loss = head(torch.relu(hidden)).sum()
loss.backward()
print("first.weight.grad is set:", first.weight.grad is not None)
# PyTorch 2.8 and older end the message with "for more informations", a typo fixed in 2.9
ending = "information" if torch.__version__ >= "2.9" else "informations"
with expect_warns(UserWarning, rf"not a leaf Tensor is being accessed\..*for more {ending}\."):
    hidden_grad = hidden.grad
print("hidden.grad:", hidden_grad)
assert first.weight.grad is not None
assert hidden_grad is None

# %%
# Until `PyTorch 1.5 <https://github.com/pytorch/pytorch/releases/tag/v1.5.0>`_ it returned
# ``None`` without a word; that release added the warning, in
# `PR 30531 <https://github.com/pytorch/pytorch/pull/30531>`_, which the message itself names.
#
# Why
# ---
#
# A **leaf** is a tensor that autograd did not compute: its :attr:`~torch.Tensor.grad_fn` is
# ``None``.
# Data you load and parameters you create are leaves; every result of a recorded operation is not.
# **Backward stores a gradient in** ``.grad`` **only for leaves that require grad**, the tensors an
# optimizer trains.
# Gradients of intermediate tensors are computed on the way, handed to the next node of the graph,
# and freed, which keeps backward's memory low.

rows = {
    "x (data)": x,
    "first.weight": first.weight,
    "hidden": hidden,
    "loss": loss,
}
for name, t in rows.items():
    grad_fn = t.grad_fn.name() if t.grad_fn is not None else None
    flags = f"is_leaf={t.is_leaf!s:5} requires_grad={t.requires_grad!s:5}"
    print(f"{name:13} {flags} grad_fn={grad_fn}")
assert x.is_leaf and not x.requires_grad
assert first.weight.is_leaf and first.weight.requires_grad
assert not hidden.is_leaf and not loss.is_leaf

# %%
# A tensor that does not require grad is a leaf too, but backward never reaches it:
# its ``.grad`` stays ``None``, and reading it does not warn (here any warning would be an error).
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("error")
    x_grad = x.grad
print("x.grad:", x_grad)
assert x_grad is None

# %%
# The fix
# -------
#
# **Call** :meth:`~torch.Tensor.retain_grad` **on the intermediate tensor before backward**:
# autograd then keeps its gradient in ``.grad``, like a leaf's.
# Here the loss is ``head(relu(hidden)).sum()``, so its gradient with respect to ``hidden`` is the
# head's weight wherever ``hidden`` is positive, and zero elsewhere: we check that.

hidden = first(x)
hidden.retain_grad()
loss = head(torch.relu(hidden)).sum()
loss.backward()
expected_hidden_grad = (hidden > 0) * head.weight.detach()
retained_grad = hidden.grad
print("hidden.grad:", retained_grad)
torch.testing.assert_close(retained_grad, expected_hidden_grad)

# %%
# ``retain_grad()`` is only allowed on a tensor that requires grad:

with expect_raises(RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"):
    x.retain_grad()

# %%
# :meth:`~torch.Tensor.register_hook` is the alternative: autograd calls the hook with the
# gradient when backward reaches the tensor, and stores nothing on the tensor.
# The hook can log, inspect, or return a modified gradient; remove it with its handle when done.
# :func:`torch.autograd.grad` is a third way: it returns the gradient instead of storing it.

seen = {}
hidden = first(x)
handle = hidden.register_hook(lambda grad: seen.setdefault("hidden", grad.clone()))
loss = head(torch.relu(hidden)).sum()
loss.backward()
handle.remove()
print("gradient seen by the hook:", seen["hidden"])
torch.testing.assert_close(seen["hidden"], expected_hidden_grad)

hidden = first(x)
(grad_via_autograd,) = torch.autograd.grad(head(torch.relu(hidden)).sum(), hidden)
torch.testing.assert_close(grad_via_autograd, expected_hidden_grad)

# %%
# A real-world report: the optimizer refuses my weight
# ----------------------------------------------------
#
# "I wrote linear regression by hand: ``w = torch.randn(3, 1, requires_grad=True) * 0.01``.
# After backward ``w.grad`` is ``None``, and the optimizer says it can't optimize a non-leaf
# Tensor."
# The scaling is an operation on a tensor that requires grad, so it is recorded, and ``w`` is its
# result, not the tensor created by ``randn``.

w = torch.randn(3, 1, device=device, requires_grad=True) * 0.01
print("w.is_leaf:", w.is_leaf, "| grad_fn:", w.grad_fn.name())
assert not w.is_leaf

loss = (x @ w).pow(2).mean()
loss.backward()
with expect_warns(UserWarning, "not a leaf Tensor", show=False):
    w_grad = w.grad
print("w.grad:", w_grad)
assert w_grad is None
with expect_raises(ValueError, "can't optimize a non-leaf Tensor"):
    torch.optim.SGD([w], lr=0.1)

# %%
# The gradient went to the tensor ``randn`` created, which nobody holds a name for any more.
# **Any operation after** ``requires_grad=True`` **makes a non-leaf**: a dtype conversion such as
# ``.double()`` does it too.

w = torch.randn(3, 1, device=device, requires_grad=True).double()
print("after .double(): is_leaf:", w.is_leaf, "| grad_fn:", w.grad_fn.name())
assert not w.is_leaf

# %%
# So does a move to another device: ``torch.randn(3, requires_grad=True).cuda()`` (or
# ``.to("cuda")``) copies the leaf to the GPU, and the copy is a non-leaf.
# A move to the device a tensor is already on returns the tensor itself, so on the CPU the line
# is harmless, which is why such code passes on a laptop and breaks on a GPU machine.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

created = torch.randn(3, requires_grad=True)
moved = created.to(device)
assert created.to("cpu") is created  # already there: the same tensor, still a leaf
with cuda_section(device, "moving a leaf that requires grad to the GPU") as live:
    if live:
        print("moved to cuda: same tensor:", moved is created, "| is_leaf:", moved.is_leaf)
        assert moved is not created and not moved.is_leaf
if not live:
    assert moved is created and moved.is_leaf

# %%
# **Create the tensor on its final device, with its final dtype and values, and only then make
# it require grad.**
# Either pass ``device=`` and ``dtype=`` to the factory and scale under :class:`torch.no_grad`,
# or build the values first and call :meth:`~torch.Tensor.requires_grad_` last, or wrap them in a
# :class:`~torch.nn.Parameter` (which is a leaf that requires grad).

w = (torch.randn(3, 1, device=device, dtype=torch.float64) * 0.01).requires_grad_()
p = nn.Parameter(torch.randn(3, 1, device=device) * 0.01)
print("w: is_leaf", w.is_leaf, "requires_grad", w.requires_grad, "dtype", w.dtype)
print("p: is_leaf", p.is_leaf, "requires_grad", p.requires_grad)
assert w.is_leaf and w.requires_grad and p.is_leaf and p.requires_grad

opt = torch.optim.SGD([w], lr=0.1)
w_before = w.detach().clone()
loss = (x.double() @ w).pow(2).mean()
loss.backward()
opt.step()
print("w.grad is set:", w.grad is not None, "| w changed:", not torch.equal(w.detach(), w_before))
assert w.grad is not None and not torch.equal(w.detach(), w_before)

# %%
# Modules do not have this problem: :meth:`~torch.nn.Module.to` moves each parameter in place,
# so after ``model.to(device)`` the parameters are the same leaves (:ref:`device-agnostic-code`).
# The initialisation counterpart of this report, changing a parameter's values in place, is
# :ref:`leaf-inplace-init`.
#
# Takeaway
# --------
#
# **Backward fills** ``.grad`` **only for leaves that require grad.**
# For an intermediate tensor call ``retain_grad()`` before backward, or use ``register_hook``;
# for a trainable tensor, set device, dtype and values first and ``requires_grad`` last, and
# check ``is_leaf`` when a gradient is unexpectedly ``None``.
