"""Runtime guards: catch the pitfalls of this site in your own code while it runs.

Use the module as a context manager, around a training script, a test or a notebook cell::

    import torch_pitfalls

    with torch_pitfalls.guards(model, optimizer):
        train(model, optimizer)

or run a whole script with every default guard active, as ``python -m trace`` does::

    python -m torch_pitfalls.guards train.py --epochs 3

Each pitfall found warns once per place in your code with a :class:`PitfallWarning`, whose
message starts with the rule's id and ends with the URL of the page that explains it (the rules
are listed in :mod:`torch_pitfalls.rules`). PyTorch's own errors and warnings that a page explains
(the registry :mod:`torch_pitfalls.messages`) get a note with the page's URL (PEP 678), or are
followed by a :class:`PitfallWarning` with it; PyTorch's own warning is left as it is.

How the guards work, and what they cost:

* only the few torch functions that are checked are taken (``F.cross_entropy``, ``F.dropout``,
  ``F.interpolate``, ``Tensor.backward``, ``Tensor.numpy`` …), in the thread that entered the
  guards: a function written in Python gets new code in place, so that a reference taken before
  entry (``from torch.nn.functional import dropout``) is checked too; a tensor method written in
  C is shadowed on ``torch.Tensor``. Every other torch call runs as without guards and pays
  nothing; a checked call pays a few Python calls and its check (the loss checks read the
  input's values: on CUDA, a synchronisation);
* global module forward hooks (``torch.nn.modules.module.register_module_forward_pre_hook``)
  know which module is running and in which mode: every module call pays two Python calls;
* global optimizer step hooks (``torch.optim.optimizer.register_optimizer_step_post_hook``)
  and a look at the optimizer's gradients before and after each backward call find gradients
  left from the last step: each step and each backward pay a loop over the parameters;
* the opt-in rule ``TP010`` packs every tensor saved for backward with a copy of it
  (``torch.autograd.graph.saved_tensors_hooks``): it doubles the memory of saved tensors;
* a warnings filter is put first, and ``warnings.warn`` is replaced while a checked function
  runs, so that PyTorch's own warnings keep the place they have without the guards (the guards'
  frames stand between your line and PyTorch's code): the same file, line and module, and so
  the same count under your filters.

``nox -s bench`` measures what they cost side by side (the time of the same loop with guards
over its time without, CPU, one thread, the default rules) on ten training steps of a tiny MLP
and on a training step of a small CNN (batch 64, 32x32 inputs), and prints each ratio with its
target: at most 1.2x and 1.05x.

Nothing is installed until a guard is entered, everything is removed on exit (also when the
block raises), and no computed value is changed: the guards only read. Inside ``torch.compile``
they check nothing (the compiler traces the wrappers and the hooks); a check that cannot read a
tensor (under ``torch.func.vmap``) is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import functools
import inspect
import itertools
import operator
import runpy
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import torch.utils._pytree
from torch import nn
from torch.nn.modules import module as _module
from torch.optim import optimizer as _optimizer

from torch_pitfalls import messages as _messages
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

__all__ = ["Finding", "Guards", "PitfallError", "PitfallWarning", "allow", "main"]


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
_SKIPPED_FILES = {str(Path(__file__).resolve()), str(Path(contextlib.__file__).resolve())}


@dataclass(frozen=True)
class _Place:
    """A line of the user's code, read when found (a frame's line moves on as it runs)."""

    filename: str
    lineno: int
    module: str


def _user_place() -> _Place | None:
    """The line being run in the innermost frame outside torch, this module and contextlib."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            filename.startswith(_TORCH_DIR)
            or filename in _SKIPPED_FILES
            or filename.startswith("<frozen")
        ):
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


_DROPOUTS = {
    F.dropout,
    F.dropout1d,
    F.dropout2d,
    F.dropout3d,
    F.alpha_dropout,
    F.feature_alpha_dropout,
}
_SIGNATURES = {f: inspect.signature(f) for f in (*_DROPOUTS, F.interpolate)}
_BATCH_NORMS = (nn.modules.batchnorm._BatchNorm,)
_DROPOUT_MODULES = (nn.modules.dropout._DropoutNd,)
_IMAGE_CHANNELS = (1, 3, 4)


def _unserializable(hook):
    """A hook on a user's tensor that pickling skips without PyTorch's warning about it."""
    return torch.utils.hooks.unserializable_hook(hook)


_EMPTY_STEPS = 3  # TP012: steps without any gradient before an optimizer's first gradient
_MAX_EVAL_FORWARDS = 1000  # TP014: eval-mode forwards recorded before settling without a step
_BINDERS: dict = {}  # filled below, from _SIGNATURES


_WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile


def _prefix_only_difference(missing, unexpected) -> bool:
    """TP015: whether some missing key is an unexpected key with a wrapper's prefix added or
    removed (``0.weight`` missing, ``module.0.weight`` unexpected; or the other way round)."""
    if not missing or not unexpected:
        return False
    missing, unexpected = set(missing), set(unexpected)
    for prefix in _WRAPPER_PREFIXES:
        for have, want in ((unexpected, missing), (missing, unexpected)):
            if any(k.startswith(prefix) and k[len(prefix) :] in want for k in have):
                return True
    return False


def _input(args, kwargs):
    """The first argument of a torch function, given by position or as ``input=``."""
    return args[0] if args else kwargs.get("input")


def _binder(signature: inspect.Signature):
    """What _bind needs to bind a call without inspect (None: a signature it leaves to inspect)."""
    params = list(signature.parameters.values())
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(p.kind not in kinds for p in params):
        return None
    names = tuple(p.name for p in params)
    index = {p.name: i if p.kind is kinds[0] else len(params) for i, p in enumerate(params)}
    positional = sum(p.kind is kinds[0] for p in params)
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    return names, index, positional, defaults


def _bind(func, args, kwargs) -> dict:
    """The arguments of a call by parameter name, defaults included (as inspect binds them)."""
    fast = _BINDERS.get(func)
    if fast is not None:
        names, index, positional, defaults = fast
        if len(args) <= positional and all(index.get(k, -1) >= len(args) for k in kwargs):
            arguments = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}
            if len(arguments) == len(names):  # none missing: the values inspect binds
                return arguments
    bound = _SIGNATURES[func].bind(*args, **kwargs)  # its TypeError for a call that cannot bind
    bound.apply_defaults()
    return bound.arguments


