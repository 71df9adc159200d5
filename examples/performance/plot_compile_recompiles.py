"""
.. _compile-recompiles:

``torch.compile`` recompiling
=============================

:func:`torch.compile` traces a function or a module once and reuses the result while the
assumptions it made still hold.
A plain Python number on the module that changes every step, such as a step counter, breaks one
of those assumptions at every call: the module is compiled again and again, each time paying the
full compilation cost, until PyTorch gives up after a fixed number of compilations and runs the
rest of the training uncompiled.
Nothing fails; the training is just slower than without ``torch.compile``.

.. admonition:: What you will learn

   * what guards are, and why an integer attribute of a module makes a compiled module recompile;
   * how to count compilations and see the reason of each (``TORCH_LOGS="recompiles"``);
   * what happens at the recompile limit, and the fixes: a tensor instead of a number,
     ``allow_unspec_int_on_nn_module``, ``dynamic=True`` and
     ``torch._dynamo.mark_dynamic``.

.. admonition:: Prerequisites

   :ref:`register-buffer` (the tensors a module keeps besides its parameters).

Every compilation on this page uses a backend that works like ``backend="eager"``: Dynamo
captures and guards the graph as usual, then the graph runs without generated code, so the page
needs no C++ compiler and the counts are those of any backend.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A layer scales its output by a warm-up factor that grows with the training step; the training
# loop sets ``model.step`` before each call.
# We compile it with a backend that counts how many graphs it is given, one per compilation:
import logging
import re
from contextlib import contextmanager

import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class WarmUpLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        return self.linear(x) * min(1.0, (self.step + 1) / 100)


def counting_backend(compilations):
    def backend(graph_module, example_inputs):
        compilations.append(graph_module)
        return graph_module.forward  # run the captured graph as it is, like backend="eager"

    return backend


@contextmanager
def dynamo_messages():
    """Collect the recompile reasons and the recompile-limit warning that Dynamo logs."""
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    loggers = [
        logging.getLogger("torch._dynamo.guards.__recompiles"),  # TORCH_LOGS="recompiles"
        logging.getLogger("torch._dynamo.convert_frame"),  # the recompile-limit warning
    ]
    saved = [(lg.propagate, lg.handlers) for lg in loggers]
    torch._logging.set_logs(recompiles=True)
    for lg in loggers:
        lg.handlers, lg.propagate = [handler], False  # to this list, not to stderr
    try:
        yield messages
    finally:
        torch._logging.set_logs()
        for lg, (propagate, handlers) in zip(loggers, saved, strict=True):
            lg.propagate, lg.handlers = propagate, handlers


torch._dynamo.reset()
model = WarmUpLayer().to(device)
x = torch.randn(4, 8, device=device)
compilations = []
compiled = torch.compile(model, backend=counting_backend(compilations))
with dynamo_messages() as messages:
    for step in range(12):
        model.step = step
        out = compiled(x)
print("compilations in 12 steps:", len(compilations))
if torch.__version__ >= "2.7":
    limit = torch._dynamo.config.recompile_limit
else:  # the name before PyTorch 2.7, see "Changed in PyTorch 2.7" below
    limit = torch._dynamo.config.cache_size_limit
if torch.__version__ >= "2.8":
    assert len(compilations) == limit == 8
else:  # see "Changed in PyTorch 2.8" below (measured: 2 on PyTorch 2.5 to 2.7, 4 on 2.4)
    assert len(compilations) == (2 if torch.__version__ >= "2.5" else 4) and limit == 8

# %%
# Eight compilations in twelve calls, then none, although the last four steps had new values
# too (before PyTorch 2.8, the same loop compiled twice: see "Changed in PyTorch 2.8" below).
# Dynamo logged why it wanted to compile again at each new value (``TORCH_LOGS="recompiles"``
# prints the same to the terminal): 7 recompilations, and an eighth attempt, refused.
# The first two reasons:


def newest_reason(message):
    """The guard that failed first in a 'Recompiling' message: the line after its header,
    without the frame's number (``0/1:``), the source line (``#``) and the hint."""
    failure = re.search(r"^\s*- (?:\d+/\d+: )?(.+?)\s*(?:#.*|\(HINT.*)?$", message, re.M)
    return failure[1]


