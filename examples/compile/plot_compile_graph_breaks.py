"""
.. _compile-graph-breaks:

Graph breaks that split ``torch.compile``
=========================================

:func:`torch.compile` captures a function's tensor operations into one graph and hands it to a
compiler.
A line it cannot put in a graph, most often a ``loss.item()`` for logging or a ``print``, does
not fail: the function is split there into a graph before the line, the line run by Python, and
a graph after it.
Each such *graph break* costs a return to Python, stops the compiler from optimising across it,
and, for ``.item()``, waits for the GPU; the compiled training step is then barely faster than
the eager one, and nothing says why unless you ask.

.. admonition:: What you will learn

   * what a graph break is, and which everyday lines cause one;
   * how to count them and see their reasons (``torch._dynamo.explain``,
     ``TORCH_LOGS="graph_breaks"``), and how ``fullgraph=True`` turns them into errors;
   * the fix: keep logging and Python numbers outside the compiled function, and return tensors.

.. admonition:: Prerequisites

   :ref:`compile-recompiles` (what ``torch.compile`` captures and guards), :ref:`item-and-tolist`
   (what ``.item()`` costs).

Every compilation on this page uses ``backend="eager"`` or a backend that works like it: Dynamo
captures the graphs as usual and they run without generated code, so the page needs no C++
compiler and the counts are those of any backend.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A training step computes the loss, logs it, and computes a regularised objective.
# ``torch._dynamo.explain`` compiles it and reports what it captured:
import logging
from contextlib import contextmanager

import torch

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.randn(8, 4, device=device)
w = torch.randn(4, 4, device=device)
logged = []


def train_step(x, w):
    y = x @ w
    loss = y.pow(2).mean()
    logged.append(f"loss {loss.item():.3f}")  # log the loss as a Python number
    return loss + 0.01 * w.abs().sum()


@contextmanager
def dynamo_log():
    """Collect what Dynamo logs (its graph-break warnings, TORCH_LOGS="graph_breaks") in a list
    instead of stderr."""
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    torch._logging.set_logs(graph_breaks=True)
    names = [n for n in logging.root.manager.loggerDict if n.startswith("torch._dynamo")]
    loggers = [logging.getLogger(n) for n in ["torch._dynamo", *names]]
    saved = [(lg.handlers, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers, lg.propagate = [handler], False
    try:
        yield messages
    finally:
        torch._logging.set_logs()
        for lg, (handlers, propagate) in zip(loggers, saved, strict=True):
            lg.handlers, lg.propagate = handlers, propagate


torch._dynamo.reset()
with dynamo_log() as messages:
    explanation = torch._dynamo.explain(train_step)(x, w)
reasons = [str(b.reason).splitlines()[0] for b in explanation.break_reasons]
print("graphs:", explanation.graph_count, "| graph breaks:", explanation.graph_break_count)
print("reason:", reasons[0])
assert explanation.graph_count == 2 and explanation.graph_break_count == 1
assert "item()" in reasons[0] or reasons[0] == "Tensor.item"  # 2.4 to 2.7: "Tensor.item"

# %%
# One step, two graphs: the ``.item()`` call split it.
# While compiling, Dynamo also logged the break (``TORCH_LOGS="graph_breaks"``, here
# ``torch._logging.set_logs(graph_breaks=True)``, adds every break with its line of code); the
# first line of what it logged:

break_lines = [m for m in messages if "Graph break" in m]
print(break_lines[0].splitlines()[0] if break_lines else "(nothing logged)")
if torch.__version__ >= "2.13":
    assert any("item()" in m for m in break_lines)

# %%
# Why
# ---
#
# TorchDynamo, the front end of :func:`torch.compile`, reads the function's Python bytecode and
# records tensor operations in a graph, without running them.
# ``loss.item()`` asks for the value as a Python number, which exists only once the graph has
# run; ``print``, and other side effects Dynamo does not model, likewise need Python.
# **At such a line Dynamo ends the graph, compiles what it has, runs the line in Python, and
# resumes capturing in a second graph after it.**
# Nothing breaks and the results are right: the step returns the same value compiled or not.

compiled_step = torch.compile(train_step, backend="eager")
torch.testing.assert_close(compiled_step(x, w), train_step(x, w))
print("compiled step == eager step:", True)

# %%
# The cost is in what the compiler no longer sees: operations on both sides of the break cannot
# be fused, each graph is launched separately, and ``.item()`` makes the CPU wait until the GPU
# has computed the loss (see :ref:`item-and-tolist`).
# With several breaks in a model's ``forward``, little may be left of what compiling gained.
#
# ``print`` breaks the graph the same way:


def print_step(x, w):
    y = x @ w
    print("y:", tuple(y.shape))
    return y.relu().sum()


explained_print = torch._dynamo.explain(print_step)(x, w)
print("print: graph breaks:", explained_print.graph_break_count)
assert explained_print.graph_break_count == 1

# %%
# The fix
# -------
#
# **Keep what needs Python outside the compiled function: return the loss as a tensor and turn
# it into a number, to log it, after the call** (and only every few steps, since each ``.item()``
# waits for the GPU).


def train_step_fixed(x, w):
    y = x @ w
    loss = y.pow(2).mean()
    return loss + 0.01 * w.abs().sum(), loss.detach()


fixed = torch._dynamo.explain(train_step_fixed)(x, w)
print("graphs:", fixed.graph_count, "| graph breaks:", fixed.graph_break_count)
assert fixed.graph_count == 1 and fixed.graph_break_count == 0
objective, loss = torch.compile(train_step_fixed, backend="eager")(x, w)
print(f"loss {loss.item():.3f}")
assert f"loss {loss.item():.3f}" == logged[-1]

# %%
# **Make a break an error while you work on the code:** ``fullgraph=True`` refuses to split the
# function, and the error names the reason (its traceback, the line):

torch._dynamo.reset()
with dynamo_log(), expect_raises(torch._dynamo.exc.Unsupported, "print", show=False) as caught:
    torch.compile(print_step, backend="eager", fullgraph=True)(x, w)
print("Unsupported:", caught.message.splitlines()[0])
print(caught.message.splitlines()[1].strip() if "\n" in caught.message else "")

# %%
# For ``.item()``, ``torch._dynamo.config.capture_scalar_outputs = True`` lets Dynamo keep the
# number in the graph as a symbolic value instead of breaking.
# On this release, ``fullgraph=True`` does that by itself: the step with ``.item()`` compiles into
# one graph instead of failing (the number is formatted into the log line once the graph ran):

torch._dynamo.reset()
logged.clear()
try:
    with dynamo_log():
        torch.compile(train_step, backend="eager", fullgraph=True)(x, w)
    print("fullgraph=True with .item(): compiled, logged", logged)
except torch._dynamo.exc.Unsupported as error:
    print("fullgraph=True with .item(): Unsupported:", str(error).splitlines()[0])
if torch.__version__ >= "2.12":  # see "Changed in PyTorch 2.10" and "2.12" below
    assert logged == [f"loss {loss.item():.3f}"]

# %%
# Changed in PyTorch 2.10: fullgraph=True keeps .item() in the graph
# ------------------------------------------------------------------
#
# Up to PyTorch 2.9, ``fullgraph=True`` did not change how Dynamo treats ``.item()``: with
# ``capture_scalar_outputs=False`` it is a graph break, so the step above raised ``Unsupported``,
# worded "Tensor.item" up to 2.7 and "Unsupported Tensor.item() call with
# capture_scalar_outputs=False" in 2.8 and 2.9.
# Since 2.10, ``fullgraph=True`` turns ``capture_scalar_outputs`` on for what it compiles
# (`pull request #163121 <https://github.com/pytorch/pytorch/pull/163121>`_, "Turn on
# capture_scalar_outputs when fullgraph=True"): the number stays in the graph as a symbol.
# In 2.10 and 2.11 formatting that symbol into the log line (``f"{loss.item():.3f}"``) still needs
# its value while tracing, and the step raised a ``UserError`` (a subclass of ``Unsupported``):
# "Could not guard on data-dependent expression"; since 2.12 the formatted line is produced after
# the graph ran, as printed above.
# **The same fullgraph=True step fails or compiles depending on the release: on 2.11 and older,
# move the .item() and the logging out of the compiled function, as in the fix above.**

print("fullgraph=True compiled the step with .item():", bool(logged))
assert bool(logged) == (torch.__version__ >= "2.12")

# %%
# NumPy calls on tensors, another classic cause of breaks, are traced into the graph by recent
# releases:

import numpy as np  # noqa: E402


def numpy_step(x, w):
    y = x @ w
    return torch.from_numpy(np.tanh(y.numpy())).sum()


explained_numpy = torch._dynamo.explain(numpy_step)(x.cpu(), w.cpu())  # .numpy() needs the CPU
print("NumPy: graph breaks:", explained_numpy.graph_break_count)
assert explained_numpy.graph_break_count == 0
torch._dynamo.reset()

# %%
# A real-world report
# -------------------
#
# In `physical-ai-studio pull request 877
# <https://github.com/open-edge-platform/physical-ai-studio/pull/877>`_, every compiled training
# step of several robot-learning policies hit a graph break: each policy's loss function, called
# from the compiled ``forward``, turned its losses into Python floats with ``.item()``, and Dynamo
# reported the break with the hint to set ``capture_scalar_outputs``.
# The fix was the one above: return the detached loss tensors and let the logging code, outside
# the compiled function, convert them.
#
# Detectors
# ---------
#
# The static checker's opt-in rule ``TP120`` (``--enable TP120``, see :doc:`/detectors`) finds
# ``.item()``, ``.tolist()`` and ``print`` inside a function decorated with ``@torch.compile`` or
# passed to ``torch.compile`` in the same file, as on this page. It is opt-in until it has
# findings on real code to measure.
#
# Takeaway
# --------
#
# **Every .item(), print or other Python-only line inside a compiled function splits it into
# separate graphs, silently: count the breaks with torch._dynamo.explain or
# TORCH_LOGS="graph_breaks", use fullgraph=True to find them, and keep logging and Python numbers
# outside the compiled code.**
