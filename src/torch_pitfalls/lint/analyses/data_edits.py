"""The analysis of ``TP104``: an edit through ``.data`` while a graph that may have saved the
tensor is alive."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from torch_pitfalls.lint.analyses.expressions import _bound_names, _imports
from torch_pitfalls.lint.analyses.scopes import DISTRIBUTED, FUNCTIONS, NESTED, method_receiver
from torch_pitfalls.lint.context import Imports
from torch_pitfalls.lint.context import statements as _statements

# Tensor factories: what they return is in no graph (for TP104).
_FACTORIES = frozenset(
    {
        *("tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye"),
        *("rand", "randn", "randint", "arange", "linspace", "zeros_like", "ones_like"),
        *("empty_like", "full_like", "rand_like", "randn_like"),
    }
)


def data_edit_findings(context) -> list[tuple[int, int, str]]:
    """``(line, col, "TP104")`` of each edit through ``.data`` before a backward."""
    found: list[tuple[int, int, str]] = []
    if "data" in context.attributes and {"backward", "manual_backward"} & context.attributes:
        _DataEditChecker(context.tree, _imports(context), found).check()
    return found


def _is_inplace_method(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__") and name != "_"


class _DataEditChecker:
    """TP104: an edit through ``.data`` while a graph that may have saved the tensor is alive.

    In each function (and the module's own code), read in source order without the functions
    and classes defined in it: an edit through ``.data`` is reported when a ``.backward()``
    follows it whose tensor is rooted in a name (``loss`` in ``loss.backward()``,
    ``out.sum().backward()``, ``torch.autograd.backward(loss)``) assigned before the edit and
    not assigned again between the edit and the backward.
    """

    def __init__(self, tree: ast.AST, imports: Imports, found: list) -> None:
        self.tree = tree
        self.imports = imports
        self.found = found
        self.methods = {
            method
            for node in _statements(tree)
            if isinstance(node, ast.ClassDef)
            for method in node.body
            if isinstance(method, FUNCTIONS)
        }

    def check(self) -> None:
        self._check_scope(self.tree, None)
        for node in _statements(self.tree):  # functions are statements: no expression needed
            if isinstance(node, ast.ClassDef):
                for method in node.body:
                    if isinstance(method, FUNCTIONS):
                        receiver = method_receiver(node, method)
                        self._check_scope(method, receiver[1] if receiver else None)
            elif isinstance(node, FUNCTIONS) and node not in self.methods:
                self._check_scope(node, None)

    def _check_scope(self, scope: ast.AST, self_name: str | None) -> None:
        assigned: dict[str, list[_Assignment]] = {}
        edits: list[tuple[tuple[int, int], ast.AST, str | None, str | None]] = []
        backwards: list[tuple[tuple[int, int], str]] = []
        stack = list(scope.body)
        while stack:
            node = stack.pop()
            if isinstance(node, NESTED):
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                end = (node.end_lineno, node.end_col_offset)
                for target in targets:
                    alias = isinstance(target, ast.Name) and self._is_data(value, self_name)
                    assignment = _Assignment(
                        end,
                        _plain_name(value.value) if alias else None,
                        isinstance(value, ast.Call) and not self._is_factory(value),
                        frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
                        if value is not None
                        else frozenset(),
                    )
                    for name in _bound_names(target):
                        assigned.setdefault(name, []).append(assignment)
                    self._target_edits(node, target, self_name, edits)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.withitem | ast.comprehension):
                target = node.optional_vars if isinstance(node, ast.withitem) else node.target
                if target is not None:
                    end = (target.end_lineno, target.end_col_offset)
                    for name in _bound_names(target):
                        assigned.setdefault(name, []).append(_Assignment(end))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                self._call_events(node, self_name, edits, backwards)
        for position, node, alias, base in edits:
            if alias is not None:  # c.zero_() for c = x.data
                last = _last_before(assigned.get(alias, []), position)
                if last is None or last.data_of is None:
                    continue
                base = last.data_of
            if any(self._alive(assigned, position, at, root, base) for at, root in backwards):
                self.found.append((node.lineno, node.col_offset, "TP104"))

    @staticmethod
    def _alive(assigned, edit, backward, root: str, base: str | None) -> bool:
        """Whether the backward at ``backward`` runs through a graph alive at ``edit``: its
        tensor ``root`` is assigned before the edit and not after it, or assigned after it
        from the edited tensor ``base``, itself computed before the edit."""
        if not edit < backward:
            return False
        root_assignments = assigned.get(root, [])
        between = [a for a in root_assignments if edit < a.end < backward]
        if not between:
            return _last_before(root_assignments, edit) is not None
        last_base = None if base is None else _last_before(assigned.get(base, []), edit)
        if last_base is None or not last_base.computed:
            return False
        tainted = {base}  # the names computed from the edited tensor after the edit
        later = sorted(
            (a.end, name, a)
            for name, assignments in assigned.items()
            for a in assignments
            if edit < a.end < backward
        )
        for _, name, assignment in later:
            if assignment.names & tainted:
                tainted.add(name)
            else:
                tainted.discard(name)
        return root in tainted

    def _is_factory(self, call: ast.Call) -> bool:
        """``torch.zeros(...)`` and the like: a new tensor, in no graph."""
        name = self.imports.qualified_name(call.func) or ""
        return name.startswith("torch.") and name.rpartition(".")[2] in _FACTORIES

    def _call_events(self, node: ast.Call, self_name, edits, backwards) -> None:
        func, position = node.func, (node.lineno, node.col_offset)
        if func.attr in ("backward", "manual_backward"):
            tensor = func.value
            if self.imports.qualified_name(func.value) == "torch.autograd":
                tensor = node.args[0] if node.args else None
            elif func.attr == "manual_backward" or _last_name(func.value) in BACKWARD_WRAPPERS:
                # fabric.backward(loss), self.manual_backward(loss): the loss is the tensor
                tensor = node.args[0] if node.args else _keyword(node, "loss", "tensor")
            elif (self.imports.qualified_name(func.value) or "").startswith(DISTRIBUTED):
                tensor = None
            root = _root_name(tensor)
            if root is not None:
                backwards.append((position, root))
        elif _is_inplace_method(func.attr):
            if self._is_data(func.value, self_name):
                edits.append((position, node, None, _plain_name(func.value.value)))
            elif isinstance(func.value, ast.Name):
                edits.append((position, node, func.value.id, None))

    def _target_edits(self, node, target: ast.expr, self_name, edits) -> None:
        """Edits by an assignment: ``x.data = ...``, ``x.data[i] = ...``, ``c[i] = ...`` and
        ``c += ...`` for ``c = x.data``."""
        for element in _target_elements(target):
            position = (element.lineno, element.col_offset)
            if isinstance(element, ast.Subscript):
                edited = element.value
                if self._is_data(edited, self_name):
                    edits.append((position, element, None, _plain_name(edited.value)))
                elif isinstance(edited, ast.Name):
                    edits.append((position, element, edited.id, None))
            elif isinstance(element, ast.Attribute) and self._is_data(element, self_name):
                edits.append((position, element, None, _plain_name(element.value)))
            elif isinstance(element, ast.Name) and isinstance(node, ast.AugAssign):
                edits.append((position, element, element.id, None))

    @staticmethod
    def _is_data(node: ast.expr | None, self_name: str | None) -> bool:
        """``x.data``, but not ``self.data`` (an object's own attribute) or ``p.grad.data``."""
        if not isinstance(node, ast.Attribute) or node.attr != "data":
            return False
        owner = node.value
        if isinstance(owner, ast.Name):
            return owner.id not in ("self", "cls", self_name)
        return not (isinstance(owner, ast.Attribute) and owner.attr == "grad")


BACKWARD_WRAPPERS = frozenset(
    {"fabric", "accelerator", "engine", "model_engine", "booster", "strategy", "precision_plugin"}
)
"""Objects whose ``.backward(loss)`` runs the backward of its argument: Lightning Fabric,
Hugging Face Accelerate, DeepSpeed's engine, ColossalAI's booster, Lightning's strategies and
precision plugins (named as their documentation names them); Lightning's ``manual_backward(loss)``
too. For them the tensor back-propagated is the argument, not the receiver."""


def _last_name(node: ast.expr) -> str | None:
    """``fabric`` for ``fabric`` and ``self.fabric``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _keyword(call: ast.Call, *names: str) -> ast.expr | None:
    """The value of the first keyword argument of ``call`` named one of ``names``."""
    return next((k.value for k in call.keywords if k.arg in names), None)


def _target_elements(target: ast.expr) -> Iterator[ast.expr]:
    """The targets in ``a, (b[i], *c.x)``."""
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_elements(element)
    elif isinstance(target, ast.Starred):
        yield from _target_elements(target.value)
    else:
        yield target


@dataclass(frozen=True)
class _Assignment:
    """An assignment of a name, for TP104.

    Attributes:
        end: where the statement ends (line, column): the name holds the value from there.
        data_of: for ``c = x.data``, the name ``x`` (None otherwise).
        computed: the value is a call (not a tensor factory such as ``torch.zeros``).
        names: the names the value mentions.
    """

    end: tuple[int, int]
    data_of: str | None = None
    computed: bool = False
    names: frozenset[str] = frozenset()


def _last_before(assignments: list[_Assignment], position) -> _Assignment | None:
    """The assignment in force at ``position``, if any."""
    before = [a for a in assignments if a.end < position]
    return max(before, key=lambda a: a.end) if before else None


def _plain_name(node: ast.expr) -> str | None:
    """``x`` for the name ``x``; None for anything else (``net[0].weight``)."""
    return node.id if isinstance(node, ast.Name) else None


def _root_name(node: ast.expr | None) -> str | None:
    """``loss`` for ``loss``, ``out.sum()``, ``outs[0].mean()``; None if not rooted in a name."""
    while node is not None and not isinstance(node, ast.Name):
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return None
    return None if node is None else node.id
