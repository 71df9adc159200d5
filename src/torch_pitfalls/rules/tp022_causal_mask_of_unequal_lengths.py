"""``TP022``: ``is_causal=True`` with queries and keys of different lengths.

.. rubric:: What it does

Warns when :func:`torch.nn.functional.scaled_dot_product_attention` is called with
``is_causal=True`` and a query whose length ``L`` (``query.size(-2)``) differs from the key's
length ``S`` (``key.size(-2)``). It reads the shapes only, never the values. Calls made by
``nn.MultiheadAttention`` (and so ``nn.TransformerDecoderLayer``) are checked too: given
``is_causal=True`` with an ``attn_mask``, no ``key_padding_mask`` and ``need_weights=False``,
it drops the mask and passes ``is_causal=True`` on. The guards see the calls made through
``torch.nn.functional`` (``F.scaled_dot_product_attention(...)``); a reference taken before
they were entered (``from torch.nn.functional import scaled_dot_product_attention`` at the top
of a module) calls PyTorch's C function directly and is not seen. Nested (jagged) tensors are
not checked.

.. rubric:: Why is this bad?

With ``L != S``, ``is_causal=True`` is the mask ``torch.ones(L, S, dtype=torch.bool).tril()``,
aligned to the top-left corner: query ``i`` sees keys ``0 … i``. With a key/value cache the
queries are the *last* ``L`` of the ``S`` tokens and query ``i`` should see keys
``0 … S - L + i``: a single new query sees the first key only, and every decoding step returns
the first token's value. PyTorch gives no warning. An ``attn_mask`` passed as well does not
help: the math kernel raises, while the CPU's flash kernel ignores the mask.

.. rubric:: Example

.. code-block:: python

    k_cache, v_cache = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    out = F.scaled_dot_product_attention(q_new, k_cache, v_cache, is_causal=True)

.. rubric:: Use instead

.. code-block:: python

    from torch.nn.attention.bias import causal_lower_right

    k_cache, v_cache = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    mask = causal_lower_right(q_new.size(-2), k_cache.size(-2))
    out = F.scaled_dot_product_attention(q_new, k_cache, v_cache, attn_mask=mask)
"""

from __future__ import annotations

import sys

from torch_pitfalls.rules import Call, _rule

RULE = _rule(
    "TP022",
    "guard",
    "sdpa-is-causal-alignment",
    "is_causal=True with queries and keys of different lengths",
    "查询与键长度不同时使用 is_causal=True",
    "scaled_dot_product_attention got is_causal=True with a query length L different from the "
    "key length S (dim -2): the causal mask is then aligned to the top-left corner, so query i "
    "sees keys 0 … i only, not the last keys of a key/value cache; for one new query pass no "
    "mask, for several pass attn_mask=causal_lower_right(L, S)",
    "scaled_dot_product_attention 收到了 is_causal=True，但查询长度 L 与键长度 S（第 -2 维）"
    "不同：此时因果掩码对齐左上角，第 i 个查询只能看到第 0 … i 个键，而不是 KV 缓存中最后的那些键；"
    "只有一个新查询时不要传掩码，有多个时传 attn_mask=causal_lower_right(L, S)",
    on=(Call("torch.nn.functional.scaled_dot_product_attention"),),
)


def check(guards, func, args, kwargs) -> None:
    """Before a call of ``scaled_dot_product_attention``: ``is_causal=True`` and ``L != S``?"""
    is_causal = args[5] if len(args) > 5 else kwargs.get("is_causal", False)
    if not isinstance(is_causal, bool) or not is_causal:
        return
    query = args[0] if args else kwargs.get("query")
    key = args[1] if len(args) > 1 else kwargs.get("key")
    torch = sys.modules["torch"]
    if not (isinstance(query, torch.Tensor) and isinstance(key, torch.Tensor)):
        return
    if query.is_nested or key.is_nested or query.dim() < 2 or key.dim() < 2:
        return
    if query.shape[-2] != key.shape[-2]:
        guards.flag(RULE.id)
