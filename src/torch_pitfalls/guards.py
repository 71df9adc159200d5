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
  (``torch.autograd.graph.saved_tensors_hooks``): it doubles the memory of saved tensors.

Nothing is installed until a guard is entered, everything is removed on exit (also when the
block raises), and no computed value is changed: the guards only read. Inside ``torch.compile``
they check nothing (the compiler traces the mode and the hooks); a check that cannot read a tensor
(under ``torch.func.vmap``) is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import inspect
import runpy
import sys
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
        if torch.compiler.is_compiling():  # Dynamo traces the mode: inside torch.compile, no checks
            return func(*args, **kwargs)
        check = self.checks.get(func)
        if check is not None:
            try:
                check(func, args, kwargs)
            except (PitfallError, Warning):  # strict mode, or warnings turned into errors
                raise
            except Exception:
                pass  # a check only reads: it must not break the user's code (e.g. under vmap)
        call = self.noted.get(func)
        if call is None:
            return func(*args, **kwargs)
        try:
            return call(func, args, kwargs)
        except Exception as error:
            self.guards._add_note(error, func, args, kwargs)
            raise


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
        if place is None:
            warnings.warn(warning, stacklevel=2)
        else:
            warnings.warn_explicit(
                warning, PitfallWarning, filename, lineno, module=place.module, registry={}
            )

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
        if torch.compiler.is_compiling():
            return  # inside torch.compile the module checks are off (Dynamo traces the hooks)
        if not self._running:  # a top-level call: where the user's code runs the model
            self._root_place = _user_place()
        self._running.append(module)
        if "TP010" in self.active_ids:
            self._buffers.update(b.data_ptr() for b in module.buffers(recurse=False))
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
        if torch.compiler.is_compiling():
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
        return torch.utils.hooks.unserializable_hook(hook)

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

    def _pack(self, tensor: torch.Tensor):
        unusual = tensor.layout != torch.strided or tensor.device.type == "meta"
        if unusual or tensor.data_ptr() in self._buffers:  # buffers: BatchNorm's running stats
            return (tensor, None, None)
        return (tensor, tensor._version, tensor.detach().clone())

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
            handle = _module.register_module_forward_pre_hook(self._forward_pre_hook)
            stack.callback(handle.remove)
            handle = _module.register_module_forward_hook(self._forward_hook, always_call=True)
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
