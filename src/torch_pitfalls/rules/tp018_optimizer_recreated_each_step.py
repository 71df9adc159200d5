"""``TP018``: an optimizer made anew for every step, its state lost each time.

.. rubric:: What it does

Warns when the same parameters are stepped, again and again, by a new optimizer object that
keeps state (Adam's moments, SGD's momentum buffer: its ``state`` is not empty after a step),
each of which takes at most two steps: the third such optimizer in a row is reported, at the
line of its step. The guards watch optimizer steps (the global step post-hook): an optimizer's
parameters are read at its first step only. Not reported: an optimizer without state (SGD
without momentum), a new optimizer per epoch or per phase of training (each takes more steps),
or new optimizers for new parameters (a new model each time).

.. rubric:: Why is this bad?

A new optimizer starts with empty state: Adam's moment estimates and its bias correction, and
SGD's momentum, restart at every step. Adam's first step moves each weight by about the learning
rate, whatever its gradient; momentum never builds up. Training plateaus or oscillates.

.. rubric:: Example

.. code-block:: python

    for x, y in loader:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

.. rubric:: Use instead

.. code-block:: python

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
"""

from __future__ import annotations

import weakref

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP018",
    "guard",
    "optimizer-recreated-in-loop",
    "optimizer re-created every step",
    "每一步都重新创建优化器",
    "the same parameters were stepped by a new optimizer again and again, so its state (Adam's "
    "moments, SGD's momentum) starts empty at each step: create the optimizer once, before the "
    "training loop (change its learning rate through optimizer.param_groups)",
    "同一组参数一次又一次地由新建的优化器更新，它的状态（Adam 的矩估计、SGD 的动量）每一步都从"
    "空开始：应在训练循环之前只创建一次优化器（通过 optimizer.param_groups 修改学习率）",
    on=("after optimizer step",),
)

_SHORT = 2  # an optimizer that took at most this many steps is short-lived
_IN_A_ROW = 3  # short-lived optimizers of the same parameters in a row before a finding


def start(guards) -> None:
    # optimizer -> [its parameters' key, its steps]; weak keys: optimizers made in a loop go
    guards.optimizer_steps = weakref.WeakKeyDictionary()
    # parameters' key -> [the last optimizer's entry, how many in a row, ref to a parameter]
    guards.optimizers_of = {}


def stop(guards) -> None:
    guards.optimizer_steps = weakref.WeakKeyDictionary()
    guards.optimizers_of = {}


def after_step(guards, optimizer) -> None:
    """After a step of a watched optimizer: is it the latest of new optimizers, each stepped
    once or twice, of the same parameters?"""
    entry = guards.optimizer_steps.get(optimizer)
    if entry is not None:
        entry[1] += 1
        return
    if not optimizer.state:  # no state (yet): nothing to lose
        return
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not params:
        return
    key = frozenset(map(id, params))
    entry = [key, 1]
    guards.optimizer_steps[optimizer] = entry
    last = guards.optimizers_of.get(key)
    in_a_row = 1
    if last is not None and last[2]() is params[0]:  # the same parameters, not reused ids
        previous = last[0]
        in_a_row = last[1] + 1 if previous[1] <= _SHORT else 1
    guards.optimizers_of[key] = [entry, in_a_row, weakref.ref(params[0])]
    if in_a_row >= _IN_A_ROW:
        guards.flag(RULE.id)
