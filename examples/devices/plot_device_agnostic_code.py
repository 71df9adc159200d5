"""
.. _device-agnostic-code:

Choose the device once
======================

A model moved to the GPU meets a batch that stayed on the CPU, and the forward pass stops with a
device error.
Often the batch *was* moved, or so the code says: ``x.to(device)`` returns a new tensor, and
without an assignment the result is thrown away.
On a machine without a GPU the same code runs fine, so the bug waits for the first GPU run.

.. admonition:: What you will learn

   * why every operation needs all its tensors on one device, and what the error says;
   * that :meth:`Module.to() <torch.nn.Module.to>` works in place while
     :meth:`Tensor.to() <torch.Tensor.to>` returns a new tensor;
   * how to write code that picks the device once and runs unchanged on CPU and GPU;
   * why an optimizer created before ``model.to(device)`` still trains the model.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (what an optimizer step does).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# We move a small model to a second device and feed it a batch that stayed on the CPU.
# With a GPU, the second device is CUDA.
# Without one we use the ``meta`` device, which every build has: its tensors have a shape and a
# dtype but no data, and PyTorch checks devices for them just the same.
import torch
from torch import nn

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

other = device if device.type == "cuda" else torch.device("meta")
print(f"second device: {other}")

model = nn.Linear(4, 2).to(other)
x = torch.randn(8, 4)
with cuda_section(device, "the mixed-device error between cuda and cpu") as live:
    if live:
        with expect_raises(RuntimeError, "Expected all tensors to be on the same device"):
            model(x)
if not live:
    with expect_raises(RuntimeError, "is not on the expected device"):
        model(x)

# %%
# On a build without a GPU, the first lines above are the recorded CUDA run (labelled with its
# GPU, versions and date) or a sentence saying that it did not run, and the live error comes from
# the ``meta`` device instead; both say the same thing: the input is on the CPU, the weights are
# not.
#
# Why
# ---
#
# **An operation runs on one device, so all its tensor arguments must already be there.**
# PyTorch never copies data between devices behind your back: a copy between CPU and GPU memory
# is slow, and it should appear in the code.
# The one exception is a zero-dimensional CPU tensor, which is treated like a Python number:

weights = model.weight
scaled = weights * torch.tensor(2.0)
print("0-dim CPU tensor times a tensor on", other, "->", scaled.device)
assert scaled.device.type == other.type

with expect_raises(RuntimeError, "device"):
    weights * torch.tensor([2.0])

# %%
# A real-world report: "I called .to(device), but the input is still on the CPU"
# ------------------------------------------------------------------------------
#
# The code moves the model and the batch, and still fails with the same error:

model = nn.Linear(4, 2)
model.to(other)
x = torch.randn(8, 4)
x.to(other)
print("model on", model.weight.device, "| input on", x.device)
assert model.weight.device.type == other.type and x.device.type == "cpu"

# %%
# **Module.to() changes the module in place; Tensor.to() leaves the tensor alone and returns a
# new one.**
# ``model.to(other)`` returns the same module (so ``model = model.to(other)`` is harmless), while
# ``x.to(other)`` returns a copy on the other device, which the code above threw away.
# The same holds for :meth:`Module.cuda() <torch.nn.Module.cuda>` and
# :meth:`Tensor.cuda() <torch.Tensor.cuda>`.

same_module = model.to(other) is model
moved = x.to(other)
print("Module.to returns the same module:", same_module)
print("Tensor.to returns a new tensor:", moved is not x, "| on", moved.device)
assert same_module and moved is not x and moved.device.type == other.type

# %%
# Why does the same code pass on a machine without a GPU?
# There ``device`` is the CPU, and :meth:`~torch.Tensor.to` returns the tensor itself when it is
# already where it should go: the missing assignment changes nothing.

to_own_device = x.to(x.device)
print("x.to(x.device) is x:", to_own_device is x)
assert to_own_device is x

# %%
# The fix
# -------
#
# Pick the device once, at the top, with ``torch.device("cuda" if torch.cuda.is_available()
# else "cpu")`` (this page's :func:`~torch_pitfalls.get_device` does that, and lets an
# environment variable override it).
# **Always assign the result of Tensor.to(): x = x.to(device).**
# Better still, create tensors on the device directly with ``device=``, and derive new tensors
# from existing ones (``torch.zeros_like(x)``, ``x.new_zeros(...)``), which keep their device.
# A tensor that a module keeps for its forward pass follows ``model.to(device)`` only if it is
# registered as a buffer: see :ref:`register-buffer`.

model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4)
x = x.to(device)
noise = torch.randn(8, 4, device=device)
mask = torch.zeros_like(x)
out = model(x + noise + mask)
print("input, noise, mask and output on:", {t.device for t in (x, noise, mask, out)})
assert {t.device.type for t in (x, noise, mask, out)} == {device.type}

# %%
# An optimizer created before ``model.to(device)``
# ------------------------------------------------
#
# Classic advice says to create the optimizer *after* moving the model.
# An optimizer holds references to the :class:`~torch.nn.Parameter` objects it was given.
# For CPU and CUDA tensors, :meth:`Module.to() <torch.nn.Module.to>` keeps those objects and only
# replaces the data inside them, so **an optimizer created first still updates the moved model**.
# On a CPU-only build ``.to(device)`` moves nothing, so we also convert to ``float64``: a real
# conversion that goes through the same path.

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
params_before = list(model.parameters())
_ = model.to(device, torch.float64)
same_objects = all(p is q for p, q in zip(params_before, model.parameters(), strict=True))
in_optimizer = all(
    p is q for p, q in zip(optimizer.param_groups[0]["params"], model.parameters(), strict=True)
)
print("same Parameter objects after .to():", same_objects, "| held by the optimizer:", in_optimizer)
print("weight now:", model.weight.device, model.weight.dtype)
assert same_objects and in_optimizer
assert model.weight.device.type == device.type and model.weight.dtype == torch.float64

# %%
# The docstring of :meth:`Module.cuda() <torch.nn.Module.cuda>` still warns that the parameters
# become different objects; for CPU and CUDA tensors they do not, which the identity check above
# verifies on a GPU build.
# A step with that optimizer updates the moved weights by ``w - lr * grad``:

x = torch.randn(8, 4, device=device, dtype=torch.float64)
weight_before = model.weight.detach().clone()
model(x).pow(2).mean().backward()
optimizer.step()
print("weight changed by the step:", not torch.equal(model.weight, weight_before))
torch.testing.assert_close(model.weight.detach(), weight_before - 0.1 * model.weight.grad)

# %%
# The guarantee has a limit: when the target device stores tensors differently, ``.to()`` must
# create new :class:`~torch.nn.Parameter` objects.
# The ``meta`` device is one such case, and an optimizer created before the move would then hold
# the old, orphaned parameters:

model = nn.Linear(4, 2)
params_before = list(model.parameters())
_ = model.to("meta")
kept_on_meta = all(p is q for p, q in zip(params_before, model.parameters(), strict=True))
print("same Parameter objects after .to('meta'):", kept_on_meta)
assert not kept_on_meta

# %%
# Creating the optimizer after the move is therefore still the habit that is always safe.
#
# Takeaway
# --------
#
# **Choose the device once, move the model with model.to(device), and always write
# x = x.to(device): Tensor.to() returns a new tensor, and a discarded result is a bug that only
# a GPU run reveals.**
# Create the optimizer after moving the model; for CPU and CUDA one created before still works,
# because the Parameter objects stay the same.
