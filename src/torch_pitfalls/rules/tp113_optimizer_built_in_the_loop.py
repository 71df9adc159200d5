"""``TP113``: an optimizer built inside the loop that steps it (opt-in).

.. rubric:: What it does

An assignment ``<name> = torch.optim.<Optimizer>(...)`` (through any import or alias:
``optim.Adam``, ``from torch.optim import SGD``; also to ``self.<attr>``) inside a loop whose
body, at any depth, also calls ``<name>.step(...)`` or ``<scaler>.step(<name>)``. Reported at
the assignment (the innermost loop around it counts). Learning-rate schedulers
(``torch.optim.lr_scheduler``) and ``torch.optim.swa_utils`` are not optimizers here.

Not reported: an optimizer built once per fold, run, task or model: when a name its parameters
come from (``model`` in ``model.parameters()``) is bound again in the same loop, by the loop
itself (``for model in models:``) or by an assignment that is not a list of the same parameters
(``model = Net()``, ``learner = copy.deepcopy(meta)``; not ``params = list(model.parameters())``
or a comprehension); an optimizer handed to a setup call that returns it wrapped
(``model, optimizer = accelerator.prepare(model, optimizer)``, ``amp.initialize``,
``booster.boost``: a setup per run); an optimizer stepped by another function it is passed to
(the loop is not read through calls).

Opt-in: on real code its findings are too few to measure a false-alarm rate.

.. rubric:: Why is this bad?

An optimizer keeps state between steps: Adam's moving averages and step count, SGD's momentum
buffer. A new optimizer starts without it, so every rebuild throws it away: Adam's first step
moves every weight by about the learning rate whatever its gradient, SGD with momentum is plain
SGD, and training slows or stalls without an error. To change the learning rate, set
``param_group["lr"]`` or use a scheduler; to add parameters, ``add_param_group``.

.. rubric:: Example

.. code-block:: python

    import torch

    for epoch in range(10):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3 * 0.9**epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        scheduler.step()
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, LOOPS, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP113",
    "lint",
    "optimizer-recreated-in-loop",
    "optimizer built inside the training loop",
    "在训练循环内构造优化器",
    "an optimizer built inside the loop that steps it starts without the state of the previous "
    "one (Adam's moments, SGD's momentum) at every pass: build it once before the loop, and "
    'change the learning rate through param_group["lr"] or a scheduler',
    "在调用 step 的循环内构造优化器，每一轮都会丢掉上一个优化器的状态"
    "（Adam 的矩估计、SGD 的动量）："
    '应在循环之前构造一次，学习率通过 param_group["lr"] 或调度器来调整',
    default=False,
)

_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
# Calls that list the parameters of a model the loop keeps: not a new model.
_SAME_PARAMETERS = frozenset(
    {"parameters", "named_parameters", "list", "filter", "chain", "tuple", "get_parameters"}
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where an optimizer is built inside the loop that steps it."""
    if "step" not in context.attributes or not context.imports.imports_torch():
        return
    if context.source and "optim" not in context.source:
        return
    if not any(
        isinstance(node, ast.Assign) and _is_optimizer(context, node.value)
        for node in context.statements
    ):
        return  # no optimizer built in this file: nothing to read further
    scopes = [context.tree, *(n for n in context.statements if isinstance(n, FUNCTIONS))]
    found = set()
    for scope in scopes:
        found.update(_check_scope(context, scope))
    yield from sorted(found)


def _is_optimizer(context: Context, value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name = context.imports.qualified_name(value.func) or ""
    return (
        name.startswith("torch.optim.")
        and not name.startswith(_NOT_OPTIMIZERS)
        and name.rpartition(".")[2][:1].isupper()
    )


def _check_scope(context: Context, scope: ast.AST) -> Iterator[tuple[int, int]]:
    walked = list(walk_with_paths(scope))
    built = []
    for node, path in walked:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name | ast.Attribute)
            and any(step[0] == "loop" for step in path)
            and _is_optimizer(context, node.value)
        ):
            built.append((node, path))
    if not built:
        return
    loops = {id(node): node for node, _ in walked if isinstance(node, LOOPS)}
    for node, path in built:
        loop = [step for step in path if step[0] == "loop"][-1]
        target = ast.unparse(node.targets[0])
        inside = [(n, p) for n, p in walked if loop in p]
        if not any(_steps(n, target) for n, _ in inside):
            continue
        if _new_model(node.value, loops[loop[1]], inside) or _set_up(target, node, inside):
            continue
        yield node.lineno, node.col_offset


def _steps(node: ast.AST, target: str) -> bool:
    """``<target>.step(...)`` or ``<anything>.step(<target>)``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "step"
    ):
        return False
    if ast.unparse(node.func.value) == target:
        return True
    return any(ast.unparse(argument) == target for argument in node.args)


def _set_up(target: str, built: ast.Assign, inside: list) -> bool:
    """Whether the loop hands the optimizer to a call that returns it wrapped, a setup done once
    per run (``model, optimizer = accelerator.prepare(model, optimizer)``, ``amp.initialize``,
    ``booster.boost``)."""
    for node, _ in inside:
        if (
            node is built
            or not isinstance(node, ast.Assign)
            or not isinstance(node.value, ast.Call)
        ):
            continue
        targets = [ast.unparse(t) for t in node.targets]
        for t in node.targets:
            if isinstance(t, ast.Tuple | ast.List):
                targets += [ast.unparse(e) for e in t.elts]
        arguments = [*node.value.args, *(k.value for k in node.value.keywords)]
        if target in targets and any(ast.unparse(a) == target for a in arguments):
            return True
    return False


def _new_model(optimizer: ast.Call, loop: ast.AST, inside: list) -> bool:
    """Whether a name the optimizer's parameters come from is bound anew in the loop."""
    params = optimizer.args[0] if optimizer.args else None
    if params is None:
        params = next((k.value for k in optimizer.keywords if k.arg == "params"), None)
    if params is None:
        return True  # cannot tell
    names = {n.id for n in ast.walk(params) if isinstance(n, ast.Name)}
    if isinstance(loop, ast.For | ast.AsyncFor) and names & {
        n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)
    }:
        return True
    for node, _ in inside:
        if isinstance(node, ast.For | ast.AsyncFor) and names & {
            n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)
        }:
            return True
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if bound & names and not _lists_parameters(node.value):
            return True
    return False


def _lists_parameters(value: ast.expr) -> bool:
    """``model.parameters()``, ``list(...)``, ``filter(...)``, a comprehension, a list display."""
    if isinstance(value, ast.ListComp | ast.GeneratorExp | ast.List | ast.Tuple):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _SAME_PARAMETERS
    return False
