"""``TP130``: a sequence-first Transformer's output pooled as if batch-first.

.. rubric:: What it does

Reported (at the pooling): the output of a Transformer layer built without ``batch_first=True``,
whose output is therefore ``(S, N, E)``, indexed or reduced along dimension 1 as if it were the
sequence:

* ``out[:, 0]``, ``out[:, -1]``, ``out[:, 0, :]`` (one position of dimension 1);
* ``out.mean(1)``, ``out.mean(dim=1)``, and the same with ``sum``, ``max`` and ``amax``;
  ``torch.mean(out, 1)``, ``torch.mean(out, dim=1)`` and the same with ``torch.sum``,
  ``torch.max`` and ``torch.amax``;

where ``out`` is the call of the layer itself (``self.encoder(x)[:, 0]``) or a name whose last
assignment before the pooling, in the function's text, is that call (``out = self.encoder(x)``,
``x = self.encoder(x)``).

The layer is a :class:`~torch.nn.TransformerEncoderLayer`,
:class:`~torch.nn.TransformerDecoderLayer` or :class:`~torch.nn.Transformer` constructed without
``batch_first`` or with ``batch_first=False`` written out, or a
:class:`~torch.nn.TransformerEncoder` or ``nn.TransformerDecoder`` whose layer (its first
argument, or ``encoder_layer=``, ``decoder_layer=``) is one: constructed in the call, or a name
the same function only assigns such a construction. It is held by an attribute of ``self`` that
the class assigns only such a construction, in ``__init__`` (used in any method of the class),
or by a name of the function (or of the module) that is assigned only such a construction.

Not reported: ``batch_first`` given by a variable, by ``**kwargs`` or by position; a layer of
another library or built by a function; a ``Transformer`` with a ``custom_encoder`` or
``custom_decoder``; an output transposed or otherwise reassigned before it is pooled
(``out = out.transpose(0, 1)``); pooling along dimension 0 (``out[0]``, ``out.mean(dim=0)``),
which is right for ``(S, N, E)``; and a layer called on a batch of one made by
``x.unsqueeze(1)``, ``x[:, None]`` or ``x.view(s, 1, e)`` (or a name assigned one of them), where
``[:, 0]`` drops the batch dimension, as meant. :class:`~torch.nn.MultiheadAttention`, which
returns a tuple, is not followed.

.. rubric:: Why is this bad?

Transformer layers read and return ``(S, N, E)`` unless built with ``batch_first=True``. Code
that feeds them ``(N, S, E)`` batches runs without an error, and so does its pooling
``out[:, 0]`` (the "first token") or ``out.mean(dim=1)`` (the average over the sequence). Either
the layers attend across the samples of the batch (the data was batch-first), or the pooling
takes one sample of the batch, or the average over the batch, for every position (the data was
sequence-first): in both cases a sample's prediction depends on the other samples of its batch.

.. rubric:: Example

.. code-block:: python

    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(64, nhead=4)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(64, 10)

        def forward(self, x):  # x: (N, S, 64)
            return self.head(self.encoder(x)[:, 0])

.. rubric:: Use instead

.. code-block:: python

    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(64, nhead=4, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(64, 10)

        def forward(self, x):  # x: (N, S, 64)
            return self.head(self.encoder(x)[:, 0])
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import assigned_names, without_returns_self
from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP130",
    "lint",
    "transformer-batch-first",
    "sequence-first Transformer output pooled as batch-first",
    "序列优先的 Transformer 输出被当作批次优先池化",
    "this Transformer layer was built without batch_first=True, so its output is (S, N, E): "
    "[:, i] and reductions over dim=1 pick or average samples of the batch, not positions of the "
    "sequence; build the layers with batch_first=True for (N, S, E) batches, or pool over dim 0 "
    "(out[0], out.mean(dim=0))",
    "这个 Transformer 层构建时没有传 batch_first=True，输出是 (S, N, E)：[:, i] 和 dim=1 上的归约"
    "取的是批次中的样本，而不是序列中的位置；批次优先的 (N, S, E) 数据应在构建各层时传入 "
    "batch_first=True，否则应在第 0 维上池化（out[0]、out.mean(dim=0)）",
)

_PACKAGES = ("torch.nn", "torch.nn.modules", "torch.nn.modules.transformer")
_LAYERS = frozenset(
    f"{package}.{name}"
    for package in _PACKAGES
    for name in ("TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer")
)
_STACKS = {
    f"{package}.{name}": keyword
    for package in _PACKAGES
    for name, keyword in (
        ("TransformerEncoder", "encoder_layer"),
        ("TransformerDecoder", "decoder_layer"),
    )
}
# batch_first's position among each layer's parameters: given by position, it is not read.
_BATCH_FIRST_POSITION = {
    "Transformer": 10,
    "TransformerEncoderLayer": 6,
    "TransformerDecoderLayer": 6,
}
_REDUCTIONS = frozenset({"mean", "sum", "max", "amax"})
_TORCH_REDUCTIONS = frozenset(f"torch.{name}" for name in _REDUCTIONS)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where the output of a sequence-first Transformer layer is pooled along dimension 1."""
    if context.source and "Transformer" not in context.source:
        return
    if not context.imports.imports_torch():
        return
    found = set()
    for scope in scopes(context.tree, context.statements):
        nodes = [node for node, _ in walk_with_paths(scope)]
        stores = assigned_names(scope, nodes)
        layers = {
            name
            for name, values in stores.items()
            if all(_sequence_first(context, value, stores) for value in values)
        }
        found.update(_pooled(context, nodes, stores, layers, None))
    for cls in (n for n in context.statements if isinstance(n, ast.ClassDef)):
        attributes = _layer_attributes(context, cls)
        if not attributes:
            continue
        for method in (n for n in cls.body if isinstance(n, FUNCTIONS) and n.args.args):
            nodes = [node for node, _ in walk_with_paths(method)]
            stores = assigned_names(method, nodes)
            found.update(_pooled(context, nodes, stores, attributes, method.args.args[0].arg))
    yield from sorted(found)


