"""Running a function on several ranks of a CPU process group (gloo), for the distributed pages.

A page that shows what differs between ranks (gradients that were not averaged, samples a rank
repeats) needs real processes: :func:`run_ranks` starts them, gives each an initialised process
group, collects what each returns, and leaves nothing running, whatever happens. Introduced on
"call-module-not-forward".

The rendezvous is a :class:`torch.distributed.FileStore` in a fresh temporary folder, not a TCP
port, so that tests and builds running at the same time cannot collide.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

#: Seconds a rank may take to exit once every rank's result is in (its process group's teardown);
#: then it is terminated.
TEARDOWN = 10.0

#: Start methods :func:`~torch_pitfalls.run_ranks` accepts.
START_METHODS = ("fork", "spawn", "forkserver")


def _native_stdout_to_stderr() -> None:
    """In a rank: send what native code writes to file descriptor 1 to the standard error, while
    Python's ``print`` still writes to the standard output.

    Gloo's connection log (``[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of
    connected peer ranks is : 1``) is written with ``std::cout`` by the Gloo of PyTorch 2.8 and
    2.9, once per rank and process group, and no setting silences it (later Gloo logs it at the
    info level, off by default). The ranks write at the same time, so its pieces interleave with
    each other and with the page's output; on the standard error they are kept apart from what
    the page prints.
    """
    try:
        stdout_fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stdout (a docs build): no fd 1
        stdout_fd = None
    try:
        sys.stdout.flush()
        if stdout_fd == 1:  # Python's stdout is fd 1: keep it on a copy of the real one
            sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
    except OSError:  # no fd 1 or 2 to redirect: nothing native can write there either
        pass


def _deliver(results, outcome) -> None:
    """Put a rank's ``outcome`` in the queue and wait until it is written to the pipe.

    The queue writes from a thread of its own; the rank waits for it before it destroys its process
    group, because that teardown can hang while it holds the GIL (gloo on PyTorch 2.6, about one
    run in four of ddp-rank-divergent-collectives), which would keep the result from ever leaving.
    """
    results.put(outcome)
    results.close()
    results.join_thread()


def _rank_main(fn, rank, world_size, store_path, backend, results) -> None:
    _native_stdout_to_stderr()
    import torch
    import torch.distributed as dist

    delivered = False
    try:
        torch.set_num_threads(1)
        store = dist.FileStore(store_path, world_size)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size)
        try:
            # pickled here, by value: a tensor put in the queue as it is would travel as a handle
            # to this process's shared memory, gone when the rank exits
            outcome = (rank, "ok", pickle.dumps(fn(rank, world_size)))
        except BaseException:  # reported to the parent, which raises it
            outcome = (rank, "error", traceback.format_exc())
        _deliver(results, outcome)
        delivered = True
        dist.destroy_process_group()
    except BaseException:  # no group, or no result delivered: report it
        if not delivered:
            _deliver(results, (rank, "error", traceback.format_exc()))


def run_ranks(
    fn: Callable[[int, int], Any],
    world_size: int = 2,
    *,
    backend: str = "gloo",
    start_method: str = "fork",
    timeout: float = 120.0,
) -> list[Any]:
    """Run ``fn(rank, world_size)`` on each rank of a new process group; return their results.

    Each rank is a child process with :func:`torch.distributed.init_process_group` already called
    (``backend``, a file store) and one intra-op thread; the group is destroyed when ``fn``
    returns. With ``start_method="fork"`` (the default, POSIX only), ``fn`` may be defined in the
    calling script; with ``"spawn"`` or ``"forkserver"`` it must be importable (pickled).

    Args:
        fn: called as ``fn(rank, world_size)`` in each rank; returns a picklable value.
        world_size: the number of ranks (``int`` ≥ 1).
        backend: the process group's backend (``str``), ``"gloo"`` for the CPU.
        start_method: one of :data:`~torch_pitfalls.ranks.START_METHODS`.
        timeout: seconds (``float`` > 0) for all ranks together, start-up included.

    Returns:
        The value each rank returned, in rank order (``list``).

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``world_size`` is not a positive ``int``, ``timeout`` is not positive, or
            ``start_method`` is not one of :data:`~torch_pitfalls.ranks.START_METHODS` available
            here.
        RuntimeError: a rank raised (its traceback is in the message) or died.
        TimeoutError: the ranks did not all finish within ``timeout``; all are terminated.

    Source: :func:`torch.distributed.init_process_group` (``store``, ``rank``, ``world_size``).

    >>> def rank_sum(rank, world_size):
    ...     import torch, torch.distributed as dist
    ...     t = torch.tensor([rank + 1.0])
    ...     dist.all_reduce(t)
    ...     return t.item()
    >>> run_ranks(rank_sum, 2)  # doctest: +SKIP
    [3.0, 3.0]
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(rank, world_size), got {type(fn).__name__}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if start_method not in START_METHODS or start_method not in (
        multiprocessing.get_all_start_methods()
    ):
        available = [m for m in START_METHODS if m in multiprocessing.get_all_start_methods()]
        raise ValueError(f"start_method must be one of {available}, got {start_method!r}")

    context = multiprocessing.get_context(start_method)
    results = context.Queue()
    with tempfile.TemporaryDirectory(prefix="torch-pitfalls-ranks-") as folder:
        store_path = os.path.join(folder, "store")
        processes = [
            context.Process(
                target=_rank_main,
                args=(fn, rank, world_size, store_path, backend, results),
                daemon=True,
            )
            for rank in range(world_size)
        ]
        for process in processes:
            process.start()
        deadline = time.monotonic() + timeout
        received: dict[int, tuple[str, Any]] = {}
        try:
            while len(received) < world_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{world_size - len(received)} of {world_size} ranks did not finish "
                        f"within {timeout} s"
                    )
                try:
                    rank, status, value = results.get(timeout=min(left, 0.5))
                except queue.Empty:
                    dead = [
                        r
                        for r, p in enumerate(processes)
                        if r not in received and p.exitcode not in (None, 0)
                    ]
                    if dead:
                        raise RuntimeError(
                            f"rank {dead[0]} died with exit code {processes[dead[0]].exitcode}"
                        ) from None
                    continue
                received[rank] = (status, value)
                if status == "error":
                    # A rank's error usually makes the others fail too (a peer gone): wait a
                    # moment for theirs, and report every error, the first one received first.
                    grace = time.monotonic() + 2.0
                    while len(received) < world_size and time.monotonic() < grace:
                        try:
                            other, other_status, other_value = results.get(timeout=0.2)
                            received[other] = (other_status, other_value)
                        except queue.Empty:
                            continue
                    errors = [(r, v) for r, (st, v) in received.items() if st == "error"]
                    raise RuntimeError("\n".join(f"rank {r} raised:\n{text}" for r, text in errors))
            for process in processes:  # every result is in: only teardowns are left
                process.join(timeout=min(max(deadline - time.monotonic(), 1.0), TEARDOWN))
        finally:
            for process in processes:
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=5)
                if process.is_alive():
                    process.kill()
                    process.join()
            results.close()
    return [pickle.loads(received[rank][1]) for rank in range(world_size)]
