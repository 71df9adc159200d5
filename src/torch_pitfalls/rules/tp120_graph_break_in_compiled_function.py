"""``TP120``: ``.item()``, ``.tolist()`` or ``print`` in a ``torch.compile``'d function (opt-in).

.. rubric:: What it does

Reported (at the call): ``<x>.item()``, ``<x>.tolist()`` or ``print(...)`` in the body of a
function that is compiled: decorated with ``@torch.compile`` or ``@torch.compile(...)`` (through
any import alias), or a function of the same file (defined at module level, or in the same
function as the call) whose name is passed to ``torch.compile(<name>, ...)``.

Not reported: code in a function nested in the compiled one (often a helper the compiled code never
calls), or in a branch of an ``if`` whose test calls ``is_compiling()``
(``torch.compiler.is_compiling()``, which Dynamo settles while tracing); ``.numpy()`` and NumPy
calls, which recent releases trace into the graph; a compiled module (``torch.compile(model)``),
whose ``forward`` the checker does not look up; functions the compiled one calls. Opt-in: on the
public codebases the rules are measured on (``nox -s survey``) it finds too little to measure its
false-alarm rate.

.. rubric:: Why is this bad?

Dynamo cannot put these lines in a graph: it ends the graph there, runs the line in Python and
starts a new graph after it (a *graph break*), silently. Each break costs a return to Python and
stops optimisation across it, and ``.item()`` / ``.tolist()`` wait for the GPU. Under
``fullgraph=True`` a ``print`` is an error (``torch._dynamo.exc.Unsupported``) instead.

.. rubric:: Example

.. code-block:: python

    import torch


    @torch.compile
    def train_step(x, w):
        loss = (x @ w).pow(2).mean()
        print(f"loss {loss.item():.3f}")
        return loss

.. rubric:: Use instead

.. code-block:: python

    import torch


    @torch.compile
    def train_step(x, w):
        loss = (x @ w).pow(2).mean()
        return loss, loss.detach()
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED, scopes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP120",
    "lint",
    "compile-graph-breaks",
    "graph break in a compiled function",
    "编译函数中的图中断",
    "this line inside a torch.compile'd function cannot be traced: Dynamo splits the graph here "
    "(a graph break; an error for print under fullgraph=True); return tensors and log or convert "
    "them outside the compiled function",
    "torch.compile 编译的函数中的这一行无法被追踪：Dynamo 会在此处把图拆开（图中断；"
    "fullgraph=True 时 print 会直接报错）；应返回张量，在编译函数之外再记录或转换",
    default=False,
)

_COMPILE = frozenset({"torch.compile"})
_METHODS = frozenset({"item", "tolist"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a compiled function calls ``.item()``, ``.tolist()`` or ``print``."""
    if "compile" not in context.attributes and "compile" not in context.imports.names:
        return
    if context.source and context.source.count("compile") == context.source.count("re.compile"):
        return  # no compile but the regular expressions' (timm, detectron2 …)
    compiled: list[ast.AST] = []
    functions = [n for n in context.statements if isinstance(n, FUNCTIONS)]
    for function in functions:
        if any(_is_compile(context, d) for d in function.decorator_list):
            compiled.append(function)
    by_scope: dict[int, dict[str, list[ast.AST]]] = {}
    for scope in scopes(context.tree, context.statements):
        local = by_scope.setdefault(id(scope), {})
        for child in scope.body:
            if isinstance(child, FUNCTIONS):
                local.setdefault(child.name, []).append(child)
    module = by_scope[id(context.tree)]
    for scope in scopes(context.tree, context.statements):
        for node in _own_nodes(scope):
            if (
                isinstance(node, ast.Call)
                and _is_compile(context, node.func)
                and node.args
                and isinstance(node.args[0], ast.Name)
            ):
                name = node.args[0].id
                compiled += by_scope[id(scope)].get(name) or module.get(name, [])
    found: set[tuple[int, int]] = set()
    for function in {id(f): f for f in compiled}.values():
        for node in _own_nodes(function, skip_compiling=True):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in _METHODS and not node.args) or (
                isinstance(func, ast.Name) and func.id == "print" and "print" not in module
            ):
                found.add((node.lineno, node.col_offset))
    yield from sorted(found)


def _is_compile(context: Context, node: ast.expr) -> bool:
    """``torch.compile`` or ``torch.compile(...)`` (a decorator with arguments)."""
    if isinstance(node, ast.Call):
        node = node.func
    return context.imports.qualified_name(node) in _COMPILE


def _own_nodes(scope: ast.AST, skip_compiling: bool = False) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s body, not entering nested functions or classes (nor, with
    ``skip_compiling``, an ``if`` whose test calls ``is_compiling()``)."""
    stack = list(reversed(scope.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, NESTED):
            continue
        if skip_compiling and isinstance(node, ast.If) and _asks_compiling(node.test):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _asks_compiling(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (getattr(n.func, "attr", None) or getattr(n.func, "id", "")).endswith("is_compiling")
        for n in ast.walk(test)
    )
