"""The analysis of ``TP101`` and ``TP102``: what expressions hold, in one pass over the module.

The pass runs once per module, whichever of the two rules asked first, and its findings are
kept in the :class:`~torch_pitfalls.lint.context.Context`.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED, identifier
from torch_pitfalls.lint.context import Imports
from torch_pitfalls.lint.context import statements as _statements

# Qualified names the rules look for, as the imports resolve them.
_NN = "torch.nn"
_FUNCTIONAL = "torch.nn.functional"
_SOFTMAX_FUNCTIONS = frozenset(
    {"torch.softmax", f"{_FUNCTIONAL}.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
)
_SOFTMAX_MODULES = frozenset(
    f"{_NN}{package}.{name}"
    for package in ("", ".modules", ".modules.activation")
    for name in ("Softmax", "Softmax2d")
)
_SEQUENTIAL = frozenset(
    f"{_NN}{package}.Sequential" for package in ("", ".modules", ".modules.container")
)
_LOSS_FUNCTIONS = frozenset({f"{_FUNCTIONAL}.cross_entropy", f"{_FUNCTIONAL}.nll_loss"})
_LOSS_MODULES = frozenset(
    f"{_NN}{package}.{name}"
    for package in ("", ".modules", ".modules.loss")
    for name in ("CrossEntropyLoss", "NLLLoss")
)
# training is the third parameter of each, and defaults to True (alpha_dropout's to False).
_DROPOUT_FUNCTIONS = frozenset(
    f"{_FUNCTIONAL}.{name}" for name in ("dropout", "dropout1d", "dropout2d", "dropout3d")
)
_TRAINING_POSITION = 2
_KNOWN_NAMES = (
    _SOFTMAX_FUNCTIONS
    | _SOFTMAX_MODULES
    | _SEQUENTIAL
    | _LOSS_FUNCTIONS
    | _LOSS_MODULES
    | _DROPOUT_FUNCTIONS
)

# Functions that only run in training (Lightning's hook, and the usual name of one step).
_TRAINING_FUNCTIONS = frozenset({"training_step", "train_step"})

# What an expression is, for TP101: one of these strings, ("calls", kind) for a function,
# module or class whose call gives that kind, or ("tuple", (kind, ...)) for a tuple of them.
_SOFTMAX = "softmax output"
_LOSS_CALLABLE = "cross-entropy or NLL function or module"
_CALLS, _TUPLE = "calls", "tuple"
_SOFTMAX_CALLABLE = (_CALLS, _SOFTMAX)
# How many times more the module is read when a reading learnt what some of its functions
# return (a function that returns what another returns needs one more reading).
_RETURN_READINGS = 3


# The words without which neither TP101 nor TP102 can report (a loss or a functional dropout is
# always named in the text: in the call, or in the import that renames it).
_ANY_LOSS_OR_DROPOUT = re.compile(r"cross_entropy|nll_loss|CrossEntropyLoss|NLLLoss|dropout")


def expression_findings(context) -> list[tuple[int, int, str]]:
    """``(line, col, id)`` of ``TP101`` and ``TP102`` in the module (one reading, or a few)."""
    if (
        "expressions" not in context.cache
        and context.source
        and not _ANY_LOSS_OR_DROPOUT.search(context.source)
    ):
        context.cache["expressions"] = []  # no name either rule reports on: nothing to read
    if "expressions" not in context.cache:
        imports = _imports(context)
        # Each reading learns what the module's functions return; when it learnt something
        # (rare: a function returning a softmax or a loss), read again with that knowledge.
        active = frozenset({"TP101", "TP102"})
        checker = _ExpressionChecker(imports, active, [])
        checker.check_module(context.tree)
        known_returns = checker.learnt_returns()
        readings = 1
        while known_returns and readings <= _RETURN_READINGS:
            checker = _ExpressionChecker(imports, active, [], known_returns)
            checker.check_module(context.tree)
            readings += 1
            if checker.learnt_returns() == known_returns:
                break
            known_returns = checker.learnt_returns()
        context.cache["expressions"] = checker.found
    return context.cache["expressions"]


def _imports(context) -> Imports:
    if "imports" not in context.cache:
        context.cache["imports"] = context.imports.knowing(_KNOWN_NAMES)
    return context.cache["imports"]


def _bound_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``; not ``a.x`` or ``a[i]``)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Parameters and names a function assigns (not in nested functions or classes)."""
    arguments = function.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    names = {a.arg for a in parameters}
    stack = list(function.body) if isinstance(function.body, list) else [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, NESTED):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _merge_kinds(states: list[dict[str, str | None]]) -> dict[str, str | None]:
    """What names hold after branches that each left one of ``states``: a softmax output if it
    is one on any branch; otherwise a kind all branches agree on, else nothing known."""
    if len(states) == 1:
        return states[0]
    merged: dict[str, str | None] = {}
    for name in set().union(*states):
        kinds = {state.get(name) for state in states}
        merged[name] = _SOFTMAX if _SOFTMAX in kinds else kinds.pop() if len(kinds) == 1 else None
    return merged


