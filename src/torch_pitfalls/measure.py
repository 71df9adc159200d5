"""Measuring what autograd keeps and how long code takes.

Memory is counted as the bytes of the tensors autograd saves for backward, found with
:class:`torch.autograd.graph.saved_tensors_hooks`: this number is the same on every machine.
Time depends on the machine: :func:`compare_times` times callables against each other, robustly
on a busy machine; pages show the results as ratios, printed by :func:`measured` with the machine
they were measured on. Introduced on "requires-grad-propagation" and "no-grad-evaluation".
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

import torch
from torch.utils import benchmark


@dataclass
class SavedTensors:
    """Tensors that autograd saved for backward while :func:`saved_tensors` was active.

    Attributes:
        count: number of times a tensor was saved (``int``; one tensor saved twice counts twice).
        nbytes: bytes of the distinct storages those tensors use (``int``, bytes). A parameter or an
            input that is saved is counted too: the graph keeps it alive, even though it is not a
            copy.
    """

    count: int = 0
    nbytes: int = 0
    _storages: set[tuple[str, int]] = field(default_factory=set, repr=False)

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.count += 1
        storage = tensor.untyped_storage()
        key = (str(tensor.device), storage.data_ptr())
        if key not in self._storages:
            self._storages.add(key)
            self.nbytes += storage.nbytes()
        return tensor


@contextmanager
def saved_tensors() -> Iterator[SavedTensors]:
    """Record the tensors autograd saves for backward inside the block.

    Only recording changes: every tensor is saved as it would be without the hooks.

    Yields:
        A :class:`SavedTensors` filled in as the graph is recorded.

    Source: `Hooks for saved tensors
    <https://docs.pytorch.org/docs/stable/notes/autograd.html#hooks-for-saved-tensors>`_ in
    PyTorch's autograd mechanics notes.

    >>> w = torch.ones(1000, requires_grad=True)      # 1000 float32 = 4000 bytes
    >>> with saved_tensors() as saved:
    ...     loss = (w * w).sum()                       # mul saves both operands: w, twice
    >>> saved.count, saved.nbytes
    (2, 4000)
    >>> with torch.no_grad(), saved_tensors() as saved:
    ...     loss = (w * w).sum()
    >>> saved.count, saved.nbytes
    (0, 0)
    """
    record = SavedTensors()
    with torch.autograd.graph.saved_tensors_hooks(record._pack, lambda tensor: tensor):
        yield record


def graph_nodes(tensor: torch.Tensor) -> int:
    """Count the nodes of the autograd graph that ends at ``tensor``.

    Every backward function reachable from ``tensor.grad_fn`` is counted once, including the
    ``AccumulateGrad`` nodes of leaf tensors that require grad.

    Args:
        tensor: any tensor; one without a ``grad_fn`` (a leaf, or a result computed without
            autograd) has 0 nodes.

    Returns:
        The number of nodes (``int``).

    Raises:
        TypeError: ``tensor`` is not a :class:`torch.Tensor`.

    >>> x = torch.ones(3, requires_grad=True)
    >>> graph_nodes((x * 2).sum())      # SumBackward0, MulBackward0, AccumulateGrad
    3
    >>> graph_nodes(torch.ones(3).sum())
    0
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    # The Python object of a graph node lives only while referenced: keep every node visited, so
    # that no id is reused by a node met later (PyTorch returns the same object for a node while
    # one is alive).
    seen: dict[int, object] = {}
    stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return len(seen)


TIMING_THREADS = 1
"""Intra-op threads used while timing (:func:`torch.set_num_threads`), unless told otherwise.

One thread: on a busy machine, an operation split over several threads waits for its slowest
thread, and a thread that the other load has descheduled can stall it for a whole time slice;
one thread also makes times comparable between machines with different core counts.
"""


def _check_threads(num_threads: int) -> None:
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be an int >= 1, got {num_threads!r}")


