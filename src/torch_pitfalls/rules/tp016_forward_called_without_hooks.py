"""``TP016``: a module's ``forward`` called directly, skipping its hooks or its DDP wrapper.

.. rubric:: What it does

Warns when the ``forward`` of a module that has forward hooks or forward pre-hooks registered
runs without the module being called, from outside any module call (``model.forward(x)`` in the
user's code), and that ``forward`` calls a submodule: the guards see the submodule's call come
from a ``forward`` whose module is not running. Reported at the line that called ``forward``.
Also warns when a module wrapped by ``DistributedDataParallel`` runs, with gradients enabled,
around its wrapper: ``ddp_model.module(x)``, or ``ddp_model.module.forward(x)`` when that
``forward`` calls a submodule. The guards know a wrapped module from the wrapper's construction
(they take the call of ``DistributedDataParallel._build_params_for_reducer`` that its
``__init__`` makes) or from the wrapper's first call
under the guards; calling the wrapper's own ``forward`` directly goes through DDP and is not
reported, nor a wrapped module run under ``torch.no_grad()`` (evaluation).
Not seen: a ``forward`` that calls no submodule (the ``forward`` of an ``nn.Linear`` with a hook,
called directly), and a direct ``forward`` call inside another module's call.

.. rubric:: Why is this bad?

``model(x)`` runs the module's forward pre-hooks, ``forward`` and its forward hooks;
``model.forward(x)`` runs ``forward`` alone: the hooks (activations recorded, inputs changed,
outputs checked) silently do not run. Under DDP, the wrapper's ``forward`` prepares the
averaging of the gradients: a forward around it leaves each rank with its own gradients, and
the replicas drift apart.

.. rubric:: Example

.. code-block:: python

    model.register_forward_hook(record)
    out = model.forward(x)

.. rubric:: Use instead

.. code-block:: python

    model.register_forward_hook(record)
    out = model(x)
"""

from __future__ import annotations

import sys
import weakref
from pathlib import Path

from torch_pitfalls.rules import Call, _rule

RULE = _rule(
    "TP016",
    "guard",
    "call-module-not-forward",
    "forward called directly, hooks skipped",
    "直接调用 forward，钩子被跳过",
    "the forward of a module with forward hooks (or wrapped by DistributedDataParallel) ran "
    "without them, so its hooks did not run (or DDP will not average its gradients): call the "
    "module, model(x), not model.forward(x); under DDP, the wrapper, ddp_model(x)",
    "注册有前向钩子（或被 DistributedDataParallel 包装）的模块的 forward 绕过了它们运行，钩子没有"
    "运行（或 DDP 不会平均它的梯度）：应调用模块本身 model(x)，而不是 model.forward(x)；"
    "在 DDP 下应调用包装器 ddp_model(x)",
    # DistributedDataParallel.__init__ holds a closure (super()): the guards take the method it
    # calls once self.module is set
    on=("forward", Call("torch.nn.parallel.DistributedDataParallel._build_params_for_reducer")),
)

_SKIPPED = (str(Path(__file__).resolve().parents[1]),)  # torch_pitfalls: the guards and the rules


def start(guards) -> None:
    guards.ddp_wrapped = weakref.WeakSet()  # the modules wrapped by a DistributedDataParallel


def stop(guards) -> None:
    guards.ddp_wrapped = weakref.WeakSet()


def check(guards, func, args, kwargs) -> None:
    """While a DistributedDataParallel is made (``__init__`` calls ``_build_params_for_reducer``
    once ``self.module`` is set): the module it wraps."""
    module = getattr(args[0] if args else None, "module", None)
    if isinstance(module, sys.modules["torch"].nn.Module):
        guards.ddp_wrapped.add(module)


def _around_ddp(guards, module) -> bool:
    """Whether ``module``, wrapped by a DistributedDataParallel, runs with gradients enabled
    without the wrapper's ``forward`` on the stack."""
    if module not in guards.ddp_wrapped or not sys.modules["torch"].is_grad_enabled():
        return False
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == _DDP_FILE[0]:
            return False
        frame = frame.f_back
    return True


_DDP_FILE = [""]


def _place(frame):
    from torch_pitfalls.guards._common import _Place

    name = frame.f_globals.get("__name__", "<unknown>")
    return _Place(frame.f_code.co_filename, frame.f_lineno, name)


def forward(guards, module) -> None:
    """Before each module's forward: a top-level call made from a ``forward`` whose module, with
    hooks or wrapped by DDP, is not running (its ``forward`` was called directly), or a
    top-level call of a module wrapped by DDP."""
    if len(guards.running) != 1:  # only a top-level call: inside a module call, all is running
        return
    torch = sys.modules["torch"]
    ddp = torch.nn.parallel.DistributedDataParallel
    if isinstance(module, ddp):  # the wrapper called: its module is wrapped
        guards.ddp_wrapped.add(module.module)
        return
    if not _DDP_FILE[0]:
        _DDP_FILE[0] = sys.modules[ddp.__module__].__file__
    call_impl = torch.nn.modules.module.__file__
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == call_impl or frame.f_code.co_filename.startswith(_SKIPPED)
    ):
        frame = frame.f_back
    owner = None
    if frame is not None and frame.f_code.co_name == "forward" and frame.f_code.co_argcount >= 1:
        owner = frame.f_locals.get(frame.f_code.co_varnames[0])
    if isinstance(owner, torch.nn.Module) and owner is not module:
        if (
            (owner._forward_hooks or owner._forward_pre_hooks) and guards.watches(owner)
        ) or _around_ddp(guards, owner):
            if frame.f_back is None:
                guards.flag(RULE.id)
            else:
                guards.flag(RULE.id, _place(frame.f_back))
        return
    if guards.ddp_wrapped and _around_ddp(guards, module):
        guards.flag(RULE.id, guards.root_place)
