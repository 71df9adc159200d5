"""``TP124``: gradients cleared between the backward and the step that should use them.

.. rubric:: What it does

In one block of straight-line code (a loop body, a function body, the body of an ``if``…), a
``zero_grad()`` call that comes after a backward and before the optimizer step that follows it,
with no backward in between: ``loss.backward(); optimizer.zero_grad(); optimizer.step()``.
Reported at the ``zero_grad()`` call.

A backward is a call ``<x>.backward(...)`` (``scaler.scale(loss).backward()``,
``accelerator.backward(loss)``, ``torch.autograd.backward(...)``) or ``<x>.manual_backward(...)``
(PyTorch Lightning). A step is ``<x>.step()`` with no argument, or ``scaler.step(optimizer)``
(a receiver whose name contains ``scaler``; the optimizer is then its argument); a step with a
closure (LBFGS: the closure runs the backward) is not one. The body of a ``with`` statement is
part of the block around it; a loop, ``if`` or ``try`` inside the block is not (it may not run),
but one that may call a backward between the ``zero_grad()`` and the step counts as one. Nor is
it reported when a function or method of the same module (by name) that calls a backward is
called between the backward and the step.

The ``zero_grad()`` is reported when it clears what the step uses: it is called on the same
object (``optimizer.zero_grad()`` and ``optimizer.step()``, ``self.opt`` and ``self.opt``;
``optimizer`` and ``scaler.step(optimizer)``); or on a model, such as ``model.zero_grad()``,
before the step of an optimizer (a name containing ``opt``) that holds the model's parameters:
the module assigns that optimizer (by its last name) a call made with ``model.parameters()`` or
``model.named_parameters()`` (by the model's last name). A model cleared before the step of an
optimizer that the module builds otherwise, or that it receives, is not reported: mixed-precision
code of old copied the model's gradients to master weights, cleared the model and stepped an
optimizer over the master weights.

Not reported either: the usual order, ``zero_grad()`` after the step or before the backward
(also at the end or start of a loop body); gradient accumulation, with ``step()`` and
``zero_grad()`` under an ``if``; a GAN, where each network's ``zero_grad()`` comes before its own
backward, and where clearing one network (or optimizer) between another's backward and step does
not clear what that step uses.

.. rubric:: Why is this bad?

``zero_grad()`` throws away the gradients that the backward just computed: since PyTorch 2.0 it
sets every ``.grad`` to ``None`` (``set_to_none=True``), and the step skips every parameter
whose gradient is ``None``. The parameters never change, the loss stays where it is, and
nothing fails. With ``set_to_none=False`` the step gets zeros instead, and only weight decay,
momentum or Adam's running averages move the weights.

.. rubric:: Example

.. code-block:: python

    import torch

    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    import torch

    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED, identifier, own_nodes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP124",
    "lint",
    "backward-step-zero-grad",
    "zero_grad() between backward() and step()",
    "zero_grad() 位于 backward() 与 step() 之间",
    "this zero_grad() runs after backward() and before the step: it clears the gradients the "
    "step should use (to None since PyTorch 2.0), so the parameters do not change; call "
    "zero_grad() before the backward or after the step",
    "这次 zero_grad() 在 backward() 之后、step() 之前执行：它清掉了这一步更新要用的梯度"
    "（自 PyTorch 2.0 起设为 None），参数不会改变；应在 backward 之前或 step 之后调用 zero_grad()",
    default=False,
)

_BACKWARD, _CLEAR, _STEP, _HELPER = "backward", "clear", "step", "helper"
_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
_BLOCKS = ("body", "orelse", "finalbody")
_WITH = (ast.With, ast.AsyncWith)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``zero_grad()`` runs between a backward and the step that should use it."""
    if context.source and "zero_grad" not in context.source:
        return
    if (
        "step" not in context.attributes
        or not _BACKWARD_METHODS & context.attributes
        or not context.imports.imports_torch()
    ):
        return
    found: set[tuple[int, int]] = set()
    for block in _blocks(context):
        events = [e for statement in block for e in _events(statement, frozenset())]
        clears = list(_misplaced(events, context))
        if clears:  # read again, knowing which functions of the module call a backward
            helpers = _backward_functions(context)
            if helpers:
                events = [e for statement in block for e in _events(statement, helpers)]
                clears = list(_misplaced(events, context))
        found.update((clear.lineno, clear.col_offset) for clear in clears)
    yield from sorted(found)