_BINDERS.update((f, _binder(signature)) for f, signature in _SIGNATURES.items())


class _Mode:
    """What one :class:`Guards` does on the calls of the torch functions it checks.

    A context manager: entered, it makes the guards' torch functions (the keys of ``checks`` and
    ``noted``) call :meth:`handle` in this thread (see _wrap below), the innermost guards first,
    as nested torch function modes would; every other torch function runs untouched.
    """

    def __init__(self, guards: Guards) -> None:
        self.guards = guards
        self.checks = {
            F.cross_entropy: guards._check_cross_entropy,
            F.nll_loss: guards._check_nll_loss,
            F.interpolate: guards._check_interpolate,
            **dict.fromkeys(_DROPOUTS, guards._check_functional_dropout),
        }
        # the calls whose errors may get a note; backward calls also mark where a backward runs
        self.noted = {
            torch.Tensor.numpy: guards._call,
            torch.Tensor.__array__: guards._call,
            F.interpolate: guards._call,
            torch.Tensor.backward: guards._call_backward,
            torch.autograd.backward: guards._call_backward,
            torch.autograd.grad: guards._call,
            nn.Module.load_state_dict: guards._call_load_state_dict,
        }

    def __enter__(self) -> _Mode:
        # a tensor method read while other guards are active is their wrapper: the method instead
        self.checks = {_WRAPPERS.get(f, f): check for f, check in self.checks.items()}
        self.noted = {_WRAPPERS.get(f, f): call for f, call in self.noted.items()}
        functions = list(dict.fromkeys([*self.checks, *self.noted]))
        _wrap_all(functions)
        state = _STATE
        state.modes = (*state.modes, self)
        state.active = len(state.modes)
        self.functions = functions
        return self

    def __exit__(self, *exc_info) -> None:
        state = _STATE
        modes = list(state.modes)
        if self in modes:
            del modes[modes.index(self)]
        state.modes = tuple(modes)
        state.active = len(modes)
        _unwrap_all(self.functions)

    def handle(self, func, args, kwargs):
        """One call of a checked torch function: its check, then the call (errors get notes)."""
        filters = warnings.filters if _GET_FILTERS is None else _GET_FILTERS()
        if not filters or filters[0] is not _FILTER:  # a filter added since: ours goes first again
            _put_first(filters)
        check = self.checks.get(func)
        if check is not None:
            _STATE.quiet += 1
            try:
                check(func, args, kwargs)
            except (PitfallError, PitfallWarning):  # strict mode, or warnings turned into errors
                raise
            except Exception:
                pass  # a check only reads: it must not break the user's code (e.g. under vmap)
            finally:
                _STATE.quiet -= 1
        call = self.noted.get(func)
        # PyTorch's code runs: its warnings.warn calls go to _warn (unless replaced by the user)
        replaced = warnings.warn is _warned_by
        if replaced:
            warnings.warn = _warn
        try:
            if call is None:
                return func(*args, **kwargs)
            return call(func, args, kwargs)
        except Exception as error:
            _STATE.quiet += 1
            try:
                self.guards._add_note(error, func, args, kwargs)
            finally:
                _STATE.quiet -= 1
            raise
        finally:
            if replaced:
                warnings.warn = _warned_by


# -- how a checked torch function reaches the guards ---------------------------------------------
#
# A torch function mode would see every call of every torch function, and make each pay Python
# code (measured: an empty mode alone costs more than the targets allow). Only the calls of the
# few checked functions are taken instead, while some guards are entered:
#
# * a function written in Python (F.cross_entropy, Tensor.backward …) gets, in place, the code of
#   _trampoline, which calls the wrapper given as its keyword-only default; a copy of the function
#   keeps its original code. The function object stays the same, so a reference taken before the
#   guards were entered (``from torch.nn.functional import dropout``, a default argument) calls
#   the wrapper too; ``__wrapped__`` names the copy, for inspect.signature and getsource;
# * a method of tensors written in C (Tensor.numpy) is shadowed by a wrapper set on
#   ``torch.Tensor``: every tensor finds it, but a reference to the C method taken before entry
#   (``torch._C.TensorBase.numpy``) is not seen;
# * the wrapper takes the innermost guards of this thread that are not already handling a call,
#   and runs their _Mode.handle; a torch function called from there (the call itself, a check)
#   goes to the guards further out, then to the original: as with nested torch function modes.
#   Other threads, and code run by torch.compile, call the original.
#
# Unlike a mode, a checked function called by another torch function written in Python (dropout
# inside F.multi_head_attention_forward) is seen: modes see only the outermost call. A tensor
# method's call is seen by the innermost guards only (their call goes to the C method itself).

_WRAPPED: dict[object, tuple] = {}  # function -> (how to undo, wrapper, number of users)
_WRAPPERS: dict[object, object] = {}  # the wrapper set on torch.Tensor -> the tensor method


def _trampoline(*args, _torch_pitfalls_call=None, **kwargs):  # the code put in a checked function
    return _torch_pitfalls_call(*args, **kwargs)


def _wrapper(func, original):
    def call(*args, **kwargs):
        if _is_compiling():  # Dynamo traces this: no checks inside torch.compile
            return original(*args, **kwargs)
        state = _STATE
        active = state.active
        if not active:
            return original(*args, **kwargs)
        state.active = active - 1
        try:
            return state.modes[active - 1].handle(func, args, kwargs)
        finally:
            state.active = active

    return call


