"""
.. _cuda-async-timing:

Timing CUDA code
================

A clock read before and after a call measures how long the call took to return.
On the CPU that is the time of the work; on a GPU it is not, because a CUDA call only queues its
kernel and returns at once.
A benchmark written with :func:`time.perf_counter` and no synchronisation reports the time it
takes to *launch* the work, which barely depends on how much work there is.

.. admonition:: What you will learn

   * why a plain clock measures the work on the CPU and only the launch on a GPU;
   * how :func:`torch.cuda.synchronize` and :class:`torch.cuda.Event` give the real time;
   * why :class:`torch.utils.benchmark.Timer` is the tool to reach for first, and what it does
     for you (synchronising, warming up, threads).

.. admonition:: Prerequisites

   :ref:`item-and-tolist` (its last section: CUDA kernels run asynchronously, and ``.item()``
   waits for them).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.compare_times`, :func:`~torch_pitfalls.measured`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# A clock around a call
# ---------------------
#
# We time matrix products of two sizes with the most common benchmark code there is: read
# :func:`time.perf_counter` before and after one call, and keep the fastest of 20 tries (on one
# CPU thread, which keeps the CPU's times steady on a busy machine).
# Doubling the side of a square matrix multiplies the work by 8, so the time should grow by
# roughly as much:
import inspect
import time
import timeit

import torch
from torch.utils import benchmark

from torch_pitfalls import compare_times, cuda_section, get_device, measured, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


def clock_one_call(fn, repeats=20):
    """Fastest of ``repeats`` clock readings around one call of ``fn``, without synchronising."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: a busy machine stalls a multi-threaded product
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    torch.set_num_threads(threads)
    return best


small, large = (torch.randn(n, n) for n in (256, 512))
clock_small = clock_one_call(lambda: small @ small)
clock_large = clock_one_call(lambda: large @ large)
clock_ratio = clock_large / clock_small
print(measured(f"512×512 product / 256×256 product, plain clock: {clock_ratio:.1f}×", "cpu"))
assert clock_ratio > 2

# %%
# On the CPU the plain clock is right: **a CPU operation returns when its work is done**, and
# the time grows with the work.
#
# The same clock on a GPU
# -----------------------
#
# A CUDA operation returns as soon as its kernel is queued on the GPU's stream; the GPU runs it
# later, while Python goes on.
# The clock then stops before the work is done.
# We synchronise before each reading starts, so that the queue is empty, and compare the plain
# clock with the same clock followed by :func:`torch.cuda.synchronize`, which waits for the queued
# work.
# The products must be large enough for the GPU's work to outweigh the launch, on a fast GPU too:
# we double the side of the matrix, from 1024 up to 8192, until one product takes at least 50
# times as long by the synchronised clock as by the plain one, and compare it with a product of
# twice its side.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

with cuda_section(device, "a plain clock against a synchronised one", measured=True) as live:
    if live:

        def launch_time(m):
            torch.cuda.synchronize()
            start = time.perf_counter()
            _ = m @ m
            return time.perf_counter() - start

        def synced_time(m):
            torch.cuda.synchronize()
            start = time.perf_counter()
            _ = m @ m
            torch.cuda.synchronize()
            return time.perf_counter() - start

        def square(side):
            m = torch.randn(side, side, device=device)
            _ = m @ m  # warm-up: the first product of a shape loads its cuBLAS kernel
            return m

        for side in (1024, 2048, 4096, 8192):  # until the GPU's work outweighs the launch
            a = square(side)
            if min(synced_time(a) for _ in range(5)) > 50 * min(launch_time(a) for _ in range(5)):
                break
        b = square(2 * side)
        launch, synced = [float("inf")] * 2, [float("inf")] * 2
        for _ in range(20):  # the fastest of 20 tries, the two sizes in turn
            for i, m in enumerate((a, b)):
                launch[i] = min(launch[i], launch_time(m))
                synced[i] = min(synced[i], synced_time(m))
        launch_ratio, synced_ratio = launch[1] / launch[0], synced[1] / synced[0]
        sizes = f"{2 * side} / {side} product"
        print(measured(f"{sizes}, plain clock: {launch_ratio:.1f}×", device))
        print(measured(f"{sizes}, synchronised clock: {synced_ratio:.1f}×", device))
        print(measured(f"{side} product: synchronised / plain: {synced[0] / launch[0]:.0f}×"))
        print(measured(f"{2 * side} product: synchronised / plain: {synced[1] / launch[1]:.0f}×"))
        assert synced[0] > 10 * launch[0]  # the work outweighs the launch
        assert launch_ratio < 2 < synced_ratio
        assert synced[1] > 2 * launch[1]

