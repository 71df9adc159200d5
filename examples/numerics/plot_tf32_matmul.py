"""
.. _tf32-matmul:

TF32 matrix multiplication on recent NVIDIA GPUs
================================================

On NVIDIA GPUs since the Ampere generation (A100, RTX 30xx and later), a float32 matrix product
can run on tensor cores in TF32, a format with float32's range and only 10 explicit mantissa bits.
Its results agree with float32 to about three or four significant digits instead of seven: enough
for most training, too little for a test that compares GPU and CPU results, a solver, or geometry.
Whether TF32 is used depends on global settings that any library can change, and the default for
matrix products changed in PyTorch 1.12.

.. admonition:: What you will learn

   * the settings that allow TF32 (``torch.backends.cuda.matmul.allow_tf32``,
     :func:`torch.set_float32_matmul_precision`, ``torch.backends.cudnn.allow_tf32``) and their
     defaults today;
   * how large the error of a TF32 product is, emulated on the CPU against a float64 reference;
   * how to turn TF32 on or off for a block of code, and how to check what a GPU does.

.. admonition:: Prerequisites

   Floating-point precision: :ref:`half-precision-accumulation` shows what a limited number of
   significant bits does to a sum.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The settings and their defaults
# -------------------------------
#
# Three global settings decide whether float32 work may use TF32 on a GPU that has it.
# They exist, and can be read and set, on every PyTorch build, with or without a GPU:
import torch

from torch_pitfalls import cuda_section, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

defaults = {
    "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
    "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
}
for name, value in defaults.items():
    print(f"{name} = {value!r}")
assert defaults == {
    "torch.backends.cuda.matmul.allow_tf32": False,
    "torch.get_float32_matmul_precision()": "highest",
    "torch.backends.cudnn.allow_tf32": True,
}

# %%
# **Matrix products use full float32 by default, but cuDNN convolutions are allowed TF32 by
# default.**
# The two matmul settings are one switch seen two ways: setting the precision to ``"high"`` turns
# ``allow_tf32`` on, for the whole process.


def matmul_settings():
    return torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32


torch.set_float32_matmul_precision("high")
after_high = matmul_settings()
torch.set_float32_matmul_precision("highest")
after_highest = matmul_settings()
print(f"after 'high': {after_high} | after 'highest': {after_highest}")
assert after_high == ("high", True) and after_highest == ("highest", False)

# %%
# Training libraries and scripts often call ``torch.set_float32_matmul_precision("high")`` for
# speed, and ``torch.compile`` suggests it in a warning on such GPUs: after that call, every
# float32 matrix product in the process may use TF32, including those of your evaluation code.
#
# How large the error is
# ----------------------
#
# TF32 keeps float32's 8 exponent bits and rounds the mantissa to 10 explicit bits, like float16;
# the products of two such numbers are exact in float32 and summed in float32.
# We can reproduce this on the CPU: round both inputs to 10 mantissa bits (to nearest, on the bit
# pattern; how the hardware breaks exact ties may differ), then multiply them in float32.


def round_to_tf32(x):
    """Round float32 values to 10 explicit mantissa bits (to nearest, ties to even)."""
    bits = x.view(torch.int32)
    dropped = 13  # float32 has 23 explicit mantissa bits, TF32 keeps 10
    half_ulp_minus_one = (1 << (dropped - 1)) - 1
    bits = bits + half_ulp_minus_one + ((bits >> dropped) & 1)  # ties to even
    return (bits & ~((1 << dropped) - 1)).view(torch.float32)


third = torch.tensor(1 / 3)
print(f"1/3 in float32: {third.item():.10f} | in TF32: {round_to_tf32(third).item():.10f}")
relative = abs(round_to_tf32(third).item() - 1 / 3) * 3
print(
    f"relative rounding error: {relative:.2g} (float16's eps is {torch.finfo(torch.float16).eps})"
)
assert relative <= torch.finfo(torch.float16).eps / 2

# %%
# Two random 256 × 256 matrices: their product in float64 is the reference, and we compare the
# float32 product and the emulated TF32 product with it.


def relative_error(result, reference):
    return (
        torch.linalg.matrix_norm(result.double() - reference) / torch.linalg.matrix_norm(reference)
    ).item()


a = torch.randn(256, 256)
b = torch.randn(256, 256)
reference = a.double() @ b.double()
float32_product = a @ b
tf32_product = round_to_tf32(a) @ round_to_tf32(b)
float32_error = relative_error(float32_product, reference)
tf32_error = relative_error(tf32_product, reference)
print(f"relative error of the float32 product: {float32_error:.1e}")
print(f"relative error of the TF32 product:    {tf32_error:.1e}")
print(f"ratio: {tf32_error / float32_error:.0f}")
assert tf32_error > 100 * float32_error and 1e-4 < tf32_error < 1e-3

# %%
# **A TF32 product is about a thousand times less exact than a float32 one: three to four
# significant digits.**
# Neural networks trained with it converge as with float32 in NVIDIA's and PyTorch's experience,
# which is why it is offered; but code that compares results with float32 tolerances fails:

agree = torch.allclose(tf32_product, float32_product)
print("torch.allclose(TF32 product, float32 product):", agree)
assert not agree
largest_difference = (tf32_product - float32_product).abs().max().item()
typical_size = float32_product.abs().mean().item()
print(
    f"largest difference: {largest_difference:.2g}, on entries of typical size {typical_size:.2g}"
)
assert largest_difference > 1e-3

# %%
# On a GPU
# --------
#
# On an Ampere or newer GPU, the same product with TF32 off and on, against the float64 reference.
# On older GPUs both settings give float32 results, since they have no TF32 tensor cores.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.

with cuda_section(device, "float32 products with TF32 off and on") as live:
    if live:
        major, minor = torch.cuda.get_device_capability(device)
        print(f"{torch.cuda.get_device_name(device)}, compute capability {major}.{minor}")
        a_gpu, b_gpu = a.to(device), b.to(device)
        saved = torch.backends.cuda.matmul.allow_tf32
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
            gpu_float32_error = relative_error((a_gpu @ b_gpu).cpu(), reference)
            torch.backends.cuda.matmul.allow_tf32 = True
            gpu_tf32_error = relative_error((a_gpu @ b_gpu).cpu(), reference)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        print(f"TF32 off: relative error {gpu_float32_error:.1e}")
        print(f"TF32 on:  relative error {gpu_tf32_error:.1e}")
        assert gpu_float32_error < 1e-5
        if major >= 8:
            assert gpu_tf32_error > 10 * gpu_float32_error
            assert 0.2 < gpu_tf32_error / tf32_error < 5  # the size the CPU emulation gives
        else:
            assert gpu_tf32_error < 1e-5

# %%
# Changed in PyTorch 1.12
# -----------------------
#
# When Ampere GPUs appeared, PyTorch let float32 matrix products use TF32 by default.
# The results surprised many users (see below), and
# `PyTorch 1.12 <https://github.com/pytorch/pytorch/releases/tag/v1.12.0>`_ turned it off for
# matrix products, and added :func:`torch.set_float32_matmul_precision` as the high-level switch
# (`pull request #76509 <https://github.com/pytorch/pytorch/pull/76509>`_, "Add high level control
# of fp32 matmul precision; disable TF32 for matmuls by default").
# The default for cuDNN convolutions stayed on, as the first section shows.
# Advice written before 1.12, such as "set ``allow_tf32 = False`` to get exact results", describes
# a default that no longer applies to matrix products, while advice to turn TF32 on is about speed.
#
# The fix
# -------
#
# **Decide on TF32 explicitly, for the code that needs it, instead of inheriting a global
# setting.**
# For a block that needs float32 accuracy, set the precision to ``"highest"`` and restore the
# previous value afterwards; for convolutions, set ``torch.backends.cudnn.allow_tf32`` too:


def exact_float32_matmul(x, y):
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        return x @ y
    finally:
        torch.set_float32_matmul_precision(previous)


torch.set_float32_matmul_precision("high")  # as a training library might have done
exact = exact_float32_matmul(a.to(device), b.to(device)).cpu()
restored = torch.get_float32_matmul_precision()
torch.set_float32_matmul_precision("highest")
print(f"error inside the block: {relative_error(exact, reference):.1e} | restored: {restored!r}")
assert relative_error(exact, reference) < 1e-5 and restored == "high"

# %%
# Tests that compare GPU results with CPU or float64 results should set the precision themselves
# rather than rely on the default, and speed-sensitive training code can opt in with ``"high"``
# knowing what it costs.
# Where a result must be exact regardless of any setting, compute it in float64.
#
# A real-world report: "torch.matmul() gives rounded results for 30xx cards"
# --------------------------------------------------------------------------
#
# In 2021, with PyTorch 1.8, a user multiplied a one-element float32 vector by a 1 × 1 identity
# matrix on an RTX 3090 and got the value back rounded to the nearest integer, while older GPUs
# returned it unchanged
# (`pytorch/pytorch issue #53635 <https://github.com/pytorch/pytorch/issues/53635>`_).
# The value needed 12 significant bits, one more than TF32 keeps, and TF32 was then on by default
# for matrix products.
# The discussion that preceded the change of default
# (`pytorch/pytorch issue #67384 <https://github.com/pytorch/pytorch/issues/67384>`_) pointed to
# reports like this one.
#
# Takeaway
# --------
#
# **On Ampere and newer GPUs, a float32 matrix product may be computed in TF32, with about three
# significant digits, whenever torch.set_float32_matmul_precision("high") or allow_tf32 = True
# has been set anywhere in the process; cuDNN convolutions allow TF32 by default.**
# Check the settings, set the precision explicitly where accuracy matters, and compare GPU and CPU
# results only with that in mind.
# NaNs have other causes: :ref:`nan-grad-masked-branch`.
