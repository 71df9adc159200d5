"""
.. _no-grad-evaluation:

``torch.no_grad()`` for evaluation
==================================

An evaluation loop that calls :meth:`model.eval() <torch.nn.Module.eval>` but not
:class:`torch.no_grad` still records an autograd graph for every batch.
Each output that the loop keeps, to compute a metric later, keeps its whole graph alive, with all
the activations saved for a backward pass that never comes.
That costs memory and time, and nothing reports it.

.. admonition:: What you will learn

   * what :class:`torch.no_grad` switches off, and that it ends with its block;
   * what evaluating without it costs in memory and time;
   * why :meth:`~torch.nn.Module.eval` and :class:`torch.no_grad` are both needed;
   * when :class:`torch.inference_mode` fits, and what the old ``volatile=True`` flag does today.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (which operations autograd records).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.saved_tensors`, :func:`~torch_pitfalls.graph_nodes`,
:func:`~torch_pitfalls.compare_times`, :func:`~torch_pitfalls.measured`,
:func:`~torch_pitfalls.peak_cuda_bytes`, :func:`~torch_pitfalls.cuda_section`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A small classifier with :class:`~torch.nn.BatchNorm1d` and :class:`~torch.nn.Dropout`, put in
# evaluation mode, and an evaluation loop that keeps every batch's output.
# The outputs require grad: autograd recorded the forward pass.
import torch
from torch import nn

from torch_pitfalls import (
    compare_times,
    cuda_section,
    expect_raises,
    expect_warns,
    get_device,
    graph_nodes,
    measured,
    peak_cuda_bytes,
    saved_tensors,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(
    nn.Linear(64, 128),
    nn.BatchNorm1d(128),
    nn.ReLU(),
    nn.Dropout(0.5),
    nn.Linear(128, 128),
    nn.ReLU(),
    nn.Linear(128, 10),
).to(device)
batches = [torch.randn(32, 64, device=device) for _ in range(8)]


def evaluate():
    _ = model.eval()
    return [model(x) for x in batches]


with saved_tensors() as saved_eval_only:
    outputs = evaluate()
print("outputs require grad:", outputs[0].requires_grad)
print(f"kept for backward: {saved_eval_only.count} tensors, {saved_eval_only.nbytes} bytes")
assert outputs[0].requires_grad and saved_eval_only.nbytes > 0

# %%
# The same loop inside :class:`torch.no_grad` records nothing and saves nothing.


def evaluate_no_grad():
    _ = model.eval()
    with torch.no_grad():
        return [model(x) for x in batches]


with saved_tensors() as saved_no_grad:
    outputs_no_grad = evaluate_no_grad()
print("outputs require grad:", outputs_no_grad[0].requires_grad)
print(f"kept for backward: {saved_no_grad.count} tensors, {saved_no_grad.nbytes} bytes")
assert not outputs_no_grad[0].requires_grad and saved_no_grad.nbytes == 0
for a, b in zip(outputs, outputs_no_grad, strict=True):
    torch.testing.assert_close(a, b)

# %%
# The outputs are the same, but without :class:`torch.no_grad` each of them carries its graph:
# :func:`~torch_pitfalls.graph_nodes` counts one node per recorded operation (two per linear
# layer, the matrix product and the transposed weight; one for batch norm; one per ReLU; dropout
# in evaluation mode returns its input and records nothing) and one ``AccumulateGrad`` node per
# parameter.
# Unlike a time, this count is the same on every machine.

nodes_eval_only = graph_nodes(outputs[0])
nodes_no_grad = graph_nodes(outputs_no_grad[0])
n_parameters = len(list(model.parameters()))
print(f"graph nodes behind each output: {nodes_eval_only} without no_grad, {nodes_no_grad} with it")
print(f"of which AccumulateGrad, one per parameter: {n_parameters}")
assert nodes_eval_only == 3 * 2 + 1 + 2 + n_parameters == 17 and nodes_no_grad == 0

# %%
# Building those graphs, and freeing them, is extra work for every batch, so the loop without
# :class:`torch.no_grad` is slower.
# We time both loops with :func:`~torch_pitfalls.compare_times`: on one thread, in many short
# interleaved timings, keeping the fastest of each, so that other programs on a busy machine
# do not decide the result.
# How much slower depends on the machine and on the model; for this small model most of the time
# goes into what both loops do, the arithmetic and Python's calls into the layers, so the
# example asserts only a ratio above 1.05 (``expect``: a comparison that misses it is measured
# again before the page fails).

time_eval_only, time_no_grad = compare_times(
    evaluate, evaluate_no_grad, expect=lambda t: t[0] / t[1] > 1.05
)
time_ratio = time_eval_only / time_no_grad
print(measured(f"time without no_grad / time with no_grad: {time_ratio:.2f}", device))
assert time_ratio > 1.05

# %%
# On a GPU the same graphs show up as peak memory, measured with
# :func:`torch.cuda.max_memory_allocated` by :func:`~torch_pitfalls.peak_cuda_bytes`.

with cuda_section(device, "the peak CUDA memory of the loop", measured=True) as live:
    if live:
        peak_eval_only = peak_cuda_bytes(evaluate, device)
        peak_no_grad = peak_cuda_bytes(evaluate_no_grad, device)
        print(
            measured(
                f"peak CUDA memory of the loop on {torch.cuda.get_device_name(device)}: "
                f"{peak_eval_only} bytes without no_grad, {peak_no_grad} bytes with it "
                f"({peak_eval_only / max(peak_no_grad, 1):.1f}×)"
            )
        )
        assert peak_eval_only > peak_no_grad

# %%
# Side by side:

import matplotlib.pyplot as plt

labels = ["eval() only", "eval() + no_grad()"]
fig, (ax_bytes, ax_time) = plt.subplots(1, 2, figsize=(6, 3.5), layout="constrained")
bars = ax_bytes.bar(
    labels, [saved_eval_only.nbytes / 1024, saved_no_grad.nbytes / 1024], color=["C3", "C0"]
)
_ = ax_bytes.bar_label(bars, fmt="%.0f")
ax_bytes.set_ylabel("saved for backward (KiB)")
ax_bytes.set_title("Memory kept by the loop")
ax_time.bar(labels, [time_ratio, 1.0], color=["C3", "C0"])
ax_time.set_ylabel("time relative to no_grad()")
_ = ax_time.set_title("Time (this machine)")

# %%
# Why
# ---
#
# Autograd records an operation when one of its inputs requires grad *and* grad mode is enabled.
# **torch.no_grad() disables grad mode for the code inside its block, and only there.**
# The parameters still require grad; results computed inside the block do not, and results
# computed after it do again.

x = torch.randn(4, 64, device=device)
with torch.no_grad():
    inside = model(x)
after = model(x)
print("inside no_grad:", inside.requires_grad, " after the block:", after.requires_grad)
print("parameters still require grad:", all(p.requires_grad for p in model.parameters()))
assert not inside.requires_grad and after.requires_grad
assert all(p.requires_grad for p in model.parameters())

# %%
# :meth:`~torch.nn.Module.eval` is something else entirely: it sets the ``training`` flag of
# every submodule, which changes what :class:`~torch.nn.Dropout` and
# :class:`~torch.nn.BatchNorm1d` compute.
# We run each of the four combinations twice on the same batch (:class:`torch.set_grad_enabled`
# switches grad mode by a flag) and ask three questions: are the two outputs equal, does the
# output require grad, and did BatchNorm's running mean move?


def try_mode(train, no_grad):
    _ = model.train(train)
    mean_before = model[1].running_mean.clone()
    with torch.set_grad_enabled(not no_grad):
        first, second = model(x), model(x)
    return {
        "repeatable": torch.equal(first, second),
        "requires grad": first.requires_grad,
        "running mean moved": not torch.equal(mean_before, model[1].running_mean),
    }


modes = {
    "train(), grad": try_mode(train=True, no_grad=False),
    "eval() only": try_mode(train=False, no_grad=False),
    "no_grad() only": try_mode(train=True, no_grad=True),
    "eval() + no_grad()": try_mode(train=False, no_grad=True),
}
_ = model.eval()
for name, result in modes.items():
    print(f"{name:20s}", result)

assert modes["train(), grad"] == {
    "repeatable": False,
    "requires grad": True,
    "running mean moved": True,
}
assert modes["eval() only"] == {
    "repeatable": True,
    "requires grad": True,
    "running mean moved": False,
}
assert modes["no_grad() only"] == {
    "repeatable": False,
    "requires grad": False,
    "running mean moved": True,
}
assert modes["eval() + no_grad()"] == {
    "repeatable": True,
    "requires grad": False,
    "running mean moved": False,
}

# %%
# ``eval()`` alone gives the right numbers but still records the graph.
# ``no_grad()`` alone records nothing but keeps dropout active and lets the batch statistics
# overwrite BatchNorm's running statistics, so the evaluation changes the model.
#
# The fix
# -------
#
# **Evaluate with both: model.eval() for the layers' behaviour, torch.no_grad() for autograd.**
# Put the model back with ``model.train()`` before training again.


def evaluate_properly(model, batches):
    was_training = model.training
    _ = model.eval()
    with torch.no_grad():
        predictions = [model(x).argmax(dim=1) for x in batches]
    _ = model.train(was_training)
    return torch.cat(predictions)


_ = model.train()
with saved_tensors() as saved_fixed:
    predictions = evaluate_properly(model, batches)
back_in_training = model.training
print(f"predictions: {tuple(predictions.shape)}, saved bytes: {saved_fixed.nbytes}")
print("model back in training mode:", back_in_training)
assert saved_fixed.nbytes == 0 and not predictions.requires_grad and back_in_training

# %%
# Stricter: ``torch.inference_mode``
# ----------------------------------
#
# :class:`torch.inference_mode` also disables recording, and in addition skips autograd's
# bookkeeping on the tensors it creates: they are *inference tensors*, without a version counter
# (see :ref:`data-vs-detach`).

_ = model.eval()
with torch.inference_mode():
    features = model(x)
print("inference tensor:", features.is_inference(), " requires grad:", features.requires_grad)
assert features.is_inference() and not features.requires_grad

with expect_raises(RuntimeError, "do not track version counter"):
    _ = features._version

# %%
# Less bookkeeping can make it faster than :class:`torch.no_grad`, but what it skips, a version
# counter and view tracking for each new tensor, is little next to the graph that
# :class:`torch.no_grad` already skips.
# For this small model the two times are close, so the example asserts a ratio between 0.8 and
# 1.25, not a speed-up; how close depends on the machine and on the model.


def evaluate_inference_mode():
    _ = model.eval()
    with torch.inference_mode():
        return [model(x) for x in batches]


time_no_grad, time_inference = compare_times(
    evaluate_no_grad, evaluate_inference_mode, expect=lambda t: 0.8 < t[0] / t[1] < 1.25
)
inference_ratio = time_no_grad / time_inference
print(measured(f"time with no_grad / time with inference_mode: {inference_ratio:.2f}", device))
assert 0.8 < inference_ratio < 1.25

# %%
# **An inference tensor can never enter a graph that autograd records later.**
# Caching features with a frozen network under ``inference_mode`` and then training a new head
# on them fails as soon as the head saves its input for backward:

head = nn.Linear(10, 2).to(device)
if torch.__version__ >= "2.9":
    advice = r"or use `torch\.no_grad\(\)` instead of `torch\.inference_mode\(\)`"
else:  # PyTorch 2.8 and older suggest only the clone, see "Changed in PyTorch 2.9" below
    advice = "To work around you can make a clone to get a normal tensor"
with expect_raises(RuntimeError, "Inference tensors cannot be saved for backward.*" + advice):
    head(features)

# %%
# Use :class:`torch.no_grad` when the results may be used for training later, or make a normal
# tensor from the inference tensor with :meth:`~torch.Tensor.clone` outside inference mode:

head_out = head(features.clone())
head_out.sum().backward()
print("head trained on the cloned features; weight gradient set:", head.weight.grad is not None)
assert head.weight.grad is not None

# %%
# Changed in PyTorch 0.4.0: ``volatile=True``
# -------------------------------------------
#
# Before PyTorch 0.4.0, evaluation wrapped the input as ``Variable(x, volatile=True)``, and a
# volatile input made every result volatile, so no graph was recorded.
# `PyTorch 0.4.0 <https://github.com/pytorch/pytorch/releases/tag/v0.4.0>`_ merged ``Variable``
# into :class:`torch.Tensor` and replaced the flag by :class:`torch.no_grad`.
# **Today volatile=True only warns and has no effect: the output still requires grad.**

with expect_warns(UserWarning, "volatile was removed"):
    old_style = torch.autograd.Variable(x, volatile=True)
volatile_out = model(old_style)
print(
    "Variable(...) returns:",
    type(old_style).__name__,
    " output requires grad:",
    volatile_out.requires_grad,
)
assert type(old_style) is torch.Tensor and volatile_out.requires_grad

# %%
# Changed in PyTorch 2.9: the message
# -----------------------------------
#
# Up to PyTorch 2.8 the error above ended with
# ``To work around you can make a clone to get a normal tensor and use it in autograd.``
# Since `PyTorch 2.9 <https://github.com/pytorch/pytorch/releases/tag/v2.9.0>`_ it also says not
# to use inference tensors in computation tracked by autograd, and ends with
# ``or use `torch.no_grad()` instead of `torch.inference_mode()`.``
# (`PR 161164 <https://github.com/pytorch/pytorch/pull/161164>`_).

# %%
# Detectors
# ---------
#
# The runtime guard ``TP014`` detects this pitfall in your own code (see :doc:`/detectors`): a
# forward pass of a model in evaluation mode, with gradients enabled, whose graph no backward
# (nor :func:`torch.autograd.grad`) has used by the next optimizer step, or by the end of the
# guarded block.
# A model in evaluation mode that is backpropagated on purpose, for the gradient of its input
# (a saliency map, an adversarial example), is not flagged.
# Under :mod:`torch_pitfalls.guards`, the evaluation of this page without :class:`torch.no_grad`
# warns when the block ends, and ``evaluate_properly`` is silent.
from torch_pitfalls import PitfallWarning, guards

with expect_warns(PitfallWarning, "^TP014 "):
    with guards(language="en") as wrong:
        _ = model.eval()
        kept = evaluate()  # eval() without no_grad()
with guards(language="en") as fixed:
    predictions = evaluate_properly(model, batches)
    _ = model.eval()
    saliency_input = batches[0].clone().requires_grad_()
    model(saliency_input).max(dim=1).values.sum().backward()  # the graph is used
    _ = model.train()
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP014"] and fixed.ids == []
assert saliency_input.grad is not None

# %%
# Two opt-in rules of the static checker find the same pitfall in source code, before it runs
# (``--enable TP126,TP127``, see :doc:`/detectors`).
# ``TP126`` flags ``volatile`` passed to ``torch.autograd.Variable``, through any import of it,
# and ``.volatile`` set, or read on a ``Variable``, in a module that uses it: the flag does
# nothing, so the code records the graph it meant to avoid.
# ``volatile=False``, the old default, is left alone.
# ``TP127`` flags a function that calls ``model.eval()`` and then, in a loop, calls ``model(...)``
# and keeps what it returns (appends it, adds it to a total, builds a list of it) with gradients
# enabled: no :class:`torch.no_grad` or :class:`torch.inference_mode` block around the call or
# around a call of the function in the same module, no such decorator, and no ``backward()`` in
# the function.
# A loop that keeps only ``loss.item()``, ``.detach()`` or ``.argmax()`` keeps no graph, and is
# left alone.
# Both rules stay opt-in until real code gives them findings on which to measure their false
# alarms.
from torch_pitfalls.lint import check_source

wrong_code = """
import torch
from torch.autograd import Variable


def evaluate(model, batches):
    model.eval()
    outputs = []
    for x in batches:
        outputs.append(model(Variable(x, volatile=True)))
    return outputs
"""
fixed_code = """
import torch


def evaluate(model, batches):
    model.eval()
    outputs = []
    with torch.no_grad():
        for x in batches:
            outputs.append(model(x))
    return outputs
"""
static = {
    name: check_source(code, path=f"{name}.py", select=["TP126", "TP127"], language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert sorted(f.rule for f in static["wrong"]) == ["TP126", "TP127"] and static["fixed"] == []

# %%
# Takeaway
# --------
#
# **Evaluate under model.eval() and torch.no_grad() together: the first fixes what the layers
# compute, the second stops autograd from recording and keeping a graph for every batch.**
# Use ``torch.inference_mode()`` only when no result will ever be used for training.
# ``volatile=True`` has done nothing since PyTorch 0.4.0.
