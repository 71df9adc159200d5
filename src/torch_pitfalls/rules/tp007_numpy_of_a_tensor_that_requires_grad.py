"""``TP007``: NumPy conversion of a tensor that requires grad.

.. rubric:: What it does

Adds a note (PEP 678) to PyTorch's error when ``tensor.numpy()`` (or ``np.asarray(tensor)``) is
called on a tensor that requires grad: the registry of PyTorch's messages
(:mod:`torch_pitfalls.messages`) names this rule for that error.

.. rubric:: Why is this bad?

PyTorch refuses the conversion, since NumPy cannot follow autograd; the error says what to call
but not why, nor that ``.cpu()`` is needed too for a tensor on a GPU.

.. rubric:: Example

.. code-block:: python

    array = model(x).numpy()

.. rubric:: Use instead

.. code-block:: python

    array = model(x).detach().cpu().numpy()
"""

from __future__ import annotations

from torch_pitfalls.rules import Error, _rule

RULE = _rule(
    "TP007",
    "note",
    "tensor-to-numpy",
    "NumPy conversion of a tensor that requires grad",
    "把需要梯度的张量转换为 NumPy 数组",
    "a tensor that requires grad must leave the autograd graph first: use "
    "tensor.detach().cpu().numpy()",
    "需要梯度的张量必须先脱离计算图：应使用 tensor.detach().cpu().numpy()",
    on=(Error("torch.Tensor.numpy"), Error("torch.Tensor.__array__")),
)
