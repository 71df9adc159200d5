"""
.. _bf16-position-encoding:

Positions and rotary phases in bfloat16
=======================================

A transformer with rotary position embeddings works in float32; converted with
``model.to(torch.bfloat16)``, or run under :class:`torch.autocast`, its position encodings go
wrong on long inputs, and nothing reports an error.
bfloat16 holds every integer only up to 256: above that, neighbouring positions round to the
same number, and tokens 1022 to 1028 all receive the rotation of position 1024.
The frequencies and the phases (position times frequency) lose as much: at position 2000, an
error of a few tenths of a percent is about a radian.

.. admonition:: What you will learn

   * which integers bfloat16 can hold, and how many of the positions 0 to 2047 stay distinct;
   * how ``model.to(torch.bfloat16)`` reaches the frequency buffer, and autocast the phase matmul;
   * the fix: positions, frequencies and phases in float32, cast to the activations' dtype only
     as cosines and sines.

.. admonition:: Prerequisites

   :ref:`half-precision-accumulation` (the gaps between bfloat16 numbers), buffers
   (:ref:`register-buffer`), and the idea of rotary embeddings: each pair of features of a query
   or key is rotated by ``position * frequency``.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A rotary embedding as many code bases write it: the inverse frequencies are a buffer
# (:meth:`~torch.nn.Module.register_buffer`), and the positions are created in the buffer's dtype.
# It returns the cosine and sine of every phase, one row per position.
# We count the positions that get a rotation of their own, in float32 and after
# :meth:`torch.nn.Module.to` converts the model to bfloat16:
import matplotlib.pyplot as plt
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

dim, base, seq_len = 64, 10000.0, 2048


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seq_len):
        positions = torch.arange(seq_len, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        phases = torch.outer(positions, self.inv_freq)  # (seq_len, dim / 2)
        return phases.cos(), phases.sin()


def distinct_positions(cos, sin):
    """How many positions get a rotation that no other position gets."""
    return torch.unique(torch.cat([cos, sin], dim=1).float(), dim=0).shape[0]


rotary = RotaryEmbedding(dim, base).to(device)
print("float32: distinct rotations of", seq_len, "positions:", distinct_positions(*rotary(seq_len)))
rotary.to(torch.bfloat16)
cos_bf16, sin_bf16 = rotary(seq_len)
print("after .to(torch.bfloat16):", distinct_positions(cos_bf16, sin_bf16))
assert distinct_positions(*RotaryEmbedding(dim, base).to(device)(seq_len)) == seq_len
assert distinct_positions(cos_bf16, sin_bf16) == 641

same_as_1024 = (cos_bf16[1016:1040] == cos_bf16[1024]).all(dim=1).nonzero().flatten() + 1016
print("positions with exactly the rotation of position 1024:", same_as_1024.tolist())
assert same_as_1024.tolist() == [1022, 1023, 1024, 1025, 1026, 1027, 1028]

# %%
# **Of 2048 positions, 641 remain: from position 1024 on, groups of about eight neighbouring
# tokens share one rotation.**
# Attention can no longer tell these tokens' order from their positions, and a model trained in
# float32 receives the wrong rotation for most positions above 256.
#
# Why
# ---
#
# bfloat16 has 8 significant bits: it holds every integer up to ``2**8 = 256``, then every
# second one up to 512, every fourth one up to 1024, and so on.
# An integer in between is rounded to the nearest one it holds (to the even one on a tie):

print(torch.arange(250, 262).to(torch.bfloat16).tolist())
assert torch.arange(250, 262).to(torch.bfloat16).tolist() == [
    250.0, 251.0, 252.0, 253.0, 254.0, 255.0, 256.0, 256.0, 258.0, 260.0, 260.0, 260.0
]  # fmt: skip

values = torch.unique(torch.arange(seq_len, device=device).to(torch.bfloat16)).float()
print(f"positions 0-{seq_len - 1} in bfloat16: {values.numel()} distinct values")
counts = []
for lo, hi in ((-1, 256), (256, 512), (512, 1024), (1024, 2048)):
    inside = values[(values > lo) & (values <= hi)]
    counts.append(inside.numel())
    print(f"  {inside.numel()} values up to {hi}: {inside[:3].tolist()} ...")
assert values.numel() == 641
assert counts == [257, 128, 128, 128]

# %%
# 257 exact integers up to 256, then 128 values between each power of two and the next: the
# gap doubles at every power of two, and 2047 rounds up to 2048.
# The module made its positions in bfloat16 because :meth:`torch.nn.Module.to` with a dtype
# converts every floating-point parameter *and buffer*, ``inv_freq`` included:

print("inv_freq after rotary.to(torch.bfloat16):", rotary.inv_freq.dtype)
assert rotary.inv_freq.dtype == torch.bfloat16

# %%
# Making the positions in float32 is not enough: the frequencies themselves were rounded, and
# the phase ``position * frequency`` multiplies their error by the position.
# ``.float()`` cannot give back the digits that the conversion dropped.
# Against a float64 reference, with float32 positions and the converted buffer:

positions = torch.arange(seq_len, device=device, dtype=torch.float64)
exact_inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, device=device, dtype=torch.float64) / dim)
reference = torch.outer(positions, exact_inv_freq)  # the exact phases
freq_error = ((rotary.inv_freq.double() - exact_inv_freq) / exact_inv_freq).abs().max().item()
print(f"largest relative error of the bfloat16 frequencies: {freq_error:.2%}")
assert 2**-9 < freq_error <= 2**-8  # half a gap, relative to the value

phases = torch.outer(positions.float(), rotary.inv_freq.float())
phase_error = (phases.double() - reference).abs().max(dim=1).values
print(f"largest phase error at position 100: {phase_error[100]:.3f} rad")
print(f"largest phase error at position 2047: {phase_error[-1]:.2f} rad")
assert phase_error[100] < 0.1 and phase_error[-1] > 0.5

# %%
# **The phase error grows with the position: an error of a few tenths of a percent in the
# frequencies is almost a radian at position 2047.**
#
# Under autocast: the phase matmul runs in bfloat16
# -------------------------------------------------
#
# Keeping the model in float32 and running it under :class:`torch.autocast` keeps ``inv_freq``
# in float32, but the phases can still be computed in bfloat16.
# Some implementations compute them as a matrix product, ``inv_freq[:, None] @ positions[None, :]``,
# and autocast runs matrix products of float32 tensors in bfloat16.
# :func:`torch.outer` and the element-wise product are not on autocast's list and stay float32:

inv_freq = RotaryEmbedding(dim, base).to(device).inv_freq  # float32
positions = torch.arange(seq_len, device=device).float()
with torch.autocast(device.type, dtype=torch.bfloat16):
    by_matmul = (inv_freq[:, None] @ positions[None, :]).T
    by_outer = torch.outer(positions, inv_freq)
    by_product = positions[:, None] * inv_freq[None, :]
dtypes = {"matmul": by_matmul.dtype, "outer": by_outer.dtype, "product": by_product.dtype}
print("phases computed under autocast:", {k: str(v) for k, v in dtypes.items()})
matmul_cos, matmul_sin = by_matmul.float().cos(), by_matmul.float().sin()
print("distinct rotations from the autocast matmul:", distinct_positions(matmul_cos, matmul_sin))
assert dtypes == {"matmul": torch.bfloat16, "outer": torch.float32, "product": torch.float32}
assert distinct_positions(matmul_cos, matmul_sin) == 641

# %%
# The matrix product rounds its result, the phases, to bfloat16: the first frequency is 1, so
# its phases are the positions themselves, and the same 641 rotations remain.
# The higher the phase, the coarser its rounding; at 2000 radians, the gap is:

phase = torch.tensor(2000.0, dtype=torch.bfloat16, device=device)
gap = (
    torch.nextafter(phase, torch.tensor(float("inf"), dtype=torch.bfloat16, device=device)) - phase
).item()
print(f"gap between bfloat16 numbers at 2000: {gap} radians")
assert gap == 8.0

# %%
# The first frequency's cosine, position by position, shows the steps:

window = slice(1000, 1064)
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(range(1000, 1064), reference[window, 0].cos().cpu(), "k--", label="exact")
ax.plot(range(1000, 1064), cos_bf16[window, 0].float().cpu(), label="model.to(bfloat16)")
ax.plot(range(1000, 1064), matmul_cos[window, 0].cpu(), ":", label="matmul under autocast")
ax.set_xlabel("position")
ax.set_ylabel("cos(position × first frequency)")
ax.set_title("Positions 1000-1063: bfloat16 rotations come in steps")
ax.legend(loc="lower left", fontsize="small")
fig.tight_layout()

# %%
# The fix
# -------
#
# **Compute positions, frequencies and phases in float32, whatever the model's dtype, and convert
# only the cosines and sines to the dtype of the activations.**
# The positions arrive as integers (``position_ids``, exact in float32 up to ``2**24``); the
# frequencies are recomputed in float32 on each call (``dim / 2`` numbers, out of reach of any
# conversion of the model); autocast is switched off around the product, which matters when it
# is written as a matmul.


class FixedRotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        self.dim, self.base = dim, base

    def forward(self, position_ids, dtype):
        device = position_ids.device
        exponents = torch.arange(0, self.dim, 2, device=device, dtype=torch.float32) / self.dim
        inv_freq = 1.0 / self.base**exponents
        with torch.autocast(device.type, enabled=False):
            phases = torch.outer(position_ids.float(), inv_freq)
        return phases.cos().to(dtype), phases.sin().to(dtype)


fixed = FixedRotaryEmbedding(dim, base).to(device).to(torch.bfloat16)  # the conversion is harmless
position_ids = torch.arange(seq_len, device=device)  # int64
results = {}
for name, autocast in (("after .to(torch.bfloat16)", False), ("under autocast", True)):
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
        cos, sin = fixed(position_ids, torch.bfloat16)
    error = (cos.double() - reference.cos()).abs().max().item()
    results[name] = (distinct_positions(cos, sin), error)
    print(
        f"{name}: {cos.dtype} tables, {results[name][0]} distinct rotations, cos error {error:.4f}"
    )
for distinct, error in results.values():
    assert distinct == seq_len and error <= 2**-8

# %%
# **All 2048 positions keep a rotation of their own, and the cosines are off by about 0.002**:
# the rounding of the final values to bfloat16 (half the gap below 1 is ``2**-9``), which no
# longer grows with the position.
#
# A table computed in float32 and only then converted is safe for the same reason, such as the
# sinusoidal position encoding of the original Transformer kept as a buffer:
# ``model.to(torch.bfloat16)`` rounds its values, not the positions they were computed from.


class SinusoidalEncoding(nn.Module):
    def __init__(self, dim, base, seq_len):
        super().__init__()
        phases = torch.outer(
            torch.arange(seq_len).float(), 1.0 / base ** (torch.arange(0, dim, 2) / dim)
        )
        self.register_buffer("table", torch.cat([phases.sin(), phases.cos()], dim=1))


table = SinusoidalEncoding(dim, base, seq_len).to(device).to(torch.bfloat16).table
table_error = (table[:, dim // 2 :].double() - reference.cos()).abs().max().item()
table_distinct = torch.unique(table.float(), dim=0).shape[0]
print(f"sinusoidal table after .to(torch.bfloat16): {table_distinct} distinct rows,", end=" ")
print(f"cos error {table_error:.4f}")
assert table.dtype == torch.bfloat16 and table_distinct == seq_len and table_error <= 2**-8

# %%
# The weights' own precision in bfloat16 is the subject of :ref:`bf16-weight-updates-lost`.
#
# A real-world report: RoPE in bfloat16 in Hugging Face Transformers
# ------------------------------------------------------------------
#
# In `transformers issue 25681 <https://github.com/huggingface/transformers/issues/25681>`_ a
# user reported that the cosine and sine cache of the Llama rotary embedding held wrong values
# once the model was cast to float16 or bfloat16.
# The module quoted in the report builds its positions with ``torch.arange`` in the dtype it is
# given and multiplies them by the frequency buffer converted to that dtype: the symptom above.
# Later, `transformers pull request 29285 <https://github.com/huggingface/transformers/pull/29285>`_
# (merged) reported the autocast case for Llama and Gemma: under bfloat16 autocast the rotary
# embeddings were computed in bfloat16 and lost precision, most of all for long contexts.
# Its author had forced float32 in their own implementation of Gemma, and with the same seed
# that implementation's training loss was lower than the library's from the first steps.
#
# Takeaway
# --------
#
# **bfloat16 holds the integers only up to 256: compute positions, frequencies and rotary phases
# in float32, and convert only the cosines and sines.**
# ``model.to(torch.bfloat16)`` converts frequency buffers, and autocast runs a phase matmul in
# bfloat16; check by counting the distinct rows of the cosine and sine tables.
