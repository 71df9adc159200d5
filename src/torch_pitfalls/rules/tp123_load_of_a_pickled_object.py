"""``TP123``: ``torch.load`` without ``weights_only=`` of a checkpoint that holds more than tensors.

.. rubric:: What it does

Reported (at the call): a call of ``torch.load`` (through any import alias) that passes no
``weights_only=`` (and no ``**kwargs`` that could carry it), when the same file shows that what it
loads is more than tensors:

* the file calls ``torch.save`` (or a function of the file named ``*save*`` that passes its
  first argument, or ``*args``, on to ``torch.save``, as ``save_on_master``) with an object that
  ``weights_only=True`` refuses, and the load reads the same path (the same text,
  ``args.snapshot``), or any path when no save of the file writes the load's path. Refused
  objects: a whole module or an optimizer (a class of ``torch.nn`` or ``torch.optim``,
  ``deepcopy(model).half()``, ``model.module``, a model built by ``torchvision.models`` or
  ``timm``); an object of any other class (a call of a capitalised name: ``Namespace(...)``,
  ``TrainConfig(...)``; ``OrderedDict`` and the classes of ``torch`` outside ``torch.nn`` and
  ``torch.optim`` are allowed); ``parser.parse_args()``; a NumPy value (a call of ``numpy``,
  ``.numpy()``); a parameter, global or attribute named ``model``, ``net``, ``network`` or
  ``module`` (or ending in ``_model``, ``_net``); ``args`` / ``opt`` (a parameter or global) as a
  value in the checkpoint, or saved alone in a file that calls ``parse_args``. Each directly, or
  as a value of a ``dict`` display, a ``dict(...)`` call, or a name saved (its last assignment
  before the save, in the same function, and its item assignments ``ckpt["x"] = v``);
* or the loaded object is used as an object, in the same function: a name assigned only
  ``torch.load(...)``, or a string-keyed item of one (``decoder = ckpt["decoder"]``, then perhaps
  ``decoder = decoder.to(device)``), is called (``model(x)``) or has ``.eval()``, ``.train()``,
  ``.parameters()``, ``.named_parameters()``, ``.modules()``, ``.children()``, ``.zero_grad()``,
  ``.step()`` or ``.forward`` used on it (the call itself too: ``torch.load(f).eval()``), or an
  attribute read from its key ``"args"``, ``"opt"``, ``"config"``, ``"cfg"`` or ``"hparams"``
  (``ckpt["args"].lr``).

Not reported: a load passed straight to ``load_state_dict(...)`` (a state dict); a load inside
``with torch.serialization.safe_globals(...)`` or ``with pytest.raises(...)`` (the code expects
the error); a load after a call of ``add_safe_globals`` in the same function, and, when the
module's own code calls it, every load in a function and the later loads at module level; every
load of a file that imports from a project's module named ``safe_globals`` (as Megatron's
``megatron.core.safe_globals``, which allowlists its classes when imported). Checked within one
file: a checkpoint saved by one file and loaded by another (``train.py`` and ``predict.py``) is
found only through the second form, and a helper that wraps ``torch.load`` is not followed.

.. rubric:: Why is this bad?

Since PyTorch 2.6 ``torch.load`` defaults to ``weights_only=True`` and refuses every global that
is not a tensor, a state dict or a plain container: a pickled module, optimizer, ``Namespace`` or
NumPy value fails with ``UnpicklingError: Weights only load failed``. ``weights_only=False`` loads
it, and runs any code the file names.

.. rubric:: Example

.. code-block:: python

    import torch

    torch.save(model, "model.pt")
    model = torch.load("model.pt")

.. rubric:: Use instead

.. code-block:: python

    import torch

    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt"))
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, own_nodes, scopes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP123",
    "lint",
    "torch-load-weights-only",
    "torch.load of a checkpoint that holds more than tensors",
    "torch.load 加载的检查点不只有张量",
    "this file saves (or uses) more than tensors in the checkpoint (a module, optimizer, "
    "Namespace or NumPy value), which torch.load refuses since PyTorch 2.6 (weights_only=True): "
    "save state dicts and plain values, or pass weights_only=False for a file you trust",
    "此文件在检查点中保存（或使用）了张量以外的对象（模块、优化器、Namespace 或 NumPy 值），"
    "PyTorch 2.6 起 torch.load 默认 weights_only=True 会拒绝加载：应保存状态字典和普通值，"
    "或对可信文件传入 weights_only=False",
)

_LOAD = frozenset({"torch.load", "torch.serialization.load"})
_SAVE = frozenset({"torch.save", "torch.serialization.save"})
_RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "eval", "train", "float", "double", "half", "bfloat16", "module"}
)
_MODULE_USES = frozenset(
    {
        "eval",
        "train",
        "parameters",
        "named_parameters",
        "modules",
        "children",
        "forward",
        "zero_grad",
        "step",
    }
)
_COPIES = frozenset({"deepcopy", "de_parallel", "unwrap_model"})
_MODULE_NAME = re.compile(r"(?:\w+_)?(?:model|net|network)|module", re.IGNORECASE)
_PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
_MODEL_BUILDERS = ("torchvision.models.", "timm.create_model", "timm.models.")
_ALLOWED_CLASSES = frozenset({"OrderedDict", "Counter", "Tensor"})
_OBJECT_KEYS = frozenset({"args", "opt", "config", "cfg", "hparams"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``torch.load`` without ``weights_only=`` loads what the file shows is not tensors."""
    if "load" not in context.attributes and "load" not in context.imports.names:
        return
    if not context.imports.imports_torch():
        return
    imports = context.imports
    if (
        context.source
        and "torch.load" not in context.source
        and not any(q in _LOAD or (q == "torch" and k != "torch") for k, q in imports.names.items())
    ):
        return  # the common case, and a cheap one: no load, and no other name for torch
    if any(
        ".safe_globals" in name and not name.startswith("torch.") for name in imports.names.values()
    ):
        return  # the project's own allowlist module (Megatron's megatron.core.safe_globals)
    saves: dict[str, bool] = {}  # the text of a save's path -> whether any save there is unsafe
    unsafe_save = False
    loads: list[tuple[ast.Call, bool, bool]] = []  # (load, at module level, used as an object)
    allows = 1 << 30  # the first line of an ``add_safe_globals`` of the module's own code
    wrappers = _save_wrappers(context)
    lines = context.source.splitlines()
    for scope in scopes(context.tree, context.statements):
        if lines and scope is not context.tree:
            text = "\n".join(lines[scope.lineno - 1 : scope.end_lineno])
            if "load" not in text and "save" not in text:
                continue  # the common case: a function that neither saves nor loads
        facts = _Scope(context, scope, "parse_args" in context.attributes, wrappers)
        for path, unsafe in facts.saves:
            saves[path] = saves.get(path, False) or unsafe
            unsafe_save |= unsafe
        loads += [(call, scope is context.tree, call in facts.used) for call in facts.loads]
        if scope is context.tree:
            allows = facts.allows
    for call, at_module_level, used in loads:
        if call.lineno > allows or (allows < 1 << 30 and not at_module_level):
            continue  # the module allowlisted its classes before this load runs
        path = _path(call, 0)
        if used or (saves.get(path, unsafe_save) if path is not None else unsafe_save):
            yield call.lineno, call.col_offset


