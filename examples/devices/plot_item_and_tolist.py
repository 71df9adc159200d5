"""
.. _item-and-tolist:

Python numbers from tensors
===========================

Logging a loss, printing an accuracy or writing a metric to a file needs plain Python numbers, and
the tensor methods that give them have sharp edges.
:meth:`~torch.Tensor.item` fails on a tensor with more than one element; keeping the tensor instead
(``total += loss``) keeps every iteration's autograd graph alive; and on a GPU every ``.item()``
makes the CPU wait for the GPU, which costs time when each step gives the GPU much work.

.. admonition:: What you will learn

   * when to use :meth:`~torch.Tensor.item` and when :meth:`~torch.Tensor.tolist`, and which Python
     types they return;
   * why summing loss tensors for logging makes the graph grow with every step;
   * when ``.item()`` costs time on a GPU, and how to call it less often.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (a training step) and :ref:`retain-graph` (what backward frees).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.graph_nodes`,
:func:`~torch_pitfalls.compare_times`, :func:`~torch_pitfalls.measured`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A cross-entropy loss with ``reduction="none"`` gives one loss per sample.
# Asking for it as a Python number fails:
import weakref
from itertools import pairwise

import torch
from torch import nn

from torch_pitfalls import (
    compare_times,
    cuda_section,
    expect_raises,
    get_device,
    graph_nodes,
    measured,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

logits = torch.randn(4, 3, device=device)
targets = torch.tensor([0, 2, 1, 0], device=device)
per_sample = nn.functional.cross_entropy(logits, targets, reduction="none")
print("per-sample losses:", per_sample.shape)
assert per_sample.shape == (4,)

with expect_raises(RuntimeError, "a Tensor with 4 elements cannot be converted to Scalar"):
    per_sample.item()

# %%
# Python's own conversions, ``float(t)`` and ``int(t)`` (and NumPy code that calls them), fail on
# the same tensor with another class and another message:

with expect_raises(ValueError, "only one element tensors can be converted to Python scalars"):
    float(per_sample)

# %%
# Why
# ---
#
# **item() returns exactly one Python number, so it works only for a tensor with exactly one
# element**, whatever its shape.
# :meth:`~torch.Tensor.tolist` handles any number of elements: it returns nested Python lists
# with the tensor's shape, or a plain number for a zero-dimensional tensor.

one_element = torch.tensor([[2.5]], device=device)
print("item() of a 1×1 tensor:", one_element.item())
zero_dim = torch.tensor(7, device=device)
print("tolist() of a 1×1 tensor:", one_element.tolist(), "| of a 0-dim tensor:", zero_dim.tolist())
assert one_element.item() == 2.5 and one_element.tolist() == [[2.5]]
assert zero_dim.tolist() == 7

# %%
# Old tutorials read a loss with ``loss.data[0]``, from the time when a loss was a tensor of one
# element. Since PyTorch 0.4 a reduced loss has zero dimensions (the `0.4.0 migration guide
# <https://pytorch.org/blog/pytorch-0_4_0-migration-guide/>`_, "Accumulating losses"), so it has
# no index 0, and the error names the fix, ``loss.item()``.
# Code of that time still meets it: in `DeblurGAN issue 127
# <https://github.com/KupynOrest/DeblurGAN/issues/127>`_ the unchanged training script stopped
# with this error in the method that gathers the losses for the log.

mean_loss_tensor = per_sample.mean()
print("shape of a reduced loss:", tuple(mean_loss_tensor.shape))
assert mean_loss_tensor.dim() == 0
with expect_raises(IndexError, r"invalid index of a 0-dim tensor\. Use `tensor\.item\(\)`"):
    mean_loss_tensor.data[0]

# %%
# The Python type follows the dtype: floating-point tensors give ``float``, integer tensors
# ``int``, boolean tensors ``bool``.
# A ``float32`` value becomes a 64-bit Python ``float`` that keeps the ``float32`` rounding,
# so ``torch.tensor(0.1).item()`` is not the Python literal ``0.1``.

python_types = {
    str(dtype): type(torch.ones(1, dtype=dtype, device=device).item()).__name__
    for dtype in (torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool)
}
print(python_types)
assert python_types == {
    "torch.float32": "float",
    "torch.float16": "float",
    "torch.int64": "int",
    "torch.uint8": "int",
    "torch.bool": "bool",
}
tenth32 = torch.tensor(0.1, device=device).item()
tenth64 = torch.tensor(0.1, dtype=torch.float64, device=device).item()
print(f"float32 0.1 -> {tenth32!r}, float64 0.1 -> {tenth64!r}")
assert tenth32 != 0.1 and tenth64 == 0.1

# %%
# The fix
# -------
#
# **Reduce first and call item() on the one-element result, or call tolist() when you want every
# value.**

mean_loss = per_sample.mean().item()
losses = per_sample.tolist()
print(f"mean loss: {mean_loss:.4f}", "| per-sample:", [round(v, 4) for v in losses])
assert isinstance(mean_loss, float) and len(losses) == 4
assert abs(mean_loss - sum(losses) / 4) < 1e-6

# %%
# A real-world report: "memory grows every step while I log the loss"
# -------------------------------------------------------------------
#
# A training loop sums its losses for logging with ``total += loss``.
# We record how large the autograd graph behind ``total`` is after each step.
# A forward hook keeps a weak reference (:class:`weakref.ref`) to each step's hidden activation,
# so that we can count which activations are still alive after the loop.

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [
    (torch.randn(8, 16, device=device), torch.randint(0, 4, (8,), device=device)) for _ in range(10)
]


def log_losses(*, use_item, backward):
    hidden = []
    hook = model[1].register_forward_hook(lambda m, i, out: hidden.append(weakref.ref(out)))
    total, nodes = 0.0, []
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        if backward:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item() if use_item else loss
        nodes.append(graph_nodes(total) if torch.is_tensor(total) else 0)
    hook.remove()
    return total, nodes, hidden


def count_alive(refs):
    return sum(ref() is not None for ref in refs)


total_tensor, nodes_tensor, hidden_train = log_losses(use_item=False, backward=True)
print("total:", type(total_tensor).__name__, "| requires grad:", total_tensor.requires_grad)
print("graph nodes behind total after each step:", nodes_tensor)
growth = {b - a for a, b in pairwise(nodes_tensor[1:])}
assert total_tensor.requires_grad and len(growth) == 1 and growth.pop() > 0

# %%
# ``total`` is a tensor that requires grad, and **each += adds the whole step's graph to the
# graph behind total**, by the same number of nodes every step.
# Nothing frees it until ``total`` itself goes away.
# Backward already freed the tensors each graph had saved, so here only the nodes pile up:

alive_train = count_alive(hidden_train)
print("hidden activations still alive after the training loop:", alive_train)
assert alive_train == 0

# %%
# The same habit in an evaluation loop that forgot :class:`torch.no_grad` keeps every saved
# activation as well, because no backward ever frees them:

total_eval, nodes_eval, hidden_eval = log_losses(use_item=False, backward=False)
alive_eval = count_alive(hidden_eval)
print("hidden activations still alive after the evaluation loop:", alive_eval, "of", len(batches))
assert alive_eval == len(batches)

# %%
# The fix is ``total += loss.item()``: ``total`` is then a Python ``float``, and each step's graph
# is freed as soon as the next step replaces ``loss``.

total_float, nodes_float, hidden_float = log_losses(use_item=True, backward=False)
alive_float = count_alive(hidden_float)
print("total:", type(total_float).__name__, "| activations still alive:", alive_float)
assert isinstance(total_float, float) and alive_float == 0
torch.testing.assert_close(total_eval.item(), total_float)

# %%
# The graph behind ``total`` step by step:

import matplotlib.pyplot as plt

steps = range(1, len(batches) + 1)
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
ax.bar([s - 0.2 for s in steps], nodes_tensor, width=0.4, label="total += loss", color="C3")
ax.bar([s + 0.2 for s in steps], nodes_float, width=0.4, label="total += loss.item()", color="C0")
ax.set_xlabel("training step")
ax.set_ylabel("graph nodes kept by total")
ax.set_title("Graph kept alive by the logging variable")
_ = ax.legend()

# %%
# Lists of outputs and losses
# ---------------------------
#
# No ``+=`` is needed for the same leak: **a list that collects each step's outputs (for a metric
# over the epoch) or each step's loss (to average at the end) keeps a reference to each step's
# graph.**
# We collect the outputs of an evaluation loop that forgot :class:`torch.no_grad`, appended as
# they are, moved with :meth:`~torch.Tensor.cpu`, or detached, and count the hidden activations
# still alive afterwards:


def collect_outputs(keep):
    hidden = []
    hook = model[1].register_forward_hook(lambda m, i, out: hidden.append(weakref.ref(out)))
    outputs = [keep(model(x)) for x, _ in batches]
    hook.remove()
    return outputs, count_alive(hidden)


ways = {
    "out": lambda out: out,
    "out.cpu()": lambda out: out.cpu(),
    "out.detach()": lambda out: out.detach(),
}
kept = {}
for name, keep in ways.items():
    outputs, alive = collect_outputs(keep)
    kept[name] = (alive, outputs[0].requires_grad)
    print(
        f"outputs.append({name}): activations alive {alive} of {len(batches)}, "
        f"requires grad: {outputs[0].requires_grad}"
    )
n = len(batches)
assert kept == {"out": (n, True), "out.cpu()": (n, True), "out.detach()": (0, False)}

# %%
# ``.cpu()`` does not help: a copy to the host is an operation autograd records like any other
# (on the CPU it returns the tensor itself), so the copy still requires grad and holds the graph.
# Detach first, or run the loop under :class:`torch.no_grad` (:ref:`no-grad-evaluation`).
#
# A list of training losses keeps less, because backward has freed what each graph saved, but it
# keeps every step's graph nodes, and averaging the list at the end of the epoch builds one more
# graph on top of all of them:

losses, losses_detached = [], []
for x, y in batches:
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss)
    losses_detached.append(loss.detach())
epoch_loss = torch.stack(losses).mean()
epoch_loss_detached = torch.stack(losses_detached).mean()
print("losses in the list that still hold a graph:", sum(t.grad_fn is not None for t in losses))
print(
    f"graph nodes behind the epoch loss: {graph_nodes(epoch_loss)} from losses.append(loss), "
    f"{graph_nodes(epoch_loss_detached)} from losses.append(loss.detach())"
)
assert sum(t.grad_fn is not None for t in losses) == len(batches)
assert graph_nodes(epoch_loss) > len(batches) and graph_nodes(epoch_loss_detached) == 0
assert epoch_loss.item() == epoch_loss_detached.item()

# %%
# **Append loss.detach() (or loss.item()) and out.detach(), never the tensors that carry the
# graph.**
# The detached losses give the same epoch average; kept on the device, they also spare the CPU a
# wait for the GPU at every step (the next section says when that matters).

# %%
# On a GPU, ``.item()`` waits
# ---------------------------
#
# CUDA kernels run asynchronously: Python queues them and moves on.
# **item() must wait until the GPU has computed the value and copied it to the host**, a
# host–device synchronisation: while it waits, the CPU cannot queue the next step's work in
# advance.
# We compare an epoch that calls ``.item()`` every step with one that sums the detached losses on
# the device and calls ``.item()`` once at the end.
# Each ``.item()`` runs the operation ``aten::_local_scalar_dense``, which reads one value back
# from the device: on a GPU, each of them is such a wait.
# :class:`torch.autograd.profiler.profile` records every operation that runs, and
# :meth:`~torch.autograd.profiler.profile.key_averages` counts them by name.
# The counts are the same on every device, and the same few lines find the waits in your own
# training loop:


def epoch_item_every_step():
    total = 0.0
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def epoch_item_once():
    total = torch.zeros((), device=device)
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total.item()


def host_reads(epoch):
    with torch.autograd.profiler.profile() as profile:
        epoch()
    counts = {event.key: event.count for event in profile.key_averages()}
    return counts.get("aten::_local_scalar_dense", 0)


reads_every_step = host_reads(epoch_item_every_step)
reads_once = host_reads(epoch_item_once)
print(f"values read back per epoch: {reads_every_step} with .item() every step, {reads_once} once")
assert reads_every_step == len(batches) and reads_once == 1

# %%
# What the waits cost is a time, and depends on the GPU and on how much work each step does.
# On a GPU we time the two epochs with :func:`~torch_pitfalls.compare_times`.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

with cuda_section(
    device, "timing .item() every step against once per epoch", measured=True
) as live:
    if live:
        time_every_step, time_once = compare_times(
            epoch_item_every_step, epoch_item_once, expect=lambda t: t[0] / t[1] > 0.8
        )
        sync_ratio = time_every_step / time_once
        print(measured(f"on {device}: .item() every step takes {sync_ratio:.2f}× .item() once"))
        assert sync_ratio > 0.8
        fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
        ax.bar([".item() every step", ".item() once"], [sync_ratio, 1.0], color=["C3", "C0"])
        ax.set_ylabel("time relative to .item() once")
        _ = ax.set_title(f"One epoch on {device} (this machine)")

# %%
# How much the waiting costs depends on the balance of the two sides.
# In the run recorded on an H200, the ratio is close to 1: with this small model the two epochs
# take the same time within noise, because each step gives the GPU so little work that there is
# almost nothing to wait for.
# The cost grows with the GPU work per step, when the CPU could otherwise queue the next step
# while the GPU computes this one.
#
# Both epochs return a plain ``float``; keeping the running sum as a detached tensor on the
# device costs one tensor and one small addition kernel per step, not one graph per step, and
# saves one wait for the GPU per step.
#
# See also :ref:`cuda-async-timing` (the same asynchrony makes a plain clock time only the launch
# of GPU work), :ref:`non-blocking-copy` (copies to the host that do not wait) and
# :ref:`caching-allocator` (which references keep GPU memory alive).
#
# Detectors
# ---------
#
# The static checker's rule ``TP128`` (see :doc:`/detectors`) finds index 0 of a tensor that it
# knows to have zero dimensions, in your own code: ``loss.data[0]`` of a reduced loss, or of a
# mean or sum over every element, as in the old-style line above. It is on by default.
# The other errors of this page are PyTorch's own, and under the runtime guards they carry a
# note with a link to this page; whether ``total += loss`` is meant for backward or only for
# logging is the code's intent, which no detector can read.
#
# Takeaway
# --------
#
# **Log with loss.item(), never by summing loss tensors: a tensor that requires grad keeps every
# step's graph alive.**
# Use ``.tolist()`` for several values.
# On a GPU, each ``.item()`` makes the CPU wait for the GPU; when the steps give the GPU much
# work, accumulate detached losses on the device (one small addition per step) and call
# ``.item()`` once per epoch (or per logging interval).
# A running total kept as a float16 or bfloat16 tensor has a problem of its own: it stops growing
# (:ref:`half-precision-accumulation`).
