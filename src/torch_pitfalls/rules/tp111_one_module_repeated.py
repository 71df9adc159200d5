"""``TP111``: one module instance repeated ``n`` times (``[block] * n``) (opt-in).

.. rubric:: What it does

Reported (at the repetition), where the repeated item is one module instance:

* ``[m] * n`` and ``n * [m]`` (a list or tuple display of one or more items, each an
  instance, one at least with state: ``[nn.ReLU(), nn.Linear(h, h)] * n``), wherever it
  stands: ``nn.ModuleList([m] * n)``, ``nn.Sequential(*[m] * n)``, ``layers = [m] * n``;
* ``[m for _ in range(n)]``, and the same generator expression or set comprehension, whose item
  is a name the comprehension does not bind (``nn.ModuleList(m for _ in range(n))``).

"One module instance" is a construction of a module (a class of ``torch.nn`` or a class of
the same file that derives from one, possibly followed by ``.to(...)`` and the other methods
that return the module), a name that, in the same function (or at module level), is only ever
assigned such a construction, or ``copy.deepcopy`` of either (one copy, repeated).

Not reported: ``[nn.Linear(4, 4) for _ in range(n)]`` and ``[copy.deepcopy(m) for _ in
range(n)]`` (a new module each time); modules without parameters or buffers, which share
nothing when repeated: those of ``torch.nn`` (activations, dropout, pooling, padding,
``nn.Identity``, ``nn.Flatten``, ``nn.Upsample``, the losses) and the file's own classes whose
methods assign no attribute the result of a call and register nothing; ``[m] * 1``; a name
that is a parameter of the function or is assigned anything else; modules built by a function
or by a class imported from another package; sharing meant and said so, in the test of an
``if`` around the repetition (``if self.weight_sharing:``) or in the name of the function it
is in (words such as "share", "tie", "same layer"; comments are not read: flake8 gives the
checker the tree alone).

Opt-in: in real code, one block repeated on purpose (a looped or "universal" transformer, a
test of shared modules) is far more common than the mistake, and not always said in a flag.

.. rubric:: Why is this bad?

``[m] * n`` repeats a reference, not the module: the ``n`` entries are one module, with one set
of weights, applied ``n`` times. ``nn.ModuleList`` registers it once, so ``parameters()`` and
the parameter count are those of one block, and every "layer" is trained as the same layer.

.. rubric:: Example

.. code-block:: python

    from torch import nn

    blocks = nn.ModuleList([nn.Linear(64, 64)] * 4)

.. rubric:: Use instead

.. code-block:: python

    from torch import nn

    blocks = nn.ModuleList([nn.Linear(64, 64) for _ in range(4)])
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.modules import (
    assigned_names,
    constructed_class,
    module_classes,
)
from torch_pitfalls.lint.analyses.scopes import scopes, walk_with_paths
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP111",
    "lint",
    "modulelist-vs-list",
    "one module repeated n times",
    "同一个模块实例重复 n 次",
    "[m] * n repeats one module instance, not copies: the n entries share one set of weights "
    "and are registered once; build a new module for each, [Block() for _ in range(n)] (or "
    "copy.deepcopy(m) in the comprehension)",
    "[m] * n 重复的是同一个模块实例而不是副本：n 个条目共享同一组权重，也只注册一次；"
    "应为每个条目构造新模块 [Block() for _ in range(n)]（或在推导式中用 copy.deepcopy(m)）",
    default=False,
)

# Where a repetition may be: a list times something, or a comprehension of a bare name.
_REPETITION = re.compile(r"\]\s*\*|\*\s*\[|[\[(]\s*\w+\s+for\s")
_DEEPCOPY = frozenset({"copy.deepcopy"})
# Classes of torch.nn without parameters or buffers: repeating one shares nothing.
_STATELESS = re.compile(
    r"Identity|Flatten|Unflatten|(Leaky|P)?ReLU6?|R?ReLU|[CS]?ELU|GELU|SiLU|Mish|Sigmoid|Tanh"
    r"|Soft(max|max2d|min|plus|sign|shrink)|LogSoftmax|LogSigmoid|Hard(tanh|sigmoid|swish|shrink)"
    r"|Tanhshrink|Threshold|GLU|(Alpha|FeatureAlpha)?Dropout\d?d?|(Adaptive)?(Max|Avg)Pool\dd"
    r"|LPPool\dd|FractionalMaxPool\dd|MaxUnpool\dd|Upsample|Upsampling\w+|Pixel(Un)?[Ss]huffle"
    r"|ChannelShuffle|(Zero|Constant|Reflection|Replication|Circular)Pad\dd|CosineSimilarity"
    r"|PairwiseDistance|Fold|Unfold|\w*Loss"
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where one module instance is repeated ``n`` times."""
    if context.source and not _REPETITION.search(context.source):
        return
    if not context.imports.imports_torch():
        return
    stateful = _stateful_classes(context)
    found = set()
    for scope in scopes(context.tree, context.statements):
        walked = list(walk_with_paths(scope))
        candidates = [(n, path) for n, path in walked if isinstance(n, _CANDIDATES)]
        if not candidates or _sharing(getattr(scope, "name", "")):
            continue
        nodes = [node for node, _ in walked]
        stores = None
        for node, path in candidates:
            items = _repeated(node)
            if not items:
                continue
            if stores is None and any(isinstance(item, ast.Name) for item in items):
                stores = assigned_names(scope, nodes)
            kinds = [_instance(context, item, stores, stateful) for item in items]
            if None in kinds or _STATEFUL not in kinds:
                continue
            if _on_purpose(path, nodes):
                continue
            found.add((node.lineno, node.col_offset))
    yield from sorted(found)