def _wrap(func):
    if isinstance(func, types.FunctionType) and not func.__closure__:
        original = types.FunctionType(
            func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
        )
        original.__kwdefaults__ = func.__kwdefaults__
        original.__dict__.update(func.__dict__)
        original.__qualname__ = func.__qualname__
        original.__module__ = func.__module__
        call = _wrapper(func, original)
        undo = ("code", func.__code__, func.__kwdefaults__, func.__dict__.get("__wrapped__", _DROP))
        if func.__code__ not in _TRAMPOLINES:
            trampoline = _trampoline.__code__.replace(co_name=func.__name__)
            if hasattr(trampoline, "co_qualname"):  # Python 3.11+
                trampoline = trampoline.replace(co_qualname=func.__qualname__)
            _TRAMPOLINES[func.__code__] = trampoline
            _WRAPPER_CODES.add(trampoline)
        func.__code__ = _TRAMPOLINES[func.__code__]
        func.__kwdefaults__ = {"_torch_pitfalls_call": call}
        func.__wrapped__ = original
        return undo, call
    name = getattr(func, "__name__", None)
    owner = getattr(func, "__objclass__", None)
    if name and isinstance(owner, type) and issubclass(torch.Tensor, owner):
        if getattr(torch.Tensor, name) is not func:
            raise TypeError(f"the guards cannot take the calls of {func!r}: torch.Tensor.{name}")
        call = _wrapper(func, func)
        undo = ("attribute", torch.Tensor.__dict__.get(name, _DROP))
        setattr(torch.Tensor, name, call)
        _WRAPPERS[call] = func
        return undo, call
    raise TypeError(f"the guards take the calls of Python functions and tensor methods: {func!r}")


def _unwrap(func, undo) -> None:
    if undo[0] == "code":
        _, code, kwdefaults, wrapped = undo
        func.__code__, func.__kwdefaults__ = code, kwdefaults
        if wrapped is _DROP:
            func.__dict__.pop("__wrapped__", None)
        else:
            func.__wrapped__ = wrapped
    else:
        name, previous = func.__name__, undo[1]
        _WRAPPERS.pop(getattr(torch.Tensor, name), None)
        if previous is _DROP:
            delattr(torch.Tensor, name)
        else:
            setattr(torch.Tensor, name, previous)


def _wrap_all(functions) -> None:
    with _INSTALL_LOCK:
        done = []
        try:
            for func in functions:
                if func in _WRAPPED:
                    undo, call, users = _WRAPPED[func]
                else:
                    undo, call = _wrap(func)
                    users = 0
                _WRAPPED[func] = (undo, call, users + 1)
                done.append(func)
        except BaseException:
            _release(done)
            raise


def _unwrap_all(functions) -> None:
    with _INSTALL_LOCK:
        _release(functions)


def _release(functions) -> None:
    for func in functions:
        undo, call, users = _WRAPPED.pop(func)
        if users > 1:
            _WRAPPED[func] = (undo, call, users - 1)
        else:
            _unwrap(func, undo)


