"""The guards' engine: options, findings, and the dispatch of torch calls and events to the rules.

On entering, :class:`Guards` reads what each active runtime rule watches (``RULE.on``, data: the
dotted names of torch functions, or events; see :data:`torch_pitfalls.rules.EVENTS`), resolves the
names to the functions once, and builds its tables: a checked call then costs a dict lookup and
the rules' checks (:class:`_Mode`), and every other torch call nothing.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import nn
from torch.nn.modules import module as _module
from torch.optim import optimizer as _optimizer

from torch_pitfalls import rules as _rules
from torch_pitfalls.guards import intercept as _intercept
from torch_pitfalls.guards._common import (
    _ALLOWED,
    _ALWAYS_CALL,
    _STATE,
    Finding,
    PitfallError,
    PitfallWarning,
    _Place,
    _quiet,
    _user_place,
)
from torch_pitfalls.guards.hooks import Hooks
from torch_pitfalls.guards.notes import Notes
from torch_pitfalls.guards.pytorch_warnings import (
    _ACTIVE,
    _FILTER,
    _GET_FILTERS,
    _WRAPPER_CODES,
    _install,
    _put_first,
    _uninstall,
    _warn,
    _warned_by,
)

_BACKWARDS = ("torch.Tensor.backward", "torch.autograd.backward")  # the "backward" event's calls


class _Mode:
    """What one :class:`Guards` does on the calls of the torch functions it checks.

    A context manager: entered, it makes the guards' torch functions (the keys of ``checks`` and
    ``noted``) call :meth:`handle` in this thread (see _wrap below), the innermost guards first,
    as nested torch function modes would; every other torch function runs untouched.
    """

    def __init__(self, guards: Guards, checks: dict, noted: dict) -> None:
        self.guards = guards
        self.checks = checks  # function -> the checks of the rules that watch its calls
        self.noted = noted  # function -> what makes the call (None: the function itself)

    def __enter__(self) -> _Mode:
        # a tensor method read while other guards are active is their wrapper: the method instead
        self.checks = {_intercept._WRAPPERS.get(f, f): check for f, check in self.checks.items()}
        self.noted = {_intercept._WRAPPERS.get(f, f): call for f, call in self.noted.items()}
        functions = list(dict.fromkeys([*self.checks, *self.noted]))
        _intercept._wrap_all(functions)
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
        _intercept._unwrap_all(self.functions)

    def handle(self, func, args, kwargs):
        """One call of a checked torch function: its check, then the call (errors get notes)."""
        filters = warnings.filters if _GET_FILTERS is None else _GET_FILTERS()
        if not filters or filters[0] is not _FILTER:  # a filter added since: ours goes first again
            _put_first(filters)
        checks = self.checks.get(func)
        if checks is not None:
            guards = self.guards
            _STATE.quiet += 1
            try:
                for check in checks:
                    try:
                        check(guards, func, args, kwargs)
                    except (PitfallError, PitfallWarning):  # strict mode, or warnings as errors
                        raise
                    except Exception:
                        pass  # a check only reads: it must not break the user's code (vmap)
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
                self.guards.add_note(error, func, args, kwargs)
            finally:
                _STATE.quiet -= 1
            raise
        finally:
            if replaced:
                warnings.warn = _warned_by


def _chain(error: BaseException) -> list[Exception]:
    """``error`` and the errors the traceback prints above it: its ``__cause__`` (``raise … from``)
    or else its ``__context__`` (raised while handling), as far as they go; each once."""
    chain: list[Exception] = []
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, Exception):
            chain.append(link)
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return chain


class Guards(Hooks, Notes):
    """The runtime guards, as a context manager (usually made by ``torch_pitfalls.guards(...)``).

    Args:
        *watched: modules and optimizers to watch. Module rules (``TP003``, ``TP004``) then look
            only at these modules and their submodules, and the stale-gradient rule (``TP005``)
            only at these optimizers. With none of a kind, every module (optimizer) is watched.
        language: ``"en"`` or ``"zh_CN"`` for messages and URLs; default: the environment
            variable ``TORCH_PITFALLS_LANGUAGE``, else the locale
            (:func:`torch_pitfalls.catalog.resolve_language`).
        base_url: the site's base URL; default: ``TORCH_PITFALLS_BASE_URL``, else
            :data:`torch_pitfalls.catalog.BASE_URL`.
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
        self.running: list[nn.Module] = []
        self.root_place: _Place | None = None
        self.backward_place: _Place | None = None
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

    def flag(self, rule_id: str, place: _Place | None = None) -> None:
        """A finding of a rule at ``place`` (default: the user's line now), once per place: a
        :class:`PitfallWarning` there, or :class:`PitfallError` in strict mode."""
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

    # -- what the rules use ---------------------------------------------------------------------

    _is_guards = True  # for the warnings part, which cannot import this class

    def bind(self, func, args, kwargs) -> dict:
        """The arguments of a call by parameter name, defaults included (as inspect binds them)."""
        return _intercept._bind(func, args, kwargs)

    @contextlib.contextmanager
    def reading(self):
        """A block where the guards read tensors: its warnings are theirs, and dropped."""
        _STATE.quiet += 1
        try:
            yield
        finally:
            _STATE.quiet -= 1

    @staticmethod
    def quietly(hook):
        """``hook``, run with its warnings dropped (PyTorch would not raise them)."""
        return _quiet(hook)

    # -- dispatch -------------------------------------------------------------------------------

    def _tables(self) -> tuple[dict, dict]:
        """Read what the rules watch, resolve the names, and fill the tables of events."""
        checks: dict = {}
        noted: dict = {}
        self._returned: dict = {}
        self._claims: dict = {}
        self._error_targets: dict = {}
        on: dict[str, list] = {event: [] for event in _rules.EVENTS}
        self._starts, self._stops = [], []
        for found in _rules.RULES:
            if found.kind == "lint":
                continue
            module = found.module
            active = found.id in self.active_ids
            for target in found.on:
                if isinstance(target, _rules.Error):
                    func = _intercept.resolve(target.name)
                    noted.setdefault(func, None)
                    self._error_targets.setdefault(found.id, set()).add(func)
                    if hasattr(module, "claims"):
                        self._claims[found.id] = module.claims
                elif not active:
                    continue
                elif isinstance(target, _rules.Call):
                    func = _intercept.resolve(target.name)
                    checks[func] = (*checks.get(func, ()), module.check)
                elif isinstance(target, _rules.Returned):
                    func = _intercept.resolve(target.name)
                    noted[func] = self._call_returned
                    self._returned[func] = (*self._returned.get(func, ()), module.returned)
                else:
                    on[target].append(module)
            if active and hasattr(module, "start"):
                self._starts.append(module.start)
            if active and hasattr(module, "stop"):
                self._stops.append(module.stop)
        for name in _BACKWARDS:
            noted[_intercept.resolve(name)] = self._call_backward
        self._on_forward = tuple(m.forward for m in on["forward"])
        self._on_step = tuple(m.step for m in on["optimizer step"])
        self._on_after_step = tuple(m.after_step for m in on["after optimizer step"])
        self._on_backward = tuple((m.before_backward, m.after_backward) for m in on["backward"])
        self._on_settled = tuple(m.settled for m in on["evaluation settled"])
        if len(on["saved tensors"]) > 1:
            raise RuntimeError("saved-tensor hooks for more than one rule are not supported")
        self._saved_tensors = on["saved tensors"][0] if on["saved tensors"] else None
        return checks, noted

    def _call_returned(self, func, args, kwargs):
        result = func(*args, **kwargs)
        for returned in self._returned.get(func, ()):
            try:
                returned(self, result)
            except (PitfallError, PitfallWarning):
                raise
            except Exception:  # a read that fails must not break the user's call
                pass
        return result

    # -- entering and leaving -------------------------------------------------------------------

    def __enter__(self) -> Guards:
        if self._stack is not None:
            raise RuntimeError("these guards are already active; make a new guards() to nest")
        self._stack = stack = contextlib.ExitStack()
        self.running = []
        self._module_ids = {id(m) for root in self.modules for m in root.modules()}
        self.root_place = self.backward_place = None
        self._eval_forwards: list = []
        try:
            checks, noted = self._tables()
            for start in self._starts:
                start(self)
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
            saved = self._saved_tensors
            if saved is not None:
                pack = _quiet(lambda tensor: saved.pack(self, tensor))
                unpack = _quiet(lambda packed: saved.unpack(self, packed))
                stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, unpack))
            _ACTIVE.append(self)
            stack.callback(_ACTIVE.remove, self)
            stack.enter_context(_Mode(self, checks, noted))
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, exc_type, error, traceback) -> None:
        try:
            if self._stack is not None:
                if error is None:
                    self._settle_eval_forwards(None)
                elif isinstance(error, Exception):
                    for link in _chain(error):  # the error, and the errors it was raised from
                        self.add_note(link)
        finally:
            self._close()

    def _close(self) -> None:
        stack, self._stack = self._stack, None
        try:
            if stack is not None:
                stack.close()
        finally:
            self.running = []
            self.root_place = self.backward_place = None
            for record in getattr(self, "_eval_forwards", ()):
                for handle in record.handles:
                    handle.remove()
            self._eval_forwards = []
            for stop in getattr(self, "_stops", ()):
                stop(self)


# the frames of the guards between a call of a checked function and the function's own code
_WRAPPER_CODES.update(
    {_Mode.handle.__code__, Guards._call_backward.__code__, Guards._call_returned.__code__}
)
