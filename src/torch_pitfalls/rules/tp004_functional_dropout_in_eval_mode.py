"""``TP004``: functional dropout active in eval mode.

.. rubric:: What it does

Warns when ``F.dropout`` or one of its family runs with ``training=True`` and ``p > 0`` inside
the forward of a (watched) module in eval mode.

.. rubric:: Why is this bad?

The functional dropouts do not follow ``model.eval()``: ``F.dropout`` defaults to
``training=True``, so the evaluated model still drops activations at random.

.. rubric:: Example

.. code-block:: python

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5))

.. rubric:: Use instead

.. code-block:: python

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5, training=self.training))
"""

from __future__ import annotations

from torch_pitfalls.rules import Call, _rule

RULE = _rule(
    "TP004",
    "guard",
    "functional-dropout",
    "functional dropout active in eval mode",
    "评估模式下函数式 Dropout 仍然生效",
    "F.dropout ran with training=True inside a module in eval mode: pass "
    "training=self.training, or use an nn.Dropout module",
    "F.dropout 在处于评估模式的模块中以 training=True 运行：应传入 "
    "training=self.training，或改用 nn.Dropout 模块",
    on=tuple(
        Call(f"torch.nn.functional.{name}")
        for name in (
            "dropout",
            "dropout1d",
            "dropout2d",
            "dropout3d",
            "alpha_dropout",
            "feature_alpha_dropout",
        )
    ),
)


def check(guards, func, args, kwargs) -> None:
    """Before a call of a functional dropout: active inside a module in eval mode?"""
    if not guards.running:
        return
    arguments = guards.bind(func, args, kwargs)
    module = guards.running[-1]
    active = arguments["training"] and arguments["p"] > 0
    if active and not module.training and guards.watches(module):
        guards.flag(RULE.id)
