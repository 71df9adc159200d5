"""
.. _export-static-batch:

An exported model stuck at its example's batch size
===================================================

:func:`torch.export.export` runs the model once on the example inputs it is given and records
what happened, shapes included.
A model exported with the usual single dummy image, ``torch.randn(1, 3, H, W)``, accepts batches
of exactly one image: the deployment's first batch of 4 fails with ``Guard failed:
x.size()[0] == 1``.
Declaring the batch dimension dynamic does not help while the example batch is 1: with a named
``Dim`` the export itself fails ("specialized it to be a constant (1)"), and with ``Dim.AUTO``
the export succeeds and the dimension is static anyway.

.. admonition:: What you will learn

   * why every size of an example input is a constant of the exported program unless
     ``dynamic_shapes`` says otherwise;
   * why a size of 1 (or 0) in the example input stays a constant even when declared dynamic
     (the 0/1 specialization);
   * the fix: an example batch of 2 or more, the batch dimension declared dynamic, and the
     exported program tested on other batch sizes.

.. admonition:: Prerequisites

   Calling a model on a batch; what an example (dummy) input is for when exporting a model.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small image classifier is exported with one dummy image as its example input, as in many
# deployment scripts, and the exported program is then called on a batch of 4 images:
import logging

import torch
from torch import nn
from torch.export import Dim

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        features = self.conv(x).relu().mean(dim=(2, 3))
        return self.head(features)


model = TinyClassifier().to(device).eval()
dummy = torch.randn(1, 3, 16, 16, device=device)
batch = torch.randn(4, 3, 16, 16, device=device)


def input_shape(exported):
    """The shape the exported program recorded for its (only) user input."""
    name = exported.graph_signature.user_inputs[0]
    node = next(n for n in exported.graph.nodes if n.name == name)
    return tuple(node.meta["val"].shape)


exported = torch.export.export(model, (dummy,))
print("recorded input shape:", input_shape(exported))
assert input_shape(exported) == (1, 3, 16, 16)
print("batch of 1:", tuple(exported.module()(dummy).shape))
with expect_raises((AssertionError, RuntimeError), r"size\(\)\[0\] == 1|to be equal to 1, but"):
    exported.module()(batch)

# %%
# The eager model handles the batch of 4; the exported one does not:

print("eager model, batch of 4:", tuple(model(batch).shape))
assert model(batch).shape == (4, 5)

# %%
# Why
# ---
#
# :func:`torch.export.export` does not keep the Python code of ``forward``: it traces one call
# on the example inputs and records the operations in a graph, together with the assumptions
# the graph is valid under.
# **Unless** ``dynamic_shapes`` **says otherwise, every size of every example input is one of
# those assumptions: the exported program is specialised to a batch of 1, and checks it on every
# call** (the guard ``x.size()[0] == 1`` above; releases before this check was generated raise
# a ``RuntimeError`` that says "Expected input at ... to be equal to 1").
#
# The natural fix, declaring the batch dimension dynamic, fails while the example batch is 1:

with expect_raises(torch._dynamo.exc.UserError, r"\(batch\)!(.|\n)*constant \(1\)"):
    torch.export.export(model, (dummy,), dynamic_shapes={"x": {0: Dim("batch")}})

# %%
# This is the *0/1 specialization*: while tracing, a size of 0 or 1 is always treated as the
# constant it is, because so much depends on it (a size of 1 broadcasts against any other size,
# a size of 0 makes a tensor empty), and a graph traced with it would not be valid for the other
# sizes.
# A dimension declared dynamic with a named ``Dim`` must stay symbolic, so the export stops and
# suggests ``batch = 1``, the opposite of what was meant.
#
# ``Dim.AUTO`` (PyTorch 2.5 and later,
# `pull request #134484 <https://github.com/pytorch/pytorch/pull/134484>`_) lets export decide
# which dimensions are dynamic.
# With an example batch of 1 it decides for a static batch, says so only in a log message, and
# the exported program fails on the batch of 4 exactly like the one without ``dynamic_shapes``:

export_log = []
handler = logging.Handler()
handler.emit = lambda record: export_log.append(record.getMessage())
export_logger = logging.getLogger("torch._export.non_strict_utils")  # where 2.13 logs it
saved = export_logger.handlers, export_logger.propagate
export_logger.handlers, export_logger.propagate = [handler], False  # to this list, not stderr
if hasattr(Dim, "AUTO"):
    auto = torch.export.export(model, (dummy,), dynamic_shapes={"x": {0: Dim.AUTO}})
    print("recorded input shape with Dim.AUTO:", input_shape(auto))
    assert input_shape(auto) == (1, 3, 16, 16)
    with expect_raises((AssertionError, RuntimeError), r"size\(\)\[0\] == 1|to be equal to 1, but"):
        auto.module()(batch)
else:  # PyTorch 2.4
    print("this release has no Dim.AUTO")
export_logger.handlers, export_logger.propagate = saved
specialized = [line for line in export_log if "specialized" in line]
if specialized:
    print("logged:", specialized[0])
if torch.__version__ >= "2.13":
    assert "Dim.AUTO was specified along with a sample input with hint = 1" in specialized[0]

# %%
# The fix
# -------
#
# **Export with an example batch of 2 or more, declare the batch dimension dynamic, and test the
# exported program on batch sizes other than the example's.**
# With a batch of 2, nothing in the trace depends on the batch size being 2, so the batch
# dimension stays symbolic; at run time, batches of 1 are accepted too.

example = torch.randn(2, 3, 16, 16, device=device)
fixed = torch.export.export(model, (example,), dynamic_shapes={"x": {0: Dim("batch")}})
print("recorded input shape:", input_shape(fixed))
assert str(input_shape(fixed)[0]).startswith("s")  # a symbol, not a number
for n in (4, 3, 1):
    images = torch.randn(n, 3, 16, 16, device=device)
    out = fixed.module()(images)
    print(f"batch of {n}: output {tuple(out.shape)}")
    torch.testing.assert_close(out, model(images))

# %%
# The dimension's name is a symbol of the graph (its number is PyTorch's choice); the outputs
# equal the eager model's for each batch size.
#
# Two details make this fix complete:
#
# * a dimension can only be dynamic if the code lets it be: ``forward`` code that turns the batch
#   size into a Python number and computes with it (``x.view(4, -1)``, or a branch on
#   ``x.shape[0]``) specialises it again, and export then says which line did;
# * the dynamo-based ONNX exporter (``torch.onnx.export(..., dynamo=True)``) captures the model
#   with :func:`torch.export.export` and takes the same ``dynamic_shapes``, so the same example
#   batch rule applies to it (ONNX export is not run on this page: the ``onnx`` package is not
#   part of this build).

# %%
# A real-world report
# -------------------
#
# In `PyTorch issue 133653 <https://github.com/pytorch/pytorch/issues/133653>`_, exporting a
# ResNet-50 with a dynamic batch dimension failed with "Constraints violated (batch)!": the
# example input was a single image, and the error said that the batch "was inferred to be a
# constant (1)", suggesting ``batch = 1``, the static export the user was trying to avoid.
# In `PyTorch issue 157621 <https://github.com/pytorch/pytorch/issues/157621>`_, a ResNet
# exported to ONNX with a dynamic batch came out with a fixed batch size; a maintainer pointed
# to the 0/1 specialization and advised an example size of at least 2, and the reporter
# confirmed that an example batch of 2 gave a model that matched PyTorch for batches of 1 to 10.
#
# Detectors
# ---------
#
# The static checker's opt-in rule ``TP122`` (``--enable TP122``, see :doc:`/detectors`) finds a
# call of ``torch.export.export`` whose ``dynamic_shapes`` make the batch dynamic while the example
# input is built with a batch of 1 (``torch.randn(1, …)``), as on this page. It is opt-in until it
# has findings on real code to measure.
#
# Takeaway
# --------
#
# **An exported model accepts only the sizes of its example inputs unless you declare them
# dynamic, and a size of 1 in the example input cannot be made dynamic: export with a batch of
# 2 or more, pass dynamic_shapes, and call the exported program on other batch sizes before
# shipping it.**
