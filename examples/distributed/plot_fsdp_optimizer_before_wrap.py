"""
.. _fsdp-optimizer-before-wrap:

The optimizer built before FSDP shards the model: ``step()`` moves nothing
==========================================================================

A model trains on one GPU; sharded with FSDP, its loss stays at its first value, step after step,
with no error.
The optimizer was built from ``model.parameters()`` before the model was sharded, as in the
single-GPU script.
Sharding replaced every parameter with a new one that holds this rank's shard: the backward pass
fills the gradients of the new parameters, and the optimizer steps the old ones, which no longer
belong to the model and have no gradient.

.. admonition:: What you will learn

   * ``fully_shard`` registers new parameters (``DTensor`` shards) in place of the module's
     parameters;
   * an optimizer built before holds the old, full-size parameters: no gradient, no update, and
     their memory is not freed;
   * the fix: shard first, then build the optimizer from the sharded model's parameters.

.. admonition:: Prerequisites

   :ref:`params-not-in-optimizer` (an optimizer steps only the tensors it was given);
   :ref:`ddp-unused-parameters` for data parallelism without sharding.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.run_ranks`.
"""

# %%
# Two ranks, on the CPU
# ---------------------
#
# ``fully_shard`` (FSDP2) is public as ``torch.distributed.fsdp.fully_shard`` since PyTorch 2.6;
# 2.4 and 2.5 have it as ``torch.distributed._composable.fsdp.fully_shard``.
# It runs here on two ranks of a gloo process group on the CPU (:func:`~torch_pitfalls.run_ranks`
# starts them and leaves nothing running), with CPU tensors whatever the page's device: on a
# machine with a GPU, ``fully_shard`` would move the model to the GPU (its default mesh is on the
# machine's accelerator), so the ranks give it a mesh of CPU devices,
# ``init_device_mesh("cpu", (world_size,))``.
# A release whose ``fully_shard`` cannot shard a CPU model (2.4 to 2.6: see "Changed in PyTorch
# 2.7" below) says so below instead of showing the experiment.
import re

import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh

from torch_pitfalls import get_device, run_ranks

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:  # PyTorch 2.4 and 2.5
    from torch.distributed._composable.fsdp import fully_shard

device = get_device()
print(f"device: {device}")
VERSION = tuple(int(part) for part in torch.__version__.split(".")[:2])


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))


def one_step(model, optimizer, rank):
    """A forward, backward and step on this rank's batch; whether each parameter moved."""
    before = [p.full_tensor().clone() for p in model.parameters()]  # the whole parameter
    model(torch.full((2, 4), float(rank + 1))).sum().backward()
    optimizer.step()
    after = [p.full_tensor() for p in model.parameters()]
    return [not torch.equal(a, b) for a, b in zip(after, before, strict=True)]


def optimizer_before_and_after(rank, world_size):
    mesh = init_device_mesh("cpu", (world_size,))  # CPU tensors, on a machine with a GPU too
    # the mistake: the optimizer first, then fully_shard
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    old = list(model.parameters())
    fully_shard(model, mesh=mesh)
    new = list(model.parameters())
    found = {
        "moved, optimizer built before": one_step(model, optimizer, rank),
        "same objects": [a is b for a, b in zip(old, new, strict=True)],
        "class": [type(p.data).__name__ for p in new],
        "full shapes": [tuple(p.shape) for p in new],
        "local shapes": [tuple(p.to_local().shape) for p in new],
        "old grads are None": [p.grad is None for p in old],
        "new grads are None": [p.grad is None for p in new],
        "numel held by the optimizer": sum(p.numel() for p in old),
        "numel of this rank's shards": sum(p.to_local().numel() for p in new),
    }
    # the fix: fully_shard first, then the optimizer
    model = make_model()
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    found["moved, optimizer built after"] = one_step(model, optimizer, rank)
    found["weights after"] = [p.full_tensor().tolist() for p in model.parameters()]
    return found


try:
    ranks = run_ranks(optimizer_before_and_after, timeout=60)
except (RuntimeError, TimeoutError) as error:  # fully_shard cannot shard a CPU model
    assert VERSION < (2, 7), error  # 2.7 and later: the experiment must run
    # 2.6 gets as far as the first forward, whose all-gather records an event on a CPU stream
    assert VERSION < (2, 6) or "'Stream' object has no attribute 'record_event'" in str(error)
    ranks = None
    print(f"PyTorch {torch.__version__}: fully_shard did not run on the CPU here:")
    raised = re.findall(r"^\w+(?:Error|Exception): .*$", str(error), re.M)  # the rank's exception
    print(raised[-1] if raised else str(error).strip().splitlines()[-1])
live = ranks is not None
print("the experiment ran on this release:", live)

# %%
# The symptom
# -----------
#
# The optimizer is built from ``model.parameters()``, then the model is sharded with
# ``fully_shard``; one training step, and a check of which of the four parameters (two weights,
# two biases) changed:

if live:
    moved = [found["moved, optimizer built before"] for found in ranks]
    print("parameters moved by the step, rank 0:", moved[0], "rank 1:", moved[1])
    assert moved == [[False] * 4, [False] * 4]

# %%
# **The step ran without an error and changed nothing, on both ranks.**
# In a training loop the loss stays where it started, and nothing in the output says why.
#
# Why
# ---
#
# ``fully_shard`` splits each parameter along its first dimension across the ranks and registers,
# in place of each of the module's parameters, a **new** :class:`torch.nn.Parameter` whose data is
# a ``DTensor``: the whole tensor as seen by every rank, of which each rank stores its own shard.