def _sequence_first(context: Context, value: ast.expr | None, stores: dict) -> bool:
    """Whether ``value`` constructs a Transformer layer (or stack of layers) whose input and
    output are sequence-first: ``batch_first`` not given, or ``False`` written out."""
    value = without_returns_self(value)
    if not isinstance(value, ast.Call):
        return False
    name = context.imports.qualified_name(value.func)
    if name in _STACKS:
        layer = value.args[0] if value.args else _keyword(value, _STACKS[name])
        if isinstance(layer, ast.Name):
            values = stores.get(layer.id)
            return bool(values) and all(_sequence_first(context, v, {}) for v in values)
        return layer is not None and _sequence_first(context, layer, {})
    if name not in _LAYERS:
        return False
    if any(k.arg is None for k in value.keywords) or any(
        isinstance(a, ast.Starred) for a in value.args
    ):
        return False
    if len(value.args) > _BATCH_FIRST_POSITION[name.rpartition(".")[2]]:
        return False
    if (
        _keyword(value, "custom_encoder") is not None
        or _keyword(value, "custom_decoder") is not None
    ):
        return False
    batch_first = _keyword(value, "batch_first")
    return batch_first is None or (
        isinstance(batch_first, ast.Constant) and batch_first.value is False
    )


def _layer_attributes(context: Context, cls: ast.ClassDef) -> set[str]:
    """The attributes of ``self`` that hold a sequence-first layer: assigned one in
    ``__init__`` and nothing else anywhere in the class."""
    values: dict[str, list[bool]] = {}
    in_init: set[str] = set()
    for method in (n for n in cls.body if isinstance(n, FUNCTIONS) and n.args.args):
        this = method.args.args[0].arg
        nodes = [node for node, _ in walk_with_paths(method)]
        stores = None
        judged: set[int] = set()  # targets of plain assignments, judged by their value
        for node in nodes:  # an assignment comes before its targets
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = _attribute_of(target, this)
                    if name is None:
                        continue
                    judged.add(id(target))
                    if stores is None:
                        stores = assigned_names(method, nodes)
                    layer = isinstance(node, ast.Assign | ast.AnnAssign) and _sequence_first(
                        context, node.value, stores
                    )
                    values.setdefault(name, []).append(layer)
                    if method.name == "__init__":
                        in_init.add(name)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                name = _attribute_of(node, this)
                if name is not None and id(node) not in judged:
                    values.setdefault(name, []).append(False)  # for, with, del, unpacking
    return {name for name in in_init if all(values[name])}


