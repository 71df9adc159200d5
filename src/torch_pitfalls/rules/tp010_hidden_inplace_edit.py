"""``TP010``: in-place edit behind autograd's back.

.. rubric:: What it does

Opt-in (``enable=["TP010"]``). Packs every tensor saved for backward with a copy of it
(``torch.autograd.graph.saved_tensors_hooks``) and warns, at the backward call, when the saved
tensor's values changed while its version did not: an edit through ``.data`` or a NumPy view,
which autograd cannot see. Buffers of the modules (BatchNorm's running statistics) are skipped.
Since the hooks switch autograd's own version check off, the guard makes the same check and
raises autograd's error itself. It doubles the memory of saved tensors.

.. rubric:: Why is this bad?

The backward then computes the gradient from the changed values: a wrong gradient, silently.

.. rubric:: Example

.. code-block:: python

    y = x.sigmoid()
    y.data.mul_(2)
    y.sum().backward()

.. rubric:: Use instead

.. code-block:: python

    y = x.sigmoid()
    z = y.detach().clone().mul_(2)  # or, on y itself, under torch.no_grad()
    y.sum().backward()
"""

from __future__ import annotations

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP010",
    "guard",
    "data-vs-detach",
    "in-place edit behind autograd's back",
    "绕过自动求导的原地修改",
    "a tensor saved for backward was changed through .data or a NumPy view, which autograd "
    "cannot see, so the gradient is computed from the changed values: edit a copy made with "
    "detach().clone(), or do it under torch.no_grad() on the tensor itself",
    "为反向传播保存的张量经由 .data 或 NumPy 视图被修改，自动求导无从察觉，"
    "梯度会按修改后的值计算：应修改 detach().clone() 得到的副本，"
    "或在 torch.no_grad() 下直接修改张量本身",
    default=False,
    on=("forward", "saved tensors"),
)


def start(guards) -> None:
    """On entering: the buffers of the watched modules are not saved tensors to compare."""
    guards.buffers = {b.data_ptr() for root in guards.modules for b in root.buffers()}


def forward(guards, module) -> None:
    """Before each module's forward: its buffers are not saved tensors to compare."""
    with guards.reading():
        guards.buffers.update(b.data_ptr() for b in module.buffers(recurse=False))


def pack(guards, tensor):
    """A tensor saved for backward: kept with its version and a copy."""
    import torch

    unusual = tensor.layout != torch.strided or tensor.device.type == "meta"
    if unusual or tensor.data_ptr() in guards.buffers:  # buffers: BatchNorm's running stats
        return (tensor, None, None)
    return (tensor, tensor._version, tensor.detach().clone())


def unpack(guards, packed):
    """A saved tensor used by a backward: changed since, behind autograd's back?"""
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
        guards.add_note(error)
        raise error
    same = tensor == copy
    if tensor.is_floating_point() or tensor.is_complex():
        same |= tensor.isnan() & copy.isnan()
    if not bool(same.all()):
        guards.flag(RULE.id, guards.backward_place)
    return tensor
