"""``TP013``: training a model left in eval mode.

.. rubric:: What it does

Warns when an optimizer step uses gradients of a forward pass of a model in eval mode whose
Dropout (``p > 0``) or BatchNorm (with running statistics) layers ``eval()`` switched off: the
forward's graph was backpropagated, and the stepping optimizer holds a parameter of the model
that has a gradient. Reported at the line that called the model. A BatchNorm frozen on purpose
(``eval()`` on the BatchNorm layers only) leaves the model in train mode: not reported.

.. rubric:: Why is this bad?

The model trains without the regularisation of dropout and with frozen normalisation
statistics: it trains, but not as intended.

.. rubric:: Example

.. code-block:: python

    evaluate(model)  # calls model.eval()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    evaluate(model)
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
"""

from __future__ import annotations

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP013",
    "guard",
    "train-eval-mode",
    "training a model left in eval mode",
    "训练仍处于评估模式的模型",
    "an optimizer step used gradients of a forward pass of a model in eval mode whose Dropout "
    "or BatchNorm layers were switched off by eval(): call model.train() after evaluating",
    "优化器更新所用的梯度来自一次评估模式下的前向传播，其中的 Dropout 或 BatchNorm 层已被 "
    "eval() 切换为评估行为：评估结束后应调用 model.train()",
    on=("evaluation settled",),
)


def settled(guards, records, optimizer) -> None:
    """The eval-mode forwards since the last step, settled at a step of ``optimizer``."""
    if optimizer is None or not guards.watches_optimizer(optimizer):
        return
    holds = None
    for record in records:
        root = record.root()
        if not record.used[0] or not record.switched_off or root is None:
            continue
        if holds is None:
            holds = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if any(id(p) in holds and p.grad is not None for p in root.parameters()):
            guards.flag(RULE.id, record.place)