def _pooled(
    context: Context, nodes: list, stores: dict, layers: set[str], this: str | None
) -> Iterator[tuple[int, int]]:
    """Each pooling along dimension 1 of a layer call's output, among ``nodes`` (a scope's, in
    source order): the call pooled itself, or a name whose binding last before the pooling is
    a plain assignment of the call. ``layers`` are the names that hold a layer, or the
    attributes of ``this`` (a method's first parameter) that do."""
    bindings: dict[str, list[tuple[tuple[int, int], ast.expr | None]]] = {}
    judged: set[int] = set()
    for node in nodes:  # an assignment comes before its targets
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            after = (node.end_lineno, node.end_col_offset)
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    judged.add(id(target))
                    bindings.setdefault(target.id, []).append((after, node.value))
        elif (
            isinstance(node, ast.Name)
            and not isinstance(node.ctx, ast.Load)
            and id(node) not in judged
        ):
            bindings.setdefault(node.id, []).append(((node.lineno, node.col_offset), None))
    for node in nodes:
        pooled = _pooled_tensor(context, node)
        if pooled is None:
            continue
        if isinstance(pooled, ast.Name):
            at = (node.lineno, node.col_offset)
            before = [value for after, value in bindings.get(pooled.id, ()) if after <= at]
            pooled = before[-1] if before else None
        if _layer_call(pooled, layers, this, stores):
            yield node.lineno, node.col_offset


def _layer_call(node: ast.expr | None, layers: set[str], this: str | None, stores: dict) -> bool:
    """Whether ``node`` calls a sequence-first layer on something other than a batch of one."""
    if not (isinstance(node, ast.Call) and node.args):
        return False
    held = _name_of(node.func) if this is None else _attribute_of(node.func, this)
    if held not in layers:
        return False
    given = node.args[0]
    if isinstance(given, ast.Name):
        values = stores.get(given.id) or ()
        return not any(_batch_of_one(value) for value in values)
    return not _batch_of_one(given)


def _batch_of_one(node: ast.expr | None) -> bool:
    """``x.unsqueeze(1)``, ``x[:, None]``, ``x.view(s, 1, e)`` or ``x.reshape(s, 1, e)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method, arguments = node.func.attr, node.args
        if method == "unsqueeze":
            dim = arguments[0] if arguments else _keyword(node, "dim")
            return _integer(dim) == 1
        if method in ("view", "reshape") and len(arguments) >= 2:
            return _integer(arguments[1]) == 1
        return False
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        elements = node.slice.elts
        return (
            len(elements) >= 2
            and _whole(elements[0])
            and isinstance(elements[1], ast.Constant)
            and elements[1].value is None
        )
    return False


def _pooled_tensor(context: Context, node: ast.AST) -> ast.expr | None:
    """The tensor ``node`` indexes at one position of dimension 1 (``t[:, 0]``) or reduces
    along dimension 1 (``t.mean(dim=1)``, ``torch.mean(t, 1)``); else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        elements = node.slice.elts
        if (
            len(elements) >= 2
            and _whole(elements[0])
            and _integer(elements[1]) is not None
            and all(
                _whole(e) or isinstance(e, ast.Constant) and e.value is ... for e in elements[2:]
            )
        ):
            return node.value
        return None
    if not isinstance(node, ast.Call):
        return None
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in _REDUCTIONS):
        return None
    if context.imports.qualified_name(node.func) in _TORCH_REDUCTIONS:  # torch.mean(t, 1)
        dim = node.args[1] if len(node.args) > 1 else _keyword(node, "dim")
        if node.args and _integer(dim) == 1 and len(node.args) <= 2:
            return node.args[0]
        return None
    dim = node.args[0] if node.args else _keyword(node, "dim")  # t.mean(1)
    if _integer(dim) == 1 and len(node.args) <= 1:
        return node.func.value
    return None


def _whole(node: ast.expr) -> bool:
    """``:``, a slice without bounds nor step."""
    return isinstance(node, ast.Slice) and node.lower is node.upper is node.step is None


def _integer(node: ast.expr | None) -> int | None:
    """The value of an integer literal (``0``, ``-1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _name_of(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _attribute_of(node: ast.expr, this: str) -> str | None:
    """``x`` for ``self.x`` (``this`` is the method's first parameter's name), else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == this
    ):
        return node.attr
    return None
