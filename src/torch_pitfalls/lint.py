"""The static checker: PyTorch pitfalls found in source code, without running it or importing torch.

Run it on files or folders (folders are searched for ``*.py`` and ``*.ipynb``)::

    python -m torch_pitfalls.lint [--select IDS] [--ignore IDS] [--enable IDS] [--statistics]
                                  [--language LANG] [--base-url URL] PATH...

(``--select ALL`` runs every static rule, opt-in ones included, as ruff's does;
``--statistics`` prints, instead of the findings, how many each rule gave, zeros included,
and with several paths a table of counts per path: see :func:`statistics`. The exit status is
the same as without it. ``nox -s survey -- FOLDER...`` runs both over folders of real code.)

(``--language`` takes ``en`` or ``zh_CN``, or any spelling
:func:`torch_pitfalls.rules.resolve_language` accepts, ``zh``, ``zh-CN``…, as
``TORCH_PITFALLS_LANGUAGE`` does.)

or through flake8 (the plugin :class:`Flake8Checker`, error codes ``TP1xx``), or as the
pre-commit hook ``torch-pitfalls-lint``. Each finding is printed as
``path:line:col: ID message → URL``, where the URL is the page that explains the pitfall. The
rules, their messages (English and Simplified Chinese) and their pages come from the registry,
:mod:`torch_pitfalls.rules`; the checks are on the standard library's :mod:`ast`.

Rules (``kind == "lint"`` in :data:`torch_pitfalls.rules.RULES`):

``TP101`` (page ``cross-entropy-expects-logits``)
    A softmax output passed as the input (first argument or ``input=``) of
    ``F.cross_entropy``, ``F.nll_loss`` or an ``nn.CrossEntropyLoss`` / ``nn.NLLLoss`` instance.
    The softmax is ``torch.softmax``, ``F.softmax``, ``torch.special.softmax``,
    ``torch.Tensor.softmax``, the tensor method ``x.softmax(...)``, an ``nn.Softmax`` or
    ``nn.Softmax2d`` instance called, or an ``nn.Sequential`` whose last layer is one
    (``nn.Sequential(nn.Linear(128, 10), nn.Softmax(dim=1))``, also given as an ``OrderedDict``);
    it is passed directly, through either branch of a conditional expression, or through a
    variable that holds such a softmax at the call, on some path through the function's ``if``
    statements (see below). A function or method of the same module every ``return`` of which
    gives a softmax output (``def predict(x): return F.softmax(...)``) gives one when called
    (``predict(x)``, ``self.predict(x)``), and so does an instance of a class of the module
    whose ``__call__``, or for a subclass (an ``nn.Module``) without one whose ``forward``,
    returns one (``model = Net()`` then ``model(x)``; ``self.net = Net()`` then
    ``self.net(x)``); a tuple returned (``return validity, label``) is followed when it is
    unpacked into as many names or indexed with a constant. A ``log_softmax`` is never flagged,
    nor a softmax passed as the target or used otherwise (``softmax(...).log()``,
    ``torch.log(...)``), nor a function some return of which gives something else, nor a
    generator. Reported at the loss call.
``TP102`` (page ``functional-dropout``)
    ``F.dropout``, ``F.dropout1d``, ``F.dropout2d`` or ``F.dropout3d`` called without
    ``training=``: not as a keyword, not as the third positional argument, and no ``*args`` or
    ``**kwargs`` that could carry it. ``F.alpha_dropout`` and ``F.feature_alpha_dropout`` are not
    checked: their ``training`` defaults to ``False``. Not reported in a function named
    ``training_step`` (PyTorch Lightning's hook) or ``train_step``, or in code nested in one:
    such code only runs in training, where ``training=True`` is what it means (dropout on the
    inputs as noise, for example); a ``forward``, a ``validation_step`` or any other function
    is reported, since it also runs in evaluation. Reported at the call.
``TP103`` (page ``backward-step-zero-grad``)
    In a module that imports torch (an MXNet/Gluon or Paddle loop, whose file never does, is not
    checked), a ``for`` or ``while`` loop whose body calls ``.backward()`` and an optimizer's
    ``.step()`` but never clears gradients. ``x.backward()`` is any call of that name except
    ``torch.distributed.autograd.backward(context_id, ...)`` (distributed autograd keeps the
    gradients per context). A step is ``x.step()`` with no argument or only a closure: a
    ``lambda``, a function of the module, a name that says ``closure``, or ``closure=``; or with an
    argument named like an optimizer (a name or attribute that contains ``optim``, is ``opt`` or
    starts with ``opt_``), or on a receiver whose name contains ``scaler``
    (``scaler.step(optimizer)``). A step with another argument is not an optimizer's:
    ``env.step(action)`` in a reinforcement-learning loop, Gluon's ``trainer.step(batch_size)``,
    the distributed optimizer's ``opt.step(context_id)``. A loop is reported when it never clears
    gradients: no ``.zero_grad()`` on anything, no assignment to or ``del`` of a ``.grad``
    attribute (``p.grad = None``), no ``.grad.zero_()``, ``.grad.fill_(0)`` or ``.grad.mul_(0)`` (a
    literal ``0`` or ``0.0``), no ``torch._foreach_zero_(...)``. Calls to functions of the same
    module count as their bodies (transitively): a bare ``helper()`` is any function of the module
    by that name, ``self.helper()`` a method of the enclosing class, where ``self`` is whatever the
    method names its first parameter (``trainer.reset()`` in ``def fit(trainer)``; nothing in a
    ``@staticmethod``). Clearing under an ``if`` (every k steps) counts as clearing. Code in a
    function defined inside the loop (an LBFGS ``closure``) is not part of the loop, but the loop
    is also reported when it calls ``.step(closure)`` or ``.step(closure=closure)`` with a function
    of that name defined in the same function (or module) as the loop, inside the loop or not, that
    calls ``.backward()`` and never clears gradients (through its callees too; when several
    functions have the name, all of them; a ``lambda`` is not checked): LBFGS calls the closure
    several times per step, so the closure itself must call ``zero_grad()``, whatever the loop
    clears. Nested loops report the innermost loop that has the problem, once: an outer loop is not
    reported again for a problem of a loop inside it. Always reported at the loop's ``for`` or
    ``while`` (for a closure too, not at its ``def``).
``TP104`` (page ``data-vs-detach``; opt-in, off unless enabled or selected)
    An edit through ``.data`` while a graph that may have saved the tensor is alive: between a
    forward and its backward, in one function (or the module's own code), read in source order.
    An edit is an in-place method (name ending in one ``_``) called on ``x.data``, an item
    assignment ``x.data[i] = ...``, an augmented assignment ``x.data += ...``, a replacement
    ``x.data = ...``, or the same on a name assigned from ``x.data`` (``c = out.data;
    c.zero_()``). It is reported when a ``.backward()`` (or ``torch.autograd.backward(t)``)
    follows it in the same function whose tensor is rooted in a name (``loss`` in
    ``loss.backward()``, ``out`` in ``out.sum().backward()``) that is either assigned before
    the edit and not again before the backward, or computed after the edit from ``x`` itself,
    when ``x`` is a plain name computed by a call before the edit (``dist =
    model(s).gather(...); dist.data.clamp_(...); loss = -(t * dist.log()).sum();
    loss.backward()``), through any number of assignments. Not reported: edits with no such
    backward after them (initialisation of any name, ``fuse()`` / ``reparameterize()``
    copying into a module built a line earlier, functions passed to ``model.apply``, updates
    after the backward such as hand-written SGD, soft updates of target networks or WGAN
    clipping), edits of a module's tensors before a forward (``net[0].weight.data.normal_()``
    then a training loop), of a tensor from a factory (``torch.zeros``), on ``self.data`` /
    ``cls.data`` (a class's own attribute, not a tensor's) or ``x.grad.data`` (a gradient is
    not saved for backward); a backward in another function, a loop's next iteration, or a
    loss computed from the edited tensor through a call of another function. Reported at the
    edit. Reading through ``.data`` is not reported. On the ten public codebases measured for
    issue 14 (330 000 lines), the rule as it was (every edit outside functions named like
    initialisation) gave 160 findings, none of them an edit of a live graph; it now gives two,
    both real (a clamp through ``.data`` between the forward and the backward of a DQN).

Names are resolved through the module's imports, wherever they are: ``import torch as T``,
``import torch.nn.functional as F``, ``from torch.nn import functional as Fn``,
``from torch import nn``, ``from torch.nn.functional import cross_entropy as ce`` and
``from torch.nn.functional import *``. Softmax outputs, and loss and softmax modules and
functions, are also followed through assignments: a name in the same function (or, when the
function never assigns it, in an enclosing function or the module, if every assignment there
agrees), and ``self.attr`` assigned in any method of the same class
(``self.criterion = nn.CrossEntropyLoss()`` in ``__init__``). Not resolved: relative imports,
attributes of other objects (``trainer.criterion``, ``model.predict(x)``), functions and
classes of other modules, ``functools.partial``, containers other than ``nn.Sequential``
(``nn.ModuleList``, ``nn.Sequential(*layers)``), and rebinding an imported name. What the
module's functions return is learnt by reading the module: when a reading learns that some
function returns a softmax (or a loss function or module), the module is read again with that
knowledge, up to three more times (a function returning what another returns takes one more
reading). For TP101 the analysis reads each function top to bottom, and follows ``if``
statements: each branch starts from what held before the ``if``, a branch that ends in
``return``, ``raise``, ``continue`` or ``break`` (or in an ``if`` none of whose branches flow
on) does not flow on, and after the ``if`` the branches that do are merged: a name holds a
softmax output if it does on any of them (a softmax on some path is reported), and a loss or
softmax function or module only if all of them agree. Other statements (loops, ``try``,
``with``, ``match``) are read straight through, once, and calls are not followed.

Suppress a finding with ``# noqa: TP101`` (several ids: ``# noqa: TP101,TP102``; a prefix such as
``# noqa: TP1`` covers every id that starts with it) or a bare ``# noqa`` on the reported line,
with flake8's rules: the word ``noqa`` in any case but the ids in capitals, and a comment at the
end of a multi-line string or backslash-continued line covers all its lines. ``# flake8: noqa``
(a whole file) is not read by the command line.

Jupyter notebooks (``*.ipynb``) are checked too: their code cells, read as one module, with cell
magics (``%%bash``) skipped and line magics and shell commands (``%time``, ``!pip``) read as
``pass``; a finding is printed as ``path:cell N:line:col: ...``, as ruff prints it (see
:func:`check_paths`).

Exit status of the command line: 0 nothing found, 1 findings, 2 a usage error or a file that
could not be read or parsed (printed as ``path:line:col: E999 SyntaxError: ...`` or ``E902``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import functools
import importlib.metadata
import io
import json
import os
import re
import sys
import tokenize
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from torch_pitfalls import checks, rules
from torch_pitfalls.checks._ast import Imports
from torch_pitfalls.checks._ast import child_statements as _child_statements
from torch_pitfalls.checks._ast import statements as _statements

__all__ = ["Finding", "Flake8Checker", "check_paths", "check_source", "main", "statistics"]

SKIPPED_DIRECTORIES = frozenset({"__pycache__", "build"})
"""Folders :func:`check_paths` does not enter, besides hidden ones (``.git``, ``.nox``, ``.venv``)
(a folder given explicitly is searched whatever its name)."""

PARSE_ERROR = "E999"
"""The id of a finding for a file that is not valid Python (flake8's code)."""

READ_ERROR = "E902"
"""The id of a finding for a path that cannot be read, or a notebook that is not valid notebook
JSON (flake8's code)."""

RECURSION_LIMIT = 20_000
"""The recursion limit the analysis runs under (raised for its duration only, never lowered):
enough for the deepest code Python's own parser accepts (an ``elif`` chain of about 2 900
branches)."""

NOTEBOOK_SUFFIX = ".ipynb"

try:
    _VERSION = importlib.metadata.version("torch-pitfalls")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
    _VERSION = "unknown"

_STATIC_IDS = tuple(r.id for r in rules.RULES if r.kind == "lint")
_CHECK_IDS = frozenset(m.RULE.id for m in checks.modules())

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

# flake8's own pattern (flake8.defaults.NOQA_INLINE_REGEXP), so both read a comment the same way.
_NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)


