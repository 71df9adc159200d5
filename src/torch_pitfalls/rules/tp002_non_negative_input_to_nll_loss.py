"""``TP002``: non-negative input to NLL loss.

.. rubric:: What it does

Warns when :func:`torch.nn.functional.nll_loss` (and so ``nn.NLLLoss``) receives a
floating-point input with no negative value.

.. rubric:: Why is this bad?

``nll_loss`` expects log-probabilities, which are all ``<= 0``. Given probabilities or logits it
computes a number that is not the negative log-likelihood, and nothing fails.

.. rubric:: Example

.. code-block:: python

    loss = F.nll_loss(model(x).softmax(dim=1), target)

.. rubric:: Use instead

.. code-block:: python

    loss = F.nll_loss(model(x).log_softmax(dim=1), target)
"""

from __future__ import annotations

from torch_pitfalls.rules import Call, _rule, loss_input

RULE = _rule(
    "TP002",
    "guard",
    "cross-entropy-expects-logits",
    "non-negative input to NLL loss",
    "传给 NLL 损失的输入全部非负",
    "nll_loss received an input with no negative value; it expects log-probabilities "
    "(log_softmax output, all <= 0), not probabilities or logits",
    "nll_loss 收到的输入没有任何负值；它期望的是对数概率（log_softmax 的输出，全部 <= 0），"
    "而不是概率或 logits",
    on=(Call("torch.nn.functional.nll_loss"),),
)


def check(guards, func, args, kwargs) -> None:
    """Before a call of ``nll_loss``: is no value of the input negative?"""
    log_probs = loss_input(args, kwargs)
    if log_probs is not None and bool((log_probs.detach() >= 0).all()):
        guards.flag(RULE.id)
