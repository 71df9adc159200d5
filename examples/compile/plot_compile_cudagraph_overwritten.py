"""
.. _compile-cudagraph-overwritten:

``mode="reduce-overhead"`` reuses the memory of its outputs
===========================================================

``torch.compile(model, mode="reduce-overhead")`` makes small models and generation loops much
faster on the GPU by replaying CUDA graphs.
The code that worked without it then fails at an unexpected line, often only at the end of an
evaluation loop that appended each batch's output to a list: ``RuntimeError: Error: accessing
tensor output of CUDAGraphs that has been overwritten by a subsequent run``.
The same code runs without complaint on the CPU.

.. admonition:: What you will learn

   * why a CUDA graph writes every call's output into the same memory, and why ``torch.compile``
     then invalidates the output of an earlier call;
   * the fix: ``.clone()`` (or ``.cpu()``, ``.item()``) what you keep past the next call;
   * what :func:`torch.compiler.cudagraph_mark_step_begin` does, and what it does not.

.. admonition:: Prerequisites

   :ref:`compile-graph-breaks` (what :func:`torch.compile` captures and how it runs it).

The CUDA graphs themselves run only on a CUDA device: those parts of the page show their
recording, or "not run" where none exists.
On the CPU the page shows what ``mode="reduce-overhead"`` does with CPU tensors, and the buffer
reuse with a small model of a replay, labelled as such.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# An evaluation loop runs a compiled classifier on four batches, keeps each batch's logits in a
# list and concatenates them at the end.
# On a CUDA device, with ``mode="reduce-overhead"``:
import copy
import logging

import torch
from torch import nn

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

net = nn.Linear(4, 3).to(device).eval()
batches = torch.randn(4, 8, 4, device=device)  # 4 batches of 8 samples
with torch.no_grad():
    eager = torch.cat([net(batch) for batch in batches])

with cuda_section(device, "the overwritten output") as live:
    if live:
        compiled = torch.compile(net, mode="reduce-overhead")
        with torch.no_grad():
            outputs = [compiled(batch) for batch in batches]
            with expect_raises(RuntimeError, "overwritten by a subsequent run", show=False) as e:
                torch.cat(outputs)
        print("RuntimeError:", e.message.split(" Stack trace:")[0])
        print("...", e.message.split(". ")[-1].strip())
        del outputs

# %%
# The output above leaves out the middle of the message.
# In PyTorch's source (``format_dealloc_msg`` in ``torch/_inductor/cudagraph_trees.py``), the
# first sentence is followed by ``Stack trace:`` and the stack trace that compilation recorded
# for the model code that computed the tensor (or "[Could not find stack trace]"), not the line
# that kept it.
# The Python traceback points at the line that read the tensor, here ``torch.cat``.
#
# On the CPU the same loop raises nothing: CUDA graphs exist only for CUDA tensors, and
# ``torch.compile`` leaves them out.
# Dynamo's ``backend="cudagraphs"`` (CUDA graphs without generated kernels, the same machinery
# as ``mode="reduce-overhead"``, whose Inductor would first generate and compile C++ code, too
# slow for this page) shows it on CPU copies of the model and the batches, and says why:

cpu_net, cpu_batches = copy.deepcopy(net).cpu(), batches.cpu()
import torch._dynamo.backends.cudagraphs  # noqa: E402, F401  (creates the loggers read below)


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


collect = Collect()
names = [n for n in logging.root.manager.loggerDict if "cudagraph" in n]
loggers = [logging.getLogger(n) for n in names]
saved = [(lg.handlers, lg.propagate) for lg in loggers]
for lg in loggers:
    lg.handlers, lg.propagate = [collect], False

torch._dynamo.reset()
torch._dynamo.utils.counters.clear()
try:
    cpu_compiled = torch.compile(cpu_net, backend="cudagraphs")
    with torch.no_grad():
        cpu_outputs = [cpu_compiled(batch) for batch in cpu_batches]
finally:
    for lg, (handlers, propagate) in zip(loggers, saved, strict=True):
        lg.handlers, lg.propagate = handlers, propagate

skips = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]
# the reason, without the stack of where the input came from (". Found from : …", which 2.4 to 2.9
# append to it)
logged = collect.messages[0].split(". Found from :")[0] if collect.messages else "(nothing)"
print("logged:", logged)
print("CUDA graphs skipped:", skips)
print("distinct storages of the 4 outputs:", len({t.data_ptr() for t in cpu_outputs}))
torch.testing.assert_close(torch.cat(cpu_outputs), eager.cpu())
print("torch.cat of the kept outputs == eager: True")
assert len({t.data_ptr() for t in cpu_outputs}) == 4
if torch.__version__ >= "2.13":
    assert skips == 1 and "cpu device" in collect.messages[0]

# %%
# Each call returned a tensor of its own, so nothing was overwritten: code tested on the CPU (or
# on the GPU without ``mode="reduce-overhead"``) shows no sign of the problem.
#
# Why
# ---
#
# ``mode="reduce-overhead"`` is Inductor with CUDA graphs switched on:

print(torch._inductor.list_mode_options("reduce-overhead"))
assert torch._inductor.list_mode_options("reduce-overhead") == {"triton.cudagraphs": True}

# %%
# A CUDA graph records the kernels of one call once, with the memory addresses they read and
# write, and then *replays* them with a single launch.
# The addresses are part of the recording: **every replay writes its output into the same
# memory**.
# ``torch.compile`` manages that memory with "CUDAGraph Trees": the outputs live in a memory
# pool of the graphs, and a new call (in inference, each call of the compiled function; see
# below for the training case) reuses the pool.
# An output of an earlier call that you still hold would then silently change under you, so
# ``torch.compile`` invalidates it before the pool is reused: its storage is freed, and any
# access raises the error above.
#
# What the silent version would look like, modelled on the CPU. **This is a hand-written model
# of a replay, not PyTorch's code**: the same computation, written each time into the one output
# buffer allocated when the graph was recorded (what a replay of a raw CUDA graph does):

static_output = torch.empty(8, 3, device=device)


def replay(batch):
    """A model of a CUDA graph replay: the result goes into the recorded output buffer."""
    with torch.no_grad():
        return static_output.copy_(net(batch))


with torch.no_grad():
    expected = [net(batch) for batch in batches]
kept = [replay(batch) for batch in batches]
print("distinct storages of the 4 kept outputs:", len({t.data_ptr() for t in kept}))
print("kept[0] == batch 0's logits:", torch.equal(kept[0], expected[0]))
print("kept[0] == batch 3's logits:", torch.equal(kept[0], expected[3]))
assert len({t.data_ptr() for t in kept}) == 1
assert not torch.equal(kept[0], expected[0]) and torch.equal(kept[0], expected[3])

# %%
# All four "outputs" are one tensor, and hold the last batch's logits.
# With ``mode="reduce-overhead"`` you get the error instead of these wrong numbers.
#
# The fix
# -------
#
# **Copy what you keep past the next call out of the graph's memory, outside the compiled
# function.**
# ``.clone()`` it, move it with ``.cpu()``, or turn it into a number with ``.item()``.
# In the model of a replay:

kept = [replay(batch).clone() for batch in batches]
print("distinct storages:", len({t.data_ptr() for t in kept}))
print("each kept output == its batch's logits:", all(map(torch.equal, kept, expected)))
assert len({t.data_ptr() for t in kept}) == 4 and all(map(torch.equal, kept, expected))

# %%
# And with ``mode="reduce-overhead"`` on a CUDA device:

with cuda_section(device, "the fix: clone what you keep") as live:
    if live:
        with torch.no_grad():
            kept = [compiled(batch).clone() for batch in batches]
        torch.testing.assert_close(torch.cat(kept), eager)
        print("torch.cat of the cloned outputs == eager: True")

# %%
# The copy costs one memory copy per output, small next to what the graph saves; an output
# you use at once (a metric you update, a loss you call ``backward`` on) needs none.
#
# What ``cudagraph_mark_step_begin`` does
# ---------------------------------------
#
# The error message also suggests :func:`torch.compiler.cudagraph_mark_step_begin`.
# It does not keep an output alive: it tells the CUDAGraph Trees where a step (an iteration of
# training or inference) begins.
# Without it, each call of the compiled function starts a new step, unless outputs of the last
# one still wait for their ``backward``.
# **Once you call it, only your calls start a new step, and the outputs of the compiled calls
# inside one step stay valid until the next mark.**
# That is what you need to call a compiled function twice in one step; outputs kept past the
# next mark still need ``.clone()``.
# It is a plain function, callable on any device (it only moves a counter):

print("cudagraph_mark_step_begin() returned:", torch.compiler.cudagraph_mark_step_begin())

with cuda_section(device, "two calls in one step") as live:
    if live:
        with torch.no_grad():
            torch.compiler.cudagraph_mark_step_begin()
            first, second = compiled(batches[0]), compiled(batches[1])
            torch.testing.assert_close(torch.cat([first, second]), eager[:16])
            print("2 calls after one mark, torch.cat of both outputs == eager: True")
            torch.compiler.cudagraph_mark_step_begin()
            third = compiled(batches[2])
            with expect_raises(RuntimeError, "overwritten by a subsequent run", show=False):
                torch.cat([first, third])
            print("after the next mark: the first output is overwritten")
        del first, second, third
torch._dynamo.reset()

# %%
# A real-world report
# -------------------
#
# In `gpt-fast issue 232 <https://github.com/meta-pytorch/gpt-fast/issues/232>`_, the
# mixture-of-experts generation example failed with this error when compiled: each step
# returned the sampled next token from the compiled ``decode_one_token``, and the loop kept
# that token after the next step had run.
# A reader resolved it by cloning the returned token, as in the fix above; torchtune's
# generation code needed the same ``.clone()`` (`torchtune pull request 1371
# <https://github.com/meta-pytorch/torchtune/pull/1371>`_), where its author could not make
# ``cudagraph_mark_step_begin()`` solve it instead.
# `PyTorch issue 170604 <https://github.com/pytorch/pytorch/issues/170604>`_ shows why: calling
# it before *each* call starts a new step at each call, and the earlier output is overwritten
# all the same.
# And in `PyTorch issue 144386 <https://github.com/pytorch/pytorch/issues/144386>`_, readers
# ran the documentation's example of this error on CPU tensors and saw no error at all, as in
# the CPU part above.
#
# Takeaway
# --------
#
# **With mode="reduce-overhead" a compiled call's output lives in memory that the next call
# reuses: .clone() (or .cpu(), .item()) every output you keep past the next call, and use
# cudagraph_mark_step_begin() only to mark where a step begins, not to keep outputs.**