@functools.total_ordering
@dataclass(frozen=True)
class Finding:
    """One pitfall found in a file.

    Findings sort by path, cell, line, column and id, the order the command line prints them in;
    ``str(finding)`` is the printed line, ``path:line:col: ID message → URL``, or for a notebook
    ``path:cell N:line:col: ID message → URL`` (as ruff prints it).

    Attributes:
        path: the file, as given to :func:`check_source` or found by :func:`check_paths`.
        line: line number, from 1.
        col: column, from 1 (as flake8 prints it; :mod:`ast` counts from 0).
        rule: the rule id (``TP101``…, see :data:`torch_pitfalls.rules.RULES`), or
            ``E999`` / ``E902`` (flake8's codes) for a file that could not be checked.
        message: for a rule, its message and the URL of its page, ``"message → URL"``, in the
            language asked for (:func:`torch_pitfalls.rules.describe` without the leading id);
            for an error, what went wrong.
        cell: in a notebook, the cell's number, from 1, counting every cell (markdown ones
            too), as ruff and Jupyter number them; ``line`` is then the line in that cell.
            0 for a Python file.
    """

    path: str
    line: int
    col: int
    rule: str
    message: str
    cell: int = 0

    def _key(self) -> tuple:
        return (self.path, self.cell, self.line, self.col, self.rule, self.message)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        where = f"cell {self.cell}:" if self.cell else ""
        return f"{self.path}:{where}{self.line}:{self.col}: {self.rule} {self.message}"


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    enable: Iterable[str] | str = (),
    language: str | None = None,
    base_url: str | None = None,
) -> list[Finding]:
    """Check the Python source code ``source``; return its findings, sorted.

    The rules are the static ones (``kind == "lint"``) of :data:`torch_pitfalls.rules.RULES`,
    described in this module's documentation. Findings on a line with a matching ``# noqa``
    comment are left out. ``select``, ``ignore`` and ``enable`` take a single id, or several
    in a list.

    Args:
        source: the text of a Python module.
        path: the name the findings carry (nothing is read from it).
        select: if given, only these rule ids run, opt-in ones included (``"TP104"``).
        ignore: rule ids that do not run, even when selected or enabled.
        enable: opt-in rule ids to run besides the default ones (ignored when ``select`` is
            given: selecting an opt-in rule enables it).
        language: language of the messages and URLs, ``"en"`` or ``"zh_CN"``; by default
            :func:`torch_pitfalls.rules.resolve_language` (the environment variable
            ``TORCH_PITFALLS_LANGUAGE``, then the locale).
        base_url: where the site is published; by default the environment variable
            ``TORCH_PITFALLS_BASE_URL``, else :data:`torch_pitfalls.rules.BASE_URL`.

    Returns:
        The findings, sorted by line, column and id.

    Raises:
        SyntaxError: ``source`` is not valid Python (:func:`check_paths` reports it instead).
        RecursionError, MemoryError: ``source`` nests too deeply for Python's own parser (an
            expression of thousands of terms, an ``elif`` chain of thousands of branches);
            :func:`check_paths` reports it instead. Whatever the parser accepts, the checker
            handles (see :data:`RECURSION_LIMIT`).
        TypeError: ``source`` is not a string.
        KeyError: an id is not a rule's.
        ValueError: an id is a runtime rule's, not a static check's; or ``language`` is not a
            site language.

    >>> code = "import torch.nn.functional as F; h = F.dropout(x, 0.5)"
    >>> for finding in check_source(code, "net.py", language="en", base_url="https://x.org"):
    ...     print(finding)  # doctest: +ELLIPSIS
    net.py:1:38: TP102 F.dropout and its family default to training=True, ... → https://x.org/en/auto_examples/modules/plot_functional_dropout.html
    """
    active = _active_rules(select, ignore, enable)
    describe = _describer(language, base_url)
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    return _findings(ast.parse(source, filename=path), source, path, active, describe)


