"""``TP112``: ``requires_grad`` assigned on a module (``model.backbone.requires_grad = False``).

.. rubric:: What it does

An assignment ``<module>.requires_grad = <anything>`` where ``<module>`` is known to be a
module. Reported at the assignment. Known to be a module:

* a name that, in the same function (or at module level), is only ever assigned a construction
  of a module (a class of ``torch.nn``, not ``nn.Parameter``, or a class of the same file that
  derives from one, possibly followed by ``.to(...)``, ``.eval()``…), or only ever bound by a
  loop over ``<x>.modules()``, ``children()``, ``named_modules()`` or ``named_children()``;
* ``self.<attr>`` in a method of a class, when every assignment of ``self.<attr>`` in the class
  constructs a module, or when every one is a call of something else (``build_backbone(cfg)``,
  ``torchvision.models.resnet18()``) and the attribute is named like a part of a model (below);
  ``<name>.<attr>`` when ``<name>`` is a construction of a class of the same file and that
  class's ``self.<attr>`` is a module by the same test;
* ``<module>[i]`` (an item of a ``nn.Sequential`` or ``nn.ModuleList``);
* by its name, when the checker cannot tell what it is bound to: ``model``, ``net``,
  ``network`` and ``<prefix>_model``, ``<prefix>_net``; and an attribute of a module named like
  a part of a model (``backbone``, ``encoder``, ``decoder``, ``head``, ``classifier``, ``fc``,
  ``features``, ``embeddings``, ``transformer``, ``visual``, ``lm_head``, ``module``, and the
  model names above).

Not reported: ``p.requires_grad = False`` on a parameter (in ``for p in model.parameters()``), on
``self.weight``, ``model.fc.weight`` and any tensor; ``self.requires_grad`` (a module's own
option); a name assigned a tensor, a literal or the result of a function of torch, or assigned
different things; a name that is a parameter of the function and not named like a model; an
attribute named otherwise (``model.cls_token``, a parameter as often as a module); an attribute
of ``self`` assigned anything but calls (a parameter of ``__init__``: ``self.model = model``).

.. rubric:: Why is this bad?

A tensor has a ``requires_grad`` flag; a module does not. The assignment creates an ordinary
Python attribute on the module object that nothing in PyTorch reads: no error, no warning, and
every parameter of the module still requires grad and is trained by the next step.

.. rubric:: Example

.. code-block:: python

    from torch import nn

    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    model[0].requires_grad = False

.. rubric:: Use instead

.. code-block:: python

    from torch import nn

    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    model[0].requires_grad_(False)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import PARAMETERS, constructed_class, module_classes
from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED
from torch_pitfalls.lint.context import Context, child_statements
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP112",
    "lint",
    "freezing-layers",
    "requires_grad assigned on a module",
    "在模块上赋值 requires_grad",
    "module.requires_grad = False sets a plain Python attribute that nothing reads: every "
    "parameter still requires grad and trains; call module.requires_grad_(False), or set "
    "p.requires_grad on each of module.parameters()",
    "module.requires_grad = False 只是设置了一个没人读取的普通 Python 属性：所有参数仍然需要"
    "梯度并继续训练；应调用 module.requires_grad_(False)，或对 module.parameters() 中的每个参数"
    "设置 p.requires_grad",
)

_MODULE_LOOPS = frozenset({"modules", "children", "named_modules", "named_children"})
_MODEL_NAME = re.compile(r"(\w+_)?(model|net|network)")
_PART_NAME = re.compile(
    r"backbone|encoder|decoder|heads?|classifier|fc|features|body|neck|stem|trunk|bert|"
    r"transformer|visual|text_model|vision_model|embeddings|embed_tokens|lm_head|pooler|"
    r"module|(\w+_)?(model|net|encoder|decoder|head|backbone)"
)
# Functions of torch that may return a module (the rest return tensors and other values).
_MAY_RETURN_MODULES = ("torch.nn.", "torch.hub.", "torch.load", "torch.jit.", "torch.compile")
_MODULE, _OTHER, _CALLED = "module", "other", "called"


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``requires_grad`` is assigned on a module."""
    if "requires_grad" not in context.attributes or not context.imports.imports_torch():
        return
    if not any(_target(node) is not None for node in context.statements):
        return
    checker = _Checker(context)
    found = set()
    for scope in [context.tree, *(n for n in context.statements if isinstance(n, FUNCTIONS))]:
        found.update(checker.check_scope(scope))
    yield from sorted(found)