def _is_torch_class(context: Context, node: ast.expr, package: str = "torch.nn.") -> bool:
    name = context.imports.qualified_name(node)
    if name is None or not name.startswith(package) or name in _PARAMETERS:
        return False
    return name.rpartition(".")[2][:1].isupper()


class _Scope:
    """What one function (or the module's own code) saves and loads."""

    def __init__(self, context: Context, scope: ast.AST, parses: bool, wrappers: frozenset):
        self.context = context
        self.parses = parses
        self.values: dict[str, list[ast.expr]] = {}  # name -> values assigned (items too)
        self.loads: list[ast.Call] = []
        self.used: list[ast.Call] = []  # the loads whose result is used as an object
        self.saves: list[tuple[str | None, bool]] = []  # (path text, whether unsafe)
        self.line = 0
        saves: list[ast.Call] = []
        loaded: dict[str, list[ast.Call]] = {}  # name -> the loads assigned to it
        items: dict[str, ast.Call] = {}  # name -> the load it is an item of (ckpt["model"])
        uses: list[tuple[str, ast.AST]] = []  # (name, node) of a name used as a module
        state_dict_args: set[int] = set()
        allowed: set[int] = set()  # the nodes under ``with safe_globals(...)``, ``pytest.raises``
        self.allows = 1 << 30  # the first line of a call of ``add_safe_globals``
        imports = context.imports
        for node in own_nodes(scope.body):
            if isinstance(node, ast.With) and any(
                _allowing(imports, item.context_expr) for item in node.items
            ):
                allowed.update(id(inner) for inner in ast.walk(node))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.values.setdefault(target.id, []).append(node.value)
                        if _is_load(imports, node.value):
                            loaded.setdefault(target.id, []).append(node.value)
                        source = _item_of(imports, node.value, loaded)
                        if source is not None:
                            items[target.id] = source
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.values.setdefault(f"{target.value.id}[]", []).append(node.value)
            elif isinstance(node, ast.Call):
                name = imports.qualified_name(node.func)
                if _last(node.func) == "add_safe_globals":
                    self.allows = min(self.allows, node.lineno)
                elif name in _LOAD:
                    if (
                        node.lineno < self.allows
                        and id(node) not in state_dict_args
                        and id(node) not in allowed
                        and _without_weights_only(node)
                    ):
                        self.loads.append(node)
                elif name in _SAVE or (node.args and _last(node.func) in wrappers):
                    saves.append(node)
                elif isinstance(node.func, ast.Attribute):
                    if node.func.attr == "load_state_dict":
                        state_dict_args.update(id(a) for a in node.args)
                    elif node.func.attr in _MODULE_USES:
                        uses.append(("", node.func.value))
                elif isinstance(node.func, ast.Name):
                    uses.append((node.func.id, node.func))
            elif isinstance(node, ast.Attribute):
                if node.attr == "forward":
                    uses.append(("", node.value))
                elif _object_key(node.value) and isinstance(node.value.value, ast.Name):
                    uses.append((node.value.value.id, node))  # ckpt["args"].lr: a Namespace
        for save in saves:
            self.line = save.lineno  # names are judged by what they were assigned before
            obj = save.args[0] if save.args else _keyword(save, "obj")
            unsafe = obj is not None and self._unsafe(obj, depth=0)
            self.saves.append((_path(save, 1), unsafe))
        loading = {id(call) for call in self.loads}
        for name, node in uses:
            if not name and isinstance(node, ast.Name):
                name = node.id
            if name:
                calls = loaded.get(name, [])
                if calls and len(calls) == len(self.values.get(name, ())):
                    for call in calls:
                        if id(call) in loading:
                            self.used.append(call)
                source = items.get(name)
                if (
                    source is not None
                    and id(source) in loading
                    and all(_item_or_itself(v, name) for v in self.values.get(name, ()))
                ):
                    self.used.append(source)  # decoder = ckpt["decoder"]; decoder.eval()
            elif id(node) in loading:
                self.used.append(node)

    def _unsafe(self, node: ast.expr, depth: int) -> bool:
        """Whether ``weights_only=True`` refuses the saved value ``node`` (as far as seen)."""
        if depth > 3:
            return False
        node = _unwrapped(node)
        imports = self.context.imports
        if isinstance(node, ast.Dict):
            return any(v is not None and self._unsafe(v, depth + 1) for v in node.values)
        if isinstance(node, ast.List | ast.Tuple):
            return any(self._unsafe(v, depth + 1) for v in node.elts)
        if isinstance(node, ast.Call):
            func = node.func
            name = imports.qualified_name(func) or ""
            if name in ("dict", "collections.OrderedDict") or (
                isinstance(func, ast.Name) and func.id in ("dict", "OrderedDict")
            ):
                return any(self._unsafe(k.value, depth + 1) for k in node.keywords if k.arg)
            if name.startswith("numpy.") or (
                isinstance(func, ast.Attribute) and func.attr == "numpy"
            ):
                return True
            if isinstance(func, ast.Attribute) and func.attr == "parse_args":
                return True
            if name == "argparse.Namespace":
                return True
            if name.startswith(_MODEL_BUILDERS):  # torchvision.models.resnet18(), timm
                return True
            if name.startswith("torch."):  # torch.Tensor(...), torch.Size(...): allowed
                return _is_torch_class(self.context, func) or _is_torch_class(
                    self.context, func, "torch.optim."
                )
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return last[:1].isupper() and last not in _ALLOWED_CLASSES  # an object of a class
        if isinstance(node, ast.Name):
            values = [v for v in self.values.get(node.id, []) if v.lineno <= self.line][-1:]
            if depth < 3 and values:  # the last value assigned before the save
                items = self.values.get(f"{node.id}[]", [])
                return any(self._unsafe(v, depth + 1) for v in (*values, *items))
            # not assigned here (a parameter, a global): judged by its name
            return bool(_MODULE_NAME.fullmatch(node.id)) or (
                node.id in ("args", "opt") and (self.parses or depth > 0)
            )
        if isinstance(node, ast.Attribute):
            return bool(_MODULE_NAME.fullmatch(node.attr))
        return False