if live:
    found = ranks[0]
    print("the same objects as before fully_shard:", found["same objects"])
    print("class of their data:", found["class"])
    print("full shapes:", found["full shapes"])
    for rank, other in enumerate(ranks):
        print(f"shapes stored on rank {rank}:", other["local shapes"])
    assert found["same objects"] == [False] * 4 and found["class"] == ["DTensor"] * 4
    assert found["full shapes"] == [(4, 4), (4,), (1, 4), (1,)]
    assert [other["local shapes"] for other in ranks] == [
        [(2, 4), (2,), (1, 4), (1,)],
        [(2, 4), (2,), (0, 4), (0,)],
    ]

# %%
# The first layer's 4 rows are split 2 and 2; the last layer's single row goes to rank 0, and
# rank 1 stores an empty shard of it.
# **The optimizer holds references to the old parameters, which the model no longer uses: the
# backward pass gives gradients to the new ones, and the old ones have none, so SGD skips
# them.**

if live:
    print("gradients of the optimizer's parameters are None:", found["old grads are None"])
    print("gradients of the model's parameters are None:    ", found["new grads are None"])
    assert found["old grads are None"] == [True] * 4 and found["new grads are None"] == [False] * 4

# %%
# An optimizer skips a parameter whose gradient is ``None`` without a warning, as on
# :ref:`params-not-in-optimizer`.
# The old parameters also stay in memory as long as the optimizer refers to them: each rank keeps
# the whole model there, the memory that sharding was meant to save.

if live:
    for rank, other in enumerate(ranks):
        held, shard = other["numel held by the optimizer"], other["numel of this rank's shards"]
        print(f"rank {rank}: the optimizer keeps {held} numbers alive, its shards hold {shard}")
    assert [other["numel held by the optimizer"] for other in ranks] == [25, 25]
    assert [other["numel of this rank's shards"] for other in ranks] == [15, 10]

# %%
# The fix
# -------
#
# **Shard the model first, then build the optimizer from the sharded model's parameters:
# fully_shard(model); optimizer = torch.optim.AdamW(model.parameters(), …).**
# The optimizer then steps the shards that the backward pass fills.

if live:
    moved = [found["moved, optimizer built after"] for found in ranks]
    print("parameters moved by the step, rank 0:", moved[0], "rank 1:", moved[1])
    same = ranks[0]["weights after"] == ranks[1]["weights after"]
    print("both ranks see the same updated parameters:", same)
    assert moved == [[True] * 4, [True] * 4] and same

# %%
# The same order holds for the older wrapper, ``FullyShardedDataParallel`` (FSDP1), which by
# default replaces the parameters of each wrapped module with one flattened parameter: wrap, then
# build the optimizer from the wrapped model.
#
# Changed in PyTorch 2.7: fully_shard shards a model on the CPU
# -------------------------------------------------------------
#
# ``fully_shard`` moves data between its own streams (all-gather, reduce-scatter), and before
# PyTorch 2.7 it could not use the CPU's.
# 2.4's ``fully_shard`` asked CUDA for them (on a machine without a GPU, CUDA's error); 2.5 checks
# first and raises "FSDP requires CUDA for streams".
# 2.6 takes the streams of the parameters' device
# (`pull request #136843 <https://github.com/pytorch/pytorch/pull/136843>`_, "based on device, use
# stream and Event"), but a CPU stream has no ``record_event``, and the first forward raises
# ``AttributeError: 'Stream' object has no attribute 'record_event'``.
# 2.7's CPU streams record and wait for events as no-ops
# (`pull request #145935 <https://github.com/pytorch/pytorch/pull/145935>`_, "Add noop for CPU
# stream record_event() and wait_event()"), and the experiment above runs on two CPU processes.
# **To try FSDP2 on a laptop or in CPU-only CI, use PyTorch 2.7 or later; on older releases these
# errors say nothing about the optimizer.**

print("fully_shard ran on the CPU:", live)
assert live == (VERSION >= (2, 7))

# %%
# A real-world report: an FSDP nanoGPT whose loss did not go down
# ----------------------------------------------------------------
#
# A user of a distributed-training toolkit ran its nanoGPT example with FSDP and saw the loss
# hover around its initial value instead of going down, and suspected that the parameters were
# not being updated (`dlrover issue 584
# <https://github.com/intelligent-machine-learning/dlrover/issues/584>`_); the fix moved the
# creation of the optimizer after the FSDP wrapping (`dlrover pull request 585
# <https://github.com/intelligent-machine-learning/dlrover/pull/585>`_).
# The same trap was diagnosed in a Hugging Face Accelerate training script: the optimizer was
# built before the model was wrapped, its ``step`` changed no parameter, and every gradient it
# saw was already ``None`` (`accelerate issue 3256
# <https://github.com/huggingface/accelerate/issues/3256>`_).
#
# Detectors
# ---------
#
# The static checker's opt-in rule ``TP119`` (``--enable TP119``, see :doc:`/detectors`) finds an
# optimizer built from ``model.parameters()`` before ``fully_shard(model)`` or ``FSDP(model)`` in
# the same scope and not built again before it is used. It is opt-in until it has findings on
# real code to measure.
#
# Takeaway
# --------
#
# **Sharding replaces the model's parameters: an optimizer built before fully_shard steps
# tensors that the model no longer uses, so nothing trains.**
# Build the optimizer after sharding, from ``model.parameters()`` of the sharded model; when a
# sharded model does not learn, check that ``optimizer.param_groups`` holds the model's current
# parameters (``any(p is q for q in model.parameters())``).