class Guards:
    """The runtime guards, as a context manager (usually made by ``torch_pitfalls.guards(...)``).

    Args:
        *watched: modules and optimizers to watch. Module rules (``TP003``, ``TP004``) then look
            only at these modules and their submodules, and the stale-gradient rule (``TP005``)
            only at these optimizers. With none of a kind, every module (optimizer) is watched.
        language: ``"en"`` or ``"zh_CN"`` for messages and URLs; default: the environment
            variable ``TORCH_PITFALLS_LANGUAGE``, else the locale
            (:func:`torch_pitfalls.rules.resolve_language`).
        base_url: the site's base URL; default: ``TORCH_PITFALLS_BASE_URL``, else
            :data:`torch_pitfalls.rules.BASE_URL`.
        strict: raise :class:`PitfallError` instead of warning.
        allow: rule ids to silence for the whole block (see also :func:`allow`).
        enable: opt-in rule ids to switch on (``"TP010"``).

    Attributes:
        found: every :class:`Finding`, in order, each place once.

    Raises:
        TypeError: a watched object is neither a module nor an optimizer.
        KeyError: an id in ``allow`` or ``enable`` is unknown.
        ValueError: ``enable`` names a rule that is not a runtime rule, or ``language`` is not
            a site language.
        RuntimeError: the same object is entered twice at once.
    """

    def __init__(
        self,
        *watched: torch.nn.Module | torch.optim.Optimizer,
        language: str | None = None,
        base_url: str | None = None,
        strict: bool = False,
        allow: Iterable[str] = (),
        enable: Iterable[str] = (),
    ) -> None:
        self.modules = [w for w in watched if isinstance(w, nn.Module)]
        self.optimizers = [w for w in watched if isinstance(w, torch.optim.Optimizer)]
        for w in watched:
            if not isinstance(w, (nn.Module, torch.optim.Optimizer)):
                raise TypeError(f"guards() watches modules and optimizers, got {type(w).__name__}")
        self.language = _rules.resolve_language(language)
        self.base_url = base_url
        self.strict = bool(strict)
        self.allowed = _rules.check_ids(allow)
        enabled = _rules.check_ids(enable)
        for rule_id in self.allowed | enabled:
            if _rules.rule(rule_id).kind == "lint":
                raise ValueError(f"{rule_id} is a rule of the static checker, not a guard")
        self.active_ids = frozenset(
            r.id for r in _rules.RULES if r.kind != "lint" and (r.default or r.id in enabled)
        )
        self.found: list[Finding] = []
        self._seen: set[tuple[str, str, int]] = set()
        self._stack: contextlib.ExitStack | None = None

    # -- the findings -------------------------------------------------------------------------

    @property
    def ids(self) -> list[str]:
        """The ids of the rules that found something, in the order first found, each once."""
        return list(dict.fromkeys(f.rule_id for f in self.found))

    def report(self) -> str:
        """One line per finding: ``file:line: ID message → URL`` (``""`` when nothing found)."""
        return "\n".join(
            f"{Path(f.filename).name}:{f.lineno}: {f.message}" if f.filename else f.message
            for f in self.found
        )

    def message(self, rule_id: str) -> str:
        """The full message of a rule in this guard's language: ``"ID message → URL"``."""
        return _rules.describe(rule_id, language=self.language, base_url=self.base_url)

    def _silenced(self, rule_id: str) -> bool:
        return rule_id not in self.active_ids or rule_id in self.allowed | _ALLOWED.get()

    def _flag(self, rule_id: str, place: _Place | None = None) -> None:
        if self._silenced(rule_id):
            return
        place = place or _user_place()
        filename = place.filename if place else ""
        lineno = place.lineno if place else 0
        if (rule_id, filename, lineno) in self._seen:
            return
        self._seen.add((rule_id, filename, lineno))
        message = self.message(rule_id)
        self.found.append(Finding(rule_id, filename, lineno, message))
        if self.strict:
            raise PitfallError(message, rule_id)
        warning = PitfallWarning(message, rule_id)
        _STATE.suspended += 1  # the guards' own warning: no redirection, the user's filters decide
        try:
            if place is None:
                warnings.warn(warning, stacklevel=2)
            else:
                warnings.warn_explicit(
                    warning, PitfallWarning, filename, lineno, module=place.module, registry={}
                )
        finally:
            _STATE.suspended -= 1

    def _add_note(self, error: BaseException, func=None, args=(), kwargs=None) -> None:
        """A note with the page's URL on an error whose message is in the registry of PyTorch's
        messages (:mod:`torch_pitfalls.messages`): the rule's message for an entry with a rule
        of kind ``note`` (a finding), else the generic note. Once per error."""
        try:
            text = str(error)
        except Exception:  # an exception whose __str__ fails is none of PyTorch's messages
            return
        entry = _messages.find(type(error).__name__, text, "error")
        if entry is None:
            return
        url = entry.url(language=self.language, base_url=self.base_url)
        if any(url in note for note in getattr(error, "__notes__", ()) if isinstance(note, str)):
            return
        rule_id = entry.rule
        if rule_id == "TP006" and not (
            func is F.interpolate and self._unbatched_image_error(error, args, kwargs or {})
        ):
            rule_id = ""  # a 3-D input is what TP006 explains; other inputs get the generic note
        if not rule_id:
            error.add_note(f"{_messages.NOTE[self.language]} → {url}")
            return
        if self._silenced(rule_id):
            return
        note = self.message(rule_id)
        error.add_note(note)
        place = _user_place()
        filename, lineno = (place.filename, place.lineno) if place else ("", 0)
        self.found.append(Finding(rule_id, filename, lineno, note))

    def _point_to_page(self, entry: _messages.Message, filename: str, lineno: int) -> None:
        """A PitfallWarning with the page's URL, at the place of a PyTorch warning just shown."""
        key = (entry.slug, filename, lineno)
        if key in self._seen:
            return
        self._seen.add(key)
        url = entry.url(language=self.language, base_url=self.base_url)
        warning = PitfallWarning(f"{_messages.NOTE[self.language]} → {url}")
        _STATE.suspended += 1
        try:
            warnings.warn_explicit(warning, PitfallWarning, filename, lineno, registry={})
        finally:
            _STATE.suspended -= 1

    # -- checks on torch functions ------------------------------------------------------------

    def _check_cross_entropy(self, func, args, kwargs) -> None:
        logits = _input(args, kwargs)
        if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
            return
        if logits.numel() == 0:
            return
        class_dim = 0 if logits.dim() == 1 else 1
        if logits.shape[class_dim] == 1:  # log_softmax over one class is 0: so is the loss
            self._flag("TP011")
            return
        # rows of a softmax sum to 1 up to rounding, which grows with the number of classes and
        # is coarser in half precision; values in [0, 1] keep the test specific anyway
        tolerance = 1e-3 if torch.finfo(logits.dtype).bits > 16 else 1e-2
        with torch.no_grad():
            values = logits.detach()
            sums = values.sum(class_dim, dtype=torch.float32)
            in_unit_interval = bool((values >= 0).all() and (values <= 1).all())
            probabilities = in_unit_interval and bool(((sums - 1).abs() <= tolerance).all())
        if probabilities:
            self._flag("TP001")

    def _check_nll_loss(self, func, args, kwargs) -> None:
        log_probs = _input(args, kwargs)
        if not isinstance(log_probs, torch.Tensor) or not log_probs.is_floating_point():
            return
        if log_probs.numel() and bool((log_probs.detach() >= 0).all()):
            self._flag("TP002")

    @staticmethod
    def _unbatched_image_error(error: BaseException, args, kwargs) -> bool:
        """PyTorch's own refusal of a 3-D input with a 2-D size or a 2-D-only mode."""
        image = _input(args, kwargs)
        if not isinstance(image, torch.Tensor) or image.dim() != 3:
            return False
        text = str(error)
        return "Got 3D input, but" in text or "spatial dimensions of [" in text

    def _check_interpolate(self, func, args, kwargs) -> None:
        arguments = _bind(func, args, kwargs)
        image = arguments["input"]
        if (
            isinstance(image, torch.Tensor)
            and image.dim() == 3
            and arguments["mode"] != "linear"
            and image.shape[0] in _IMAGE_CHANNELS
            and image.shape[1] > max(_IMAGE_CHANNELS)
        ):
            self._flag("TP006")

    def _check_functional_dropout(self, func, args, kwargs) -> None:
        if not self._running:
            return
        arguments = _bind(func, args, kwargs)
        module = self._running[-1]
        active = arguments["training"] and arguments["p"] > 0
        if active and not module.training and self._watches(module):
            self._flag("TP004")

    # -- notes on PyTorch's own errors --------------------------------------------------------

    def _call(self, func, args, kwargs):
        return func(*args, **kwargs)

    def _call_load_state_dict(self, func, args, kwargs):
        result = func(*args, **kwargs)
        try:
            prefixed = _prefix_only_difference(result.missing_keys, result.unexpected_keys)
        except Exception:  # a read that fails must not break the user's load
            prefixed = False
        if prefixed:
            self._flag("TP015")
        return result

    def _call_backward(self, func, args, kwargs):
        self._backward_place = _user_place()
        try:
            before = self._before_backward()  # TP005: the gradients left by the last step
        except Exception:  # a read that fails must not break the user's backward
            before = None
        try:
            return func(*args, **kwargs)
        finally:
            if before is not None:
                with contextlib.suppress(Exception):
                    self._after_backward(before)
            self._backward_place = None

    # -- modules ------------------------------------------------------------------------------

    def _watches(self, module: nn.Module) -> bool:
        return not self._module_ids or id(module) in self._module_ids

    def _forward_pre_hook(self, module: nn.Module, args) -> None:
        if _is_compiling():
            return  # inside torch.compile the module checks are off (Dynamo traces the hooks)
        if not self._running:  # a top-level call: where the user's code runs the model
            self._root_place = _user_place()
        self._running.append(module)
        if "TP010" in self.active_ids:
            _STATE.quiet += 1  # the guards' own reads (the other checks here read no tensor)
            try:
                self._buffers.update(b.data_ptr() for b in module.buffers(recurse=False))
            finally:
                _STATE.quiet -= 1
        if not module.training or torch.is_grad_enabled() or not self._watches(module):
            return
        if isinstance(module, _BATCH_NORMS):
            # momentum=None: a cumulative average, as torch.optim.swa_utils.update_bn recalibrates
            if module.track_running_stats and module.momentum is not None:
                self._flag("TP003", self._root_place)
        elif isinstance(module, _DROPOUT_MODULES) and module.p > 0 and not self._recalibrating():
            self._flag("TP003", self._root_place)

    def _recalibrating(self) -> bool:
        """A BatchNorm with momentum=None in the running model: update_bn, not an evaluation."""
        root = self._running[0]
        return any(isinstance(m, _BATCH_NORMS) and m.momentum is None for m in root.modules())

    def _forward_hook(self, module: nn.Module, args, output) -> None:
        # always_call=True: also runs when forward raises, so the stack stays balanced
        if _is_compiling():
            return
        if self._running and self._running[-1] is module:
            self._running.pop()
            if not self._running and not module.training and torch.is_grad_enabled():
                self._eval_forward(module, args, output)

    # -- gradients left from the last optimizer step ------------------------------------------
    #
    # After a step, each parameter's gradient object and its version are remembered. A backward
    # that accumulates into that same, unchanged gradient adds the last step's gradient to the
    # new one; the finding is made when the same optimizer steps on that sum, so that gradients
    # cleared before the next step (a GAN's discriminator, say) and torch.autograd.grad (which
    # accumulates nothing) are not flagged. The gradients are read around each backward call in
    # the thread of the guards (Guards._call_backward), not by hooks on each parameter: the hooks
    # would cost Python calls for every parameter in every backward.

    def _watches_optimizer(self, optimizer: torch.optim.Optimizer) -> bool:
        return not self.optimizers or any(optimizer is o for o in self.optimizers)

    @_quiet
    def _step_pre_hook(self, optimizer: torch.optim.Optimizer, args, kwargs) -> None:
        self._settle_eval_forwards(optimizer)
        if not self._watches_optimizer(optimizer):
            return
        self._check_step_without_gradients(optimizer, args, kwargs)
        for group in optimizer.param_groups:
            for param in group["params"]:
                summed = self._stale_sums.pop(id(param), None)
                if summed is None or param.grad is None:
                    continue
                grad_ref, version, place = summed
                if param.grad is grad_ref() and param.grad._version == version:
                    self._flag("TP005", place)

    @_quiet
    def _step_post_hook(self, optimizer: torch.optim.Optimizer, args, kwargs) -> None:
        if not self._watches_optimizer(optimizer):
            return
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None or not param.requires_grad:  # frozen: no backward adds to it
                    self._after_step.pop(id(param), None)
                    continue
                self._after_step[id(param)] = (weakref.ref(param.grad), param.grad._version)
                self._params[id(param)] = weakref.ref(param)

    def _before_backward(self) -> tuple[list, list] | None:
        """The gradients a backward may add to: those left by the last step, and stale sums."""
        if not self._after_step and not self._stale_sums:
            return None
        _STATE.quiet += 1
        try:
            left, summed = [], []
            for key, (grad_ref, version) in list(self._after_step.items()):
                param = self._params[key]()
                current = None if param is None else param.grad
                if current is not None and current is grad_ref() and current._version == version:
                    left.append((key, param, current, version))  # the last step's gradient
                else:
                    del self._after_step[key]  # cleared since: nothing stale
            for key, (grad_ref, _, _) in self._stale_sums.items():
                param = self._params[key]()
                current = None if param is None else param.grad
                if current is not None and current is grad_ref():
                    summed.append((key, param, current, current._version))
            return left, summed
        finally:
            _STATE.quiet -= 1

    def _after_backward(self, before: tuple[list, list]) -> None:
        """Record what the backward added to the gradients _before_backward found."""
        _STATE.quiet += 1
        try:
            left, summed = before
            for key, param, grad, version in left:
                current = param.grad
                if current is not None and (current is not grad or current._version != version):
                    # added to the last step's gradient (out of place under create_graph=True)
                    self._after_step.pop(key, None)
                    ref = weakref.ref(current)
                    self._stale_sums[key] = (ref, current._version, self._backward_place)
            for key, param, grad, version in summed:  # more micro-batches summed onto a stale sum
                current = param.grad
                if current is grad and current._version != version and key in self._stale_sums:
                    grad_ref, _, place = self._stale_sums[key]
                    self._stale_sums[key] = (grad_ref, current._version, place)
        finally:
            _STATE.quiet -= 1

    # -- an optimizer step that has no gradient to apply: TP012 ------------------------------
    #
    # A step where no parameter has a gradient changes nothing. It is flagged when it cannot be
    # the occasional batch that skips a part of a model (a head of a multi-task model with an
    # optimizer of its own): when no parameter requires grad at all (everything frozen), or when
    # the optimizer has had no gradient in any of its first _EMPTY_STEPS steps. A step given a
    # closure (LBFGS) computes its gradients inside step(), after this check: never flagged.

    def _check_step_without_gradients(self, optimizer, args, kwargs) -> None:
        # the hook's args are step's, self first: step(closure) gives (optimizer, closure)
        if any(arg is not None for arg in args[1:]) or kwargs.get("closure") is not None:
            return
        key = id(optimizer)
        empty = self._empty_steps.get(key, 0)
        if empty < 0:  # this optimizer has had gradients: its empty steps are deliberate
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if not params or any(p.grad is not None for p in params):
            self._empty_steps[key] = -1
            return
        self._empty_steps[key] = empty + 1
        if empty + 1 >= _EMPTY_STEPS or not any(p.requires_grad for p in params):
            self._flag("TP012")

    # -- eval-mode forwards under grad mode: TP013 and TP014 ----------------------------------
    #
    # A top-level forward of a module in eval mode, with gradients enabled, whose output has a
    # graph, is recorded with a pre-hook on the output's grad_fn nodes (it runs when a backward,
    # or torch.autograd.grad, reaches the output). At the next optimizer step (of any optimizer)
    # and on leaving the guards, each recorded forward is settled:
    #
    # * TP013 (training in eval mode): its graph was backpropagated, the model holds a Dropout
    #   (p > 0) or a BatchNorm with running statistics that eval() switched off, and the stepping
    #   optimizer holds a parameter of the model that has a gradient. A BatchNorm frozen on
    #   purpose (eval() on the BatchNorm layers only) leaves the model in train mode: not flagged.
    # * TP014 (an evaluation that records a graph): no backward used its graph (reached its output
    #   or an input that requires grad), nor the graph of any other forward from the same line
    #   since the last step.

    def _eval_forward(self, root: nn.Module, inputs, output) -> None:
        if "TP013" not in self.active_ids and "TP014" not in self.active_ids:
            return
        if not self._watches(root):
            return
        _STATE.quiet += 1
        try:
            nodes = {}
            for leaf in torch.utils._pytree.tree_leaves(output):
                if isinstance(leaf, torch.Tensor) and leaf.grad_fn is not None:
                    nodes.setdefault(id(leaf.grad_fn), leaf.grad_fn)
            if not nodes:
                return
            used = [False]

            def mark(grad_outputs):
                used[0] = True

            handles = [node.register_prehook(mark) for node in nodes.values()]
            # a backward that reaches an input used the graph too, through an intermediate
            # result (a forward hook's activation, as DeepDream optimises an image on)
            for leaf in torch.utils._pytree.tree_leaves(inputs):
                if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                    if leaf.grad_fn is not None:
                        handles.append(leaf.grad_fn.register_prehook(mark))
                    else:
                        handles.append(leaf.register_hook(_unserializable(mark)))
            switched_off = any(
                not m.training
                and (
                    (isinstance(m, _DROPOUT_MODULES) and m.p > 0)
                    or (isinstance(m, _BATCH_NORMS) and m.track_running_stats)
                )
                for m in root.modules()
            )
            self._eval_forwards.append(
                (weakref.ref(root), self._root_place, used, switched_off, handles)
            )
        finally:
            _STATE.quiet -= 1
        if len(self._eval_forwards) > _MAX_EVAL_FORWARDS:  # no step for a long time: inference
            self._settle_eval_forwards(None)

    def _settle_eval_forwards(self, optimizer: torch.optim.Optimizer | None) -> None:
        records, self._eval_forwards = self._eval_forwards, []
        if not records:
            return
        used_places = {place for _, place, used, _, _ in records if used[0]}
        holds = None
        for root_ref, place, used, switched_off, handles in records:
            for handle in handles:
                handle.remove()
            if not used[0]:
                if place not in used_places:
                    self._flag("TP014", place)
                continue
            root = root_ref()
            if not switched_off or root is None or optimizer is None:
                continue
            if not self._watches_optimizer(optimizer):
                continue
            if holds is None:
                holds = {id(p) for g in optimizer.param_groups for p in g["params"]}
            if any(id(p) in holds and p.grad is not None for p in root.parameters()):
                self._flag("TP013", place)

    # -- tensors saved for backward, changed behind autograd's back (opt-in) ------------------

    @_quiet
    def _pack(self, tensor: torch.Tensor):
        unusual = tensor.layout != torch.strided or tensor.device.type == "meta"
        if unusual or tensor.data_ptr() in self._buffers:  # buffers: BatchNorm's running stats
            return (tensor, None, None)
        return (tensor, tensor._version, tensor.detach().clone())

    @_quiet
    def _unpack(self, packed) -> torch.Tensor:
        tensor, version, copy = packed
        if version is None:
            return tensor
        if tensor._version != version:
            # saved-tensor hooks switch off autograd's own check: make the same one
            made_by = (
                f", which is output {tensor.output_nr} of {tensor.grad_fn.name()},"
                if tensor.grad_fn is not None
                else ""
            )
            error = RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{tensor.type()} {list(tensor.shape)}]{made_by} is at "
                f"version {tensor._version}; expected version {version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True). (Raised by the guard TP010: "
                "saved-tensor hooks switch off autograd's own check.)"
            )
            self._add_note(error)
            raise error
        same = tensor == copy
        if tensor.is_floating_point() or tensor.is_complex():
            same |= tensor.isnan() & copy.isnan()
        if not bool(same.all()):
            self._flag("TP010", self._backward_place)
        return tensor

    # -- entering and leaving -----------------------------------------------------------------

    def __enter__(self) -> Guards:
        if self._stack is not None:
            raise RuntimeError("these guards are already active; make a new guards() to nest")
        self._stack = stack = contextlib.ExitStack()
        self._running: list[nn.Module] = []
        self._module_ids = {id(m) for root in self.modules for m in root.modules()}
        self._buffers: set[int] = {b.data_ptr() for root in self.modules for b in root.buffers()}
        self._after_step: dict[int, tuple] = {}
        self._stale_sums: dict[int, tuple] = {}
        self._params: dict[int, weakref.ref] = {}
        self._backward_place = None
        self._root_place = None
        self._eval_forwards: list[tuple] = []
        self._empty_steps: dict[int, int] = {}
        try:
            _install()
            stack.callback(_uninstall)
            handle = _module.register_module_forward_pre_hook(self._forward_pre_hook)
            stack.callback(handle.remove)
            handle = _module.register_module_forward_hook(self._forward_hook, **_ALWAYS_CALL)
            stack.callback(handle.remove)
            handle = _optimizer.register_optimizer_step_pre_hook(self._step_pre_hook)
            stack.callback(handle.remove)
            handle = _optimizer.register_optimizer_step_post_hook(self._step_post_hook)
            stack.callback(handle.remove)
            if "TP010" in self.active_ids:
                hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
                stack.enter_context(hooks)
            _ACTIVE.append(self)
            stack.callback(_ACTIVE.remove, self)
            stack.enter_context(_Mode(self))
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, exc_type, error, traceback) -> None:
        try:
            if self._stack is not None:
                if error is None:
                    self._settle_eval_forwards(None)
                elif isinstance(error, Exception):  # an error raised outside a torch function
                    self._add_note(error)
        finally:
            self._close()

    def _close(self) -> None:
        stack, self._stack = self._stack, None
        try:
            if stack is not None:
                stack.close()
        finally:
            self._running = []
            self._after_step, self._stale_sums, self._params = {}, {}, {}
            self._root_place = self._backward_place = None
            for record in getattr(self, "_eval_forwards", ()):
                for handle in record[-1]:
                    handle.remove()
            self._eval_forwards, self._empty_steps = [], {}


