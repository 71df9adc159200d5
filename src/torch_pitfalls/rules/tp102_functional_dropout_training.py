"""``TP102``: functional dropout called without ``training=``.

.. rubric:: What it does

``F.dropout``, ``F.dropout1d``, ``F.dropout2d`` or ``F.dropout3d`` called without
``training=``: not as a keyword, not as the third positional argument, and no ``*args`` or
``**kwargs`` that could carry it. ``F.alpha_dropout`` and ``F.feature_alpha_dropout`` are not
checked: their ``training`` defaults to ``False``. Not reported in a function named
``training_step`` (PyTorch Lightning's hook) or ``train_step``, or in code nested in one:
such code only runs in training, where ``training=True`` is what it means (dropout on the
inputs as noise, for example); a ``forward``, a ``validation_step`` or any other function
is reported, since it also runs in evaluation. Reported at the call.

.. rubric:: Why is this bad?

``F.dropout`` defaults to ``training=True`` and does not follow ``model.eval()``: the evaluated
model still drops activations at random.

.. rubric:: Example

.. code-block:: python

    import torch.nn.functional as F


    def forward(self, x):
        return F.dropout(x, 0.5)

.. rubric:: Use instead

.. code-block:: python

    import torch.nn.functional as F


    def forward(self, x):
        return F.dropout(x, 0.5, training=self.training)
"""

from __future__ import annotations

from collections.abc import Iterator

from torch_pitfalls.lint.analyses.expressions import expression_findings
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP102",
    "lint",
    "functional-dropout",
    "functional dropout without training=",
    "函数式 dropout 未传 training=",
    "F.dropout and its family default to training=True, even in eval mode: pass "
    "training=self.training",
    "F.dropout 及同类函数默认 training=True，在评估模式下也照样生效：应传入 training=self.training",
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """``(line, column from 0)`` of each finding of ``TP102`` in the module."""
    for line, col, rule_id in expression_findings(context):
        if rule_id == RULE.id:
            yield line, col
