"""``TP006``: unbatched image passed to interpolate.

.. rubric:: What it does

Warns when :func:`torch.nn.functional.interpolate` receives a 3-D tensor shaped like one image
``(C, H, W)`` (``C`` of 1, 3 or 4, ``H`` larger) with a mode other than ``linear``; and when
PyTorch refuses such an input (a 2-D ``size`` or a 2-D-only mode), its error gets this rule's
message as a note (other errors of ``interpolate`` in the registry get the generic note).

.. rubric:: Why is this bad?

``interpolate`` reads a 3-D input as ``(N, C, L)``: it resizes only the last dimension, the
image's width, and treats its rows as channels; the result has the wrong shape or content.

.. rubric:: Example

.. code-block:: python

    image = torch.rand(3, 32, 32)
    bigger = F.interpolate(image, scale_factor=2)

.. rubric:: Use instead

.. code-block:: python

    image = torch.rand(3, 32, 32)
    bigger = F.interpolate(image.unsqueeze(0), scale_factor=2).squeeze(0)
"""

from __future__ import annotations

from torch_pitfalls.rules import Call, Error, _rule

RULE = _rule(
    "TP006",
    "guard",
    "interpolate-batch-dim",
    "unbatched image passed to interpolate",
    "把不带批次维度的图像传给 interpolate",
    "F.interpolate received a 3-D tensor shaped like an image (C, H, W); it reads 3-D input "
    "as (N, C, L) and resizes only the last dimension: add a batch dimension with "
    "unsqueeze(0)",
    "F.interpolate 收到一个形如图像 (C, H, W) 的 3 维张量；它把 3 维输入当作 (N, C, L)，"
    "只缩放最后一维：应先用 unsqueeze(0) 加上批次维度",
    on=(Call("torch.nn.functional.interpolate"), Error("torch.nn.functional.interpolate")),
)


_IMAGE_CHANNELS = (1, 3, 4)


def check(guards, func, args, kwargs) -> None:
    """Before a call of ``interpolate``: a 3-D input shaped like an image?"""
    import torch

    arguments = guards.bind(func, args, kwargs)
    image = arguments["input"]
    if (
        isinstance(image, torch.Tensor)
        and image.dim() == 3
        and arguments["mode"] != "linear"
        and image.shape[0] in _IMAGE_CHANNELS
        and image.shape[1] > max(_IMAGE_CHANNELS)
    ):
        guards.flag(RULE.id)


def claims(error, func, args, kwargs) -> bool:
    """Whether an error of ``interpolate`` is PyTorch's refusal of a 3-D input with a 2-D size or
    a 2-D-only mode (what this rule explains); other inputs get the generic note."""
    import torch

    image = args[0] if args else (kwargs or {}).get("input")
    if not isinstance(image, torch.Tensor) or image.dim() != 3:
        return False
    text = str(error)
    return "Got 3D input, but" in text or "spatial dimensions of [" in text
