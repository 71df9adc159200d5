"""
.. _data-vs-detach:

``tensor.data`` versus ``tensor.detach()``
==========================================

Both ``tensor.data`` and :meth:`tensor.detach() <torch.Tensor.detach>`
give a tensor that shares storage with the original and is cut from the graph.
Edit one of them in place and they behave very differently:
autograd notices the edit made through ``detach()``, but an edit through ``.data`` goes unseen and
backward quietly returns a wrong gradient.

.. admonition:: What you will learn

   * what autograd's version counter is, and which of the two it protects;
   * why ``.data`` can produce a wrong gradient without any error;
   * what to write instead of ``.data`` when initialising parameters.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (what a graph records).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# The `PyTorch 0.4.0 migration guide <https://pytorch.org/blog/pytorch-0_4_0-migration-guide/>`_
# shows the difference with one small example, which we run here as it is written there, with its
# names ``a``, ``out`` and ``c``.
# :meth:`~torch.Tensor.sigmoid` saves its output for backward, because its derivative is
# ``σ'(a) = σ(a) · (1 − σ(a))``.
# First ``c = out.detach()``: setting ``c`` to zero in place sets ``out`` to zero too, and
# backward refuses.
import torch

from torch_pitfalls import (
    PitfallWarning,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

a = torch.tensor([1, 2, 3.0], device=device, requires_grad=True)
out = a.sigmoid()
c = out.detach()
print("c.zero_():", c.zero_())
print("out:      ", out)  # modified by c.zero_()
assert torch.count_nonzero(out) == 0

with expect_raises(RuntimeError, "modified by an inplace operation"):
    out.sum().backward()

# %%
# Then the same edit through ``c = out.data``.
# We also keep the correct gradient, computed before the edit, to compare.

a = torch.tensor([1, 2, 3.0], device=device, requires_grad=True)
out = a.sigmoid()
expected_grad = (out * (1 - out)).detach().clone()  # the correct gradient, saved before the edit
c = out.data
print("c.zero_():", c.zero_())
print("out:      ", out)  # modified by c.zero_() as well
out.sum().backward()
grad_via_data = a.grad.clone()
print("a.grad:          ", grad_via_data)
print("correct gradient:", expected_grad)
assert torch.count_nonzero(out) == 0
assert torch.count_nonzero(grad_via_data) == 0
assert not torch.allclose(grad_via_data, expected_grad)

# %%
# No error, and every gradient is zero instead of ``σ(a) · (1 − σ(a))``.
# These are the zeros the guide printed in 2018, for ``out`` and for ``a.grad``; today's PyTorch
# prints the same numbers (its ``repr`` of ``out`` also names the ``grad_fn``).
# An optimizer would then take a step with this wrong gradient.
#
# The example of the classic write-up
# -----------------------------------
#
# Write-ups of this pitfall from the same years, prompted by
# `pytorch/pytorch issue #6990 <https://github.com/pytorch/pytorch/issues/6990>`_ ("Differences
# between .data and .detach"), use another example: ``a = torch.tensor([7., 0, 0],
# requires_grad=True)``, ``b = a + 2`` and ``loss = torch.mean(b * b)``.
# The product ``b * b`` saves ``b`` for backward, and the gradient of the loss is ``2 · b / 3``.
# We run it three times: once untouched, for the correct gradient, then with ``b`` set to zero in
# place after the loss, once through ``b.data`` and once through ``b.detach()``.


def classic_example(edit=None):
    """The write-up's example; ``edit`` zeroes ``b`` in place between the loss and backward."""
    a = torch.tensor([7.0, 0, 0], device=device, requires_grad=True)
    b = a + 2
    loss = torch.mean(b * b)
    if edit == "data":
        b.data.zero_()
    elif edit == "detach":
        b.detach().zero_()
    loss.backward()
    return a.grad


correct_classic = classic_example()
print("correct gradient:            ", correct_classic)
silent_classic = classic_example("data")
print("after b.data.zero_(), a.grad:", silent_classic)
torch.testing.assert_close(correct_classic, 2 * (torch.tensor([7.0, 0, 0], device=device) + 2) / 3)
assert torch.count_nonzero(silent_classic) == 0
assert not torch.allclose(silent_classic, correct_classic)
with expect_raises(RuntimeError, "modified by an inplace operation"):
    classic_example("detach")

