"""The analyses of the rules ``TP101`` to ``TP104``, shared by their modules.

``TP101`` and ``TP102`` read expressions in one pass over the module (:class:`_ExpressionChecker`),
``TP103`` reads loops (:class:`_LoopChecker`) and ``TP104`` edits through ``.data``
(:class:`_DataEditChecker`). Each pass runs once per module, whichever of its rules asked first,
and its findings are kept in the :class:`~torch_pitfalls.checks.Context`.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from torch_pitfalls.checks._ast import Imports
from torch_pitfalls.checks._ast import child_statements as _child_statements
from torch_pitfalls.checks._ast import statements as _statements

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

# Facts of a block of code, for TP103.
_BACKWARD, _STEP, _CLEARS, _BAD_CLOSURE = 1, 2, 4, 8
_FOREACH_ZERO = "torch._foreach_zero_"
_DISTRIBUTED = "torch.distributed"
# Tensor factories: what they return is in no graph (for TP104).
_FACTORIES = frozenset(
    {
        *("tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye"),
        *("rand", "randn", "randint", "arange", "linspace", "zeros_like", "ones_like"),
        *("empty_like", "full_like", "rand_like", "randn_like"),
    }
)

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)


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


def loop_findings(context) -> list[tuple[int, int, str]]:
    """``(line, col, "TP103")`` of each loop that never clears gradients."""
    found: list[tuple[int, int, str]] = []
    imports = _imports(context)
    # an MXNet/Gluon loop, whose file never imports torch, has nothing to clear
    if {"backward", "step"} <= context.attributes and imports.imports_torch():
        _LoopChecker(context.tree, imports, found).check()
    return found


def data_edit_findings(context) -> list[tuple[int, int, str]]:
    """``(line, col, "TP104")`` of each edit through ``.data`` before a backward."""
    found: list[tuple[int, int, str]] = []
    if {"backward", "data"} <= context.attributes:
        _DataEditChecker(context.tree, _imports(context), found).check()
    return found


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
        elif isinstance(node, _SCOPE_NODES):
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
        # function -> the kind every return of it gives (from an earlier reading), and the
        # kinds its returns give in this reading
        self.known_returns = known_returns or {}
        self.returns: dict[ast.AST, set] = {}
        # the module's own functions and classes, for ``self.x = Net()`` read in any method
        self.definitions = _Scope(parent=None)

    def check_module(self, tree: ast.AST) -> None:
        for node in getattr(tree, "body", ()):
            if isinstance(node, _FUNCTION_NODES):
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
            and _identifier(last.func) == "OrderedDict"
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
        methods = {m.name: m for m in node.body if isinstance(m, _FUNCTION_NODES)}
        method = methods.get("__call__")
        if method is None and node.bases:
            method = methods.get("forward")
        instance = None if method is None else self.function_kind(method)
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
        if isinstance(node, _FUNCTION_NODES):
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
            for statement in block:
                self.visit(statement)
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
            if not isinstance(method, _FUNCTION_NODES):
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
            and self.imports.qualified_name(node.func) in _DROPOUT_FUNCTIONS
        ):
            positional_training = len(node.args) > _TRAINING_POSITION or any(
                isinstance(a, ast.Starred) for a in node.args
            )
            keyword_training = any(k.arg in ("training", None) for k in node.keywords)
            if not positional_training and not keyword_training:
                self.report(node, "TP102")


def _is_inplace_method(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__") and name != "_"


class _DataEditChecker:
    """TP104: an edit through ``.data`` while a graph that may have saved the tensor is alive.

    In each function (and the module's own code), read in source order without the functions
    and classes defined in it: an edit through ``.data`` is reported when a ``.backward()``
    follows it whose tensor is rooted in a name (``loss`` in ``loss.backward()``,
    ``out.sum().backward()``, ``torch.autograd.backward(loss)``) assigned before the edit and
    not assigned again between the edit and the backward.
    """

    def __init__(self, tree: ast.AST, imports: Imports, found: list) -> None:
        self.tree = tree
        self.imports = imports
        self.found = found
        self.methods = {
            method
            for node in _statements(tree)
            if isinstance(node, ast.ClassDef)
            for method in node.body
            if isinstance(method, _FUNCTION_NODES)
        }

    def check(self) -> None:
        self._check_scope(self.tree, None)
        for node in _statements(self.tree):  # functions are statements: no expression needed
            if isinstance(node, ast.ClassDef):
                for method in node.body:
                    if isinstance(method, _FUNCTION_NODES):
                        receiver = _method_receiver(node, method)
                        self._check_scope(method, receiver[1] if receiver else None)
            elif isinstance(node, _FUNCTION_NODES) and node not in self.methods:
                self._check_scope(node, None)

    def _check_scope(self, scope: ast.AST, self_name: str | None) -> None:
        assigned: dict[str, list[_Assignment]] = {}
        edits: list[tuple[tuple[int, int], ast.AST, str | None, str | None]] = []
        backwards: list[tuple[tuple[int, int], str]] = []
        stack = list(scope.body)
        while stack:
            node = stack.pop()
            if isinstance(node, _SCOPE_NODES):
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                end = (node.end_lineno, node.end_col_offset)
                for target in targets:
                    alias = isinstance(target, ast.Name) and self._is_data(value, self_name)
                    assignment = _Assignment(
                        end,
                        _plain_name(value.value) if alias else None,
                        isinstance(value, ast.Call) and not self._is_factory(value),
                        frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
                        if value is not None
                        else frozenset(),
                    )
                    for name in _bound_names(target):
                        assigned.setdefault(name, []).append(assignment)
                    self._target_edits(node, target, self_name, edits)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.withitem | ast.comprehension):
                target = node.optional_vars if isinstance(node, ast.withitem) else node.target
                if target is not None:
                    end = (target.end_lineno, target.end_col_offset)
                    for name in _bound_names(target):
                        assigned.setdefault(name, []).append(_Assignment(end))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                self._call_events(node, self_name, edits, backwards)
        for position, node, alias, base in edits:
            if alias is not None:  # c.zero_() for c = x.data
                last = _last_before(assigned.get(alias, []), position)
                if last is None or last.data_of is None:
                    continue
                base = last.data_of
            if any(self._alive(assigned, position, at, root, base) for at, root in backwards):
                self.found.append((node.lineno, node.col_offset, "TP104"))

    @staticmethod
    def _alive(assigned, edit, backward, root: str, base: str | None) -> bool:
        """Whether the backward at ``backward`` runs through a graph alive at ``edit``: its
        tensor ``root`` is assigned before the edit and not after it, or assigned after it
        from the edited tensor ``base``, itself computed before the edit."""
        if not edit < backward:
            return False
        root_assignments = assigned.get(root, [])
        between = [a for a in root_assignments if edit < a.end < backward]
        if not between:
            return _last_before(root_assignments, edit) is not None
        last_base = None if base is None else _last_before(assigned.get(base, []), edit)
        if last_base is None or not last_base.computed:
            return False
        tainted = {base}  # the names computed from the edited tensor after the edit
        later = sorted(
            (a.end, name, a)
            for name, assignments in assigned.items()
            for a in assignments
            if edit < a.end < backward
        )
        for _, name, assignment in later:
            if assignment.names & tainted:
                tainted.add(name)
            else:
                tainted.discard(name)
        return root in tainted

    def _is_factory(self, call: ast.Call) -> bool:
        """``torch.zeros(...)`` and the like: a new tensor, in no graph."""
        name = self.imports.qualified_name(call.func) or ""
        return name.startswith("torch.") and name.rpartition(".")[2] in _FACTORIES

    def _call_events(self, node: ast.Call, self_name, edits, backwards) -> None:
        func, position = node.func, (node.lineno, node.col_offset)
        if func.attr == "backward":
            tensor = func.value
            if self.imports.qualified_name(func.value) == "torch.autograd":
                tensor = node.args[0] if node.args else None
            elif (self.imports.qualified_name(func.value) or "").startswith(_DISTRIBUTED):
                tensor = None
            root = _root_name(tensor)
            if root is not None:
                backwards.append((position, root))
        elif _is_inplace_method(func.attr):
            if self._is_data(func.value, self_name):
                edits.append((position, node, None, _plain_name(func.value.value)))
            elif isinstance(func.value, ast.Name):
                edits.append((position, node, func.value.id, None))

    def _target_edits(self, node, target: ast.expr, self_name, edits) -> None:
        """Edits by an assignment: ``x.data = ...``, ``x.data[i] = ...``, ``c[i] = ...`` and
        ``c += ...`` for ``c = x.data``."""
        for element in _target_elements(target):
            position = (element.lineno, element.col_offset)
            if isinstance(element, ast.Subscript):
                edited = element.value
                if self._is_data(edited, self_name):
                    edits.append((position, element, None, _plain_name(edited.value)))
                elif isinstance(edited, ast.Name):
                    edits.append((position, element, edited.id, None))
            elif isinstance(element, ast.Attribute) and self._is_data(element, self_name):
                edits.append((position, element, None, _plain_name(element.value)))
            elif isinstance(element, ast.Name) and isinstance(node, ast.AugAssign):
                edits.append((position, element, element.id, None))

    @staticmethod
    def _is_data(node: ast.expr | None, self_name: str | None) -> bool:
        """``x.data``, but not ``self.data`` (an object's own attribute) or ``p.grad.data``."""
        if not isinstance(node, ast.Attribute) or node.attr != "data":
            return False
        owner = node.value
        if isinstance(owner, ast.Name):
            return owner.id not in ("self", "cls", self_name)
        return not (isinstance(owner, ast.Attribute) and owner.attr == "grad")


def _target_elements(target: ast.expr) -> Iterator[ast.expr]:
    """The targets in ``a, (b[i], *c.x)``."""
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_elements(element)
    elif isinstance(target, ast.Starred):
        yield from _target_elements(target.value)
    else:
        yield target


@dataclass(frozen=True)
class _Assignment:
    """An assignment of a name, for TP104.

    Attributes:
        end: where the statement ends (line, column): the name holds the value from there.
        data_of: for ``c = x.data``, the name ``x`` (None otherwise).
        computed: the value is a call (not a tensor factory such as ``torch.zeros``).
        names: the names the value mentions.
    """

    end: tuple[int, int]
    data_of: str | None = None
    computed: bool = False
    names: frozenset[str] = frozenset()


def _last_before(assignments: list[_Assignment], position) -> _Assignment | None:
    """The assignment in force at ``position``, if any."""
    before = [a for a in assignments if a.end < position]
    return max(before, key=lambda a: a.end) if before else None


def _plain_name(node: ast.expr) -> str | None:
    """``x`` for the name ``x``; None for anything else (``net[0].weight``)."""
    return node.id if isinstance(node, ast.Name) else None


def _root_name(node: ast.expr | None) -> str | None:
    """``loss`` for ``loss``, ``out.sum()``, ``outs[0].mean()``; None if not rooted in a name."""
    while node is not None and not isinstance(node, ast.Name):
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return None
    return None if node is None else node.id


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
                if isinstance(child, _FUNCTION_NODES):
                    if isinstance(node, ast.ClassDef):
                        self.methods.setdefault((node, child.name), []).append(child)
                        self.receiver[child] = _method_receiver(node, child)
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
                return 0 if owner.startswith(_DISTRIBUTED) else _BACKWARD
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
        if _identifier(call.func.value) and "scaler" in _identifier(call.func.value).lower():
            return True
        if any(k.arg not in ("closure",) for k in call.keywords) or len(call.args) > 1:
            return False
        if not call.args:
            return True
        argument = call.args[0]
        if isinstance(argument, ast.Lambda):
            return True
        name = _identifier(argument)
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
            if isinstance(node, _SCOPE_NODES):
                continue
            facts |= self._own_facts(node)
            if isinstance(node, ast.Call):
                callees += self._callees(node, receiver)
            stack.extend(ast.iter_child_nodes(node))
        return facts, callees

    def _summarise(self) -> None:
        """What each function does, with what its callees do (to a fixed point)."""
        direct = {f: self._direct(f.body, self.receiver[f]) for f in self.receiver}
        self.facts = {f: facts for f, (facts, _) in direct.items()}
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
            if isinstance(child, _FUNCTION_NODES):  # runs elsewhere: its own scan
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
            isinstance(node, _LOOP_NODES)
            and (
                (facts & (_BACKWARD | _STEP) == _BACKWARD | _STEP and not facts & _CLEARS)
                or facts & _BAD_CLOSURE
            )
            and not reported
        ):
            self.found.append((node.lineno, node.col_offset, "TP103"))
            reported = True
        return facts, reported


def _method_receiver(cls: ast.ClassDef, method: ast.AST) -> tuple[ast.ClassDef, str] | None:
    """``(cls, name of the first parameter)`` for a method, None for a static method."""
    positional = (*method.args.posonlyargs, *method.args.args)
    decorators = {d.id if isinstance(d, ast.Name) else None for d in method.decorator_list}
    if not positional or "staticmethod" in decorators:
        return None
    return cls, positional[0].arg


def _identifier(node: ast.expr) -> str:
    """The last name of ``a.b.c`` or ``c``; ``""`` for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


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
