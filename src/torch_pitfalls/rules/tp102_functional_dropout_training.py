"""``TP102``: functional dropout called without ``training=``.

.. rubric:: What it does

``F.dropout``, ``F.dropout1d``, ``F.dropout2d`` or ``F.dropout3d`` called without
``training=``: not as a keyword, not as the third positional argument, and no ``*args`` or
``**kwargs`` that could carry it. ``F.alpha_dropout`` and ``F.feature_alpha_dropout`` are not
checked: their ``training`` defaults to ``False``. Not reported in a function named
``training_step`` (PyTorch Lightning's hook) or ``train_step``, or in code nested in one:
such code only runs in training, where ``training=True`` is what it means (dropout on the
inputs as noise, for example); a ``forward``, a ``validation_step`` or any other function
is reported, since it also runs in evaluation. Nor in the body of an ``if`` whose test reads
``.training`` without ``not`` or ``or`` (``if self.training and p > 0:``), which runs in training
only. Nor in a plain function (not a method) whose parameter is the ``p`` it passes
(``def attention(q, k, v, dropout_p=0.0)``): its caller sets ``p`` to 0 outside training, as
PyTorch's own functional attention does. Reported at the call.

Fixed by ``--fix`` (a safe fix: ``training=self.training`` keeps the dropout on in training
and turns it off in evaluation, as ``nn.Dropout`` does) where the call is in the body of a
method whose first parameter is ``self`` (not a ``staticmethod`` or ``classmethod``, nor in a
function or lambda nested in the method, nor with ``self`` assigned in it), of a class that
subclasses an ``nn.Module``: a class of ``torch.nn`` (``nn.Module``, ``nn.Sequential``…), a
base named ``Module`` or ``LightningModule``, or a class of the same module that does. The
keyword is added after the last argument. Elsewhere the message says what to pass.

.. rubric:: Why is this bad?

``F.dropout`` defaults to ``training=True`` and does not follow ``model.eval()``: the evaluated
model still drops activations at random.

.. rubric:: Example

.. code-block:: python

    import torch.nn.functional as F


    def forward(self, x):
        return F.dropout(x, 0.5)

.. rubric:: Use instead

.. code-block:: python

    import torch.nn.functional as F


    def forward(self, x):
        return F.dropout(x, 0.5, training=self.training)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.expressions import expression_findings
from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, identifier, own_nodes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import Fix, _rule

RULE = _rule(
    "TP102",
    "lint",
    "functional-dropout",
    "functional dropout without training=",
    "函数式 dropout 未传 training=",
    "F.dropout and its family default to training=True, even in eval mode: pass "
    "training=self.training",
    "F.dropout 及同类函数默认 training=True，在评估模式下也照样生效：应传入 training=self.training",
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """``(line, column from 0)`` of each finding of ``TP102`` in the module."""
    for line, col, rule_id in expression_findings(context):
        if rule_id == RULE.id:
            yield line, col


_KEYWORD = "training=self.training"
_MODULE_BASES = frozenset({"Module", "LightningModule"})


def fix(context: Context) -> Iterator[Fix]:
    """The safe fix of each finding in a method of an ``nn.Module`` (see the documentation):
    ``training=self.training`` inserted after the call's last argument."""
    found = {
        (line, col) for line, col, rule_id in expression_findings(context) if rule_id == "TP102"
    }
    if not found or not context.source:
        return
    from torch_pitfalls.lint.fixes import SourceText, keyword_insertion

    source = SourceText(context.source)
    classes = {n.name: n for n in context.statements if isinstance(n, ast.ClassDef)}
    for cls in classes.values():
        if not _subclasses_a_module(cls, classes, context, set()):
            continue
        for method in cls.body:
            if not isinstance(method, FUNCTIONS) or not _takes_self(method):
                continue
            for call in (n for n in own_nodes(method.body) if isinstance(n, ast.Call)):
                if (call.lineno, call.col_offset) in found and (call.args or call.keywords):
                    edit = keyword_insertion(call, source, _KEYWORD)
                    if edit is not None:
                        yield Fix(call.lineno, call.col_offset, (edit,))


def _subclasses_a_module(cls: ast.ClassDef, classes: dict, context: Context, seen: set) -> bool:
    seen.add(cls.name)
    for base in cls.bases:
        name = context.imports.qualified_name(base) or ""
        if name.startswith("torch.nn.") or identifier(base) in _MODULE_BASES:
            return True
        if (
            isinstance(base, ast.Name)
            and base.id in classes
            and base.id not in seen
            and _subclasses_a_module(classes[base.id], classes, context, seen)
        ):
            return True
    return False


def _takes_self(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    positional = (*method.args.posonlyargs, *method.args.args)
    decorators = {identifier(d) for d in method.decorator_list}
    if (
        not positional
        or positional[0].arg != "self"
        or decorators & {"staticmethod", "classmethod"}
    ):
        return False
    return not any(
        isinstance(node, ast.Name) and node.id == "self" and not isinstance(node.ctx, ast.Load)
        for node in ast.walk(method)
    )
