"""The analysis of ``TP103``: loops that call ``backward()`` and ``step()`` but never clear
gradients."""

from __future__ import annotations

import ast

from torch_pitfalls.lint.analyses.expressions import _imports
from torch_pitfalls.lint.analyses.scopes import (
    DISTRIBUTED,
    FUNCTIONS,
    LOOPS,
    NESTED,
    identifier,
    method_receiver,
)
from torch_pitfalls.lint.context import Imports
from torch_pitfalls.lint.context import child_statements as _child_statements

# Facts of a block of code, for TP103.
_BACKWARD, _STEP, _CLEARS, _BAD_CLOSURE = 1, 2, 4, 8
_FOREACH_ZERO = "torch._foreach_zero_"


def loop_findings(context) -> list[tuple[int, int, str]]:
    """``(line, col, "TP103")`` of each loop that never clears gradients."""
    found: list[tuple[int, int, str]] = []
    imports = _imports(context)
    # an MXNet/Gluon loop, whose file never imports torch, has nothing to clear
    if {"backward", "step"} <= context.attributes and imports.imports_torch():
        _LoopChecker(context.tree, imports, found).check()
    return found


class _LoopChecker:
    """TP103: loops that call backward() and step() but never clear gradients, and loops that
    pass ``.step()`` a closure that calls backward() but never clears them.

    A *receiver* is ``(class, name)``: the class whose methods ``name.helper()`` runs, ``name``
    being the first parameter of the method the code is in (a closure's too), or None.
    """

    def __init__(self, tree: ast.AST, imports: Imports, found: list) -> None:
        self.tree = tree
        self.imports = imports
        self.found = found
        self.functions: dict[str, list[ast.AST]] = {}  # bare name -> functions (not methods)
        self.methods: dict[tuple[ast.ClassDef, str], list[ast.AST]] = {}
        self.receiver: dict[ast.AST, tuple[ast.ClassDef, str] | None] = {}  # function -> its own
        # scope (module, function or class) -> name -> the functions defined directly in it
        self.local_functions: dict[ast.AST, dict[str, list[ast.AST]]] = {}
        self.facts: dict[ast.AST, int] = {}

    def check(self) -> None:
        self._collect()
        self._summarise()
        self._scan(self.tree, None, self.tree)

    def _collect(self) -> None:
        """Index the module's functions and methods (functions are statements: no expression
        needs a visit)."""
        stack: list[tuple[ast.AST, tuple | None, ast.AST]] = [(self.tree, None, self.tree)]
        while stack:
            node, receiver, scope = stack.pop()
            for child in _child_statements(node):
                if isinstance(child, FUNCTIONS):
                    if isinstance(node, ast.ClassDef):
                        self.methods.setdefault((node, child.name), []).append(child)
                        self.receiver[child] = method_receiver(node, child)
                    else:
                        self.functions.setdefault(child.name, []).append(child)
                        self.receiver[child] = receiver
                    local = self.local_functions.setdefault(scope, {})
                    local.setdefault(child.name, []).append(child)
                    stack.append((child, self.receiver[child], child))
                elif isinstance(child, ast.ClassDef):
                    stack.append((child, None, child))
                else:
                    stack.append((child, receiver, scope))

    def _callees(self, call: ast.Call, receiver) -> list[ast.AST]:
        """The same module's functions a call may run: ``helper()``, or ``self.helper()``."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if (
            receiver is not None
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == receiver[1]
        ):
            return self.methods.get((receiver[0], func.attr), [])
        return []

    def _own_facts(self, node: ast.AST) -> int:
        """What this node itself does: backward, step, clearing (``_BACKWARD | ...``)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            method = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if method == "_foreach_zero_":  # torch._foreach_zero_(grads), through any alias
                return _CLEARS if self.imports.qualified_name(node.func) == _FOREACH_ZERO else 0
            if isinstance(node.func, ast.Name):
                return 0
            if method == "backward":
                owner = self.imports.qualified_name(node.func.value) or ""
                # dist_autograd.backward(context_id, ...): gradients live in the context
                return 0 if owner.startswith(DISTRIBUTED) else _BACKWARD
            if method == "step":
                return _STEP if self._optimizer_step(node) else 0
            if method == "zero_grad" or (method == "zero_" and _is_grad(node.func.value)):
                return _CLEARS
            if method in ("fill_", "mul_") and _is_grad(node.func.value) and _zero_argument(node):
                return _CLEARS  # p.grad.fill_(0), p.grad.mul_(0)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                return _CLEARS  # p.grad = None, del p.grad: gradients managed by hand
        return 0

    def _optimizer_step(self, call: ast.Call) -> bool:
        """Whether ``x.step(...)`` has the shape of an optimizer's step (see TP103 above).

        ``optimizer.step()`` takes nothing but a closure, so a step with another argument is
        not one (``env.step(action)``, Gluon's ``trainer.step(batch_size)``, the distributed
        optimizer's ``opt.step(context_id)``), except on a receiver named like a gradient
        scaler or with an argument named like an optimizer (``scaler.step(optimizer)``).
        """
        if identifier(call.func.value) and "scaler" in identifier(call.func.value).lower():
            return True
        if any(k.arg not in ("closure",) for k in call.keywords) or len(call.args) > 1:
            return False
        if not call.args:
            return True
        argument = call.args[0]
        if isinstance(argument, ast.Lambda):
            return True
        name = identifier(argument)
        lower = name.lower()
        return (
            "closure" in lower
            or "optim" in lower
            or lower in ("opt", "optim")
            or lower.startswith("opt_")
            or name in self.functions
        )

    def _direct(self, body: list[ast.AST], receiver) -> tuple[int, list[ast.AST]]:
        """Facts of a function body without its callees, and the callees."""
        facts, callees = 0, []
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, NESTED):
                continue
            facts |= self._own_facts(node)
            if isinstance(node, ast.Call):
                callees += self._callees(node, receiver)
            stack.extend(ast.iter_child_nodes(node))
        return facts, callees

    def _summarise(self) -> None:
        """What each function does, with what its callees do (to a fixed point)."""
        direct = {f: self._direct(f.body, self.receiver[f]) for f in self.receiver}
        # a function that builds what it steps (a model and optimizer per call) starts clean at
        # each call, as a loop doing the same on each pass does (_rebuilt_each_pass)
        self.facts = {
            f: facts | (_CLEARS if _rebuilt_each_pass(f) else 0) for f, (facts, _) in direct.items()
        }
        changed = True
        while changed:
            changed = False
            for function, (_, callees) in direct.items():
                facts = self.facts[function]
                for callee in callees:
                    facts |= self.facts[callee]
                if facts != self.facts[function]:
                    self.facts[function], changed = facts, True

    def _facts(self, node: ast.AST, receiver, scope: ast.AST) -> int:
        """What this node does, with what the functions it calls do; ``_BAD_CLOSURE`` for a
        ``.step(closure)`` whose closure, defined in ``scope``, backward()s and never clears."""
        facts = self._own_facts(node)
        if isinstance(node, ast.Call):
            for callee in self._callees(node, receiver):
                facts |= self.facts[callee]
            if facts & _STEP:
                closures = self._step_closures(node, scope)
                if closures and all(
                    self.facts[c] & (_BACKWARD | _CLEARS) == _BACKWARD for c in closures
                ):
                    facts |= _BAD_CLOSURE
        return facts

    def _step_closures(self, call: ast.Call, scope: ast.AST) -> list[ast.AST]:
        """The functions of ``scope`` named by ``.step(closure)`` or ``.step(closure=...)``."""
        argument = call.args[0] if call.args else None
        if argument is None:
            argument = next((k.value for k in call.keywords if k.arg == "closure"), None)
        if not isinstance(argument, ast.Name):
            return []
        return self.local_functions.get(scope, {}).get(argument.id, [])

    def _expression_facts(self, root: ast.expr, receiver, scope: ast.AST) -> int:
        """What an expression does (lambdas excluded), with a stack rather than recursion."""
        facts, stack = 0, [root]
        while stack:
            node = stack.pop()
            if not isinstance(node, ast.Lambda):
                facts |= self._facts(node, receiver, scope)
                stack.extend(ast.iter_child_nodes(node))
        return facts

    def _scan(self, node: ast.AST, receiver, scope: ast.AST) -> tuple[int, bool]:
        """Facts of a statement and what it holds (definitions excluded); report its bad loops.

        Returns the facts, and whether a loop inside (or ``node`` itself) was reported.
        """
        facts, reported = self._facts(node, receiver, scope), False
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTIONS):  # runs elsewhere: its own scan
                self._scan(child, self.receiver[child], child)
            elif isinstance(child, ast.ClassDef):
                self._scan(child, None, child)
            elif isinstance(child, ast.expr):
                facts |= self._expression_facts(child, receiver, scope)
            else:
                child_facts, child_reported = self._scan(child, receiver, scope)
                facts |= child_facts
                reported |= child_reported
        if (
            isinstance(node, LOOPS)
            and (
                (facts & (_BACKWARD | _STEP) == _BACKWARD | _STEP and not facts & _CLEARS)
                or facts & _BAD_CLOSURE
            )
            and not reported
            and not _rebuilt_each_pass(node)
        ):
            self.found.append((node.lineno, node.col_offset, "TP103"))
            reported = True
        return facts, reported


