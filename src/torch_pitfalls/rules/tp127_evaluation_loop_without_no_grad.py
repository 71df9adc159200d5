"""``TP127``: an evaluation loop that keeps outputs without ``torch.no_grad()``.

.. rubric:: What it does

In a module that imports torch, a function (or the module's own code) that calls
``<m>.eval()`` and after it, in a loop, calls ``<m>(...)`` on the same receiver (``model``,
``self.model``) and keeps what the call returns from one pass to the next. The loop is a ``for``
or ``while`` loop, a list comprehension, or a generator expression gathered by ``sum``,
``list``, ``tuple``, ``sorted``, ``torch.cat``, ``torch.stack`` (or ``concat``, ``vstack``,
``hstack``). Kept means: appended (``.append``, ``.extend``, ``.insert``), added up
(``total += ...``, ``y = y + ...``, ``y = torch.cat([y, ...])``), stored in an item
(``preds[i] = ...``), or made an element of the comprehension. What is kept may be the output or
a value computed from it: an item, an attribute or a slice of it, a method of it, or a function
of ``torch`` or a loss (a callee whose name holds ``loss`` or ``criterion``) applied to it,
through the names the loop assigns them. Values that hold no graph are not followed:
``.item()``, ``.detach()``, ``.tolist()``, ``.numpy()``, ``.data``, ``.argmax()`` and other
integer or boolean results (a comparison, the indices of ``.max(dim)``), nor the results of
other functions (``tokenizer.decode(output)``). Not followed either: a name assigned anew in each
pass (``loss = ...``: ``loss += ...`` keeps nothing into the next pass), and what is handed to
another object (``metric.update(output)``). Reported at the model's call.

Not reported when gradients are off or used:

* the call is in a ``with`` block whose context names ``no_grad`` or ``inference_mode``
  (``torch.no_grad()``, ``torch.inference_mode()``, ``torch.autograd.no_grad()``, any alias, a
  conditional ``nullcontext() if train else torch.no_grad()``) or ``set_grad_enabled`` with
  anything but ``True``;
* the function, or a function or class around it, is decorated with one of those
  (``@torch.no_grad()``, ``@torch.inference_mode()``);
* the function, or the module's own code, calls ``torch.set_grad_enabled(...)`` (not
  ``True``) outside a ``with``;
* the function calls ``.backward()``, ``torch.autograd.grad``, ``.requires_grad_()``,
  ``.step()`` or ``.zero_grad()``, passes ``requires_grad=`` or assigns ``.requires_grad``: its
  gradients may be wanted (a saliency map, an adversarial example, training with frozen batch
  norm);
* ``<m>.train(...)`` is called after the ``.eval()`` and before the model's call;
* some call of the function in the same module (by its name: ``evaluate(...)``,
  ``self.evaluate(...)``) lies in such a ``with`` block or decorated function: the caller turned
  gradients off. A call from another module is not seen: such a function is reported.

.. rubric:: Why is this bad?

``model.eval()`` changes what dropout and batch norm compute, not autograd: with gradients
enabled each forward pass records a graph, and each output the loop keeps keeps its graph alive,
with every activation saved for a backward pass that never comes. Memory grows with each batch
until the evaluation runs out of memory, and the loop is slower.

.. rubric:: Example

.. code-block:: python

    import torch


    def evaluate(model, loader):
        model.eval()
        outputs = []
        for x, _ in loader:
            outputs.append(model(x))
        return torch.cat(outputs)

.. rubric:: Use instead

.. code-block:: python

    import torch


    def evaluate(model, loader):
        model.eval()
        outputs = []
        with torch.no_grad():
            for x, _ in loader:
                outputs.append(model(x))
        return torch.cat(outputs)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, LOOPS, NESTED, identifier, own_nodes
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP127",
    "lint",
    "no-grad-evaluation",
    "evaluation loop that keeps outputs without no_grad",
    "评估循环在未关闭梯度时保留输出",
    "the model is in eval mode but gradients are on: each output this loop keeps holds its "
    "autograd graph and activations, and memory grows with every batch; run the loop under "
    "with torch.no_grad(): (or torch.inference_mode())",
    "模型处于评估模式，但梯度仍然开启：循环保留的每个输出都带着它的计算图和激活值，"
    "显存随每个批次增长；应在 with torch.no_grad():（或 torch.inference_mode()）下运行该循环",
    default=False,
)

_EVAL_CALL = re.compile(r"\.\s*eval\s*\(\s*\)")
_OFF_WORDS = ("no_grad", "inference_mode")
_WANTS_GRADIENTS = frozenset({"backward", "requires_grad_", "zero_grad", "step"})
_KEEPS = frozenset({"append", "extend", "insert", "appendleft"})
_NO_GRAPH = frozenset(
    {
        "item", "detach", "detach_", "tolist", "numpy", "argmax", "argmin", "argsort", "long",
        "int", "bool", "byte", "short", "eq", "ne", "lt", "gt", "le", "ge", "equal", "isnan",
        "isinf", "isfinite", "nonzero", "size", "dim", "numel", "count_nonzero", "allclose",
        "isclose", "searchsorted", "bucketize", "unique",
    }
)  # fmt: skip
_NO_GRAPH_ATTRIBUTES = frozenset(
    {"data", "shape", "dtype", "device", "indices", "grad", "requires_grad", "is_cuda", "ndim"}
)
_WITH_INDICES = frozenset({"max", "min", "topk", "sort", "kthvalue", "mode", "median"})
_CARRYING_BUILTINS = frozenset({"sum", "max", "min", "abs"})
_GATHERS = frozenset(
    {"sum", "list", "tuple", "sorted", "cat", "stack", "concat", "vstack", "hstack"}
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a model in eval mode is called in a loop that keeps its outputs, gradients on."""
    if "eval" not in context.attributes or not context.imports.imports_torch():
        return
    if context.source:
        source = context.source
        lines = {source.count("\n", 0, m.start()) + 1 for m in _EVAL_CALL.finditer(source)}
        if not lines:
            return
    else:
        lines = {n.lineno for n in ast.walk(context.tree) if isinstance(n, ast.Call)}
    functions = [node for node in context.statements if isinstance(node, FUNCTIONS)]
    scopes: dict[int, ast.AST] = {}
    for line in lines:  # the innermost function around each .eval(), or the module
        around = [f for f in functions if f.lineno <= line <= f.end_lineno]
        scope = max(around, key=lambda f: f.lineno) if around else context.tree
        scopes[id(scope)] = scope
    candidates: list[tuple[ast.AST, list, list[ast.Call]]] = []
    for scope in scopes.values():
        nodes = list(own_nodes(scope.body))
        calls = _candidate_calls(nodes, context)
        if calls:
            candidates.append((scope, nodes, calls))
    if not candidates:
        return
    # what turns gradients off, only for the few scopes left
    if (not context.source or "set_grad_enabled" in context.source) and _grad_switched_off(
        own_nodes(context.tree.body), context
    ):
        return
    off_ranges = _grad_off_ranges(context)
    found: list[tuple[int, int]] = []
    for scope, nodes, calls in candidates:
        if isinstance(scope, FUNCTIONS) and (
            _in_ranges(scope.lineno, off_ranges) or _wrapped_by_callers(scope, context, off_ranges)
        ):
            continue
        if _wants_gradients(nodes, context) or _grad_switched_off(nodes, context):
            continue
        found += [
            (call.lineno, call.col_offset)
            for call in calls
            if not _in_ranges(call.lineno, off_ranges)
        ]
    yield from sorted(set(found))