def check_paths(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    enable: Iterable[str] | str = (),
    language: str | None = None,
    base_url: str | None = None,
) -> list[Finding]:
    """Check files, and the ``*.py`` and ``*.ipynb`` files in folders; return every finding, sorted.

    A folder is searched recursively, skipping hidden folders (``.git``, ``.nox``, ``.venv``,
    ``.ipynb_checkpoints``), ``__pycache__`` and ``build``. A file named explicitly is checked
    whatever its extension; a file reached twice is checked once. Files are read with the
    encoding their coding cookie declares (UTF-8 by default).

    A file whose name ends in ``.ipynb`` is read as a Jupyter notebook (JSON, nbformat 4): its
    code cells, joined in order into one module (a name imported in one cell is known in the
    next), as ruff reads them. A cell whose source starts with a cell magic (``%%time``,
    ``%%bash``) is skipped; a line that starts with ``%`` or ``!`` (a line magic, a shell
    command), after its indentation, is read as ``pass``. Findings carry the cell's number
    (:class:`Finding`'s ``cell``) and the line in that cell.

    As flake8 does, a file that cannot be checked is a finding, not an exception: ``E999`` for
    invalid Python, at the error's position (at 1:1 for code nested too deeply for Python's own
    parser, which Python cannot run either), and ``E902`` at 1:1 for a path that cannot be read
    or a notebook that is not valid notebook JSON. They are reported whatever ``select`` and
    ``ignore`` say.

    Args:
        paths: files and folders (one path alone is accepted too).
        select, ignore, enable, language, base_url: as for :func:`check_source`.

    Returns:
        The findings of every file, sorted by path, line, column and id.

    Raises:
        TypeError: ``paths`` holds something that is not a path.
        KeyError, ValueError: as for :func:`check_source`, for bad ids or language.
    """
    active = _active_rules(select, ignore, enable)
    describe = _describer(language, base_url)
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    findings = []
    for path in _python_files(paths):
        cells = None
        try:
            if path.endswith(NOTEBOOK_SUFFIX):
                source, cells = _read_notebook(path)
            else:
                with tokenize.open(path) as file:
                    source = file.read()
        except _NotebookError as error:
            findings.append(Finding(path, 1, 1, READ_ERROR, f"NotebookError: {error}"))
            continue
        except (OSError, UnicodeDecodeError, SyntaxError) as error:  # SyntaxError: bad cookie
            findings.append(Finding(path, 1, 1, READ_ERROR, f"{type(error).__name__}: {error}"))
            continue
        found = _check_file(source, path, active, describe)
        if cells is not None:
            found = [_in_cell(finding, cells) for finding in found]
        findings += found
    return sorted(findings)