# %%
# The edit through ``.data`` turns the correct gradient into zeros without a word; the same edit
# through ``detach()`` stops backward with an error.
#
# Why
# ---
#
# Every tensor carries a **version counter** (``tensor._version``) that each in-place operation
# increments. When autograd saves a tensor for backward it also records that version;
# at backward it compares the two and raises if they differ.
# ``detach()`` returns a new tensor that shares both the storage *and* the version counter,
# so the edit is counted. ``.data`` also shares the storage but has a version counter of its own:
# the original's version stays where it was and autograd cannot tell that the saved values changed.

a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
out = a.sigmoid()
version_before = out._version
_ = out.detach().zero_()
version_after_detach = out._version
_ = out.data.zero_()
version_after_data = out._version
print(
    f"version of out: {version_before} at first, {version_after_detach} after the edit "
    f"through detach(), {version_after_data} after the edit through .data"
)
assert (version_before, version_after_detach, version_after_data) == (0, 1, 1)

# %%
# Both share storage with ``out``: the same memory address.
print("same storage:", out.detach().data_ptr() == out.data_ptr() == out.data.data_ptr())
assert out.detach().data_ptr() == out.data_ptr() == out.data.data_ptr()

# %%
# The fix
# -------
#
# Use :meth:`~torch.Tensor.detach` whenever you need a tensor outside the graph, and
# **never modify a tensor in place while the graph still needs it**. If you need to change the
# values, work on a copy: ``detach().clone()``.

a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
out = a.sigmoid()
scratch = out.detach().clone()
_ = scratch.zero_()
out.sum().backward()
print("gradient:", a.grad)
torch.testing.assert_close(a.grad, expected_grad)

# %%
# The old use of ``.data`` was to change parameters without autograd recording it,
# for example in custom initialisation.
# Today, do that under :class:`torch.no_grad`, or with the functions of :mod:`torch.nn.init`,
# which do exactly that for you:

layer = torch.nn.Linear(4, 2).to(device)
with torch.no_grad():
    layer.weight.fill_(0.5)
torch.nn.init.zeros_(layer.bias)
print("weight:", layer.weight)
print("bias:", layer.bias)
print("still a leaf that requires grad:", layer.weight.is_leaf and layer.weight.requires_grad)
assert layer.weight.is_leaf and layer.weight.requires_grad

# %%
# Detectors
# ---------
#
# Two opt-in rules detect this pitfall in your own code (see :doc:`/detectors`): the runtime
# guard ``TP010`` (a tensor saved for backward changed through ``.data`` or a NumPy view) and
# ``TP104`` of the static checker (an in-place edit through ``.data`` between a forward and its
# backward in one function, such as ``out.data.zero_()`` before ``out.sum().backward()``; edits in
# initialisation code or after the backward are not reported).
# ``TP010`` keeps a copy of every tensor saved for backward, which doubles their memory, so it
# runs only when enabled: ``guards(enable=["TP010"])``.
# Enabled, it warns at the backward of this page's edit through ``.data``, once per line, and the
# fix is silent:

with guards(enable=["TP010"], language="en") as wrong:
    a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    out = a.sigmoid()
    _ = out.data.zero_()
    with expect_warns(PitfallWarning, "^TP010 "):
        out.sum().backward()
with guards(enable=["TP010"], language="en") as fixed:
    a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    out = a.sigmoid()
    scratch = out.detach().clone()
    _ = scratch.zero_()
    out.sum().backward()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP010"] and fixed.ids == []
torch.testing.assert_close(a.grad, expected_grad)

# %%
# The hooks that ``TP010`` puts on saved tensors switch off autograd's own version check, so it
# makes that check itself (the edit through ``detach()`` still raises), and it leaves out module
# buffers, such as the running statistics that BatchNorm updates in place.

with guards(enable=["TP010"], language="en"):
    b = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    out_b = b.sigmoid()
    _ = out_b.detach().zero_()
    with expect_raises(RuntimeError, "is at version 1; expected version 0") as caught:
        out_b.sum().backward()
# its note points to the page on in-place changes of saved tensors (a rule of that page)
assert caught.exception.__notes__[0].endswith("/plot_inplace_saved_tensor.html")

# %%
# Takeaway
# --------
#
# ``.detach()`` **shares the version counter, so autograd catches in-place edits;**
# ``.data`` **does not, so they silently corrupt gradients.**
# Use ``detach()`` (and ``clone()`` before editing), and ``torch.no_grad()`` or ``torch.nn.init``
# for parameter initialisation.
