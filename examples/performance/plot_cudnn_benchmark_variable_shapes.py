"""
.. _cudnn-benchmark-variable-shapes:

``cudnn.benchmark`` with changing input shapes
==============================================

``torch.backends.cudnn.benchmark = True`` sits at the top of many training scripts as a free
speed-up for convolutional networks.
It makes cuDNN time several algorithms for a convolution the first time it meets an input shape,
and keep the fastest for that shape.
When the shapes keep changing — images kept at their own size, random resizing for multi-scale
training, sequences of varying length through a ``Conv1d`` — each new shape pays for the timing
again, and the model runs slower with the flag than without it.

.. admonition:: What you will learn

   * what benchmark mode times, what it caches and what the cache is keyed on;
   * how to count the shapes a workload sends to its convolutions, on any device;
   * when to turn benchmark mode on, and how to make shapes few: padding to a few sizes, fixed
     crops, full batches.

.. admonition:: Prerequisites

   :ref:`cuda-async-timing` (timing GPU code) and :ref:`cuda-nondeterminism` (the cuDNN flags).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.measured`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A small convolutional network runs batches whose images have another height and width each
# time.
# On a GPU we time each batch, synchronising before reading the clock (see
# :ref:`cuda-async-timing`), three ways: shapes that keep changing with benchmark mode off, the
# same kind of workload with benchmark mode on, and one fixed shape with benchmark mode on.
# Every run uses shapes that no earlier run used, so that no run finds the others' results in
# the cache.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.
import time

import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import cuda_section, get_device, measured, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


def make_net(width=8):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1),
    ).to(device)


with cuda_section(device, "batch times by shape, benchmark mode on and off", measured=True) as live:
    if live:
        gpu_net = make_net(width=64).eval()

        def batch_ms(height, width):
            """Time one forward pass on a new batch of 8 images, synchronised, in ms."""
            x = torch.randn(8, 3, height, width, device=device)
            torch.cuda.synchronize(device)
            start = time.perf_counter()
            with torch.no_grad():
                gpu_net(x)
            torch.cuda.synchronize(device)
            return 1000 * (time.perf_counter() - start)

        varying_off = [(200 + 2 * i, 260 - 2 * i) for i in range(24)]
        varying_on = [(201 + 2 * i, 261 - 2 * i) for i in range(24)]
        fixed = (256, 192)
        assert fixed not in varying_off + varying_on
        previous = torch.backends.cudnn.benchmark
        try:
            torch.backends.cudnn.benchmark = False
            batch_ms(32, 32)  # CUDA and cuDNN start-up, outside the measurements
            off = [batch_ms(h, w) for h, w in varying_off]
            torch.backends.cudnn.benchmark = True
            on_first = [batch_ms(h, w) for h, w in varying_on]
            on_again = [batch_ms(h, w) for h, w in varying_on]
            on_fixed = [batch_ms(*fixed) for _ in range(24)]
        finally:
            torch.backends.cudnn.benchmark = previous
        print(measured(f"24 shapes, benchmark off: {sum(off):.1f} ms", device))
        print(measured(f"24 new shapes, benchmark on: {sum(on_first):.1f} ms", device))
        print(measured(f"the same 24 shapes again, benchmark on: {sum(on_again):.1f} ms", device))
        print(
            measured(
                f"one shape 24 times, benchmark on: {sum(on_fixed):.1f} ms"
                f" (first batch {on_fixed[0]:.1f} ms, then {sum(on_fixed[1:]) / 23:.2f} ms each)",
                device,
            )
        )
        assert sum(on_first) > sum(off) and sum(on_again) < sum(on_first)
        assert on_fixed[0] > max(on_fixed[1:])

# %%
# **With benchmark mode on, the first batch of each shape is slow: a workload whose shapes keep
# changing pays that price on every batch, and runs slower than with the flag off.**
# The same shapes a second time are fast, and so is one fixed shape after its first batch.
# A new shape is not free with the flag off either: in the run recorded on an H200, the first
# batch of a new shape took several milliseconds, about ten times a batch of a shape already
# seen, and benchmark mode multiplied that cost by more than twenty.
# A benchmark of the first iterations, or an inference service that sees a new image size on
# most requests, sees only the slow calls.
#
# Why
# ---
#
# For a convolution, cuDNN offers several algorithms (direct, implicit GEMM, FFT, Winograd, …),
# and which one is fastest depends on the shapes, the data type and the GPU.
# With ``torch.backends.cudnn.benchmark`` off, the default, PyTorch lets cuDNN's heuristics pick
# one, builds it for the new shape and caches it, without running any candidate
# (``run_single_conv`` in PyTorch's ``aten/src/ATen/native/cudnn/Conv_v8.cpp``): work of its own
# for each new shape, but far less than timing the candidates.
# With it on, PyTorch runs the candidates on the first call and keeps the fastest in a cache;
# every later call with the same key reuses it.
# The flag is a plain Python attribute, and reads the same on every device:

print("torch.backends.cudnn.benchmark:", torch.backends.cudnn.benchmark)
assert torch.backends.cudnn.benchmark is False

# %%
# The cache lives in the process, and its key is every property of the convolution
# (``ConvolutionParams`` in PyTorch's ``aten/src/ATen/native/cudnn/ConvShared.h``): the sizes of
# the input and of the weight, padding, stride, dilation and groups, the data type, the memory
# format, the GPU, and the deterministic and TF32 settings.
# **A new input shape is a new key, and a new key means a new round of timing.**
# The backward pass of training has convolutions of its own (the gradients with respect to the
# input and to the weight), which take the same flag.
#
# Counting cache keys on any device
# ---------------------------------
#
# Which keys a workload produces does not depend on the GPU: we can count them anywhere.
# A forward pre-hook (:meth:`~torch.nn.Module.register_forward_pre_hook`) on every
# :class:`~torch.nn.Conv2d` records the part of the key that changes here (the device, the
# memory format and the flags stay the same), and a set plays the cache: for each batch we count
# the keys it had not seen yet, each of which would be timed.


def conv_key(conv, x):
    return (tuple(x.shape), tuple(conv.weight.shape), conv.stride, conv.padding, x.dtype)


def new_keys_per_batch(net, batches, cache):
    """For each batch, how many convolution keys were not in ``cache`` yet (then added)."""
    new = []

    def record(conv, args):
        key = conv_key(conv, args[0])
        if key not in cache:
            cache.add(key)
            new[-1] += 1

    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    handles = [conv.register_forward_pre_hook(record) for conv in convs]
    try:
        with torch.no_grad():
            for batch in batches:
                new.append(0)
                net(batch)
    finally:
        for handle in handles:
            handle.remove()
    return new


# %%
# Two epochs of 12 batches whose images are resized at random to a height and width between 48
# and 96 pixels, drawn again for every batch, as multi-scale training does:

net = make_net()
sizes = torch.Generator().manual_seed(0)


def random_sizes(n):
    return [tuple(torch.randint(48, 97, (2,), generator=sizes).tolist()) for _ in range(n)]


epochs = [random_sizes(12), random_sizes(12)]
cache = set()
varying = [
    new_keys_per_batch(net, [torch.randn(4, 3, h, w, device=device) for h, w in epoch], cache)
    for epoch in epochs
]
print("first image sizes:", epochs[0][:4])
print("new keys per batch, epoch 1:", varying[0])
print("new keys per batch, epoch 2:", varying[1])
assert varying == [[3] * 12, [3] * 12]
assert len(cache) == sum(varying[0]) + sum(varying[1])

# %%
# Three convolutions, and every batch brings three new keys: with benchmark mode on, every batch
# would be timed, in the second epoch as in the first.
#
# The fix
# -------
#
# **Turn benchmark mode on only when the shapes are few: it pays once per shape, and then each
# shape runs with its fastest algorithm.**
# Shapes that change on every batch need one of two things: fewer shapes, or benchmark mode off.
#
# Fewer shapes: pad each batch up to the next multiple of 32 pixels
# (:func:`torch.nn.functional.pad`, zeros on the right and at the bottom), so that the sizes
# between 48 and 96 fall into 64 or 96 in each direction, four shapes in all.
# Random crops of a fixed size, or resizing to one size, leave one shape.
# The same two epochs of sizes:


def pad_to_multiple(batch, multiple=32):
    height, width = batch.shape[-2:]
    return F.pad(batch, (0, -width % multiple, 0, -height % multiple))


cache = set()
bucketed = [
    new_keys_per_batch(
        net,
        [pad_to_multiple(torch.randn(4, 3, h, w, device=device)) for h, w in epoch],
        cache,
    )
    for epoch in epochs
]
print("new keys per batch, epoch 1:", bucketed[0])
print("new keys per batch, epoch 2:", bucketed[1])
padded_shapes = {(-(-h // 32) * 32, -(-w // 32) * 32) for epoch in epochs for h, w in epoch}
print("padded sizes:", sorted(padded_shapes))
assert padded_shapes <= {(64, 64), (64, 96), (96, 64), (96, 96)}
assert sum(bucketed[0]) + sum(bucketed[1]) == 3 * len(padded_shapes)

# %%
# Each padded size is timed once, and the later batches only reuse.
# Fewer shapes help with the flag off too, since each new shape costs a first slow batch either
# way.
# Padding is not free: the network computes on the added zeros, which only pays when it removes
# many first batches of new shapes, and the model must tolerate the border (a detection or
# segmentation model ignores it through its targets or a mask).
#
# The batch size is part of the shape too: a last, smaller batch of an epoch is one more shape,
# timed once (``drop_last=True`` on the :class:`~torch.utils.data.DataLoader` avoids it):

last_smaller = [torch.randn(n, 3, 64, 64, device=device) for n in (4, 4, 4, 2)]
by_batch_size = new_keys_per_batch(net, last_smaller, set())
print("new keys per batch, batch sizes 4, 4, 4, 2:", by_batch_size)
assert by_batch_size == [3, 0, 0, 3]

# %%
# With ``torch.compile``, changing shapes have a cost of their own: see :ref:`compile-recompiles`.
#
# **When the shapes cannot be made few, leave benchmark mode off**: each new shape then costs a
# slower first batch, without the much larger cost of timing the candidates.
# It is also off for reproducibility: benchmark mode can pick another algorithm in another run,
# with other rounding (see :ref:`cuda-nondeterminism`).
#
# A real-world report
# -------------------
#
# In 2017, `PyTorch issue 2759 <https://github.com/pytorch/pytorch/issues/2759>`_ reported that a
# ResNet-50 fed images of random sizes took seconds per iteration where a fixed size took tens of
# milliseconds; the script set ``cudnn.benchmark = True``, which was the first thing a maintainer
# asked about.
# The pitfall is still met: in 2022, `torchvision pull request 5985
# <https://github.com/pytorch/vision/pull/5985>`_ fixed a speed regression of torchvision's
# detection training script, which had started to set ``torch.backends.cudnn.benchmark=True``
# although detection models take inputs of varying sizes.
#
# Takeaway
# --------
#
# **cudnn.benchmark times every new input shape: turn it on for a few fixed shapes, and off (the
# default) when shapes keep changing, or make them few by padding to a few sizes or cropping to
# one.**
