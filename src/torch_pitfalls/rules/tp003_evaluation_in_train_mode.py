"""``TP003``: evaluation in train mode.

.. rubric:: What it does

Warns when a BatchNorm module (with running statistics and a momentum) or a Dropout module
(``p > 0``) runs in train mode while gradients are disabled (under ``torch.no_grad()``), which
is what an evaluation looks like. Reported at the line that called the top-level model. A
BatchNorm with ``momentum=None`` in the running model marks a recalibration
(``torch.optim.swa_utils.update_bn``) and is not reported; nor is Monte-Carlo dropout silenced
with ``torch_pitfalls.allow("TP003")``.

.. rubric:: Why is this bad?

In train mode, Dropout drops activations at random and BatchNorm normalises with the batch's
statistics and updates its running ones: the evaluation's numbers are noisy and depend on the
batch, and the evaluation changes the model.

.. rubric:: Example

.. code-block:: python

    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean()

.. rubric:: Use instead

.. code-block:: python

    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean()
    model.train()
"""

from __future__ import annotations

import sys

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP003",
    "guard",
    "train-eval-mode",
    "evaluation in train mode",
    "在训练模式下做评估",
    "a BatchNorm or Dropout module ran in train mode while gradients were disabled: call "
    "model.eval() before evaluating (model.train() after)",
    "在禁用梯度时，BatchNorm 或 Dropout 模块仍以训练模式运行：评估前应调用 model.eval()"
    "（评估后再调用 model.train()）",
    on=("forward",),
)


def forward(guards, module) -> None:
    """Before each module's forward: a BatchNorm or Dropout in train mode without gradients.

    Runs at every module call under the guards, so it looks torch up in ``sys.modules`` (loaded
    by then) instead of importing it: an import statement per call cost the tiny MLP of
    ``nox -s bench`` a few percent."""
    if not module.training:
        return
    torch = sys.modules["torch"]
    if torch.is_grad_enabled() or not guards.watches(module):
        return
    nn = torch.nn
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        # momentum=None: a cumulative average, as torch.optim.swa_utils.update_bn recalibrates
        if module.track_running_stats and module.momentum is not None:
            guards.flag(RULE.id, guards.root_place)
    elif isinstance(module, nn.modules.dropout._DropoutNd) and module.p > 0:  # noqa: SIM102
        if not _recalibrating(guards):  # walks the model: only when the rest holds
            guards.flag(RULE.id, guards.root_place)


def _recalibrating(guards) -> bool:
    """A BatchNorm with momentum=None in the running model: update_bn, not an evaluation."""
    from torch import nn

    root = guards.running[0]
    batch_norms = nn.modules.batchnorm._BatchNorm
    return any(isinstance(m, batch_norms) and m.momentum is None for m in root.modules())
