"""``TP107``: gradients clipped after a scaled ``backward()`` without ``scaler.unscale_``.

.. rubric:: What it does

Reported (at the clipping call): in one function (or at module level), a call of
``torch.nn.utils.clip_grad_norm_`` or ``clip_grad_value_`` (through any import alias; the
deprecated ``clip_grad_norm`` too) that comes, in source order, after a call
``<scaler>.scale(<loss>).backward(...)`` that is not in the other arm of the same ``if`` /
``else``, when that function calls ``.unscale_(...)`` nowhere.

Not reported: a module that does not import torch; a function that calls ``unscale_`` anywhere,
under an ``if`` too (the checker does not follow which branch runs); clipping through a method of
another object (``accelerator.clip_grad_norm_``, FSDP's ``model.clip_grad_norm_``, which unscale
or shard themselves); a scaled ``backward()`` written in two statements
(``scaled = scaler.scale(loss)``, then ``scaled.backward()``); a ``GradScaler(enabled=False)``,
which the checker cannot tell from an enabled one (clipping is then correct, but fragile).

.. rubric:: Why is this bad?

Under a ``GradScaler`` the gradients are multiplied by the scale: clipping them before
``scaler.unscale_(optimizer)`` clips the scaled values, so the threshold means nothing.

.. rubric:: Example

.. code-block:: python

    import torch

    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)

.. rubric:: Use instead

.. code-block:: python

    import torch

    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import exclusive, method_call, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import Rule

RULE = Rule(
    "TP107",
    "lint",
    "amp-unscale-before-clip",
    {
        "en": "clipping scaled gradients",
        "zh_CN": "裁剪仍被缩放的梯度",
    },
    {
        "en": "the gradients are clipped after scaler.scale(loss).backward() without "
        "scaler.unscale_(optimizer), so clipping sees them multiplied by the scale: call "
        "scaler.unscale_(optimizer) before clipping",
        "zh_CN": "在 scaler.scale(loss).backward() 之后裁剪梯度时没有先调用 "
        "scaler.unscale_(optimizer)，裁剪看到的是乘以缩放因子后的梯度：应在裁剪前调用 "
        "scaler.unscale_(optimizer)",
    },
)

_CLIP = frozenset(
    f"torch.nn.utils{module}.{name}"
    for module in ("", ".clip_grad")
    for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where scaled gradients are clipped without ``unscale_`` in the same function."""
    if not {"scale", "backward"} <= context.attributes or not context.imports.imports_torch():
        return
    if not any(_scaled_backward(node) for node in ast.walk(context.tree)):
        return  # the common case, and a cheap one: no scaled backward at all
    for scope in scopes(context.tree, context.statements):
        backwards: list[tuple[ast.Call, tuple]] = []
        found: list[ast.Call] = []
        for node, path in walk_with_paths(scope):
            if not isinstance(node, ast.Call):
                continue
            if method_call(node, "unscale_"):
                found = []
                break
            if _scaled_backward(node):
                backwards.append((node, path))
            elif context.imports.qualified_name(node.func) in _CLIP and any(
                not exclusive(path, where) for _, where in backwards
            ):
                found.append(node)
        for clip in found:
            yield clip.lineno, clip.col_offset


def _scaled_backward(node: ast.AST) -> bool:
    """Whether ``node`` is a call ``<scaler>.scale(<loss>).backward(...)``."""
    return method_call(node, "backward") and method_call(node.func.value, "scale")