def _candidate_calls(nodes: list, context: Context) -> list[ast.Call]:
    """The calls ``<m>(...)`` in a scope's loops whose outputs are kept, ``<m>.eval()`` being
    the last mode set on ``<m>`` before, whatever turns gradients off."""
    modes: dict[str, list[tuple[tuple[int, int], str]]] = {}  # receiver -> (position, mode)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in ("eval", "train"):
                key = _key(node.func.value)
                if key is not None and (method == "train" or not node.args and not node.keywords):
                    modes.setdefault(key, []).append(((node.lineno, node.col_offset), method))
    evaluated = {key for key, calls in modes.items() if any(mode == "eval" for _, mode in calls)}
    model_lines = [
        node.lineno
        for node in nodes
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and _key(node.func) in evaluated
    ]
    if not model_lines:
        return []
    gathered = {  # sum(model(x) for x in batches): a generator whose outputs are gathered
        id(argument)
        for node in nodes
        if isinstance(node, ast.Call) and identifier(node.func) in _GATHERS
        for argument in node.args
        if isinstance(argument, ast.GeneratorExp)
    }
    found = []
    for loop in nodes:
        if not (isinstance(loop, (*LOOPS, ast.ListComp)) or id(loop) in gathered) or not any(
            loop.lineno <= line <= loop.end_lineno for line in model_lines
        ):
            continue
        for call in _kept_model_calls(loop, modes, context):
            position = (call.lineno, call.col_offset)
            before = [(at, mode) for at, mode in modes.get(_key(call.func), []) if at < position]
            if before and max(before)[1] == "eval":
                found.append(call)
    return found


