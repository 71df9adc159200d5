"""``TP128``: index 0 of a zero-dimensional tensor, ``loss.data[0]`` (an ``IndexError`` since 0.4).

.. rubric:: What it does

An index ``[0]`` of a tensor known to have zero dimensions, directly or through ``.data``
(``loss.data[0]``, ``(a + b).data[0]``), in a module that imports torch. Known, in one function
(or the module's own code), from what every assignment to a plain name gives:

* a reduction over everything: ``torch.mean(t)``, ``torch.sum(t)`` with one argument, and for
  an index through ``.data`` (a tensor's attribute) also ``t.mean()``, ``t.sum()`` with none
  (without ``.data``, ``t`` may be a pandas ``DataFrame``, whose ``mean()`` has an index 0);
* a loss of ``torch.nn.functional`` (``F.mse_loss(...)``, ``F.cross_entropy(...)``, every
  function whose name ends in ``_loss`` and the cross-entropies, KL divergence and margin
  losses), or a call of a name bound to an ``nn.…Loss(...)`` instance, without
  ``reduction=`` or with ``"mean"`` or ``"sum"``;
* arithmetic of such values and numbers (``a + 0.5 * b``, ``-a``), and ``torch.abs``,
  ``torch.sqrt``, ``torch.exp``, ``torch.log`` of one.

A name counts only when every assignment to it in the scope gives a zero-dimensional value.
Reported at the index. Not reported: ``reduction="none"`` or a reduction chosen at run time;
arithmetic with a name that is not known to be zero-dimensional (it may hold a tensor of any
shape); a tensor of one element that has a dimension (``torch.zeros(1)``, which index 0 reads);
an index other than the literal ``0``; values returned by other functions (the rule does not
follow calls).

.. rubric:: Why is this bad?

Before PyTorch 0.4 a loss was a tensor of one element and code read it with
``loss.data[0]``; since 0.4 a reduced loss has zero dimensions and has no index 0 (the 0.4.0
migration guide, "Accumulating losses"). Today the line raises ``IndexError: invalid index of a
0-dim tensor. Use `tensor.item()` ...``, after the step it logs has run.

.. rubric:: Example

.. code-block:: python

    from torch import nn

    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.data[0]

.. rubric:: Use instead

.. code-block:: python

    from torch import nn

    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.item()
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import NESTED, scopes
from torch_pitfalls.lint.context import Context, child_statements
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP128",
    "lint",
    "item-and-tolist",
    "index 0 of a zero-dimensional tensor (loss.data[0])",
    "对 0 维张量取下标 0（loss.data[0]）",
    "this tensor has zero dimensions (a reduced loss, or a mean or sum over every element), so "
    "index 0, as in loss.data[0] of code written before PyTorch 0.4, raises IndexError: "
    "invalid index of a 0-dim tensor; use .item() for the Python number",
    "这个张量是 0 维的（归约后的损失，或对所有元素求的均值、和），所以取下标 0（就像 PyTorch 0.4 "
    "之前的代码里的 loss.data[0]）会抛出 IndexError: invalid index of a 0-dim tensor；"
    "要得到 Python 数字，应使用 .item()",
)

_WHOLE_REDUCTIONS = frozenset({"torch.mean", "torch.sum"})
_ELEMENTWISE = frozenset({"torch.abs", "torch.sqrt", "torch.exp", "torch.log"})
_FUNCTIONAL_LOSSES = frozenset(
    {
        "cross_entropy",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "margin_ranking_loss",
        "soft_margin_loss",
        "multilabel_soft_margin_loss",
        "cosine_embedding_loss",
        "hinge_embedding_loss",
        "triplet_margin_loss",
    }
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a zero-dimensional tensor is indexed with 0."""
    lines = _candidate_lines(context.source) if context.source else None
    if lines == [] or not context.imports.imports_torch():
        return
    for scope in scopes(context.tree, context.statements):
        # a function with no candidate [0] in its lines has nothing to report: not read
        if lines is None or scope is context.tree or _holds(scope, lines):
            yield from _check_scope(context, scope, lines)


_INDEX_ZERO = re.compile(r"\[\s*0\s*\]")
_WORD_BEFORE = re.compile(r"([.\w]*?)(\w+)\s*$")


def _candidate_lines(source: str) -> list[int]:
    """The lines (from 1) of the text's indexes ``[0]`` where the rule may report: of ``.data``,
    of a call or a parenthesised expression, or of a bare name (not of another attribute, such as
    ``.shape[0]``), in order."""
    lines, line, position = [], 1, 0
    for match in _INDEX_ZERO.finditer(source):
        before = source[max(0, match.start() - 40) : match.start()].rstrip()
        if not before.endswith(")"):
            word = _WORD_BEFORE.search(before)
            if word is None or (word.group(1).endswith(".") and word.group(2) != "data"):
                continue
        line += source.count("\n", position, match.start())
        position = match.start()
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _holds(node: ast.AST, lines: list[int]) -> bool:
    """Whether a candidate line lies in ``node``'s lines."""
    i = bisect.bisect_left(lines, node.lineno)
    return i < len(lines) and lines[i] <= (node.end_lineno or node.lineno)


