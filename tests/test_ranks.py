"""torch_pitfalls.ranks.run_ranks: results in rank order, a failing or hanging rank reported and
nothing left running, arguments checked."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from torch_pitfalls import run_ranks

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork here"
)


def _all_reduce(rank, world_size):
    import torch
    import torch.distributed as dist

    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    return rank, world_size, value  # a tensor comes back by value


def _rank_one_fails(rank, world_size):
    import torch.distributed as dist

    if rank == 1:
        raise ValueError("rank one's own error")
    dist.barrier()  # rank 0 would wait here for ever


def _hangs(rank, world_size):
    time.sleep(60)


def test_results_in_rank_order_with_a_working_group():
    results = run_ranks(_all_reduce, 3)
    assert [(r, w, v.item()) for r, w, v in results] == [(0, 3, 6.0), (1, 3, 6.0), (2, 3, 6.0)]


def test_a_failing_rank_is_raised_with_its_traceback_and_the_others_stopped():
    before = set(multiprocessing.active_children())  # other tests' workers may still be alive
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="rank 1 raised:\n(.|\n)*rank one.s own error"):
        run_ranks(_rank_one_fails, 2, timeout=60)
    assert time.monotonic() - start < 50  # not the timeout: the waiting rank was terminated
    assert set(multiprocessing.active_children()) <= before


def test_a_hanging_rank_times_out_and_is_terminated():
    before = set(multiprocessing.active_children())
    with pytest.raises(TimeoutError, match="2 of 2 ranks did not finish within 3"):
        run_ranks(_hangs, 2, timeout=3)
    assert set(multiprocessing.active_children()) <= before


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"world_size": 0}, ValueError, "world_size must be an int >= 1"),
        ({"world_size": True}, ValueError, "world_size must be an int >= 1"),
        ({"timeout": 0}, ValueError, "timeout must be > 0"),
        ({"start_method": "thread"}, ValueError, "start_method must be one of"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, message):
    arguments = {"fn": _all_reduce, "world_size": 2} | kwargs
    with pytest.raises(error, match=message):
        run_ranks(**arguments)
