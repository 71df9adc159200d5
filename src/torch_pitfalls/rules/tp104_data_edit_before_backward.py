"""``TP104``: an edit through ``.data`` before the backward (opt-in).

.. rubric:: What it does

An edit through ``.data`` while a graph that may have saved the tensor is alive: between a forward
and its backward, in one function (or the module's own code), read in source order. An edit is an
in-place method (name ending in one ``_``) called on ``x.data``, an item assignment ``x.data[i] =
...``, an augmented assignment ``x.data += ...``, a replacement ``x.data = ...``, or the same on a
name assigned from ``x.data`` (``c = out.data; c.zero_()``). It is reported when a ``.backward()``
(or ``torch.autograd.backward(t)``) follows it in the same function whose tensor is rooted in a
name (``loss`` in ``loss.backward()``, ``out`` in ``out.sum().backward()``) that is either assigned
before the edit and not again before the backward, or computed after the edit from ``x`` itself,
when ``x`` is a plain name computed by a call before the edit (``dist = model(s).gather(...);
dist.data.clamp_(...); loss = -(t * dist.log()).sum(); loss.backward()``), through any number of
assignments. Not reported: edits with no such backward after them (initialisation of any name,
``fuse()`` / ``reparameterize()`` copying into a module built a line earlier, functions passed to
``model.apply``, updates after the backward such as hand-written SGD, soft updates of target
networks or WGAN clipping), edits of a module's tensors before a forward
(``net[0].weight.data.normal_()`` then a training loop), of a tensor from a factory
(``torch.zeros``), on ``self.data`` / ``cls.data`` (a class's own attribute, not a tensor's) or
``x.grad.data`` (a gradient is not saved for backward); a backward in another function, a loop's
next iteration, or a loss computed from the edited tensor through a call of another function. A
backward called through another object, ``fabric.backward(loss)`` (Lightning Fabric),
``accelerator``, ``engine`` / ``model_engine`` (DeepSpeed), ``booster`` (ColossalAI), ``strategy``
or ``precision_plugin`` (Lightning) and ``self.manual_backward(loss)``, is the backward of its
argument. Reported at the edit. Reading through ``.data`` is not reported. Opt-in: on the public
codebases the rules are measured on (``nox -s survey``) it finds too little to measure its
false-alarm rate.

.. rubric:: Why is this bad?

An edit through ``.data`` is invisible to autograd: a tensor the graph saved is changed behind
its back, and the backward computes a wrong gradient without any error.

.. rubric:: Example

.. code-block:: python

    import torch

    loss = (w * x).sum()
    w.data.mul_(0.5)
    loss.backward()

.. rubric:: Use instead

.. code-block:: python

    import torch

    loss = (w * x).sum()
    loss.backward()
    with torch.no_grad():
        w.mul_(0.5)
"""

from __future__ import annotations

from collections.abc import Iterator

from torch_pitfalls.lint.analyses.data_edits import data_edit_findings
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP104",
    "lint",
    "data-vs-detach",
    "edit through .data before the backward",
    "在反向传播之前经由 .data 修改张量",
    "an in-place edit through .data between a forward and its backward is invisible to "
    "autograd, so the gradient is computed from the changed values: edit a copy made with "
    "detach().clone(), or edit the tensor itself under torch.no_grad() once the backward "
    "has run",
    "在前向与其反向传播之间经由 .data 的原地修改对自动求导不可见，梯度会按修改后的值计算："
    "应修改 detach().clone() 得到的副本，或在反向传播之后于 torch.no_grad() 下直接修改张量本身",
    default=False,
)


def check(context: Context) -> Iterator[tuple[int, int]]:
    """``(line, column from 0)`` of each finding of ``TP104`` in the module."""
    for line, col, rule_id in data_edit_findings(context):
        if rule_id == RULE.id:
            yield line, col
