"""
.. _cuda-nondeterminism:

Seeds are not determinism
=========================

:func:`torch.manual_seed` makes every random draw repeat from one run to the next: the initial
weights, the dropout masks, the shuffling.
It does not make every operation give the same result.
Some operations, mostly on a GPU, add numbers in an order that changes from run to run, and
floating-point addition gives other results in another order; cuDNN may also choose another
convolution algorithm in each run.
Two runs with the same seed then drift apart, and the seed is blamed.

.. admonition:: What you will learn

   * what a seed fixes, and why the order of additions changes a floating-point sum;
   * what :func:`torch.use_deterministic_algorithms` does, and what it raises for an operation
     that has no deterministic implementation;
   * what ``torch.backends.cudnn.benchmark`` and ``torch.backends.cudnn.deterministic`` change,
     and what a fully reproducible GPU run needs.

.. admonition:: Prerequisites

   :ref:`dataloader-worker-rng` (seeding the random number generators of DataLoader workers).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# What a seed fixes
# -----------------
#
# With the same seed, the same random numbers come out, on every device:
import os

import torch

from torch_pitfalls import (
    cuda_section,
    expect_raises,
    expect_warns,
    get_device,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

first = torch.randn(3, device=device)
seed_everything(0)
second = torch.randn(3, device=device)
print("same seed, same draws:", torch.equal(first, second))
assert torch.equal(first, second)

# %%
# Why the same inputs can give other results
# ------------------------------------------
#
# **Floating-point addition is not associative: adding the same numbers in another order can give
# another result.**
# The smallest example, in ``float32``:

big, small = torch.tensor(1e8), torch.tensor(1.0)
left, right = ((big - big) + small).item(), (big + (-big + small)).item()
print(f"(1e8 - 1e8) + 1 = {left}   1e8 + (-1e8 + 1) = {right}")
assert left != right

# %%
# An operation that sums many values into a few places, such as
# :meth:`~torch.Tensor.index_add_` or a scatter-add, meets this at scale.
# On a GPU, thousands of threads add their values into the same place with atomic additions,
# whose order depends on how the threads happen to be scheduled: the order, and so the result,
# changes from run to run.
# The CPU adds in a fixed order, so we show the effect by shuffling the values ourselves:
# 100 000 numbers summed into one place, in two orders:

values = torch.randn(100_000, device=device)
into_one = torch.zeros(100_000, dtype=torch.long, device=device)
order = torch.randperm(100_000, device=device)
sum_in_order = torch.zeros(1, device=device).index_add_(0, into_one, values)
sum_shuffled = torch.zeros(1, device=device).index_add_(0, into_one, values[order])
print(f"in order: {sum_in_order.item():.6f}, shuffled: {sum_shuffled.item():.6f}")
assert not torch.equal(sum_in_order, sum_shuffled)
torch.testing.assert_close(sum_in_order, sum_shuffled, rtol=1e-4, atol=1e-2)

# %%
# The difference is in the last digits, and that is enough: a training run amplifies it step
# after step, and two runs with the same seed end with visibly different weights and metrics.
#
# On a GPU, the same ``index_add_`` run several times on the same inputs shows the run-to-run
# part directly.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that this part did not run.

with cuda_section(device, "index_add_ run five times") as live:
    if live:
        many = torch.randn(1_000_000, device=device)
        few_places = torch.randint(0, 10, (1_000_000,), device=device)

        def five_runs():
            return {
                tuple(torch.zeros(10, device=device).index_add_(0, few_places, many).tolist())
                for _ in range(5)
            }

        distinct_results = len(five_runs())
        print("distinct results of 5 identical runs:", distinct_results)
        assert distinct_results > 1

# %%
# The fix: ask for deterministic algorithms
# -----------------------------------------
#
# :func:`torch.use_deterministic_algorithms` switches PyTorch to deterministic implementations
# wherever it has them (on a GPU, ``index_add_`` then sorts its indices and sums in a fixed
# order), **and raises a RuntimeError for an operation that has none**, rather than letting it
# run.
# :meth:`~torch.Tensor.put_` without accumulation has none, on every device: when an index
# repeats, which write wins is not defined.

torch.use_deterministic_algorithms(True)
try:
    print("deterministic algorithms:", torch.are_deterministic_algorithms_enabled())
    target = torch.zeros(4, device=device)
    repeated = torch.tensor([0, 0], device=device)
    with expect_raises(RuntimeError, "put_ does not have a deterministic implementation"):
        target.put_(repeated, torch.tensor([1.0, 2.0], device=device))
    on_cpu = torch.zeros(4)
    accumulated = on_cpu.put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), accumulate=True)
    print("put_ with accumulate=True, on the CPU:", accumulated.tolist())
    assert accumulated.tolist() == [3.0, 0.0, 0.0, 0.0]
finally:
    torch.use_deterministic_algorithms(False)

# %%
# ``put_`` with ``accumulate=True`` sums the values of repeated indices, which has a
# deterministic implementation on the CPU; the real fix for the first call is to decide which value
# should win and not to write duplicates.
#
# On a GPU, the deterministic ``index_add_`` gives one result, every time:

with cuda_section(device, "index_add_ with deterministic algorithms") as live:
    if live:
        torch.use_deterministic_algorithms(True)
        try:
            deterministic_results = len(five_runs())
        finally:
            torch.use_deterministic_algorithms(False)
        print("distinct results of 5 identical runs:", deterministic_results)
        assert deterministic_results == 1

# %%
# While you look for the operations that stop a run, ``warn_only=True`` turns the error into a
# warning, so that one run lists them all:

torch.use_deterministic_algorithms(True, warn_only=True)
try:
    with expect_warns(UserWarning, "put_ does not have a deterministic implementation"):
        torch.zeros(4).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
finally:
    torch.use_deterministic_algorithms(False)
assert not torch.are_deterministic_algorithms_enabled()

# %%
# cuDNN and cuBLAS
# ----------------
#
# Two flags of ``torch.backends.cudnn`` matter too, and both are plain Python attributes, here
# with their defaults:

print("cudnn.benchmark:", torch.backends.cudnn.benchmark)
print("cudnn.deterministic:", torch.backends.cudnn.deterministic)
assert torch.backends.cudnn.benchmark is False and torch.backends.cudnn.deterministic is False

# %%
# ``benchmark=True`` lets cuDNN time several convolution algorithms on the first call with each
# input shape and keep the fastest, which can be a different one in each run.
# ``deterministic=True``, or :func:`torch.use_deterministic_algorithms`, restricts cuDNN to
# deterministic algorithms.
# **For reproducible GPU runs: seed everything, call use_deterministic_algorithms(True), and
# leave cudnn.benchmark off.**
#
# Deterministic algorithms are often slower.
# And they make runs repeat only where nothing else changes: PyTorch's `reproducibility notes
# <https://docs.pytorch.org/docs/stable/notes/randomness.html>`_ guarantee nothing.
# They say that completely reproducible results are not guaranteed across PyTorch releases,
# individual commits or platforms, nor between CPU and GPU executions even with identical seeds,
# and they list steps that *limit* the sources of nondeterminism for one platform, device and
# release: the seeds, deterministic algorithms, the cuDNN flags, the DataLoader workers.
# **Compare runs on the same hardware, with the same PyTorch, CUDA and libraries; on another GPU
# or another release, other digits are within what PyTorch promises.**
#
# Changed in PyTorch 2.10: no ``CUBLAS_WORKSPACE_CONFIG`` for matrix products
# ---------------------------------------------------------------------------
#
# Matrix products on a GPU used to need one more setting: in deterministic mode, PyTorch raised
# a RuntimeError for a matrix product unless the environment variable
# ``CUBLAS_WORKSPACE_CONFIG`` had been set (to ``:4096:8`` or ``:16:8``) before the program
# started.
# `Pull request #161749 <https://github.com/pytorch/pytorch/pull/161749>`_ removed that check,
# first released in PyTorch 2.10: PyTorch gives cuBLAS a workspace of its own for each handle and
# stream, which cuBLAS documents as enough for reproducible results.
# The same pull request took the variable out of the documentation of
# :func:`torch.use_deterministic_algorithms`, which up to PyTorch 2.9 listed the operations that
# raise without it; the installed PyTorch's documentation tells which side of the change it is on:

names_the_variable = "CUBLAS_WORKSPACE_CONFIG" in torch.use_deterministic_algorithms.__doc__
print(
    "use_deterministic_algorithms' documentation names CUBLAS_WORKSPACE_CONFIG:", names_the_variable
)
assert names_the_variable == (torch.__version__ < "2.10")

# %%
# With an older PyTorch, set the variable before the first CUDA call.
# With PyTorch 2.10 or newer, a matrix product runs in deterministic mode whatever the variable
# says, and gives the same result twice:

with cuda_section(device, "a matrix product in deterministic mode") as live:
    if live:
        workspace_config = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        print("CUBLAS_WORKSPACE_CONFIG:", workspace_config)
        matrix = torch.randn(64, 64, device=device)
        torch.use_deterministic_algorithms(True)
        try:
            if torch.__version__ < "2.10" and workspace_config not in (":4096:8", ":16:8"):
                with expect_raises(RuntimeError, "CUBLAS_WORKSPACE_CONFIG"):
                    matrix @ matrix
            else:
                products = [matrix @ matrix for _ in range(2)]
                print("the product ran twice; same result:", torch.equal(*products))
                assert torch.equal(*products)
        finally:
            torch.use_deterministic_algorithms(False)

# %%
# A real-world report: "switching to use_deterministic_algorithms breaks runs"
# ----------------------------------------------------------------------------
#
# In 2021, the PyTorch Lightning developers wanted their ``deterministic=True`` option to call
# :func:`torch.use_deterministic_algorithms` instead of setting the cuDNN flag alone, and found
# that it would stop users' runs: the cuDNN flag never failed, the new function raised on the
# first operation without a deterministic implementation
# (`pytorch/pytorch issue #64883 <https://github.com/pytorch/pytorch/issues/64883>`_).
# PyTorch answered with the ``warn_only`` argument shown above
# (`pull request #66233 <https://github.com/pytorch/pytorch/pull/66233>`_).
#
# See also :ref:`dataloader-worker-rng`: the other half of a reproducible run is the random
# numbers drawn in DataLoader workers.
#
# Takeaway
# --------
#
# **A seed makes the random numbers repeat, not the arithmetic: operations that add in a
# run-dependent order (atomic additions on a GPU) and cuDNN's benchmark mode change results
# between runs with the same seed.**
# For a reproducible run, seed everything, call ``torch.use_deterministic_algorithms(True)``
# (with ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` on a GPU with a PyTorch older than 2.10),
# keep ``cudnn.benchmark`` off, and replace or allow the operations it reports.
