"""Running a function on several ranks of a CPU process group (gloo), for the distributed pages.

A page that shows what differs between ranks (gradients that were not averaged, samples a rank
repeats) needs real processes: :func:`run_ranks` starts them, gives each an initialised process
group, collects what each returns, and leaves nothing running, whatever happens. Introduced on
"call-module-not-forward".

The rendezvous is a :class:`torch.distributed.FileStore` in a fresh temporary folder, not a TCP
port, so that tests and builds running at the same time cannot collide.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import queue
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

#: Seconds a rank may take to exit once every rank's result is in (its process group's teardown);
#: then it is terminated.
TEARDOWN = 10.0

#: Start methods :func:`~torch_pitfalls.run_ranks` accepts: :mod:`multiprocessing`'s three, and
#: ``"fresh"``, a new Python interpreter per rank that runs ``fn`` alone.
START_METHODS = ("fork", "spawn", "forkserver", "fresh")

START_METHOD_ENV = "TORCH_PITFALLS_START_METHOD"
"""The start method :func:`run_ranks` uses when it is given none (``fork``, ``fresh``, ...)."""


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


def _run_rank(fn, rank, world_size, store_path, backend, deliver, dumps) -> None:
    """In a rank: make the process group, run ``fn``, ``deliver`` its outcome, tear the group down.

    ``deliver`` has sent the outcome when it returns; ``dumps`` pickles ``fn``'s result."""
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
            outcome = (rank, "ok", dumps(fn(rank, world_size)))
        except BaseException:  # reported to the parent, which raises it
            outcome = (rank, "error", traceback.format_exc())
        deliver(outcome)
        delivered = True
        dist.destroy_process_group()
    except BaseException:  # no group, or no result delivered: report it
        if not delivered:
            deliver((rank, "error", traceback.format_exc()))