def _key(node: ast.expr) -> str | None:
    """``self.model`` for a name or a chain of attributes; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _turns_off(node: ast.expr) -> bool:
    """Whether a context manager (or decorator) turns gradients off: it names ``no_grad`` or
    ``inference_mode``, or ``set_grad_enabled`` with anything but ``True``."""
    for sub in ast.walk(node):
        name = identifier(sub) if isinstance(sub, ast.Attribute | ast.Name) else ""
        if any(word in name for word in _OFF_WORDS):
            return True
        if (
            isinstance(sub, ast.Call)
            and "set_grad_enabled" in identifier(sub.func)
            and not (
                sub.args and isinstance(sub.args[0], ast.Constant) and sub.args[0].value is True
            )
        ):
            return True
    return False


def _grad_off_ranges(context: Context) -> list[tuple[int, int]]:
    """The lines of ``with`` blocks and of decorated functions and classes that turn gradients
    off."""
    ranges = []
    for node in context.statements:
        if isinstance(node, ast.With | ast.AsyncWith):
            if any(_turns_off(item.context_expr) for item in node.items):
                ranges.append((node.lineno, node.end_lineno))
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)) and any(
            _turns_off(decorator) for decorator in node.decorator_list
        ):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            ranges.append((first, node.end_lineno))
    return ranges


def _in_ranges(line: int, ranges) -> bool:
    return any(start <= line <= end for start, end in ranges)


def _grad_switched_off(nodes, context: Context) -> bool:
    """Whether ``torch.set_grad_enabled(x)`` (not ``True``) is called as a statement among
    ``nodes`` (outside a ``with``)."""
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and "set_grad_enabled" in identifier(node.value.func)
        and _turns_off(node.value)
        for node in nodes
    )


def _wants_gradients(nodes, context: Context) -> bool:
    """Whether a scope uses gradients: backward, autograd.grad, requires_grad_, an optimizer's
    step or zero_grad, ``requires_grad=True`` or ``x.requires_grad = ...``."""
    for node in nodes:
        if isinstance(node, ast.Call):
            name = identifier(node.func)
            if isinstance(node.func, ast.Attribute) and name in _WANTS_GRADIENTS:
                return True
            if name == "grad" and "autograd" in (context.imports.qualified_name(node.func) or ""):
                return True
            if any(k.arg == "requires_grad" for k in node.keywords):
                return True
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in targets):
                return True
    return False


def _wrapped_by_callers(function: ast.AST, context: Context, off_ranges) -> bool:
    """Whether a call of the function by its name (``name(``, ``.name(``), in the same module,
    lies where gradients are off."""
    if not off_ranges:
        return False
    if context.source:
        source = context.source
        call = re.compile(rf"\b{re.escape(function.name)}\s*\(")
        lines = {source.count("\n", 0, m.start()) + 1 for m in call.finditer(source)}
    else:
        lines = {
            node.lineno
            for node in ast.walk(context.tree)
            if isinstance(node, ast.Call) and identifier(node.func) == function.name
        }
    return any(line != function.lineno and _in_ranges(line, off_ranges) for line in lines)


def _kept_model_calls(loop: ast.AST, modes: dict, context: Context) -> Iterator[ast.Call]:
    """The calls ``<m>(...)`` of a receiver put in eval mode whose outputs the loop keeps."""
    keys = {key for key, calls in modes.items() if any(m == "eval" for _, m in calls)}
    flow = _Flow(keys, context.imports.qualified_name)
    if isinstance(loop, ast.ListComp | ast.GeneratorExp):
        yield from flow.carried(loop.elt)
        return
    body = list(_loop_nodes(loop))
    reset = {  # names assigned plainly in the loop: not kept from one pass to the next
        target.id
        for node in body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and not _mentions(node.value, target.id)
    }
    kept: list[ast.Call] = []
    for _ in range(2):  # twice: a name computed late in the body and kept early, next pass
        for node in body:
            if isinstance(node, ast.Assign):
                calls = flow.carried(node.value)
                for target in node.targets:
                    if (
                        isinstance(target, ast.Name)
                        and target.id not in reset
                        and _mentions(node.value, target.id)
                    ):
                        kept += calls  # y = y + out, y = torch.cat([y, out])
                    elif isinstance(target, ast.Subscript):
                        kept += calls  # preds[i] = out
                    flow.bind(target, node.value, calls)
            elif isinstance(node, ast.AugAssign):
                root = _root(node.target)
                if root is not None and root not in reset:
                    kept += flow.carried(node.value)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _KEEPS
                and _root(node.func.value) not in reset
            ):
                for argument in node.args:
                    kept += flow.carried(argument)
            elif isinstance(node, ast.ListComp):
                kept += flow.carried(node.elt)
    seen = set()
    for call in kept:
        if id(call) not in seen:
            seen.add(id(call))
            yield call


def _loop_nodes(loop: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a loop's body (its ``else`` too), in order, not entering nested scopes."""
    stack = list(reversed([*loop.body, *loop.orelse]))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, NESTED):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id == name for sub in ast.walk(node))


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _returns_indices(value: ast.expr) -> bool:
    """Whether the value is ``(values, indices)``: ``out.max(1)``, ``torch.topk(out, k)``."""
    return (
        isinstance(value, ast.Call)
        and identifier(value.func) in _WITH_INDICES
        and bool(value.args or value.keywords)
    )