def _check_scope(
    context: Context, scope: ast.AST, lines: list[int] | None
) -> Iterator[tuple[int, int]]:
    statements = []
    stack = list(child_statements(scope))
    while stack:
        statement = stack.pop()
        if isinstance(statement, NESTED):
            continue  # its own scope
        statements.append(statement)
        stack.extend(child_statements(statement))
    # the indexes [0] (and assignment expressions) in the statements on the candidate lines;
    # a statement's blocks are statements of their own
    indexes, named = [], []
    for statement in statements:
        if lines is not None and not _holds(statement, lines):
            continue
        inner = [c for c in ast.iter_child_nodes(statement) if not isinstance(c, ast.stmt)]
        while inner:
            node = inner.pop()
            if isinstance(node, ast.Subscript) and _is_zero(node.slice):
                indexes.append(node)
            elif isinstance(node, ast.NamedExpr):
                named.append(node)
            inner.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    if not indexes:
        return
    losses = {  # names bound to an nn.…Loss instance that reduces
        target.id
        for node in statements
        if isinstance(node, ast.Assign) and _loss_module(context, node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assigned: dict[str, list[ast.expr | None]] = {}
    for node in [*statements, *named]:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _note_target(assigned, target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            _note_target(assigned, node.target, None)  # not followed
        elif isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith | ast.NamedExpr):
            for target in _bound_by(node):
                _note_target(assigned, target, None)
    # t.mean() and t.sum() count only for an index through .data, a tensor's attribute: a
    # pandas DataFrame's mean() is a Series, whose [0] is valid
    known = {methods: _names(context, assigned, losses, methods) for methods in (False, True)}
    for node in indexes:
        value, methods = node.value, False
        if isinstance(value, ast.Attribute) and value.attr == "data":
            value, methods = value.value, True
        if _zero_dim(context, value, known[methods], losses, methods):
            yield node.lineno, node.col_offset


def _names(context: Context, assigned: dict, losses: set[str], methods: bool) -> set[str]:
    """The names whose every assignment is zero-dimensional (to a fixed point)."""
    zero_dim: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in zero_dim and all(
                v is not None and _zero_dim(context, v, zero_dim, losses, methods) for v in values
            ):
                zero_dim.add(name)
                changed = True
    return zero_dim


def _note_target(assigned: dict, target: ast.expr, value: ast.expr | None) -> None:
    if isinstance(target, ast.Name):
        assigned.setdefault(target.id, []).append(value)
    elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
        for element in target.elts if not isinstance(target, ast.Starred) else [target.value]:
            _note_target(assigned, element, None)  # an element of a value: not followed


def _bound_by(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.For | ast.AsyncFor | ast.NamedExpr):
        return [node.target]
    return [item.optional_vars for item in node.items if item.optional_vars is not None]


def _zero_dim(
    context: Context, node: ast.expr, names: set[str], losses: set[str], methods: bool
) -> bool:
    """Whether ``node`` gives a zero-dimensional tensor; ``methods``: ``t.mean()`` and
    ``t.sum()`` count."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        zero = [_zero_dim(context, side, names, losses, methods) for side in sides]
        return any(zero) and all(z or _number(side) for z, side in zip(zero, sides, strict=True))
    if isinstance(node, ast.UnaryOp):
        return _zero_dim(context, node.operand, names, losses, methods)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if (
        methods
        and isinstance(func, ast.Attribute)
        and func.attr in ("mean", "sum")
        and not node.args
        and not node.keywords
        and context.imports.qualified_name(func) is None
    ):
        return True  # t.mean(), t.sum(): every element
    qualified = context.imports.qualified_name(func) or ""
    if qualified in _WHOLE_REDUCTIONS:
        return len(node.args) == 1 and not node.keywords
    if qualified in _ELEMENTWISE:
        return len(node.args) == 1 and _zero_dim(context, node.args[0], names, losses, methods)
    if qualified.startswith("torch.nn.functional."):
        name = qualified.rpartition(".")[2]
        if name.endswith("_loss") or name in _FUNCTIONAL_LOSSES:
            return _reduces(node)
    if isinstance(func, ast.Name) and func.id in losses:
        return True
    return _loss_module(context, func)  # nn.MSELoss()(a, b)


def _loss_module(context: Context, node: ast.expr) -> bool:
    """``nn.MSELoss()`` or ``nn.CrossEntropyLoss(reduction="mean")``: a loss that reduces."""
    if not isinstance(node, ast.Call):
        return False
    qualified = context.imports.qualified_name(node.func) or ""
    return qualified.startswith("torch.nn.") and qualified.endswith("Loss") and _reduces(node)


def _reduces(call: ast.Call) -> bool:
    """No ``reduction=``, or a literal ``"mean"`` or ``"sum"``; and no ``**kwargs``."""
    for keyword in call.keywords:
        if keyword.arg is None:
            return False
        if keyword.arg == "reduction":
            value = keyword.value
            return isinstance(value, ast.Constant) and value.value in ("mean", "sum")
    return True


def _number(node: ast.expr) -> bool:
    """A literal ``int`` or ``float`` (a name may hold a tensor of any shape)."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _is_zero(index: ast.expr) -> bool:
    return isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0
