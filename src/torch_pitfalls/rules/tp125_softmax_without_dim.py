"""``TP125``: softmax, log-softmax or softmin without ``dim``.

.. rubric:: What it does

A call of ``torch.nn.functional.softmax``, ``log_softmax`` or ``softmin`` (through any import
or alias: ``F.softmax``, ``from torch.nn import functional``, ``from torch.nn.functional import
softmax``) without ``dim``: not as a keyword, not as the second positional argument, or with
``dim=None`` written out; and the construction of ``nn.Softmax``, ``nn.LogSoftmax`` or
``nn.Softmin`` without ``dim`` (its first argument), or with ``None``. A call with ``*args`` or
``**kwargs`` that could carry the dimension is not reported. Reported at the call.

Not reported: :func:`torch.softmax`, :func:`torch.log_softmax` and the methods
``Tensor.softmax``, ``Tensor.log_softmax``, which have no default and raise a ``TypeError``
without ``dim``; ``nn.Softmax2d``, which has no ``dim`` (it normalises over the channels,
dimension ``-3``); ``F.gumbel_softmax``, whose ``dim`` defaults to ``-1``; functions of other
libraries or of the same module named ``softmax``.

There is no automatic fix: the dimension PyTorch picks depends on the number of dimensions of
the input when the code runs, which the checker does not know.

.. rubric:: Why is this bad?

Without ``dim``, PyTorch picks the dimension from the number of dimensions of the input alone:
dimension 0 for a 0-, 1- or 3-D input, dimension 1 for any other, and warns ``Implicit dimension
choice for softmax has been deprecated``. For a ``(batch, classes)`` input that is the classes;
for a ``(batch, seq, classes)`` input it is the batch, and each sample's probabilities then
depend on the other samples of the batch, with no error.

.. rubric:: Example

.. code-block:: python

    import torch.nn.functional as F
    from torch import nn

    probs = F.softmax(logits)
    head = nn.Sequential(nn.Linear(128, 10), nn.LogSoftmax())

.. rubric:: Use instead

.. code-block:: python

    import torch.nn.functional as F
    from torch import nn

    probs = F.softmax(logits, dim=-1)
    head = nn.Sequential(nn.Linear(128, 10), nn.LogSoftmax(dim=-1))
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import calls_of
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP125",
    "lint",
    "softmax-dim",
    "softmax without dim",
    "softmax 未传 dim",
    "softmax (or log_softmax, softmin, nn.Softmax…) without dim picks the dimension from the "
    "input's number of dimensions (0 for 0-, 1- and 3-D inputs, else 1: the batch of a 3-D "
    "input): pass dim=, usually dim=-1 (the classes)",
    "未传 dim 的 softmax（或 log_softmax、softmin、nn.Softmax…）按输入的维数选择维度"
    "（0 维、1 维和 3 维输入选 0，其余选 1：3 维输入会选到 batch 维）：应传入 dim=，"
    "通常是 dim=-1（类别所在的维）",
)

_FUNCTIONAL = "torch.nn.functional"
_FUNCTIONS = frozenset(f"{_FUNCTIONAL}.{name}" for name in ("softmax", "log_softmax", "softmin"))
_MODULES = frozenset(
    f"torch.nn{package}.{name}"
    for package in ("", ".modules", ".modules.activation")
    for name in ("Softmax", "LogSoftmax", "Softmin")
)
_NAMES = _FUNCTIONS | _MODULES
# ``dim`` is the second parameter of the functions (after ``input``), the first of the modules.
_DIM_POSITION = {name: 1 for name in _FUNCTIONS} | {name: 0 for name in _MODULES}


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a softmax, log-softmax or softmin function or module gets no ``dim``."""
    if context.source and "oftm" not in context.source:  # softmax, Softmax, LogSoftmax, softmin
        return
    if not context.imports.imports_torch():
        return
    if context.imports.star_modules:  # from torch.nn.functional import *: softmax(x)
        context = dataclasses.replace(context, imports=context.imports.knowing(_NAMES))
    for call, _ in calls_of(context, _NAMES, "oftm"):
        name = context.imports.qualified_name(call.func)
        if not _passes_dim(call, _DIM_POSITION[name]):
            yield call.lineno, call.col_offset


def _passes_dim(call: ast.Call, position: int) -> bool:
    """Whether the call passes a ``dim`` other than a literal ``None``, or may (``*args``,
    ``**kwargs``)."""
    for keyword in call.keywords:
        if keyword.arg is None:
            return True
        if keyword.arg == "dim":
            return not _none(keyword.value)
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return True
        if index == position:
            return not _none(argument)
    return False


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
