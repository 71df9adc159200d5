"""``TP118``: gradients clipped after the step, before the backward, or per micro-batch (opt-in).

.. rubric:: What it does

Reported (at the clipping call): a call of ``torch.nn.utils.clip_grad_norm_`` or
``clip_grad_value_`` (through any import alias; the deprecated ``clip_grad_norm`` too, and the
same methods of another object, ``accelerator.clip_grad_norm_(...)``) inside a ``for`` or
``while`` loop, judged against the calls of the same loop (its body at any depth, nested loops
included; not a function defined there, and not a call in the other arm of an ``if`` that holds
the clipping), in source order:

* *after the step*: the last backward or step before the clipping is an optimizer step, and a
  backward comes before that step;
* *before the backward*: nothing backward or step comes before the clipping in the loop, and the
  next one after it is a backward that a step follows;
* *per micro-batch*: a backward comes before the clipping, and the loop steps no optimizer at all
  (the step comes after the loop: gradient accumulation, each partial sum clipped).

A backward is a call ``<x>.backward(...)`` (``accelerator.backward(loss)``, ``manual_backward``
too); an optimizer step is ``<x>.step(...)`` on a receiver whose name contains ``optim`` or
``opt`` (``optimizer``, ``opt_g``, ``self.optim``) or ``scaler`` (``scaler.step(optimizer)``).

Not reported: clipping outside a loop; a loop that has no backward (the step and the clipping then
run in a helper the checker does not follow). Opt-in: on the public codebases the rules are
measured on (``nox -s survey``) it finds too little to measure its false-alarm rate.

.. rubric:: Why is this bad?

Clipping rescales the gradients that exist when it is called. After ``optimizer.step()`` the
update has already used the unclipped gradients; before ``backward()`` it clips nothing (or the
previous batch's gradients, which ``zero_grad()`` then discards); per micro-batch it shrinks a
partial sum, so the first micro-batches count less than the last. No error is raised.

.. rubric:: Example

.. code-block:: python

    import torch

    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)

.. rubric:: Use instead

.. code-block:: python

    import torch

    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import exclusive, identifier, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP118",
    "lint",
    "clip-grad-placement",
    "gradients clipped in the wrong place",
    "梯度裁剪的位置不对",
    "this clipping runs after optimizer.step(), before backward(), or after each micro-batch's "
    "backward: it does not clip the gradients the step uses; clip once per step, after the last "
    "backward() (and scaler.unscale_) and before optimizer.step()",
    "这次梯度裁剪在 optimizer.step() 之后、backward() 之前，或在每个 micro-batch 的 backward "
    "之后执行：裁剪的不是这一步更新用到的梯度；应在每次更新中只裁剪一次，放在最后一次 backward()"
    "（以及 scaler.unscale_）之后、optimizer.step() 之前",
    default=False,
)

_CLIP = frozenset(
    f"torch.nn.utils{module}.{name}"
    for module in ("", ".clip_grad")
    for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")
)
_CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_"})
_BACKWARD, _STEP, _CLIPPING = "backward", "step", "clip"


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where gradients are clipped after the step, before the backward, or per micro-batch."""
    if not {"backward", "step"} & context.attributes or not context.imports.imports_torch():
        return
    if "clip_grad" not in context.source and context.source:
        return  # the common case, and a cheap one: no clipping at all
    found: set[tuple[int, int]] = set()
    for scope in scopes(context.tree, context.statements):
        events: list[tuple[str, ast.Call, tuple]] = []
        for node, path in walk_with_paths(scope):
            if isinstance(node, ast.Call) and any(step[0] == "loop" for step in path):
                kind = _kind(context, node)
                if kind:
                    events.append((kind, node, path))
        if any(kind == _CLIPPING for kind, _, _ in events):
            found.update(_misplaced(events))
    yield from sorted(found)


def _kind(context: Context, call: ast.Call) -> str | None:
    func = call.func
    if context.imports.qualified_name(func) in _CLIP:
        return _CLIPPING
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _CLIP_METHODS:
        return _CLIPPING
    if func.attr in ("backward", "manual_backward"):
        return _BACKWARD
    if func.attr == "step":
        name = identifier(func.value).lower()
        if "optim" in name or "opt" in name or "scaler" in name:
            return _STEP
    return None


def _misplaced(events: list[tuple[str, ast.Call, tuple]]) -> Iterator[tuple[int, int]]:
    for index, (kind, clip, path) in enumerate(events):
        if kind != _CLIPPING:
            continue
        loop = [step for step in path if step[0] == "loop"][-1]
        same = [  # the backward and step calls of the clipping's innermost loop, at any depth
            (i, k)
            for i, (k, _, where) in enumerate(events)
            if k != _CLIPPING and loop in where and not exclusive(path, where)
        ]
        before = [k for i, k in same if i < index]
        after = [k for i, k in same if i > index]
        steps = any(k == _STEP for _, k in same)
        if before and before[-1] == _STEP and _BACKWARD in before:
            yield clip.lineno, clip.col_offset  # after the step
        elif not before and after[:1] == [_BACKWARD] and _STEP in after:
            yield clip.lineno, clip.col_offset  # before the backward
        elif _BACKWARD in before and not steps:
            yield clip.lineno, clip.col_offset  # per micro-batch
