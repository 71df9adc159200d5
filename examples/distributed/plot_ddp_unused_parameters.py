"""
.. _ddp-unused-parameters:

A parameter unused in ``forward`` under DDP
===========================================

A model with a layer that its ``forward`` does not use trains without complaint on one device: the
unused layer simply gets no gradient.
Wrapped in :class:`~torch.nn.parallel.DistributedDataParallel` (DDP), the same model fails at the
start of its second iteration, with an error about a reduction that did not finish.
``find_unused_parameters=True`` makes the error go away, at a cost in every iteration, and it hides
that the layer is never trained.

.. admonition:: What you will learn

   * why DDP expects a gradient for every parameter that requires one, and why the error appears
     one iteration late;
   * how to read the message, and turn its parameter indices into names;
   * what ``find_unused_parameters=True`` and ``static_graph=True`` do, and what each costs;
   * the better fix when a parameter is not meant to be trained: freeze it or remove it before
     wrapping the model.

.. admonition:: Prerequisites

   :ref:`freezing-layers` (``requires_grad_(False)`` and what an optimizer does with a parameter
   that has no gradient); :ref:`sampler-set-epoch` for the data side of distributed training.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.expect_raises`,
:func:`~torch_pitfalls.seed_everything`.
"""

# %%
# A process group of one
# ----------------------
#
# DDP needs a process group.
# This page makes one with the gloo backend and a single process (``world_size=1``), whose
# rendezvous is a :class:`~torch.distributed.HashStore` in memory: no port, no network, no other
# process, so nothing depends on how processes are started.
# The group has a timeout, and ``dist.destroy_process_group()`` runs when each block ends, even
# when it fails, so that no group outlives its block.
# Every DDP call below runs inside one such block:
import contextlib
import datetime
import os
import re
import sys
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import expect_raises, get_device, seed_everything


