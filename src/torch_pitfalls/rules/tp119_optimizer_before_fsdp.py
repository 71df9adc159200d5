"""``TP119``: an optimizer built from a model's parameters before FSDP shards it (opt-in).

.. rubric:: What it does

Reported (at the optimizer's construction): in one function (or at module level), in source order,

1. an optimizer built from ``<model>.parameters()`` or ``<model>.named_parameters()`` (a class of
   ``torch.optim`` through any import alias, or any call assigned to a name that contains
   ``optim`` or ``opt``), where ``<model>`` is a name or an attribute (``model``,
   ``self.model``);
2. then the same ``<model>`` (the same text) sharded: ``fully_shard(<model>, ...)`` (from
   ``torch.distributed.fsdp`` or ``torch.distributed._composable.fsdp``), or
   ``FullyShardedDataParallel(<model>, ...)`` / ``FSDP(<model>, ...)``;
3. and no optimizer built from that model's parameters after the sharding.

The two statements must not lie in the two arms of one ``if``. Not reported: an optimizer built
from something else (a list of parameters made before, ``param_groups``); a model sharded in
another function (the checker does not follow calls); ``DistributedDataParallel``, which keeps the
module's parameters; an optimizer rebuilt under the same name after the sharding, before the first
one is used again. Opt-in: on the public codebases the rules are measured on (``nox -s survey``) it
finds too little to measure its false-alarm rate.

.. rubric:: Why is this bad?

Sharding replaces every parameter of the module with a new one that holds this rank's shard. The
optimizer built before holds the old parameters: the backward pass fills the new ones' gradients,
``optimizer.step()`` updates nothing, the loss stays flat, and the old full-size parameters stay
in memory. No error is raised.

.. rubric:: Example

.. code-block:: python

    import torch
    from torch.distributed.fsdp import fully_shard

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fully_shard(model)

.. rubric:: Use instead

.. code-block:: python

    import torch
    from torch.distributed.fsdp import fully_shard

    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import exclusive, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP119",
    "lint",
    "fsdp-optimizer-before-wrap",
    "optimizer built before FSDP shards the model",
    "在 FSDP 分片模型之前创建了优化器",
    "this optimizer holds the model's parameters from before fully_shard / FSDP replaced them "
    "with sharded ones: step() updates nothing; build the optimizer after sharding the model",
    "这个优化器持有的是 fully_shard / FSDP 替换之前的模型参数：step() 什么也不会更新；"
    "应在模型分片之后再创建优化器",
    default=False,
)

_SHARDS = frozenset(
    {
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard.fully_shard",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
_PARAMETERS = frozenset({"parameters", "named_parameters"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where an optimizer is built from a model's parameters before the model is sharded."""
    if "parameters" not in context.attributes and "named_parameters" not in context.attributes:
        return
    names = context.imports.names
    if not any(name in _SHARDS for name in names.values()) and "FullyShardedDataParallel" not in (
        context.attributes
    ):
        return  # the common case, and a cheap one: nothing that shards
    found: set[tuple[int, int]] = set()
    for scope in scopes(context.tree, context.statements):
        built: list[tuple[str, ast.AST, tuple]] = []  # (model text, optimizer call, path)
        for node, path in walk_with_paths(scope):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                model = _optimizer_of(context, node)
                if model is not None:
                    built.append((model, node.value, path))
            elif isinstance(node, ast.Call) and node.args and _is_shard(context, node.func):
                sharded = ast.unparse(node.args[0])
                for model, call, where in built:
                    if model == sharded and not exclusive(path, where):
                        found.add((call.lineno, call.col_offset))
                built = [b for b in built if b[0] != sharded]  # reported once
        # an optimizer rebuilt after the sharding clears the finding
        found -= _rebuilt(context, scope, found)
    yield from sorted(found)


def _rebuilt(context: Context, scope: ast.AST, found: set) -> set:
    """The findings of ``scope`` whose optimizer is built again, under the same name, after the
    sharding and before the first optimizer is used (read) after the sharding."""
    cleared: set = set()
    if not found:
        return cleared
    events: list[tuple[str, str, ast.AST]] = []  # (kind, model or name text, node)
    for node, _ in walk_with_paths(scope):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            model = _optimizer_of(context, node)
            if model is not None:
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                events.append(("optimizer", f"{model} {ast.unparse(target)}", node.value))
        elif isinstance(node, ast.Call) and node.args and _is_shard(context, node.func):
            events.append(("shard", ast.unparse(node.args[0]), node))
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
            events.append(("read", ast.unparse(node), node))
    for index, (kind, text, node) in enumerate(events):
        if kind != "optimizer" or (node.lineno, node.col_offset) not in found:
            continue
        model, _, name = text.partition(" ")
        later = events[index + 1 :]
        shard = next((i for i, (k, m, _) in enumerate(later) if k == "shard" and m == model), None)
        if shard is None:
            continue
        for k, t, _ in later[shard + 1 :]:
            if k == "read" and t == name:
                break  # the first optimizer is used after the sharding
            if k == "optimizer" and t == text:
                cleared.add((node.lineno, node.col_offset))
                break
    return cleared


def _is_shard(context: Context, func: ast.expr) -> bool:
    name = context.imports.qualified_name(func)
    if name in _SHARDS:
        return True
    return isinstance(func, ast.Name) and func.id in ("fully_shard", "FSDP") and name is None


def _optimizer_of(context: Context, node: ast.Assign | ast.AnnAssign) -> str | None:
    """The text of the model whose parameters the optimizer assigned here is built from."""
    call = node.value
    if not isinstance(call, ast.Call):
        return None
    name = context.imports.qualified_name(call.func) or ""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    target_names = [ast.unparse(t).rpartition(".")[2].lower() for t in targets]
    if not (
        (name.startswith("torch.optim.") and name.rpartition(".")[2][:1].isupper())
        or any("optim" in t or "opt" in t for t in target_names)
    ):
        return None
    for argument in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "params")]:
        for inner in ast.walk(argument):
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in _PARAMETERS
                and isinstance(inner.func.value, ast.Name | ast.Attribute)
            ):
                return ast.unparse(inner.func.value)
    return None
