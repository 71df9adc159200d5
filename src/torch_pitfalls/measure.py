"""Measuring what autograd keeps and how long code takes.

Memory is counted as the bytes of the tensors autograd saves for backward, found with
:class:`torch.autograd.graph.saved_tensors_hooks`: this number is the same on every machine.
Time is measured with :mod:`torch.utils.benchmark` and depends on the machine; pages show it as a
ratio and say so. Introduced on "requires-grad-propagation" and "no-grad-evaluation".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

    Source: "Hooks for saved tensors" in PyTorch's autograd mechanics notes
    (https://docs.pytorch.org/docs/stable/notes/autograd.html#hooks-for-saved-tensors).

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


def median_time(fn: Callable[[], object], *, min_run_time: float = 0.2) -> float:
    """Median time of one call of ``fn``, in seconds, measured with :mod:`torch.utils.benchmark`.

    :class:`torch.utils.benchmark.Timer` runs a warm-up, synchronises CUDA around each measurement
    and repeats until ``min_run_time`` seconds have been spent. The result depends on the machine:
    pages compare such times as ratios and say so.

    Args:
        fn: a callable taking no argument.
        min_run_time: seconds to spend measuring (``float`` > 0).

    Returns:
        The median time of one call, in seconds (``float``).

    Raises:
        TypeError: ``fn`` is not callable.
        ValueError: ``min_run_time`` is not positive.

    Source: https://docs.pytorch.org/docs/stable/benchmark_utils.html

    >>> median_time(lambda: None, min_run_time=0.01) > 0
    True
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not min_run_time > 0:
        raise ValueError(f"min_run_time must be > 0 seconds, got {min_run_time!r}")
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def compare_times(
    *fns: Callable[[], object], rounds: int = 2, min_run_time: float = 0.1
) -> list[float]:
    """Time several callables fairly: alternate them, keep the fastest median of each.

    Each round measures every callable once with :func:`median_time`, in turn, so that a burst of
    load on a busy machine hits all of them alike; the fastest of the ``rounds`` medians is kept.
    Introduced on "no-grad-evaluation"; compare the results as ratios.

    Args:
        fns: two or more callables taking no argument.
        rounds: number of alternations (``int`` ≥ 1).
        min_run_time: seconds spent on each measurement (``float`` > 0).

    Returns:
        One time per callable, in seconds (``list`` of ``float``), in the order given.

    Raises:
        TypeError: fewer than two callables, or one is not callable.
        ValueError: ``rounds`` < 1 or ``min_run_time`` ≤ 0.

    >>> fast, slow = compare_times(lambda: None, lambda: sum(range(10_000)), min_run_time=0.01)
    >>> slow > fast
    True
    """
    if len(fns) < 2 or not all(callable(fn) for fn in fns):
        raise TypeError("compare_times needs two or more callables taking no argument")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an int >= 1, got {rounds!r}")
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], median_time(fn, min_run_time=min_run_time))
    return best


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


def measured(text: str) -> str:
    """Tag a line of output that holds a measurement, which varies between runs and machines.

    Pages print times and peak memory through it, so a reader sees which numbers depend on the
    machine, and the reproducibility check (``nox -s reproducible``) compares everything else.

    Args:
        text: the line to print (``str``).

    Returns:
        ``text`` prefixed with ``[measured]`` (``str``).

    Raises:
        TypeError: ``text`` is not a ``str``.

    >>> print(measured("on cpu: 1.52× slower"))
    [measured] on cpu: 1.52× slower
    """
    if not isinstance(text, str):
        raise TypeError(f"measured() takes the line to print, a str, got {type(text).__name__}")
    return f"{MEASURED} {text}"
