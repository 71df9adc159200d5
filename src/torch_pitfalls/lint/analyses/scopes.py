"""Scopes, receivers and the node kinds every static analysis shares: what runs in one function."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from torch_pitfalls.lint.context import statements

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
DISTRIBUTED = "torch.distributed"
"""Code under this package runs on every process: its backward and step are not a loop's."""


def scopes(tree: ast.Module, every=None) -> Iterator[ast.AST]:
    """The module and every function in it (methods and nested functions included); ``every``
    is the module's statements, if already walked (``Context.statements``)."""
    yield tree
    for node in statements(tree) if every is None else every:
        if isinstance(node, FUNCTIONS):
            yield node


def own_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of ``nodes`` and below, in source order, not entering the functions, lambdas
    and classes defined there (each is yielded itself, not its body): what runs in one scope."""
    stack = list(reversed(list(nodes)))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, NESTED):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def last_name(node: ast.expr) -> str | None:
    """``scheduler`` for ``scheduler`` or ``self.scheduler``; None for other expressions."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def method_call(node: ast.AST, method: str) -> bool:
    """Whether ``node`` is a call ``<anything>.method(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
    )


def walk_with_paths(scope: ast.AST) -> Iterator[tuple[ast.AST, tuple]]:
    """Each node of ``scope``'s body (not entering nested functions or classes), in source order,
    with its path: the loops (``("loop", id)``) and ``if`` arms (``("if", id, "body" or
    "orelse")``) it lies in. The iterable of a ``for`` runs once: it is not in that loop."""
    stack = [(child, ()) for child in reversed(scope.body)]
    while stack:
        node, path = stack.pop()
        yield node, path
        if isinstance(node, NESTED):
            continue
        children = []
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            inner = path
            if isinstance(node, LOOPS) and field in ("body", "test"):
                inner = (*path, ("loop", id(node)))
            elif isinstance(node, ast.If) and field in ("body", "orelse"):
                inner = (*path, ("if", id(node), field))
            children += [(item, inner) for item in items if isinstance(item, ast.AST)]
        stack.extend(reversed(children))


def exclusive(a: tuple, b: tuple) -> bool:
    """Whether two paths lie in different arms of one ``if`` (never both run in one pass)."""
    arms_a = {step[1]: step[2] for step in a if step[0] == "if"}
    return any(step[0] == "if" and arms_a.get(step[1], step[2]) != step[2] for step in b)


def method_receiver(cls: ast.ClassDef, method: ast.AST) -> tuple[ast.ClassDef, str] | None:
    """``(cls, name of the first parameter)`` for a method, None for a static method."""
    positional = (*method.args.posonlyargs, *method.args.args)
    decorators = {d.id if isinstance(d, ast.Name) else None for d in method.decorator_list}
    if not positional or "staticmethod" in decorators:
        return None
    return cls, positional[0].arg


def identifier(node: ast.expr) -> str:
    """The last name of ``a.b.c`` or ``c``; ``""`` for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