# -- PyTorch's own warnings, at the place PyTorch gives them -------------------------------------
#
# While the guards take the call of a checked torch function, frames stand between the user's call
# and PyTorch's code: the function's trampoline, the wrapper, _Mode.handle (and Guards._call), the
# codes in _WRAPPER_CODES; the function's own code then runs in a copy of it. Python places a
# warning by counting frames (``stacklevel``; a warning from C++ goes to the innermost Python
# frame), so PyTorch's warnings would land on a line of this file and, all sharing that line,
# show once for every place that raises them. While guards are active, a warning is placed as
# Python places it in the stack without those frames, and issued with warnings.warn_explicit,
# with the module and registry of that frame, through the filters:
#
# * while a checked function's code runs, warnings.warn is _warn, which knows the stacklevel:
#   every warning raised from Python (not outside: Dynamo knows the original when it compiles);
# * the first warnings filter is _FILTER (put first again at each checked call): it takes a warning
#   from C++ placed on a frame of the guards (action "always": no registry is written), and
#   _show, which Python then calls, issues it again; anything else goes on to the other filters.
#   A warning of another ``stacklevel`` that reaches _show, from Python code that holds its own
#   reference to the original warnings.warn, is placed by the frame it landed on: where the same
#   file and line repeat in the stack, the innermost is taken.
#
# The warnings of the guards' own reads (checks, hooks) are dropped, and so is the one PyTorch
# raises because the guards' module hooks are global.

