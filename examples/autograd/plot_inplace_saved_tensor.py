"""
.. _inplace-saved-tensor:

In-place operations on tensors saved for backward
=================================================

In-place operations such as ``y.mul_(2)``, ``y += 1`` or ``relu_`` save memory, and most of the
time they are fine.
But when the tensor they change was saved by an earlier operation for its backward pass, backward
fails with *one of the variables needed for gradient computation has been modified by an inplace
operation*, naming a tensor you may never have touched by that name.

.. admonition:: What you will learn

   * which tensors an operation saves for backward, and how autograd notices that one was changed;
   * how to read the error: the shape, the operation that produced the tensor, the versions;
   * which in-place operations are safe, and how :class:`torch.autograd.set_detect_anomaly`
     points at the culprit.

.. admonition:: Prerequisites

   :ref:`data-vs-detach` (the version counter) and :ref:`requires-grad-propagation`
   (what a graph records).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.saved_tensors`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A sigmoid gate, scaled by 2 in place to save a copy, then a backward pass.
# **Backward refuses: a tensor it needs was changed after it was saved.**
import torch

from torch_pitfalls import (
    expect_raises,
    expect_warns,
    get_device,
    guards,
    saved_tensors,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.randn(4, device=device, requires_grad=True)
gate = x.sigmoid()
_ = gate.mul_(2)
# PyTorch 2.12 and older name the backward node, SigmoidBackward0 (see "Changed in PyTorch 2.13")
node = "" if torch.__version__ >= "2.13" else "Backward0"
stale = rf"output 0 of Sigmoid{node}, is at version 1; expected version 0"
# PyTorch 2.10 and older hint set_detect_anomaly(True) (see "Changed in PyTorch 2.11")
check_nan = ", check_nan=False" if torch.__version__ >= "2.11" else ""
hint = rf"set_detect_anomaly\(True{check_nan}\)\.$"
with expect_raises(RuntimeError, stale + ".*" + hint):
    gate.sum().backward()

# %%
# The message names the changed tensor by its shape and by the operation that produced it
# ("output 0 of Sigmoid"; before PyTorch 2.13, its backward node "SigmoidBackward0"), then
# compares two versions: the one the tensor is at now, and the one autograd recorded when it
# saved it.
#
# Why
# ---
#
# Each operation saves what its backward formula needs.
# The derivative of the sigmoid is ``σ(x) · (1 − σ(x))``, so :meth:`~torch.Tensor.sigmoid`
# saves its own **output**; ``exp``, ``tanh`` and ``relu`` do the same.
# A product ``a * b`` saves both **inputs**, since the gradient for ``a`` is ``b`` and vice versa.
# We count what each one saves with :func:`~torch_pitfalls.saved_tensors`, and check that the
# sigmoid's saved tensor is its output itself, the same memory, not a copy.

x = torch.randn(4, device=device, requires_grad=True)
with saved_tensors() as saved_by_sigmoid:
    gate = x.sigmoid()
with saved_tensors() as saved_by_mul:
    product = x * gate
saved_is_output = gate.grad_fn._saved_result.data_ptr() == gate.data_ptr()
print("sigmoid saves", saved_by_sigmoid.count, "tensor; mul saves", saved_by_mul.count)
print("the sigmoid's saved tensor is its output:", saved_is_output)
assert (saved_by_sigmoid.count, saved_by_mul.count) == (1, 2)
assert saved_is_output

# %%
# Saving is cheap because nothing is copied, so autograd guards the saved tensor with the
# **version counter** instead: every in-place operation increments ``tensor._version``, autograd
# records the version when it saves a tensor, and backward raises if the two differ.
# **An in-place change to a saved tensor would silently give wrong gradients, so autograd
# turns it into an error.**

version_saved = gate._version
_ = gate.mul_(2)
print(f"gate was saved at version {version_saved}; after mul_ it is at version {gate._version}")
assert (version_saved, gate._version) == (0, 1)

# %%
# The changed tensor need not be an output.
# Here the data ``batch`` goes into a product with a weight, which saves it (the weight's gradient
# is the data), and the data is then normalised in place before backward.
# The data does not require grad and has no ``grad_fn``, so the message names only its shape.

w = torch.randn(4, device=device, requires_grad=True)
batch = torch.randn(4, device=device)
loss = (w * batch).sum()
_ = batch.div_(batch.norm())
with expect_raises(RuntimeError, r"\[torch\.(cuda\.)?FloatTensor \[4\]\] is at version 1"):
    loss.backward()

# %%
# In-place operations that are fine
# ---------------------------------
#
# **An in-place operation is safe when no pending backward saved the tensor it changes.**
# Adding a constant saves nothing (its gradient is 1), so its output can be changed in place, and
# the gradient stays right: here ``d/dx (2 · (x + 1)) = 2``.

x = torch.randn(4, device=device, requires_grad=True)
with saved_tensors() as saved_by_add:
    shifted = x + 1
_ = shifted.mul_(2)
shifted.sum().backward()
print("add saves", saved_by_add.count, "tensors; x.grad after the in-place mul_:", x.grad)
assert saved_by_add.count == 0
assert torch.equal(x.grad, torch.full_like(x, 2.0))

# %%
# A :class:`~torch.nn.Linear` layer saves its input and weight, not its output, which is why
# ``nn.ReLU(inplace=True)`` right after a linear or convolution layer is safe.
# We compare the gradients of a layer followed by an in-place ReLU and by an out-of-place one.
# After an operation that saves its output (a sigmoid, an ``exp``, another ReLU), the same
# in-place ReLU fails.

layer = torch.nn.Linear(3, 4).to(device)
inputs = torch.randn(2, 3, device=device)
layer(inputs).relu_().sum().backward()
grad_inplace = layer.weight.grad.clone()
layer.zero_grad()
layer(inputs).relu().sum().backward()
print("same weight gradient with relu_ and relu:", torch.allclose(grad_inplace, layer.weight.grad))
torch.testing.assert_close(grad_inplace, layer.weight.grad)

with expect_raises(RuntimeError, rf"output 0 of Exp{node}, is at version 1"):
    layer(inputs).exp().relu_().sum().backward()

# %%
# The fix
# -------
#
# **Write the operation out of place:** ``gate = gate * 2`` **instead of** ``gate.mul_(2)``.
# The new result gets new memory and the saved output stays as it was; the extra memory is one
# tensor of the same size.
# The gradient is then the derivative of ``2 · σ(x)``, which we check.

x = torch.randn(4, device=device, requires_grad=True)
gate = x.sigmoid()
gate = gate * 2
gate.sum().backward()
sig = x.detach().sigmoid()
expected = 2 * sig * (1 - sig)
print("x.grad:  ", x.grad)
print("expected:", expected)
torch.testing.assert_close(x.grad, expected)

# %%
# In the data example, normalise before the forward pass, or out of place
# (``batch = batch / batch.norm()``).
# Do not "fix" the error by editing through ``.data`` or under ``no_grad``: ``.data`` hides the
# change from the version counter and gives wrong gradients (:ref:`data-vs-detach`), and
# ``no_grad`` does not stop the counter, so the error stays:

x = torch.randn(4, device=device, requires_grad=True)
gate = x.sigmoid()
with torch.no_grad():
    _ = gate.mul_(2)
print("version of gate after mul_ under no_grad:", gate._version)
assert gate._version == 1
with expect_raises(RuntimeError, rf"output 0 of Sigmoid{node}, is at version 1"):
    gate.sum().backward()

# %%
# Locating the operation
# ----------------------
#
# In a large model the message alone does not say *where* the saved tensor came from.
# :class:`torch.autograd.set_detect_anomaly` records a traceback for every forward operation;
# when backward fails it first warns with the traceback of the forward call whose backward
# failed, and the error message points to it.
# **It makes every operation slower: turn it on only to debug.**

x = torch.randn(4, device=device, requires_grad=True)
with torch.autograd.set_detect_anomaly(True):
    gate = x.sigmoid()
    _ = gate.mul_(2)
    with expect_warns(UserWarning, "Error detected in SigmoidBackward0", show=False) as caught:
        with expect_raises(RuntimeError, "backtrace further above shows the operation"):
            gate.sum().backward()
anomaly_first_line = caught.message.splitlines()[0]
print("warning:", anomaly_first_line)
assert "Traceback of forward call" in anomaly_first_line

# %%
# The traceback points at the sigmoid, the operation whose saved output was changed; the in-place
# operation that changed it comes somewhere after that line.
#
# Changed in PyTorch 2.11: the hint
# ---------------------------------
#
# Without anomaly detection the message ends with a hint.
# Up to PyTorch 2.10 it read ``... with torch.autograd.set_detect_anomaly(True).``; since
# `PyTorch 2.11 <https://github.com/pytorch/pytorch/releases/tag/v2.11.0>`_ it reads
# ``... with torch.autograd.set_detect_anomaly(True, check_nan=False).``, which records the
# tracebacks without also checking every gradient for NaN.
#
# Changed in PyTorch 2.13: the operation's name
# ---------------------------------------------
#
# Up to PyTorch 2.12 the message named the backward node of the operation that produced the
# tensor: ``which is output 0 of SigmoidBackward0``, ``output 0 of AsStridedBackward0`` for a
# parameter.
# Since `PyTorch 2.13 <https://github.com/pytorch/pytorch/releases/tag/v2.13.0>`_ it names the
# forward operation: ``which is output 0 of Sigmoid``, ``output 0 of AsStrided``
# (`PR 180383 <https://github.com/pytorch/pytorch/pull/180383>`_).
# The anomaly-mode warning above still names the backward node, ``SigmoidBackward0``.
#
# Detectors
# ---------
#
# The runtime note ``TP009`` detects this pitfall in your own code (see :doc:`/detectors`): under
# :mod:`torch_pitfalls.guards`, autograd's error about a tensor *modified by an inplace
# operation* ends with a note that names the rule, the fix and this page.
# The symptom of this page gets the note, and its out-of-place fix is silent:

with guards(language="en") as wrong:
    x = torch.randn(4, device=device, requires_grad=True)
    gate = x.sigmoid()
    _ = gate.mul_(2)
    with expect_raises(RuntimeError, stale):
        gate.sum().backward()
with guards(language="en") as fixed:
    x = torch.randn(4, device=device, requires_grad=True)
    (x.sigmoid() * 2).sum().backward()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP009"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **Do not modify in place a tensor that an operation saved for backward (an output of sigmoid,
# exp, tanh or relu, an input of a product or a layer) until backward has run.**
# When the error appears, read the shape and the producing operation in the message, write that
# in-place operation out of place, and use ``set_detect_anomaly(True)`` to find it in a large
# model.
