"""``TP103``: a training loop that never clears gradients.

.. rubric:: What it does

In a module that imports torch (an MXNet/Gluon or Paddle loop, whose file never does, is not
checked), a ``for`` or ``while`` loop whose body calls ``.backward()`` and an optimizer's
``.step()`` but never clears gradients. ``x.backward()`` is any call of that name except
``torch.distributed.autograd.backward(context_id, ...)`` (distributed autograd keeps the
gradients per context). A step is ``x.step()`` with no argument or only a closure: a
``lambda``, a function of the module, a name that says ``closure``, or ``closure=``; or with an
argument named like an optimizer (a name or attribute that contains ``optim``, is ``opt`` or
starts with ``opt_``), or on a receiver whose name contains ``scaler``
(``scaler.step(optimizer)``). A step with another argument is not an optimizer's:
``env.step(action)`` in a reinforcement-learning loop, Gluon's ``trainer.step(batch_size)``,
the distributed optimizer's ``opt.step(context_id)``. A loop is reported when it never clears
gradients: no ``.zero_grad()`` on anything, no assignment to or ``del`` of a ``.grad``
attribute (``p.grad = None``), no ``.grad.zero_()``, ``.grad.fill_(0)`` or ``.grad.mul_(0)`` (a
literal ``0`` or ``0.0``), no ``torch._foreach_zero_(...)``. Calls to functions of the same
module count as their bodies (transitively): a bare ``helper()`` is any function of the module
by that name, ``self.helper()`` a method of the enclosing class, where ``self`` is whatever the
method names its first parameter (``trainer.reset()`` in ``def fit(trainer)``; nothing in a
``@staticmethod``). Clearing under an ``if`` (every k steps) counts as clearing. Code in a
function defined inside the loop (an LBFGS ``closure``) is not part of the loop, but the loop
is also reported when it calls ``.step(closure)`` or ``.step(closure=closure)`` with a function
of that name defined in the same function (or module) as the loop, inside the loop or not, that
calls ``.backward()`` and never clears gradients (through its callees too; when several
functions have the name, all of them; a ``lambda`` is not checked): LBFGS calls the closure
several times per step, so the closure itself must call ``zero_grad()``, whatever the loop
clears. Nested loops report the innermost loop that has the problem, once: an outer loop is not
reported again for a problem of a loop inside it. Always reported at the loop's ``for`` or
``while`` (for a closure too, not at its ``def``).

Not reported either: a loop that assigns anew, on each pass, the optimizer it steps (a new
model and optimizer per configuration, a new leaf and optimizer per step), or that calls a
function doing so: nothing is carried into the next step.

.. rubric:: Why is this bad?

Gradients accumulate: without ``zero_grad()`` each step applies the sum of every gradient since
training began, and training diverges or crawls.

.. rubric:: Example

.. code-block:: python

    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss_fn(model(x), y).backward()
        opt.step()

.. rubric:: Use instead

.. code-block:: python

    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
"""

from __future__ import annotations

from collections.abc import Iterator

from torch_pitfalls.lint.analyses.loops import loop_findings
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP103",
    "lint",
    "backward-step-zero-grad",
    "training loop that never clears gradients",
    "训练循环从不清空梯度",
    "this loop calls backward() and step() but never clears the gradients, so every step "
    "adds up all earlier gradients: call optimizer.zero_grad() in the loop",
    "这个循环调用了 backward() 和 step()，却从不清空梯度，每一步都会叠加之前所有步的梯度："
    "应在循环中调用 optimizer.zero_grad()",
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """``(line, column from 0)`` of each finding of ``TP103`` in the module."""
    for line, col, rule_id in loop_findings(context):
        if rule_id == RULE.id:
            yield line, col
