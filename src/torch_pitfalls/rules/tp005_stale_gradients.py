"""``TP005``: gradients of the previous step summed into the next.

.. rubric:: What it does

Warns when an optimizer steps on gradients that a backward added to the gradients left from the
optimizer's previous step: nothing cleared them in between. Reported at the backward call.
After each step, each parameter's gradient object and its version are remembered; a backward
that accumulates into that same, unchanged gradient makes a stale sum, flagged when the same
optimizer steps on it. Gradients cleared before the next step (a GAN's discriminator) and
``torch.autograd.grad`` (which accumulates nothing) are not reported, nor gradient accumulation
over micro-batches within one step.

.. rubric:: Why is this bad?

Gradients accumulate: each step then applies the sum of every gradient since training began,
and training diverges or crawls.

.. rubric:: Example

.. code-block:: python

    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
"""

from __future__ import annotations

import weakref

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP005",
    "guard",
    "backward-step-zero-grad",
    "gradients of the previous step summed into the next",
    "上一步的梯度累加进下一步",
    "backward is adding to gradients left from before the last optimizer step: clear them "
    "once per step, with optimizer.zero_grad()",
    "backward() 正在把梯度累加到上一次优化器更新之前遗留的梯度上：每个训练步都应调用一次 "
    "optimizer.zero_grad() 清空梯度",
    on=("optimizer step", "after optimizer step", "backward"),
)


def start(guards) -> None:
    guards.after_step = {}  # id(param) -> (ref to its gradient after the step, its version)
    guards.stale_sums = {}  # id(param) -> (ref to the summed gradient, version, backward place)
    guards.params = {}  # id(param) -> ref to the parameter


def stop(guards) -> None:
    guards.after_step, guards.stale_sums, guards.params = {}, {}, {}


def step(guards, optimizer, args, kwargs) -> None:
    """Before a step of a watched optimizer: does it step on a stale sum?"""
    for group in optimizer.param_groups:
        for param in group["params"]:
            summed = guards.stale_sums.pop(id(param), None)
            if summed is None or param.grad is None:
                continue
            grad_ref, version, place = summed
            if param.grad is grad_ref() and param.grad._version == version:
                guards.flag(RULE.id, place)


def after_step(guards, optimizer) -> None:
    """After a step of a watched optimizer: remember each gradient it applied."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is None or not param.requires_grad:  # frozen: no backward adds to it
                guards.after_step.pop(id(param), None)
                continue
            guards.after_step[id(param)] = (weakref.ref(param.grad), param.grad._version)
            guards.params[id(param)] = weakref.ref(param)


def before_backward(guards):
    """The gradients a backward may add to: those left by the last step, and stale sums."""
    if not guards.after_step and not guards.stale_sums:
        return None
    left, summed = [], []
    for key, (grad_ref, version) in list(guards.after_step.items()):
        param = guards.params[key]()
        current = None if param is None else param.grad
        if current is not None and current is grad_ref() and current._version == version:
            left.append((key, param, current, version))  # the last step's gradient
        else:
            del guards.after_step[key]  # cleared since: nothing stale
    for key, (grad_ref, _, _) in guards.stale_sums.items():
        param = guards.params[key]()
        current = None if param is None else param.grad
        if current is not None and current is grad_ref():
            summed.append((key, param, current, current._version))
    return left, summed


def after_backward(guards, before) -> None:
    """Record what the backward added to the gradients :func:`before_backward` found."""
    if before is None:
        return
    left, summed = before
    for key, param, grad, version in left:
        current = param.grad
        if current is not None and (current is not grad or current._version != version):
            # added to the last step's gradient (out of place under create_graph=True)
            guards.after_step.pop(key, None)
            ref = weakref.ref(current)
            guards.stale_sums[key] = (ref, current._version, guards.backward_place)
    for key, param, grad, version in summed:  # more micro-batches summed onto a stale sum
        current = param.grad
        if current is grad and current._version != version and key in guards.stale_sums:
            grad_ref, _, place = guards.stale_sums[key]
            guards.stale_sums[key] = (grad_ref, current._version, place)