@dataclass
class _Scope:
    """A module, class body or function, as the expression checker walks it.

    Attributes:
        parent: the enclosing scope (None for the module).
        node: the function, lambda or class (None for the module).
        in_training: inside a function that only runs in training (``training_step``,
            ``train_step``) or nested in one: TP102 is silent there.
        self_name: the first parameter of the method this code is in (a closure's too).
        self_kinds: for a class body, what each ``self.attr`` of its methods is (computed when
            first needed); a function reads its class's.
    """

    parent: _Scope | None
    node: ast.AST | None = None
    in_training: bool = False
    self_name: str | None = None
    self_kinds: Callable[[], dict[str, str | None]] | None = None

    def __post_init__(self) -> None:
        self.current: dict[str, str | None] = {}  # name -> kind, as of the statement being read
        self.assigned: dict[str, set[str | None]] = {}  # name -> every kind assigned to it
        self._local: set[str] | None = None

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    def bind(self, name: str, kind: str | None) -> None:
        self.current[name] = kind
        self.assigned.setdefault(name, set()).add(kind)

    def lookup(self, name: str) -> str | None:
        """What ``name`` holds here: as last assigned above, else as every enclosing assignment
        agrees (class bodies are skipped, as Python does)."""
        if name in self.current:
            return self.current[name]
        scope, outer = self.parent, None
        while scope is not None:
            if not scope.is_class and name in scope.assigned:
                kinds = scope.assigned[name]
                outer = next(iter(kinds)) if len(kinds) == 1 else None
                break
            scope = scope.parent
        if outer is None or self.node is None or self.is_class:
            return outer
        if self._local is None:  # only now: a rare question, and a walk of the function
            self._local = _local_names(self.node)
        return None if name in self._local else outer


