"""PyTorch's own warnings, at the place PyTorch gives them, while guards are active.

While the guards take the call of a checked torch function, frames stand between the user's call
and PyTorch's code: the function's trampoline, the wrapper, _Mode.handle (and Guards._call), the
codes in _WRAPPER_CODES; the function's own code then runs in a copy of it. Python places a
warning by counting frames (``stacklevel``; a warning from C++ goes to the innermost Python
frame), so PyTorch's warnings would land on a line of this file and, all sharing that line,
show once for every place that raises them. While guards are active, a warning is placed as
Python places it in the stack without those frames, and issued with warnings.warn_explicit,
with the module and registry of that frame, through the filters:

* while a checked function's code runs, warnings.warn is _warn, which knows the stacklevel:
  every warning raised from Python (not outside: Dynamo knows the original when it compiles);
* the first warnings filter is _FILTER (put first again at each checked call): it takes a warning
  from C++ placed on a frame of the guards (action "always": no registry is written), and
  _show, which Python then calls, issues it again; anything else goes on to the other filters.
  A warning of another ``stacklevel`` that reaches _show, from Python code that holds its own
  reference to the original warnings.warn, is placed by the frame it landed on: where the same
  file and line repeat in the stack, the innermost is taken.

The warnings of the guards' own reads (checks, hooks) are dropped, and so is the one PyTorch
raises because the guards' module hooks are global.
"""

from __future__ import annotations

import itertools
import operator
import sys
import threading
import types
import warnings
from collections.abc import Iterator

from torch.nn.modules import module as _module

from torch_pitfalls import messages as _messages
from torch_pitfalls.guards._common import _STATE, PitfallWarning, _is_compiling, _user_place

_DROP = object()
_ACTIVE: list = []  # the guards entered, innermost last (PyTorch's warnings: see _show)
_GET_FILTERS = getattr(warnings, "_get_filters", None)  # Python 3.14: per context, when enabled
# the frames of the guards between a call of a checked function and the function's own code
_WRAPPER_CODES: set[types.CodeType] = set()  # filled by the parts that take calls (intercept)
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
        _ACTIVE[-1].point_to_page(entry, filename, lineno)


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
    return all(
        getattr(getattr(h, "__self__", None), "_is_guards", False)
        for d in hooks
        for h in d.values()
    )


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