@contextlib.contextmanager
def process_group_of_one():
    """A gloo process group with one process (rank 0), destroyed when the block ends."""
    if dist.is_initialized():
        raise RuntimeError("a default process group already exists in this process")
    dist.init_process_group(
        "gloo",
        store=dist.HashStore(),
        rank=0,
        world_size=1,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


seed_everything(0)
device = get_device()
print(f"device: {device}")
with process_group_of_one():
    print("backend:", dist.get_backend(), "| world size:", dist.get_world_size())
print("a process group is left after the block:", dist.is_initialized())
assert not dist.is_initialized()

# %%
# The symptom
# -----------
#
# A small model with a body and two heads: the main head, and an auxiliary head that an earlier
# phase of training used and this one does not (its ``forward`` never calls it).
# One device, no DDP: three training steps run, and the auxiliary head gets no gradient.


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)
        self.aux_head = nn.Linear(8, 1)  # not used by forward

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def train(model, steps=3):
    """``steps`` SGD steps on random data; returns the parameters' names and grads (None or not)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(16, 4, device=device)).pow(2).mean().backward()
        optimizer.step()


plain = TwoHeads().to(device)
train(plain)
no_grad = [name for name, p in plain.named_parameters() if p.grad is None]
print("three steps without DDP; parameters without a gradient:", no_grad)
assert no_grad == ["aux_head.weight", "aux_head.bias"]

# %%
# The same model under DDP: the first iteration runs, the second fails in ``forward``.

with process_group_of_one():
    model = DDP(TwoHeads().to(device))
    model(torch.randn(16, 4, device=device)).pow(2).mean().backward()
    print("iteration 1 ran")
    message = "Expected to have finished reduction in the prior iteration"
    with expect_raises(RuntimeError, message) as error:
        model(torch.randn(16, 4, device=device))

# %%
# **The error comes at the start of the next iteration, not in the backward pass that left a
# parameter without its gradient.**
# Near its end, a line lists the indices of the parameters that got no gradient, in the order of
# ``model.parameters()`` (counting only those that require a gradient); they name the auxiliary
# head:

indices = [int(i) for i in re.search(r"for rank 0: ([\d ]+)", error.message).group(1).split()]
names = [name for name, _ in model.module.named_parameters()]
unused = [names[i] for i in indices]
print("indices", indices, "are", unused)
assert unused == ["aux_head.weight", "aux_head.bias"]
assert "find_unused_parameters=True" in error.message
assert "TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL" in error.message

# %%
# The message also suggests the environment variable ``TORCH_DISTRIBUTED_DEBUG`` (``INFO`` or
# ``DETAIL``), which adds the parameters' names; the indices are enough here.
#
# Why
# ---
#
# DDP keeps the replicas of a model identical by averaging their gradients across processes.
# It registers a hook on every parameter that requires a gradient, groups the parameters in
# buckets, and starts averaging a bucket as soon as all its gradients are ready, while the
# backward pass goes on with the other layers.
# **An iteration is finished only when every bucket has been averaged, so DDP waits for a gradient
# from every parameter it was given.**
# A parameter that ``forward`` did not use never gets one: its bucket stays pending, and at the
# next ``forward`` DDP finds the previous reduction unfinished and raises.
# A gradient can still arrive after one backward pass ends (from a second ``backward`` call in the
# same iteration, for instance), so DDP only checks at the next ``forward`` whether the previous
# reduction finished.
# Without DDP nothing waits for the gradients, so the model trains and the layer quietly does not.
#
# ``find_unused_parameters=True``
# -------------------------------
#
# The option named by the message makes DDP walk the autograd graph from the outputs after every
# ``forward``, mark each parameter that the graph does not reach as ready, and average the others.
# The model trains:

with process_group_of_one():
    model = DDP(TwoHeads().to(device), find_unused_parameters=True)
    aux_before = model.module.aux_head.weight.detach().clone()
    train(model)
    aux_grad = model.module.aux_head.weight.grad
    aux_moved = not torch.equal(aux_before, model.module.aux_head.weight)
print("three steps ran; aux_head.weight.grad:", aux_grad, "| aux_head changed:", aux_moved)
assert aux_grad is None and not aux_moved

# %%
# It has two costs.
# **The walk through the graph runs in every iteration, whether or not a parameter is unused**;
# DDP says so when it finds nothing unused.
# That warning comes from PyTorch's C++ code, once per process, straight to the standard error
# stream; the page captures the stream's file descriptor and asks PyTorch to warn every time
# (:func:`torch.set_warn_always`), so that it shows here:


@contextlib.contextmanager
def captured_stderr():
    """Capture what C++ code writes to file descriptor 2; the text is in the dict when done."""
    captured = {}
    sys.stderr.flush()
    saved = os.dup(2)
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    with tempfile.TemporaryFile() as file:
        os.dup2(file.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            torch.set_warn_always(warn_always)
            file.seek(0)
            captured["text"] = file.read().decode(errors="replace")


with process_group_of_one(), captured_stderr() as stderr:
    train(DDP(nn.Linear(4, 1).to(device), find_unused_parameters=True), steps=1)
warning = re.search(r"find_unused_parameters=True was specified.*?(?=\(function|$)", stderr["text"])
assert warning is not None, stderr["text"]
print(warning.group(0).strip())
assert "extra traversal of the autograd graph every iteration" in warning.group(0)

# %%
# The second cost is the one the first experiment showed: **with the flag, a parameter that is
# never used trains no more than without DDP, and nothing says so any more.**
# If the auxiliary head was meant to be trained, the error was the only sign of the bug.
#
# Changed in PyTorch 1.11
# -----------------------
#
# When the set of unused parameters is the same in every iteration, ``static_graph=True`` is the
# other answer: DDP records in the first iteration which parameters get gradients, and does not
# walk the graph again.
# The constructor argument arrived in
# `PyTorch 1.11 <https://github.com/pytorch/pytorch/releases/tag/v1.11.0>`_, whose announcement
# lists DDP's static graph as stable
# (`pull request #71459 <https://github.com/pytorch/pytorch/pull/71459>`_); earlier releases had
# only a private method, ``_set_static_graph()``, which the pull request kept:

with process_group_of_one():
    model = DDP(TwoHeads().to(device), static_graph=True)
    train(model)
    static_grad = model.module.aux_head.weight.grad
print("static_graph=True: three steps ran; aux_head.weight.grad:", static_grad)
print("the private method still exists:", hasattr(DDP, "_set_static_graph"))
assert static_grad is None and hasattr(DDP, "_set_static_graph")

# %%
# The fix
# -------
#
# **A parameter that this training run does not use should not be trainable: freeze it, or remove
# its module, before wrapping the model.**
# DDP only waits for parameters that require a gradient when it is constructed, so the error goes
# away without the flag, and the model says plainly which parameters it trains:

with process_group_of_one():
    net = TwoHeads().to(device)
    net.aux_head.requires_grad_(False)
    model = DDP(net)
    train(model)
    trained = [name for name, p in net.named_parameters() if p.grad is not None]
print("frozen before wrapping: three steps ran; parameters with a gradient:", trained)
assert trained == ["body.weight", "body.bias", "head.weight", "head.bias"]

# %%
# Freezing after wrapping is too late: DDP has already decided which parameters to wait for.

with process_group_of_one():
    net = TwoHeads().to(device)
    model = DDP(net)
    net.aux_head.requires_grad_(False)
    with expect_raises(RuntimeError, "Expected to have finished reduction", show=False):
        train(model)
    print("frozen after wrapping: the second iteration raises the same error")

# %%
# When a branch really is used in some iterations and not in others (a mixture of experts, a head
# per task, a layer skipped at random), ``find_unused_parameters=True`` is what the flag is for.
# A common alternative, adding the unused branch's output times zero to the loss, makes every
# parameter receive a gradient (of zero) at the price of computing the branch every time:

with process_group_of_one():
    net = TwoHeads().to(device)
    model = DDP(net)
    for _ in range(3):
        x = torch.randn(16, 4, device=device)
        aux = net.aux_head(torch.relu(net.body(x)))  # the unused branch, computed anyway
        (model(x).pow(2).mean() + 0 * aux.sum()).backward()
    zero_times_grad = net.aux_head.weight.grad
print("output times zero: three iterations ran; aux_head.weight.grad is all zero:", end=" ")
print(zero_times_grad is not None and not zero_times_grad.any())
assert zero_times_grad is not None and not zero_times_grad.any()

# %%
# A real-world report: distilling into part of a student model
# ------------------------------------------------------------
#
# In 2022 a user distilling a DNA language model with several processes hit this error
# (`joanaapa/Distillation-DNABERT-Promoter issue #1
# <https://github.com/joanaapa/Distillation-DNABERT-Promoter/issues/1>`_).
# The distillation loss only used the attention of the student's last layer, so the rest of that
# layer and the masked-language-model head got no gradient.
# The maintainer suggested ``find_unused_parameters=True``, or removing the layers the loss did not
# use; the user noted that with the flag those parameters would still never be updated, which is
# the point of the fix above.
#
# Takeaway
# --------
#
# **DDP waits for a gradient from every parameter that requires one: a parameter unused in
# forward leaves the reduction unfinished, and the next iteration raises.**
# Map the indices in the message to ``model.parameters()`` to find the culprits.
# Freeze or remove parameters that are not meant to be trained, before wrapping; use
# ``static_graph=True`` when the unused set is fixed, and ``find_unused_parameters=True`` only for
# parameters that are really used in some iterations and not in others, since it walks the graph
# in every iteration and silences the error for good.
