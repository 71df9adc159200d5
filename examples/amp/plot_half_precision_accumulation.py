"""
.. _half-precision-accumulation:

Sums and losses in float16 and bfloat16
=======================================

A running total kept in float16 or bfloat16 stops growing long before it should: once the total
is large enough, each new increment is smaller than half the gap to the next number the format
can hold, and rounding throws it away.
A sum in float16 also overflows to ``inf`` beyond 65,504, and a loss written by hand inside
:class:`torch.autocast` can run in the low precision, where PyTorch's own losses run in float32:
on the CPU the hand-written cross-entropy below does, while on CUDA autocast runs its
``log_softmax`` in float32.

.. admonition:: What you will learn

   * why adding 1 to a float16 total stops at 2048, and to a bfloat16 total at 256;
   * which reductions PyTorch already accumulates in float32, and where the result still
     overflows;
   * which operations autocast runs in float32, on the CPU and on CUDA, and how to keep your own
     sums and losses there.

.. admonition:: Prerequisites

   :ref:`item-and-tolist` (logging losses as Python numbers) and the idea of
   :class:`torch.autocast`: some operations run in a lower precision inside it.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A training loop counts the samples it has seen, or sums its losses for logging, in a tensor of
# the model's dtype.
# We add 1 to such a total 3000 times, in each of three dtypes:
import math

import torch
from torch import nn

from torch_pitfalls import cuda_section, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

steps = 3000


def running_total(dtype, increment=1.0):
    total = torch.zeros((), dtype=dtype, device=device)
    one = torch.tensor(increment, dtype=dtype, device=device)
    for _ in range(steps):
        total = total + one
    return total.item()


totals = {str(dtype): running_total(dtype) for dtype in (torch.float16, torch.bfloat16)}
totals["torch.float32"] = running_total(torch.float32)
print(f"after {steps} additions of 1:", totals)
assert totals == {"torch.float16": 2048.0, "torch.bfloat16": 256.0, "torch.float32": 3000.0}

# %%
# **The float16 total stops at 2048 and the bfloat16 total at 256, silently**: every later
# addition returns the same number.
# A mean computed from such a total is wrong by the same factor.
#
# Why
# ---
#
# A floating-point format keeps a fixed number of significant bits, so the gap between two
# neighbouring numbers grows with their size.
# ``torch.finfo(dtype).eps`` is the gap just above 1; the gap just above a power of two ``2**k``
# is ``eps * 2**k``:

significant_bits = {}
for dtype, stop in ((torch.float16, 2048.0), (torch.bfloat16, 256.0)):
    eps = torch.finfo(dtype).eps
    significant_bits[str(dtype)] = 1 - int(math.log2(eps))
    print(f"{dtype}: eps = {eps}, gap above {stop:.0f} = {eps * stop}")
    assert eps * stop == 2.0
print("significant bits:", significant_bits)
assert significant_bits == {"torch.float16": 11, "torch.bfloat16": 8}

# %%
# Above 2048 in float16 (256 in bfloat16) the neighbours are 2 apart.
# ``total + 1`` falls exactly halfway between two of them, and rounding to the nearest even
# number gives back ``total``.
# bfloat16 keeps 8 significant bits against float16's 11: it has float32's range but far fewer
# digits, so it loses increments sooner.
# The largest float16 is small too: a sum of float16 numbers overflows to ``inf`` beyond it.

print("largest float16:", torch.finfo(torch.float16).max)
print("largest bfloat16:", torch.finfo(torch.bfloat16).max, "| float32:", torch.finfo().max)
assert torch.finfo(torch.float16).max == 65504.0
assert math.isclose(torch.finfo(torch.bfloat16).max, torch.finfo().max, rel_tol=0.01)

# %%
# PyTorch's reductions already accumulate in float32
# --------------------------------------------------
#
# :func:`torch.sum` and :func:`torch.mean` of a float16 or bfloat16 tensor add in float32
# internally and round only the result.
# The 3000 ones sum correctly; but a result beyond 65,504 is still returned as float16, so it
# overflows, even though the mean of the same numbers is fine:

ones = torch.ones(steps, dtype=torch.float16, device=device)
print("sum of 3000 float16 ones:", ones.sum().item())
assert ones.sum().item() == steps

thousands = torch.full((100,), 1000.0, dtype=torch.float16, device=device)
print(f"sum: {thousands.sum().item()} | mean: {thousands.mean().item()}")
assert torch.isinf(thousands.sum()) and thousands.mean().item() == 1000.0

# %%
# Inside autocast: PyTorch's losses run in float32, yours may not
# ---------------------------------------------------------------
#
# :class:`torch.autocast` runs each listed operation in the dtype that suits it: matrix products
# in the low precision, and operations that need range or digits in float32.
# The lists differ between devices.
# On the CPU, with bfloat16, the built-in losses are on the float32 list, while ``sum`` and
# ``log_softmax`` are not on any list and run in the dtype of their input.
# A classifier with 1000 classes, and a cross-entropy written by hand next to the built-in one:

cpu_model = nn.Linear(64, 1000)
features = torch.randn(256, 64)
labels = torch.randint(0, 1000, (256,))
with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = cpu_model(features)
    builtin_loss = nn.functional.cross_entropy(logits, labels)
    by_hand_loss = -logits.log_softmax(dim=-1).gather(1, labels[:, None]).mean()
    logits_sum = logits.sum()
dtypes = {
    "logits": logits.dtype,
    "cross_entropy": builtin_loss.dtype,
    "by hand": by_hand_loss.dtype,
    "sum": logits_sum.dtype,
}
print("dtypes inside autocast on the CPU:", {k: str(v) for k, v in dtypes.items()})
assert dtypes == {
    "logits": torch.bfloat16,
    "cross_entropy": torch.float32,
    "by hand": torch.bfloat16,
    "sum": torch.bfloat16,
}

# %%
# Both losses see the same bfloat16 logits; the reference computes the loss from them in float32.
# The built-in loss matches it, the hand-written one is off in the third significant digit:

reference_loss = nn.functional.cross_entropy(logits.float(), labels)
builtin_error = (builtin_loss - reference_loss).abs().item()
by_hand_error = (by_hand_loss.float() - reference_loss).abs().item()
print(f"float32 reference: {reference_loss.item():.5f}")
print(f"built-in: {builtin_loss.item():.5f} (error {builtin_error:.1g})")
print(f"by hand: {by_hand_loss.item():.5f} (error {by_hand_error:.1g})")
assert builtin_error < 1e-5 and by_hand_error > 1e-3

# %%
# **Autocast runs the operations of its float32 list in float32; an operation it does not list
# runs in the dtype of its input, and so does the arithmetic around it.**
# The cost of the lost digits grows with training: in the gradients of a loss written this way,
# and in any total accumulated from it.
#
# The CUDA float32 list is a different one: as the output below shows, it includes
# ``log_softmax`` and ``sum``, which run in float32 on CUDA and in bfloat16 in the CPU code above.
# The same code therefore gives different dtypes on the two devices.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.

with cuda_section(device, "dtypes of sums and losses under CUDA autocast") as live:
    if live:
        cuda_model = nn.Linear(64, 1000).to(device)
        with torch.autocast("cuda", dtype=torch.float16):
            cuda_logits = cuda_model(features.to(device))
            cuda_dtypes = {
                "logits": cuda_logits.dtype,
                "cross_entropy": nn.functional.cross_entropy(cuda_logits, labels.to(device)).dtype,
                "log_softmax": cuda_logits.log_softmax(dim=-1).dtype,
                "sum": cuda_logits.sum().dtype,
                "sum of thousands": thousands.sum().item(),
            }
        print("inside autocast on CUDA:", {k: str(v) for k, v in cuda_dtypes.items()})
        assert cuda_dtypes["logits"] == torch.float16
        assert cuda_dtypes["cross_entropy"] == cuda_dtypes["log_softmax"] == torch.float32
        assert cuda_dtypes["sum"] == torch.float32 and cuda_dtypes["sum of thousands"] == 1e5

# %%
# On CUDA, autocast even rescues the float16 sum of the previous section: ``sum`` runs in
# float32 there and returns 100,000.
# Code that relies on this breaks on the CPU, and outside autocast.
#
# The fix
# -------
#
# **Keep totals in float32 (or as Python floats), ask reductions for a float32 result, and compute
# a hand-written loss from float32 inputs.**
# The three fixes, each on the failure above:

total = torch.zeros((), dtype=torch.float32, device=device)
one_half = torch.tensor(1.0, dtype=torch.float16, device=device)
for _ in range(steps):
    total += one_half.float()
print("float32 total of 3000 float16 ones:", total.item())
assert total.item() == steps

safe_sum = thousands.sum(dtype=torch.float32)
print("sum(dtype=torch.float32):", safe_sum.item())
assert safe_sum.item() == 100_000.0

with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = cpu_model(features)
    fixed_loss = -logits.float().log_softmax(dim=-1).gather(1, labels[:, None]).mean()
fixed_error = (fixed_loss - reference_loss).abs().item()
print(f"by hand from float32 logits: {fixed_loss.item():.5f} (error {fixed_error:.1g})")
assert fixed_loss.dtype == torch.float32 and fixed_error < 1e-5

# %%
# For logging, ``loss.item()`` gives a Python float (64 bits), which is the simplest accumulator of
# all (:ref:`item-and-tolist`).
# The gradients have a precision problem of their own in float16: small ones underflow to zero,
# which is what the gradient scaler of :ref:`amp-unscale-before-clip` prevents.
#
# A real-world report: "could this accumulation be in float16 or bfloat16?"
# -------------------------------------------------------------------------
#
# In 2026 a user of torchtitan, PyTorch's library for training large language models, noticed that
# its loss had changed from a mean to a sum divided by the number of tokens, and asked whether
# summing over one or two million tokens in float16 or bfloat16 would accumulate rounding errors
# (`pytorch/torchtitan issue #2336 <https://github.com/pytorch/torchtitan/issues/2336>`_).
# A maintainer answered that the loss function converts its result to float32 before anything is
# summed, so the accumulation is in float32: exactly the fix above, and the reason the question
# is worth asking of any training loop.
#
# Takeaway
# --------
#
# **A float16 or bfloat16 total loses every increment smaller than half its spacing: 1 at 2048 in
# float16, at 256 in bfloat16.**
# Accumulate in float32, pass ``dtype=torch.float32`` to reductions whose result may exceed
# 65,504, and cast to float32 before a hand-written loss; autocast does this only for the
# operations it lists, and the lists differ between the CPU and CUDA.
