"""
.. _ddp-no-sync-accumulation:

Gradient accumulation under DDP: ``no_sync()`` and where the sync happens
=========================================================================

Gradient accumulation that worked on one GPU is moved to several with
:class:`~torch.nn.parallel.DistributedDataParallel` (DDP), and the step time grows with the number
of micro-batches, as if the accumulation saved nothing: DDP averages the gradients across ranks
in *every* ``backward``, not once per optimizer step.
The usual fix, ``model.no_sync()``, has its own trap: with the condition off by one, or the forward
pass outside the context, the ranks either still communicate every time or step with gradients
that were never averaged, and their weights drift apart without an error.

.. admonition:: What you will learn

   * DDP all-reduces the gradients in each ``backward``: ``k`` micro-batches cost ``k``
     all-reduces, counted here with a communication hook;
   * inside ``model.no_sync()`` the gradients accumulate locally, and the next ``backward``
     outside it averages everything accumulated so far;
   * the fix: ``no_sync()`` around the forward *and* backward of every micro-batch but the last
     of each optimizer step;
   * what the wrong conditions do: a sync on the first micro-batch, no sync at all, a forward
     outside the context.

.. admonition:: Prerequisites

   :ref:`gradient-accumulation` (accumulating on one device, and dividing the loss);
   :ref:`ddp-unused-parameters` (how DDP averages gradients during ``backward``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.run_ranks`.
"""

# %%
# The setup
# ---------
#
# Two ranks of a gloo process group on this CPU (:func:`~torch_pitfalls.run_ranks` starts them and
# leaves nothing running), CPU tensors whatever the page's device.
# The model is a single weight, started at zero, so that every gradient can be read exactly:
# the loss of a micro-batch with input ``x`` is ``w * x / ACCUM``, whose gradient is ``x / ACCUM``.
# Rank ``r`` gets the inputs ``10 r + 1, …, 10 r + 4``: 1 to 4 on rank 0, 11 to 14 on rank 1.
#
# DDP lets a *communication hook* replace the all-reduce of each bucket of gradients
# (:meth:`~torch.nn.parallel.DistributedDataParallel.register_comm_hook`); the hook below counts
# its calls and then does the default all-reduce.
# The model has one bucket, so the count is the number of all-reduces.
import contextlib

import torch
import torch._dynamo  # noqa: F401 -- DDP imports it on first use: once here, not in each rank
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import get_device, run_ranks

device = get_device()
print(f"device: {device}")

ACCUM = 4  # micro-batches per optimizer step


def accumulate(rank, sync_on, forward_outside=False):
    """One optimizer step's worth of micro-batches; sync_on(i) says whether micro-batch i syncs.

    Returns the number of all-reduces and the accumulated gradient of the weight."""
    model = DDP(nn.Linear(1, 1, bias=False))
    with torch.no_grad():
        model.module.weight.zero_()
    calls = []

    def counting_allreduce(state, bucket):
        calls.append(bucket.index())
        return allreduce_hook(state, bucket)

    model.register_comm_hook(None, counting_allreduce)
    for i in range(ACCUM):
        x = torch.full((1, 1), 10.0 * rank + i + 1)
        context = contextlib.nullcontext() if sync_on(i) else model.no_sync()
        if forward_outside:
            loss = model(x).sum() / ACCUM
            with context:
                loss.backward()
        else:
            with context:
                loss = model(x).sum() / ACCUM
                loss.backward()
    return len(calls), model.module.weight.grad.item()


def experiments(rank, world_size):
    last = ACCUM - 1
    return {
        "no no_sync()": accumulate(rank, lambda i: True),
        "no_sync() but on the last": accumulate(rank, lambda i: i == last),
        "no_sync() but on the first": accumulate(rank, lambda i: i == 0),
        "no_sync() on all": accumulate(rank, lambda i: False),
        "forward outside no_sync()": accumulate(rank, lambda i: i == last, forward_outside=True),
    }


results = run_ranks(experiments)


def show(name):
    (calls, grad_0), (calls_1, grad_1) = results[0][name], results[1][name]
    assert calls == calls_1  # every rank takes part in each all-reduce
    print(f"{name:27} all-reduces: {calls} | gradient on rank 0: {grad_0}, on rank 1: {grad_1}")
    return calls, grad_0, grad_1


# The average over both ranks of the sum over the micro-batches of x / ACCUM:
expected = (sum(range(1, 5)) + sum(range(11, 15))) / ACCUM / 2
print("the gradient of one optimizer step over all 8 micro-batches:", expected)
assert expected == 7.5

# %%
# The symptom
# -----------
#
# The loop of :ref:`gradient-accumulation`, unchanged under DDP: four micro-batches, one
# ``backward`` each, one optimizer step at the end.

calls, grad_0, grad_1 = show("no no_sync()")
assert (calls, grad_0, grad_1) == (ACCUM, expected, expected)