# %%
# **Without synchronisation, the GPU clock measures the launch, and the launch costs about the
# same for 8 times the work.**
# The forgotten work is not lost either: the next operation that needs a result on the host
# (``.item()``, ``print``, a copy to the CPU) waits for it, so the time shows up in whatever code
# runs next, and a profile built with plain clocks blames the wrong line.
#
# The fix: CUDA events, or ``torch.cuda.synchronize``
# ---------------------------------------------------
#
# Either call :func:`torch.cuda.synchronize` before reading the clock, as above, or record two
# :class:`torch.cuda.Event` objects created with ``enable_timing=True`` around the work.
# Events are timestamps taken *by the GPU* in its stream; after waiting for the second one,
# :meth:`~torch.cuda.Event.elapsed_time` gives the time between them in milliseconds:

with cuda_section(device, "CUDA events", measured=True) as live:
    if live:
        start_event = torch.cuda.Event(enable_timing=True)
        end_event = torch.cuda.Event(enable_timing=True)
        event_ms = []
        for m in (a, b):
            tries = []
            for _ in range(5):  # the fastest of 5, as for the clocks above
                start_event.record()
                _ = m @ m
                end_event.record()
                end_event.synchronize()  # wait until the GPU has reached end_event
                tries.append(start_event.elapsed_time(end_event))
            event_ms.append(min(tries))
        event_ratio = event_ms[1] / event_ms[0]
        print(measured(f"{2 * side} product: {event_ms[1]:.2f} ms by CUDA events", device))
        print(measured(f"{sizes}, CUDA events: {event_ratio:.1f}×", device))
        assert event_ratio > 2

# %%
# The tool to reach for first: ``torch.utils.benchmark.Timer``
# ------------------------------------------------------------
#
# :class:`torch.utils.benchmark.Timer` does the synchronising for you, on every device.
# Its default clock is a small function of PyTorch's; here is its source, read from the
# installed PyTorch (before PyTorch 2.13, the code that chose the clock when the module was
# imported, see "Changed in PyTorch 2.13" below):

default_clock = inspect.signature(benchmark.Timer).parameters["timer"].default
print(f"Timer's default clock: {default_clock.__module__}.{default_clock.__name__}")
if torch.__version__ >= "2.13":
    print(inspect.getsource(default_clock))
    assert "torch.accelerator.synchronize()" in inspect.getsource(default_clock)
else:  # PyTorch 2.12 and older: the clock was chosen once, at import
    module_source = inspect.getsource(inspect.getmodule(benchmark.Timer))
    start = module_source.index("\n", module_source.index("__all__"))
    choice = module_source[start : module_source.index("\nclass Language")].strip()
    print(choice)
    assert "synchronize()" in choice and "timer = timeit.default_timer" in choice
    assert torch.cuda.is_available() or default_clock is timeit.default_timer
    # the two earlier changes of this code, named in "Changed in PyTorch 2.13" below
    names_xpu = "torch.xpu.synchronize()" in choice
    asks_accelerator = "torch.accelerator.is_available()" in choice
    print(f"names torch.xpu: {names_xpu}, asks torch.accelerator: {asks_accelerator}")
    assert names_xpu == ("2.7" <= torch.__version__ < "2.9")
    assert asks_accelerator == (torch.__version__ >= "2.9")

# %%
# **Timer synchronises the accelerator before every clock reading**, so its times include the
# GPU work, and the same benchmark code is right on the CPU and on a GPU.
# It also runs warm-up calls first (the first calls pay for lazy initialisation: loading kernels,
# allocating memory), and repeats the statement in blocks until enough time has been measured:

