"""``TP121``: worker processes started by a script's module level, without a ``__main__`` guard.

.. rubric:: What it does

Reported, in the module-level code of a file (statements outside every function and class, and
outside an ``if`` whose test reads ``__name__``):

* (at the loop or call) an iteration of a ``DataLoader`` (``torch.utils.data``, through any import
  alias) built with ``num_workers=`` a non-zero literal or any other expression but ``0`` and a
  conditional (``num_workers=4``, ``num_workers=args.workers``): ``for batch in loader``, a
  comprehension over it, ``iter(loader)``, ``next(iter(loader))``, ``list(loader)``,
  ``enumerate(loader)``, ``zip(loader, …)``, ``tqdm(loader)``, where ``loader`` is such a
  ``DataLoader(...)`` call or a name assigned one at module level; and a module-level call of a
  function of the same file that is passed such a loader or whose own code iterates one by its
  module-level name (``train(epoch)``, as tutorials write it);
* (at the call) ``torch.multiprocessing.spawn`` or ``start_processes``, a ``Pool`` of
  ``multiprocessing`` or ``torch.multiprocessing``, or ``.start()`` of a ``Process`` of either.

Not reported: the same code inside a function, a class, or ``if __name__ == "__main__":``; a
``DataLoader`` with ``num_workers=0``, none, or a conditional (``4 if cuda else 0``); a loader
iterated only inside a function that module-level code does not call directly; a file written in
cells (a line ``# %%``, as sphinx-gallery, Jupytext and VS Code write them), which runs cell by
cell in one process that the workers do not run again. A notebook's cells
are read as module-level code too: there the workers do not run the notebook again (the error under
"spawn" is another one, a class of the notebook that the workers cannot find), but they still need
the code they run to be importable from a file.

.. rubric:: Why is this bad?

Under the "spawn" start method (the default on macOS and Windows, and what
``torch.multiprocessing.spawn`` always uses) and "forkserver" (the default on Linux since Python
3.14), each worker process starts a fresh interpreter that runs the script's module level again:
without the guard it reaches the loop again and tries to start workers of its own, and fails
with "An attempt has been made to start a new process before the current process has finished its
bootstrapping phase" (and "DataLoader worker … exited unexpectedly" in the main process).

.. rubric:: Example

.. code-block:: python

    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=4)
    for batch in loader:
        train_step(batch)

.. rubric:: Use instead

.. code-block:: python

    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(dataset, batch_size=32, num_workers=4)
        for batch in loader:
            train_step(batch)


    if __name__ == "__main__":
        main()
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import FUNCTIONS, NESTED
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP121",
    "lint",
    "spawn-main-guard",
    "worker processes started without a __main__ guard",
    "未加 __main__ 保护就启动工作进程",
    "this module-level code starts worker processes (DataLoader workers, mp.spawn): under "
    "spawn or forkserver each worker runs the module level again and fails while starting; put "
    'the work in a function called under if __name__ == "__main__":',
    "这段模块级代码会启动工作进程（DataLoader 的 worker、mp.spawn）：在 spawn 或 forkserver "
    "下每个 worker 都会重新执行模块级代码并在启动阶段失败；应把这些工作放进函数，"
    '在 if __name__ == "__main__": 下调用',
)

_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_STARTS = frozenset(
    f"{package}.{name}"
    for package in ("multiprocessing", "torch.multiprocessing")
    for name in ("spawn", "start_processes", "Pool", "pool.Pool", "spawn.spawn")
) - {"multiprocessing.spawn", "multiprocessing.spawn.spawn"}
_PROCESSES = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process"})
_WORDS = ("num_workers", "spawn", "start_processes", "Pool(", "Process(")
_CELLS = re.compile(r"^# ?%%", re.MULTILINE)
_WRAPPERS = frozenset({"iter", "next", "enumerate", "list", "zip", "tqdm", "tuple", "sorted"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where a script's module level starts worker processes outside a ``__main__`` guard."""
    if not context.imports.imports_torch() and "multiprocessing" not in context.source:
        return
    names = set(context.imports.names.values())
    if not (names & (_LOADERS | _PROCESSES) or any(n in _STARTS for n in names)) and not any(
        n in ("multiprocessing", "torch.multiprocessing", "torch.utils.data") for n in names
    ):
        return  # the common case, and a cheap one: nothing that starts processes
    if context.source and not any(word in context.source for word in _WORDS):
        return  # no num_workers=, no process started: the common case
    if _CELLS.search(context.source):
        return  # run cell by cell in one process (sphinx-gallery, Jupytext, VS Code): not a script
    imports = context.imports
    functions = {n.name: n for n in context.tree.body if isinstance(n, FUNCTIONS)}
    top = list(_module_level(context.tree))
    loaders: set[str] = set()
    processes: set[str] = set()
    for node in top:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = imports.qualified_name(node.value.func)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    if name in _LOADERS and _with_workers(node.value):
                        loaders.add(target.id)
                    elif name in _PROCESSES:
                        processes.add(target.id)
    found: set[tuple[int, int]] = set()
    covered: set[int] = set()  # the calls inside a place already reported (next(iter(loader)))
    for node in top:
        if id(node) in covered:
            continue
        if isinstance(node, ast.For | ast.comprehension) and _is_loader(
            imports, node.iter, loaders
        ):
            found.add(_where(node))
            covered.update(id(n) for n in ast.walk(node.iter))
        elif isinstance(node, ast.Call) and _starts(imports, node, loaders, processes, functions):
            found.add(_where(node))
            covered.update(id(n) for n in ast.walk(node))
    yield from sorted(found)


