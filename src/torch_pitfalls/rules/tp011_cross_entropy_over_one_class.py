"""``TP011``: cross-entropy over a single output unit.

.. rubric:: What it does

Warns when :func:`torch.nn.functional.cross_entropy` receives a floating-point input with a
single class (``C == 1``).

.. rubric:: Why is this bad?

A softmax over one class is always 1, so the loss is always 0 and its gradient is 0: the model
learns nothing, and nothing fails.

.. rubric:: Example

.. code-block:: python

    head = nn.Linear(16, 1)
    loss = F.cross_entropy(head(x), y)

.. rubric:: Use instead

.. code-block:: python

    head = nn.Linear(16, 1)
    loss = F.binary_cross_entropy_with_logits(head(x).squeeze(1), y.float())
"""

from __future__ import annotations

from torch_pitfalls.rules import Call, _rule, loss_input

RULE = _rule(
    "TP011",
    "guard",
    "bce-with-logits",
    "cross-entropy over a single output unit",
    "对单个输出单元做交叉熵",
    "cross_entropy received one class (C == 1): a softmax over one class is always 1, so the "
    "loss is always 0 and nothing is learned; for two classes use one output with "
    "BCEWithLogitsLoss, or two outputs with cross_entropy",
    "cross_entropy 只收到一个类别（C == 1）：对一个类别做 softmax 恒为 1，损失恒为 0，"
    "模型什么也学不到；二分类应使用单个输出配 BCEWithLogitsLoss，或两个输出配 cross_entropy",
    on=(Call("torch.nn.functional.cross_entropy"),),
)


def check(guards, func, args, kwargs) -> None:
    """Before a call of ``cross_entropy``: one class only?"""
    logits = loss_input(args, kwargs)
    if logits is None:
        return
    if logits.shape[0 if logits.dim() == 1 else 1] == 1:  # log_softmax over one class is 0
        guards.flag(RULE.id)