_DROP = object()
_ACTIVE: list[Guards] = []  # the guards entered, innermost last (PyTorch's warnings: see _show)
_GET_FILTERS = getattr(warnings, "_get_filters", None)  # Python 3.14: per context, when enabled
# the frames of the guards between a call of a checked function and the function's own code
_WRAPPER_CODES = {
    _Mode.handle.__code__,
    _wrapper(None, None).__code__,
    Guards._call.__code__,
    Guards._call_backward.__code__,
}
_TRAMPOLINES: dict[types.CodeType, types.CodeType] = {}  # a function's code -> its trampoline
_WARNINGS_CODES = {
    f.__code__
    for f in (warnings.warn, warnings.warn_explicit, warnings._showwarnmsg)
    if hasattr(f, "__code__")  # the Python implementation of warn, where C's is missing
}
_INSTALLED = 0
_INSTALL_LOCK = threading.Lock()
_shown_by = warnings._showwarnmsg
try:
    from _warnings import warn as _warned_by  # the interpreter's, even if replaced since
except ImportError:  # pragma: no cover - an interpreter without the C module
    _warned_by = warnings.warn


def _warn(message, category=None, stacklevel=1, source=None, **options):
    """``warnings.warn`` while PyTorch's code runs under a guard's mode."""
    if _is_compiling():  # Dynamo traces this: it meets the original, as without us
        return _warned_by(message, category, stacklevel, source, **options)
    state = _STATE
    redirecting = _INSTALLED and not state.suspended
    if redirecting and state.quiet:
        return None
    prefixes = options.get("skip_file_prefixes", ())
    try:
        level = operator.index(stacklevel)
        kind = UserWarning if category is None else category
        kind = type(message) if isinstance(message, Warning) else kind
        valid = isinstance(kind, type) and issubclass(kind, Warning)
        valid = valid and set(options) <= {"skip_file_prefixes"} and isinstance(prefixes, tuple)
    except TypeError:
        valid = False
    if not valid or (options and sys.version_info < (3, 12)):
        return _warned_by(message, category, stacklevel, source, **options)  # its TypeError
    frames = _frames(sys._getframe(1))
    if redirecting and frames and _hooks_warning(frames[0]):
        return None
    inserted = _inserted(frames)
    kept = [frame for index, frame in enumerate(frames) if index not in inserted]
    frame = _at_level(kept, max(level, 2) if prefixes else level, prefixes)
    _issue(message, kind, frame, source)
    return None