def median_time(
    fn: Callable[[], object], *, min_run_time: float = 0.2, num_threads: int = TIMING_THREADS
) -> float:
    """Median time of one call of ``fn``, in seconds, measured with :mod:`torch.utils.benchmark`.

    :class:`torch.utils.benchmark.Timer` runs a warm-up, synchronises CUDA around each measurement
    and repeats until ``min_run_time`` seconds have been spent, on ``num_threads`` threads. The
    result depends on the machine: to compare callables, use :func:`compare_times`.

    Args:
        fn: a callable taking no argument.
        min_run_time: seconds to spend measuring (``float`` > 0).
        num_threads: intra-op threads while measuring (``int`` ≥ 1; default
            :data:`~torch_pitfalls.measure.TIMING_THREADS`, 1).

    Returns:
        The median time of one call, in seconds (``float``).

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``min_run_time`` is not positive, or ``num_threads`` < 1.

    Source: `Benchmark Utils <https://docs.pytorch.org/docs/stable/benchmark_utils.html>`_.

    >>> median_time(lambda: None, min_run_time=0.01) > 0
    True
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not min_run_time > 0:
        raise ValueError(f"min_run_time must be > 0 seconds, got {min_run_time!r}")
    _check_threads(num_threads)
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=num_threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median


def compare_times(
    *fns: Callable[[], object],
    rounds: int = 51,
    block: float = 1e-3,
    num_threads: int = TIMING_THREADS,
    expect: Callable[[list[float]], bool] | None = None,
    attempts: int = 3,
    contexts: Sequence[Callable[[], AbstractContextManager]] | None = None,
) -> list[float]:
    """Fastest time of one call of each callable, timed with :mod:`torch.utils.benchmark`.

    Built to give the same ratios on a busy machine as on an idle one:

    * each callable gets a :class:`torch.utils.benchmark.Timer` that runs it on ``num_threads``
      intra-op threads (by default :data:`~torch_pitfalls.measure.TIMING_THREADS`, 1), so that
      no operation waits for a thread that the machine's other load has stalled;
    * a first timing of one call chooses how many calls each later timing makes, so that a
      timing lasts about ``block`` seconds (at least one call); ``Timer.timeit`` runs two or more
      warm-up calls before each timing;
    * each of the ``rounds`` rounds times every callable once, in the given order on even rounds
      and in reverse on odd ones, so that all see the same conditions and none always runs first;
    * the fastest timing of each callable is kept. Other processes only ever add time, when the
      operating system runs them instead; a timing shorter than a scheduler time slice often
      escapes them, and the fastest of many is the time of the code itself. Medians do not
      escape: with both cores of a 2-core machine busy, medians of 2-ms timings gave ratios from
      0.1 to 10 for two loops whose fastest times stayed 1.2 apart. Python's :mod:`timeit`
      documentation advises the minimum for the same reason.

    A callable that must run in some state that takes time to enter (the project's guards,
    say) gets it from ``contexts``: one context-manager factory per callable, entered around
    each of its timings and left after it, outside the timed calls.

    The timer synchronises CUDA before it reads the clock, so that a time includes the GPU work
    that the calls queued. Introduced on "no-grad-evaluation"; compare the results as ratios, and
    print them with :func:`measured`, which names the machine
    (:func:`~torch_pitfalls.measure.machine`).

    A page that asserts the direction of a comparison passes that direction as ``expect``, a
    predicate of the list of times (``lambda t: t[0] / t[1] > 1.05``). A comparison whose times
    do not satisfy it is measured again, up to ``attempts`` comparisons in all, before it fails:
    another program can slow one callable for a whole comparison, but not, by chance, for every
    one of them; a real change of behaviour fails all of them. This is the one retry mechanism of
    the site: no page keeps a loop of its own.

    Args:
        fns: two or more callables taking no argument.
        rounds: number of interleaved rounds (``int`` ≥ 1); the whole comparison takes about
            ``rounds × block × len(fns)`` seconds on an idle machine (longer for a callable
            slower than ``block``, or under load).
        block: target duration of one timing (``float`` > 0, seconds).
        num_threads: intra-op threads while timing (``int`` ≥ 1).
        expect: a predicate of the returned times that the comparison must satisfy, or
            ``None`` (the default) to measure once and return whatever it gives.
        attempts: how many comparisons, at most, until ``expect`` holds (``int`` ≥ 1).
        contexts: ``None``, or one callable per callable of ``fns`` that returns a context
            manager (:func:`contextlib.nullcontext` for none) to time that callable in.

    Returns:
        The fastest time of one call of each callable, in seconds (``list`` of ``float``), in
        the order given: with ``expect``, those of the first comparison that satisfies it.

    Raises:
        TypeError: fewer than two callables, one is not callable, ``expect`` is not callable,
            or ``contexts`` does not hold one callable per callable.
        ValueError: ``rounds`` < 1, ``block`` ≤ 0, ``num_threads`` < 1 or ``attempts`` < 1.
        AssertionError: ``expect`` held for none of the ``attempts`` comparisons; the message
            lists every comparison's times.

    Sources: `Benchmark Utils <https://docs.pytorch.org/docs/stable/benchmark_utils.html>`_ in
    PyTorch's documentation, and the note on :meth:`timeit.Timer.repeat` in Python's.

    >>> fast, slow = compare_times(lambda: None, lambda: sum(range(10_000)), rounds=5)
    >>> slow > fast
    True
    >>> compare_times(lambda: None, lambda: None, rounds=1, expect=lambda t: False, attempts=2)
    Traceback (most recent call last):
      ...
    AssertionError: the times did not satisfy expect in 2 comparison(s): ...
    """
    if len(fns) < 2 or not all(callable(fn) for fn in fns):
        raise TypeError("compare_times needs two or more callables taking no argument")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an int >= 1, got {rounds!r}")
    if not block > 0:
        raise ValueError(f"block must be > 0 seconds, got {block!r}")
    _check_threads(num_threads)
    if expect is not None and not callable(expect):
        raise TypeError(f"expect must be a predicate of the list of times, got {expect!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"attempts must be an int >= 1, got {attempts!r}")
    if contexts is None:
        contexts = [nullcontext] * len(fns)
    if len(contexts) != len(fns) or not all(callable(c) for c in contexts):
        raise TypeError("contexts needs one context-manager factory per callable")
    timers = [
        benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=num_threads) for fn in fns
    ]
    seen = []
    for _ in range(attempts if expect is not None else 1):
        # Timer.timeit(n) calls the statement max(n // 100, 2) times to warm up, then times n.
        numbers = []
        for timer, context in zip(timers, contexts, strict=True):
            with context():
                numbers.append(max(1, round(block / timer.timeit(1).times[0])))
        best = [float("inf")] * len(fns)
        for r in range(rounds):
            for i in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
                with contexts[i]():
                    best[i] = min(best[i], timers[i].timeit(numbers[i]).times[0])
        if expect is None or expect(best):
            return best
        seen.append(best)
    raise AssertionError(
        f"the times did not satisfy expect in {len(seen)} comparison(s): "
        + "; ".join(", ".join(f"{t:.3g} s" for t in times) for times in seen)
    )


def peak_cuda_bytes(fn: Callable[[], object], device: torch.device | str = "cuda") -> int:
    """Peak CUDA memory allocated while ``fn`` runs and what it returns is alive, in bytes.

    Measured with :func:`torch.cuda.max_memory_allocated` after
    :func:`torch.cuda.reset_peak_memory_stats`, minus what was allocated before the call. The
    result of ``fn`` is kept until the measurement ends, so memory it holds (a graph, say) counts.
    Introduced on "no-grad-evaluation". Depends on the GPU and the CUDA caching allocator.

    Args:
        fn: a callable taking no argument.
        device: a CUDA device (``torch.device`` or ``str``).

    Returns:
        Bytes (``int``).

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``device`` is not a CUDA device.
        RuntimeError: CUDA is not available.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"peak_cuda_bytes measures a CUDA device, got {device}")
    if not torch.cuda.is_available():
        raise RuntimeError("peak_cuda_bytes needs CUDA, which is not available")
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    kept = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - start
    del kept
    return peak


