"""
.. _sdpa-is-causal-alignment:

``is_causal=True`` with fewer queries than keys
===============================================

A decoder generates text one token at a time with a key/value cache: each step computes the
query of the newest token only and attends to the keys and values of every token so far.
Passing ``is_causal=True`` to :func:`~torch.nn.functional.scaled_dot_product_attention` in that
step looks harmless, since the model is causal.
It is not: the causal mask is aligned to the *top-left* corner of the attention matrix, so a
single query is allowed to see the first key only.
Every decoding step returns the first token's value, the output no longer matches the model run
on the whole sequence, and no error or warning is raised.

.. admonition:: What you will learn

   * which mask ``is_causal=True`` builds when the query length ``L`` differs from the key
     length ``S``;
   * how to read the attention weights of SDPA by giving it the identity matrix as values;
   * the fixes: no ``is_causal`` for one new query, a lower-right causal mask for several.

.. admonition:: Prerequisites

   Scaled dot-product attention (scores, softmax, weighted sum of values), causal masks and
   decoding with a key/value cache; :ref:`attention-mask-polarity` (what ``True`` means in an
   SDPA boolean mask).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A single attention head over a sequence of 6 tokens, with queries, keys and values of size 4
# in the layout SDPA expects, ``(batch, heads, tokens, features)``.
# ``reference`` is causal attention over the whole sequence in one call: there ``L == S == 6``
# and ``is_causal=True`` is correct.
# Then the same tokens are decoded one at a time: step ``t`` has the query of token ``t`` and
# the cached keys and values of tokens ``0 … t``, and passes ``is_causal=True`` as well.
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

T, D = 6, 4
q, k, v = torch.randn(3, 1, 1, T, D, device=device).unbind(0)
reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (1, 1, T, D)

steps = []
for t in range(T):
    q_t = q[:, :, t : t + 1]  # the newest token's query, L = 1
    k_cache, v_cache = k[:, :, : t + 1], v[:, :, : t + 1]  # S = t + 1
    steps.append(F.scaled_dot_product_attention(q_t, k_cache, v_cache, is_causal=True))
decoded = torch.cat(steps, dim=2)

matches = [torch.allclose(decoded[0, 0, t], reference[0, 0, t], atol=1e-5) for t in range(T)]
is_first_value = [torch.allclose(decoded[0, 0, t], v[0, 0, 0], atol=1e-5) for t in range(T)]
print("step output == full-sequence output:", matches)
print("step output == value of token 0:    ", is_first_value)
assert matches == [True] + [False] * (T - 1)
assert all(is_first_value)

# %%
# **Every step returns the value of token 0**, whatever the query, and only step 0 (where the
# cache holds one token) agrees with the full-sequence run.
# A model decoded this way gets the same attention output at every step (the report below
# describes generation that keeps producing the same vector), while its training and any full
# forward pass, where ``L == S``, are correct.
#
# To see the weights, give SDPA the identity matrix as values: the output is then the attention
# weights themselves, one row per query and one column per key.

identity = torch.eye(T, device=device).expand(1, 1, T, T)
step_weights = F.scaled_dot_product_attention(q[:, :, -1:], k, identity, is_causal=True)
print("weights of the last step (1 query, 6 keys):", step_weights[0, 0].cpu(), sep="\n")
assert step_weights[0, 0, 0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]

# %%
# All the weight is on key 0: the five other cached tokens are masked out.
#
# Why
# ---
#
# :func:`~torch.nn.functional.scaled_dot_product_attention` documents ``is_causal=True`` as the
# mask ``torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)``: query ``i`` may attend to keys
# ``0 … i``, which its documentation calls the *upper-left* causal bias when ``L != S``.
# The diagonal starts at the top-left corner, which is the right mask when queries and keys are
# the same tokens (``L == S``).
# With a cache, the ``L`` queries are the *last* ``L`` tokens of the ``S`` keys, and query ``i``
# should see keys ``0 … S - L + i``: the diagonal must end at the bottom-right corner.
# Building the documented mask by hand gives exactly what SDPA did:

L, S = 1, T
top_left = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=0)
by_hand = F.scaled_dot_product_attention(q[:, :, -1:], k, v, attn_mask=top_left)
print("is_causal=True mask for L=1, S=6:", top_left.int().tolist())
torch.testing.assert_close(by_hand, decoded[:, :, -1:])
assert top_left.tolist() == [[True, False, False, False, False, False]]

# %%
# With ``L == S`` both alignments are the same mask, which is why the training code (one call
# over whole sequences) is right and only the cached decoding path is wrong.
# The same happens with several new queries at once (chunked prefill, speculative decoding):
# three queries against six keys see keys ``{0}``, ``{0, 1}`` and ``{0, 1, 2}``, where they
# should see ``0 … 3``, ``0 … 4`` and ``0 … 5``.

chunk_weights = F.scaled_dot_product_attention(q[:, :, -3:], k, identity, is_causal=True)
keys_seen = (chunk_weights[0, 0] > 0).int()
print("keys seen by the last 3 queries with is_causal=True:", keys_seen.tolist())
assert keys_seen.tolist() == [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]]

# %%
# The fix
# -------
#
# **For one new query, pass no mask and no is_causal**: the cache holds only the past and the
# current token, so the newest token may attend to all of it.

steps = []
for t in range(T):
    q_t, k_cache, v_cache = q[:, :, t : t + 1], k[:, :, : t + 1], v[:, :, : t + 1]
    steps.append(F.scaled_dot_product_attention(q_t, k_cache, v_cache))  # no is_causal
fixed = torch.cat(steps, dim=2)
fixed_matches = torch.allclose(fixed, reference, atol=1e-5)
print("one query, no mask: every step matches the full sequence:", fixed_matches)
assert fixed_matches
torch.testing.assert_close(fixed, reference, atol=1e-5, rtol=1e-4)

# %%
# **For several new queries, use a causal mask aligned to the bottom-right corner.**
# :func:`torch.nn.attention.bias.causal_lower_right` returns such a mask as a
# :class:`~torch.nn.attention.bias.CausalBias` that SDPA accepts as its ``attn_mask`` (and can
# pass on to its fused kernels); the explicit boolean form is
# ``torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)``.

L = 3
lower_right = causal_lower_right(L, S)
explicit = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=S - L)
weights = F.scaled_dot_product_attention(q[:, :, -L:], k, identity, attn_mask=lower_right)
keys_seen = (weights[0, 0] > 0).int()
print("keys seen by the last 3 queries with causal_lower_right(3, 6):", keys_seen.tolist())
assert keys_seen.tolist() == explicit.int().tolist()
assert keys_seen.tolist() == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]]

chunk = F.scaled_dot_product_attention(q[:, :, -L:], k, v, attn_mask=lower_right)
chunk_explicit = F.scaled_dot_product_attention(q[:, :, -L:], k, v, attn_mask=explicit)
chunk_matches = torch.allclose(chunk, reference[:, :, -L:], atol=1e-5)
print("last 3 queries, lower-right mask, match the full sequence:", chunk_matches)
assert chunk_matches
torch.testing.assert_close(chunk, reference[:, :, -L:], atol=1e-5, rtol=1e-4)
torch.testing.assert_close(chunk_explicit, reference[:, :, -L:], atol=1e-5, rtol=1e-4)

# %%
# With ``L = 1`` the lower-right mask is all ``True``, the same as no mask, so one code path
# (``attn_mask=causal_lower_right(L, S)``) serves the prompt and every decoding step.
# Keep ``is_causal=True`` for calls whose queries and keys are the same tokens.
#
# A real-world report
# -------------------
#
# A user generating tokens with a cache reported that SDPA with ``is_causal=True`` and one
# query compared it with the earliest key and value only, so that generation produced the same
# vector again and again; the mask they found to work is the bottom rows of a square lower
# triangle, the lower-right mask above
# (`PyTorch issue 144858 <https://github.com/pytorch/pytorch/issues/144858>`_).
# The ambiguity had been raised when SDPA appeared
# (`PyTorch issue 103082 <https://github.com/pytorch/pytorch/issues/103082>`_), and a maintainer
# proposed making the bottom-right alignment the default, a change that would break callers
# with ``L != S`` (`PyTorch issue 108108 <https://github.com/pytorch/pytorch/issues/108108>`_).
# Issue 103082 was later closed with a pointer to the masks of ``torch.nn.attention.bias``,
# which let the caller choose the alignment: the default stays top-left.
#
# Detectors
# ---------
#
# The runtime guard ``TP022`` detects this pitfall in your own code (see :doc:`/detectors`): a
# call of :func:`~torch.nn.functional.scaled_dot_product_attention` with ``is_causal=True`` whose
# query length ``L`` (``query.size(-2)``) differs from the key length ``S`` (``key.size(-2)``).
# It reads the shapes only, never the values.
# Under :mod:`torch_pitfalls.guards`, the cached decoding loop of the symptom warns, once for its
# line, while the call over the whole sequence (``L == S``) and both fixes are silent.
# The guards see the calls made through the module ``torch.nn.functional``, as on this page
# (``F.scaled_dot_product_attention(...)``); a name imported from it before the guards are
# entered (``from torch.nn.functional import scaled_dot_product_attention``) calls PyTorch's C
# function directly and is not seen.

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP022 "):
        for t in range(T):
            q_t, k_cache, v_cache = q[:, :, t : t + 1], k[:, :, : t + 1], v[:, :, : t + 1]
            F.scaled_dot_product_attention(q_t, k_cache, v_cache, is_causal=True)
with guards(language="en") as fixed:
    guarded = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # L == S
    for t in range(T):
        q_t, k_cache, v_cache = q[:, :, t : t + 1], k[:, :, : t + 1], v[:, :, : t + 1]
        F.scaled_dot_product_attention(q_t, k_cache, v_cache)
    F.scaled_dot_product_attention(q[:, :, -L:], k, v, attn_mask=causal_lower_right(L, S))
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP022"] and len(wrong.found) == 1 and fixed.ids == []
assert torch.equal(guarded, reference)  # the guards change no value

# %%
# ``TP022`` also sees the calls :class:`~torch.nn.MultiheadAttention` makes.
# Given ``is_causal=True`` (documented as a hint that ``attn_mask`` is the causal mask) with no
# ``key_padding_mask`` and ``need_weights=False``, it drops ``attn_mask`` and passes
# ``is_causal=True`` to SDPA instead: a lower-right mask for 3 new queries and 6 keys is then
# replaced by the top-left one, and the output changes.
# In :class:`~torch.nn.MultiheadAttention` a ``True`` in a boolean mask means *masked out*, so
# the lower-right mask is the complement of the allowed positions.

seed_everything(0)
attention = torch.nn.MultiheadAttention(D, 1, batch_first=True).to(device)
new_tokens, cached = torch.randn(1, 3, D, device=device), torch.randn(1, 6, D, device=device)
masked_out = torch.ones(3, 6, dtype=torch.bool, device=device).tril(diagonal=3).logical_not()
options = {"attn_mask": masked_out, "need_weights": False}
with guards(language="en") as found:
    with expect_warns(PitfallWarning, "^TP022 "):
        hinted, _ = attention(new_tokens, cached, cached, **options, is_causal=True)
as_given, _ = attention(new_tokens, cached, cached, **options)
same = torch.allclose(hinted, as_given, atol=1e-5)
print("is_causal=True hint:", found.ids, "  output the same as with the mask alone:", same)
assert found.ids == ["TP022"] and not same

# %%
# Takeaway
# --------
#
# **is_causal=True aligns the causal mask to the top-left corner: with a key/value cache
# (fewer queries than keys), pass no mask for one query and causal_lower_right(L, S) for
# several.**
# Test a cached decoding path against one call over the whole sequence: the outputs must agree
# at every position.
