"""Runtime guards: catch the pitfalls of this site in your own code while it runs.

Use the package as a context manager, around a training script, a test or a notebook cell::

    import torch_pitfalls

    with torch_pitfalls.guards(model, optimizer):
        train(model, optimizer)

or run a whole script with every default guard active, as ``python -m trace`` does::

    python -m torch_pitfalls.guards train.py --epochs 3

Each pitfall found warns once per place in your code with a :class:`PitfallWarning`, whose
message starts with the rule's id and ends with the URL of the page that explains it (each rule
is a module of :mod:`torch_pitfalls.rules`). PyTorch's own errors and warnings that a page
explains (the registry :mod:`torch_pitfalls.messages`) get a note with the page's URL (PEP 678),
or are followed by a :class:`PitfallWarning` with it; PyTorch's own warning is left as it is.

How the guards work, and what they cost:

* only the torch functions the active rules name are taken (``F.cross_entropy``, ``F.dropout``,
  ``F.interpolate``, ``Tensor.backward``, ``Tensor.numpy`` …), in the thread that entered the
  guards (``intercept``): a checked call pays a few Python calls and its checks (the loss
  checks read the input's values: on CUDA, a synchronisation); every other torch call nothing;
* global module forward hooks and optimizer step hooks, and a look at the optimizer's gradients
  around each backward call, are the events the other rules watch (``hooks``): every
  module call pays two Python calls, each step and each backward a loop over the parameters;
* the opt-in rule ``TP010`` packs every tensor saved for backward with a copy of it
  (``torch.autograd.graph.saved_tensors_hooks``): it doubles the memory of saved tensors;
* PyTorch's own warnings keep the place they have without the guards (``pytorch_warnings``):
  the same file, line and module, and so the same count under your filters.

``nox -s bench`` measures what they cost side by side (the time of the same loop with guards
over its time without, CPU, one thread, the default rules) on ten training steps of a tiny MLP
and on a training step of a small CNN (batch 64, 32x32 inputs), and prints each ratio with its
target: at most 1.2x and 1.05x.

Nothing is installed until a guard is entered, everything is removed on exit (also when the
block raises), and no computed value is changed: the guards only read. Inside ``torch.compile``
they check nothing (the compiler traces the wrappers and the hooks); a check that cannot read a
tensor (under ``torch.func.vmap``) is skipped.

The parts: ``engine`` (options, findings, dispatch), ``intercept``, ``hooks``,
``notes``, ``pytorch_warnings``, and the runner ``python -m torch_pitfalls.guards``
(:func:`main`).
"""

from __future__ import annotations

import sys
import types

from torch_pitfalls.guards._common import Finding, PitfallError, PitfallWarning, allow
from torch_pitfalls.guards.engine import Guards
from torch_pitfalls.guards.pytorch_warnings import _FILTER, _show, _warn  # noqa: F401 (tests)

__all__ = ["Finding", "Guards", "PitfallError", "PitfallWarning", "allow", "main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m torch_pitfalls.guards [options] SCRIPT [ARGS…]``: run a script under guards
    (``python -m torch_pitfalls.guards``)."""
    from torch_pitfalls.guards.__main__ import main as run

    return run(argv)


class _CallableModule(types.ModuleType):
    """Lets ``torch_pitfalls.guards(model, optimizer)`` make a :class:`Guards`."""

    def __call__(self, *watched, **options) -> Guards:
        return Guards(*watched, **options)


sys.modules[__name__].__class__ = _CallableModule