def _tests_training(test: ast.expr) -> bool:
    """Whether an ``if`` test holds only in training: it reads ``.training`` (``self.training``,
    ``self.training and p > 0``), negates nothing (``not self.training`` is evaluation) and has
    no ``or``."""
    nodes = list(ast.walk(test))
    return any(isinstance(n, ast.Attribute) and n.attr == "training" for n in nodes) and not any(
        (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
        or (isinstance(n, ast.BoolOp) and isinstance(n.op, ast.Or))
        for n in nodes
    )


class _ExpressionChecker(ast.NodeVisitor):
    """TP101 and TP102: one walk of the module, each function's statements in order.

    Function bodies are read after the code around them, so that a function sees every
    assignment of the enclosing function or module.
    """

    def __init__(
        self,
        imports: Imports,
        active: frozenset[str],
        found: list,
        known_returns: dict | None = None,
    ) -> None:
        self.imports = imports
        self.attributes: set[str] = set()  # every attribute name read or written
        self.active = active
        self.found = found
        self.scope = _Scope(parent=None)
        self.deferred: deque[tuple[ast.AST, _Scope]] = deque()
        self.ending_ifs: set[ast.If] = set()  # read, and no branch of them flows on
        self.training_branches = 0  # depth of ``if self.training`` bodies being read (TP102)
        # function -> the kind every return of it gives (from an earlier reading), and the
        # kinds its returns give in this reading
        self.known_returns = known_returns or {}
        self.returns: dict[ast.AST, set] = {}
        # the module's own functions and classes, for ``self.x = Net()`` read in any method
        self.definitions = _Scope(parent=None)

    def check_module(self, tree: ast.AST) -> None:
        for node in getattr(tree, "body", ()):
            if isinstance(node, FUNCTIONS):
                self.definitions.bind(node.name, self.function_kind(node))
            elif isinstance(node, ast.ClassDef):
                self.definitions.bind(node.name, self.class_kind(node))
        self.generic_visit(tree)
        while self.deferred:
            function, scope = self.deferred.popleft()
            self._visit_function_body(function, scope)

    def report(self, node: ast.AST, rule_id: str) -> None:
        self.found.append((node.lineno, node.col_offset, rule_id))

    def visit(self, node: ast.AST) -> None:
        """Statements dispatch to their ``visit_*`` method; expressions go to :meth:`expression`."""
        if isinstance(node, ast.expr):
            self.expression(node)
        else:
            super().visit(node)

    def expression(self, root: ast.expr) -> None:
        """Check an expression and everything in it, with a stack: an expression can nest
        deeper than Python's recursion limit (a generated ``a + b + ...`` of a thousand terms)."""
        stack: list[ast.AST] = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Lambda):
                self.visit_FunctionDef(node)  # defaults now, body later
                continue
            if isinstance(node, ast.Attribute):
                self.attributes.add(node.attr)
            elif isinstance(node, ast.Call):
                self.check_call(node)
            elif isinstance(node, ast.NamedExpr):
                self.bind(node.target, self.value_kind(node.value))
            elif isinstance(node, ast.Yield | ast.YieldFrom):
                self._returns(None)  # a generator
            stack.extend(ast.iter_child_nodes(node))

    # What an expression is ------------------------------------------------------------------

    def kind(self, node: ast.expr) -> str | None:
        """``_SOFTMAX``, ``_LOSS_CALLABLE``, ``(_CALLS, kind)``, ``(_TUPLE, kinds)`` or None."""
        if isinstance(node, ast.Call):
            name = self.imports.qualified_name(node.func)
            if name in _SOFTMAX_FUNCTIONS:
                return _SOFTMAX
            if name in _SOFTMAX_MODULES:
                return _SOFTMAX_CALLABLE
            if name in _LOSS_MODULES:
                return _LOSS_CALLABLE
            if name in _SEQUENTIAL:
                return self._sequential_kind(node)
            if (
                name is None
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "softmax"
            ):
                return _SOFTMAX  # the tensor method, x.softmax(dim)
            called = self.kind(node.func)
            return called[1] if isinstance(called, tuple) and called[0] == _CALLS else None
        if isinstance(node, ast.Tuple):
            kinds = tuple(None if isinstance(e, ast.Starred) else self.kind(e) for e in node.elts)
            return (_TUPLE, kinds) if any(kinds) else None
        if isinstance(node, ast.Subscript):
            whole = self.kind(node.value)
            index = node.slice
            if (
                isinstance(whole, tuple)
                and whole[0] == _TUPLE
                and isinstance(index, ast.Constant)
                and type(index.value) is int
                and -len(whole[1]) <= index.value < len(whole[1])
            ):
                return whole[1][index.value]
            return None
        if isinstance(node, ast.IfExp):
            kinds = {self.kind(node.body), self.kind(node.orelse)}
            return _SOFTMAX if _SOFTMAX in kinds else None
        if isinstance(node, ast.NamedExpr):
            return self.kind(node.value)
        name = self.imports.qualified_name(node)
        if name is not None:
            if name in _SOFTMAX_FUNCTIONS:
                return _SOFTMAX_CALLABLE
            return _LOSS_CALLABLE if name in _LOSS_FUNCTIONS else None
        if isinstance(node, ast.Name):
            return self.scope.lookup(node.id)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.scope.self_name
            and self.scope.self_kinds is not None
        ):
            return self.scope.self_kinds().get(node.attr)
        return None

    def _sequential_kind(self, call: ast.Call):
        """An ``nn.Sequential`` is what its last layer is, if that is known (a softmax module):
        ``nn.Sequential(a, b, nn.Softmax(1))`` or ``nn.Sequential(OrderedDict([..., ("s",
        nn.Softmax(1))]))``."""
        if not call.args or call.keywords or isinstance(call.args[-1], ast.Starred):
            return None
        last = call.args[-1]
        if (
            len(call.args) == 1
            and isinstance(last, ast.Call)
            and identifier(last.func) == "OrderedDict"
            and len(last.args) == 1
            and isinstance(last.args[0], ast.List | ast.Tuple)
            and last.args[0].elts
        ):
            item = last.args[0].elts[-1]
            if not (isinstance(item, ast.Tuple) and len(item.elts) == 2):
                return None
            last = item.elts[1]
        kind = self.kind(last)
        return kind if isinstance(kind, tuple) and kind[0] == _CALLS else None

    def function_kind(self, node: ast.AST):
        """``(_CALLS, kind)`` for a function every ``return`` of which gives that kind (as
        learnt by an earlier reading of the module), else None."""
        returned = self.known_returns.get(node)
        return None if returned is None else (_CALLS, returned)

    def class_kind(self, node: ast.ClassDef):
        """What calling the class gives: an instance whose call gives what its ``__call__``,
        or for a subclass (an ``nn.Module``) without one its ``forward``, returns."""
        methods = {m.name: m for m in node.body if isinstance(m, FUNCTIONS)}
        method = methods.get("__call__")
        if method is None and node.bases:
            method = methods.get("forward")
        if method is None:
            # neither defined here: what a base class of the same module gives, the first one
            # that gives something (``class Net(Base)``, ``Base.forward`` returning a softmax)
            for base in node.bases:
                inherited = (
                    self.definitions.current.get(base.id) if isinstance(base, ast.Name) else None
                )
                if isinstance(inherited, tuple) and inherited[0] == _CALLS:
                    return inherited
            return None
        instance = self.function_kind(method)
        return None if instance is None else (_CALLS, instance)

    def learnt_returns(self) -> dict:
        """What each function read returns: one kind that every ``return`` gives."""
        learnt = {}
        for function, kinds in self.returns.items():
            if len(kinds) == 1 and None not in kinds:
                learnt[function] = next(iter(kinds))
        return learnt

    def _returns(self, kind) -> None:
        """Record what a ``return`` (or a ``yield``: None) of the current function gives."""
        node = self.scope.node
        if isinstance(node, FUNCTIONS):
            self.returns.setdefault(node, set()).add(kind)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.visit(node.value)
        self._returns(self.value_kind(node.value) if node.value is not None else None)

    # Statements that bind names -------------------------------------------------------------

    def bind(self, target: ast.expr, kind: str | None) -> None:
        """Record what an assignment target now holds."""
        if isinstance(target, ast.Name):
            self.scope.bind(target.id, kind)
            return
        if (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(kind, tuple)
            and kind[0] == _TUPLE
            and len(kind[1]) == len(target.elts)
            and not any(isinstance(e, ast.Starred) for e in target.elts)
        ):
            for element, element_kind in zip(target.elts, kind[1], strict=True):
                self.bind(element, element_kind)
            return
        for name in _bound_names(target):
            self.scope.bind(name, None)
        self.visit(target)  # calls in subscripts and attribute owners

    def value_kind(self, node: ast.expr) -> str | None:
        """The kind of an assigned value; only TP101 needs it."""
        return self.kind(node) if "TP101" in self.active else None

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        kind = self.value_kind(node.value)
        for target in node.targets:
            self.bind(target, kind)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self.bind(node.target, self.value_kind(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self.bind(node.target, None)

    def visit_If(self, node: ast.If) -> None:
        """Read each branch from the state before the ``if``; merge what the branches that flow
        on leave (a branch ending in ``return``, ``raise``, ``continue`` or ``break`` does not)."""
        self.visit(node.test)
        scope = self.scope
        before = scope.current
        flowing = []
        for block in (node.body, node.orelse):
            scope.current = dict(before)
            training = block is node.body and _tests_training(node.test)
            self.training_branches += training  # ``if self.training:``: runs in training only
            for statement in block:
                self.visit(statement)
            self.training_branches -= training
            if not self._ends_flow(block):
                flowing.append(scope.current)
        if not flowing:
            self.ending_ifs.add(node)
        scope.current = _merge_kinds(flowing) if flowing else before

    def _ends_flow(self, block: list[ast.stmt]) -> bool:
        """Whether a block (already read) never flows on to the statement after it."""
        return any(
            isinstance(s, ast.Return | ast.Raise | ast.Continue | ast.Break) or s in self.ending_ifs
            for s in block
        )

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.bind(node.target, None)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncWith = visit_With

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self.scope.bind((alias.asname or alias.name).partition(".")[0], None)

    visit_ImportFrom = visit_Import

    # Scopes ---------------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        for expression in (*node.args.defaults, *node.args.kw_defaults):
            if expression is not None:
                self.visit(expression)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            self.scope.bind(node.name, self.function_kind(node))
        parent = self.scope
        in_training = parent.in_training or (
            not isinstance(node, ast.Lambda) and node.name in _TRAINING_FUNCTIONS
        )
        self_name = parent.self_name  # a closure in a method sees the method's self
        if parent.is_class and not isinstance(node, ast.Lambda):
            positional = (*node.args.posonlyargs, *node.args.args)
            self_name = positional[0].arg if positional else None
        scope = _Scope(parent, node, in_training, self_name, parent.self_kinds)
        self.deferred.append((node, scope))

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_function_body(self, node, scope: _Scope) -> None:
        outer, self.scope = self.scope, scope
        for statement in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(statement)
        self.scope = outer

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(expression)
        self.scope.bind(node.name, self.class_kind(node))
        outer = self.scope
        self.scope = _Scope(
            outer,
            node,
            outer.in_training,
            self_kinds=functools.cache(functools.partial(self._self_kinds, node)),
        )
        for statement in node.body:
            self.visit(statement)
        self.scope = outer

    def _self_kinds(self, node: ast.ClassDef) -> dict[str, str | None]:
        """What each ``self.attr`` is, from its assignments in the methods, if they agree."""
        assigned: dict[str, set] = {}
        for method in node.body:
            if not isinstance(method, FUNCTIONS):
                continue
            if self.function_kind(method) is not None:  # self.predict(x)
                assigned.setdefault(method.name, set()).add(self.function_kind(method))
            positional = (*method.args.posonlyargs, *method.args.args)
            if not positional:
                continue
            self_name = positional[0].arg
            for statement in _statements(method):
                if isinstance(statement, ast.Assign):
                    targets, value = statement.targets, statement.value
                elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    targets, value = [statement.target], statement.value
                else:
                    continue
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == self_name
                    ):
                        assigned.setdefault(target.attr, set()).add(self._value_kind(value))
        return {attr: next(iter(k)) if len(k) == 1 else None for attr, k in assigned.items()}

    def _value_kind(self, node: ast.expr) -> str | None:
        """The kind of a value from the imports alone (not local names), for ``self.x = ...``."""
        outer, self.scope = self.scope, _Scope(parent=self.definitions)
        try:
            return self.kind(node)
        finally:
            self.scope = outer

    # Calls and edits ------------------------------------------------------------------------

    def check_call(self, node: ast.Call) -> None:
        """TP101 and TP102."""
        if "TP101" in self.active and self.kind(node.func) == _LOSS_CALLABLE:
            loss_input = node.args[0] if node.args else None
            if loss_input is None:
                loss_input = next((k.value for k in node.keywords if k.arg == "input"), None)
            if (
                loss_input is not None
                and not isinstance(loss_input, ast.Starred)
                and self.kind(loss_input) == _SOFTMAX
            ):
                self.report(node, "TP101")
        if (
            "TP102" in self.active
            and not self.scope.in_training
            and not self.training_branches
            and self.imports.qualified_name(node.func) in _DROPOUT_FUNCTIONS
        ):
            positional_training = len(node.args) > _TRAINING_POSITION or any(
                isinstance(a, ast.Starred) for a in node.args
            )
            keyword_training = any(k.arg in ("training", None) for k in node.keywords)
            if not positional_training and not keyword_training and not self._caller_sets_p(node):
                self.report(node, "TP102")

    def _caller_sets_p(self, call: ast.Call) -> bool:
        """Whether the dropout's ``p`` is a parameter of the plain function (not a method) it is
        called in: PyTorch's own functional attention passes ``dropout_p=0.0`` outside training,
        and code written after it (``def attention(q, k, v, dropout_p=0.0)``) leaves that to its
        caller, which the checker does not see."""
        p = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "p"), None)
        )
        function = self.scope.node
        if not isinstance(p, ast.Name) or not isinstance(function, FUNCTIONS):
            return False
        if self.scope.self_name is not None:
            return False  # a method: its p is the module's, and self.training is at hand
        arguments = function.args
        names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        return p.id in names
