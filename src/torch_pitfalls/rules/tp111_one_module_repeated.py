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
)
from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED, walk_with_paths
from torch_pitfalls.lint.context import Context, child_statements
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

# Where a repetition may be, read in the text first (most files have none), each pattern
# starting with a literal, for speed: a list display of names or ending in a call, times
# something (not a subscript: checked on the character before); something times a list; a tuple
# of one name times something; a comprehension of a bare name that is not its own loop variable.
_STAR = re.compile(r"\]\s*\*|\*\s*\[")
_DISPLAY_TIMES = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*(?:,[^\]\n]*)?\]\s*\*")
_OTHER_REPETITIONS = re.compile(
    r"\)\s*,?\s*\]\s*\*|\*\s*\[\s*[A-Za-z_]|\(\s*[A-Za-z_][\w.]*\s*,\s*\)\s*\*"
)
_COMPREHENSION = re.compile(r"[\[(]\s*(\w+)\s+for\s+(?!\1\b)\w")
_SUBSCRIPTED = frozenset("_])'\".") | frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_DEEPCOPY = frozenset({"copy.deepcopy"})
# Classes of torch.nn without parameters or buffers: repeating one shares nothing.
_STATELESS = re.compile(
    r"Identity|Flatten|Unflatten|(Leaky)?ReLU6?|R?ReLU|[CS]?ELU|GELU|SiLU|Mish|Sigmoid|Tanh"
    r"|Soft(max|max2d|min|plus|sign|shrink)|LogSoftmax|LogSigmoid|Hard(tanh|sigmoid|swish|shrink)"
    r"|Tanhshrink|Threshold|GLU|(Alpha|FeatureAlpha)?Dropout\d?d?|(Adaptive)?(Max|Avg)Pool\dd"
    r"|LPPool\dd|FractionalMaxPool\dd|MaxUnpool\dd|Upsample|Upsampling\w+|Pixel(Un)?[Ss]huffle"
    r"|ChannelShuffle|(Zero|Constant|Reflection|Replication|Circular)Pad\dd|CosineSimilarity"
    r"|PairwiseDistance|Fold|Unfold|\w*Loss"
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where one module instance is repeated ``n`` times."""
    lines = _candidate_lines(context.source)  # None: every line (the text is not known)
    if lines is not None and not lines:
        return  # most files: no repetition in the text
    if not context.imports.imports_torch():
        return
    parents: dict[int, ast.AST] = {}  # statement -> the statement or module it is in
    stateful: _Stateful | None = None
    stores: dict[int, dict] = {}  # scope -> its names' values
    found = set()
    for statement in context.statements:
        if isinstance(statement, _COMPOUND):
            continue  # its body's statements come on their own; its header is not read
        if lines is not None and lines.isdisjoint(
            range(statement.lineno, statement.end_lineno + 1)
        ):
            continue
        for node in ast.walk(statement):
            items = _repeated(node) if isinstance(node, _CANDIDATES) else []
            if not items:
                continue
            if not parents:
                for outer in [context.tree, *context.statements]:
                    for child in child_statements(outer):
                        parents[id(child)] = outer
            scope, meant = _scope(statement, parents, context.tree)
            if meant:
                continue
            if not all(isinstance(item, ast.Name | ast.Call) for item in items):
                continue

            def stores_of(scope=scope):  # read only for a name: a walk of the whole scope
                if id(scope) not in stores:
                    nodes = [n for n, _ in walk_with_paths(scope)]
                    stores[id(scope)] = assigned_names(scope, nodes)
                return stores[id(scope)]

            if stateful is None:
                stateful = _Stateful(context)
            kinds = [_instance(context, item, stores_of, stateful) for item in items]
            if None not in kinds and _STATEFUL in kinds:
                found.add((node.lineno, node.col_offset))
    yield from sorted(found)


_CANDIDATES = (ast.BinOp, ast.ListComp, ast.GeneratorExp, ast.SetComp)
_COMPOUND = (*NESTED, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
_STATEFUL, _STATELESS_INSTANCE = "stateful", "stateless"
# Sharing on purpose: a flag or a function that says so.
_SHARING = re.compile(r"shar|tie|tying|same.?(layer|block|weight)|共享", re.IGNORECASE)


def _candidate_lines(source: str) -> set[int] | None:
    """The lines where the text shows a repetition, or None when the text is not known."""
    if not source:
        return None
    matches = list(_COMPREHENSION.finditer(source))
    if _STAR.search(source):
        matches += _OTHER_REPETITIONS.finditer(source)
        matches += (
            match
            for match in _DISPLAY_TIMES.finditer(source)
            if match.start() == 0 or source[match.start() - 1].lower() not in _SUBSCRIPTED
        )
    lines: set[int] = set()
    for match in matches:
        first = source.count("\n", 0, match.start()) + 1
        lines.update(range(first, first + source.count("\n", *match.span()) + 1))
    return lines


def _scope(statement: ast.stmt, parents: dict, tree: ast.AST) -> tuple[ast.AST, bool]:
    """The function, class or module a statement runs in, and whether the code around it says
    the sharing is meant: an ``if`` whose test names it (``if self.weight_sharing:``), or the
    name of a function it is in."""
    scope, meant, node = None, False, statement
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, ast.If) and _SHARING.search(ast.unparse(node.test)):
            meant = True
        if isinstance(node, FUNCTIONS) and _SHARING.search(node.name):
            meant = True
        if scope is None and isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            scope = node
    return (tree if scope is None else scope), meant


class _Stateful:
    """The module classes of this file that may hold parameters or buffers, each found when
    asked (``name in stateful``): one whose methods assign ``self.<x>`` the result of a call or
    register something, or that derives from a class of ``torch.nn`` with state, or from a
    stateful class of the file."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.classes = {n.name: n for n in context.statements if isinstance(n, ast.ClassDef)}
        self.known: dict[str, bool] = {}

    def __contains__(self, name: str) -> bool:
        if name not in self.known:
            self.known[name] = False  # a class that derives from itself: no state from that
            self.known[name] = name in self.classes and self._has_state(self.classes[name])
        return self.known[name]

    def _has_state(self, node: ast.ClassDef) -> bool:
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self:
                return True
            qualified = self.context.imports.qualified_name(base) or ""
            last = qualified.rpartition(".")[2]
            if (
                qualified.startswith("torch.nn.")
                and last not in ("Module", "Sequential")
                and not _STATELESS.fullmatch(last)
            ):
                return True
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute | ast.Name):
                called = child.func.attr if isinstance(child.func, ast.Attribute) else child.func.id
                if called in _REGISTERING:
                    return True
            elif (
                isinstance(child, ast.Assign)
                and isinstance(child.value, ast.Call | ast.ListComp)
                and any(isinstance(t, ast.Attribute) for t in child.targets)
            ):
                return True
        return False


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


def _instance(context: Context, item: ast.expr, stores, stateful) -> str | None:
    """``_STATEFUL`` or ``_STATELESS_INSTANCE`` for one module instance, else None; ``stores``
    gives the values of the scope's names when called (None: no name is known)."""
    if isinstance(item, ast.Name):
        values = stores().get(item.id) if stores is not None else None
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
