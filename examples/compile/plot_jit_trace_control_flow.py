"""
.. _jit-trace-control-flow:

``torch.jit.trace`` records one branch
======================================

:func:`torch.jit.trace` runs the model once on an example input and records the tensor
operations that ran.
An ``if`` on a tensor's values, or a loop over ``range(x.shape[1])``, is Python, not a tensor
operation: the trace keeps only the branch that the example took and exactly as many loop steps
as the example had.
The traced model then computes that same branch and that same number of steps for every input,
with no error; the only sign is a ``TracerWarning`` while tracing, and for the loop not even
that.

.. admonition:: What you will learn

   * what a trace records, and why Python control flow on tensor values or sizes becomes a
     constant;
   * how to see it (the ``TracerWarning``, the traced ``code``) and catch it when tracing
     (``check_inputs``);
   * the fixes: the choice written as a tensor operation (:func:`torch.where`), a second example
     input in ``check_inputs``, or a compiler that keeps the control flow.

.. admonition:: Prerequisites

   :ref:`export-static-batch` (what an exported program records from its example inputs).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A model normalises its input itself, so that callers may pass raw pixels (0 to 255) or pixels
# already scaled to [0, 1]: it divides by 255 when the largest value is above 1.
# It is traced for deployment with an example batch of scaled pixels:
import warnings

import torch
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(6, 3)

    def forward(self, images):
        if images.max() > 1:  # raw pixels: scale them to [0, 1]
            images = images / 255
        return self.head(images)


def trace(module, example, **options):
    """torch.jit.trace, with this release's deprecation warning (if any) kept off the page."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated", FutureWarning)  # 2.14
        return torch.jit.trace(module, example, **options)


model = Classifier().to(device).eval()
scaled = torch.rand(2, 6, device=device)
raw = torch.randint(0, 256, (2, 6), device=device).float()
with expect_warns(torch.jit.TracerWarning, "Python boolean", show=False) as caught:
    traced = trace(model, (scaled,))
print(f"TracerWarning: {caught.message}")

difference = (traced(raw) - model(raw)).abs().max().item()
print(f"scaled pixels: traced == eager: {torch.equal(traced(scaled), model(scaled))}")
print(f"raw pixels: largest difference traced - eager: {difference:.1f}")
assert torch.equal(traced(scaled), model(scaled)) and difference > 10

# %%
# On the kind of input it was traced with, the traced model agrees with the model; on raw pixels
# it is far off, and nothing fails.
#
# Why
# ---
#
# A trace is a recording: :func:`torch.jit.trace` calls ``forward`` on the example, and every
# tensor operation that runs is appended to a graph.
# ``images.max() > 1`` is a tensor, but ``if`` needs a Python ``bool``: the tracer converts it,
# gets ``False`` for the example, and cannot record why.
# **The graph holds only the operations that ran for the example: the division by 255 is not in
# it, so the traced model never divides, whatever it is given.**
# The traced model's code shows it (the ``head`` call is all there is):

print(traced.code)
assert "div" not in traced.code

# %%
# The ``TracerWarning`` above ("might cause the trace to be incorrect") is printed once per such
# conversion, among the many other lines of an export script, and says nothing about whether the
# trace is in fact wrong; many users silence it.
#
# A loop over a size: no warning at all
# -------------------------------------
#
# Sizes are recorded as sizes when they flow into tensor operations (``x.view(x.shape[0], -1)``
# follows the batch size).
# A Python loop is different: ``for t in range(x.shape[1])`` runs as many times as the example
# has steps, and the trace holds that many copies of the loop's body.
# A small recurrent cell traced on sequences of 5 steps reads only the first 5 steps of any longer
# sequence:


class StepLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 4, device=x.device)
        for t in range(x.shape[1]):  # one step per time step
            h = torch.tanh(self.cell(x[:, t]) + h)
        return h


loop = StepLoop().to(device).eval()
with warnings.catch_warnings(record=True) as tracer_warnings:
    warnings.simplefilter("always")
    traced_loop = trace(loop, (torch.randn(2, 5, 4, device=device),))
tracer_warnings = [w for w in tracer_warnings if issubclass(w.category, torch.jit.TracerWarning)]
long_sequence = torch.randn(2, 8, 4, device=device)
steps = traced_loop.code.count("torch.tanh")
print(f"TracerWarnings: {len(tracer_warnings)} | loop steps in the trace: {steps}")
print(
    "traced(8 steps) == eager(first 5 steps):",
    torch.equal(traced_loop(long_sequence), loop(long_sequence[:, :5])),
)
assert not tracer_warnings and steps == 5
assert torch.equal(traced_loop(long_sequence), loop(long_sequence[:, :5]))
assert not torch.allclose(traced_loop(long_sequence), loop(long_sequence))

# %%
# The same holds for any Python value computed from a tensor while tracing: the trace keeps the
# value it had for the example.
#
# The fix
# -------
#
# **Catch it when tracing: give** ``check_inputs`` **an example that takes the other path.**
# :func:`torch.jit.trace` traces each of them again and compares the graphs; a different branch
# or a different number of steps gives a different graph, and tracing fails:


