"""``TP108``: a shuffling ``DistributedSampler`` whose epoch loop never calls ``set_epoch``.

.. rubric:: What it does

Reported (at the sampler's construction): a call of
``torch.utils.data.distributed.DistributedSampler`` (or ``torch.utils.data.DistributedSampler``,
through any import alias) whose ``shuffle`` is left at its default or is ``True``, in a function
(or in the module's top-level code) that also has an epoch loop (a ``for`` loop whose target or
iterable names something containing ``epoch``: ``for epoch in range(epochs)``,
``for _ in range(args.num_epochs)``) and calls ``.set_epoch(...)`` on nothing.

Not reported: ``shuffle=False``, or ``shuffle`` given as anything but the literal ``True`` or as
the fourth positional argument; a sampler for evaluation, whose variable or first argument (the
dataset) names something containing ``val``, ``test`` or ``eval``; a sampler, or a
``DataLoader`` built on it, that the function passes to any call but ``DataLoader``, ``tqdm``
and the builtins ``len``, ``iter``, ``enumerate``, ``next``, ``zip``, ``print``
(``train(loader, epoch)``: that function, perhaps in another module, may call ``set_epoch``, as
may a wrapper);
a sampler or loader kept in an attribute (``self.sampler``) in a module that calls ``set_epoch``
anywhere; a function without an epoch loop (one that only builds the loaders); a subclass of
``DistributedSampler``, or ``**kwargs`` that may carry ``shuffle=False``.

.. rubric:: Why is this bad?

A ``DistributedSampler`` shuffles with a seed that changes only through ``set_epoch``: without
it every epoch sees the same order.

.. rubric:: Example

.. code-block:: python

    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(10):
        for batch in loader:
            train(batch)

.. rubric:: Use instead

.. code-block:: python

    from torch.utils.data import DataLoader, DistributedSampler

    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:
            train(batch)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import last_name, method_call, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import Rule

RULE = Rule(
    "TP108",
    "lint",
    "sampler-set-epoch",
    {
        "en": "DistributedSampler without set_epoch",
        "zh_CN": "DistributedSampler 未调用 set_epoch",
    },
    {
        "en": "a shuffling DistributedSampler repeats the same order in every epoch unless "
        "set_epoch is called, and this function's epoch loop never calls it: call "
        "sampler.set_epoch(epoch) at the start of each epoch",
        "zh_CN": "会打乱顺序的 DistributedSampler 若不调用 set_epoch，每个 epoch 的顺序都相同，"
        "而这个函数的 epoch 循环从不调用它：应在每个 epoch 开始时调用 sampler.set_epoch(epoch)",
    },
)

_SAMPLERS = frozenset(
    {
        "torch.utils.data.distributed.DistributedSampler",
        "torch.utils.data.DistributedSampler",
    }
)
_EVALUATION = ("val", "test", "eval")
_HARMLESS = frozenset({"len", "iter", "enumerate", "next", "zip", "print", "tqdm"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a shuffling ``DistributedSampler`` is built next to an epoch loop without
    ``set_epoch``."""
    if not context.imports.imports_torch() or not (
        "DistributedSampler" in context.attributes
        or any(name.endswith(".DistributedSampler") for name in context.imports.names.values())
    ):
        return
    module_sets_epoch = "set_epoch" in context.attributes
    for scope in scopes(context.tree, context.statements):
        yield from _check_scope(context, scope, module_sets_epoch)


def _check_scope(context: Context, scope: ast.AST, module_sets_epoch: bool) -> Iterator[tuple]:
    targets: dict[int, ast.expr] = {}  # id of a call -> the target it is assigned to
    samplers: list[ast.Call] = []
    loaders: list[tuple[ast.Call, ast.expr | None]] = []
    handed: set[str] = set()  # names passed to a call that may call set_epoch
    has_epoch_loop = False
    for node, _ in walk_with_paths(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            targets[id(node.value)] = node.targets[0]
        elif isinstance(node, ast.For | ast.AsyncFor):
            if _mentions(node.target, "epoch") or _mentions(node.iter, "epoch"):
                has_epoch_loop = True
        elif isinstance(node, ast.Call):
            if method_call(node, "set_epoch"):
                return
            name = context.imports.qualified_name(node.func) or ""
            if name in _SAMPLERS:
                if _shuffles(node):
                    samplers.append(node)
            elif name.endswith("DataLoader"):
                loaders.append((node, None))
            elif not (isinstance(node.func, ast.Name) and node.func.id in _HARMLESS):
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(argument, ast.Starred):
                        argument = argument.value
                    if isinstance(argument, ast.Name | ast.Attribute):
                        handed.add(last_name(argument))
    if not has_epoch_loop:
        return
    for call in samplers:
        target = targets.get(id(call))
        names = {last_name(target)} if target is not None else set()
        for loader, _ in loaders:
            sampler_argument = next((k.value for k in loader.keywords if k.arg == "sampler"), None)
            if sampler_argument is call or (
                sampler_argument is not None and last_name(sampler_argument) in names
            ):
                loader_target = targets.get(id(loader))
                if loader_target is not None:
                    names.add(last_name(loader_target))
                    if not isinstance(loader_target, ast.Name) and module_sets_epoch:
                        names.add(None)
        if target is not None and not isinstance(target, ast.Name) and module_sets_epoch:
            continue
        if None in names or names & handed:
            continue
        if any(_mentions(a, *_EVALUATION) for a in call.args[:1]) or any(
            any(word in (name or "").lower() for word in _EVALUATION) for name in names
        ):
            continue
        yield call.lineno, call.col_offset


def _shuffles(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg is None:
            return False  # **kwargs may say shuffle=False
        if keyword.arg == "shuffle":
            return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
    return len(call.args) < 4  # shuffle is the fourth positional parameter


def _mentions(node: ast.expr, *words: str) -> bool:
    """Whether a name or attribute in ``node`` contains one of ``words`` (in lower case)."""
    for child in ast.walk(node):
        name = child.id if isinstance(child, ast.Name) else getattr(child, "attr", None)
        if isinstance(name, str) and any(word in name.lower() for word in words):
            return True
    return False
