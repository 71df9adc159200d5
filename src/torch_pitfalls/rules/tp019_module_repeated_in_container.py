"""``TP019``: one module object several times in a ``ModuleList`` or ``Sequential``.

.. rubric:: What it does

Warns when an ``nn.ModuleList`` or ``nn.Sequential`` holds the same module object, one with
parameters, more than once: ``nn.ModuleList([block] * n)``. The guards look at each model once:
the modules given to ``guards(model, …)`` on entering (reported at the ``with`` line), and every
other model at its first top-level call (reported at the line that called it), through the
forward pre-hook. A module without parameters repeated (an ``nn.ReLU()`` used twice) changes
nothing and is not reported.

.. rubric:: Why is this bad?

``[block] * n`` is a list of ``n`` references to one module: the model has one layer, applied
``n`` times with the same weights, and ``n - 1`` times fewer parameters than intended. It
trains, and silently underfits.

.. rubric:: Example

.. code-block:: python

    self.blocks = nn.ModuleList([nn.Linear(width, width)] * depth)

.. rubric:: Use instead

.. code-block:: python

    self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
"""

from __future__ import annotations

import sys
import weakref

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP019",
    "guard",
    "modulelist-vs-list",
    "one module repeated in a ModuleList or Sequential",
    "ModuleList 或 Sequential 中重复放入同一个模块",
    "a ModuleList or Sequential holds the same module (with parameters) more than once, as "
    "nn.ModuleList([block] * n) does: its layers share one set of weights; build a new module "
    "for each place, [make_block() for _ in range(n)]",
    "ModuleList 或 Sequential 中多次放入了同一个（带参数的）模块，nn.ModuleList([block] * n) "
    "就是这样：这些层共用一套权重；应为每个位置新建一个模块，"
    "[make_block() for _ in range(n)]",
    on=("forward",),
)


def start(guards) -> None:
    guards.repeat_checked = weakref.WeakSet()  # the models looked at
    for root in guards.modules:
        guards.repeat_checked.add(root)
        if _repeats(root):
            guards.flag(RULE.id)


def stop(guards) -> None:
    guards.repeat_checked = weakref.WeakSet()


def _repeats(root) -> bool:
    """Whether a ModuleList or Sequential in ``root`` holds a module with parameters twice."""
    nn = sys.modules["torch"].nn
    for container in root.modules():
        if not isinstance(container, (nn.ModuleList, nn.Sequential)):
            continue
        seen = set()
        for child in container._modules.values():
            if child is None:
                continue
            if id(child) in seen and next(child.parameters(), None) is not None:
                return True
            seen.add(id(child))
    return False


def forward(guards, module) -> None:
    """Before each module's forward: the first top-level call of a model is looked at."""
    if len(guards.running) != 1 or module in guards.repeat_checked:
        return
    guards.repeat_checked.add(module)
    if _repeats(module):
        guards.flag(RULE.id, guards.root_place)
