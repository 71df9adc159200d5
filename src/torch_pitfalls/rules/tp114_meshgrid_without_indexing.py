"""``TP114``: ``torch.meshgrid`` called without ``indexing=``.

.. rubric:: What it does

A call of ``torch.meshgrid`` (or ``torch.functional.meshgrid``, through any import or alias)
without ``indexing=`` and without ``**kwargs`` that could carry it. Reported at the call.

Not reported: ``numpy.meshgrid`` and other functions named ``meshgrid``; the fallback for
PyTorch before 1.10 (which has no ``indexing``), that is, a call whose nearest enclosing ``try``,
``if`` or conditional expression also holds a call of ``torch.meshgrid`` with ``indexing=``
(``torch.meshgrid(y, x, indexing="ij") if new else torch.meshgrid(y, x)``, or the call without
it in the ``except TypeError`` of a ``try`` that calls it with it).

Fixed by ``--fix`` (a safe fix: ``"ij"`` is the default the call relies on, so the fixed call
returns the same grids, and PyTorch's warning goes away): ``indexing="ij"`` is added after the
last argument. A call with no argument, or whose last argument the edit cannot follow to its
``)``, is left to the message.

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
from torch_pitfalls.lint.context import Context, child_statements
from torch_pitfalls.rules import Fix, _rule

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
    calls = list(calls_of(context, _MESHGRID, "meshgrid"))
    passing = {id(call) for call, _ in calls if has_keyword(call, "indexing")}
    parents: dict[int, ast.AST] = {}  # statement -> the statement it is in (built when needed)
    for call, statement in calls:
        if id(call) in passing:
            continue
        if passing and _a_fallback(call, statement, passing, parents, context):
            continue
        yield call.lineno, call.col_offset


def _a_fallback(call, statement, passing: set, parents: dict, context: Context) -> bool:
    """Whether the nearest ``try``, ``if`` or conditional expression around ``call`` also
    holds a call with ``indexing=`` (the fallback of a version check)."""
    branches = [
        node
        for node in ast.walk(statement)
        if isinstance(node, ast.IfExp) and any(n is call for n in ast.walk(node))
    ]
    if not branches:
        if not parents:
            for outer in [context.tree, *context.statements]:
                for child in child_statements(outer):
                    parents[id(child)] = outer
        node = statement
        while id(node) in parents and not isinstance(node, ast.If | ast.Try):
            node = parents[id(node)]
        if isinstance(node, ast.If | ast.Try):
            branches = [node]
    if not branches:
        return False
    nearest = min(branches, key=lambda node: sum(1 for _ in ast.walk(node)))
    return any(id(node) in passing for node in ast.walk(nearest))


def fix(context: Context) -> Iterator[Fix]:
    """``indexing="ij"`` added to each reported call that has arguments (see above)."""
    if not context.source:
        return
    from torch_pitfalls.lint.fixes import SourceText, keyword_insertion

    reported = set(check(context))
    source = SourceText(context.source)
    for call, _ in calls_of(context, _MESHGRID, "meshgrid"):
        if (call.lineno, call.col_offset) in reported and (call.args or call.keywords):
            edit = keyword_insertion(call, source, 'indexing="ij"')
            if edit is not None:
                yield Fix(call.lineno, call.col_offset, (edit,))
