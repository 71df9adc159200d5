"""``TP009``: in-place modification of a tensor saved for backward.

.. rubric:: What it does

Adds a note (PEP 678) to autograd's error "one of the variables needed for gradient computation
has been modified by an inplace operation", raised by a backward: the registry of PyTorch's
messages (:mod:`torch_pitfalls.messages`) names this rule for that error.

.. rubric:: Why is this bad?

An operation changed in place a tensor that autograd saved for the backward pass, so the
gradient cannot be computed; the error names the tensor's version, not the line to change.

.. rubric:: Example

.. code-block:: python

    y = x.sigmoid()
    y.mul_(2)
    y.sum().backward()

.. rubric:: Use instead

.. code-block:: python

    y = x.sigmoid()
    y = y * 2
    y.sum().backward()
"""

from __future__ import annotations

from torch_pitfalls.rules import Error, _rule

RULE = _rule(
    "TP009",
    "note",
    "inplace-saved-tensor",
    "in-place modification of a tensor saved for backward",
    "原地修改了为反向传播保存的张量",
    "an operation modified in place a tensor that autograd saved for the backward pass: "
    "use the out-of-place form (x = x * 2, not x.mul_(2)) or clone() first",
    "某个操作原地修改了自动求导为反向传播保存的张量：应改用非原地写法（x = x * 2，而不是 "
    "x.mul_(2)），或先 clone()",
    on=(
        Error("torch.Tensor.backward"),
        Error("torch.autograd.backward"),
        Error("torch.autograd.grad"),
    ),
)
