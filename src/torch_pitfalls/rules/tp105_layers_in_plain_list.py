"""``TP105``: layers kept in a plain Python list or dict attribute of an ``nn.Module``.

.. rubric:: What it does

Reported (at the assignment or the ``append`` call), in a method of a class that derives from
``torch.nn.Module`` (any class of ``torch.nn`` as a base, ``nn.Module``, ``nn.Sequential``…, or a
class of the same module that derives from one, at any depth), with ``self`` the method's first
parameter:

* ``self.x = [...]``, ``(...)`` or ``{...}`` (a list, tuple, set or dict display) with an item
  (for a dict, a value) that constructs a layer, and the comprehensions
  ``self.x = [layer for ...]`` and ``self.x = {k: layer for ...}``;
* ``self.x.append(layer)``, ``self.x.insert(i, layer)`` and ``self.x[key] = layer`` where the same
  class assigns ``self.x = []`` (or ``{}``, ``list()``, ``dict()``).

"Constructs a layer" is a call of a class of ``torch.nn`` (``nn.Linear(...)``; a name starting
with a capital letter, so not ``nn.functional``) or of a class of the same module that derives
from ``nn.Module``. A list of ``nn.Parameter`` objects is not reported: code meant for TorchScript
keeps parameters in a typed list on purpose and loads them by hand (NVIDIA's Transformer-XL
inference code), which the checker cannot tell from the bug.

Not reported: when the class registers the attribute some other way, that is, when ``self.x`` is
an argument of a call of ``torch.nn`` (``nn.ModuleList(self.x)``, ``nn.Sequential(*self.x)``) or
of ``add_module``, ``register_module``, ``register_parameter``, ``register_buffer`` or ``setattr``,
when the class calls one of those four methods or ``setattr`` anywhere (a loop that registers the
items), or when ``self.x`` is assigned anything else elsewhere in the class; a list of existing
modules (``self.teachers = [teacher]``, a common way to keep a module out of the model on
purpose); a local variable (``layers = [...]; self.net = nn.Sequential(*layers)``); classes whose
base is not known to be a module (imported from another package than torch).

.. rubric:: Why is this bad?

Layers in a plain list or dict are not registered: they are missing from ``parameters()``,
``state_dict()``, ``to()`` and ``eval()``, so they are not trained, saved or moved.

.. rubric:: Example

.. code-block:: python

    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(4, 4), nn.Linear(4, 2)]

.. rubric:: Use instead

.. code-block:: python

    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 2)])
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, last_name, method_call
from torch_pitfalls.lint.context import Context, statements
from torch_pitfalls.rules import Rule

RULE = Rule(
    "TP105",
    "lint",
    "modulelist-vs-list",
    {"en": "layers in a plain list or dict", "zh_CN": "把层放在普通的 list 或 dict 中"},
    {
        "en": "layers kept in a Python list or dict attribute are not registered: they are "
        "missing from parameters(), state_dict(), to() and eval(); use nn.ModuleList or "
        "nn.ModuleDict (nn.ParameterList for parameters)",
        "zh_CN": "放在 Python list 或 dict 属性中的层不会被注册：parameters()、state_dict()、"
        "to() 和 eval() 都看不到它们；应改用 nn.ModuleList 或 nn.ModuleDict"
        "（参数用 nn.ParameterList）",
    },
)

_REGISTERING = frozenset(
    {"add_module", "register_module", "register_parameter", "register_buffer", "setattr"}
)
_EMPTY_CALLS = frozenset({"list", "dict"})
_PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a class of ``nn.Module`` keeps layers in a plain list or dict attribute."""
    if not context.imports.imports_torch():
        return
    classes = [n for n in context.statements if isinstance(n, ast.ClassDef)]
    modules: set[str] = set()
    changed = True
    while changed:  # classes of this module that derive from a module class, at any depth
        changed = False
        for node in classes:
            if node.name not in modules and any(
                _is_torch_class(context, base) or _local_name(base) in modules
                for base in node.bases
            ):
                modules.add(node.name)
                changed = True
    for node in classes:
        if node.name in modules:
            yield from _check_class(context, node, modules)


def _is_torch_class(context: Context, node: ast.expr) -> bool:
    name = context.imports.qualified_name(node)
    if name is None or not name.startswith("torch.nn."):
        return False
    return name.rpartition(".")[2][:1].isupper()


def _local_name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _is_layer(context: Context, node: ast.expr, modules: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if context.imports.qualified_name(node.func) in _PARAMETERS:
        return False
    return _is_torch_class(context, node.func) or _local_name(node.func) in modules


def _holds_layers(context: Context, value: ast.expr, modules: set[str]) -> bool:
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return any(_is_layer(context, item, modules) for item in value.elts)
    if isinstance(value, ast.Dict):
        return any(_is_layer(context, item, modules) for item in value.values)
    if isinstance(value, ast.ListComp | ast.SetComp):
        return _is_layer(context, value.elt, modules)
    if isinstance(value, ast.DictComp):
        return _is_layer(context, value.value, modules)
    return False


def _is_empty(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _EMPTY_CALLS
        and not value.args
        and not value.keywords
    )


def _self_attribute(node: ast.expr, selves: set[str]) -> str | None:
    """``x`` for ``self.x`` (any name of ``selves``), else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in selves
    ):
        return node.attr
    return None


def _check_class(context: Context, cls: ast.ClassDef, modules: set[str]) -> Iterator[tuple]:
    methods = [n for n in cls.body if isinstance(n, FUNCTIONS)]
    selves = {m.args.args[0].arg for m in methods if m.args.args}
    if not selves:
        return
    stores: dict[str, list[ast.expr]] = {}  # attribute -> values assigned to self.<attribute>
    candidates: list[tuple[str, ast.AST]] = []  # (attribute, node to report)
    filled: list[tuple[str, ast.AST]] = []  # (attribute, append / item assignment of a layer)
    for method in methods:  # statements only: cheap, and enough to find the candidates
        for node in statements(method):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = _self_attribute(target, selves)
                    if name is not None:
                        stores.setdefault(name, []).append(node.value)
                        if _holds_layers(context, node.value, modules):
                            candidates.append((name, node))
                    elif isinstance(target, ast.Subscript):
                        name = _self_attribute(target.value, selves)
                        if name is not None and _is_layer(context, node.value, modules):
                            filled.append((name, node))
            elif isinstance(node, ast.Expr):
                call = node.value
                for method_name, position in (("append", 0), ("insert", 1)):
                    if (
                        method_call(call, method_name)
                        and len(call.args) == position + 1
                        and _is_layer(context, call.args[position], modules)
                    ):
                        name = _self_attribute(call.func.value, selves)
                        if name is not None:
                            filled.append((name, call))
    if not candidates and not filled:
        return
    registered: set[str] = set()
    for method in methods:
        for node in ast.walk(method):
            if isinstance(node, ast.Call):
                if last_name(node.func) in _REGISTERING:
                    registered.add("*")
                passed = [
                    _self_attribute(a.value if isinstance(a, ast.Starred) else a, selves)
                    for a in [*node.args, *(k.value for k in node.keywords)]
                ]
                passed = [name for name in passed if name is not None]
                if passed and _is_torch_class(context, node.func):
                    registered.update(passed)
    if "*" in registered:
        return
    found = set()
    for name, node in candidates:
        if name not in registered and len(stores[name]) == 1:
            found.add((node.lineno, node.col_offset))
    for name, node in filled:
        values = stores.get(name, [])
        if name not in registered and len(values) == 1 and _is_empty(values[0]):
            found.add((node.lineno, node.col_offset))
    yield from sorted(found)