reasons = [newest_reason(m) for m in messages if "Recompiling" in m]
print(reasons[:2], f"… {len(reasons)} attempts to recompile")
if torch.__version__ >= "2.8":
    hint = re.search(r"HINT: (.*)\)", messages[0])[1]
    print("hint:", hint)
    assert reasons[:2] == ["self.step == 0", "self.step == 1"] and len(reasons) == 8
    assert "integer attributes of the nn.Module to be static" in hint
else:  # PyTorch 2.7 and older: no hint, and fewer recompilations
    assert len(reasons) == len(compilations) - 1
    assert reasons[0] in ("self.step == 0", "L['self'].step == 0")

# %%
# Then the warning, once the limit was hit:

if torch.__version__ >= "2.8":
    limit_warning = next(m for m in messages if "hit config.recompile_limit" in m)
    print(limit_warning.splitlines()[0])
    print(re.split(r"#|\(HINT", limit_warning.splitlines()[2])[0].strip())
    assert "torch._dynamo hit config.recompile_limit (8)" in limit_warning
else:  # PyTorch 2.7 and older: the limit was not reached
    assert not any("hit config." in m for m in messages)

# %%
# Why
# ---
#
# A compiled graph comes with guards: checks that run before each call and say whether the
# assumptions made while tracing still hold.
# **torch.compile treats an integer attribute of a module as a constant, so the graph guards on
# its value (self.step == 0), and every new value fails the guard and compiles a new graph.**
# Each compilation is kept in a cache, and after ``torch._dynamo.config.recompile_limit``
# compilations of the same code (8 by default) Dynamo stops compiling it: a call that no cached
# graph fits, here every later step, runs the module's Python code uncompiled.
# The results stay right, which is why this goes unnoticed:

torch.testing.assert_close(out, model(x))
print("compiled output equals the uncompiled one:", True)

# %%
# Changed in PyTorch 2.7: ``cache_size_limit`` became ``recompile_limit``
# -----------------------------------------------------------------------
#
# Older code and messages call the limit ``cache_size_limit``; it is the same setting today
# (`pull request #143709 <https://github.com/pytorch/pytorch/pull/143709>`_ renamed it and kept
# the old name as an alias, first released in PyTorch 2.7).
# On PyTorch 2.6 and older, only ``cache_size_limit`` exists, and
# ``torch._dynamo.config.recompile_limit`` raises an ``AttributeError``.

print("cache_size_limit:", torch._dynamo.config.cache_size_limit)
if torch.__version__ >= "2.7":
    assert torch._dynamo.config.cache_size_limit == torch._dynamo.config.recompile_limit
else:
    assert not hasattr(torch._dynamo.config, "recompile_limit")

# %%
# Raising the limit only delays the problem: a counter takes a new value at every step.
#
# Changed in PyTorch 2.8: integer attributes of modules are static again
# ----------------------------------------------------------------------
#
# In PyTorch 2.5 to 2.7, Dynamo compiled ``forward`` once with ``self.step == 0``, and at the
# first new value compiled it again with ``self.step`` as a dynamic integer, which served every
# later step: 2 compilations in all, without a hint and without reaching the limit (PyTorch 2.4
# compiled 4 times).
# `Pull request #155099 <https://github.com/pytorch/pytorch/pull/155099>`_ made integer
# attributes of modules static unless ``allow_unspec_int_on_nn_module`` is set, and
# `pull request #154867 <https://github.com/pytorch/pytorch/pull/154867>`_ added the hint to the
# recompile reason; both were first released in PyTorch 2.8.
# **The same training loop that compiled twice on PyTorch 2.7 recompiles at every step up to the
# limit on 2.8 and later.**
#
# The fixes
# ---------
#
# **Keep a value that changes every step in a tensor**: tensors are inputs of the graph, not
# constants, so a new value needs no new graph.
# A buffer (see :ref:`register-buffer`) also moves with the module and is saved in its
# ``state_dict``:


class TensorStepLayer(WarmUpLayer):
    def __init__(self):
        super().__init__()
        del self.step
        self.register_buffer("step", torch.tensor(0.0))

    def forward(self, x):
        return self.linear(x) * torch.clamp((self.step + 1) / 100, max=1.0)


