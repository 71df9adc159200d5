"""
.. _attention-mask-polarity:

Boolean attention masks mean opposite things
============================================

PyTorch has two conventions for a boolean attention mask.
:func:`~torch.nn.functional.scaled_dot_product_attention` reads ``True`` as "this position
takes part in attention"; :class:`~torch.nn.MultiheadAttention` (and the
:class:`~torch.nn.Transformer` layers built on it) reads ``True`` as "ignore this position",
for both ``key_padding_mask`` and ``attn_mask``.
The same mask, passed to both, gives opposite results: one attends to the real tokens, the other
only to the padding, and a sequence without padding gets NaN.
No error is raised, since both accept a boolean tensor of the same shape.

.. admonition:: What you will learn

   * which boolean convention each attention API uses, and that float masks mean the same in
     both;
   * what the wrong polarity does: attention on padding only, outputs that depend on the
     padding, NaN for full sequences;
   * how to convert a mask between the two conventions, for padding and for causal masks.

.. admonition:: Prerequisites

   Scaled dot-product attention (scores, softmax, weighted sum of values);
   :ref:`embedding-padding-idx` (padding a batch of sequences).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A batch of two sequences of 5 and 3 tokens, padded to 5, goes through a self-attention layer.
# ``keep`` marks the real tokens with ``True``, the form in which padding masks are often
# built (``positions < lengths``).
# We pass it to :class:`~torch.nn.MultiheadAttention` as its ``key_padding_mask``, and look at
# the attention weights the layer returns.
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

N, L, E, HEADS = 2, 5, 8, 2
lengths = torch.tensor([5, 3], device=device)
keep = torch.arange(L, device=device) < lengths[:, None]  # True = a real token
print("keep:", keep, sep="\n")

mha = nn.MultiheadAttention(E, HEADS, batch_first=True).to(device)
x = torch.randn(N, L, E, device=device)
out_wrong, weights_wrong = mha(x, x, x, key_padding_mask=keep)
print("attention weights of sequence 1 (rows: queries, columns: keys):")
print(weights_wrong[1].detach())
print("outputs of sequence 0 are NaN:", bool(out_wrong[0].isnan().all()))
assert torch.count_nonzero(weights_wrong[1][:, :3]) == 0  # the 3 real keys get no weight
assert out_wrong[0].isnan().all()

# %%
# **Sequence 1 attends only to its two padding positions, and sequence 0, which has no padding,
# has every key masked: its outputs are NaN.**
# The NaN at least shows up.
# Had every sequence of the batch contained padding, the model would have trained on the
# padding's values without a single NaN.
# Changing what sits in the padding positions changes the outputs of the real tokens:

x_other_padding = x.clone()
x_other_padding[1, 3:] = 5 * torch.randn(2, E, device=device)
out_wrong_other, _ = mha(x_other_padding, x_other_padding, x_other_padding, key_padding_mask=keep)
padding_leaks = not torch.allclose(out_wrong[1, :3], out_wrong_other[1, :3])
print("real tokens' outputs change with the padding's content:", padding_leaks)
assert padding_leaks

# %%
# Why
# ---
#
# The documentation states each convention.
# For :func:`~torch.nn.functional.scaled_dot_product_attention`, "a boolean mask where a value
# of True indicates that the element *should* take part in attention".
# For :class:`~torch.nn.MultiheadAttention`, "for a binary mask, a ``True`` value indicates that
# the corresponding ``key`` value will be ignored", and likewise for ``attn_mask``.
# The documentation of the function and that of :class:`~torch.nn.Transformer` each carry a
# note that the two conventions are opposite.
# **The keep mask meant "attend here"; MultiheadAttention read it as "ignore here".**
#
# To compare the two functions on equal terms, we compute the same attention with
# :func:`~torch.nn.functional.scaled_dot_product_attention`, using the layer's own projections.
# With ``keep`` it matches the layer given the inverted mask ``~keep``:


def sdpa_attention(x, **mask_args):
    """The attention of ``mha``, computed with F.scaled_dot_product_attention."""
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    heads = [t.view(N, L, HEADS, E // HEADS).transpose(1, 2) for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*heads, **mask_args)  # (N, HEADS, L, E / HEADS)
    return mha.out_proj(out.transpose(1, 2).reshape(N, L, E))


def same(a, b):
    """Equal up to float32 rounding (the two paths may use different kernels)."""
    return torch.allclose(a, b, rtol=0, atol=1e-4)


out_sdpa = sdpa_attention(x, attn_mask=keep[:, None, None, :])  # broadcast over heads, queries
out_right, weights_right = mha(x, x, x, key_padding_mask=~keep)
sdpa_keep_is_mha_not_keep = same(out_sdpa, out_right)
print("SDPA(keep) == MultiheadAttention(~keep):", sdpa_keep_is_mha_not_keep)
print("attention weights of sequence 1 with ~keep:", weights_right[1].detach(), sep="\n")
assert sdpa_keep_is_mha_not_keep
assert torch.count_nonzero(weights_right[1][:, 3:]) == 0

# %%
# Float masks do not have this problem: **both APIs add a float mask to the attention scores**,
# so ``0`` keeps a position and ``-inf`` removes it, in either.
# :class:`~torch.nn.MultiheadAttention` turns its boolean masks into such a float mask, with
# ``-inf`` where the mask is ``True``, before computing the attention.

float_mask = torch.zeros(N, L, device=device).masked_fill(~keep, float("-inf"))
out_mha_float, _ = mha(x, x, x, key_padding_mask=float_mask)
out_sdpa_float = sdpa_attention(x, attn_mask=float_mask[:, None, None, :])
float_masks_agree = same(out_mha_float, out_right) and same(out_sdpa_float, out_right)
print("the same float mask gives the same result in both:", float_masks_agree)
assert float_masks_agree

# %%
# The fix
# -------
#
# **Decide once which convention a mask follows, name it after it, and invert it with ~ when it
# crosses to the other API.**
# A name like ``keep`` or ``is_padding`` says what ``True`` means; ``mask`` does not.
# With the inverted mask, the real tokens' outputs no longer depend on the padding:

out_right_other, _ = mha(x_other_padding, x_other_padding, x_other_padding, key_padding_mask=~keep)
padding_ignored = same(out_right[1, :3], out_right_other[1, :3])
print("real tokens' outputs independent of the padding:", padding_ignored)
print("no NaN:", not out_right.isnan().any().item())
assert padding_ignored and not out_right.isnan().any()

# %%
# Causal masks follow the same two conventions.
# :class:`~torch.nn.MultiheadAttention` wants ``True`` *above* the diagonal (the future is
# ignored); :func:`~torch.nn.functional.scaled_dot_product_attention` wants ``True`` on and
# *below* it (the past is attended), or simply ``is_causal=True``.
# :meth:`nn.Transformer.generate_square_subsequent_mask
# <torch.nn.Transformer.generate_square_subsequent_mask>` returns a float mask, valid for both.

future = torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)  # MHA convention
causal_float = nn.Transformer.generate_square_subsequent_mask(L, device=device)
print("generate_square_subsequent_mask:", causal_float, sep="\n")
causal_mha, _ = mha(x, x, x, attn_mask=future)
causal_mha_float, _ = mha(x, x, x, attn_mask=causal_float)
causal_sdpa = sdpa_attention(x, attn_mask=~future)
causal_sdpa_flag = sdpa_attention(x, is_causal=True)
others = (causal_mha_float, causal_sdpa, causal_sdpa_flag)
causal_agree = all(same(causal_mha, other) for other in others)
print("MHA(future), MHA(float mask), SDPA(~future) and SDPA(is_causal=True) agree:", causal_agree)
assert causal_agree

# %%
# Passing MultiheadAttention's causal mask to
# :func:`~torch.nn.functional.scaled_dot_product_attention` unchanged lets every position attend
# only to the *future* (and leaves the last position nothing to attend to at all).
# We compare the first four positions:

anti_causal = sdpa_attention(x, attn_mask=future)
anti_causal_differs = not same(anti_causal[:, :-1], causal_mha[:, :-1])
print("SDPA(future) differs from the causal attention:", anti_causal_differs)
assert anti_causal_differs

# %%
# Fully masked rows: NaN, or zeros
# --------------------------------
#
# Even with the right polarity, a query row can end up with *no* key to attend to.
# The usual way there is left padding combined with a causal mask: a padding query at the start
# of a sequence may only look at earlier positions, and those are padding too.
# We left-pad the same batch and build the mask in the ``keep`` convention:
# query ``i`` may attend to key ``j`` when ``j <= i`` and ``j`` is a real token.

keep_left = torch.arange(L, device=device) >= (L - lengths)[:, None]  # real tokens at the end
allowed = ~future & keep_left[:, None, :]  # (N, L, L), True = attend
no_key = ~allowed.any(dim=-1)  # (N, L): query rows with every key masked
print("keep_left:", keep_left, sep="\n")
print("query rows with no key to attend to:", no_key, sep="\n")
assert no_key.tolist() == [[False] * 5, [True, True, False, False, False]]

# %%
# Such a row holds nothing but ``-inf`` before the softmax, and the softmax of it is ``0 / 0``:

empty_scores = torch.full((L,), float("-inf"), device=device)
print("softmax of a row of -inf:", torch.softmax(empty_scores, dim=-1))
assert torch.softmax(empty_scores, dim=-1).isnan().all()

# %%
# :class:`~torch.nn.MultiheadAttention` computes that softmax itself when it returns the
# attention weights (``need_weights=True``, the default): the two empty rows come out NaN.
# Only the real tokens enter the loss, so the loss is finite, **but the NaN comes back in the
# backward pass**: the softmax's gradient multiplies the zero gradient of the dropped rows by
# their NaN weights (0 × NaN = NaN), and the projection weights, shared by every position,
# collect it.
# :ref:`nan-grad-masked-branch` explains the mechanism.

mask_mha = (~allowed).repeat_interleave(HEADS, dim=0)  # (N * HEADS, L, L), True = ignore
out_nan, _ = mha(x, x, x, attn_mask=mask_mha)
loss_nan = out_nan[keep_left].square().mean()  # real tokens only
(grad_nan,) = torch.autograd.grad(loss_nan, mha.in_proj_weight)
print("output rows that are NaN:", out_nan.isnan().any(dim=-1), sep="\n")
print(f"loss over the real tokens: {loss_nan.item():.4f}")
print("NaN entries in in_proj_weight.grad:", grad_nan.isnan().sum().item(), "of", grad_nan.numel())
assert torch.equal(out_nan.isnan().any(dim=-1), no_key)
assert loss_nan.isfinite() and grad_nan.isnan().any()

# %%
# :func:`~torch.nn.functional.scaled_dot_product_attention` handles the same rows differently
# on this release: it returns **zeros** for a query that has no key, and a finite gradient.
# :class:`~torch.nn.MultiheadAttention` called with ``need_weights=False`` goes through that
# function, so the same layer, with the same mask, gives zeros instead of NaN once it no longer
# returns its weights.
# After the output projection, a zero attention output becomes the projection's bias.

out_sdpa_rows = sdpa_attention(x, attn_mask=allowed[:, None])  # broadcast over the heads
out_no_weights, _ = mha(x, x, x, attn_mask=mask_mha, need_weights=False)
(grad_sdpa,) = torch.autograd.grad(out_sdpa_rows[keep_left].square().mean(), mha.in_proj_weight)
sdpa_rows_are_bias = bool((out_sdpa_rows[no_key] == mha.out_proj.bias).all())
print(
    f"torch {torch.__version__}: rows with no key from SDPA equal out_proj.bias (zero attention):",
    sdpa_rows_are_bias,
)
print(
    "MultiheadAttention(need_weights=False) gives the same, no NaN:",
    same(out_no_weights, out_sdpa_rows),
)
print("gradient through SDPA finite:", grad_sdpa.isfinite().all().item())
zeros_since_2_5 = torch.__version__ >= "2.5"  # NaN, as above, on 2.4: see "Changed in PyTorch 2.5"
assert sdpa_rows_are_bias == same(out_no_weights, out_sdpa_rows) == zeros_since_2_5
assert grad_sdpa.isfinite().all() == zeros_since_2_5

# %%
# Neither NaN nor zero is an answer: a query with no key has no attention output.
# **Make sure that every query row keeps at least one key.**
# Here, letting each query attend to itself changes only the padding queries (the real ones
# already see themselves), so the real tokens' outputs stay as they were, and both paths of
# :class:`~torch.nn.MultiheadAttention` give finite outputs and the same gradient as the zeros.

allowed_self = allowed | torch.eye(L, dtype=torch.bool, device=device)
out_fixed, _ = mha(x, x, x, attn_mask=(~allowed_self).repeat_interleave(HEADS, dim=0))
(grad_fixed,) = torch.autograd.grad(out_fixed[keep_left].square().mean(), mha.in_proj_weight)
print("no NaN with a key in every row:", not out_fixed.isnan().any().item())
print("real tokens unchanged:", same(out_fixed[keep_left], out_sdpa_rows[keep_left]))
print("gradient equals the one through SDPA:", same(grad_fixed, grad_sdpa))
assert not out_fixed.isnan().any() and same(out_fixed[keep_left], out_sdpa_rows[keep_left])
assert same(grad_fixed, grad_sdpa) == zeros_since_2_5

# %%
# Changed in PyTorch 2.5: zeros instead of NaN for a query with no key
# --------------------------------------------------------------------
#
# Up to PyTorch 2.4, :func:`~torch.nn.functional.scaled_dot_product_attention` did not give
# zeros for a query row with every key masked: its softmax over a row of ``-inf`` gave NaN, as
# `PyTorch issue 103963 <https://github.com/pytorch/pytorch/issues/103963>`_ reported, and
# :class:`~torch.nn.MultiheadAttention` with ``need_weights=False`` with it.
# On 2.4 the three checks above print ``False`` (a NaN equals nothing, not even another NaN, and
# the gradient through the function is not finite), and so does the comparison of the fixed
# layer's gradient, finite on every release, with that gradient.
# `PyTorch 2.5 <https://github.com/pytorch/pytorch/releases/tag/v2.5.0>`_ made the function's
# reference path use ``_safe_softmax``, which gives 0 for a row whose scores are all ``-inf``,
# and updated the fused kernels to do the same
# (`pull request #131863 <https://github.com/pytorch/pytorch/pull/131863>`_, landed as
# `#133882 <https://github.com/pytorch/pytorch/pull/133882>`_).
# **Code that relied on the NaN to notice an empty row, or on the zeros to hide one, behaves
# differently on either side of 2.5: give every query a key instead.**
#
# Two public reports show the NaN side.
# In `PyTorch issue 41508 <https://github.com/pytorch/pytorch/issues/41508>`_, open since 2020,
# users combining ``key_padding_mask`` with a limited-context ``attn_mask`` got NaN gradients
# although the NaN rows were removed from the output before the loss.
# `PyTorch issue 160064 <https://github.com/pytorch/pytorch/issues/160064>`_ reports a layer
# whose outputs were fine with ``need_weights=False`` and all NaN with ``need_weights=True``,
# for a mask that removed every key of one head.

# %%
# A real-world report: a flash-attention path with the mask inverted
# ------------------------------------------------------------------
#
# The x-transformers library added a code path that calls
# :func:`~torch.nn.functional.scaled_dot_product_attention`, and passed it the library's own
# boolean mask unchanged; a user noticed that the function reads ``True`` as "attend", the
# opposite of what the mask meant at that point, so the masking was inverted
# (`x-transformers issue 160 <https://github.com/lucidrains/x-transformers/issues/160>`_).
# The author fixed it the same day, keeping the library's own convention: ``True`` to attend.
# The same slip, with a causal mask built for :class:`~torch.nn.MultiheadAttention` and passed
# to the function, was reported in the companion code of a book on large language models
# (`LLMs-from-scratch issue 1061 <https://github.com/rasbt/LLMs-from-scratch/issues/1061>`_),
# and confirmed by its author.
#
# Takeaway
# --------
#
# **scaled_dot_product_attention attends where a boolean mask is True; MultiheadAttention and
# the nn.Transformer layers ignore where it is True: invert with ~ when a mask crosses from one
# to the other, or use float masks, which mean the same in both.**
# In a code review, check every boolean mask passed to an attention call against the API's
# convention, and test that the outputs of real tokens do not change when the padding does.
