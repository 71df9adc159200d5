"""
.. _register-buffer:

Tensors that belong to a module: buffers
========================================

Some tensors are part of a model without being trained: normalisation statistics computed from
the data, a positional-encoding table, a mask.
Stored as a plain tensor attribute (``self.mean = mean``), such a tensor is invisible to the
module: :meth:`model.to(device) <torch.nn.Module.to>` leaves it behind, so the first forward pass
on the GPU fails, and :meth:`~torch.nn.Module.state_dict` leaves it out, so a checkpoint restores
the weights but not the tensor, and the restored model silently predicts something else.
:meth:`~torch.nn.Module.register_buffer` is the fix, with ``persistent=False`` for tensors that
should follow the model but stay out of its checkpoints.

.. admonition:: What you will learn

   * what a plain tensor attribute misses: ``.to()`` and ``state_dict()``;
   * what a buffer is, and how it differs from a parameter;
   * when to register a buffer with ``persistent=False``, and what it changes for loading old
     checkpoints;
   * why ``nn.Parameter(t).to(device)`` in a constructor leaves a plain, unregistered tensor.

.. admonition:: Prerequisites

   :ref:`device-agnostic-code` (moving a model and its inputs to a device);
   :ref:`modulelist-vs-list` (what a module registers).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A model that standardises its input with the mean and standard deviation of the training
# data, computed once and handed to the constructor.
# The two statistics are plain tensor attributes.
import torch
from torch import nn

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class Standardized(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean  # plain tensor attributes
        self.std = std
        self.linear = nn.Linear(3, 1)

    def forward(self, x):
        return self.linear((x - self.mean) / self.std)


data = torch.randn(200, 3) * torch.tensor([1.0, 10.0, 100.0]) + torch.tensor([5.0, -3.0, 50.0])
mean, std = data.mean(dim=0), data.std(dim=0)  # computed once, on the CPU

# %%
# We move the model to another device and give it an input there.
# The CUDA part below runs on a build with a GPU; every build runs the same code with the
# ``meta`` device as the target, whose tensors have a shape and a device but no data, and
# which checks devices just as CUDA does.

with cuda_section(device, "the statistics left on the CPU by model.to('cuda')") as live:
    if live:
        on_gpu = Standardized(mean, std).to(device)
        print("linear.weight on", on_gpu.linear.weight.device, "| mean on", on_gpu.mean.device)
        with expect_raises(RuntimeError, "Expected all tensors to be on the same device"):
            on_gpu(torch.randn(4, 3, device=device))

on_meta = Standardized(mean, std).to("meta")
print("linear.weight on", on_meta.linear.weight.device, "| mean on", on_meta.mean.device)
assert on_meta.linear.weight.device.type == "meta" and on_meta.mean.device.type == "cpu"
with expect_raises(RuntimeError, "is not on the expected device meta"):
    on_meta(torch.randn(4, 3, device="meta"))

# %%
# **.to() moved the layer's weights and left the two statistics on the CPU.**
# The second half of the problem needs no second device.
# We build the model with its statistics already on the page's device, save its state dict as a
# checkpoint would, and load it into a model built in another process, where the data are not at
# hand and the constructor gets neutral statistics.

model = Standardized(mean.to(device), std.to(device)).to(device)
batch = data[:4].to(device)
checkpoint = model.state_dict()
restored = Standardized(torch.zeros(3, device=device), torch.ones(3, device=device)).to(device)
load_result = restored.load_state_dict(checkpoint)
print("checkpoint keys:", list(checkpoint))
print("load_state_dict:", load_result)
with torch.no_grad():
    print("prediction of the trained model: ", model(batch).flatten())
    print("prediction of the restored model:", restored(batch).flatten())
    same_prediction = torch.allclose(model(batch), restored(batch))
assert list(checkpoint) == ["linear.weight", "linear.bias"]
assert not load_result.missing_keys and not load_result.unexpected_keys
assert not same_prediction

# %%
# The checkpoint holds the weights but not the statistics, and
# **load_state_dict() reports every key matched: nothing warns that the restored model
# standardises with other numbers.**
#
# Why
# ---
#
# A module keeps three kinds of state: parameters, buffers and submodules.
# Assigning an attribute registers a :class:`~torch.nn.Parameter` or a
# :class:`~torch.nn.Module`, but a plain :class:`~torch.Tensor` is just a Python attribute.
# :meth:`~torch.nn.Module.to` (like :meth:`~torch.nn.Module.cuda` or ``.half()``) applies to the
# parameters and the buffers of every submodule;
# :meth:`~torch.nn.Module.state_dict` saves the parameters and the persistent buffers.
# Our statistics are neither:

print("parameters:", [name for name, _ in model.named_parameters()])
print("buffers:   ", [name for name, _ in model.named_buffers()])
assert [name for name, _ in model.named_buffers()] == []

# %%
# **A buffer is a tensor that the module owns but does not train:** it follows the module in
# ``.to()`` and (by default) in the state dict, and it is not returned by
# :meth:`~torch.nn.Module.parameters`, so no optimizer updates it.
# BatchNorm's running statistics are the classic example (see :ref:`batchnorm-running-stats`).
#
# The fix
# -------
#
# Register the statistics with :meth:`~torch.nn.Module.register_buffer`.
# They stay readable as ``self.mean`` and ``self.std``.


class StandardizedFixed(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)  # the fix
        self.register_buffer("std", std)
        self.linear = nn.Linear(3, 1)

    def forward(self, x):
        return self.linear((x - self.mean) / self.std)


fixed = StandardizedFixed(mean, std).to(device)
fixed_buffers = [name for name, _ in fixed.named_buffers()]
fixed_parameters = [name for name, _ in fixed.named_parameters()]
fixed_keys = list(fixed.state_dict())
print("buffers:", fixed_buffers, "| parameters:", fixed_parameters)
print("state_dict keys:", fixed_keys)
assert fixed_buffers == ["mean", "std"]
assert fixed_parameters == ["linear.weight", "linear.bias"]
assert fixed_keys == ["mean", "std", "linear.weight", "linear.bias"]

fixed_on_meta = StandardizedFixed(mean, std).to("meta")
out_on_meta = fixed_on_meta(torch.randn(4, 3, device="meta"))
print("mean on", fixed_on_meta.mean.device, "| output on", out_on_meta.device)
assert fixed_on_meta.mean.device.type == "meta" and out_on_meta.device.type == "meta"

# %%
# On CUDA, the same model follows ``.to(device)`` with its statistics:

with cuda_section(device, "the registered statistics moved by model.to('cuda')") as live:
    if live:
        fixed_on_gpu = StandardizedFixed(mean, std).to(device)
        out_on_gpu = fixed_on_gpu(torch.randn(4, 3, device=device))
        print("mean on", fixed_on_gpu.mean.device, "| output on", out_on_gpu.device)
        assert fixed_on_gpu.mean.device == out_on_gpu.device == fixed_on_gpu.linear.weight.device

# %%
# And **the checkpoint now restores the statistics**: the model rebuilt with neutral ones
# predicts exactly what the saved model predicts.

restored_fixed = StandardizedFixed(torch.zeros(3), torch.ones(3)).to(device)
_ = restored_fixed.load_state_dict(fixed.state_dict())
with torch.no_grad():
    fixed_same_prediction = torch.equal(fixed(batch), restored_fixed(batch))
print("restored model predicts the same:", fixed_same_prediction)
assert fixed_same_prediction

# %%
# Since PyTorch 2.5, assigning a :class:`torch.nn.Buffer` registers a buffer too, as assigning a
# :class:`~torch.nn.Parameter` registers a parameter: ``self.mean = nn.Buffer(mean)``.
# Older releases have no ``nn.Buffer`` (see "Changed in PyTorch 2.5" below), and
# ``register_buffer`` is the way on every release:

holder = nn.Module()
if torch.__version__ >= "2.5":
    holder.mean = nn.Buffer(torch.zeros(3))
else:  # PyTorch 2.4 and older: no nn.Buffer
    with expect_raises(AttributeError, "module 'torch\\.nn' has no attribute 'Buffer'"):
        nn.Buffer(torch.zeros(3))
    holder.register_buffer("mean", torch.zeros(3))
print("buffers of the holder:", [name for name, _ in holder.named_buffers()])
assert [name for name, _ in holder.named_buffers()] == ["mean"]

# %%
# Changed in PyTorch 2.5: ``nn.Buffer``
# -------------------------------------
#
# Up to PyTorch 2.4, :meth:`~torch.nn.Module.register_buffer` was the only way to register a
# buffer, and ``torch.nn.Buffer`` did not exist.
# `PyTorch 2.5 <https://github.com/pytorch/pytorch/releases/tag/v2.5.0>`_ added it
# (`pull request #125971 <https://github.com/pytorch/pytorch/pull/125971>`_, "Make adding Buffers
# more like adding Parameters", which answers
# `issue #35735 <https://github.com/pytorch/pytorch/issues/35735>`_); assigning one calls
# ``register_buffer``, with its ``persistent`` argument.
# Code that must run on older releases keeps ``register_buffer``.

# %%
# Buffers that stay out of the checkpoint: ``persistent=False``
# -------------------------------------------------------------
#
# Some tensors are recomputed from the constructor's arguments: a positional-encoding table,
# a causal mask, a range of indices.
# They must follow ``.to()``, but saving them makes checkpoints larger and ties them to one
# implementation: **a persistent buffer added to a module makes every checkpoint saved before
# it fail to load** (with the default ``strict=True`` of :meth:`~torch.nn.Module.load_state_dict`).
# ``persistent=False`` registers a buffer that is moved with the module and left out of its
# state dict.


class Encoder(nn.Module):
    def __init__(self, persistent=None):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        if persistent is not None:  # version 2 adds a table of positions
            self.register_buffer("positions", torch.arange(16.0), persistent=persistent)


old_checkpoint = Encoder().state_dict()  # saved by version 1
with expect_raises(RuntimeError, 'Missing key\\(s\\) in state_dict: "positions"'):
    Encoder(persistent=True).load_state_dict(old_checkpoint)
non_persistent = Encoder(persistent=False)
print("persistent=False:", non_persistent.load_state_dict(old_checkpoint))
print("buffers:", [name for name, _ in non_persistent.named_buffers()])
print("state_dict keys:", list(non_persistent.state_dict()))
print("moved by .to('meta'):", non_persistent.to("meta").positions.device)
assert [name for name, _ in non_persistent.named_buffers()] == ["positions"]
assert "positions" not in non_persistent.state_dict()
assert non_persistent.positions.device.type == "meta"

# %%
# Use a persistent buffer (the default) for state that cannot be recomputed, like our
# statistics, and ``persistent=False`` for what the constructor rebuilds anyway.

# %%
# A parameter moved in the constructor: ``nn.Parameter(t).to(device)``
# ---------------------------------------------------------------------
#
# A parameter created and moved in one line,
# ``self.scale = nn.Parameter(torch.ones(3)).to(device)``, ends up just as invisible as a plain
# tensor attribute.
# :meth:`Tensor.to() <torch.Tensor.to>` returns the tensor itself when nothing changes, and
# otherwise a copy: an ordinary :class:`~torch.Tensor` produced by a recorded operation (a
# non-leaf, see :ref:`non-leaf-grad`), not a :class:`~torch.nn.Parameter`.
# **Assigned to the module, the copy is a plain tensor attribute: not registered, never seen by
# the optimizer, left out of the checkpoint.**
# The line is harmless when ``device`` is the CPU, which is why the model works on a laptop and
# stops learning that weight on a GPU.
# Every build shows the copy with a change of dtype and with a move to the ``meta`` device; a move
# to ``cuda`` behaves like the second (the CUDA part further down).


class Scaled(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3)).to(target)  # a copy if .to() changes anything
        self.linear = nn.Linear(3, 1)


registered = {}
for label, target in (("'cpu'", "cpu"), ("torch.float64", torch.float64), ("'meta'", "meta")):
    scaled = Scaled(target)
    registered[label] = [name for name, _ in scaled.named_parameters()]
    grad_fn = scaled.scale.grad_fn.name() if scaled.scale.grad_fn else None
    print(f".to({label}): self.scale is a {type(scaled.scale).__name__}, grad_fn {grad_fn}")
    print(f"    parameters {registered[label]}, state_dict keys {list(scaled.state_dict())}")
assert registered["'cpu'"] == ["scale", "linear.weight", "linear.bias"]
assert registered["torch.float64"] == registered["'meta'"] == ["linear.weight", "linear.bias"]
assert type(Scaled("meta").scale) is torch.Tensor and not Scaled(torch.float64).scale.is_leaf

# %%
# On CUDA, the move copies, and the parameter is lost in the same way:

with cuda_section(device, "nn.Parameter(t).to('cuda') in a constructor") as live:
    if live:
        scaled_on_gpu = Scaled(device)
        gpu_parameters = [name for name, _ in scaled_on_gpu.named_parameters()]
        print("type:", type(scaled_on_gpu.scale).__name__, "| parameters:", gpu_parameters)
        assert type(scaled_on_gpu.scale) is torch.Tensor
        assert gpu_parameters == ["linear.weight", "linear.bias"]

# %%
# **Create the parameter from a tensor that already has its final device and dtype,**
# ``nn.Parameter(torch.ones(3, device=device))``, **or create it on the CPU and move the whole
# module with** :meth:`model.to(device) <torch.nn.Module.to>`, which keeps every parameter a
# registered :class:`~torch.nn.Parameter`:


class ScaledFixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))  # moved later, with the module
        self.linear = nn.Linear(3, 1)


for label, target in (("device", device), ("torch.float64", torch.float64), ("'meta'", "meta")):
    scaled = ScaledFixed().to(target)
    names = [name for name, _ in scaled.named_parameters()]
    print(f".to({label}): self.scale is a {type(scaled.scale).__name__} on", end=" ")
    print(f"{scaled.scale.device}, {scaled.scale.dtype}; parameters {names}")
    assert isinstance(scaled.scale, nn.Parameter) and names[0] == "scale"

# %%
# The recommendation-model library DeepCTR-Torch shipped this line: its linear part wrapped a
# weight in :class:`~torch.nn.Parameter` and then moved it to the device, and a user found the
# weight missing from the saved state dict of a model trained on CUDA
# (`DeepCTR-Torch issue 87 <https://github.com/shenweichen/DeepCTR-Torch/issues/87>`_).
# The maintainers proposed moving the tensor before wrapping it, and announced the fix in
# version 0.2.4.
# Asked in `PyTorch issue 39062 <https://github.com/pytorch/pytorch/issues/39062>`_ for a warning
# at this line, a PyTorch developer answered that it is a known issue, ``.to()`` on a
# :class:`~torch.nn.Parameter` giving a plain tensor, and recommended ``device=`` at creation.

# %%
# A real-world report: a positional encoding on the wrong device, then a broken checkpoint
# ----------------------------------------------------------------------------------------
#
# In the library multidim-positional-encoding, the encodings came out on the CPU while the model
# ran on the GPU, and adding them to the input crashed with a device mismatch
# (`pull request 31 <https://github.com/tatp22/multidim-positional-encoding/pull/31>`_).
# The fix made the cached encoding table a buffer, with the default ``persistent=True``; the
# release that shipped it added a key to the module's state dict, and models trained with the
# previous version could no longer be loaded.
# The next pull request made the buffer non-persistent, and the broken release was withdrawn
# from PyPI (`pull request 36 <https://github.com/tatp22/multidim-positional-encoding/pull/36>`_).
# The two steps are the two halves of this page: ``.to()`` needs a buffer, and a cache does not
# belong in the checkpoint.
#
# See also :ref:`compile-recompiles`: a number that changes every step belongs in a buffer
# too, where ``torch.compile`` does not compile a new graph for each value.
#
# Takeaway
# --------
#
# **A tensor stored on a module must be a buffer: register_buffer() makes .to() move it and
# state_dict() save it; add persistent=False when the constructor can rebuild it.**
# Parameters are what the optimizer trains; buffers are the rest of the module's tensors; a plain
# tensor attribute belongs to neither, and is left behind by ``.to()`` and by every checkpoint.