# %%
# **The gradient is right, but it took one all-reduce per micro-batch: four times the
# communication that the step needs.**
# Averaging is linear, so averaging each micro-batch's gradient and adding them up gives the same
# result as averaging their sum once; the three extra all-reduces only cost time.
# With a large model the all-reduce of its gradients is a large part of a step's time, and each
# optimizer step over ``k`` micro-batches pays it ``k`` times.
#
# Why
# ---
#
# DDP registers a hook on every parameter, and as soon as a bucket's gradients are ready in a
# ``backward`` it all-reduces them, overlapping the communication with the rest of the backward
# pass.
# **DDP does not know that an optimizer step is not coming: each backward averages the gradients
# accumulated in .grad so far.**
# :meth:`~torch.nn.parallel.DistributedDataParallel.no_sync` turns this off: inside the context,
# ``backward`` accumulates the gradients locally in ``.grad``; the first ``backward`` outside it
# all-reduces the whole accumulated ``.grad``.
# Whether a ``backward`` communicates is decided in the ``forward`` that built its graph (DDP
# prepares its reducer for the backward pass there), which is why the documentation of
# ``no_sync`` asks for the forward pass inside the context too.
#
# The fix
# -------
#
# **Run the forward and backward of every micro-batch but the last of each optimizer step inside
# model.no_sync(); the last one, outside it, averages the accumulated gradients once.**

calls, grad_0, grad_1 = show("no_sync() but on the last")
assert (calls, grad_0, grad_1) == (1, expected, expected)

# %%
# The same gradient on both ranks, with one all-reduce.
# In a training loop, with ``micro_step`` counting the micro-batches from 0:
#
# .. code-block:: python
#
#    last = (micro_step + 1) % ACCUM == 0
#    with contextlib.nullcontext() if last else model.no_sync():
#        loss = loss_fn(model(inputs), targets) / ACCUM
#        loss.backward()
#    if last:
#        optimizer.step()
#        optimizer.zero_grad()
#
# A wrong condition: ranks that step on their own gradients
# ---------------------------------------------------------
#
# The condition decides *which* ``backward`` averages, and only the last one of the step averages
# everything.
# With the sync on the first micro-batch (``micro_step % ACCUM == 0``, a common slip), the first
# gradient is averaged and the three accumulated after it are not:

calls, grad_0, grad_1 = show("no_sync() but on the first")
first_averaged = (1 + 11) / ACCUM / 2
assert calls == 1
assert grad_0 == first_averaged + (2 + 3 + 4) / ACCUM
assert grad_1 == first_averaged + (12 + 13 + 14) / ACCUM

# %%
# **One all-reduce, as in the fix, and no error, but each rank now holds a different gradient:
# the average of the first micro-batch plus its own three others.**
# Each rank's optimizer applies its own gradient, the replicas stop being identical, and they
# drift further apart at every step; the checkpoint saved by rank 0 is a model trained on
# rank 0's data, mostly.
# ``no_sync()`` around the whole loop, or a condition that is never true, averages nothing:

calls, grad_0, grad_1 = show("no_sync() on all")
assert (calls, grad_0, grad_1) == (0, sum(range(1, 5)) / ACCUM, sum(range(11, 15)) / ACCUM)

# %%
# The forward pass outside ``no_sync()``
# --------------------------------------
#
# Putting only ``loss.backward()`` in the context looks like the natural place, since the
# gradients are what should not be averaged; but DDP decides at the ``forward`` whether the
# coming backward synchronises:

calls, grad_0, grad_1 = show("forward outside no_sync()")
assert (calls, grad_0, grad_1) == (ACCUM, expected, expected)

# %%
# **With the forward outside the context, every backward still all-reduces: the code looks like
# the fix and costs as much as the symptom.**
# The gradient is right, so only the step time (or a count like the one above) shows it.
#
# Real-world reports: the first micro-batch synchronised, the forward left outside
# --------------------------------------------------------------------------------
#
# A speech-recognition toolkit chose the ``no_sync()`` context with ``batch_idx % accum_grad``:
# true on the first micro-batch of each step, so that one synchronised and the micro-batch before
# the optimizer step did not.
# The fix changed it to ``(batch_idx + 1) % accum_grad``; the reviewer confirmed it with a
# two-rank gloo reproduction in which the ranks' accumulated gradients differed before the fix
# and agreed after it, as they do above
# (`modelscope/FunASR pull request 3472 <https://github.com/modelscope/FunASR/pull/3472>`_).
# In another training library, ``no_sync`` had first been added around ``backward`` only; when
# its training step was refactored, a reviewer pointed out that forward and backward must be in
# the same ``no_sync`` block, and the new code wraps the forward pass too
# (`speechbrain pull request 2010 <https://github.com/speechbrain/speechbrain/pull/2010>`_).
# The cost itself was the subject of a 2020 feature request to PyTorch: with accumulation over
# ``K`` micro-batches, ``K - 1`` all-reduces per step are wasted
# (`PyTorch issue 43201 <https://github.com/pytorch/pytorch/issues/43201>`_).
#
# Takeaway
# --------
#
# **Under DDP every backward averages the gradients across ranks: wrap the forward and backward of
# all micro-batches but the last of each optimizer step in model.no_sync().**
# Check the condition on the *last* micro-batch, not the first, and count the all-reduces with a
# communication hook once: one per bucket and per optimizer step.