class _Flow:
    """Which model calls' graphs each value holds, in one loop's body: ``keys`` are the
    receivers put in eval mode, ``names`` the names bound to values that hold a graph."""

    def __init__(self, keys: set, qualified) -> None:
        self.keys = keys
        self.qualified = qualified
        self.names: dict[str, list[ast.Call]] = {}

    def bind(self, target: ast.expr, value: ast.expr, calls: list) -> None:
        """Bind ``target`` to what ``value`` holds (only the values of ``values, indices =
        out.max(1)``)."""
        if isinstance(target, ast.Name):
            if calls:
                self.names[target.id] = calls
            else:
                self.names.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List):
            elements = [e.value if isinstance(e, ast.Starred) else e for e in target.elts]
            for element in elements:
                self.bind(element, value, [])
            for element in elements[:1] if _returns_indices(value) else elements:
                self.bind(element, value, calls)

    def carried(self, node: ast.expr) -> list[ast.Call]:
        """The model calls whose graph the value of ``node`` holds."""
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Name):
            return self.names.get(node.id, [])
        if isinstance(node, ast.Attribute):
            return [] if node.attr in _NO_GRAPH_ATTRIBUTES else self.carried(node.value)
        if isinstance(node, ast.Subscript):
            value = node.value
            if (
                _returns_indices(value)
                and isinstance(node.slice, ast.Constant)
                and node.slice.value == 1
            ):
                return []  # out.max(1)[1]: the indices
            return self.carried(value)
        if isinstance(node, ast.BinOp):
            return self.carried(node.left) + self.carried(node.right)
        if isinstance(node, ast.UnaryOp):
            return [] if isinstance(node.op, ast.Not) else self.carried(node.operand)
        if isinstance(node, ast.IfExp):
            return self.carried(node.body) + self.carried(node.orelse)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [call for element in node.elts for call in self.carried(element)]
        if isinstance(node, ast.Starred):
            return self.carried(node.value)
        if isinstance(node, ast.Dict):
            return [call for value in node.values for call in self.carried(value)]
        return []  # a comparison, a boolean operation, a string, a constant...

    def _call(self, call: ast.Call) -> list[ast.Call]:
        func = call.func
        if _key(func) in self.keys:
            return [call]
        name = identifier(func)
        if name in _NO_GRAPH:
            return []
        if isinstance(func, ast.Attribute):
            receiver = self.carried(func.value)
            if receiver:
                return receiver  # a method of the output: out.softmax(1), out.cpu()
        lower = name.lower()
        passes_on = (
            (self.qualified(func) or "").startswith("torch.")
            or "loss" in lower
            or "criterion" in lower
            or (isinstance(func, ast.Name) and name in _CARRYING_BUILTINS)
        )
        if not passes_on:
            return []
        return [
            found
            for argument in (*call.args, *(k.value for k in call.keywords))
            for found in self.carried(argument)
        ]
