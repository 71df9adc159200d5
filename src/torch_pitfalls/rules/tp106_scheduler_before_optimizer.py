"""``TP106``: ``scheduler.step()`` called before the optimizer's step, in the same loop body.

.. rubric:: What it does

Reported (at the scheduler's call): a statement ``<scheduler>.step()``, with no argument, directly
in the body of a ``for`` or ``while`` loop, when a later statement of the same body steps the
optimizer and no earlier statement of that body does. "Steps the optimizer" means contains, at any
depth (inner loops, ``if`` blocks; not a function defined there), a call ``<optimizer>.step(...)``,
``<scaler>.step(...)``, or a call of a training function: a function whose name starts with
``train`` (``train(...)``, ``train_one_epoch(...)``, ``self.train_epoch(...)``; not the method
``model.train()``). A scheduler is a receiver whose name contains ``sched`` (``scheduler``,
``self.lr_sched``) or that is assigned, anywhere in the module, the result of a class of
``torch.optim.lr_scheduler``, and that the module never assigns the result of another call (a
scheduler of another library or of the project itself, such as
``LearningRateScheduler(...)``, or one returned by ``build_scheduler(...)``, may expect to be
stepped first); an optimizer, one whose name contains ``optim`` or ``opt``
(``optimizer``, ``opt_g``) or that is assigned a class of ``torch.optim``; a scaler, one whose name
contains ``scaler``.

Not reported: ``scheduler.step(epoch)`` or ``scheduler.step(metric)`` (an explicit epoch sets the
schedule's position, and ``ReduceLROnPlateau`` steps on a metric); a step under an ``if`` (often a
deliberate choice, such as skipping the first epoch); a scheduler stepped before the loop; an
optimizer step reached through a function whose name does not start with ``train``.

.. rubric:: Why is this bad?

A learning-rate scheduler is meant to step after the optimizer: stepped before it, the first
value of the schedule is skipped.

.. rubric:: Example

.. code-block:: python

    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    for x, y in loader:
        scheduler.step()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        scheduler.step()
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import LOOPS, NESTED, last_name, method_call
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import Rule

RULE = Rule(
    "TP106",
    "lint",
    "scheduler-step-order",
    {
        "en": "scheduler stepped before the optimizer",
        "zh_CN": "在优化器更新之前调用 scheduler.step()",
    },
    {
        "en": "scheduler.step() runs before optimizer.step() in this loop, so the first value "
        "of the schedule is skipped and every later one comes one step early: call "
        "scheduler.step() after optimizer.step()",
        "zh_CN": "这个循环在 optimizer.step() 之前调用了 scheduler.step()，调度的第一个值被跳过，"
        "之后每个值都提前一步生效：应在 optimizer.step() 之后调用 scheduler.step()",
    },
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a loop steps its scheduler before its optimizer."""
    if "step" not in context.attributes or not context.imports.imports_torch():
        return
    loops = [
        loop
        for loop in context.statements
        if isinstance(loop, LOOPS)
        and any(
            isinstance(statement, ast.Expr) and method_call(statement.value, "step")
            for statement in loop.body
        )
    ]
    if not loops:
        return
    schedulers, optimizers, others = _assigned_from(context)
    for loop in loops:
        stepped = False
        pending: list[ast.Call] = []
        for statement in loop.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if (
                method_call(call, "step")
                and not call.args
                and not call.keywords
                and _is_scheduler(call.func.value, schedulers, others)
            ):
                if not stepped:
                    pending.append(call)
                continue
            if _steps_optimizer(statement, optimizers):
                if not stepped:
                    for found in pending:
                        yield found.lineno, found.col_offset
                stepped = True


def _assigned_from(context: Context) -> tuple[set[str], set[str], set[str]]:
    """Receiver names assigned, in the module, a scheduler of ``torch.optim.lr_scheduler``, an
    optimizer of ``torch.optim``, and the result of any other call."""
    schedulers: set[str] = set()
    optimizers: set[str] = set()
    others: set[str] = set()
    for node in context.statements:  # an assignment is a statement: no need to walk expressions
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = context.imports.qualified_name(node.value.func) or ""
            if name.startswith("torch.optim.lr_scheduler."):
                into = schedulers
            elif name.startswith("torch.optim.") and name.rpartition(".")[2][:1].isupper():
                into = optimizers
            else:
                into = others
            into.update(n for n in map(last_name, node.targets) if n is not None)
    return schedulers, optimizers, others


def _is_scheduler(receiver: ast.expr, schedulers: set[str], others: set[str]) -> bool:
    name = last_name(receiver)
    if name is None or name in others:
        return False
    return name in schedulers or "sched" in name.lower()


def _is_optimizer(receiver: ast.expr, optimizers: set[str]) -> bool:
    name = last_name(receiver)
    if name is None:
        return False
    lower = name.lower()
    return "optim" in lower or "opt" in lower or "scaler" in lower or name in optimizers


def _steps_optimizer(statement: ast.stmt, optimizers: set[str]) -> bool:
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, NESTED):
            continue
        if isinstance(node, ast.Call):
            if method_call(node, "step") and _is_optimizer(node.func.value, optimizers):
                return True
            callee = node.func
            if isinstance(callee, ast.Name) and callee.id.startswith("train"):
                return True
            if (
                isinstance(callee, ast.Attribute)
                and callee.attr.startswith("train")
                and callee.attr != "train"
            ):
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False
