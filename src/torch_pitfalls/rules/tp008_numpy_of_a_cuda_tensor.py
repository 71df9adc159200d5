"""``TP008``: NumPy conversion of a CUDA tensor.

.. rubric:: What it does

Adds a note (PEP 678) to PyTorch's error when ``tensor.numpy()`` (or ``np.asarray(tensor)``) is
called on a CUDA tensor: the registry of PyTorch's messages (:mod:`torch_pitfalls.messages`)
names this rule for that error. It can only fire where CUDA is available.

.. rubric:: Why is this bad?

A NumPy array lives in CPU memory: the tensor has to be copied to the CPU first.

.. rubric:: Example

.. code-block:: python

    array = torch.ones(3, device="cuda").numpy()

.. rubric:: Use instead

.. code-block:: python

    array = torch.ones(3, device="cuda").cpu().numpy()
"""

from __future__ import annotations

from torch_pitfalls.rules import Error, _rule

RULE = _rule(
    "TP008",
    "note",
    "tensor-to-numpy",
    "NumPy conversion of a CUDA tensor",
    "把 CUDA 张量转换为 NumPy 数组",
    "NumPy arrays live in CPU memory: copy the tensor first with tensor.cpu() (and "
    "detach() it if it requires grad)",
    "NumPy 数组位于 CPU 内存中：应先用 tensor.cpu() 把张量复制到 CPU"
    "（若它需要梯度，还要 detach()）",
    on=(Error("torch.Tensor.numpy"), Error("torch.Tensor.__array__")),
)
