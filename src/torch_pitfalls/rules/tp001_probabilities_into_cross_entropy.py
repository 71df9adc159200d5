"""``TP001``: probabilities fed to cross-entropy.

.. rubric:: What it does

Warns when :func:`torch.nn.functional.cross_entropy` (and so ``nn.CrossEntropyLoss``) receives
an input whose every row is non-negative, at most 1 and sums to 1 (within ``1e-3``, ``1e-2`` in
half precision) over the class dimension: probabilities, such as a softmax output.

.. rubric:: Why is this bad?

``cross_entropy`` applies log-softmax itself. Probabilities go through a second softmax, which
squeezes them towards uniform: the loss still decreases, but its gradients are much smaller and
training is slow or stalls, without any error.

.. rubric:: Example

.. code-block:: python

    probabilities = model(x).softmax(dim=1)
    loss = F.cross_entropy(probabilities, target)

.. rubric:: Use instead

.. code-block:: python

    logits = model(x)
    loss = F.cross_entropy(logits, target)
"""

from __future__ import annotations

from torch_pitfalls.rules import Call, _rule, loss_input

RULE = _rule(
    "TP001",
    "guard",
    "cross-entropy-expects-logits",
    "probabilities fed to cross-entropy",
    "把概率传给交叉熵",
    "cross_entropy received probabilities (every row is non-negative and sums to 1), such as "
    "a softmax output; it applies log-softmax itself, so pass the logits",
    "cross_entropy 收到的是概率（每行非负且和为 1），例如 softmax 的输出；"
    "它内部会先做 log-softmax，因此应直接传入 logits",
    on=(Call("torch.nn.functional.cross_entropy"),),
)


def check(guards, func, args, kwargs) -> None:
    """Before a call of ``cross_entropy``: are the input's rows probabilities?"""
    logits = loss_input(args, kwargs)
    if logits is None:
        return
    import torch

    class_dim = 0 if logits.dim() == 1 else 1
    if logits.shape[class_dim] == 1:  # a single class is TP011's
        return
    # rows of a softmax sum to 1 up to rounding, which grows with the number of classes and
    # is coarser in half precision; values in [0, 1] keep the test specific anyway
    tolerance = 1e-3 if torch.finfo(logits.dtype).bits > 16 else 1e-2
    values = logits.detach()  # a detached tensor records no graph: no no_grad() needed
    # logits almost always have a negative value: one reduction decides, the sums only follow
    # for an input in [0, 1]
    if not bool((values >= 0).all() and (values <= 1).all()):
        return
    sums = values.sum(class_dim, dtype=torch.float32)
    if bool(((sums - 1).abs() <= tolerance).all()):
        guards.flag(RULE.id)