x = torch.randn(256, 256, device=device)
timing = benchmark.Timer(stmt="x @ x", globals={"x": x}).blocked_autorange(min_run_time=0.2)
print(measured(f"x @ x, 256×256: median {timing.median * 1e6:.0f} µs", device))
print(measured(f"blocks measured: {len(timing.times)}, runs per block: {timing.number_per_run}"))
assert timing.median > 0 and len(timing.times) >= 1

# %%
# One default to know: **Timer uses one thread unless told otherwise** (``num_threads=1``),
# while PyTorch's CPU operations use every core by default.
# One thread makes comparisons between machines fair; to time what your program will see, pass
# ``num_threads=torch.get_num_threads()``.

timer_threads = inspect.signature(benchmark.Timer).parameters["num_threads"].default
print(f"Timer's num_threads default: {timer_threads}")
assert timer_threads == 1

# %%
# Comparing two versions of the same code is Timer's main use.
# :func:`~torch_pitfalls.compare_times`, used across this site, builds a Timer for each callable
# and interleaves their timings so that a busy machine slows both alike.
# Timed this way, the two products of a section above differ by the factor the work predicts:
# on the CPU those of the first section, on a GPU those of the second (products as small as the
# first section's take a GPU about as long to launch as to run, so the work hardly shows in
# their times).

sides = (side, 2 * side) if device.type == "cuda" else (256, 512)
m_small, m_large = (torch.randn(n, n, device=device) for n in sides)
time_small, time_large = compare_times(
    lambda: m_small @ m_small, lambda: m_large @ m_large, expect=lambda t: t[1] / t[0] > 2
)
timer_ratio = time_large / time_small
small_side, large_side = sides
label = f"{large_side}×{large_side} product / {small_side}×{small_side} product"
print(measured(f"{label}, Timer: {timer_ratio:.1f}×", device))
assert timer_ratio > 2

# %%
# Changed in PyTorch 2.13: the default clock checks for an accelerator at each call
# ---------------------------------------------------------------------------------
#
# Up to PyTorch 2.12, ``torch.utils.benchmark`` chose its default clock once, when it was
# imported: a function that synchronises the GPU if one was available at that moment, else
# ``timeit.default_timer`` itself (:func:`time.perf_counter`), which synchronises nothing; the
# section above prints that code on those releases.
# Timing a GPU was right either way, but the check at import broke device backends that register
# themselves after importing the module
# (`issue #158825 <https://github.com/pytorch/pytorch/issues/158825>`_).
# `PyTorch 2.13 <https://github.com/pytorch/pytorch/releases/tag/v2.13.0>`_ moved the check into
# the clock, which asks at each call
# (`pull request #181716 <https://github.com/pytorch/pytorch/pull/181716>`_, "Fix import-time
# device loading in benchmark timer").
# The choice made at import had changed twice before, as the code printed above shows on each
# release.
# PyTorch 2.7 added Intel XPUs to it, after CUDA
# (`pull request #147835 <https://github.com/pytorch/pytorch/pull/147835>`_, "[Intel GPU] Add
# synchronize() in torch.utils.benchmark").
# PyTorch 2.9 asked ``torch.accelerator.is_available()`` instead of naming each kind of device
# (`pull request #157131 <https://github.com/pytorch/pytorch/pull/157131>`_, "[BE] Accelerator
# agnostic timer.py").
#
# A real-world report: "synchronize makes my model 6 times slower"
# ----------------------------------------------------------------
#
# In 2019, a user measuring the speed of their network on 768×768 images found that its frame
# rate fell from about 180 to about 30 frames per second when they added
# :func:`torch.cuda.synchronize` after the forward pass
# (`pytorch/pytorch issue #18012 <https://github.com/pytorch/pytorch/issues/18012>`_).
# Synchronising did not slow the model down: the 180 frames per second were the rate at which
# Python could queue the network's kernels, and 30 was the rate at which the GPU ran them.
# The maintainers closed the issue with a pointer to the same explanation.
#
# See also :ref:`non-blocking-copy`, where the work that has not finished yet is a copy whose
# result the CPU reads too early.
#
# Takeaway
# --------
#
# **CUDA calls return before the GPU has done the work: time GPU code with**
# ``torch.utils.benchmark.Timer``, **CUDA events, or a** ``torch.cuda.synchronize()`` **before
# each clock reading.**
# Warm up before timing, and compare versions of code as ratios timed under the same
# conditions.
