"""
.. _tensor-to-numpy:

From a tensor to NumPy
======================

Plotting a prediction or computing a metric with NumPy starts with
:meth:`tensor.numpy() <torch.Tensor.numpy>`, and that call fails for the two tensors you most
often have at hand: an output that requires grad, and anything on the GPU.
The usual fix, ``t.detach().cpu().numpy()``, works, but comes with questions of its own: does the
order of ``detach()`` and ``cpu()`` matter, and is the array a copy or a view of the tensor?

.. admonition:: What you will learn

   * which two conditions :meth:`~torch.Tensor.numpy` checks, and why it refuses instead of fixing
     things silently;
   * ``t.detach().cpu().numpy()`` and its shorthand ``t.numpy(force=True)``;
   * what autograd records for ``.cpu().detach()`` and for ``.detach().cpu()``, and what that costs;
   * when the array shares memory with the tensor, and when it is a copy.

.. admonition:: Prerequisites

   :ref:`data-vs-detach` (what :meth:`~torch.Tensor.detach` returns) and
   :ref:`device-agnostic-code` (moving tensors between devices).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`,
:func:`~torch_pitfalls.graph_nodes`, :func:`~torch_pitfalls.saved_tensors`,
:func:`~torch_pitfalls.compare_times`, :func:`~torch_pitfalls.measured`,
:func:`~torch_pitfalls.available_devices`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# The output of a small model requires grad, because the model's parameters do.
# Asking for it as a NumPy array fails, even after :meth:`~torch.Tensor.cpu` (which returns the
# tensor itself on a CPU, and a copy in host memory on a GPU):
import numpy as np
import torch
from torch import nn

from torch_pitfalls import (
    available_devices,
    compare_times,
    cuda_section,
    expect_raises,
    get_device,
    graph_nodes,
    guards,
    measured,
    saved_tensors,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Linear(3, 2).to(device)
pred = model(torch.randn(4, 3, device=device))
print("pred requires grad:", pred.requires_grad)
assert pred.requires_grad

with expect_raises(RuntimeError, "Can't call numpy\\(\\) on Tensor that requires grad"):
    pred.cpu().numpy()

# %%
# Detaching is not enough on a GPU: a CUDA tensor cannot become a NumPy array either.
# (For a CUDA tensor ``.numpy()`` checks the device first, so this is also the error that
# ``pred.numpy()`` gives there.)
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

with cuda_section(device, "converting a CUDA tensor with .numpy()") as live:
    if live:
        with expect_raises(TypeError, "can't convert cuda"):
            pred.detach().numpy()
        with expect_raises(TypeError, "can't convert cuda"):
            pred.numpy()

# %%
# Why
# ---
#
# **numpy() returns an array that shares the tensor's memory, so it refuses whenever sharing
# would be wrong.**
# NumPy knows nothing of autograd: an array built on a tensor that requires grad would let you
# change values behind autograd's back, and no gradient can flow through NumPy code.
# NumPy arrays also live in host memory, so a CUDA tensor needs a copy first.
# PyTorch makes both steps explicit instead of detaching or copying silently.
#
# The fix
# -------
#
# **Write t.detach().cpu().numpy(): detach from the graph, copy to the host, then convert.**
# ``t.numpy(force=True)`` does exactly that in one call.

array = pred.detach().cpu().numpy()
forced = pred.numpy(force=True)
print(type(array).__name__, array.dtype, array.shape)
print("force=True gives the same values:", np.array_equal(array, forced))
assert isinstance(array, np.ndarray) and array.shape == (4, 2) and array.dtype == np.float32
assert np.array_equal(array, forced)

# %%
# ``.cpu().detach()`` or ``.detach().cpu()``?
# -------------------------------------------
#
# Both orders give the same array.
# They differ in what autograd records on the way.
# :meth:`~torch.Tensor.cpu` on a tensor that requires grad is an operation like any other: on a GPU
# it copies the data and records a ``ToCopyBackward0`` node, so that a gradient could flow back
# to the device; ``detach()`` afterwards throws that node away again.
# On the CPU, ``.cpu()`` has nothing to copy and returns the tensor itself, so nothing is recorded.

via_cpu_first = pred.cpu()
nodes_pred = graph_nodes(pred)
nodes_cpu_first = graph_nodes(via_cpu_first)
print(f"graph nodes: {nodes_pred} behind pred, {nodes_cpu_first} behind pred.cpu()")
print("grad_fn of pred.cpu():", type(via_cpu_first.grad_fn).__name__)
if device.type == "cuda":
    assert nodes_cpu_first == nodes_pred + 1
    assert type(via_cpu_first.grad_fn).__name__ == "ToCopyBackward0"
else:
    assert via_cpu_first is pred and nodes_cpu_first == nodes_pred

# %%
# To see that node on every build, copy to the ``meta`` device instead: any copy to another
# device is recorded the same way.

to_meta = pred.to("meta")
print("grad_fn of pred.to('meta'):", type(to_meta.grad_fn).__name__)
print(f"graph nodes: {graph_nodes(to_meta)} behind pred.to('meta')")
assert type(to_meta.grad_fn).__name__ == "ToCopyBackward0"
assert graph_nodes(to_meta) == nodes_pred + 1

# %%
# Detaching first gives ``cpu()`` a tensor outside the graph, so nothing is recorded at all.
# Neither order makes autograd save a tensor for backward, and the results are equal:

with saved_tensors() as saved_cpu_detach:
    cpu_detach = pred.cpu().detach()
with saved_tensors() as saved_detach_cpu:
    detach_cpu = pred.detach().cpu()
print("saved for backward:", saved_cpu_detach.count, "and", saved_detach_cpu.count, "tensors")
print("graph nodes of the results:", graph_nodes(cpu_detach), "and", graph_nodes(detach_cpu))
assert saved_cpu_detach.count == saved_detach_cpu.count == 0
assert graph_nodes(cpu_detach) == graph_nodes(detach_cpu) == 0
assert torch.equal(cpu_detach, detach_cpu)

# %%
# So the order changes little: on the CPU, where ``.cpu()`` returns the tensor itself, both orders
# make the same two calls; on a GPU, ``.cpu().detach()`` adds one small node to a copy to host
# memory that both orders make.
# We time both orders with :func:`~torch_pitfalls.compare_times` on every device this build has,
# for a 512×512 tensor that requires grad: on one thread, in many short interleaved timings,
# keeping the fastest of each.
# Times depend on the machine, but the ratio stays close to 1: the example asserts that it lies
# between 0.8 and 1.25 on every device (a comparison outside that range is measured again
# before the page fails).

order_ratios = {}
for name in available_devices():
    w = torch.randn(512, 512, device=name, requires_grad=True)
    y = w * 2
    t_cpu_detach, t_detach_cpu = compare_times(
        lambda y=y: y.cpu().detach(),
        lambda y=y: y.detach().cpu(),
        expect=lambda t: 0.8 < t[0] / t[1] < 1.25,
    )
    order_ratios[name] = t_cpu_detach / t_detach_cpu
    ratio = order_ratios[name]
    print(measured(f".cpu().detach() takes {ratio:.2f}× the time of .detach().cpu()", name))
assert set(order_ratios) == set(available_devices())
assert all(0.8 < r < 1.25 for r in order_ratios.values())

# %%
# Side by side, relative to ``.detach().cpu()`` on each device:

import matplotlib.pyplot as plt

names = list(order_ratios)
positions = np.arange(len(names))
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
ax.bar(positions - 0.2, [order_ratios[n] for n in names], width=0.4, label=".cpu().detach()")
ax.bar(positions + 0.2, [1.0] * len(names), width=0.4, label=".detach().cpu()")
ax.set_xticks(positions, names)
ax.set_xlabel("device of the tensor")
ax.set_ylabel("time relative to .detach().cpu()")
ax.set_title("Order of detach() and cpu() (this machine)")
_ = ax.legend()

# %%
# Shared memory, and when it is a copy
# ------------------------------------
#
# **numpy() and torch.from_numpy() share memory with their source; torch.tensor(array) copies.**
# Editing one side of a shared pair changes the other, with no error and no warning.
# This is about host memory, so the tensors here are on the CPU.
#
# :func:`torch.from_numpy` also keeps the array's dtype, float64 for most NumPy data, which a
# model's float32 layers refuse: see :ref:`float64-creep`.

source = torch.zeros(3)
shared_array = source.numpy()
shared_array[0] = 1.0
from_array = torch.from_numpy(shared_array)
copied = torch.tensor(shared_array)
shared_array[1] = 2.0
print("tensor after editing its numpy() array:", source)
print("torch.from_numpy(array):", from_array, "| torch.tensor(array):", copied)
assert source.tolist() == [1.0, 2.0, 0.0] and from_array.tolist() == [1.0, 2.0, 0.0]
assert copied.tolist() == [1.0, 0.0, 0.0]

# %%
# The fix from above inherits this: on a CPU, ``.cpu()`` returns the tensor itself, so the array
# is a view of the original tensor and editing it edits the tensor.
# On a GPU ``.cpu()`` copies, and the array is independent.
# Code that edits the array behaves differently on the two machines; call ``.copy()`` on the
# array when you mean to change it.

values = torch.arange(4.0, device=device)
view_or_copy = values.detach().cpu().numpy()
view_or_copy[0] = 100.0
array_edits_tensor = values[0].item() == 100.0
print(f"on {device}: editing the array changed the tensor:", array_edits_tensor)
assert array_edits_tensor == (device.type == "cpu")

safe = values.detach().cpu().numpy().copy()
safe[1] = -1.0
print("after editing a .copy():", values)
assert values[1].item() == 1.0

# %%
# Detectors
# ---------
#
# Two rules detect this pitfall in your own code (see :doc:`/detectors`), both runtime notes
# that the guards add to PyTorch's own error: ``TP007`` (the conversion of a tensor that requires
# grad) and ``TP008`` (the conversion of a CUDA tensor).
# Under :mod:`torch_pitfalls.guards`, both errors of this page end with a note that names the
# rule, the fix and this page, and the fix is silent.
# ``TP008`` needs a CUDA tensor: on a build without a GPU, that part shows its recording, and
# only ``TP007`` is found in this run.

with guards(language="en") as wrong:
    with expect_raises(RuntimeError, "Can't call numpy\\(\\) on Tensor that requires grad"):
        pred.cpu().numpy()
    with cuda_section(device, "the guards' note on a CUDA tensor's .numpy()") as live:
        if live:
            with expect_raises(TypeError, "can't convert cuda"):
                pred.detach().numpy()
with guards(language="en") as fixed:
    pred.detach().cpu().numpy()
    pred.numpy(force=True)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == (["TP007", "TP008"] if device.type == "cuda" else ["TP007"])
assert fixed.ids == []

# %%
# Takeaway
# --------
#
# **Convert with t.detach().cpu().numpy() (or t.numpy(force=True)): detach before cpu() so that
# nothing is recorded, and remember that on a CPU the array shares memory with the tensor.**
# Use ``torch.tensor(array)`` for an independent copy, ``torch.from_numpy(array)`` for a view.
