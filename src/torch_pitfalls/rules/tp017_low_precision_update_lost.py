"""``TP017``: an optimizer step that low-precision weights rounded away.

.. rubric:: What it does

Warns when an optimizer step leaves unchanged most of the elements of a bfloat16 or float16
parameter that had a non-zero gradient, in a parameter group whose learning rate is above zero:
the update of each was smaller than half the gap between the weight and its neighbouring
bfloat16 (float16) number, and rounding gave the old weight back. Before each step of a watched
optimizer, the guards copy a sample of each such parameter (all of it up to 4096 elements, else
4096 elements evenly spaced) and compare it after the step. Reported at the line of the step,
once per place. Float32 (and float64) parameters are not looked at, nor a step given a closure
(its gradients are computed inside ``step()``), nor sparse gradients.

.. rubric:: Why is this bad?

Training goes on and the loss falls, slowly: most weights never move. Nothing warns; the
smaller the learning rate, the more updates are lost.

.. rubric:: Example

.. code-block:: python

    model = model.to(torch.bfloat16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn(model(x.bfloat16()).float(), y).backward()
    optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)  # float32 weights
    with torch.autocast(device_type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
"""

from __future__ import annotations

import sys

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP017",
    "guard",
    "bf16-weight-updates-lost",
    "optimizer step rounded away in low-precision weights",
    "低精度权重把优化器更新舍入掉了",
    "an optimizer step left most bfloat16/float16 weights that had a non-zero gradient "
    "unchanged: their updates were smaller than half the gap to the next representable "
    "number and were rounded away; keep float32 weights (autocast) or a float32 master copy",
    "一次优化器更新后，梯度非零的 bfloat16/float16 权重大多没有变化：更新量小于到相邻可表示"
    "数之间距的一半，被舍入掉了；请保留 float32 权重（使用 autocast），或保留一份 float32 "
    "主权重",
    on=("optimizer step", "after optimizer step"),
)

_SAMPLE = 4096  # elements compared per parameter at most


def start(guards) -> None:
    # the optimizer stepping now, and (param, its sample before the step, the sample's elements
    # with a non-zero gradient) for each parameter checked
    guards.low_precision_before = (None, [])


def stop(guards) -> None:
    guards.low_precision_before = (None, [])


def _sample(tensor):
    """At most :data:`_SAMPLE` elements of ``tensor``, evenly spaced, as a flat tensor (a view
    when it can be)."""
    flat = tensor.detach().reshape(-1)
    stride = max(1, -(-flat.numel() // _SAMPLE))
    return flat[::stride] if stride > 1 else flat


def step(guards, optimizer, args, kwargs) -> None:
    """Before a step of a watched optimizer: a copy of a sample of each low-precision parameter
    with a non-zero gradient, in a group whose learning rate is above zero."""
    guards.low_precision_before = (None, [])
    if any(arg is not None for arg in args[1:]) or kwargs.get("closure") is not None:
        return  # the gradients come from the closure, inside step()
    torch = sys.modules["torch"]
    low = (torch.bfloat16, torch.float16)
    saved = []
    for group in optimizer.param_groups:
        params = [p for p in group["params"] if p.dtype in low and p.grad is not None]
        if not params:
            continue
        try:
            if not float(group.get("lr", 0.0)) > 0.0:
                continue
        except (TypeError, ValueError, RuntimeError):
            continue
        for param in params:
            grad = param.grad
            if grad.is_sparse or param.is_meta or grad.shape != param.shape:
                continue
            try:
                nonzero = _sample(grad) != 0
                if not bool(nonzero.any()):
                    continue
                saved.append((param, _sample(param).clone(), nonzero))
            except Exception:  # a tensor the guards cannot read (a subclass, vmap): skipped
                continue
    if saved:
        guards.low_precision_before = (optimizer, saved)


def after_step(guards, optimizer) -> None:
    """After the step: did most sampled elements with a non-zero gradient stay as they were?"""
    (stepped, saved), guards.low_precision_before = guards.low_precision_before, (None, [])
    if stepped is not optimizer:
        return
    for param, before, nonzero in saved:
        try:
            unchanged = (_sample(param) == before) & nonzero
            lost = 2 * int(unchanged.sum()) > int(nonzero.sum())
        except Exception:
            continue
        if lost:
            guards.flag(RULE.id)
            return
