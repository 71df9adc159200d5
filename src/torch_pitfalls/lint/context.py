"""What every static rule reads: one parsed module (:class:`Context`), its imports resolved
(:class:`Imports`), and its statements walked once (``statements``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_AFTER_A_DOT = re.compile(r"\.\s*([A-Za-z_]\w*)")


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement in ``tree``, nested ones included (cheaper than every node)."""
    stack = list(child_statements(tree))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_statements(node))


def child_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements directly in ``node``'s blocks (through ``except`` and ``case`` clauses)."""
    for block in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, block, ()):
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


@dataclass
class Context:
    """One parsed module, as the rules see it.

    Attributes:
        tree: the module's :mod:`ast` tree.
        source: its text.
        imports: the qualified name each imported name stands for.
        attributes: every attribute name the module uses (``x.step`` gives ``step``), so that
            a rule can skip a module that cannot contain its pattern.
        cache: what an analysis shared by several rules keeps for the next one (by name).
        statements: every statement of the module, nested ones included (walked once for all
            rules).
    """

    tree: ast.AST
    source: str
    imports: Imports
    attributes: frozenset[str] = field(default_factory=frozenset)
    cache: dict = field(default_factory=dict)
    statements: list = field(default_factory=list)

    @classmethod
    def of(cls, tree: ast.AST, source: str = "") -> Context:
        """The context of ``tree``; ``source`` is its text, if known.

        With the text, ``attributes`` are read from it (every word after a dot: some that are
        not attributes too, in strings and comments, which only makes a rule skip less); without
        it, from the tree (several times slower).
        """
        if source:
            names = frozenset(_AFTER_A_DOT.findall(source))
        else:
            names = frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
        every = list(statements(tree))
        return cls(tree, source, Imports(tree, statements=every), names, statements=every)