def _issue(message, category, frame: types.FrameType | None, source) -> None:
    """Issue a warning at a frame, as ``warnings.warn`` does from there (None: no frame)."""
    _STATE.suspended += 1
    try:
        if frame is None:  # beyond the outermost frame: as Python does then
            _warned_by(message, category, sys.maxsize, source)
        else:
            module_globals = frame.f_globals
            warnings.warn_explicit(
                message,
                category,
                frame.f_code.co_filename,
                -1 if frame.f_lineno is None else frame.f_lineno,
                _module_name(module_globals),
                module_globals.setdefault("__warningregistry__", {}),
                source=source,
            )
    finally:
        _STATE.suspended -= 1


class _Redirect:
    """The module pattern of _FILTER: ``match(module)`` says whether _show takes the warning."""

    def match(self, module: str) -> bool:
        state = _STATE
        state.pending = None
        if state.suspended or not _INSTALLED:
            return False
        if state.quiet:
            state.pending = _DROP
            return True
        frames = _frames(sys._getframe(1))
        if frames and _hooks_warning(frames[0]):
            state.pending = _DROP
            return True
        inserted = _inserted(frames)
        if not inserted:
            return False
        # placed at or above the inserted frames (else nothing moves, and the filters go on)
        if any(_module_name(f.f_globals) == module for f in frames[min(inserted) :]):
            state.pending = module
            return True
        return False


_FILTER = ("always", None, Warning, _Redirect(), 0)


def _show(msg: warnings.WarningMessage) -> None:
    """``warnings._showwarnmsg`` while guards are active: issues again what _FILTER took."""
    state = _STATE
    pending, state.pending = state.pending, None
    if pending is None:  # another filter let it through
        _shown_by(msg)
        _after_warning(msg)
        return
    if pending is _DROP:
        return
    frames = _frames(sys._getframe(1))
    level = next(
        (
            level
            for level, index in enumerate(_positions(frames), 1)
            if frames[index].f_code.co_filename == msg.filename
            and frames[index].f_lineno == msg.lineno
        ),
        None,
    )
    if level is None:  # not placed by a frame (warn_explicit): same place, with its module
        _STATE.suspended += 1
        try:
            warnings.warn_explicit(
                msg.message, msg.category, msg.filename, msg.lineno, pending, source=msg.source
            )
        finally:
            _STATE.suspended -= 1
        return
    inserted = _inserted(frames)
    kept = [frame for index, frame in enumerate(frames) if index not in inserted]
    _issue(msg.message, msg.category, _at_level(kept, level), msg.source)