def _check_file(source: str, path: str, active, describe) -> list[Finding]:
    """The findings of one file's source, or the one E999 finding that says why it cannot be."""
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte (Python 3.11)
        line = getattr(error, "lineno", None) or 1
        col = getattr(error, "offset", None) or 1
        message = getattr(error, "msg", None) or str(error)
        return [Finding(path, line, col, PARSE_ERROR, f"SyntaxError: {message}")]
    except (RecursionError, MemoryError) as error:  # thousands of terms or elif branches
        detail = f" ({error})" if str(error) else ""
        message = (
            f"{type(error).__name__}: code nested too deeply for Python's parser{detail}; "
            "Python cannot compile this file either"
        )
        return [Finding(path, 1, 1, PARSE_ERROR, message)]
    try:
        return _findings(tree, source, path, active, describe)
    except RecursionError:  # not seen on what the parser accepts, but never a crash
        return [Finding(path, 1, 1, READ_ERROR, "RecursionError: code nested too deeply to check")]


def main(argv: list[str] | None = None) -> int:
    """The command line, ``python -m torch_pitfalls.lint``; returns the exit status.

    Prints one line per finding, ``path:line:col: ID message → URL`` (``path:cell N:line:col:
    ...`` in a notebook), sorted by path, cell, line and column (:func:`check_paths`); with
    ``--statistics``, the counts per rule and per path instead (:func:`statistics`).

    Args:
        argv: the arguments, without the program name; by default ``sys.argv[1:]``.

    Returns:
        0 when nothing was found, 1 when something was, 2 when a file could not be read or parsed
        (its ``E902`` / ``E999`` line is printed with the others).

    Raises:
        SystemExit: with status 2, on a usage error (an unknown or runtime-only id, an unknown
            language, no path), after printing the reason; with status 0 for ``--help``.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        language = rules.resolve_language(args.language)
    except ValueError as error:  # the environment variable names another language
        parser.error(str(error))
    options = {
        "select": args.select,
        "ignore": args.ignore or (),
        "enable": args.enable or (),
        "language": language,
        "base_url": args.base_url,
    }
    if args.statistics:
        by_path = {path: check_paths(path, **options) for path in dict.fromkeys(args.paths)}
        findings = [finding for found in by_path.values() for finding in found]
    else:
        findings = check_paths(args.paths, **options)
    if hasattr(sys.stdout, "reconfigure"):  # "→" and Chinese on a console that cannot show them
        sys.stdout.reconfigure(errors="backslashreplace")
    if args.statistics:
        active = _active_rules(args.select, args.ignore or (), args.enable or ())
        print(statistics(by_path, active, language=language))
    else:
        for finding in findings:
            print(finding)
    if any(f.rule in (PARSE_ERROR, READ_ERROR) for f in findings):
        return 2
    return 1 if findings else 0


def statistics(
    by_path: dict[str, list[Finding]], active: Iterable[str], *, language: str | None = None
) -> str:
    """The text ``--statistics`` prints: findings counted per rule, and per path.

    One line per active rule, in id order, zeros included (``count  ID  title``), then a line
    for each error id found (``E999``, ``E902``: files not checked) and the total; with more
    than one path, a table of counts per path follows (one column per id above).

    Args:
        by_path: each path given, with the findings of :func:`check_paths` for it (a file
            reached through two of the paths counts under each).
        active: the rule ids that ran (their counts are printed even when 0).
        language: language of the titles (as for :func:`check_source`).

    Returns:
        The text, lines joined with ``"\\n"``, no final newline.

    Raises:
        KeyError: an id of ``active`` is not a rule's.
        ValueError: ``language`` is not a site language.

    >>> found = {"src": [Finding("src/a.py", 3, 5, "TP103", "...")]}
    >>> print(statistics(found, ["TP101", "TP103"], language="en"))
        0  TP101  softmax output passed to cross-entropy or NLL
        1  TP103  training loop that never clears gradients
        1         total
    """
    language = rules.resolve_language(language)
    counts: dict[str, dict[str, int]] = {}
    for path, found in by_path.items():
        for finding in found:
            counts.setdefault(finding.rule, {}).setdefault(path, 0)
            counts[finding.rule][path] += 1
    errors = sorted(i for i in counts if i in (PARSE_ERROR, READ_ERROR))
    ids = [*sorted(set(active)), *errors]
    titles = {PARSE_ERROR: _ERROR_TITLES[PARSE_ERROR], READ_ERROR: _ERROR_TITLES[READ_ERROR]}
    total = 0
    lines = []
    for rule_id in ids:
        count = sum(counts.get(rule_id, {}).values())
        total += count
        title = titles.get(rule_id) or rules.rule(rule_id).title[language]
        lines.append(f"{count:>5}  {rule_id:<5}  {title}")
    lines.append(f"{total:>5}         total")
    if len(by_path) > 1:
        width = max(len(path) for path in by_path)
        lines += ["", f"{'path':<{width}}  " + "  ".join(f"{i:>5}" for i in ids)]
        for path in by_path:
            cells = "  ".join(f"{counts.get(i, {}).get(path, 0):>5}" for i in ids)
            lines.append(f"{path:<{width}}  {cells}")
    return "\n".join(lines)


_ERROR_TITLES = {
    PARSE_ERROR: "files that could not be parsed (not checked)",
    READ_ERROR: "files that could not be read (not checked)",
}


class Flake8Checker:
    """The flake8 plugin: the same checks, reported by flake8 under the codes ``TP1xx``.

    Registered in ``pyproject.toml`` under ``[project.entry-points."flake8.extension"]`` as
    ``TP``, so ``flake8 --select=TP`` runs it. flake8 applies ``# noqa``, ``--select``,
    ``--ignore`` and ``--extend-select`` itself, but it can only show what the plugin reports:
    the plugin reports the default rules, plus the opt-in ones named by its option
    ``--torch-pitfalls-enable TP104`` (or ``torch-pitfalls-enable = TP104`` in the ``[flake8]``
    section of a configuration file). Messages and URLs follow ``TORCH_PITFALLS_LANGUAGE`` and
    ``TORCH_PITFALLS_BASE_URL`` (see :func:`check_source`).

    Args:
        tree: the module's syntax tree, parsed by flake8.
        filename: the file's name (unused: findings carry no path for flake8).
    """

    name = "torch-pitfalls"
    version = _VERSION
    enabled: frozenset[str] = frozenset()
    """Opt-in rule ids turned on by ``--torch-pitfalls-enable`` (set by :meth:`parse_options`)."""

    def __init__(self, tree: ast.AST, filename: str = "<unknown>") -> None:
        self.tree = tree
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        """Add ``--torch-pitfalls-enable IDS`` to flake8's options (also read from its config)."""
        option_manager.add_option(
            "--torch-pitfalls-enable",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help="opt-in torch-pitfalls rules to report too, e.g. TP104 (default: none)",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        """Read ``--torch-pitfalls-enable``.

        Raises:
            ValueError: an id is not a static rule's (the message lists them).
        """
        value = options.torch_pitfalls_enable
        parts = value.split(",") if isinstance(value, str) else value
        ids = [part.strip().upper() for part in parts if part.strip()]
        try:
            cls.enabled = _static_ids(ids, "--torch-pitfalls-enable")
        except KeyError as error:
            raise ValueError(error.args[0]) from None

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yield ``(line, column from 0, "ID message → URL", type(self))`` per finding."""
        active = _active_rules(None, (), self.enabled)
        describe = _describer(None, None)
        with _deep_recursion():
            found = _analyse(self.tree, active)
        for line, col, rule_id in sorted(found):
            yield line, col, f"{rule_id} {describe(rule_id)}", type(self)


# The command line ----------------------------------------------------------------------------


def _id_list(value: str) -> frozenset[str]:
    """An argparse type: comma-separated static rule ids (``ALL``: every static rule)."""
    ids = [part.strip().upper() for part in value.split(",") if part.strip()]
    if "ALL" in ids:  # as ruff's --select ALL
        ids = [i for i in ids if i != "ALL"] + list(_STATIC_IDS)
    try:
        return _static_ids(ids, "rule id")
    except (KeyError, ValueError) as error:
        raise argparse.ArgumentTypeError(error.args[0]) from None


def _language(value: str) -> str:
    """An argparse type: a language as :func:`torch_pitfalls.rules.resolve_language` reads it."""
    try:
        if not value.strip():  # resolve_language would take the environment's instead
            raise ValueError(f"language must be one of {rules.LANGUAGES}, got {value!r}")
        return rules.resolve_language(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parser() -> argparse.ArgumentParser:
    listing = ", ".join(
        f"{r.id} {r.title['en']}" + ("" if r.default else " (opt-in)")
        for r in rules.RULES
        if r.kind == "lint"
    )
    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.lint",
        description="Find PyTorch pitfalls in Python files, without running them. "
        f"Rules: {listing}.",
        epilog="Exit status: 0 nothing found, 1 findings, 2 usage error or a file that could not "
        "be read or parsed. Suppress a finding with '# noqa: ID' on its line.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders to search")
    parser.add_argument(
        "--select",
        type=_id_list,
        metavar="IDS",
        help="run only these rules (comma-separated; ALL: every rule, opt-in ones included)",
    )
    parser.add_argument("--ignore", type=_id_list, metavar="IDS", help="do not run these rules")
    parser.add_argument(
        "--enable", type=_id_list, metavar="IDS", help="also run these opt-in rules (TP104)"
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings of each rule (and of each PATH, when several are "
        "given) instead of the findings",
    )
    parser.add_argument(
        "--language",
        type=_language,
        metavar="LANG",
        help=f"language of messages and URLs: {' or '.join(rules.LANGUAGES)}, or another "
        f"spelling of them such as zh or zh-CN (default: ${rules.LANGUAGE_ENV}, then the locale)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help=f"site of the pages (default: ${rules.BASE_URL_ENV}, else {rules.BASE_URL})",
    )
    return parser


def _python_files(paths: Iterable) -> Iterator[str]:
    """The files to check, each once (under the name it was first reached by)."""
    seen: set[str] = set()
    for path in paths:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"paths must be str or os.PathLike, got {type(path).__name__}")
        for file in _files_under(os.fspath(path)):
            key = os.path.realpath(file)
            if key not in seen:
                seen.add(key)
                yield file


def _files_under(path: str) -> Iterator[str]:
    if not os.path.isdir(path):
        yield path  # a missing file is reported by the reader
        return
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = sorted(
            d for d in subfolders if not d.startswith(".") and d not in SKIPPED_DIRECTORIES
        )
        yield from (
            os.path.join(folder, name)
            for name in sorted(files)
            if name.endswith((".py", NOTEBOOK_SUFFIX))
        )


# Rule selection and messages -----------------------------------------------------------------


def _static_ids(ids: Iterable[str] | str, what: str) -> frozenset[str]:
    """Validate ids of static rules; KeyError for an unknown id, ValueError for a runtime one."""
    checked = rules.check_ids(ids, what=what)
    for rule_id in sorted(checked):
        found = rules.rule(rule_id)
        if found.kind != "lint":
            raise ValueError(
                f"{rule_id} is a runtime {found.kind} rule, not a static check; "
                f"static checks: {', '.join(_STATIC_IDS)}"
            )
    return checked


def _active_rules(select, ignore, enable) -> frozenset[str]:
    if select is not None:
        active = _static_ids(select, "rule id in select")
    else:
        defaults = {r.id for r in rules.RULES if r.kind == "lint" and r.default}
        active = defaults | _static_ids(enable, "rule id in enable")
    if ignore is None:
        ignore = ()
    return active - _static_ids(ignore, "rule id in ignore")


def _describer(language: str | None, base_url: str | None):
    """``rule id -> "message → URL"``, with the language resolved (and checked) once."""
    language = rules.resolve_language(language)
    cache: dict[str, str] = {}

    def describe(rule_id: str) -> str:
        if rule_id not in cache:
            text = rules.describe(rule_id, language=language, base_url=base_url)
            cache[rule_id] = text.removeprefix(f"{rule_id} ")
        return cache[rule_id]

    return describe


def _findings(tree: ast.AST, source: str, path: str, active, describe) -> list[Finding]:
    """The sorted findings of one parsed module, noqa applied."""
    with _deep_recursion():
        found = _analyse(tree, active)
    if found and "noqa" in source.lower():
        found = _without_noqa(found, source)
    return sorted(Finding(path, line, col + 1, id_, describe(id_)) for line, col, id_ in found)


def _without_noqa(found: list[tuple[int, int, str]], source: str) -> list[tuple[int, int, str]]:
    """Leave out the findings that a ``# noqa`` comment covers, as flake8 would."""
    lines = io.StringIO(source).readlines()
    logical = _noqa_lines(source, lines)

    def suppressed(line: int, rule_id: str) -> bool:
        text = logical.get(line) or (lines[line - 1] if 0 < line <= len(lines) else "")
        match = _NOQA.search(text)
        if match is None:
            return False
        if match["codes"] is None:
            return True
        codes = tuple(code for code in re.split(r"[,\s]", match["codes"]) if code)
        return rule_id.startswith(codes)

    return [(line, col, rule_id) for line, col, rule_id in found if not suppressed(line, rule_id)]


def _noqa_lines(source: str, lines: list[str]) -> dict[int, str]:
    """flake8's mapping of a line to the text searched for ``noqa``: multi-line tokens join."""
    mapping: dict[int, str] = {}
    first, last = len(lines) + 2, -1
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first, last = min(first, token.start[0]), max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                joined = "".join(lines[first - 1 : last])
                mapping.update(dict.fromkeys(range(first, last + 1), joined))
                first, last = len(lines) + 2, -1
    except (tokenize.TokenError, SyntaxError):
        return {}
    return mapping


# Notebooks -----------------------------------------------------------------------------------


class _NotebookError(ValueError):
    """A file named ``*.ipynb`` that is not a notebook the checker can read."""


def _read_notebook(path: str) -> tuple[str, list[tuple[int, int]]]:
    """The code of a notebook's code cells as one module, and where each of its lines comes from.

    Returns ``(source, cells)``: ``cells[i]`` is ``(cell number, line in that cell)``, both
    from 1, of the source's line ``i + 1``.

    Raises:
        OSError: the file cannot be read.
        _NotebookError: the file is not UTF-8 JSON of an nbformat 4 notebook.
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _NotebookError(f"not valid notebook JSON: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise _NotebookError("not valid notebook JSON: no list of cells")
    if notebook.get("nbformat") != 4:
        version = notebook.get("nbformat")
        raise _NotebookError(f"nbformat {version!r} is not supported (only nbformat 4)")
    lines: list[str] = []
    cells: list[tuple[int, int]] = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "".join(text)
        if not isinstance(text, str):
            raise _NotebookError(f"not valid notebook JSON: cell {number} has no source text")
        if text.lstrip().startswith("%%"):  # a cell magic: the cell is not Python
            continue
        for line_number, line in enumerate(text.splitlines(), start=1):
            code = line.lstrip()
            if code.startswith(("%", "!")):  # a line magic or a shell command
                line = line[: len(line) - len(code)] + "pass"
            lines.append(line)
            cells.append((number, line_number))
    return "".join(line + "\n" for line in lines), cells


def _in_cell(finding: Finding, cells: list[tuple[int, int]]) -> Finding:
    """A finding of a notebook's joined source, located in its cell."""
    if not cells:
        return finding
    index = min(max(finding.line, 1), len(cells)) - 1  # a SyntaxError may point past the end
    cell, line = cells[index]
    return dataclasses.replace(finding, cell=cell, line=line)


# The analysis --------------------------------------------------------------------------------


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    """Run the analysis under :data:`RECURSION_LIMIT`: it recurses once per nested statement or
    expression, and an ``elif`` chain nests one level per branch."""
    previous = sys.getrecursionlimit()
    if previous < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _analyse(tree: ast.AST, active: frozenset[str]) -> list[tuple[int, int, str]]:
    """Every ``(line, column from 0, rule id)`` of the active rules, noqa not applied."""
    if not active:
        return []
    found: list[tuple[int, int, str]] = []
    attributes = None  # the attribute names the module uses, if the walk below learns them
    imports = Imports(tree, _KNOWN_NAMES)
    if active & {"TP101", "TP102"}:
        # Each reading learns what the module's functions return; when it learnt something
        # (rare: a function returning a softmax or a loss), read again with that knowledge.
        checker = _ExpressionChecker(imports, active, [])
        checker.check_module(tree)
        known_returns = checker.learnt_returns() if "TP101" in active else {}
        readings = 1
        while known_returns and readings <= _RETURN_READINGS:
            checker = _ExpressionChecker(imports, active, [], known_returns)
            checker.check_module(tree)
            readings += 1
            if checker.learnt_returns() == known_returns:
                break
            known_returns = checker.learnt_returns()
        found.extend(checker.found)
        attributes = checker.attributes
    if (
        "TP103" in active
        and (attributes is None or {"backward", "step"} <= attributes)
        and imports.imports_torch()  # an MXNet/Gluon loop has nothing to clear
    ):
        _LoopChecker(tree, imports, found).check()
    if "TP104" in active and (attributes is None or {"backward", "data"} <= attributes):
        _DataEditChecker(tree, imports, found).check()
    if active & _CHECK_IDS:
        found.extend(checks.run(checks.Context.of(tree), active))
    return found


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


if __name__ == "__main__":
    sys.exit(main())