def _rebuilt_each_pass(loop: ast.AST) -> bool:
    """Whether the loop assigns anew, on each pass, an object it steps (``optimizer = Adam(...)``,
    ``model, optimizer = booster.boost(...)`` before ``optimizer.step()``): a new optimizer, for a
    new model or a new leaf tensor, on every pass, so no gradient is carried into the next step.
    The tests of a training framework that build one model per configuration and step it once
    are written this way (11 of TP103's 12 false alarms over 28 public codebases), and so is an
    optimization that makes a new leaf and optimizer at every step."""
    assigned: set[str] = set()
    stepped: set[str] = set()
    stack = [child for child in ast.iter_child_nodes(loop)]
    while stack:
        node = stack.pop()
        if isinstance(node, NESTED):
            continue  # runs elsewhere
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                elements = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                assigned.update(identifier(element) for element in elements)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
        ):
            receiver = identifier(node.func.value)
            if "scaler" in receiver.lower():  # scaler.step(optimizer)
                stepped.update(identifier(argument) for argument in node.args)
            elif not node.args and "sched" not in receiver.lower():
                stepped.add(receiver)  # optimizer.step(): not env.step(action), scheduler.step()
        stack.extend(ast.iter_child_nodes(node))
    return bool((assigned & stepped) - {""})


def _zero_argument(call: ast.Call) -> bool:
    """The call's only value is a literal ``0`` or ``0.0`` (``fill_(0)``, ``mul_(value=0.0)``)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return (
        len(values) == 1
        and isinstance(values[0], ast.Constant)
        and type(values[0].value) in (int, float)
        and values[0].value == 0
    )


def _is_grad(node: ast.expr) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"
