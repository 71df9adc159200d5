"""
.. _autocast-outputs-dtype:

Autocast outputs outside the autocast region
============================================

The forward pass runs inside ``with torch.autocast(...)``, and the features it returns go to a
float32 head, a probe or a metric after the ``with`` block: the call fails with
``RuntimeError: mat1 and mat2 must have the same dtype, but got BFloat16 and Float``, or
``.numpy()`` fails with ``Got unsupported ScalarType BFloat16``.
Autocast does not change the tensors that leave the region: they keep the low-precision dtype
their operation produced, and outside the region no operation casts them back.

.. admonition:: What you will learn

   * what :class:`torch.autocast` changes inside its region, and what the tensors it returns
     are;
   * why some operations on those outputs fail outside the region while others silently give
     float32;
   * three fixes: the consumers inside the region, a cast at the boundary, and
     :func:`torch.amp.custom_fwd` with ``cast_inputs`` for code that needs float32 inputs inside
     the region.

.. admonition:: Prerequisites

   :ref:`half-precision-accumulation` (which operations autocast runs in which dtype).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# An encoder runs under the CPU's autocast in bfloat16 (on CUDA, the default is float16 and the
# message says ``Half``).
# Its features then go to a classification head and to NumPy, after the ``with`` block:
import numpy as np
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to(device)
head = nn.Linear(16, 3).to(device)
x = torch.randn(4, 8, device=device)

with torch.autocast(device.type, dtype=torch.bfloat16):
    features = encoder(x)
print("features:", features.dtype, "| head's weight:", head.weight.dtype)
assert features.dtype == torch.bfloat16 and head.weight.dtype == torch.float32

with expect_raises(RuntimeError, "mat1 and mat2 (must|to) have the same dtype"):
    head(features)
with expect_raises(TypeError, "Got unsupported ScalarType BFloat16"):
    features.detach().cpu().numpy()

# %%
# **The features are bfloat16 after the region: the float32 head refuses them, and NumPy has no
# bfloat16 type.**
# Inside the region, the same call to the head works.
#
# Why
# ---
#
# :class:`torch.autocast` neither converts the model nor the tensors.
# While the region is active, each operation on its lists casts *its inputs* before running:
# ``linear`` casts the float32 input and weights to bfloat16 and returns bfloat16.
# That output is an ordinary bfloat16 tensor; when the region ends, nothing casts it back.
# Outside the region, operations run in the dtypes of their inputs, and they do not all react the
# same way to a bfloat16 tensor meeting a float32 one:

with torch.autocast(device.type, dtype=torch.bfloat16):
    inside = head(features)
bias_added = features + torch.zeros(16, device=device)
print("head(features) inside the region:", inside.dtype)
print("features + a float32 tensor, outside:", bias_added.dtype)
assert inside.dtype == torch.bfloat16 and bias_added.dtype == torch.float32

# %%
# **Elementwise operations promote to float32 silently; matrix products, convolutions and NumPy
# do not.**
# This is why the error appears far from the region, at the first layer or conversion that needs
# one dtype: the elementwise operations before it hid the mix.
# A float32 result after promotion still carries bfloat16's rounding: its values were rounded to
# 8 significant bits inside the region, and promotion does not bring the digits back.
#
# The fix
# -------
#
# **Run the consumers inside the region, or cast the outputs to float32 where they leave it.**
# Inside the region, the head goes through autocast like the encoder; a cast at the boundary
# gives float32 code float32 tensors:

with torch.autocast(device.type, dtype=torch.bfloat16):
    logits_inside = head(encoder(x))
logits_cast = head(features.float())
as_numpy = features.detach().float().cpu().numpy()
print("inside the region:", logits_inside.dtype, "| cast at the boundary:", logits_cast.dtype)
print("NumPy array:", as_numpy.dtype, as_numpy.shape)
assert logits_inside.dtype == torch.bfloat16 and logits_cast.dtype == torch.float32
assert as_numpy.dtype == np.float32 and as_numpy.shape == (4, 16)
torch.testing.assert_close(logits_cast, logits_inside.float(), rtol=0.02, atol=0.02)

# %%
# A loss computed after the region is usually fine, because elementwise operations and the
# built-in losses promote or accept the mix; for logging and metrics, ``.float()`` first (or
# ``.item()``) keeps the values in one dtype.
#
# Code that needs float32 inside the region
# -----------------------------------------
#
# The same mismatch appears inside the region with code that autocast does not handle: a custom
# :class:`~torch.autograd.Function` whose forward calls NumPy, a compiled extension or a kernel
# written for float32 receives the bfloat16 activations as they are.
# A Function that computes ``tanh`` in NumPy:


class NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        out = torch.from_numpy(np.tanh(t.detach().cpu().numpy())).to(t.device)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 - out * out)


with torch.autocast(device.type, dtype=torch.bfloat16):
    hidden = encoder(x)
    with expect_raises(TypeError, "Got unsupported ScalarType BFloat16"):
        NumpyTanh.apply(hidden)

# %%
# **torch.amp.custom_fwd(device_type=..., cast_inputs=torch.float32) on the forward casts the
# Function's floating-point inputs to float32 and runs the forward with autocast disabled.**
# ``custom_bwd`` on the backward runs it with the same autocast state as the forward.
# (``torch.amp.custom_fwd`` with ``device_type`` exists since PyTorch 2.4; before, it was
# ``torch.cuda.amp.custom_fwd``, for CUDA only.)


class Float32Tanh(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type=device.type, cast_inputs=torch.float32)
    def forward(ctx, t):
        return NumpyTanh.forward(ctx, t)

    @staticmethod
    @torch.amp.custom_bwd(device_type=device.type)
    def backward(ctx, grad):
        return NumpyTanh.backward(ctx, grad)


encoder.zero_grad()
with torch.autocast(device.type, dtype=torch.bfloat16):
    activated = Float32Tanh.apply(encoder(x))
    logits = head(activated)
logits.float().sum().backward()
print("Function output:", activated.dtype, "| logits:", logits.dtype)
print("gradient of the encoder's weight:", encoder[0].weight.grad.dtype)
assert activated.dtype == torch.float32 and logits.dtype == torch.bfloat16
assert encoder[0].weight.grad.dtype == torch.float32
assert torch.isfinite(encoder[0].weight.grad).all()

# %%
# ``cast_inputs`` acts only inside an autocast region: outside it, the Function receives its
# inputs unchanged, so it does not rescue the outputs of an earlier region.
# ``features`` is still the bfloat16 tensor of the symptom:

with expect_raises(TypeError, "Got unsupported ScalarType BFloat16"):
    Float32Tanh.apply(features)

# %%
# For ordinary code inside the region that must run in float32, a nested
# ``torch.autocast(device.type, enabled=False)`` block does the same: cast its inputs with
# ``.float()`` at its start.
#
# A real-world report: a float32 module after the autocast region
# ----------------------------------------------------------------
#
# In 2024 a contributor to the V2V4Real code base pointed out a dtype mismatch in its
# domain-adaptation training script
# (`ucla-mobility/V2V4Real pull request 30 <https://github.com/ucla-mobility/V2V4Real/pull/30>`_).
# The model ran under CUDA autocast and returned float16 outputs; the domain-adaptation module,
# in float32, was called on them after the region and failed on the mixed dtypes.
# The pull request converts the outputs to float32 after the region, and notes that calling the
# module inside the region works too: the two fixes above.
#
# Takeaway
# --------
#
# **Tensors leave an autocast region in the low-precision dtype their operation produced: cast
# them with .float() at the boundary, or keep their consumers inside the region.**
# Code that needs float32 inside the region gets it from ``torch.amp.custom_fwd(...,
# cast_inputs=torch.float32)`` or a nested region with ``enabled=False``.
# The low-precision dtype has its own limits: :ref:`fp16-overflow-range`.
