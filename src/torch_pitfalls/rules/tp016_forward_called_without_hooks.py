"""``TP016``: a module's ``forward`` called directly, skipping its hooks.

.. rubric:: What it does

Warns when the ``forward`` of a module that has forward hooks or forward pre-hooks registered
runs without the module being called, from outside any module call (``model.forward(x)`` in the
user's code), and that ``forward`` calls a submodule: the guards see the submodule's call come
from a ``forward`` whose module is not running. Reported at the line that called ``forward``.
Not seen: a ``forward`` that calls no submodule (the ``forward`` of an ``nn.Linear`` with a hook,
called directly), and a direct ``forward`` call inside another module's call.

.. rubric:: Why is this bad?

``model(x)`` runs the module's forward pre-hooks, ``forward`` and its forward hooks;
``model.forward(x)`` runs ``forward`` alone: the hooks (activations recorded, inputs changed,
outputs checked) silently do not run.

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
from pathlib import Path

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP016",
    "guard",
    "call-module-not-forward",
    "forward called directly, hooks skipped",
    "直接调用 forward，钩子被跳过",
    "the forward of a module with forward hooks was called directly, so its hooks did not run: "
    "call the module, model(x), not model.forward(x)",
    "直接调用了注册有前向钩子的模块的 forward，它的钩子没有运行：应调用模块本身 model(x)，"
    "而不是 model.forward(x)",
    on=("forward",),
)

_SKIPPED = (str(Path(__file__).resolve().parents[1]),)  # torch_pitfalls: the guards and the rules


def forward(guards, module) -> None:
    """Before each module's forward: a top-level call made from a ``forward`` whose module, with
    hooks, is not running (its ``forward`` was called directly)."""
    if len(guards.running) != 1:  # only a top-level call: inside a module call, all is running
        return
    torch = sys.modules["torch"]
    call_impl = torch.nn.modules.module.__file__
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == call_impl or frame.f_code.co_filename.startswith(_SKIPPED)
    ):
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "forward" or frame.f_code.co_argcount < 1:
        return
    owner = frame.f_locals.get(frame.f_code.co_varnames[0])
    if (
        isinstance(owner, torch.nn.Module)
        and owner is not module
        and (owner._forward_hooks or owner._forward_pre_hooks)
        and guards.watches(owner)
    ):
        caller = frame.f_back
        if caller is None:
            guards.flag(RULE.id)
            return
        from torch_pitfalls.guards._common import _Place

        name = caller.f_globals.get("__name__", "<unknown>")
        guards.flag(RULE.id, _Place(caller.f_code.co_filename, caller.f_lineno, name))