def _rank_main(fn, rank, world_size, store_path, backend, results) -> None:
    """A rank started by :mod:`multiprocessing`; its outcome goes back through ``results``."""
    _native_stdout_to_stderr()
    _run_rank(
        fn,
        rank,
        world_size,
        store_path,
        backend,
        lambda outcome: _deliver(results, outcome),
        pickle.dumps,
    )


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader finds the whole file or none."""
    with open(path + ".partial", "wb") as file:
        file.write(data)
    os.replace(path + ".partial", path)


#: What a fresh rank's interpreter runs: the caller's ``sys.path``, then :func:`_fresh_rank_main`.
_FRESH_BOOTSTRAP = (
    "import json, sys\n"
    "spec = json.loads(sys.argv[1])\n"
    "sys.path[:] = spec['path'] + [p for p in sys.path if p not in spec['path']]\n"
    "from torch_pitfalls.ranks import _fresh_rank_main\n"
    "_fresh_rank_main(spec)\n"
)


def _fresh_rank_main(spec: dict) -> None:
    """A rank started as a fresh interpreter (``start_method="fresh"``): ``fn`` comes from a file
    that cloudpickle wrote, and the outcome goes back as a file that the parent waits for."""
    if hasattr(signal, "alarm"):  # a safety net: a rank whose parent was killed ends on its own
        signal.alarm(spec["alarm"])
    _native_stdout_to_stderr()
    rank = spec["rank"]

    def deliver(outcome) -> None:
        sys.stdout.flush()
        _write_atomically(spec["result"], pickle.dumps(outcome))

    _load_like_the_caller(spec.get("modules", ()))
    try:
        import cloudpickle

        with open(spec["fn"], "rb") as file:
            fn = pickle.load(file)
    except BaseException:  # fn cannot be rebuilt here: report it
        deliver((rank, "error", traceback.format_exc()))
        return
    _run_rank(
        fn, rank, spec["world_size"], spec["store"], spec["backend"], deliver, cloudpickle.dumps
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # as multiprocessing's ranks do: no interpreter teardown (a second or so with torch loaded)
    os._exit(0)


#: The packages whose modules a fresh rank imports before the rendezvous when the caller has them
#: (not every torch module the caller has: a test process holds Dynamo's and Inductor's, several
#: seconds of imports per rank for nothing).
_MIRRORED = ("torch.distributed", "torch.nn.parallel")


def _load_like_the_caller(modules) -> None:
    """In a fresh rank, before the rendezvous: import the distributed modules the caller had
    imported (:data:`_MIRRORED`), and ask whether an accelerator is available, as the caller did
    when it chose this start.

    A forked rank inherits both; a fresh one would otherwise pay for them inside ``fn``, at
    different moments on different ranks (DDP's constructor imports and asks lazily), which a
    collective with a short timeout does not wait for: on a GPU machine, ranks of
    ddp-rank-divergent-collectives, whose group gives up after one second, timed out in
    ``DistributedDataParallel``'s first collective. A module that cannot be imported here is
    skipped: ``fn`` fails on it as it would have, if it needs it.
    """
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  (any module: a plugin, a private one)
            continue
    import torch

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        accelerator.is_available()
    else:
        torch.cuda.is_available()


def _fork_is_safe() -> bool:
    """Whether this machine has no accelerator, so that forking a rank is safe.

    ``torch.accelerator.is_available()`` (PyTorch 2.6 and later; ``torch.cuda.is_available()``
    before). On CUDA it asks the driver, as any CUDA use would, so that a process forked after it
    cannot use CUDA: no rank started by :func:`run_ranks` is forked there.
    """
    import torch

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        return not accelerator.is_available()
    return not torch.cuda.is_available()


def _available_start_methods() -> list[str]:
    methods = multiprocessing.get_all_start_methods()
    return [m for m in START_METHODS if m in methods or m == "fresh"]


def _default_start_method() -> str:
    chosen = os.environ.get(START_METHOD_ENV, "").strip()
    if chosen:
        if chosen not in _available_start_methods():
            raise ValueError(
                f"the environment variable {START_METHOD_ENV} must be one of "
                f"{_available_start_methods()}, got {chosen!r}"
            )
        return chosen
    if "fork" in multiprocessing.get_all_start_methods() and _fork_is_safe():
        return "fork"
    return "fresh"


def run_ranks(
    fn: Callable[[int, int], Any],
    world_size: int = 2,
    *,
    backend: str = "gloo",
    start_method: str | None = None,
    timeout: float = 120.0,
) -> list[Any]:
    """Run ``fn(rank, world_size)`` on each rank of a new process group; return their results.

    Each rank is a child process with :func:`torch.distributed.init_process_group` already called
    (``backend``, a file store) and one intra-op thread; the group is destroyed when ``fn``
    returns. ``fn`` may be defined in the calling script, including a script run as
    ``python plot_x.py`` or through :func:`runpy.run_path`.

    How the ranks start (``start_method``):

    * ``None`` (the default): the value of the environment variable ``TORCH_PITFALLS_START_METHOD``
      when it is set; else ``"fork"`` on a machine without an accelerator
      (``torch.accelerator.is_available()``, :func:`torch.cuda.is_available` before PyTorch
      2.6, is ``False``), and ``"fresh"`` on a machine with one, or where there is no fork.
    * ``"fork"`` (POSIX only): a copy of this process, which starts at once. It is not safe once
      this process may have used a GPU: a forked process cannot use CUDA after its parent did
      ("Cannot re-initialize CUDA in forked subprocess"), and once the parent has run a
      ``backward`` on a machine with a GPU, the autograd engine's threads make every ``backward``
      of a forked child raise "Unable to handle autograd's threading in combination with
      fork-based multiprocessing" (`PyTorch wiki: Autograd and Fork
      <https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork>`_), even a CPU one.
    * ``"fresh"``: a new Python interpreter (``sys.executable``, this process's ``sys.path`` and
      environment) that imports ``torch_pitfalls.ranks`` and the distributed modules this
      process had imported, and runs ``fn``, sent to it pickled with ``cloudpickle`` (by value
      when it is defined in the calling script), so that the caller's script is not run again in
      every rank. Each rank imports :mod:`torch` anew, a few seconds more per call than
      ``"fork"``.
      What ``fn`` prints is printed here, rank after rank, once the ranks have finished.
    * ``"spawn"`` or ``"forkserver"``: :mod:`multiprocessing`'s; ``fn`` must be importable, and
      the child runs the top level of the caller's ``__main__`` module again.

    Args:
        fn: called as ``fn(rank, world_size)`` in each rank; returns a picklable value.
        world_size: the number of ranks (``int`` ≥ 1).
        backend: the process group's backend (``str``), ``"gloo"`` for the CPU.
        start_method: one of :data:`~torch_pitfalls.ranks.START_METHODS`, or ``None`` to choose
            as above.
        timeout: seconds (``float`` > 0) for all ranks together, start-up included.

    Returns:
        The value each rank returned, in rank order (``list``).

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``world_size`` is not a positive ``int``, ``timeout`` is not positive, or
            ``start_method`` (or ``TORCH_PITFALLS_START_METHOD``) is not one of
            :data:`~torch_pitfalls.ranks.START_METHODS` available here.
        RuntimeError: a rank raised (its traceback is in the message) or died; or
            ``"fresh"`` without ``cloudpickle`` installed.
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
    if start_method is not None and start_method not in _available_start_methods():
        raise ValueError(
            f"start_method must be one of {_available_start_methods()} or None, "
            f"got {start_method!r}"
        )
    method = start_method or _default_start_method()
    if method == "fresh":
        return _run_fresh(fn, world_size, backend, timeout)
    return _run_multiprocessing(fn, world_size, backend, method, timeout)


def _gather(world_size, timeout, deadline, receive, exit_code) -> dict[int, tuple[str, Any]]:
    """Wait for every rank's outcome; raise a rank's error, a dead rank or the timeout.

    ``receive(wait)`` returns the outcomes that came in (waiting up to ``wait`` seconds for one);
    ``exit_code(rank)`` is the exit status of a rank that has ended without an outcome, or
    ``None``."""
    received: dict[int, tuple[str, Any]] = {}
    while len(received) < world_size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(
                f"{world_size - len(received)} of {world_size} ranks did not finish "
                f"within {timeout} s"
            )
        outcomes = receive(min(left, 0.5))
        if not outcomes:
            dead = [
                (r, code)
                for r in range(world_size)
                if r not in received and (code := exit_code(r)) is not None
            ]
            if dead:
                raise RuntimeError(f"rank {dead[0][0]} died with exit code {dead[0][1]}")
            continue
        for rank, status, value in outcomes:
            received[rank] = (status, value)
        if any(status == "error" for status, _ in received.values()):
            # A rank's error usually makes the others fail too (a peer gone): wait a moment for
            # theirs, and report every error, the first one received first.
            grace = time.monotonic() + 2.0
            while len(received) < world_size and time.monotonic() < grace:
                for other, other_status, other_value in receive(0.2):
                    received[other] = (other_status, other_value)
            errors = [(r, v) for r, (st, v) in received.items() if st == "error"]
            raise RuntimeError("\n".join(f"rank {r} raised:\n{text}" for r, text in errors))
    return received


def _run_multiprocessing(fn, world_size, backend, start_method, timeout) -> list[Any]:
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

        def receive(wait):
            try:
                return [results.get(timeout=wait)]
            except queue.Empty:
                return []

        def exit_code(rank):
            code = processes[rank].exitcode
            return None if code in (None, 0) else code

        try:
            received = _gather(world_size, timeout, deadline, receive, exit_code)
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


def _run_fresh(fn, world_size, backend, timeout) -> list[Any]:
    try:
        import cloudpickle
    except ImportError:
        raise RuntimeError(
            "run_ranks starts its ranks as fresh interpreters here (a machine with an "
            "accelerator, or start_method='fresh'), which needs cloudpickle: "
            "pip install cloudpickle"
        ) from None
    try:
        payload = cloudpickle.dumps(fn)
    except Exception as error:
        error.add_note(f"run_ranks: fn ({fn!r}) must be picklable with cloudpickle")
        raise
    with tempfile.TemporaryDirectory(prefix="torch-pitfalls-ranks-") as folder:
        fn_path = os.path.join(folder, "fn.pickle")
        _write_atomically(fn_path, payload)
        results = [os.path.join(folder, f"rank-{rank}.result") for rank in range(world_size)]
        printed = [os.path.join(folder, f"rank-{rank}.out") for rank in range(world_size)]
        processes: list[subprocess.Popen] = []
        taken: set[int] = set()
        modules = sorted(
            name
            for name, module in list(sys.modules.items())
            if module is not None and name.startswith(_MIRRORED)
        )

        def receive(wait):
            end = time.monotonic() + wait
            while True:
                found = []
                for rank in range(world_size):
                    if rank not in taken and os.path.exists(results[rank]):
                        with open(results[rank], "rb") as file:
                            found.append(pickle.load(file))
                        taken.add(rank)
                if found or time.monotonic() >= end:
                    return found
                time.sleep(0.02)

        def exit_code(rank):
            code = processes[rank].poll()
            if code is None or os.path.exists(results[rank]):
                return None  # running, or its outcome is in (read at the next receive)
            return code

        try:
            for rank in range(world_size):
                spec = {
                    "path": [os.fspath(p) for p in sys.path if isinstance(p, (str, os.PathLike))],
                    "rank": rank,
                    "world_size": world_size,
                    "backend": backend,
                    "store": os.path.join(folder, "store"),
                    "fn": fn_path,
                    "result": results[rank],
                    "alarm": int(timeout + TEARDOWN) + 30,
                    "modules": modules,
                }
                with open(printed[rank], "wb") as output:  # the child holds its own copy
                    processes.append(
                        subprocess.Popen(
                            [sys.executable, "-c", _FRESH_BOOTSTRAP, json.dumps(spec)],
                            stdin=subprocess.DEVNULL,
                            stdout=output,
                        )
                    )
            deadline = time.monotonic() + timeout
            received = _gather(world_size, timeout, deadline, receive, exit_code)
            for process in processes:  # every result is in: only teardowns are left
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=min(max(deadline - time.monotonic(), 1.0), TEARDOWN))
        finally:
            for process in processes:
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
            for path in printed[: len(processes)]:  # what the ranks printed, rank after rank
                with open(path, encoding="utf-8", errors="replace") as file:
                    text = file.read()
                if text:
                    sys.stdout.write(text)
    return [pickle.loads(received[rank][1]) for rank in range(world_size)]
