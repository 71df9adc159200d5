"""What the static rules share: name resolution through imports, and walking statements."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement in ``tree``, nested ones included (cheaper than every node)."""
    stack = list(child_statements(tree))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_statements(node))


def child_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements directly in ``node``'s blocks (through ``except`` and ``case`` clauses)."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, ()):
            if isinstance(child, ast.excepthandler | ast.match_case):
                yield from child.body
            elif isinstance(child, ast.stmt):  # a lambda's body is an expression
                yield child


_statements = statements


class Imports:
    """The qualified name each imported name stands for, from every import of a module.

    ``known`` lists the qualified names that a star import (``from torch.nn.functional import
    *``) may bring: a bare name resolves through a star import only to one of them.
    """

    def __init__(self, tree: ast.AST, known: frozenset[str] = frozenset(), statements=None) -> None:
        self.names: dict[str, str] = {}
        self.star_modules: list[str] = []
        self.known = known
        for node in _statements(tree) if statements is None else statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:  # import torch.nn.functional binds torch
                        root = alias.name.partition(".")[0]
                        self.names[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name == "*":
                        self.star_modules.append(node.module)
                    else:
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def knowing(self, known: frozenset[str]) -> Imports:
        """The same imports (not read again), with star imports resolving to ``known``."""
        copy = object.__new__(Imports)
        copy.names, copy.star_modules, copy.known = self.names, self.star_modules, known
        return copy

    def imports_torch(self) -> bool:
        """Whether the module imports torch (or anything under it) anywhere."""
        return any(
            name == "torch" or name.startswith("torch.")
            for name in (*self.names.values(), *self.star_modules)
        )

    def qualified_name(self, node: ast.AST) -> str | None:
        """``torch.nn.functional.softmax`` for ``F.softmax``; None if not rooted in an import."""
        if isinstance(node, ast.Attribute):
            base = self.qualified_name(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            for module in self.star_modules:
                if f"{module}.{node.id}" in self.known:
                    return f"{module}.{node.id}"
        return None
