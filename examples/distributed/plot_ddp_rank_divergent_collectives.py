"""
.. _ddp-rank-divergent-collectives:

A collective that only some ranks reach: the job hangs until the timeout
========================================================================

Multi-GPU training stops making progress: no error, no output, the GPUs idle, and after 30 minutes
(10 with NCCL's watchdog) every process dies with a timeout.
The last thing that ran was the code that only rank 0 runs: saving a checkpoint, logging, a
validation pass, with a ``dist.barrier()`` inside the ``if rank == 0:`` block.
A rank that skips a batch its neighbours train on does the same in a quieter way: its gradients
are averaged with another iteration's, and the job hangs at the end.

.. admonition:: What you will learn

   * a collective (``barrier``, ``all_reduce``, DDP's gradient averaging in ``backward``) completes
     only when every rank of the group calls it; collectives are matched by their order, not by
     the line that calls them;
   * why a barrier inside ``if rank == 0`` hangs both ranks, and a skipped ``backward`` mixes
     gradients of different iterations before it hangs;
   * how :func:`~torch.distributed.monitored_barrier` and ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` name
     the rank that diverged;
   * the fix: the same collectives on every rank, in the same order; rank-0-only work through the
     plain module, ``ddp_model.module``.

.. admonition:: Prerequisites

   :class:`~torch.nn.parallel.DistributedDataParallel` (DDP) and what a rank is;
   :ref:`ddp-unused-parameters` (how DDP averages gradients during ``backward``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.run_ranks`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# Two ranks, and a timeout of one second
# --------------------------------------
#
# Every experiment below runs on two ranks of a gloo process group on this CPU
# (:func:`~torch_pitfalls.run_ranks` starts the processes, and stops them whatever happens).
# A hang must not last 30 minutes here, so the collectives that are meant to fail run on a group
# made with :func:`~torch.distributed.new_group` and ``timeout=`` one second on rank 0 (20 seconds
# on rank 1: each process gives its own timeout); its ranks meet at a barrier of the default group
# first, so that both start the experiment together.
# **With gloo, the first rank to give up closes its connections, and the others then fail at once
# with "Connection closed by peer", which since PyTorch 2.13 goes on "This is typically caused by a
# remote worker crashing", though no worker crashed**: after a hang, that is the message most of a
# gloo job's logs show.
# Rank 0's shorter timeout makes it the one that gives up, on every run.
# The ranks use CPU tensors (gloo), whatever the page's device.
import datetime
import re
import time

import torch
import torch._dynamo  # noqa: F401 -- DDP imports it on first use: once here, not in each rank
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import expect_raises, get_device, run_ranks

TIMEOUT = datetime.timedelta(seconds=1)  # rank 0's: it gives up first
OTHERS = datetime.timedelta(seconds=20)  # the other ranks': they fail when rank 0 gives up
LONG = datetime.timedelta(seconds=30)  # every rank's, where no collective should fail


def group_with_short_timeout(timeout=TIMEOUT, others=OTHERS):
    """A group of all ranks whose collectives give up after ``timeout`` on rank 0 and ``others``
    on the other ranks; ranks start together."""
    group = dist.new_group(timeout=timeout if dist.get_rank() == 0 else others)
    dist.barrier()  # the default group (its default timeout): both ranks are here now
    return group


def done():
    """Wait on the default group until every rank has finished failing, so that no rank exits
    (and tears down its connections) while another still waits."""
    dist.barrier()


def short(message):
    """The first line of an error, without the C++ source location that gloo prefixes, with the
    peer's port (a new one on each run) masked, and without gloo's advice after "crashing."."""
    line = re.sub(r"^\[[^\]]*\.(cc|cpp):\d+\] ", "", message.splitlines()[0])
    line = re.sub(r"(\[[^\]]*\]):\d+", r"\1:<port>", line)
    return re.sub(r"(remote worker crashing\.) .*", r"\1 …", line)


GAVE_UP = r"Timed out waiting 1000ms for \w+ operation to complete"  # rank 0, after its timeout
CLOSED = r"Connection closed by peer \[[^\]]*\]:<port>"  # and, since 2.13, gloo's advice:
ADVICE = r"\. This is typically caused by a remote worker crashing\. …"


def closed(line):
    """Whether ``line`` is gloo's "Connection closed by peer" of the release this page runs on:
    with its advice since PyTorch 2.13 (see "Changed in PyTorch 2.13" below), without before."""
    return re.fullmatch(CLOSED + (ADVICE if torch.__version__ >= "2.13" else ""), line)


device = get_device()
print(f"device: {device}")
print("the default timeout of a process group:", dist.default_pg_timeout)
assert dist.default_pg_timeout == datetime.timedelta(minutes=30)

# %%
# The symptom
# -----------
#
# Rank 0 saves a checkpoint, then calls ``dist.barrier()`` to make the others wait for the file,
# but the barrier is inside ``if rank == 0:``.
# Rank 1 goes on with the next step, whose first collective is the ``all_reduce`` of its loss for
# the log.
# Each rank records where it was stuck and how long it waited:


def save_then_wait(rank, world_size):
    group = group_with_short_timeout()
    start = time.monotonic()
    with expect_raises(
        RuntimeError, "Timed out waiting|Connection closed by peer", show=False
    ) as caught:
        if rank == 0:
            # ... torch.save(model.state_dict(), path) ...
            where = "dist.barrier()"
            dist.barrier(group=group)  # the mistake: only rank 0 gets here
        where = "dist.all_reduce(loss)"
        dist.all_reduce(torch.tensor([1.0]), group=group)  # the next step, on every rank
    waited = time.monotonic() - start
    done()
    # rank 0 waits its whole timeout; rank 1 fails when rank 0 gives up (with some slack: the
    # ranks leave the starting barrier a few milliseconds apart), long before its own timeout
    if rank == 0:
        waited = waited >= TIMEOUT.total_seconds()
    else:
        waited = 0.5 * TIMEOUT.total_seconds() <= waited < OTHERS.total_seconds() / 2
    return where, short(caught.message), waited


stuck = run_ranks(save_then_wait)
print(f"rank 0 stuck in {stuck[0][0]}, waited its whole timeout (1 s): {stuck[0][2]}")
print(f"  {stuck[0][1]}")
print(f"rank 1 stuck in {stuck[1][0]}, waited until rank 0 gave up (not 20 s): {stuck[1][2]}")
print(f"  {stuck[1][1]}")
assert [where for where, _, _ in stuck] == ["dist.barrier()", "dist.all_reduce(loss)"]
assert re.fullmatch(GAVE_UP, stuck[0][1]) and closed(stuck[1][1])
assert all(waited for _, _, waited in stuck)

# %%
# **Both ranks wait, each in a different collective, until the group's timeout: the barrier
# that was meant to hold the others back holds rank 0, and the all_reduce of rank 1 waits for a
# partner that never comes.**
# Rank 0 gave up first and closed its connections, so rank 1's error is "Connection closed by
# peer": the message names no timeout, and (since PyTorch 2.13) blames a crash that did not happen.
# With the default timeout of 30 minutes, that is a job that looks frozen for half an hour.
#
# Why
# ---
#
# A collective is one operation of the whole group: a call on one rank completes only when the
# call on every other rank of the group has arrived.
# **The ranks match their collectives by position: the n-th collective call of rank 0 meets the
# n-th of rank 1, whatever line of the program makes it.**
# Nothing compares the names: a rank whose program takes another branch calls a different
# collective, or one more, and its n-th call meets something else.
# When both calls move data of the same shape, they even complete.
# Two ranks average their loss for the log, and rank 0 averages its accuracy too, just before;
# every rank then meets the others at the barrier that ends the step:


def one_more_on_rank_0(rank, world_size):
    group = group_with_short_timeout()
    accuracy, loss = torch.tensor([0.5 + 0.25 * rank]), torch.tensor([10.0 + 2 * rank])
    with expect_raises(
        RuntimeError, "Timed out waiting|Connection closed by peer", show=False
    ) as caught:
        if rank == 0:
            dist.all_reduce(accuracy, group=group)  # only rank 0 logs it
        dist.all_reduce(loss, group=group)  # every rank
        dist.barrier(group=group)  # every rank, at the end of the step
    done()
    return accuracy.item() / world_size, loss.item() / world_size, short(caught.message)


mixed = run_ranks(one_more_on_rank_0)
print("rank 0's averaged accuracy:", mixed[0][0], "| rank 1's averaged loss:", mixed[1][1])
for rank, (_, _, message) in enumerate(mixed):
    print(f"rank {rank}, then: {message}")
assert mixed[0][0] == mixed[1][1] == (0.5 + 12.0) / 2
assert re.fullmatch(GAVE_UP, mixed[0][2]) and closed(mixed[1][2])

# %%
# Rank 0's accuracy (0.5) was averaged with rank 1's *loss* (12.0): both ranks got 6.25, each in
# a different variable, without an error; rank 0's own ``all_reduce`` of the loss then met rank
# 1's barrier: rank 0 timed out, and rank 1 lost its connection to it.
# The hang is the visible end of a mismatch that started one collective earlier.
#
# Under DDP: a skipped ``backward``
# ---------------------------------
#
# DDP averages the gradients inside ``backward``: each ``backward`` is one ``all_reduce`` per
# bucket of gradients, on every rank.
# A rank that skips a batch — ``continue`` when its loss is not finite, a batch left empty by a
# filter — skips that collective while the others call it.
# Two steps with one weight; rank 1 skips its first step; every input equals 10 × rank + step + 1,
# so each step's gradient shows where it came from:


def skip_a_backward(rank, world_size):
    group = group_with_short_timeout()
    torch.manual_seed(0)
    model = DDP(nn.Linear(1, 1, bias=False), process_group=group)
    gradients = []
    with expect_raises(
        RuntimeError, "Timed out waiting|Connection closed by peer", show=False
    ) as caught:
        for step in range(2):
            if rank == 1 and step == 0:
                continue  # e.g. `if not torch.isfinite(loss): continue`
            model.zero_grad()
            x = torch.full((1, 1), 10.0 * rank + step + 1)
            model(x).sum().backward()
            gradients.append((step, model.module.weight.grad.item()))
        dist.barrier(group=group)  # the end of the epoch
    done()
    return gradients, short(caught.message)


skipped = run_ranks(skip_a_backward)
for rank, (gradients, message) in enumerate(skipped):
    print(f"rank {rank}: (step, gradient) {gradients}, then: {message}")
assert [gradients for gradients, _ in skipped] == [[(0, 6.5)], [(1, 6.5)]]
assert re.fullmatch(GAVE_UP, skipped[0][1]) and closed(skipped[1][1])

# %%
# Rank 0's first gradient, 6.5, is the mean of its step 0 (input 1) and rank 1's step 1
# (input 12): **DDP averaged gradients of two different iterations, without an error.**
# Rank 0's second ``backward`` then had no partner, and rank 1's barrier neither: rank 0 timed out,
# and rank 1 lost its connection to it.
# In a real epoch the mismatch goes on for every remaining step, and the hang comes at the end.
#
# Validation through the DDP model on rank 0 only is the classic form of the pitfall: DDP's
# ``forward`` can start collectives of its own (with ``broadcast_buffers=True``, the default, it
# broadcasts buffers such as BatchNorm's running statistics from rank 0), which the other ranks
# do not call.
#
# Finding the rank that diverged
# ------------------------------
#
# A timeout says that a collective did not complete, not which rank is missing.
# Two tools of :mod:`torch.distributed` say more.
# :func:`~torch.distributed.monitored_barrier` (gloo only) is a barrier whose rank 0 reports the
# ranks that did not arrive in time; put it where all ranks should be:


def who_is_missing(rank, world_size):
    group = group_with_short_timeout()
    if rank == 0:
        with expect_raises(RuntimeError, "failed to pass monitoredBarrier", show=False) as caught:
            dist.monitored_barrier(group=group, timeout=TIMEOUT)
        done()
        return caught.message.splitlines()[0]
    done()  # rank 1 is elsewhere: on the default group, until rank 0 has its answer
    return None


report = run_ranks(who_is_missing)[0]
print(report)
assert "Rank 1 failed to pass monitoredBarrier in 1000 ms" in report

# %%
# With the environment variable ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` set before the process group
# is made (in code, ``dist.set_debug_level(dist.DebugLevel.DETAIL)``), every collective first checks
# that all ranks call the same one, and **a mismatch raises at once, naming what each rank
# called**, instead of waiting for the timeout.
# The barrier inside ``if rank == 0`` again:


def detail_mode(rank, world_size):
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        group = group_with_short_timeout(LONG, LONG)
        start = time.monotonic()
        with expect_raises(RuntimeError, "Detected mismatch between collectives", show=False) as c:
            if rank == 0:
                dist.barrier(group=group)
            dist.all_reduce(torch.tensor([1.0]), group=group)
        done()
        return c.message, time.monotonic() - start < 10
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


detail = run_ranks(detail_mode)
for rank, (message, fast) in enumerate(detail):
    print(f"rank {rank}, well before the timeout: {fast}\n  {message.split('.')[0]}.")
assert all(fast for _, fast in detail)
assert "OpType=BARRIER" in detail[0][0] and "OpType=ALLREDUCE" in detail[1][0]

# %%
# The check costs a collective per collective: use it to debug, not in production runs.
#
# The fix
# -------
#
# **Every rank calls the same collectives in the same order: put collectives outside the
# branches that depend on the rank, and make the decisions that skip work on all ranks
# together.**
# The barrier goes after the ``if``; the work that only rank 0 does (saving, logging, a
# validation pass through ``ddp_model.module``, the plain module, which starts no collective)
# stays inside:


def save_then_wait_fixed(rank, world_size):
    group = group_with_short_timeout(LONG, LONG)
    if rank == 0:
        pass  # ... torch.save(ddp_model.module.state_dict(), path) ...
    dist.barrier(group=group)  # every rank
    loss = torch.tensor([1.0 + rank])
    dist.all_reduce(loss, group=group)
    return loss.item() / world_size


fixed = run_ranks(save_then_wait_fixed)
print("barrier after the if: the next step's loss on each rank:", fixed)
assert fixed == [1.5, 1.5]

# %%
# A batch to skip is skipped by every rank or by none: an ``all_reduce`` of a flag with
# ``ReduceOp.MAX`` tells every rank whether any rank wants to skip, before any rank calls
# ``backward``.


def skip_together(rank, world_size):
    group = group_with_short_timeout(LONG, LONG)
    torch.manual_seed(0)
    model = DDP(nn.Linear(1, 1, bias=False), process_group=group)
    gradients = []
    for step in range(2):
        bad = torch.tensor([1.0 if (rank == 1 and step == 0) else 0.0])
        dist.all_reduce(bad, group=group, op=dist.ReduceOp.MAX)  # any rank's bad batch
        if bad.item():
            continue  # all ranks skip it
        model.zero_grad()
        model(torch.full((1, 1), 10.0 * rank + step + 1)).sum().backward()
        gradients.append((step, model.module.weight.grad.item()))
    dist.barrier(group=group)
    return gradients


together = run_ranks(skip_together)
print("(step, gradient) on each rank:", together)
assert together == [[(1, 7.0)], [(1, 7.0)]]

# %%
# Both ranks skipped step 0, and step 1's gradient is the mean of their step 1 (inputs 2 and 12).
#
# Changed in PyTorch 2.13: "Connection closed by peer" blames a crashed worker
# ----------------------------------------------------------------------------
#
# Up to PyTorch 2.12, gloo's error ended at the peer's address:
# "Connection closed by peer [127.0.0.1]:<port>".
# The gloo that PyTorch 2.13 ships adds advice after it: "This is typically caused by a remote
# worker crashing. Check the logs of the remote worker before reporting an error."
# (`gloo pull request #489 <https://github.com/pytorch/gloo/pull/489>`_, "improve error message on
# connection closed"; the page's ``short`` cuts the line after "crashing.").
# **In the hangs above no worker crashed: on 2.13 and later, read "remote worker crashing" as "a
# rank gave up or exited", and look for a timeout in that rank's log; on older releases, search for
# the message without the advice.**

print("gloo's message on this release:", skipped[1][1])
print("  with the advice about a crashed worker:", "remote worker crashing" in skipped[1][1])
assert ("remote worker crashing" in skipped[1][1]) == (torch.__version__ >= "2.13")

# %%
# A real-world report: a barrier after an early return
# ----------------------------------------------------
#
# In a library that trains sparse autoencoders on several GPUs, training stopped for good at the
# first save: the save method returned at once on every rank but 0, and rank 0 then reached a
# ``dist.barrier()`` alone.
# Run again with ``TORCH_DISTRIBUTED_DEBUG=DETAIL``, the hang became a desynchronisation error
# saying that rank 0 was in a barrier while the others had moved on to a reduction; the fix let
# every rank reach the barrier
# (`EleutherAI/sparsify pull request 5 <https://github.com/EleutherAI/sparsify/pull/5>`_).
# The validation form was reported to PyTorch in 2021: validation on the first GPU only,
# followed by a barrier, hung; a maintainer found that validating on every GPU, or moving the
# barrier before the validation, made it go away
# (`PyTorch issue 54059 <https://github.com/pytorch/pytorch/issues/54059>`_), and on a related
# report another suggested running the evaluation through ``.module``, which skips DDP's
# communication (`PyTorch issue 53979 <https://github.com/pytorch/pytorch/issues/53979>`_).
#
# Takeaway
# --------
#
# **A collective completes only when every rank calls it, and calls are matched by their order:
# a barrier, an all_reduce or a backward that only some ranks reach hangs the job until the
# timeout, after mixing whatever was matched in between.**
# Keep collectives out of ``if rank == 0:``, decide skips on all ranks together, run rank-0-only
# evaluation through ``ddp_model.module``, and when a job hangs, look for the branch with
# ``monitored_barrier`` or ``TORCH_DISTRIBUTED_DEBUG=DETAIL``.
