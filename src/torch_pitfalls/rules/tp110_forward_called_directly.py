"""``TP110``: a module's ``forward`` called directly instead of the module.

.. rubric:: What it does

Reported (at the call): ``<name>.forward(...)`` where, in the same function (or at module level),
every assignment of ``<name>`` constructs a module; and ``self.<attr>.forward(...)`` in a method of
a class whose ``__init__`` assigns ``self.<attr>`` a module, when every assignment of
``self.<attr>`` in the class constructs one. "Constructs a module" is a call of a class of
``torch.nn`` (a name starting with a capital letter, not ``nn.Parameter``) or of a class of the
same file that derives from one, possibly followed by ``.to(...)``, ``.cuda()``, ``.eval()`` and
the other methods that return the module.

Not reported: ``super().forward(x)`` and ``self.forward(x)`` (the module's own ``forward``,
inside its call); a variable that is a parameter of the function or is assigned anything else; a
module built by a function (``torchvision.models.resnet18()``) or by a class imported from
another package.

.. rubric:: Why is this bad?

``model(x)`` runs the module's forward pre-hooks, ``forward`` and its forward hooks;
``model.forward(x)`` runs ``forward`` alone: the hooks registered on the module (activations
recorded, inputs changed, outputs checked) silently do not run.

.. rubric:: Example

.. code-block:: python

    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    out = model.forward(x)

.. rubric:: Use instead

.. code-block:: python

    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    out = model(x)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import constructed_class
from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context, statements
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP110",
    "lint",
    "call-module-not-forward",
    "forward called instead of the module",
    "调用 forward 而不是调用模块",
    "model.forward(x) skips the hooks registered on the module: call the module, model(x)",
    "model.forward(x) 会跳过模块上注册的钩子：应调用模块本身 model(x)",
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``.forward(...)`` is called on a module the same code constructed."""
    if "forward" not in context.attributes or not context.imports.imports_torch():
        return
    found = set()
    for scope in scopes(context.tree, context.statements):
        found.update(_check_scope(context, scope))
    for cls in (n for n in context.statements if isinstance(n, ast.ClassDef)):
        found.update(_check_class(context, cls))
    yield from sorted(found)


def _forward_call(node: ast.AST) -> ast.expr | None:
    """``x`` for a call ``x.forward(...)``, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "forward"
    ):
        return node.func.value
    return None


def _check_scope(context: Context, scope: ast.AST) -> Iterator[tuple]:
    stores: dict[str, list[bool]] = {}  # name -> whether each assignment constructs a module
    calls: list[tuple[str, ast.Call]] = []
    simple: set[int] = set()  # the Name targets of plain assignments, judged by their value
    for node, _ in walk_with_paths(scope):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    simple.add(id(target))
                    built = constructed_class(context, node.value) is not None
                    stores.setdefault(target.id, []).append(built)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if id(node) not in simple:
                stores.setdefault(node.id, []).append(False)  # for, with, augmented, del
        else:
            receiver = _forward_call(node)
            if isinstance(receiver, ast.Name):
                calls.append((receiver.id, node))
    if isinstance(scope, FUNCTIONS):
        arguments = scope.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            stores.setdefault(argument.arg, []).append(False)
    for name, call in calls:
        if stores.get(name) and all(stores[name]):
            yield call.lineno, call.col_offset


def _self_attribute(node: ast.expr, selves: set[str]) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in selves
    ):
        return node.attr
    return None


def _check_class(context: Context, cls: ast.ClassDef) -> Iterator[tuple]:
    methods = [n for n in cls.body if isinstance(n, FUNCTIONS) and n.args.args]
    selves = {m.args.args[0].arg for m in methods}
    stores: dict[str, list[bool]] = {}
    in_init: set[str] = set()
    calls: list[tuple[str, ast.Call]] = []
    for method in methods:
        for node in statements(method):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = _self_attribute(target, selves)
                    if name is not None:
                        built = isinstance(node, ast.Assign | ast.AnnAssign) and (
                            constructed_class(context, node.value) is not None
                        )
                        stores.setdefault(name, []).append(built)
                        if method.name == "__init__":
                            in_init.add(name)
        for node in ast.walk(method):
            receiver = _forward_call(node)
            name = _self_attribute(receiver, selves) if receiver is not None else None
            if name is not None:
                calls.append((name, node))
    for name, call in calls:
        if name in in_init and all(stores[name]):
            yield call.lineno, call.col_offset
