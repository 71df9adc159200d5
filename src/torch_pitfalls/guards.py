"""Runtime guards: catch the pitfalls of this site in your own code while it runs.

Use the module as a context manager, around a training script, a test or a notebook cell::

    import torch_pitfalls

    with torch_pitfalls.guards(model, optimizer):
        train(model, optimizer)

or run a whole script with every default guard active, as ``python -m trace`` does::

    python -m torch_pitfalls.guards train.py --epochs 3

Each pitfall found warns once per place in your code with a :class:`PitfallWarning`, whose
message starts with the rule's id and ends with the URL of the page that explains it (the rules
are listed in :mod:`torch_pitfalls.rules`). Errors that PyTorch raises itself for three pitfalls
(NumPy conversion of a tensor that requires grad or lives on CUDA, an in-place change of a tensor
saved for backward) get a note with the page's URL (PEP 678).

How the guards work, and what they cost:

* a ``torch.overrides.TorchFunctionMode`` sees each call of a torch function while active
  (``F.cross_entropy``, ``F.dropout``, ``Tensor.backward``, ``Tensor.numpy`` …); every call pays
  one Python dictionary lookup, and the few functions checked pay their check (the loss checks
  read the input's values: on CUDA, a synchronisation);
* global module forward hooks (``torch.nn.modules.module.register_module_forward_pre_hook``)
  know which module is running and in which mode;
* a global optimizer step hook (``torch.optim.optimizer.register_optimizer_step_post_hook``)
  and gradient hooks on the optimizer's parameters find gradients left from the last step;
* the opt-in rule ``TP010`` packs every tensor saved for backward with a copy of it
  (``torch.autograd.graph.saved_tensors_hooks``): it doubles the memory of saved tensors;
* a warnings filter is put first, and ``warnings.warn`` is replaced while a torch function runs,
  so that PyTorch's own warnings keep the place they have without the guards (the mode's frames
  stand between your line and PyTorch's code): the same file, line and module, and so the same
  count under your filters.

Nothing is installed until a guard is entered, everything is removed on exit (also when the
block raises), and no computed value is changed: the guards only read. Inside ``torch.compile``
they check nothing (the compiler traces the mode and the hooks); a check that cannot read a tensor
(under ``torch.func.vmap``) is skipped.
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
from torch import nn
from torch.nn.modules import module as _module
from torch.optim import optimizer as _optimizer
from torch.overrides import TorchFunctionMode

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


def _input(args, kwargs):
    """The first argument of a torch function, given by position or as ``input=``."""
    return args[0] if args else kwargs.get("input")


def _bind(func, args, kwargs) -> dict:
    bound = _SIGNATURES[func].bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


class _Mode(TorchFunctionMode):
    """The torch function mode of one :class:`Guards`: a lookup, then the check, if any."""

    def __init__(self, guards: Guards) -> None:
        super().__init__()
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
        }

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_compiling():  # Dynamo traces the mode: inside torch.compile, no checks
            return func(*args, **kwargs)
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
            if call is not None:
                _STATE.quiet += 1
                try:
                    self.guards._add_note(error, func, args, kwargs)
                finally:
                    _STATE.quiet -= 1
            raise
        finally:
            if replaced:
                warnings.warn = _warned_by


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
        text = str(error)
        if "Can't call numpy() on Tensor that requires grad" in text:
            rule_id = "TP007"
        elif "can't convert cuda" in text and "numpy" in text:
            rule_id = "TP008"
        elif "modified by an inplace operation" in text:
            rule_id = "TP009"
        elif func is F.interpolate and self._unbatched_image_error(error, args, kwargs or {}):
            rule_id = "TP006"
        else:
            return
        if self._silenced(rule_id):
            return
        note = self.message(rule_id)
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)
            place = _user_place()
            filename, lineno = (place.filename, place.lineno) if place else ("", 0)
            self.found.append(Finding(rule_id, filename, lineno, note))

    # -- checks on torch functions ------------------------------------------------------------

    def _check_cross_entropy(self, func, args, kwargs) -> None:
        logits = _input(args, kwargs)
        if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
            return
        if logits.numel() == 0:
            return
        class_dim = 0 if logits.dim() == 1 else 1
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

    def _call_backward(self, func, args, kwargs):
        self._backward_place = _user_place()
        try:
            return func(*args, **kwargs)
        finally:
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

    # -- gradients left from the last optimizer step ------------------------------------------
    #
    # After a step, each parameter's gradient object and its version are remembered. A backward
    # that accumulates into that same, unchanged gradient adds the last step's gradient to the
    # new one; the finding is made when the same optimizer steps on that sum, so that gradients
    # cleared before the next step (a GAN's discriminator, say) and torch.autograd.grad (which
    # accumulates nothing) are not flagged.

    def _watches_optimizer(self, optimizer: torch.optim.Optimizer) -> bool:
        return not self.optimizers or any(optimizer is o for o in self.optimizers)

    @_quiet
    def _step_pre_hook(self, optimizer: torch.optim.Optimizer, args, kwargs) -> None:
        if not self._watches_optimizer(optimizer):
            return
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
                if id(param) not in self._hooked:
                    self._hooked[id(param)] = True
                    handle = param.register_hook(self._gradient_hook(param))
                    self._stack.callback(handle.remove)
                    if hasattr(param, "register_post_accumulate_grad_hook"):  # PyTorch 2.1+
                        handle = param.register_post_accumulate_grad_hook(self._accumulated_hook)
                        self._stack.callback(handle.remove)

    def _gradient_hook(self, param: torch.Tensor):
        param_ref = weakref.ref(param)

        def hook(grad: torch.Tensor) -> None:  # before accumulation into param.grad
            param = param_ref()
            left = self._after_step.get(id(param)) if param is not None else None
            if left is None:
                return
            grad_ref, version = left
            current = param.grad
            if current is not None and current is grad_ref() and current._version == version:
                self._pending[id(param)] = self._backward_place  # the last step's gradient
            else:
                self._after_step.pop(id(param), None)

        # not pickled with the tensor: saying so would be a PyTorch warning caused by the guards
        return torch.utils.hooks.unserializable_hook(_quiet(hook))

    @_quiet
    def _accumulated_hook(self, param: torch.Tensor) -> None:  # after accumulation (not grad())
        if param.grad is None:
            return
        if id(param) in self._pending:
            place = self._pending.pop(id(param))
            self._after_step.pop(id(param), None)
            self._stale_sums[id(param)] = (weakref.ref(param.grad), param.grad._version, place)
        elif id(param) in self._stale_sums:  # more micro-batches summed onto the stale sum
            grad_ref, _, place = self._stale_sums[id(param)]
            if param.grad is grad_ref():
                self._stale_sums[id(param)] = (grad_ref, param.grad._version, place)

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
        self._pending: dict[int, _Place | None] = {}
        self._stale_sums: dict[int, tuple] = {}
        self._hooked: dict[int, bool] = {}
        self._backward_place = None
        self._root_place = None
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
            stack.enter_context(_Mode(self))
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self._close()

    def _close(self) -> None:
        stack, self._stack = self._stack, None
        try:
            if stack is not None:
                stack.close()
        finally:
            self._running = []
            self._after_step, self._pending, self._stale_sums, self._hooked = {}, {}, {}, {}
            self._root_place = self._backward_place = None


# -- PyTorch's own warnings, at the place PyTorch gives them -------------------------------------
#
# While the mode runs a torch function, frames stand between the user's call and PyTorch's code:
# _Mode.__torch_function__ (and Guards._call), and, for a function written in Python, also
# torch.overrides.handle_torch_function and the first frames of the function itself, which then
# runs again inside the mode. Python places a warning by counting frames (``stacklevel``; a warning
# from C++ goes to the innermost Python frame), so PyTorch's warnings would land on a line of this
# file and, all sharing that line, show once for every place that raises them. While guards are
# active, a warning is placed as Python places it in the stack without those frames, and issued
# with warnings.warn_explicit, with the module and registry of that frame, through the filters:
#
# * while PyTorch's code runs under the mode, warnings.warn is _warn, which knows the stacklevel:
#   every warning raised from Python (not outside: Dynamo knows the original when it compiles);
# * the first warnings filter is _FILTER (put first again at each torch call): it takes a warning
#   from C++ placed on a frame of the guards (action "always": no registry is written), and
#   _show, which Python then calls, issues it again; anything else goes on to the other filters.
#   A warning of another ``stacklevel`` that reaches _show, from Python code that holds its own
#   reference to the original warnings.warn, is placed by the frame it landed on: where the same
#   file and line repeat in the stack, the innermost is taken.
#
# The warnings of the guards' own reads (checks, hooks) are dropped, and so is the one PyTorch
# raises because the guards' module hooks are global.

_DROP = object()
_GET_FILTERS = getattr(warnings, "_get_filters", None)  # Python 3.14: per context, when enabled
_TORCH_FUNCTION_CODE = _Mode.__torch_function__.__code__
_WRAPPER_CODES = {Guards._call.__code__, Guards._call_backward.__code__}
_HANDLE_CODE = torch.overrides.handle_torch_function.__code__
_OUTER_FRAMES = 8  # the most frames of a Python torch function before handle_torch_function
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
    """The indices of the frames that are there only because a guard's mode is active."""
    inserted = set()
    for i, frame in enumerate(frames):
        if frame.f_code in _WRAPPER_CODES:
            inserted.add(i)
        elif frame.f_code is _TORCH_FUNCTION_CODE:
            inserted.add(i)
            if i + 1 < len(frames) and frames[i + 1].f_code is _HANDLE_CODE:
                # a Python function: handle_torch_function, then the function's first run
                inserted.add(i + 1)
                public = getattr(frame.f_locals.get("func"), "__code__", None)
                outer = frames[i + 2 : i + 2 + _OUTER_FRAMES]
                last = next((n for n, f in enumerate(outer) if f.f_code is public), 0)
                inserted.update(range(i + 2, min(i + 3 + last, len(frames))))
    return inserted


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