def _starts(imports, node: ast.Call, loaders: set, processes: set, functions: dict) -> bool:
    """Whether a module-level call starts worker processes (or iterates a loader with workers)."""
    func = node.func
    if imports.qualified_name(func) in _STARTS:
        return True
    if isinstance(func, ast.Attribute) and func.attr == "start" and not node.args:
        receiver = func.value
        return (isinstance(receiver, ast.Name) and receiver.id in processes) or (
            isinstance(receiver, ast.Call) and imports.qualified_name(receiver.func) in _PROCESSES
        )
    if isinstance(func, ast.Name) and func.id in _WRAPPERS and node.args:
        return _is_loader(imports, node, loaders)
    if isinstance(func, ast.Name) and func.id in functions and loaders:
        passed = any(
            _is_loader(imports, a, loaders) for a in [*node.args, *(k.value for k in node.keywords)]
        )
        return passed or _iterates(imports, functions[func.id], loaders)
    return False


def _where(node: ast.AST) -> tuple[int, int]:
    if isinstance(node, ast.comprehension):
        node = node.iter
    return node.lineno, node.col_offset


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes that run when the module runs: not in functions, classes or lambdas, nor in an
    ``if`` whose test reads ``__name__``."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, NESTED):
            continue
        if isinstance(node, ast.If) and any(
            isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test)
        ):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _with_workers(call: ast.Call) -> bool:
    value = next((k.value for k in call.keywords if k.arg == "num_workers"), None)
    if value is None or isinstance(value, ast.IfExp):
        return False
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int) and value.value != 0
    return True


def _is_loader(imports, node: ast.expr, loaders: set[str]) -> bool:
    """Whether ``node`` is a loader with workers, possibly wrapped (``enumerate(loader)``)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _WRAPPERS
        and node.args
    ):
        if any(_is_loader(imports, a, loaders) for a in node.args[1:]):
            return True
        node = node.args[0]
    if isinstance(node, ast.Name):
        return node.id in loaders
    return (
        isinstance(node, ast.Call)
        and imports.qualified_name(node.func) in _LOADERS
        and _with_workers(node)
    )


def _iterates(imports, function: ast.AST, loaders: set[str]) -> bool:
    """Whether a function's own code iterates a module-level loader by its name."""
    local = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
    usable = loaders - local
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, NESTED):
            continue
        if isinstance(node, ast.For | ast.comprehension) and _is_loader(imports, node.iter, usable):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False
