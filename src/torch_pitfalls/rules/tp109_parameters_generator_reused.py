"""``TP109``: a ``model.parameters()`` generator kept in a variable and used twice.

.. rubric:: What it does

Reported (at the second use): in one function (or at module level), a variable assigned
``params = <x>.parameters(...)`` or ``<x>.named_parameters(...)`` (also wrapped in
``filter(...)`` or a generator expression over one of them), then read twice before it is next
assigned (in source order), or read once inside a loop that the assignment is not in (the second
pass finds the generator empty). Two reads in the two branches of one ``if`` / ``else`` count as
one.

Not reported: a module that does not import torch (another framework's ``parameters()`` may return
a dict); ``list(model.parameters())`` or any other container (that is the fix); reads after
the variable is assigned again (``params = list(params)``, whose own read is the first use);
reads in a function defined inside the scope (a closure may run once); a generator passed to a
function that iterates it twice (the checker does not follow other functions: the page shows that
case).

.. rubric:: Why is this bad?

``parameters()`` returns a generator: the first reader exhausts it, and the second (an
optimizer, a clipping call) silently gets no parameter at all.

.. rubric:: Example

.. code-block:: python

    import torch

    params = model.parameters()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer = torch.optim.SGD(params, lr=0.1)

.. rubric:: Use instead

.. code-block:: python

    import torch

    params = list(model.parameters())
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer = torch.optim.SGD(params, lr=0.1)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import exclusive, method_call, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context, statements
from torch_pitfalls.rules import Rule

RULE = Rule(
    "TP109",
    "lint",
    "params-generator-exhausted",
    {
        "en": "parameters() generator used twice",
        "zh_CN": "parameters() 生成器被使用两次",
    },
    {
        "en": "this variable holds the generator returned by parameters(), which is empty after "
        "its first use: keep list(model.parameters()), or call model.parameters() at each use",
        "zh_CN": "这个变量保存的是 parameters() 返回的生成器，第一次使用后它就空了："
        "应保存 list(model.parameters())，或在每次使用时重新调用 model.parameters()",
    },
)

_METHODS = ("parameters", "named_parameters")


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a stored parameter generator is read a second time."""
    if not set(_METHODS) & context.attributes or not context.imports.imports_torch():
        return
    for scope in scopes(context.tree, context.statements):
        if any(  # the common case, and a cheap test: no generator kept in a variable here
            isinstance(node, ast.Assign) and _is_generator(node.value) for node in statements(scope)
        ):
            yield from _check_scope(scope)


def _is_generator(value: ast.expr) -> bool:
    if any(method_call(value, name) for name in _METHODS):
        return True
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "filter"
        and len(value.args) == 2
    ):
        return _is_generator(value.args[1])
    if isinstance(value, ast.GeneratorExp):
        return _is_generator(value.generators[0].iter)
    return False


def _check_scope(scope: ast.AST) -> Iterator[tuple[int, int]]:
    generators: list[tuple[str, ast.Assign, tuple]] = []
    stores: dict[str, list[tuple[int, int]]] = {}
    reads: dict[str, list[tuple[ast.Name, tuple]]] = {}
    for node, path in walk_with_paths(scope):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                reads.setdefault(node.id, []).append((node, path))
            else:
                stores.setdefault(node.id, []).append((node.lineno, node.col_offset))
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _is_generator(node.value)
        ):
            generators.append((node.targets[0].id, node, path))
    for name, assignment, where in generators:
        start = (assignment.end_lineno, assignment.end_col_offset)
        end = min((p for p in stores[name] if p > start), default=(float("inf"), 0))
        loops = {step for step in where if step[0] == "loop"}
        seen: list[tuple] = []
        for node, path in reads.get(name, []):
            if not start < (node.lineno, node.col_offset) < end:
                continue
            in_new_loop = any(step[0] == "loop" and step not in loops for step in path)
            if in_new_loop or any(not exclusive(path, other) for other in seen):
                yield node.lineno, node.col_offset
                break
            seen.append(path)
