"""``TP129``: a loop that steps one optimizer and clears the gradients of another only.

.. rubric:: What it does

In a module that imports torch, a ``for`` or ``while`` loop whose body (nested loops
included, functions defined in it excluded) calls ``.backward()``, steps an optimizer and
clears gradients only through ``<optimizer>.zero_grad()`` of other optimizers: the stepped
optimizer's own gradients are never cleared, so they add up from step to step. A step is
``opt.step()`` with no argument, or ``scaler.step(opt)``; an optimizer is a receiver named like
one (its last name contains ``optim``, is ``opt``, or starts or ends with ``opt_`` / ``_opt``).
Reported at the step, once.

Not reported: a loop that clears in any other way (``model.zero_grad()``, an assignment or ``del``
of a ``.grad``, ``.grad.zero_()``, ``torch._foreach_zero_``), or that calls a function of the same
module (bare ``helper()`` or ``self.helper()``: it may clear), or that assigns the stepped
optimizer anew; an optimizer that runs the backward itself (``optim.backward(loss)``, as
ColossalAI's optimizers do: it manages its gradients); ``opt.step(closure)`` (LBFGS: the closure
clears); a step whose receiver is not named like an optimizer (``scheduler.step()``,
``ema.step()``, ``env.step(a)``). A loop that never clears anything is ``TP103``'s. Opt-in: on the
public codebases the rules are measured on (``nox -s survey``) it finds too little to measure its
false-alarm rate.

.. rubric:: Why is this bad?

``optimizer.zero_grad()`` clears the parameters of that optimizer only. Clearing the
discriminator's optimizer twice (a copy-and-paste slip) or the encoder's but not the decoder's
leaves the other parameters' gradients to accumulate: each of their steps applies the sum of
every gradient since training began, and that part of the model diverges or crawls without
any error.

.. rubric:: Example

.. code-block:: python

    import torch

    optimizer_enc = torch.optim.SGD(encoder.parameters(), lr=0.1)
    optimizer_dec = torch.optim.SGD(decoder.parameters(), lr=0.1)
    for x, y in loader:
        optimizer_enc.zero_grad()
        loss = criterion(decoder(encoder(x)), y)
        loss.backward()
        optimizer_enc.step()
        optimizer_dec.step()

.. rubric:: Use instead

.. code-block:: python

    import torch

    optimizer_enc = torch.optim.SGD(encoder.parameters(), lr=0.1)
    optimizer_dec = torch.optim.SGD(decoder.parameters(), lr=0.1)
    for x, y in loader:
        optimizer_enc.zero_grad()
        optimizer_dec.zero_grad()
        loss = criterion(decoder(encoder(x)), y)
        loss.backward()
        optimizer_enc.step()
        optimizer_dec.step()
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, LOOPS, own_nodes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP129",
    "lint",
    "backward-step-zero-grad",
    "optimizer stepped in a loop that clears another one only",
    "循环更新了一个优化器，却只清空了另一个优化器的梯度",
    "this loop steps an optimizer whose gradients it never clears: the zero_grad() calls in it "
    "belong to other optimizers, so this optimizer's gradients add up from step to step; call "
    "its own zero_grad() too (or model.zero_grad() for the whole model)",
    "这个循环更新了一个从不清空梯度的优化器：循环中的 zero_grad() 属于别的优化器，"
    "所以这个优化器的梯度会一步步累加；也要调用它自己的 zero_grad()"
    "（或对整个模型调用 model.zero_grad()）",
    default=False,
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where an optimizer is stepped in a loop that clears other optimizers only."""
    if not {"zero_grad", "step", "backward"} <= context.attributes:
        return
    if not context.imports.imports_torch():
        return
    functions = {n.name for n in context.statements if isinstance(n, FUNCTIONS)}
    reported: set[tuple[int, int]] = set()
    for loop in context.statements:
        if isinstance(loop, LOOPS):
            for step in _unclared_steps(loop, functions):
                place = (step.lineno, step.col_offset)
                if place not in reported:
                    reported.add(place)
                    yield place


def _unclared_steps(loop: ast.AST, functions: set[str]) -> list[ast.Call]:
    steps: list[tuple[str, ast.Call]] = []
    cleared: set[str] = set()
    assigned: set[str] = set()
    managing: set[str] = set()
    backward = False
    for node in own_nodes([*loop.body, *getattr(loop, "orelse", ())]):  # not nested functions
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                elements = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                for element in elements:
                    if isinstance(element, ast.Attribute) and element.attr == "grad":
                        return []  # gradients handled by hand
                    assigned.add(_dotted(element))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in functions:
                return []  # a helper of the module may clear
            if isinstance(func, ast.Attribute):
                receiver = _dotted(func.value)
                if func.attr == "zero_grad":
                    if not _optimizer_like(receiver):
                        return []  # model.zero_grad(): clears every parameter of the model
                    cleared.add(receiver)
                elif func.attr in ("zero_", "_foreach_zero_") or (
                    func.attr in functions and receiver in ("self", "cls")
                ):
                    return []  # .grad.zero_(), torch._foreach_zero_(...), self.helper()
                elif func.attr == "backward":
                    backward = True
                    if node.args and receiver:
                        managing.add(receiver)  # gemini_optim.backward(loss): its own gradients
                elif func.attr == "step":
                    if not node.args and not node.keywords and _optimizer_like(receiver):
                        steps.append((receiver, node))
                    elif "scaler" in receiver.lower() and len(node.args) == 1:
                        stepped = _dotted(node.args[0])
                        if _optimizer_like(stepped):
                            steps.append((stepped, node))
    if not backward or not cleared:
        return []
    return [
        call
        for receiver, call in steps
        if receiver and receiver not in cleared | assigned | managing
    ]


def _dotted(node: ast.expr) -> str:
    """``self.opt_g`` for ``self.opt_g``, ``opt`` for ``opt``; ``""`` for other expressions."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _optimizer_like(receiver: str) -> bool:
    last = receiver.rpartition(".")[2].lower()
    return bool(last) and (
        "optim" in last or last == "opt" or last.startswith("opt_") or last.endswith("_opt")
    )
