"""``TP126``: ``volatile``, the flag that PyTorch 0.4.0 removed.

.. rubric:: What it does

A call of ``torch.autograd.Variable`` (or ``torch.autograd.variable.Variable``, through any
import or alias: ``from torch.autograd import Variable``, ``import torch.autograd as autograd``)
that passes ``volatile``, as a keyword or as the third positional argument, with any value but
a literal ``False`` (``volatile=False`` did nothing either, and still does nothing: PyTorch does
not even warn). Reported at the argument.

In a module that names ``torch.autograd.Variable`` (code of that era), also the attribute
``.volatile`` assigned anything but a literal ``False`` (``x.volatile = True``), except on
``self`` or ``cls`` (an attribute of the project's own class); and ``.volatile`` read
(``if x.volatile:``) on a name that the module assigns a ``Variable(...)`` (``x =
Variable(data)``, ``x = Variable(data).cuda()``). A read elsewhere may be another object's
attribute (``Variable(x, volatile=args.volatile)`` reads a setting) and is not reported; nor is
an attribute named ``volatile`` in a module that does not use torch's ``Variable`` (a Chainer
``Variable``, a configuration), nor other functions named ``Variable`` (TensorFlow's
``tf.Variable``, a class of the project).

There is no fix: deleting the flag changes nothing that runs, but the code would still record a
graph, which the flag was meant to prevent. The message says to write ``with torch.no_grad():``.

.. rubric:: Why is this bad?

Since PyTorch 0.4.0, ``Variable(x)`` returns a plain tensor and ``volatile`` has no effect:
PyTorch warns ``volatile was removed and now has no effect``, and the evaluation it was meant to
run without a graph records one for every batch, keeping its activations alive. Reading
``.volatile`` gives ``False`` whatever was set, and ``volatile=None`` raises a ``TypeError``.

.. rubric:: Example

.. code-block:: python

    from torch.autograd import Variable

    model.eval()
    output = model(Variable(images, volatile=True))

.. rubric:: Use instead

.. code-block:: python

    import torch

    model.eval()
    with torch.no_grad():
        output = model(images)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP126",
    "lint",
    "no-grad-evaluation",
    "volatile, removed in PyTorch 0.4.0",
    "volatile 已在 PyTorch 0.4.0 中移除",
    "volatile has had no effect since PyTorch 0.4.0: the code still records a graph; evaluate "
    "under with torch.no_grad(): instead",
    "volatile 自 PyTorch 0.4.0 起已不起作用，代码照样记录计算图：应改在 with torch.no_grad(): "
    "下评估",
    default=False,
)

_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``volatile`` is passed to torch's ``Variable``, or set or read as an attribute in a
    module that uses it."""
    if context.source and "volatile" not in context.source:
        return
    if not context.imports.imports_torch():
        return
    qualified = context.imports.qualified_name
    found: list[tuple[int, int]] = []
    stores: list[ast.Attribute] = []
    reads: list[ast.Attribute] = []
    assigned_false: set[int] = set()  # x.volatile = False: harmless
    variables: set[str] = set()  # names assigned a Variable(...)
    uses_variable = False
    for node in ast.walk(context.tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "volatile" and not _own(node.value):
                (reads if isinstance(node.ctx, ast.Load) else stores).append(node)
            elif node.attr == "Variable" and qualified(node) in _VARIABLE:
                uses_variable = True
        elif isinstance(node, ast.Name):
            if node.id in context.imports.names and qualified(node) in _VARIABLE:
                uses_variable = True
        elif isinstance(node, ast.Call):
            if qualified(node.func) in _VARIABLE:
                argument = _volatile_argument(node)
                if argument is not None and not _literal_false(argument):
                    found.append((argument.lineno, argument.col_offset))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _literal_false(node.value):
                assigned_false.update(id(target) for target in targets)
            elif _a_variable(node.value, qualified):
                variables.update(t.id for t in targets if isinstance(t, ast.Name))
    if uses_variable:
        found += [(n.lineno, n.col_offset) for n in stores if id(n) not in assigned_false]
        found += [
            (n.lineno, n.col_offset)
            for n in reads
            if isinstance(n.value, ast.Name) and n.value.id in variables
        ]
    yield from sorted(found)


def _a_variable(value: ast.expr, qualified) -> bool:
    """Whether ``value`` is ``Variable(...)``, maybe followed by methods (``.cuda()``)."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and qualified(value.func) not in _VARIABLE
    ):
        value = value.func.value
    return isinstance(value, ast.Call) and qualified(value.func) in _VARIABLE


def _volatile_argument(call: ast.Call) -> ast.AST | None:
    """The node that passes ``volatile`` (``Variable(data, requires_grad, volatile)``): the
    keyword, or the third positional argument; None when not passed."""
    for keyword in call.keywords:
        if keyword.arg == "volatile":
            return keyword
    if len(call.args) >= 3 and not any(isinstance(a, ast.Starred) for a in call.args[:3]):
        return call.args[2]
    return None


def _own(receiver: ast.expr) -> bool:
    """Whether the receiver is ``self`` or ``cls``: a class of the project's own."""
    return isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")


def _literal_false(node: ast.AST | None) -> bool:
    value = node.value if isinstance(node, ast.keyword) else node
    return isinstance(value, ast.Constant) and value.value is False
