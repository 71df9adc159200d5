"""What is a module: the classes of ``torch.nn`` and of the file that derive from one, the
expressions that construct one, and calls named by their qualified name (``TP111``–``TP116``).

The classes of a file are found once per module and kept in the
:class:`~torch_pitfalls.lint.context.Context`'s cache.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS

PARAMETERS = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "torch.nn.Buffer",
        "torch.nn.parameter.Buffer",
        "torch.nn.UninitializedParameter",
        "torch.nn.parameter.UninitializedParameter",
        "torch.nn.UninitializedBuffer",
        "torch.nn.parameter.UninitializedBuffer",
    }
)
"""Classes of ``torch.nn`` whose instances are tensors, not modules."""

RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "eval", "train", "float", "double", "half", "bfloat16", "requires_grad_"}
)
"""Methods of a module that return the module itself."""


def is_torch_module_class(context, node: ast.expr) -> bool:
    """Whether ``node`` names a class of ``torch.nn`` (a last name starting with a capital letter,
    so not ``nn.functional``; not ``nn.Parameter`` and its kin)."""
    name = context.imports.qualified_name(node)
    if name is None or not name.startswith("torch.nn.") or name in PARAMETERS:
        return False
    return name.rpartition(".")[2][:1].isupper()


def module_classes(context) -> set[str]:
    """The classes of this file that derive from a class of ``torch.nn``, at any depth."""
    if "module classes" not in context.cache:
        classes = [n for n in context.statements if isinstance(n, ast.ClassDef)]
        modules: set[str] = set()
        changed = True
        while changed:
            changed = False
            for node in classes:
                if node.name not in modules and any(
                    is_torch_module_class(context, base)
                    or (isinstance(base, ast.Name) and base.id in modules)
                    for base in node.bases
                ):
                    modules.add(node.name)
                    changed = True
        context.cache["module classes"] = modules
    return context.cache["module classes"]


def without_returns_self(value: ast.expr | None) -> ast.expr | None:
    """``value`` without the calls of methods that return the module itself (``.to(device)``,
    ``.eval()``: :data:`RETURNS_SELF`) at its end."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in RETURNS_SELF
    ):
        value = value.func.value
    return value


def constructed_class(context, value: ast.expr | None) -> str | None:
    """For an expression that constructs a module, the class: its qualified name for a class of
    ``torch.nn`` (``torch.nn.Linear``), its name for a class of this file; else None.

    A construction may be followed by methods that return the module (``.to(device)``,
    ``.eval()``)."""
    value = without_returns_self(value)
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if is_torch_module_class(context, func):
        return context.imports.qualified_name(func)
    if isinstance(func, ast.Name) and func.id in module_classes(context):
        return func.id
    return None


def assigned_names(scope: ast.AST, nodes) -> dict[str, list[ast.expr | None]]:
    """``name -> values`` of the plain assignments of each name in ``scope`` (``nodes``: the
    nodes of its body, as :func:`~torch_pitfalls.lint.analyses.scopes.walk_with_paths` gives
    them); ``None`` for any other binding (a parameter, a ``for`` or ``with`` target, an
    augmented assignment, an unpacking)."""
    stores: dict[str, list[ast.expr | None]] = {}
    simple: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    simple.add(id(target))
                    stores.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if id(node) not in simple:
                stores.setdefault(node.id, []).append(None)
        elif isinstance(node, ast.NamedExpr):
            simple.add(id(node.target))
            stores.setdefault(node.target.id, []).append(node.value)
    if isinstance(scope, FUNCTIONS):
        arguments = scope.args
        every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        for argument in (*every, arguments.vararg, arguments.kwarg):
            if argument is not None:
                stores.setdefault(argument.arg, []).append(None)
    return stores


def calls_of(context, names: frozenset[str], word: str) -> Iterator[tuple[ast.Call, ast.stmt]]:
    """Every call in the module of a function whose qualified name is one of ``names``, with
    the statement it is in (for a compound statement, its header: ``if``'s test, ``for``'s
    iterable…).

    With the module's text known, only the statements on lines that hold ``word`` (the
    function's last name) or a name it is imported as are read: most files have none, and none
    is walked then."""
    lines = None
    if context.source:
        words = {word} | {
            alias for alias, qualified in context.imports.names.items() if qualified in names
        }
        lines = set()
        for each in words:
            start = context.source.find(each)
            while start != -1:
                lines.add(context.source.count("\n", 0, start) + 1)
                start = context.source.find(each, start + len(each))
        if not lines:
            return
    for statement in context.statements:
        if lines is not None and lines.isdisjoint(
            range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)
        ):
            continue
        for node in _header_nodes(statement):
            if isinstance(node, ast.Call) and context.imports.qualified_name(node.func) in names:
                yield node, statement


_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _header_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement, without the statements of its blocks (each comes on its own
    in ``Context.statements``) nor the functions and classes it defines."""
    stack = [
        value
        for field, value in ast.iter_fields(statement)
        if field not in _BLOCKS or not isinstance(statement, ast.stmt)
        for value in (value if isinstance(value, list) else [value])
        if isinstance(value, ast.AST)
    ]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast.iter_child_nodes(node))


def has_keyword(call: ast.Call, name: str) -> bool:
    """Whether the call passes ``name=`` or ``**kwargs`` (which may hold it)."""
    return any(k.arg == name or k.arg is None for k in call.keywords)