def count_compilations(module, call, steps=6, **compile_options):
    """Compile ``module``, run ``call(compiled_module, step)`` for each step, count compilations."""
    torch._dynamo.reset()
    found = []
    compiled_module = torch.compile(module, backend=counting_backend(found), **compile_options)
    outputs = [call(compiled_module, step) for step in range(steps)]
    return len(found), outputs


def set_tensor_step(compiled_module, step):
    tensor_model.step.fill_(step)
    return compiled_module(x)


tensor_model = TensorStepLayer().to(device)
tensor_model.load_state_dict(model.state_dict() | {"step": torch.tensor(0.0)})
with_tensor, tensor_outputs = count_compilations(tensor_model, set_tensor_step)
print("compilations with a tensor step:", with_tensor)
assert with_tensor == 1
model.step = len(tensor_outputs) - 1  # the same step, as an int attribute, uncompiled
torch.testing.assert_close(tensor_outputs[-1], model(x))

# %%
# When the number must stay a Python ``int``, a setting tells Dynamo to treat integer attributes
# of modules like other integers: after one compilation with the first value, the second one is
# compiled for any value (a *dynamic* integer), and that graph serves every later step.


def set_int_step(compiled_module, step):
    model.step = step
    return compiled_module(x)


if torch.__version__ >= "2.7":
    with torch._dynamo.config.patch(allow_unspec_int_on_nn_module=True):
        with_unspec, _ = count_compilations(model, set_int_step)
    print("compilations with allow_unspec_int_on_nn_module=True:", with_unspec)
    assert with_unspec == 2
else:  # PyTorch 2.6 and older have no such setting; their default was close to it (see above)
    with_unspec, _ = count_compilations(model, set_int_step)
    print("compilations without the setting, which this release does not have:", with_unspec)
    assert with_unspec == (2 if torch.__version__ >= "2.5" else 4)

# %%
# A number passed as an *argument* is already treated that way, and ``dynamic=True`` makes it
# dynamic from the first compilation:


class StepArgumentLayer(WarmUpLayer):
    def forward(self, x, step):
        return self.linear(x) * min(1.0, (step + 1) / 100)


argument_model = StepArgumentLayer().to(device)
as_argument, _ = count_compilations(argument_model, lambda m, step: m(x, step))
as_dynamic_argument, _ = count_compilations(
    argument_model, lambda m, step: m(x, step), dynamic=True
)
print(f"compilations with step as an argument: {as_argument} | dynamic=True: {as_dynamic_argument}")
if torch.__version__ >= "2.5":
    assert as_argument == 2 and as_dynamic_argument == 1
else:  # PyTorch 2.4 compiled more often here too (measured)
    assert as_argument == 4 and as_dynamic_argument == 3

# %%
# Changing shapes recompile too
# -----------------------------
#
# Shapes are guarded the same way.
# By default a size that changes is compiled twice: once as a constant, then once more as a
# dynamic size.
# ``torch._dynamo.mark_dynamic`` on the first input says in advance which dimension varies,
# for example the batch size of the last, smaller batch of an epoch:

batches = [torch.randn(n, 8, device=device) for n in (16, 16, 12, 16, 7)]
by_default, _ = count_compilations(model, lambda m, i: m(batches[i]), steps=len(batches))
torch._dynamo.mark_dynamic(batches[0], 0)
marked, _ = count_compilations(model, lambda m, i: m(batches[i]), steps=len(batches))
print("compilations for batch sizes 16, 16, 12, 16, 7:", by_default, "| with mark_dynamic:", marked)
assert by_default == 2 and marked == 1

# %%
# Switching between ``train()`` and ``eval()``
# --------------------------------------------
#
# The mode of every submodule is guarded too: dropout and batch normalization run other code in
# training and in evaluation, so each mode needs a graph of its own.
# A loop that validates after every epoch, in ``eval()`` mode under :class:`torch.no_grad`:

classifier = nn.Sequential(
    nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1)
).to(device)
torch._dynamo.reset()
mode_graphs = []
compiled_classifier = torch.compile(classifier, backend=counting_backend(mode_graphs))
graphs_after_each_epoch = []
with dynamo_messages() as mode_messages:
    for _epoch in range(3):
        compiled_classifier.train()
        for _ in range(3):
            compiled_classifier(x).sum().backward()
        compiled_classifier.eval()
        with torch.no_grad():
            for _ in range(2):
                compiled_classifier(x)
        graphs_after_each_epoch.append(len(mode_graphs))
mode_reasons = [newest_reason(m) for m in mode_messages if "Recompiling" in m]
print("graphs compiled by the end of each epoch:", graphs_after_each_epoch)
print("recompilations:", len(mode_reasons))
assert graphs_after_each_epoch == [2, 2, 2] and len(mode_reasons) == 1
if torch.__version__ >= "2.8":
    print("reason:", mode_reasons[0])
    assert "grad_mode" in mode_reasons[0] or ".training" in mode_reasons[0]

# %%
# **Each mode compiles once: the first validation pays a second compilation, and every later
# switch finds its graph in the cache.**
# That is expected, and cheap next to a training run; but the modes multiply with every other
# guard (each batch size, each value of an integer attribute), and all of them count towards
# ``recompile_limit``.
# The reason printed is the first guard that failed: grad mode, which changed together with the
# mode here (see :ref:`no-grad-evaluation`), or a submodule's ``training`` flag.
#
# The mode of the compiled wrapper
# --------------------------------
#
# :func:`torch.compile` returns a wrapper around the module (an ``OptimizedModule``); the module
# itself is its ``_orig_mod``, with the same parameters.
# ``train()`` and ``eval()`` on either one change the mode of the module, so the compiled code
# follows:

wrapper_modes = {}
classifier.eval()
wrapper_modes["classifier.eval()"] = (classifier.training, compiled_classifier.training)
compiled_classifier.train()
wrapper_modes["compiled.train()"] = (classifier.training, compiled_classifier.training)
compiled_classifier.eval()
wrapper_modes["compiled.eval()"] = (classifier.training, compiled_classifier.training)
print("the wrapped module:", compiled_classifier._orig_mod is classifier)
for call, (module_mode, wrapper_mode) in wrapper_modes.items():
    print(f"after {call:18} module.training={module_mode}, wrapper.training={wrapper_mode}")
assert compiled_classifier._orig_mod is classifier
assert [modes[0] for modes in wrapper_modes.values()] == [False, True, False]
if torch.__version__ >= "2.5":
    assert all(module == wrapper for module, wrapper in wrapper_modes.values())
else:  # PyTorch 2.4: the wrapper's own flag, see "Changed in PyTorch 2.5" below
    assert [modes[1] for modes in wrapper_modes.values()] == [True, True, True]

# %%
# **Since PyTorch 2.5, the wrapper's training attribute is the module's.**
# On PyTorch 2.4 and older, the wrapper had a flag of its own that ``train()`` and ``eval()``
# did not update: ``compiled.training`` read ``True`` after ``compiled.eval()``, while the module
# and the compiled code were in evaluation mode.
# Code that checks the mode (``if model.training:``) on the wrapper took the wrong branch; checking
# it on the module itself works on every release.
#
# Changed in PyTorch 2.5: ``training`` of the compiled wrapper
# ------------------------------------------------------------
#
# The wrapper's flag was reported as misleading in
# `PyTorch issue 122414 <https://github.com/pytorch/pytorch/issues/122414>`_, and
# `pull request #131546 <https://github.com/pytorch/pytorch/pull/131546>`_ made it mirror the
# module's; in
# `PyTorch issue 132986 <https://github.com/pytorch/pytorch/issues/132986>`_, where ``eval()``
# on the wrapper left its ``training`` at ``True``, a user confirmed the problem on 2.4.1 and not
# on 2.5.1.
# Before that, in 2023, `PyTorch issue 110803 <https://github.com/pytorch/pytorch/issues/110803>`_
# reported that toggling ``train()`` and ``eval()`` on a compiled model recompiled at every
# switch, up to the limit; the loop above compiles each mode once.

