"""``TP012``: optimizer step without any gradient.

.. rubric:: What it does

Warns when ``optimizer.step()`` runs while no parameter it holds has a gradient, and this cannot
be the occasional batch that skips a part of a model: no parameter requires grad at all
(everything frozen), or the optimizer has had no gradient in any of its first three steps. A
step given a closure (LBFGS) computes its gradients inside ``step()``: never reported.

.. rubric:: Why is this bad?

Such a step changes nothing: the parameters are frozen, or the loss does not depend on them
(often hidden by a ``loss.requires_grad_()`` added to silence "element 0 of tensors does not
require grad").

.. rubric:: Example

.. code-block:: python

    for p in model.parameters():
        p.requires_grad_(False)
    loss = F.mse_loss(model(x), y).requires_grad_()
    loss.backward()
    optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    loss = F.mse_loss(model(x), y)  # parameters that require grad: no requires_grad_() needed
    loss.backward()
    optimizer.step()
"""

from __future__ import annotations

import weakref

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP012",
    "guard",
    "requires-grad-propagation",
    "optimizer step without any gradient",
    "没有任何梯度的优化器更新",
    "optimizer.step() ran while no parameter it holds had a gradient, so it changed nothing: "
    "the parameters are frozen, or the loss does not depend on them (a loss.requires_grad_() "
    'added to silence "element 0 of tensors does not require grad" hides that)',
    "optimizer.step() 运行时，它持有的参数没有一个有梯度，因此什么也没改变：参数被冻结了，"
    '或者损失与它们无关（为压下 "element 0 of tensors does not require grad" 而加上的 '
    "loss.requires_grad_() 会掩盖这一点）",
    on=("optimizer step",),
)


_EMPTY_STEPS = 3  # steps without any gradient before an optimizer's first gradient


def start(guards) -> None:
    # optimizer -> steps without gradient so far, -1: had some. Weak keys: an id() would be
    # reused by a new optimizer once the old one is freed, which then inherits its history.
    guards.empty_steps = weakref.WeakKeyDictionary()


def step(guards, optimizer, args, kwargs) -> None:
    """Before a step of a watched optimizer: has any of its parameters a gradient?"""
    # the hook's args are step's, self first: step(closure) gives (optimizer, closure)
    if any(arg is not None for arg in args[1:]) or kwargs.get("closure") is not None:
        return
    key = optimizer
    empty = guards.empty_steps.get(key, 0)
    if empty < 0:  # this optimizer has had gradients: its empty steps are deliberate
        return
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not params or any(p.grad is not None for p in params):
        guards.empty_steps[key] = -1
        return
    guards.empty_steps[key] = empty + 1
    if empty + 1 >= _EMPTY_STEPS or not any(p.requires_grad for p in params):
        guards.flag(RULE.id)