def _target(node: ast.stmt) -> ast.expr | None:
    """``X`` of a statement ``X.requires_grad = ...``."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                return target.value
    return None


def _own_statements(scope: ast.AST) -> Iterator[ast.stmt]:
    """The statements of a scope, not those of the functions and classes in it."""
    stack = list(child_statements(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, NESTED):
            stack.extend(child_statements(node))


class _Checker:
    def __init__(self, context: Context) -> None:
        self.context = context
        self.classes = {n.name: n for n in context.statements if isinstance(n, ast.ClassDef)}
        self.modules = module_classes(context)
        self.attributes: dict[str, dict[str, bool]] = {}  # class -> attribute -> all modules
        self.method_class: dict[int, ast.ClassDef] = {}
        for cls in self.classes.values():
            for child in cls.body:
                if isinstance(child, FUNCTIONS):
                    self.method_class[id(child)] = cls

    def class_attributes(self, name: str) -> dict[str, str | None]:
        """``attribute -> kind`` of ``self.<attribute>`` in a class: ``_MODULE`` when every
        assignment constructs a module, ``_CALLED`` when every one is a call the checker cannot
        tell (``build_backbone(cfg)``), else ``_OTHER``."""
        if name not in self.attributes:
            found: dict[str, set] = {}
            cls = self.classes[name]
            for method in cls.body:
                if not isinstance(method, FUNCTIONS) or not method.args.args:
                    continue
                me = method.args.args[0].arg
                for node in _own_statements(method):
                    targets = []
                    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    elif isinstance(node, ast.AugAssign):
                        targets = [node.target]
                    for target in targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == me
                        ):
                            kind = _OTHER
                            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
                                node.value, ast.Call
                            ):
                                kind = self.value_kind(node.value)
                                kind = _CALLED if kind is None else kind
                                kind = _MODULE if kind in self.classes else kind
                            found.setdefault(target.attr, set()).add(kind)
            self.attributes[name] = {
                attribute: kinds.pop() if len(kinds) == 1 else _OTHER
                for attribute, kinds in found.items()
            }
        return self.attributes[name]

    def check_scope(self, scope: ast.AST) -> Iterator[tuple[int, int]]:
        own = list(_own_statements(scope))
        targets = [(node, _target(node)) for node in own]
        targets = [(node, target) for node, target in targets if target is not None]
        if not targets:
            return
        names = self.name_kinds(scope, own)
        cls = self.method_class.get(id(scope))
        me = scope.args.args[0].arg if cls is not None and scope.args.args else None
        for node, target in targets:
            if self.kind(target, names, cls, me) == _MODULE:
                yield node.lineno, node.col_offset

    def name_kinds(self, scope: ast.AST, own: list) -> dict[str, list]:
        """``name -> kinds of its bindings``: ``_MODULE``, a class of this file, or ``_OTHER``."""
        kinds: dict[str, list] = {}
        for node in own:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                value_kind = self.value_kind(node.value)
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                            kind = value_kind if isinstance(target, ast.Name) else None
                            kinds.setdefault(name.id, []).append(kind)
            elif isinstance(node, ast.For | ast.AsyncFor):
                loop = _module_loop(node)
                for name in ast.walk(node.target):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        kind = _MODULE if name is loop else None
                        kinds.setdefault(name.id, []).append(kind)
            elif isinstance(node, ast.With | ast.AsyncWith | ast.AugAssign | ast.Import):
                for name in ast.walk(node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        kinds.setdefault(name.id, []).append(_OTHER)
        if isinstance(scope, FUNCTIONS):
            arguments = scope.args
            every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            for argument in (*every, arguments.vararg, arguments.kwarg):
                if argument is not None:
                    kinds.setdefault(argument.arg, []).append(None)  # unknown
        return kinds

    def value_kind(self, value: ast.expr) -> str | None:
        """``_MODULE`` or a class of this file for a construction of a module, ``_OTHER`` for
        a value known not to be one (a literal, a call of a function of torch), else None."""
        built = constructed_class(self.context, value)
        if built is not None:
            return built if built in self.classes else _MODULE
        if isinstance(value, ast.Constant | ast.JoinedStr | ast.List | ast.Tuple | ast.Dict):
            return _OTHER
        if isinstance(value, ast.Call):
            name = self.context.imports.qualified_name(value.func) or ""
            if name in PARAMETERS or (
                name.startswith("torch.") and not name.startswith(_MAY_RETURN_MODULES)
            ):
                return _OTHER
        return None

    def kind(self, node: ast.expr, names: dict, cls, me) -> str | None:
        """``_MODULE``, a class of this file, ``_OTHER`` or None (unknown) for an expression."""
        if isinstance(node, ast.Name):
            if node.id == me:
                return None
            found = set(names.get(node.id, [None]))
            if len(found) == 1 and None not in found:
                return found.pop()
            if found == {None}:  # bound to what the checker cannot tell: named like a model?
                return _MODULE if _MODEL_NAME.fullmatch(node.id) else None
            return None  # bound to different things
        if isinstance(node, ast.Subscript):
            owner = self.kind(node.value, names, cls, me)
            return _MODULE if owner == _MODULE or owner in self.classes else None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == me and cls is not None:
                kind = self.class_attributes(cls.name).get(node.attr)
                if kind == _MODULE or (kind == _CALLED and _named_like_a_part(node.attr)):
                    return _MODULE
                return None
            owner = self.kind(node.value, names, cls, me)
            if owner in self.classes:
                kind = self.class_attributes(owner).get(node.attr)
                if kind == _MODULE or (kind == _CALLED and _named_like_a_part(node.attr)):
                    return _MODULE
                return None
            if owner == _MODULE and _named_like_a_part(node.attr):
                return _MODULE
        return None


def _named_like_a_part(name: str) -> bool:
    return bool(_PART_NAME.fullmatch(name) or _MODEL_NAME.fullmatch(name))


def _module_loop(node: ast.For | ast.AsyncFor) -> ast.Name | None:
    """The name a loop over ``x.modules()`` (``named_modules()``…) binds to each module."""
    call = node.iter
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _MODULE_LOOPS
    ):
        return None
    target = node.target
    if call.func.attr.startswith("named_"):
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        else:
            return None
    return target if isinstance(target, ast.Name) else None
