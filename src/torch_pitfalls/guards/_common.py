"""What the parts of the guards share: the warning classes, silencing, the thread's state and
the place in the user's code."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
import torch.utils._pytree
from torch.nn.modules import module as _module

from torch_pitfalls import rules as _rules

try:  # PyTorch 2.3+; earlier releases (2.0 is recorded: docs/release_recordings) have Dynamo's
    from torch.compiler import is_compiling as _is_compiling
except ImportError:
    try:
        from torch._dynamo import is_compiling as _is_compiling
    except ImportError:

        def _is_compiling() -> bool:
            return False


# PyTorch 2.0's global forward hooks lack always_call (it came in 2.1): without it, a forward
# that raises leaves its module on the stack of running modules until the next forward.
_ALWAYS_CALL = (
    {"always_call": True}
    if "always_call" in inspect.signature(_module.register_module_forward_hook).parameters
    else {}
)


class PitfallWarning(UserWarning):
    """A pitfall found by a runtime guard. ``str(warning)`` is ``"ID message → URL"``.

    Attributes:
        rule_id: the rule's id (``"TP003"``), a key of :mod:`torch_pitfalls.rules`.
    """

    def __init__(self, message: str, rule_id: str = "") -> None:
        super().__init__(message)
        self.rule_id = rule_id


class PitfallError(RuntimeError):
    """What a guard raises instead of warning in strict mode (``guards(strict=True)``).

    Attributes:
        rule_id: the rule's id.
    """

    def __init__(self, message: str, rule_id: str = "") -> None:
        super().__init__(message)
        self.rule_id = rule_id


@dataclass(frozen=True)
class Finding:
    """One pitfall found by the guards: a rule, and the place in the user's code.

    Attributes:
        rule_id: the rule's id.
        filename: the file of the first frame outside torch and this module (``""`` when the
            check ran outside any Python frame, e.g. in autograd's worker thread).
        lineno: its line number (``0`` when unknown).
        message: the full message, ``"ID message → URL"``.
    """

    rule_id: str
    filename: str
    lineno: int
    message: str


_ALLOWED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "torch_pitfalls_allowed", default=frozenset()
)


def allow(*rule_ids: str) -> contextlib.AbstractContextManager[None]:
    """Silence rules inside a block, e.g. deliberate Monte-Carlo dropout::

        with torch.no_grad(), torch_pitfalls.allow("TP003"):
            samples = [model(x) for _ in range(20)]   # dropout on purpose

    Ordinary warnings filters work too: ``warnings.filterwarnings("ignore", "TP003")``.

    Raises:
        KeyError: an id is not a rule's (:mod:`torch_pitfalls.rules`).
    """
    return _allowed(_rules.check_ids(rule_ids))  # the ids are checked now, not on entering


@contextlib.contextmanager
def _allowed(ids: frozenset[str]) -> Iterator[None]:
    token = _ALLOWED.set(_ALLOWED.get() | ids)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
# the guards' own frames, and those of the rules they run: never the user's place
_SKIPPED_DIRS = (
    str(Path(__file__).resolve().parent),
    str(Path(_rules.__file__).resolve().parent),
)
_SKIPPED_FILES = {str(Path(contextlib.__file__).resolve())}


class _Place(NamedTuple):
    """A line of the user's code, read when found (a frame's line moves on as it runs)."""

    filename: str
    lineno: int
    module: str


_SKIPPED: dict[str, bool] = {}
"""Whether frames of a file are skipped when looking for the user's line, by file name (read
once per file: the guards look for it at every top-level forward and every backward)."""


def _skipped(filename: str) -> bool:
    skipped = (
        filename.startswith(_TORCH_DIR)
        or filename.startswith(_SKIPPED_DIRS)
        or filename in _SKIPPED_FILES
        or filename.startswith("<frozen")
    )
    _SKIPPED[filename] = skipped
    return skipped


def _user_place() -> _Place | None:
    """The line being run in the innermost frame outside torch, the guards, the rules and
    contextlib."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        skipped = _SKIPPED.get(filename)
        if not (_skipped(filename) if skipped is None else skipped):
            return _Place(filename, frame.f_lineno, frame.f_globals.get("__name__", "<unknown>"))
        frame = frame.f_back
    return None


class _WarningState(threading.local):
    """How the guards treat a warning raised in this thread (see _warn, _FILTER, _show below)."""

    suspended = 0  # the guards issue a warning themselves, at its place: only the filters decide
    quiet = 0  # the guards read tensors: a warning is theirs, not the user's, and is dropped
    pending = None  # for _show: the module of a warning to issue again elsewhere, or _DROP
    modes: tuple = ()  # the _Mode of each guards entered in this thread, the innermost last
    active = 0  # how many of them take calls now (those further in are handling one)


_STATE = _WarningState()


def _quiet(hook):
    """Run a hook of the guards with its warnings dropped: PyTorch would not raise them."""

    @functools.wraps(hook)
    def quiet(*args):
        if _is_compiling():  # Dynamo traces hooks: nothing to count there
            return hook(*args)
        _STATE.quiet += 1
        try:
            return hook(*args)
        finally:
            _STATE.quiet -= 1

    return quiet


def _unserializable(hook):
    """A hook on a user's tensor that pickling skips without PyTorch's warning about it."""
    return torch.utils.hooks.unserializable_hook(hook)