def _after_warning(msg: warnings.WarningMessage) -> None:
    """After a PyTorch warning that a page explains, a PitfallWarning with the page's URL."""
    if not _ACTIVE or _STATE.quiet or not isinstance(msg.category, type):
        return
    if _is_compiling():
        return
    if issubclass(msg.category, PitfallWarning):
        return
    try:
        entry = _messages.find(msg.category.__name__, str(msg.message), "warning")
    except Exception:
        return
    if entry is not None:  # at the user's line, even when PyTorch placed its own in torch
        place = _user_place()
        filename, lineno = (place.filename, place.lineno) if place else (msg.filename, msg.lineno)
        _ACTIVE[-1]._point_to_page(entry, filename, lineno)


def _frames(frame: types.FrameType | None) -> list[types.FrameType]:
    """The frames from the one that raised a warning outwards."""
    while frame is not None and frame.f_code in _WARNINGS_CODES:
        frame = frame.f_back
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def _inserted(frames: list[types.FrameType]) -> set[int]:
    """The indices of the frames that are there only because guards took a call."""
    return {i for i, frame in enumerate(frames) if frame.f_code in _WRAPPER_CODES}


def _positions(frames: list[types.FrameType], prefixes: tuple[str, ...] = ()) -> Iterator[int]:
    """The index of the frame that ``stacklevel`` 1, 2, ... gives, as Python counts them."""
    if not frames:
        return
    skip = not _internal(frames[0])  # Python skips its import machinery's frames
    i = 0
    while i < len(frames):
        yield i
        i += 1
        while (
            skip
            and i < len(frames)
            and (_internal(frames[i]) or frames[i].f_code.co_filename.startswith(prefixes))
        ):
            i += 1


def _at_level(
    frames: list[types.FrameType], level: int, prefixes: tuple[str, ...] = ()
) -> types.FrameType | None:
    """The frame ``stacklevel=level`` gives (None: beyond the outermost frame)."""
    if level <= 0:
        return frames[0] if frames else None
    index = next(itertools.islice(_positions(frames, prefixes), level - 1, None), None)
    return None if index is None else frames[index]


def _internal(frame: types.FrameType) -> bool:
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


def _module_name(module_globals: dict):
    """The module name a warning gets from a frame's globals, as Python finds it."""
    name = module_globals.get("__name__", "<string>")  # missing in FX's generated code, say
    return name if name is None or isinstance(name, str) else "<string>"


def _hooks_warning(frame: types.FrameType) -> bool:
    """PyTorch's warning that a compiled module runs global module hooks, when all are ours."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    compiled = getattr(eval_frame, "OptimizedModule", None)
    if compiled is None or frame.f_code is not compiled.__call__.__code__:
        return False
    hooks = [
        getattr(_module, name, {})
        for name in ("_global_forward_pre_hooks", "_global_forward_hooks")
        + ("_global_backward_pre_hooks", "_global_backward_hooks")
    ]
    return all(isinstance(getattr(h, "__self__", None), Guards) for d in hooks for h in d.values())


def _put_first(filters: list) -> None:
    """Make _FILTER the first warnings filter (moved, not added: no registry is reset)."""
    for i, item in enumerate(filters):
        if item is _FILTER:
            del filters[i]
            break
    filters.insert(0, _FILTER)


def _install() -> None:
    global _INSTALLED, _shown_by
    with _INSTALL_LOCK:
        if not _INSTALLED:
            if warnings._showwarnmsg is not _show:
                _shown_by = warnings._showwarnmsg
            warnings._showwarnmsg = _show
        _INSTALLED += 1
    _put_first(warnings.filters if _GET_FILTERS is None else _GET_FILTERS())


def _uninstall() -> None:
    global _INSTALLED
    with _INSTALL_LOCK:
        _INSTALLED -= 1
        if _INSTALLED:
            return
        filters = warnings.filters if _GET_FILTERS is None else _GET_FILTERS()
        filters[:] = [item for item in filters if item is not _FILTER]
        if warnings._showwarnmsg is _show:
            warnings._showwarnmsg = _shown_by


class _CallableModule(types.ModuleType):
    """Lets ``torch_pitfalls.guards(model, optimizer)`` make a :class:`Guards`."""

    def __call__(self, *watched, **options) -> Guards:
        return Guards(*watched, **options)


sys.modules[__name__].__class__ = _CallableModule


def main(argv: list[str] | None = None) -> int:
    """``python -m torch_pitfalls.guards [options] SCRIPT [ARGS…]``: run a script under guards.

    The script runs as ``__main__`` with ``sys.argv`` set to ``[SCRIPT, *ARGS]`` and its folder
    first on ``sys.path``, as ``python SCRIPT`` would. Returns the script's exit status
    (``SystemExit`` is honoured); a summary of the findings goes to standard error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.guards",
        description="Run a Python script with the torch-pitfalls runtime guards active.",
    )
    parser.add_argument("--language", help="en or zh_CN (default: environment, then locale)")
    parser.add_argument("--base-url", help="the site's base URL")
    parser.add_argument("--strict", action="store_true", help="raise instead of warning")
    parser.add_argument("--allow", default="", help="rule ids to silence, comma-separated")
    parser.add_argument("--enable", default="", help="opt-in rule ids, comma-separated")
    parser.add_argument("script", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    split = lambda text: [part.strip() for part in text.split(",") if part.strip()]  # noqa: E731
    try:
        guard = Guards(
            language=options.language,
            base_url=options.base_url,
            strict=options.strict,
            allow=split(options.allow),
            enable=split(options.enable),
        )
    except (KeyError, ValueError) as error:
        parser.error(str(error).strip("'\""))
    script = Path(options.script)
    if not script.is_file():
        parser.error(f"no such script: {script}")
    sys.argv = [str(script), *options.args]
    sys.path.insert(0, str(script.resolve().parent))
    warnings.simplefilter("default", PitfallWarning)
    status = 0
    try:
        with guard:
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
    finally:  # also when the script raises
        count = len(guard.found)
        print(
            f"torch_pitfalls.guards: {count} pitfall{'s' if count != 1 else ''} found"
            + (f" ({', '.join(guard.ids)})" if count else ""),
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    # run the imported module's main, so that its classes (PitfallWarning) are the ones in use
    from torch_pitfalls.guards import main as _main

    sys.exit(_main())
