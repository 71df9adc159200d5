"""
.. _fp16-overflow-range:

float16 ends at 65,504
======================

A model that trains in float32 or bfloat16 gives a loss of ``nan`` in float16, after a few
iterations or from the first one, and a gradient scaler does not help.
The largest finite float16 number is 65,504: an activation or a dot product beyond it is stored as
``inf``, and so is the square of any number above 256.
The next normalisation or softmax turns the ``inf`` into ``NaN`` (``inf - inf``, ``inf * 0``),
and the ``NaN`` spreads to the loss.
bfloat16 has the range of float32 and does not overflow there.

.. admonition:: What you will learn

   * where float16's range ends, and which everyday operations cross it: squares above 256,
     ``exp`` above 11, large activations and dot products;
   * how a hand-written RMS normalisation turns an overflow into a row of zeros or of ``NaN``;
   * what ``torch.amp.GradScaler`` fixes (gradients that overflow because of its scale) and what it
     cannot fix (an overflow in the forward pass, which it skips step after step);
   * the fixes: bfloat16, or the sensitive operation in float32.

.. admonition:: Prerequisites

   :ref:`amp-unscale-before-clip` (what a gradient scaler does) and
   :ref:`half-precision-accumulation` (float16's precision, next to its range).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# The hidden states of a large transformer often hold a few very large activations.
# Three tokens: an ordinary one, one with an activation of 300, and one with an activation of
# 70,000, the size that a feed-forward layer of T5 produced in the report at the end of the page.
# Each goes through an RMS normalisation written by hand, as many models write it, and a
# classification head; we compare the normalised rows and the loss in three dtypes:
import math

import torch
from torch import nn

from torch_pitfalls import cuda_section, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

hidden = torch.randn(3, 64, device=device)
hidden[1, 0] = 300.0
hidden[2, 0] = 70_000.0
labels = torch.tensor([1, 2, 3], device=device)
head = nn.Linear(64, 10).to(device)


def rms_norm(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def describe(row):
    return "NaN" if row.isnan().any() else "zeros" if (row == 0).all() else "finite"


reference = rms_norm(hidden)
results = {}
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    normalised = rms_norm(hidden.to(dtype))
    loss = nn.functional.cross_entropy(head.to(dtype)(normalised).float(), labels)
    results[dtype] = normalised
    rows = [describe(row) for row in normalised]
    print(f"{str(dtype):15} rows: {rows}  loss: {loss.item():.4f}")
    if dtype == torch.float16:
        assert rows == ["finite", "zeros", "NaN"] and math.isnan(loss.item())
    else:
        assert rows == ["finite"] * 3 and math.isfinite(loss.item())

# %%
# **In float16, the token with an activation of 300 comes out of the normalisation as a row of
# zeros, the token with 70,000 as a row containing NaN, and the loss is NaN.**
# The same code in float32 and in bfloat16 gives finite rows and a finite loss; bfloat16's rows
# differ from float32's only by its rounding:

bf16_error = (results[torch.bfloat16].float() - reference).abs().max().item()
print(f"largest difference between the bfloat16 and float32 rows: {bf16_error:.3f}")
assert bf16_error < 0.05

# %%
# Why
# ---
#
# ``torch.finfo`` gives each floating-point dtype's range.
# float16 has 5 exponent bits and ends at 65,504; bfloat16 has float32's 8 exponent bits, and so
# float32's range, with fewer significant digits:

for dtype in (torch.float16, torch.bfloat16, torch.float32):
    print(f"{str(dtype):15} largest: {torch.finfo(dtype).max:.6g}")
assert torch.finfo(torch.float16).max == 65504.0
assert math.isclose(torch.finfo(torch.bfloat16).max, torch.finfo(torch.float32).max, rel_tol=0.01)

# %%
# A result beyond 65,504 (from 65,520 on, which would round up) becomes ``inf``.
# Everyday operations get there from small inputs: the square of any number from 256 up
# (``sqrt(65504) ≈ 255.9``), and ``exp`` of any number above ``log(65504) ≈ 11.09``:

half = torch.float16
squares = torch.tensor([255.0, 256.0], dtype=half, device=device) ** 2
exps = torch.tensor([11.0, 11.1], dtype=half, device=device).exp()
stored = torch.tensor([65504.0, 65519.0, 65520.0], device=device).to(half)
print("255² and 256²:", squares.tolist())
print("exp(11) and exp(11.1):", exps.tolist())
print("65504, 65519 and 65520 stored in float16:", stored.tolist())
assert squares.isinf().tolist() == [False, True] and exps.isinf().tolist() == [False, True]
assert stored.tolist() == [65504.0, 65504.0, math.inf]

# %%
# An ``inf`` is not an error: it flows on, and the first operation that has no answer for it
# returns ``NaN``.
# ``inf - inf``, ``inf * 0`` and ``inf / inf`` are all ``NaN``:

inf = torch.tensor(math.inf, dtype=half, device=device)
undefined = [(inf - inf).item(), (inf * 0).item(), (inf / inf).item()]
print("inf - inf, inf * 0, inf / inf:", undefined)
assert all(math.isnan(v) for v in undefined)

# %%
# This is what happened in the normalisation.
# For the token with 300, ``x.pow(2)`` overflowed, the mean of the squares is ``inf``, and
# ``rsqrt(inf)`` is 0: every feature is multiplied by 0, and the token is wiped out without a
# NaN in sight.
# The token with 70,000 was ``inf`` already when it was stored in float16, and ``inf * 0`` is NaN:

x16 = hidden.to(half)
mean_square = x16.pow(2).mean(dim=-1)
print("activation 0 of each token in float16:", x16[:, 0].tolist())
print("mean of the squares:", mean_square.tolist())
print("rsqrt of it:", torch.rsqrt(mean_square + 1e-6).tolist())
assert mean_square.isinf().tolist() == [False, True, True] and x16[2, 0].isinf()
assert torch.rsqrt(mean_square[1:] + 1e-6).tolist() == [0.0, 0.0]

# %%
# **float16 overflows silently: the inf appears in one operation and the NaN a few operations
# later, often in a normalisation, a softmax or the loss, which then looks like the culprit.**
# A softmax gives NaN over a whole row from one ``inf`` score, since it subtracts the row's
# maximum.
# Any later layer that mixes features spreads the NaN over all of them, and backward spreads it
# to the gradients of every weight.
#
# The fix
# -------
#
# **Use bfloat16 where the hardware supports it; in float16, compute the operations that can
# overflow in float32 and cast the result back.**
# T5's RMS normalisation in Hugging Face Transformers computes its mean of squares in float32 for
# this reason.
# Upcasting inside the normalisation repairs the square of 300, but not the activation that was
# stored as ``inf`` before the normalisation saw it:


def rms_norm_float32(x, eps=1e-6):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)).to(x.dtype)


fixed16 = rms_norm_float32(hidden.to(half))
error_row1 = (fixed16[1].float() - reference[1]).abs().max().item()
print(f"token 1: largest difference from float32: {error_row1:.4f}")
print("token 2 contains NaN:", fixed16[2].isnan().any().item())
assert error_row1 < 0.01 and fixed16[2].isnan().any()

# %%
# An activation beyond 65,504 has to be produced in a dtype that holds it: the layer that
# produces it in float32, or the whole model in bfloat16, as the symptom showed.
# Clamping the activations to ±65,504 before they overflow (a workaround some models use in
# float16) hides the problem rather than solving it: the clamped value is wrong.
#
# What ``GradScaler`` fixes, and what it does not
# -----------------------------------------------
#
# ``torch.amp.GradScaler`` multiplies the loss by a large scale so that small gradients do not
# underflow in float16 (:ref:`amp-unscale-before-clip`).
# Its scale can make gradients overflow in turn: it then skips the optimizer's step and halves
# the scale.
# We write what float16 autocast does by hand, so that it runs on every device: float32
# parameters, cast to float16 for the matrix product, and a loss computed in float32.
# The first steps overflow because of the scale of 65,536, and are skipped until the scale fits:


def train(x, y, model, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(device.type)
    history = []
    for _ in range(steps):
        before = [p.detach().clone() for p in model.parameters()]
        out = nn.functional.linear(x.half(), model.weight.half(), model.bias.half())
        loss = nn.functional.mse_loss(out.float(), y)
        scale = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        moved = any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
        history.append((scale, "step" if moved else "skipped", round(loss.item(), 2)))
    return history


x = torch.randn(8, 16, device=device)
y = 4 * torch.randn(8, 1, device=device)
history = train(x, y, nn.Linear(16, 1).to(device), steps=8)
for step, (scale, outcome, loss_value) in enumerate(history):
    print(f"step {step}: scale {scale:.0f}, {outcome}, loss {loss_value}")
outcomes = [outcome for _, outcome, _ in history]
skipped = outcomes.count("skipped")
assert skipped >= 1 and outcomes == ["skipped"] * skipped + ["step"] * (8 - skipped)
assert history[-1][2] < history[skipped][2]

# %%
# This is the scaler working as designed: a few skipped steps at the start of training, and now
# and then later on.
# An overflow in the forward pass is another matter: the loss is ``inf`` or NaN whatever the
# scale, so every step is skipped and the scale halves each time, while the weights never move.
# The same training on inputs with one activation that overflowed, like the token above:

x_large = x.clone()
x_large[0, 0] = 70_000.0
history = train(x_large, y, nn.Linear(16, 1).to(device), steps=5)
for step, (scale, outcome, loss_value) in enumerate(history):
    print(f"step {step}: scale {scale:.0f}, {outcome}, loss {loss_value}")
assert [outcome for _, outcome, _ in history] == ["skipped"] * 5
assert not any(math.isfinite(loss_value) for _, _, loss_value in history)

# %%
# **GradScaler keeps gradients in float16's range; it cannot bring an activation back into it.**
# A scale that keeps falling, step after step, towards 1 and below, is the sign of an overflow
# in the forward pass (or of NaN in the data): look for the first ``inf`` in the activations,
# for example with forward hooks that check :func:`torch.isinf`.
#
# Under CUDA autocast
# -------------------
#
# PyTorch's `autocast op reference
# <https://docs.pytorch.org/docs/stable/amp.html#autocast-op-reference>`_ ("CUDA Ops that can
# autocast to float32") lists ``pow``, ``rsqrt``, ``exp``, ``softmax`` and the losses: with
# :class:`torch.autocast` on CUDA in float16 they run in float32, so the square of 300 above would
# not overflow there.
# Matrix products, convolutions and linear layers are on its float16 list and return float16: a
# result beyond 65,504 is ``inf``, exactly as above.
# The output below shows it for a matrix product, and that bfloat16 autocast keeps the value.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.

with cuda_section(device, "a matrix product beyond 65,504 under CUDA autocast") as live:
    if live:
        a = torch.full((1, 64), 40.0, device=device)
        b = torch.full((64, 1), 40.0, device=device)
        products = {}
        for dtype in (torch.float16, torch.bfloat16):
            with torch.autocast("cuda", dtype=dtype):
                product = a @ b
            products[str(dtype)] = (str(product.dtype), product.item())
        print("64 × 40 × 40 = 102400 under autocast:", products)
        assert products["torch.float16"] == ("torch.float16", math.inf)
        assert products["torch.bfloat16"][1] == 102400.0

# %%
# A real-world report: T5 in float16
# ----------------------------------
#
# In 2020 a user fine-tuning T5 with float16 mixed precision got a NaN loss after 34 iterations
# (`huggingface/transformers issue 5651
# <https://github.com/huggingface/transformers/issues/5651>`_).
# They traced it to the output projection of a feed-forward block: one of its values was
# 66,246 when computed in float32, above float16's 65,504, so it was ``inf`` in float16 and
# later became NaN; the same training in float32 was fine.
# A similar report to Google's T5 repository got the explanation from one of T5's authors: all
# of their experiments used bfloat16 activations
# (`google-research/text-to-text-transfer-transformer issue 539
# <https://github.com/google-research/text-to-text-transfer-transformer/issues/539>`_).
# The model had been trained in a dtype with float32's range, and its activations had grown
# to use it.
#
# Takeaway
# --------
#
# **float16 ends at 65,504: a larger activation, or the square of anything above 256, becomes
# inf and then NaN, and GradScaler cannot help with the forward pass.**
# Prefer bfloat16; in float16, keep squares, exponentials and normalisations in float32, and
# find the first layer whose output holds an ``inf`` when the loss turns NaN.
# The outputs of an autocast region have pitfalls of their own: :ref:`autocast-outputs-dtype`.
