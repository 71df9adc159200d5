"""``TP020``: gradient clipping that found no gradient to clip.

.. rubric:: What it does

Warns when ``torch.nn.utils.clip_grad_norm_`` or ``clip_grad_value_`` is called on parameters
none of which has a gradient (every ``.grad`` is ``None``) although some require grad: clipping
placed before ``backward()``, or between ``zero_grad()`` and ``backward()``. The guards take the
calls of both functions and read the parameters before the call: a tensor, a list or another
collection, or the generator of ``model.parameters()`` not yet started (re-created, so the call
gets its own untouched); another generator or iterator is not read (reading it would use it up).
Reported at the line of the call. Not seen: clipping after ``optimizer.step()``, or clipping
the previous batch's gradients, which exist.

.. rubric:: Why is this bad?

The call clips nothing and returns a norm of 0, while the step that follows applies the
unclipped gradients: the loss spikes as if there were no clipping.

.. rubric:: Example

.. code-block:: python

    optimizer.zero_grad()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    loss_fn(model(x), y).backward()
    optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
"""

from __future__ import annotations

import inspect
import sys
import types

from torch_pitfalls.rules import Call, _rule

RULE = _rule(
    "TP020",
    "guard",
    "clip-grad-placement",
    "gradient clipping without gradients",
    "梯度裁剪时没有梯度",
    "gradient clipping ran on parameters none of which had a gradient, so it clipped nothing "
    "(and returned 0) and the next step applies unclipped gradients: clip after backward() "
    "and before optimizer.step()",
    "梯度裁剪作用的参数一个梯度都没有，因此什么也没裁剪（返回 0），随后的更新用的是未裁剪的"
    "梯度：应在 backward() 之后、optimizer.step() 之前裁剪",
    on=(
        Call("torch.nn.utils.clip_grad_norm_"),
        Call("torch.nn.utils.clip_grad_value_"),
    ),
)


def _parameters(value):
    """The tensors of a clipping call's ``parameters`` argument, read without using it up;
    ``None`` when they cannot be."""
    torch = sys.modules["torch"]
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, types.GeneratorType):
        frame = value.gi_frame
        if (
            value.gi_code is torch.nn.Module.parameters.__code__
            and inspect.getgeneratorstate(value) == inspect.GEN_CREATED
            and frame is not None
        ):
            owner, recurse = frame.f_locals.get("self"), frame.f_locals.get("recurse", True)
            if isinstance(owner, torch.nn.Module):
                return list(owner.parameters(recurse=recurse))
        return None
    try:
        if iter(value) is value:  # an iterator: reading it would use it up
            return None
    except TypeError:
        return None
    return list(value)


def check(guards, func, args, kwargs) -> None:
    """Before a clipping call: has any of its parameters a gradient?"""
    value = args[0] if args else kwargs.get("parameters")
    params = _parameters(value)
    if not params:
        return
    torch = sys.modules["torch"]
    if not all(isinstance(p, torch.Tensor) for p in params):
        return
    if any(p.requires_grad for p in params) and all(p.grad is None for p in params):
        guards.flag(RULE.id)