MEASURED = "[measured]"
"""The tag that starts every printed line holding a time or memory measurement."""


def _cpu_name() -> str:
    # /proc/cpuinfo on Linux, sysctl on macOS, else platform.processor(); a virtual machine may
    # report a generic name ("AMD EPYC").
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    name = value
                    break
    except OSError:
        pass
    if not name and platform.system() == "Darwin":
        try:
            query = ["sysctl", "-n", "machdep.cpu.brand_string"]
            name = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            pass
    name = " ".join((name or platform.processor() or "").split())
    return name or "unknown CPU"


def machine(device: torch.device | str = "cpu", *, num_threads: int = TIMING_THREADS) -> str:
    """Where a measurement was made: the device, its model and the PyTorch version.

    For the CPU: the processor's model name, as the operating system reports it, and the threads
    used out of the CPUs it offers (:func:`os.cpu_count`); for CUDA: the GPU's name
    (:func:`torch.cuda.get_device_name`). Used by :func:`~torch_pitfalls.measured`.

    Args:
        device: the device measured (``torch.device`` or ``str``).
        num_threads: intra-op threads the measurement used (``int`` ≥ 1; default
            :data:`~torch_pitfalls.measure.TIMING_THREADS`, which
            :func:`~torch_pitfalls.compare_times` uses).

    Returns:
        For example ``"cpu (AMD EPYC, 1 thread of 2 CPUs, PyTorch 2.13.0)"`` or
        ``"cuda (NVIDIA H200, PyTorch 2.13.0)"`` (``str``).

    >>> machine("cpu").startswith("cpu (")
    True
    """
    device = torch.device(device)
    if device.type == "cuda":
        what = torch.cuda.get_device_name(device)
    elif device.type == "cpu":
        threads = "thread" if num_threads == 1 else "threads"
        what = f"{_cpu_name()}, {num_threads} {threads} of {os.cpu_count()} CPUs"
    else:
        what = device.type
    return f"{device.type} ({what}, PyTorch {torch.__version__})"


