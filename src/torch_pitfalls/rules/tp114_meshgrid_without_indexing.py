"""``TP114``: ``torch.meshgrid`` called without ``indexing=``.

.. rubric:: What it does

A call of ``torch.meshgrid`` (or ``torch.functional.meshgrid``, through any import or alias)
without ``indexing=`` and without ``**kwargs`` that could carry it. Reported at the call.

Not reported: ``numpy.meshgrid`` and other functions named ``meshgrid``; the fallback for
PyTorch before 1.10 (which has no ``indexing``), that is, a call whose nearest enclosing ``try``,
``if`` or conditional expression also holds a call of ``torch.meshgrid`` with ``indexing=``
(``torch.meshgrid(y, x, indexing="ij") if new else torch.meshgrid(y, x)``, or the call without
it in the ``except TypeError`` of a ``try`` that calls it with it).

.. rubric:: Why is this bad?

Without ``indexing``, ``torch.meshgrid`` uses ``"ij"`` (matrix indexing): the first output
varies along dimension 0. NumPy's ``meshgrid`` defaults to ``"xy"``, so code written after
NumPy's gets grids of shape ``(W, H)`` instead of ``(H, W)``: transposed coordinates, with no
error when the image is square. PyTorch warns once per process that the argument will become
required, a warning that warning filters hide, and its documentation says the default may
move to ``"xy"``. ``indexing="ij"`` keeps what the call does today.

.. rubric:: Example

.. code-block:: python

    import torch

    ys, xs = torch.arange(4), torch.arange(6)
    grid_y, grid_x = torch.meshgrid(ys, xs)

.. rubric:: Use instead

.. code-block:: python

    import torch

    ys, xs = torch.arange(4), torch.arange(6)
    grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import calls_of, has_keyword
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP114",
    "lint",
    "meshgrid-indexing",
    "torch.meshgrid without indexing=",
    "torch.meshgrid 未传 indexing=",
    'torch.meshgrid without indexing= relies on the default "ij", where NumPy\'s default is '
    '"xy" (and PyTorch warns that the argument will be required): pass indexing="ij" to keep '
    'this behaviour, or indexing="xy" for NumPy\'s',
    'torch.meshgrid 未传 indexing= 时依赖默认值 "ij"，而 NumPy 的默认值是 "xy"'
    '（PyTorch 也警告该参数将成为必填）：传入 indexing="ij" 保持现有行为，'
    '或传入 indexing="xy" 得到 NumPy 的行为',
)

_MESHGRID = frozenset({"torch.meshgrid", "torch.functional.meshgrid"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``torch.meshgrid`` is called without ``indexing=``."""
    if context.source and "meshgrid" not in context.source:
        return
    if not context.imports.imports_torch():
        return
    calls = list(calls_of(context, _MESHGRID))
    missing = [call for call in calls if not has_keyword(call, "indexing")]
    if not missing:
        return
    passing = {id(call) for call in calls if has_keyword(call, "indexing")}
    branches: dict[int, ast.AST] = {}  # call -> its nearest try, if or conditional expression
    stack: list[tuple[ast.AST, ast.AST | None]] = [(context.tree, None)]
    while stack:
        node, branch = stack.pop()
        if isinstance(node, ast.Try | ast.If | ast.IfExp):
            branch = node
        elif isinstance(node, ast.Call):
            branches[id(node)] = branch
        stack.extend((child, branch) for child in ast.iter_child_nodes(node))
    for call in missing:
        branch = branches.get(id(call))
        if branch is not None and any(
            id(node) in passing for node in ast.walk(branch) if isinstance(node, ast.Call)
        ):
            continue  # the fallback of a version check
        yield call.lineno, call.col_offset
