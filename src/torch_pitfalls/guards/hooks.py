"""The event sources of the guards, and the state the rules share.

* module forwards: global forward hooks (``register_module_forward_pre_hook``) keep the stack of
  running modules and the user's line that called the top-level one (``root_place``), and call
  the rules' ``forward``; every module call pays two Python calls;
* optimizer steps: global step hooks call the rules' ``step`` and ``after_step`` for a watched
  optimizer (a loop over its parameters for the rules that read gradients);
* backward calls (``Tensor.backward``, ``torch.autograd.backward``, taken as checked functions)
  set ``backward_place`` and call the rules' ``before_backward`` and ``after_backward``: the
  gradients are read around each backward in the thread of the guards, not by hooks on each
  parameter, which would cost Python calls for every parameter in every backward;
* evaluation forwards: a top-level forward of a module in eval mode, with gradients enabled,
  whose output has a graph, is recorded with a pre-hook on the output's ``grad_fn`` nodes (it
  runs when a backward, or ``torch.autograd.grad``, reaches the output, or an input that
  requires grad); at the next optimizer step (of any optimizer) and on leaving the guards, the
  records are settled: the rules' ``settled`` read them (:class:`EvalForward`).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass

import torch
import torch.utils._pytree
from torch import nn

from torch_pitfalls.guards._common import (
    _STATE,
    _is_compiling,
    _quiet,
    _unserializable,
    _user_place,
)

_MAX_EVAL_FORWARDS = 1000  # eval-mode forwards recorded before settling without a step
_BATCH_NORMS = (nn.modules.batchnorm._BatchNorm,)
_DROPOUT_MODULES = (nn.modules.dropout._DropoutNd,)


@dataclass
class EvalForward:
    """A top-level forward of a module in eval mode under grad mode, as the rules settle it.

    Attributes:
        root: a weak reference to the module.
        place: the user's line that called it.
        used: ``[True]`` once a backward reached its graph.
        switched_off: the module holds a Dropout (``p > 0``) or a BatchNorm with running
            statistics that ``eval()`` switched off.
        handles: the graph hooks, removed on settling.
    """

    root: weakref.ref
    place: object
    used: list
    switched_off: bool
    handles: list


class Hooks:
    """The part of :class:`~torch_pitfalls.guards.Guards` that turns PyTorch's hooks into events."""

    def watches(self, module: nn.Module) -> bool:
        """Whether module rules look at ``module`` (every module when none is watched)."""
        return not self._module_ids or id(module) in self._module_ids

    def watches_optimizer(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether optimizer rules look at ``optimizer`` (every one when none is watched)."""
        return not self.optimizers or any(optimizer is o for o in self.optimizers)

    # -- modules --------------------------------------------------------------------------------

    def _forward_pre_hook(self, module: nn.Module, args) -> None:
        if _is_compiling():
            return  # inside torch.compile the module checks are off (Dynamo traces the hooks)
        if not self.running:  # a top-level call: where the user's code runs the model
            self.root_place = _user_place()
        self.running.append(module)
        for forward in self._on_forward:
            forward(self, module)

    def _forward_hook(self, module: nn.Module, args, output) -> None:
        # always_call=True: also runs when forward raises, so the stack stays balanced
        if _is_compiling():
            return
        if self.running and self.running[-1] is module:
            self.running.pop()
            if not self.running and not module.training and torch.is_grad_enabled():
                self._eval_forward(module, args, output)

    # -- optimizer steps ------------------------------------------------------------------------

    @_quiet
    def _step_pre_hook(self, optimizer: torch.optim.Optimizer, args, kwargs) -> None:
        self._settle_eval_forwards(optimizer)
        if not self.watches_optimizer(optimizer):
            return
        for step in self._on_step:
            step(self, optimizer, args, kwargs)

    @_quiet
    def _step_post_hook(self, optimizer: torch.optim.Optimizer, args, kwargs) -> None:
        if not self.watches_optimizer(optimizer):
            return
        for after_step in self._on_after_step:
            after_step(self, optimizer)

    # -- backward calls -------------------------------------------------------------------------

    def _call_backward(self, func, args, kwargs):
        self.backward_place = _user_place()
        tokens = []
        for before, after in self._on_backward:
            _STATE.quiet += 1
            try:
                tokens.append((after, before(self)))
            except Exception:  # a read that fails must not break the user's backward
                pass
            finally:
                _STATE.quiet -= 1
        try:
            return func(*args, **kwargs)
        finally:
            for after, token in tokens:
                _STATE.quiet += 1
                try:
                    with contextlib.suppress(Exception):
                        after(self, token)
                finally:
                    _STATE.quiet -= 1
            self.backward_place = None

    # -- eval-mode forwards under grad mode -----------------------------------------------------

    def _eval_forward(self, root: nn.Module, inputs, output) -> None:
        if not self._on_settled or not self.watches(root):
            return
        _STATE.quiet += 1
        try:
            nodes = {}
            for leaf in torch.utils._pytree.tree_leaves(output):
                if isinstance(leaf, torch.Tensor) and leaf.grad_fn is not None:
                    nodes.setdefault(id(leaf.grad_fn), leaf.grad_fn)
            if not nodes:
                return
            used = [False]

            def mark(grad_outputs):
                used[0] = True

            handles = [node.register_prehook(mark) for node in nodes.values()]
            # a backward that reaches an input used the graph too, through an intermediate
            # result (a forward hook's activation, as DeepDream optimises an image on)
            for leaf in torch.utils._pytree.tree_leaves(inputs):
                if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                    if leaf.grad_fn is not None:
                        handles.append(leaf.grad_fn.register_prehook(mark))
                    else:
                        handles.append(leaf.register_hook(_unserializable(mark)))
            switched_off = any(
                not m.training
                and (
                    (isinstance(m, _DROPOUT_MODULES) and m.p > 0)
                    or (isinstance(m, _BATCH_NORMS) and m.track_running_stats)
                )
                for m in root.modules()
            )
            self._eval_forwards.append(
                EvalForward(weakref.ref(root), self.root_place, used, switched_off, handles)
            )
        finally:
            _STATE.quiet -= 1
        if len(self._eval_forwards) > _MAX_EVAL_FORWARDS:  # no step for a long time: inference
            self._settle_eval_forwards(None)

    def _settle_eval_forwards(self, optimizer: torch.optim.Optimizer | None) -> None:
        records, self._eval_forwards = self._eval_forwards, []
        if not records:
            return
        for record in records:
            for handle in record.handles:
                handle.remove()
        for settled in self._on_settled:
            settled(self, records, optimizer)