def measured(text: str, device: torch.device | str | None = None) -> str:
    """Tag a line of output that holds a measurement, which varies between runs and machines.

    Pages print times and peak memory through it, so a reader sees which numbers depend on the
    machine, and the reproducibility check (``nox -s reproducible``) compares everything else:
    it skips the lines that start with ``[measured]``. With ``device``, the line also says where
    the measurement was made (:func:`~torch_pitfalls.measure.machine`).

    Args:
        text: the line to print (``str``).
        device: the device measured (``torch.device`` or ``str``), or ``None``.

    Returns:
        ``text`` prefixed with ``[measured]`` and, with ``device``, with ``on <machine>:``
        (``str``).

    Raises:
        TypeError: ``text`` is not a ``str``.

    >>> print(measured("1.52× slower"))
    [measured] 1.52× slower
    >>> print(measured("1.52× slower", "cpu"))
    [measured] on cpu (..., 1 thread of ... CPUs, PyTorch ...): 1.52× slower
    """
    if not isinstance(text, str):
        raise TypeError(f"measured() takes the line to print, a str, got {type(text).__name__}")
    if device is None:
        return f"{MEASURED} {text}"
    return f"{MEASURED} on {machine(device)}: {text}"


MEASURED_LINE = re.compile(
    r"^\[measured\](?: on (?P<device>[\w:]+)(?: \((?P<what>.*), PyTorch (?P<torch>[^)]+)\))?:)? ",
    re.MULTILINE,
)
"""The start of a line printed through :func:`~torch_pitfalls.measured`."""

_CPU = re.compile(r"^(?P<cpu>.*), (?P<threads>\d+) threads? of (?P<cpus>\d+) CPUs$")


def localize(text: str, language: str) -> str:
    """``text`` with the tag of every measured line (:func:`~torch_pitfalls.measured`) in
    ``language``: the docs build runs each page once and shows its output in both languages.

    Raises:
        ValueError: ``language`` is not ``"en"`` or ``"zh_CN"``.

    >>> print(localize("[measured] on cpu (AMD EPYC, 1 thread of 2 CPUs, PyTorch 2.13.0): 1.2×",
    ...                "zh_CN"))
    [实测] cpu（AMD EPYC，共 2 个 CPU，使用 1 个线程，PyTorch 2.13.0）：1.2×
    >>> print(localize("[measured] on cuda: 1.12×", "zh_CN"))
    [实测] cuda：1.12×
    """
    if language not in ("en", "zh_CN"):
        raise ValueError(f"language must be 'en' or 'zh_CN', got {language!r}")
    if language == "en":
        return text

    def tag(match: re.Match) -> str:
        if not match["device"]:
            return "[实测] "
        if not match["what"]:
            return f"[实测] {match['device']}："
        what = match["what"]
        cpu = _CPU.match(what)
        if cpu:
            what = f"{cpu['cpu']}，共 {cpu['cpus']} 个 CPU，使用 {cpu['threads']} 个线程"
        return f"[实测] {match['device']}（{what}，PyTorch {match['torch']}）："

    return MEASURED_LINE.sub(tag, text)