# %%
# Changed in PyTorch 2.12: a recompile limit for one ``torch.compile`` call
# -------------------------------------------------------------------------
#
# ``torch._dynamo.config.recompile_limit`` applies to every compiled function of the process.
# Since PyTorch 2.12, ``torch.compile(..., recompile_limit=N)`` sets the limit for what that one
# call compiles, in place of the global setting
# (`pull request #177936 <https://github.com/pytorch/pytorch/pull/177936>`_); older releases
# refuse the argument.
# With a limit of 3, the step counter above compiles 3 times in 6 steps:

if torch.__version__ >= "2.12":
    with dynamo_messages():  # the recompile-limit warning, not shown here
        limited, _ = count_compilations(model, set_int_step, steps=6, recompile_limit=3)
    print("compilations in 6 steps with recompile_limit=3:", limited)
    assert limited == 3
else:  # PyTorch 2.11 and older
    with expect_raises(TypeError, "unexpected keyword argument 'recompile_limit'"):
        torch.compile(model, backend="eager", recompile_limit=3)

# %%
# Changed in PyTorch 2.13: ``isolate_recompiles=True``
# ----------------------------------------------------
#
# Compiled code is kept with the Python code it was compiled from, and so is the count that the
# limit applies to.
# Two ``torch.compile`` calls on the same module, or on the same function, therefore share one
# budget: what the first one compiled counts against the second.
# Since PyTorch 2.13, ``isolate_recompiles=True`` gives each call a cache and a count of its own
# (`pull request #178351 <https://github.com/pytorch/pytorch/pull/178351>`_); older releases
# refuse the argument.
# Here the same module is compiled twice, and each compiled version is called for 6 steps:


def compile_twice(**compile_options):
    """Compile ``model`` twice, run each for 6 steps; the compilations of each."""
    torch._dynamo.reset()
    first, second = [], []
    compiled_first = torch.compile(model, backend=counting_backend(first), **compile_options)
    compiled_second = torch.compile(model, backend=counting_backend(second), **compile_options)
    with dynamo_messages():  # the recompile-limit warning, not shown here
        for compiled_module in (compiled_first, compiled_second):
            for step in range(6):
                set_int_step(compiled_module, step)
    return len(first), len(second)


if torch.__version__ >= "2.13":
    shared, isolated = compile_twice(), compile_twice(isolate_recompiles=True)
    print("compilations of the first and the second call, sharing the limit:", shared)
    print("with isolate_recompiles=True:", isolated)
    assert shared == (6, 2) and isolated == (6, 6)
else:  # PyTorch 2.12 and older
    with expect_raises(TypeError, "unexpected keyword argument 'isolate_recompiles'"):
        torch.compile(model, backend="eager", isolate_recompiles=True)

# %%
# Sharing the limit of 8, the second compiled version compiled twice and ran its last 4 steps
# uncompiled; with ``isolate_recompiles=True``, each compiled version compiled at each of its 6
# steps.
#
# Compiled code lives in a global cache: ``torch._dynamo.reset()`` clears it, and the counts
# above call it before each compilation so that none inherits another's cache.
# We clear it once more, so that nothing compiled here stays behind:

torch._dynamo.reset()

# %%
# A real-world report: "recompilation on a counter-like attribute"
# ----------------------------------------------------------------
#
# In 2024, a Dynamo developer filed the smallest form of this page: a module that increments a
# counter attribute in ``forward`` was compiled four times in ten calls with the eager backend,
# a pattern the report expected to be common
# (`pytorch/pytorch issue #128319 <https://github.com/pytorch/pytorch/issues/128319>`_).
# It is: in 2026, TorchRec's tests of a compiled metric hit the recompile limit because the
# metrics library counts its updates in an integer attribute, and the fix was the setting shown
# above (`meta-pytorch/torchrec pull request #4338
# <https://github.com/meta-pytorch/torchrec/pull/4338>`_).
#
# Takeaway
# --------
#
# **A Python number that changes between calls of a compiled module or function is a constant
# to torch.compile: each new value compiles a new graph, and after recompile_limit (8) graphs new
# values run uncompiled.**
# Keep changing values in tensors (buffers), or make integers dynamic (``dynamic=True``,
# ``allow_unspec_int_on_nn_module``, ``mark_dynamic`` for sizes), and check
# with ``TORCH_LOGS="recompiles"`` that a training loop compiles once or twice, not every step.
