"""``TP122``: a dynamic batch declared for ``torch.export`` with an example batch of 1 (opt-in).

.. rubric:: What it does

Reported (at the call): ``torch.export.export(model, args, dynamic_shapes=...)`` (also
``export_for_training``), through any import alias, where an example input is built with a
literal batch of 1 and its entry of ``dynamic_shapes`` declares dimension 0 dynamic.

An example input "with a literal batch of 1" is ``torch.randn(1, ...)``, ``rand``, ``zeros``,
``ones``, ``empty`` or ``full`` with a first size of ``1`` (as separate sizes, a tuple or a list),
``torch.randint(low, high, (1, ...))``, possibly followed by ``.to(...)``, ``.cuda()``,
``.float()``, ``.half()``: in the call, or as the last value assigned to the name passed, in the
same function. ``args`` is a tuple display (or a name assigned one); its items are paired with a
tuple or list of ``dynamic_shapes`` by position, or with a ``dict`` of one entry when there is one
input. "Declares dimension 0 dynamic": the input's entry is a ``dict`` with the key ``0`` (or a
tuple with a first item) whose value is not ``None`` or a number (``Dim("batch")``, ``Dim.AUTO``,
``Dim.DYNAMIC``, a name).

Not reported: ``torch.onnx.export``, with ``dynamic_axes=`` or ``dynamic_shapes=``: the
TorchScript-based exporter traces a batch of 1 into a dynamic axis, and the ``torch.export``-based
one exports with ``backed_size_oblivious=True`` (PyTorch 2.13), which does not specialize sizes of
1, so a batch of 1 is not the mistake there; a ``dict`` of several inputs (pairing names with
inputs needs the signature of ``forward``); examples built in another function. Opt-in: on the
public codebases the rules are measured on (``nox -s survey``) it finds too little to measure its
false-alarm rate.

.. rubric:: Why is this bad?

``torch.export`` specializes every size of 0 or 1 of an example input: declared dynamic, a batch
of 1 makes the export fail with a named ``Dim`` ("specialized it to be a constant (1)"), or, with
``Dim.AUTO``, succeed with a static batch of 1, so the exported program refuses the deployment's
first batch of 4 ("Guard failed: x.size()[0] == 1").

.. rubric:: Example

.. code-block:: python

    import torch
    from torch.export import Dim

    dummy = torch.randn(1, 3, 224, 224)
    exported = torch.export.export(model, (dummy,), dynamic_shapes={"x": {0: Dim("batch")}})

.. rubric:: Use instead

.. code-block:: python

    import torch
    from torch.export import Dim

    example = torch.randn(2, 3, 224, 224)
    exported = torch.export.export(model, (example,), dynamic_shapes={"x": {0: Dim("batch")}})
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP122",
    "lint",
    "export-static-batch",
    "dynamic batch exported from an example batch of 1",
    "用批大小为 1 的示例导出动态批维度",
    "the example input has a batch of 1, which torch.export specializes to a constant even when "
    "dynamic_shapes declares it dynamic: export from an example batch of 2 or more",
    "示例输入的批大小为 1，即使 dynamic_shapes 声明它是动态的，torch.export 也会把它特化为常量："
    "应使用批大小为 2 或更大的示例输入导出",
    default=False,
)

_EXPORTS = frozenset({"torch.export.export", "torch.export.export_for_training"})
_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full"})
_RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "contiguous"}
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where an example batch of 1 is exported with a dynamic batch dimension."""
    if "dynamic_shapes" not in context.source and context.source:
        return
    if not context.imports.imports_torch():
        return
    found: set[tuple[int, int]] = set()
    for scope in scopes(context.tree, context.statements):
        values: dict[str, ast.expr] = {}  # name -> its last value so far
        for node, _ in walk_with_paths(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    values[target.id] = node.value
            elif (
                isinstance(node, ast.Call)
                and _exports(context, node)
                and _batch_of_one(context, node, values)
            ):
                found.add((node.lineno, node.col_offset))
    yield from sorted(found)


def _exports(context: Context, call: ast.Call) -> bool:
    return context.imports.qualified_name(call.func) in _EXPORTS and any(
        k.arg == "dynamic_shapes" for k in call.keywords
    )


def _resolve(node: ast.expr | None, values: dict) -> ast.expr | None:
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    return node


def _batch_of_one(context: Context, call: ast.Call, values: dict) -> bool:
    args = _resolve(call.args[1] if len(call.args) > 1 else None, values)
    if args is None:
        args = _resolve(next((k.value for k in call.keywords if k.arg == "args"), None), values)
    if args is None:
        return False
    inputs = list(args.elts) if isinstance(args, ast.Tuple | ast.List) else [args]
    spec = _resolve(next(k.value for k in call.keywords if k.arg == "dynamic_shapes"), values)
    if isinstance(spec, ast.Tuple | ast.List):
        entries = list(spec.elts)
    elif isinstance(spec, ast.Dict) and len(spec.values) == 1 and len(inputs) == 1:
        entries = list(spec.values)
    else:
        return False
    return any(
        _dynamic_batch(_resolve(entry, values)) and _one(context, _resolve(example, values))
        for example, entry in zip(inputs, entries, strict=False)
    )


def _dynamic_batch(entry: ast.expr | None) -> bool:
    """An entry that declares dimension 0 dynamic: ``{0: Dim(...)}`` or ``(Dim(...), ...)``."""
    value = None
    if isinstance(entry, ast.Dict):
        value = next(
            (
                v
                for k, v in zip(entry.keys, entry.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == 0
            ),
            None,
        )
    elif isinstance(entry, ast.Tuple | ast.List) and entry.elts:
        value = entry.elts[0]
    if value is None:
        return False
    return not (
        isinstance(value, ast.Constant) and (value.value is None or type(value.value) is int)
    )


def _one(context: Context, example: ast.expr | None) -> bool:
    """Whether ``example`` is built by a torch factory with a first size of 1."""
    while (
        isinstance(example, ast.Call)
        and isinstance(example.func, ast.Attribute)
        and example.func.attr in _RETURNS_SELF
    ):
        example = example.func.value
    if not isinstance(example, ast.Call):
        return False
    name = context.imports.qualified_name(example.func) or ""
    if not name.startswith("torch."):
        return False
    factory = name.rpartition(".")[2]
    if factory in _FACTORIES:
        first = example.args[0] if example.args else _keyword(example, "size")
    elif factory == "randint":
        first = example.args[2] if len(example.args) > 2 else _keyword(example, "size")
        if first is None and len(example.args) == 2 and isinstance(example.args[1], ast.Tuple):
            first = example.args[1]
    else:
        return False
    if isinstance(first, ast.Tuple | ast.List):
        first = first.elts[0] if first.elts else None
    return isinstance(first, ast.Constant) and first.value == 1 and type(first.value) is int


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)