def _unwrapped(node: ast.expr) -> ast.expr:
    """``model`` for ``deepcopy(model).half()``, ``model.module.to("cpu")``…"""
    while True:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _RETURNS_SELF:
                node = func.value
                continue
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _COPIES and len(node.args) == 1:
                node = node.args[0]
                continue
        elif isinstance(node, ast.Attribute) and node.attr == "module":
            node = node.value
            continue
        return node


def _save_wrappers(context: Context) -> frozenset[str]:
    """The functions of the file, named ``*save*``, that pass what they are given on to
    ``torch.save`` (``def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)``)."""
    found = set()
    for function in context.statements:
        if not isinstance(function, FUNCTIONS) or "save" not in function.name:
            continue
        params = [a.arg for a in function.args.args if a.arg not in ("self", "cls")]
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and context.imports.qualified_name(node.func) in _SAVE:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Starred) or (
                    isinstance(first, ast.Name) and params and first.id == params[0]
                ):
                    found.add(function.name)
    return frozenset(found)


def _item_of(imports, value: ast.expr, loaded: dict) -> ast.Call | None:
    """The load that ``value`` is a string-keyed item of: ``ckpt["model"]`` of ``ckpt =
    torch.load(f)``, or ``torch.load(f)["model"]``."""
    if not (
        isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, str)
    ):
        return None
    inner = value.value
    if _is_load(imports, inner):
        return inner
    if isinstance(inner, ast.Name) and loaded.get(inner.id):
        return loaded[inner.id][-1]
    return None