_CANDIDATES = (ast.BinOp, ast.ListComp, ast.GeneratorExp, ast.SetComp)
_STATEFUL, _STATELESS_INSTANCE = "stateful", "stateless"
# Sharing on purpose: a flag or a function that says so.
_SHARING = re.compile(r"shar|tie|tying|same.?(layer|block|weight)|共享", re.IGNORECASE)


def _sharing(text: str) -> bool:
    return bool(_SHARING.search(text))


def _on_purpose(path: tuple, nodes: list) -> bool:
    """Whether an ``if`` around the repetition says the sharing is meant, in its test
    (``if self.weight_sharing:``)."""
    ifs = {step[1] for step in path if step[0] == "if"}
    return bool(ifs) and any(
        id(other) in ifs and _sharing(ast.unparse(other.test)) for other in nodes
    )


def _stateful_classes(context: Context) -> set[str]:
    """The module classes of this file that may hold parameters or buffers: one whose methods
    assign ``self.<x>`` the result of a call or register something, or that derives from a
    class of ``torch.nn`` with state, or from a stateful class of the file."""
    classes = {n.name: n for n in context.statements if isinstance(n, ast.ClassDef)}
    modules = module_classes(context)
    stateful: set[str] = set()
    for name in modules:
        node = classes[name]
        for base in node.bases:
            qualified = context.imports.qualified_name(base) or ""
            if (
                qualified.startswith("torch.nn.")
                and qualified.rpartition(".")[2] not in ("Module", "Sequential")
                and not _STATELESS.fullmatch(qualified.rpartition(".")[2])
            ):
                stateful.add(name)
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute | ast.Name):
                called = child.func.attr if isinstance(child.func, ast.Attribute) else child.func.id
                if called in _REGISTERING:
                    stateful.add(name)
            elif (
                isinstance(child, ast.Assign)
                and isinstance(child.value, ast.Call | ast.ListComp)
                and any(isinstance(t, ast.Attribute) for t in child.targets)
            ):
                stateful.add(name)
    changed = True
    while changed:
        changed = False
        for name in modules - stateful:
            if any(isinstance(b, ast.Name) and b.id in stateful for b in classes[name].bases):
                stateful.add(name)
                changed = True
    return stateful


_REGISTERING = frozenset(
    {"register_buffer", "register_parameter", "add_module", "register_module", "setattr"}
)


def _repeated(node: ast.AST) -> list[ast.expr]:
    """The items that ``node`` repeats: of ``[a, b] * n``, or the bare name of ``[m for ...]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for display, times in ((node.left, node.right), (node.right, node.left)):
            if isinstance(display, ast.List | ast.Tuple) and display.elts:
                if isinstance(times, ast.Constant) and times.value in (0, 1):
                    return []
                if any(isinstance(item, ast.Starred) for item in display.elts):
                    return []
                return list(display.elts)
        return []
    if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp) and isinstance(
        node.elt, ast.Name
    ):
        bound = {
            n.id
            for generator in node.generators
            for n in ast.walk(generator.target)
            if isinstance(n, ast.Name)
        }
        if node.elt.id not in bound:
            return [node.elt]
    return []


def _instance(context: Context, item: ast.expr, stores, stateful: set[str]) -> str | None:
    """``_STATEFUL`` or ``_STATELESS_INSTANCE`` for one module instance, else None."""
    if isinstance(item, ast.Name):
        values = (stores or {}).get(item.id)
        if not values or None in values:
            return None
        kinds = {_instance(context, value, None, stateful) for value in values}
        return kinds.pop() if len(kinds) == 1 else (None if None in kinds else _STATEFUL)
    if isinstance(item, ast.Call) and context.imports.qualified_name(item.func) in _DEEPCOPY:
        copied = item.args[0] if len(item.args) == 1 and not item.keywords else None
        return None if copied is None else _instance(context, copied, stores, stateful)
    built = constructed_class(context, item)
    if built is None:
        return None
    if built.startswith("torch."):
        stateless = _STATELESS.fullmatch(built.rpartition(".")[2])
    else:
        stateless = built not in stateful
    return _STATELESS_INSTANCE if stateless else _STATEFUL
