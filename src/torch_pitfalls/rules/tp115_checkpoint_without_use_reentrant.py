"""``TP115``: ``torch.utils.checkpoint`` called without ``use_reentrant=``.

.. rubric:: What it does

A call of ``torch.utils.checkpoint.checkpoint`` or ``checkpoint_sequential`` (through any
import or alias: ``from torch.utils.checkpoint import checkpoint as ckpt``, ``import
torch.utils.checkpoint as cp``) without ``use_reentrant=`` and without ``**kwargs`` that could
carry it. Reported at the call. Functions of other packages named ``checkpoint`` (DeepSpeed's,
Megatron's, a project's own) are not reported.

.. rubric:: Why is this bad?

A call without ``use_reentrant`` runs the reentrant variant. When no input of the checkpointed
block requires grad (a frozen embedding before it, an adapter on a frozen model), its output
does not either: the block's parameters get no gradient and are never trained, and under DDP
the reentrant variant fails with ``Expected to mark a variable ready only once``. Every release
recorded (2.4 and later) warns that ``use_reentrant`` should be passed explicitly, and the
warning announced an error (from 2.4, then 2.5, then 2.9) that no release has raised yet.
``use_reentrant=False`` is the variant PyTorch recommends.

.. rubric:: Example

.. code-block:: python

    from torch.utils.checkpoint import checkpoint


    def forward(self, x):
        return checkpoint(self.block, x)

.. rubric:: Use instead

.. code-block:: python

    from torch.utils.checkpoint import checkpoint


    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)
"""

from __future__ import annotations

from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import calls_of, has_keyword
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP115",
    "lint",
    "checkpoint-reentrant-frozen-input",
    "checkpoint without use_reentrant=",
    "checkpoint 未传 use_reentrant=",
    "checkpoint without use_reentrant= runs the reentrant variant: when no input requires grad, "
    "the checkpointed block's parameters get no gradient (and DDP fails); PyTorch warns that "
    "the argument should be passed: pass use_reentrant=False",
    "未传 use_reentrant= 的 checkpoint 运行的是可重入版本：若没有输入需要梯度，被检查点包裹的"
    "模块的参数得不到梯度（DDP 下还会报错）；PyTorch 会警告应显式传入该参数：应传入 "
    "use_reentrant=False",
)

_CHECKPOINTS = frozenset(
    f"torch.utils.checkpoint.{name}" for name in ("checkpoint", "checkpoint_sequential")
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``checkpoint`` or ``checkpoint_sequential`` is called without ``use_reentrant=``."""
    imported = any(
        name.startswith("torch.utils.checkpoint") for name in context.imports.names.values()
    )
    if not imported:  # then called by its full name, torch.utils.checkpoint.checkpoint(...)
        if context.source and "utils.checkpoint" not in context.source:
            return
        if not context.imports.imports_torch():
            return
    for call, _ in calls_of(context, _CHECKPOINTS, "checkpoint"):
        if not has_keyword(call, "use_reentrant"):
            yield call.lineno, call.col_offset