def _blocks(context: Context) -> Iterator[list[ast.stmt]]:
    """Every block of statements that holds a ``zero_grad`` call (by the lines that say
    ``zero_grad``), not the body of a ``with`` (which is part of the block around it)."""
    lines = _lines_with(context, "zero_grad")
    for node in (context.tree, *context.statements):
        if not hasattr(node, "body") or isinstance(node, _WITH):
            continue
        if lines is not None and node is not context.tree and not _spans(node, lines):
            continue
        blocks = [getattr(node, field, None) for field in _BLOCKS]
        blocks += [handler.body for handler in getattr(node, "handlers", ())]
        blocks += [case.body for case in getattr(node, "cases", ())]
        for block in blocks:
            if block and isinstance(block[0], ast.stmt) and _holds_a_line(block, lines):
                yield block


def _spans(node: ast.AST, lines: list[int]) -> bool:
    """Whether one of ``lines`` (sorted) lies within the node's lines."""
    at = bisect.bisect_left(lines, node.lineno)
    return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno)


def _lines_with(context: Context, word: str) -> list[int] | None:
    """The numbers of the lines that hold ``word``, in order; None without the module's text."""
    if not context.source:
        return None
    found, start = [], context.source.find(word)
    while start != -1:
        found.append(context.source.count("\n", 0, start) + 1)
        start = context.source.find(word, start + len(word))
    return found


def _holds_a_line(block: list[ast.stmt], lines: list[int] | None) -> bool:
    """Whether a simple statement or ``with`` of the block spans one of ``lines`` (any
    statement, without the text)."""
    if lines is None:
        return True
    for statement in block:
        if isinstance(statement, NESTED):
            continue
        simple = isinstance(statement, _WITH) or not any(
            getattr(statement, field, None) for field in (*_BLOCKS, "handlers", "cases")
        )
        if simple and _spans(statement, lines):
            return True
    return False


def _backward_functions(context: Context) -> frozenset[str]:
    """Names of the module's functions and methods that call a backward (through each other,
    by name), kept in the context's cache."""
    key = ("functions that call a backward",)
    if key in context.cache:
        return context.cache[key]
    functions = [n for n in context.statements if isinstance(n, FUNCTIONS)]
    calls: dict[str, set[str]] = {}
    direct: set[str] = set()
    for function in functions:
        for node in _calls(function.body):
            name = _called_name(node)
            if name in _BACKWARD_METHODS:
                direct.add(function.name)
            elif name:
                calls.setdefault(function.name, set()).add(name)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in direct and callees & direct:
                direct.add(name)
                changed = True
    context.cache[key] = frozenset(direct)
    return context.cache[key]


def _calls(nodes) -> Iterator[ast.Call]:
    """The calls in ``nodes`` and below, not in nested functions, lambdas or classes."""
    return (node for node in own_nodes(nodes) if isinstance(node, ast.Call))


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _events(statement: ast.stmt, backward_functions: frozenset[str]) -> list[tuple]:
    """``(kind, call)`` of the backward, clearing and step calls that run, in order, when the
    statement runs; a compound statement (other than ``with``) gives at most one backward, when
    it may run one."""
    if isinstance(statement, _WITH):
        found = _simple_events(_calls(item.context_expr for item in statement.items))
        for inner in statement.body:
            found += _events(inner, backward_functions)
        return found
    if isinstance(statement, NESTED):
        return []
    if any(getattr(statement, field, None) for field in (*_BLOCKS, "handlers", "cases")):
        found = []
        for call in _calls([statement]):
            name = _called_name(call)
            if name in _BACKWARD_METHODS:
                return [(_BACKWARD, call)]
            if name in backward_functions and not found:
                found = [(_HELPER, call)]
        return found
    return _simple_events(_calls([statement]), backward_functions)


