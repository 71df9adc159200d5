"""What the "sdpa-is-causal-alignment" page does not check itself: other query and key lengths,
the batched, multi-head layout, and the mask nn.MultiheadAttention uses given the is_causal hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right


def keys_seen(q, k, **mask):
    """Which keys each query attends to: SDPA with the identity as values returns its weights."""
    S = k.size(-2)
    identity = torch.eye(S, device=k.device).expand(*k.shape[:-2], S, S)
    return F.scaled_dot_product_attention(q, k, identity, **mask) > 0


@pytest.mark.parametrize(("L", "S"), [(1, 2), (1, 7), (2, 7), (4, 5), (5, 5)])
def test_masks_and_cached_decoding(device, L, S):
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 3, S, 8, device=device).unbind(0)  # batch 2, 3 heads
    top_left = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=0)
    lower_right = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=S - L)
    last = q[..., -L:, :]

    assert torch.equal(keys_seen(last, k, is_causal=True), top_left.expand(2, 3, L, S))
    assert torch.equal(
        keys_seen(last, k, attn_mask=causal_lower_right(L, S)), lower_right.expand(2, 3, L, S)
    )
    # the lower-right mask reproduces the last L rows of causal attention over the whole sequence
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    chunk = F.scaled_dot_product_attention(last, k, v, attn_mask=causal_lower_right(L, S))
    torch.testing.assert_close(chunk, full[..., -L:, :], atol=1e-5, rtol=1e-4)
    # both alignments are the same mask when L == S, and is_causal then matches the full rows
    same = torch.allclose(
        F.scaled_dot_product_attention(last, k, v, is_causal=True), full[..., -L:, :], atol=1e-5
    )
    assert same == (L == S)


def test_multihead_attention_replaces_a_mask_by_the_top_left_one_given_the_causal_hint(device):
    """The page's claim: with ``is_causal=True``, no key_padding_mask and need_weights=False,
    nn.MultiheadAttention drops ``attn_mask`` and SDPA builds the top-left mask."""
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(8, 2, batch_first=True).to(device)
    x, memory = torch.randn(2, 3, 8, device=device), torch.randn(2, 6, 8, device=device)
    allowed = torch.ones(3, 6, dtype=torch.bool, device=device)
    lower_right, top_left = ~allowed.tril(diagonal=3), ~allowed.tril(diagonal=0)  # True: masked
    options = {"need_weights": False}
    hinted, _ = attention(x, memory, memory, attn_mask=lower_right, is_causal=True, **options)
    as_top_left, _ = attention(x, memory, memory, attn_mask=top_left, **options)
    as_given, _ = attention(x, memory, memory, attn_mask=lower_right, **options)
    torch.testing.assert_close(hinted, as_top_left)
    assert not torch.allclose(hinted, as_given, atol=1e-4)
    # with the weights asked for, the hint is not used and the mask is kept
    kept, _ = attention(x, memory, memory, attn_mask=lower_right, is_causal=True)
    torch.testing.assert_close(kept, as_given)