def check_fails(module, example, other):
    """Trace ``module`` with ``check_inputs=[other]``; the TracingCheckError's message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # shown above already
        with expect_raises(
            torch.jit.TracingCheckError, "Graphs differed across invocations", show=False
        ) as failed:
            trace(module, example, check_inputs=[other])
    return failed.message


branch_check = check_fails(model, (scaled,), (raw,))
print("TracingCheckError:", " ".join(branch_check.split()[:9]))
loop_check = check_fails(loop, (torch.randn(2, 5, 4, device=device),), (long_sequence,))
print("the loop, checked with 8 steps:", " ".join(loop_check.split()[:9]))
assert "aten::div" in branch_check

# %%
# The message goes on with a diff of the two graphs (for the model, ``aten::div`` is in one of
# them only).
#
# **Then remove the Python control flow that depends on the input.**
# A choice between two results can be a tensor operation, :func:`torch.where`, which the trace
# records with both branches; the condition is computed for each input:


class WhereClassifier(Classifier):
    def forward(self, images):
        images = torch.where(images.max() > 1, images / 255, images)
        return self.head(images)


where_model = WhereClassifier().to(device).eval()
where_model.load_state_dict(model.state_dict())
traced_where = trace(where_model, (scaled,), check_inputs=[(raw,)])
for name, images in (("scaled", scaled), ("raw", raw)):
    torch.testing.assert_close(traced_where(images), model(images))
    print(f"{name} pixels: traced torch.where model == eager model: True")

# %%
# A loop whose length is the input's can stay a loop only in a compiler that keeps Python's
# control flow: :func:`torch.jit.script` compiles the source of ``forward`` rather than one run
# of it, loops and branches included (TorchScript, like tracing, is deprecated in favour of
# :func:`torch.export.export`, and this release warns when it is used: see "Changed in PyTorch
# 2.10" below):

with warnings.catch_warnings(record=True) as shown:
    warnings.simplefilter("always")
    scripted_loop = torch.jit.script(loop)
deprecation = [
    (w.category.__name__, str(w.message))
    for w in shown
    if w.category in (DeprecationWarning, FutureWarning) and "is deprecated" in str(w.message)
]
for category, message in deprecation[:1]:
    print(f"{category}: {message}")
torch.testing.assert_close(scripted_loop(long_sequence), loop(long_sequence))
print("scripted(8 steps) == eager(8 steps): True")

# %%
# :func:`torch.export.export` records one run too, but it does not convert a tensor to a Python
# ``bool`` silently: a branch on data is an error there (``torch.cond`` expresses one), and a
# size it specialises is checked on every call (see :ref:`export-static-batch`).
# Whichever tool, **compare the compiled model with the eager one on inputs unlike the
# example**: other value ranges, other lengths, other batch sizes.
#
# Changed in PyTorch 2.10: torch.jit.script warns that it is deprecated
# ---------------------------------------------------------------------
#
# Up to PyTorch 2.9, ``torch.jit.script`` and ``torch.jit.trace`` said nothing of their
# deprecation when called.
# Since 2.10 they warn, with a ``DeprecationWarning``: "`torch.jit.script` is deprecated. Please
# switch to `torch.compile` or `torch.export`." (a ``warnings.warn`` in ``torch/jit/_script.py``
# since `PyTorch 2.10 <https://github.com/pytorch/pytorch/releases/tag/v2.10.0>`_).
# Python hides a ``DeprecationWarning`` unless it comes from ``__main__`` or a filter (pytest's,
# for one) shows it, so most scripts that call TorchScript from a library still print nothing.
# **On 2.10 to 2.13 the warning shows up in test runs rather than in training logs: a test suite
# that turns warnings into errors fails at the first torch.jit.script.**
#
# Changed in PyTorch 2.14: the warning is a FutureWarning, shown by default
# -------------------------------------------------------------------------
#
# 2.14 warns with a ``FutureWarning``, which Python shows by default, with the same text
# (`pull request #189914 <https://github.com/pytorch/pytorch/pull/189914>`_, "Keep TorchScript out
# of import paths and make its deprecation warnings visible").
# **From 2.14 every torch.jit.script or torch.jit.trace prints the warning; a filter written for
# DeprecationWarning no longer silences it.**

print("torch.jit.script warned:", [category for category, _ in deprecation] or "nothing")
expected = "FutureWarning" if torch.__version__ >= "2.14" else "DeprecationWarning"
assert [c for c, _ in deprecation] == ([expected] if torch.__version__ >= "2.10" else [])

# %%
# A real-world report
# -------------------
#
# In `RealBasicVSR issue 70 <https://github.com/ckkelvinchan/RealBasicVSR/issues/70>`_, a user
# traced a video super-resolution model and found that the traced module gave wrong results for
# the same input.
# Among the warnings printed while tracing was a ``TracerWarning`` on a line that compares the
# mean of a tensor with a threshold in an ``if``, the pattern of this page.
# In `PyTorch issue 22485 <https://github.com/pytorch/pytorch/issues/22485>`_, a detection
# model compared ``scores.shape[0]`` with a limit in an ``if``; its author noted that the value
# would be frozen in the traced model although the number of scores changes from image to
# image.
#
# Takeaway
# --------
#
# **A trace is one run: Python if statements and loops on tensor values or sizes are decided
# once, for the example input, and the traced model repeats that decision for every input;
# write such choices as tensor operations, trace with check_inputs that take the other paths,
# and compare traced and eager outputs on unlike inputs.**
