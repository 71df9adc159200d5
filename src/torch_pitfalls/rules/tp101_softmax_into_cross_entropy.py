"""``TP101``: a softmax output passed to cross-entropy or NLL loss.

.. rubric:: What it does

A softmax output passed as the input (first argument or ``input=``) of
``F.cross_entropy``, ``F.nll_loss`` or an ``nn.CrossEntropyLoss`` / ``nn.NLLLoss`` instance.
The softmax is ``torch.softmax``, ``F.softmax``, ``torch.special.softmax``,
``torch.Tensor.softmax``, the tensor method ``x.softmax(...)``, an ``nn.Softmax`` or
``nn.Softmax2d`` instance called, or an ``nn.Sequential`` whose last layer is one
(``nn.Sequential(nn.Linear(128, 10), nn.Softmax(dim=1))``, also given as an ``OrderedDict``);
it is passed directly, through either branch of a conditional expression, or through a
variable that holds such a softmax at the call, on some path through the function's ``if``
statements (see below). A function or method of the same module every ``return`` of which
gives a softmax output (``def predict(x): return F.softmax(...)``) gives one when called
(``predict(x)``, ``self.predict(x)``), and so does an instance of a class of the module
whose ``__call__``, or for a subclass (an ``nn.Module``) without one whose ``forward``,
returns one (``model = Net()`` then ``model(x)``; ``self.net = Net()`` then
``self.net(x)``), or which defines neither and inherits one that does from a class of the
module (``class Net(Base)``); a tuple returned (``return validity, label``) is followed when it is
unpacked into as many names or indexed with a constant. A ``log_softmax`` is never flagged,
nor a softmax passed as the target or used otherwise (``softmax(...).log()``,
``torch.log(...)``), nor a function some return of which gives something else, nor a
generator. Reported at the loss call.

.. rubric:: Why is this bad?

A softmax output fed to a loss that applies log-softmax itself (cross-entropy) or expects log-
probabilities (NLL) gives gradients that are too small: training slows or stalls, and nothing
fails.

.. rubric:: Example

.. code-block:: python

    import torch.nn.functional as F

    loss = F.cross_entropy(F.softmax(logits, dim=1), target)

.. rubric:: Use instead

.. code-block:: python

    import torch.nn.functional as F

    loss = F.cross_entropy(logits, target)
"""

from __future__ import annotations

from collections.abc import Iterator

from torch_pitfalls.lint.analyses.expressions import expression_findings
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP101",
    "lint",
    "cross-entropy-expects-logits",
    "softmax output passed to cross-entropy or NLL",
    "把 softmax 的输出传给交叉熵或 NLL",
    "a softmax output is passed to a loss that expects logits (cross-entropy) or "
    "log-probabilities (NLL): pass the logits to cross_entropy, or log_softmax to nll_loss",
    "softmax 的输出被传给了期望 logits（交叉熵）或对数概率（NLL）的损失函数："
    "应把 logits 传给 cross_entropy，或把 log_softmax 的输出传给 nll_loss",
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """``(line, column from 0)`` of each finding of ``TP101`` in the module."""
    for line, col, rule_id in expression_findings(context):
        if rule_id == RULE.id:
            yield line, col
