"""How a checked torch function reaches the guards: trampolines and tensor-method shadows.

A torch function mode would see every call of every torch function, and make each pay Python
code (measured: an empty mode alone costs more than the targets allow). Only the calls of the
few checked functions are taken instead, while some guards are entered:

* a function written in Python (F.cross_entropy, Tensor.backward …) gets, in place, the code of
  _trampoline, which calls the wrapper given as its keyword-only default; a copy of the function
  keeps its original code. The function object stays the same, so a reference taken before the
  guards were entered (``from torch.nn.functional import dropout``, a default argument) calls
  the wrapper too; ``__wrapped__`` names the copy, for inspect.signature and getsource;
* a method of tensors written in C (Tensor.numpy) is shadowed by a wrapper set on
  ``torch.Tensor``: every tensor finds it, but a reference to the C method taken before entry
  (``torch._C.TensorBase.numpy``) is not seen;
* a function written in C and named by a module's attribute
  (F.scaled_dot_product_attention, which is ``torch._C._nn.scaled_dot_product_attention``) is
  shadowed by a wrapper set on that module, where :func:`resolve` found it: a call through the
  module, or through the module's globals (F.multi_head_attention_forward calls it so), is seen,
  but a reference taken before entry (``from torch.nn.functional import
  scaled_dot_product_attention`` at the top of a module) calls the C function itself, unseen.
  A call that a tensor subclass or a torch function mode sees (CausalBias, nested tensors, a
  ``with torch.device(...)`` block) runs with the C function back in its module, since they
  compare it (``func is torch.nn.functional.scaled_dot_product_attention``): the calls made
  meanwhile, in this thread or another, go to the C function unchecked;
* the wrapper takes the innermost guards of this thread that are not already handling a call,
  and runs their _Mode.handle; a torch function called from there (the call itself, a check)
  goes to the guards further out, then to the original: as with nested torch function modes.
  Other threads, and code run by torch.compile, call the original.

Unlike a mode, a checked function called by another torch function written in Python (dropout
inside F.multi_head_attention_forward) is seen: modes see only the outermost call. A tensor
method's call is seen by the innermost guards only (their call goes to the C method itself).
"""

from __future__ import annotations

import importlib
import inspect
import types

import torch
import torch.utils._pytree

from torch_pitfalls.guards._common import _STATE, _is_compiling
from torch_pitfalls.guards.pytorch_warnings import (
    _DROP,
    _INSTALL_LOCK,
    _TRAMPOLINES,
    _WRAPPER_CODES,
)

_WRAPPED: dict[object, tuple] = {}  # function -> (how to undo, wrapper, number of users)
_WRAPPERS: dict[object, object] = {}  # a wrapper set on torch.Tensor or a module -> the function
_HOMES: dict[object, tuple] = {}  # a function written in C -> (its module, attribute)
_LENT: dict[object, int] = {}  # such a function -> its calls running with it back in its module


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


def _module_wrapper(func, module, name):
    checked = _wrapper(func, func)
    overridden = torch.overrides.has_torch_function
    modes = torch._C._is_torch_function_mode_enabled

    def call(*args, **kwargs):
        if _is_compiling():  # Dynamo traces this: no checks (and no lock) inside torch.compile
            return func(*args, **kwargs)
        if not (modes() or overridden((*args, *kwargs.values()))):
            return checked(*args, **kwargs)
        # a subclass or a mode gets the call, and compares the function with its module's: the
        # function itself is back there while the call runs
        with _INSTALL_LOCK:
            if not _LENT.get(func) and func in _WRAPPED:
                setattr(module, name, func)
            _LENT[func] = _LENT.get(func, 0) + 1
        try:
            return checked(*args, **kwargs)
        finally:
            with _INSTALL_LOCK:
                _LENT[func] -= 1
                if not _LENT[func]:
                    del _LENT[func]
                    if func in _WRAPPED:
                        setattr(module, name, _WRAPPED[func][1])

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
    if isinstance(func, types.BuiltinFunctionType) and func in _HOMES:
        module, name = _HOMES[func]
        if getattr(module, name) is not func:
            where = f"{module.__name__}.{name}"
            raise TypeError(f"the guards cannot take the calls of {func!r}: {where}")
        call = _module_wrapper(func, module, name)
        undo = ("module", module, name, call)
        setattr(module, name, call)
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
    elif undo[0] == "module":
        _, module, name, call = undo
        _WRAPPERS.pop(call, None)
        setattr(module, name, func)
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


_WRAPPER_CODES.update((_wrapper(None, None).__code__, _module_wrapper(None, None, None).__code__))


def resolve(name: str):
    """The object a dotted name names: ``torch.nn.functional.cross_entropy``,
    ``torch.Tensor.numpy``, ``torch.nn.Module.load_state_dict``; a function written in C that is
    a module's attribute (``torch.nn.functional.scaled_dot_product_attention``) is remembered
    with that module, where the guards shadow it."""
    module_name, attribute = name, []
    while True:
        try:
            target = importlib.import_module(module_name)
            break
        except ImportError:
            module_name, _, last = module_name.rpartition(".")
            if not module_name:
                raise LookupError(f"no torch function {name!r}") from None
            attribute.insert(0, last)
    owner = None
    for part in attribute:
        owner, target = target, getattr(target, part)
    function = _WRAPPERS.get(target, target)  # the function itself while other guards shadow it
    if isinstance(function, types.BuiltinFunctionType) and isinstance(owner, types.ModuleType):
        _HOMES.setdefault(function, (owner, attribute[-1]))
    return _unwrapped(target)


def _unwrapped(target):
    """``target``, or for a wrapper made by ``functools.wraps`` that calls, through its closure,
    the Python function it wraps (torch's ``_no_grad`` around ``clip_grad_norm_``): that
    function, whose calls the wrapper makes and whose code the guards can take."""
    inner = getattr(target, "__wrapped__", None)
    if (
        isinstance(target, types.FunctionType)
        and target.__closure__
        and isinstance(inner, types.FunctionType)
        and not inner.__closure__
        and any(_contents(cell) is inner for cell in target.__closure__)
    ):
        return inner
    return target


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


_SIGNATURES: dict = {}
_BINDERS: dict = {}


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
    if func not in _SIGNATURES:
        _SIGNATURES[func] = signature = inspect.signature(func)
        _BINDERS[func] = _binder(signature)
    fast = _BINDERS[func]
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
