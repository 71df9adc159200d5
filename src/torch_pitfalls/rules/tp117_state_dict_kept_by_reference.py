"""``TP117``: ``best = model.state_dict()`` kept in a training loop without a copy (opt-in).

.. rubric:: What it does

Reported (at the assignment): in one function (or at module level), under an ``if`` inside a
``for`` or ``while`` loop that trains (it calls ``.backward(...)`` or ``.step(...)``, or a
function whose name starts with ``train``, at any depth), an assignment
``<name> = <module>.state_dict()`` (also ``.state_dict().copy()``, ``dict(<module>.state_dict())``
and ``OrderedDict(...)`` of it, which copy only the dictionary), where ``<name>`` is a name or an
attribute (``best_state``, ``self.best_weights``), when after that loop (later in source order,
outside it) ``<name>`` is passed to ``load_state_dict(...)`` or ``torch.save(...)``, returned or
assigned to another name (alone or in a tuple), and every assignment of ``<name>`` inside the
loop has that form.

Not reported: an assignment at every pass of the loop, not under an ``if`` (after the loop it holds
the last state, which is then what it means); ``copy.deepcopy(model.state_dict())``, ``{k:
v.clone() for k, v in ...}``, or any other expression; a state dict saved at once inside the loop
(``torch.save(model.state_dict(), path)``); a state dict used only inside the loop, or by another
method of the class (``self.best_state`` read in ``load_best()``). Opt-in: on the public codebases
the rules are measured on (``nox -s survey``) it finds too little to measure its false-alarm rate.

.. rubric:: Why is this bad?

``state_dict()`` returns a new dictionary whose values are the model's own parameter and buffer
tensors: every later optimizer step changes them in place. The "best" state kept this way is the
last one, and ``load_state_dict(best_state)`` restores the last epoch's weights, silently.

.. rubric:: Example

.. code-block:: python

    for epoch in range(epochs):
        train_one_epoch(model, optimizer)
        loss = evaluate(model)
        if loss < best_loss:
            best_loss, best_state = loss, model.state_dict()
    model.load_state_dict(best_state)

.. rubric:: Use instead

.. code-block:: python

    import copy

    for epoch in range(epochs):
        train_one_epoch(model, optimizer)
        loss = evaluate(model)
        if loss < best_loss:
            best_loss, best_state = loss, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import LOOPS, NESTED, method_call, scopes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP117",
    "lint",
    "best-state-dict-reference",
    "state_dict() kept without a copy",
    "保留 state_dict() 时没有复制",
    "model.state_dict() holds the model's live tensors, which later steps change in place: the "
    "state kept here ends up being the last one; keep copy.deepcopy(model.state_dict()) (or "
    "cloned tensors), or save it at once",
    "model.state_dict() 持有的是模型当前的张量，之后的更新会原地修改它们：这里保留的状态最终"
    "会变成最后一步的状态；应保留 copy.deepcopy(model.state_dict())（或克隆的张量），"
    "或立即保存到文件",
    default=False,
)

_TRAINS = frozenset({"backward", "step"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a training loop keeps ``model.state_dict()`` by reference and uses it after."""
    if "state_dict" not in context.attributes:
        return
    lines = context.source.splitlines()
    found: set[tuple[int, int]] = set()
    for scope in scopes(context.tree, context.statements):
        if lines and scope is not context.tree:
            text = "\n".join(lines[scope.lineno - 1 : scope.end_lineno])
            if ".state_dict()" not in text:
                continue  # the common case: a function that takes no state dict
        for loop in _outer_loops(scope):
            found.update(_check_loop(context, scope, loop))
    yield from sorted(found)


def _outer_loops(scope: ast.AST) -> Iterator[ast.AST]:
    """The loops of ``scope`` not nested in another loop of it (nor in a nested function)."""
    stack = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, LOOPS):
            yield node
        elif not isinstance(node, NESTED):
            stack.extend(
                child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)
            )


def _own(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``node``, not entering nested functions or classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in ast.iter_child_nodes(current) if not isinstance(c, NESTED))


def _reference(node: ast.expr) -> bool:
    """``m.state_dict()``, ``m.state_dict().copy()``, ``dict(m.state_dict())``…"""
    if method_call(node, "copy") and not node.args:
        node = node.func.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("dict", "OrderedDict")
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    return method_call(node, "state_dict") and not node.args and not node.keywords


def _check_loop(context: Context, scope: ast.AST, loop: ast.AST) -> Iterator[tuple[int, int]]:
    kept: dict[str, list[ast.AST]] = {}  # target text -> its reference assignments in the loop
    other: set[str] = set()  # targets also assigned something else in the loop
    trains = False
    conditional = _under_an_if(loop)
    for node in _own(loop):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _TRAINS:
                trains = True
            elif isinstance(func, ast.Name | ast.Attribute):
                name = func.id if isinstance(func, ast.Name) else func.attr
                trains |= name.startswith("train") and name != "train"
        elif isinstance(node, ast.Assign):
            pairs = _pairs(node)
            for target, value in pairs:
                text = ast.unparse(target)
                if _reference(value) and id(node) in conditional:
                    kept.setdefault(text, []).append(target)
                elif _reference(value):
                    continue  # kept at every pass: after the loop, it is the last state anyway
                else:
                    other.add(text)
    if not trains or not kept:
        return
    end = loop.end_lineno or loop.lineno
    for text, targets in kept.items():
        if text in other:
            continue
        if _used_after(context, scope, text, end):
            for target in targets:
                yield target.lineno, target.col_offset


def _under_an_if(loop: ast.AST) -> set[int]:
    """The ids of the assignments of ``loop`` that lie in an ``if`` (or ``try``) inside it."""
    found: set[int] = set()
    stack = [(child, False) for child in loop.body]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, NESTED):
            continue
        if isinstance(node, ast.Assign) and inside:
            found.add(id(node))
        deeper = inside or isinstance(node, ast.If)
        stack.extend((c, deeper) for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
    return found


def _pairs(node: ast.Assign) -> list[tuple[ast.expr, ast.expr]]:
    """``(target, value)`` of each name or attribute assigned, tuples unpacked item by item."""
    pairs = []
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            if len(target.elts) == len(node.value.elts):
                pairs += list(zip(target.elts, node.value.elts, strict=True))
        elif isinstance(target, ast.Name | ast.Attribute):
            pairs.append((target, node.value))
    return [(t, v) for t, v in pairs if isinstance(t, ast.Name | ast.Attribute)]


def _used_after(context: Context, scope: ast.AST, text: str, end: int) -> bool:
    """Whether ``text`` is loaded, saved or returned after line ``end`` in ``scope``."""
    for node in _own(scope):
        if getattr(node, "lineno", 0) <= end:
            continue
        if isinstance(node, ast.Return | ast.Assign) and node.value is not None:
            value = node.value  # returned or passed on as it is (alone, or in a tuple)
            items = value.elts if isinstance(value, ast.Tuple) else [value]
            if any(ast.unparse(item) == text for item in items):
                return True
        elif isinstance(node, ast.Call) and node.args:
            first = ast.unparse(node.args[0])
            if first != text:
                continue
            if method_call(node, "load_state_dict"):
                return True
            if context.imports.qualified_name(node.func) in ("torch.save",):
                return True
    return False