def _simple_events(calls, backward_functions: frozenset[str] = frozenset()) -> list[tuple]:
    found = []
    for call in calls:
        name = _called_name(call)
        if name in _BACKWARD_METHODS:
            found.append((_BACKWARD, call))
        elif name in backward_functions:
            found.append((_HELPER, call))
        elif name == "zero_grad" and isinstance(call.func, ast.Attribute):
            found.append((_CLEAR, call))
        elif name == "step" and isinstance(call.func, ast.Attribute):
            stepped = _stepped(call)
            if stepped is not None:
                found.append((_STEP, call))
    found.sort(key=lambda event: (event[1].lineno, event[1].col_offset))
    return found


def _stepped(call: ast.Call) -> ast.expr | None:
    """The optimizer an ``x.step(...)`` call steps: ``x`` for ``x.step()``, ``opt`` for
    ``scaler.step(opt)``; None for anything else (a step with a closure, ``env.step(action)``)."""
    receiver = call.func.value
    if "scaler" in identifier(receiver).lower():
        return call.args[0] if len(call.args) == 1 and not call.keywords else None
    return None if call.args or call.keywords else receiver


def _misplaced(events: list[tuple], context: Context) -> Iterator[ast.Call]:
    """The clearing calls that come after a backward and before a step they clear, with no
    other backward, call of a function that calls one, or step of the same optimizer between
    the backward and the step."""
    for index, (kind, call) in enumerate(events):
        if kind != _STEP:
            continue
        optimizer = _stepped(call)
        clears = []
        for earlier_kind, earlier in reversed(events[:index]):
            if earlier_kind == _BACKWARD:
                if clears:
                    yield from clears
                break
            if earlier_kind == _HELPER or (
                earlier_kind == _STEP and _same(_stepped(earlier), optimizer)
            ):
                break
            if earlier_kind == _CLEAR and _clears(earlier.func.value, optimizer, context):
                clears.append(earlier)


def _same(a: ast.expr | None, b: ast.expr | None) -> bool:
    return a is not None and b is not None and ast.dump(a) == ast.dump(b)


def _clears(cleared: ast.expr, optimizer: ast.expr, context: Context) -> bool:
    """Whether ``cleared.zero_grad()`` clears the gradients ``optimizer.step()`` uses: the same
    object, or a model whose parameters that optimizer holds (see the rule's documentation)."""
    if _same(cleared, optimizer):
        return True
    model, stepped = identifier(cleared).lower(), identifier(optimizer).lower()
    if isinstance(cleared, ast.Name) and cleared.id == "self":
        model = "self"
    if not model or "opt" in model or "opt" not in stepped:
        return False
    return _built_from(cleared, optimizer, context)


def _built_from(model: ast.expr, optimizer: ast.expr, context: Context) -> bool:
    """Whether the module assigns ``optimizer`` (by its last name) a call made with
    ``model.parameters()`` or ``model.named_parameters()`` (by the model's last name)."""
    key = ("optimizer parameters",)
    if key not in context.cache:
        built: set[tuple[str, str]] = set()
        for node in context.statements:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for call in _calls([node.value]):
                    if _called_name(call) in ("parameters", "named_parameters") and isinstance(
                        call.func, ast.Attribute
                    ):
                        owner = _model_name(call.func.value)
                        built.update((identifier(t), owner) for t in targets)
        context.cache[key] = built
    return (identifier(optimizer), _model_name(model)) in context.cache[key]


def _model_name(node: ast.expr) -> str:
    return "self" if isinstance(node, ast.Name) and node.id == "self" else identifier(node)