def _item_or_itself(value: ast.expr, name: str) -> bool:
    """``ckpt[...]`` or ``name.to(...)`` / ``name.cuda()``: the same object, still."""
    if isinstance(value, ast.Subscript):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _RETURNS_SELF
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == name
    )


def _last(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _allowing(imports, node: ast.expr) -> bool:
    """``torch.serialization.safe_globals(...)`` (loads allowed), ``pytest.raises(...)`` (the code
    expects the load to fail)."""
    if not isinstance(node, ast.Call):
        return False
    return (
        _last(node.func) == "safe_globals" or imports.qualified_name(node.func) == "pytest.raises"
    )


def _object_key(node: ast.expr) -> bool:
    """``x["args"]``, ``x["opt"]``, ``x["config"]``: a key that holds an object, not tensors."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in _OBJECT_KEYS
    )


def _path(call: ast.Call, position: int) -> str | None:
    """The text of the path a save (``position`` 1) or a load (0) is given (``f``,
    ``args.resume``), None if it is given no path."""
    if len(call.args) > position:
        return ast.unparse(call.args[position])
    found = _keyword(call, "f")
    return None if found is None else ast.unparse(found)


def _is_load(imports, node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and imports.qualified_name(node.func) in _LOAD


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _without_weights_only(call: ast.Call) -> bool:
    return all(k.arg is not None and k.arg != "weights_only" for k in call.keywords) and not any(
        isinstance(a, ast.Starred) for a in call.args
    )
